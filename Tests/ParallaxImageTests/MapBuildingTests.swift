import CRemapKernels
import Dispatch
import ParallaxGeometry
import Testing
@testable import ParallaxImage

/// Map building: the C row kernel at every level, the rectifier's row blocks, and the
/// fixed-point maps it computes straight from the camera models.
@Suite("Map building")
struct MapBuildingTests {
    static let size = ImageSize(width: 322, height: 242)

    /// The benchmark rig with each lens kind a map can be built for.
    static func rig(_ lens: String) -> StereoCalibration {
        let base = StereoCalibration.benchmarkRig(size: size)
        func with(_ distortion: (CameraModel) -> LensDistortion) -> StereoCalibration {
            var left = base.left, right = base.right
            left.distortion = distortion(left)
            right.distortion = distortion(right)
            return StereoCalibration(left: left, right: right, extrinsics: base.extrinsics)
        }
        switch lens {
        case "pinhole": return with { _ in .none }
        case "rational":
            return with { _ in .brownConrady(BrownConrady(k1: -0.31, k2: 0.11, p1: 0.0007, p2: -0.0003, k3: -0.02,
                                                          k4: 0.05, k5: -0.01, k6: 0.004)) }
        case "fisheye": return with { _ in .kannalaBrandt(KannalaBrandt(k1: 0.02, k2: -0.004, k3: 0.001, k4: -0.0002)) }
        default: return base
        }
    }

    static let lenses = ["brown", "rational", "pinhole", "fisheye"]

    static func builders(_ calibration: StereoCalibration) throws -> [RectificationMap.Builder] {
        let r = try calibration.rectification()
        return [
            RectificationMap.Builder(camera: calibration.left, rotation: r.r1, newCamera: r.leftIntrinsics,
                                     size: r.size, orientation: .identity),
            RectificationMap.Builder(camera: calibration.right, rotation: r.r2, newCamera: r.rightIntrinsics,
                                     size: r.size, orientation: .identity),
        ]
    }

    /// Every map-building level this CPU runs, baseline first.
    static let mapLevels = [PARALLAX_SIMD_BASELINE, PARALLAX_SIMD_AVX2, PARALLAX_SIMD_AVX512]
        .filter { $0.rawValue <= parallax_map_simd_level().rawValue }

    static func bits(_ values: [Float]) -> [UInt32] { values.map(\.bitPattern) }

    /// Ends a test whose baseline checks ran but which had no wider level to compare with them:
    /// reported as cancelled, with the reason, instead of passing as if the levels had agreed.
    static func endUnlessWiderLevels() throws {
        if mapLevels.count < 2 { try Test.cancel(Comment(rawValue: SIMDLevelTests.onlyTheBaseline)) }
    }

    @Test("the row kernel gives the same bits at every level and column step, and CameraModel.project's positions")
    func levelsAgreeWithTheModel() throws {
        for lens in ["brown", "rational", "pinhole", "fisheye"] { try levelsAgreeWithTheModel(lens: lens) }
        try Self.endUnlessWiderLevels()
    }

    func levelsAgreeWithTheModel(lens: String) throws {
        let calibration = Self.rig(lens)
        let levels = Self.mapLevels
        for (side, builder) in try Self.builders(calibration).enumerated() {
            let camera = side == 0 ? calibration.left : calibration.right
            let width = builder.outputSize.width
            let reference = builder.map { xs, ys in builder.fill(rows: 0..<builder.outputSize.height, xs: xs, ys: ys) }
            var worst = 0.0, compared = 0
            for v in 0..<builder.outputSize.height {
                var rows: [([Float], [Float])] = []
                for level in levels {
                    var xs = [Float](repeating: 0, count: width), ys = xs
                    builder.fillRow(v, xs: &xs, ys: &ys, level: level)
                    rows.append((xs, ys))
                }
                // Every other column alone (what the chroma grids compute) has the same bits.
                var halfX = [Float](repeating: 0, count: (width + 1) / 2), halfY = halfX
                builder.fillRow(v, xs: &halfX, ys: &halfY, columnStep: 2)
                let evenX = stride(from: 0, to: width, by: 2).map { rows[0].0[$0] }
                let evenY = stride(from: 0, to: width, by: 2).map { rows[0].1[$0] }
                #expect(Self.bits(halfX) == Self.bits(evenX) && Self.bits(halfY) == Self.bits(evenY),
                        "\(lens) side \(side) row \(v): even columns differ")
                for row in rows.dropFirst() {
                    #expect(Self.bits(row.0) == Self.bits(rows[0].0) && Self.bits(row.1) == Self.bits(rows[0].1),
                            "\(lens) side \(side) row \(v): levels differ")
                }
                // Independent arithmetic: the ray through the rectified pixel, projected in Swift.
                let r = try calibration.rectification()
                let rotation = side == 0 ? r.r1 : r.r2
                let newCamera = side == 0 ? r.leftIntrinsics : r.rightIntrinsics
                for u in stride(from: 0, to: width, by: 7) {
                    let ray = rotation.transposed * newCamera.inverseMatrix * SIMD3(Double(u), Double(v), 1)
                    guard let pixel = camera.project(ray) else {
                        #expect(rows[0].0[u].isNaN)
                        continue
                    }
                    let x = rows[0].0[u], y = rows[0].1[u]
                    // Both round a double to float; the doubles differ by a few ulps at most.
                    worst = max(worst, abs(Double(x) - pixel.x), abs(Double(y) - pixel.y))
                    compared += 1
                }
                #expect(Self.bits(rows[0].0) == Self.bits(Array(reference.sourceX[(v * width)..<((v + 1) * width)])))
            }
            #expect(compared > 5000)
            #expect(worst <= 1e-4, "\(lens) side \(side): \(worst) px from CameraModel.project")
        }
    }

    /// round(32 x) as the compiled maps take it (ties to even), or nil for no position.
    static func quantised(_ v: Float) -> Int32? {
        guard abs(v) < 65536 else { return nil }
        return Int32((v * 32).rounded(.toNearestOrEven))
    }

    /// Builders whose rows the quantised kernel must get right: the lens kinds above, a strong
    /// lens like OpenCV's sample camera, a 1080p rig, a turned output, and a camera turned 70°
    /// off the rectified one, so that rows run into rays behind it (undefined positions).
    static func quantisedCases() throws -> [(String, RectificationMap.Builder)] {
        var cases: [(String, RectificationMap.Builder)] = []
        for lens in ["brown", "rational", "pinhole"] {
            for (side, builder) in try builders(rig(lens)).enumerated() { cases.append(("\(lens) \(side)", builder)) }
        }
        let strong = CameraModel(size: ImageSize(width: 640, height: 480),
                                 intrinsics: CameraIntrinsics(fx: 535, fy: 536, cx: 331, cy: 238),
                                 distortion: .brownConrady(BrownConrady(k1: -0.29, k2: 0.11, p1: 0.0012, p2: -0.0006,
                                                                        k3: -0.01)))
        let turn = Matrix3x3(rodrigues: SIMD3(0.02, -0.03, 0.01))
        cases.append(("strong", RectificationMap.Builder(camera: strong, rotation: turn,
                                                         newCamera: CameraIntrinsics(fx: 500, fy: 500, cx: 300, cy: 250),
                                                         size: strong.size, orientation: .identity)))
        cases.append(("strong turned", RectificationMap.Builder(
            camera: strong, rotation: turn, newCamera: CameraIntrinsics(fx: 500, fy: 500, cx: 300, cy: 250),
            size: strong.size, orientation: OutputOrientation(rotation: .clockwise90, mirrored: true))))
        cases.append(("behind", RectificationMap.Builder(
            camera: strong, rotation: Matrix3x3(rodrigues: SIMD3(0.1, 1.22, 0)),
            newCamera: CameraIntrinsics(fx: 200, fy: 200, cx: 320, cy: 240), size: strong.size, orientation: .identity)))
        let hd = StereoCalibration.benchmarkRig(size: ImageSize(width: 1920, height: 1080))
        for (side, builder) in try builders(hd).enumerated() { cases.append(("1080p \(side)", builder)) }
        // 1280 columns are 80 intervals, five whole blocks of sixteen: the row's last interval
        // ends a block, where the node arrays are tightest.
        let hd720 = StereoCalibration.benchmarkRig(size: ImageSize(width: 1280, height: 720))
        cases.append(("720p", try builders(hd720)[0]))
        // Widths around an interval (16 columns) and a block (16 intervals): no whole
        // interval, exactly one, one and a column, a whole block, a block and a column.
        for width in [1, 15, 16, 17, 256, 257] {
            cases.append(("\(width) wide", RectificationMap.Builder(
                camera: strong, rotation: turn, newCamera: CameraIntrinsics(fx: 500, fy: 500, cx: 300, cy: 250),
                size: ImageSize(width: width, height: 24), orientation: .identity)))
        }
        return cases
    }

    @Test("quantised rows round to the same 1/32 pixel as the exact rows, at every level, and skip most of the lens")
    func quantisedRowsRoundLikeTheExactRows() throws {
        var undefinedSeen = 0
        for (name, builder) in try Self.quantisedCases() {
            let width = builder.outputSize.width
            let scratch = UnsafeMutableRawPointer.allocate(byteCount: builder.quantisedRowScratchBytes, alignment: 64)
            defer { scratch.deallocate() }
            var differing = 0, approximated = 0, samples = 0
            for v in 0..<builder.outputSize.height {
                var xs = [Float](repeating: 0, count: width), ys = xs
                builder.fillRow(v, xs: &xs, ys: &ys)
                for level in Self.mapLevels {
                    var qx = [Int32](repeating: 0, count: width), qy = qx
                    let evaluated = builder.fillQuantisedRow(v, qx: &qx, qy: &qy, scratch: scratch, level: level)
                    approximated += width - evaluated
                    for u in 0..<width {
                        samples += 1
                        let expected = (Self.quantised(xs[u]) ?? PARALLAX_UNDEFINED_POSITION,
                                        Self.quantised(ys[u]) ?? PARALLAX_UNDEFINED_POSITION)
                        if (qx[u], qy[u]) != expected {
                            differing += 1
                            if differing <= 3 {
                                Issue.record("\(name) level \(level.rawValue) (\(u), \(v)): \(qx[u]), \(qy[u]) vs exact \(xs[u]), \(ys[u]) (\(expected))")
                            }
                        }
                        if xs[u].isNaN { undefinedSeen += 1 }
                    }
                }
            }
            #expect(differing == 0, "\(name): \(differing) of \(samples) samples round differently")
            // The fast path must actually run: at camera sizes most positions are interpolated,
            // not evaluated. (The 322×242 rigs bend 6 times faster per pixel than at 1080p, so
            // many of their 16-column fits are not certain enough; rays behind the camera are
            // evaluated exactly.)
            let share = Double(approximated) / Double(samples)
            if width >= 640 && name != "behind" { #expect(share > 0.9, "\(name): only \(share) interpolated") }
            print("quantised rows, \(name): \(samples) samples, \(Int(share * 1000) / 10) % interpolated")
        }
        #expect(undefinedSeen > 1000, "the cases must include rays behind the camera")
        try Self.endUnlessWiderLevels()
    }

    @Test("entries compiled from quantised rows equal those compiled from the exact float map: base-free, per-row-base and 64-bit planes, every interpolation")
    func quantisedRowsCompileLikeTheFloatMap() throws {
        let hd = try Self.builders(StereoCalibration.benchmarkRig(size: ImageSize(width: 1920, height: 1080)))[0]
        let cases = try Self.quantisedCases().filter { ["strong", "behind", "rational 0"].contains($0.0) } + [("1080p", hd)]
        let pool = WorkerPool(threadCount: 2)
        var planesWithBases = 0
        for (name, builder) in cases {
            let size = builder.outputSize
            let float = builder.map { xs, ys in builder.fill(rows: 0..<size.height, xs: xs, ys: ys) }
            let source = float.sourceSize
            // Gray (offsets from the plane's start reach it all at these sizes), BGRA (per-row
            // bases at 1080p) and gray rows 40 000 bytes apart (64-bit offsets).
            let layouts: [(SampleLayout, Int)] = [(.interleaved(1), source.width), (.interleaved(4), 4 * source.width),
                                                   (.interleaved(1), 40_000)]
            for (layout, rowBytes) in layouts {
                for interpolation in [Interpolation.bilinear, .nearest, .bicubic] {
                    let fromModel = try CompiledMap(
                        rows: PositionRows(luma: .model(builder), lumaWidth: size.width, lumaHeight: size.height,
                                           lumaSourceWidth: source.width, lumaSourceHeight: source.height, grid: .full),
                        sourceRowBytes: rowBytes, layout: layout, interpolation: interpolation, pool: pool)
                    let fromFloats = try OpenCVRemapFixtures.compile(float, layout: layout, rowBytes: rowBytes,
                                                                 interpolation: interpolation, pool: pool)
                    let label = "\(name), \(layout.pixelStride) bytes per sample, rows \(rowBytes) apart, \(interpolation)"
                    // Counted, not compared as arrays: a failing comparison of 2 million entries
                    // would print (and diff) both.
                    let entries = (0..<size.area).filter { fromModel.entries[$0] != fromFloats.entries[$0] }.count
                    let rows = (0..<size.height).filter {
                        fromModel.rowBase[$0] != fromFloats.rowBase[$0] || fromModel.spanStart[$0] != fromFloats.spanStart[$0]
                            || fromModel.spanEnd[$0] != fromFloats.spanEnd[$0]
                    }.count
                    let slow = fromModel.slow.count == fromFloats.slow.count
                        ? zip(fromModel.slow, fromFloats.slow).filter {
                            ($0.x, $0.y, $0.fx, $0.fy) != ($1.x, $1.y, $1.fx, $1.fy)
                        }.count
                        : max(fromModel.slow.count, fromFloats.slow.count)
                    #expect(entries == 0 && rows == 0 && slow == 0,
                            "\(label): \(entries) entries, \(rows) rows' bases or spans, \(slow) side-table samples differ")
                    if (0..<size.height).contains(where: { fromModel.rowBase[$0] != 0 }) { planesWithBases += 1 }
                }
            }
        }
        // Not vacuous: the BGRA and 64-bit planes have per-row bases.
        #expect(planesWithBases >= 6)
    }

    @Test("maps built in row blocks on two threads equal the serial maps bit for bit", arguments: lenses)
    func rowBlocksEqualSerialMaps(lens: String) throws {
        let calibration = Self.rig(lens)
        let serial = calibration.rectificationMaps(for: try calibration.rectification())
        let rectifier = try Rectifier(calibration: calibration, threads: 2)
        let maps = rectifier.maps
        for (built, expected) in [(maps.left, serial.left), (maps.right, serial.right)] {
            #expect(built.outputSize == expected.outputSize && built.sourceSize == expected.sourceSize)
            #expect(Self.bits(built.sourceX) == Self.bits(expected.sourceX))
            #expect(Self.bits(built.sourceY) == Self.bits(expected.sourceY))
            // Not vacuous: most of the map is defined.
            #expect(built.sourceX.filter { !$0.isNaN }.count > built.sourceX.count / 2)
        }
        #expect((maps.left.homography != nil) == (lens == "pinhole"))
    }

    @Test("rectifiers sharing the process's thread pool, used from several threads at once, keep their own pixels")
    func sharedPoolKeepsJobsApart() throws {
        let format = PixelFormat.bgra8
        let rectifiers = try ["brown", "fisheye"].map { try Rectifier(calibration: Self.rig($0), threads: 2) }
        let left = TestImages.pattern(format, width: Self.size.width, height: Self.size.height, seed: 7)
        let right = TestImages.pattern(format, width: Self.size.width, height: Self.size.height, seed: 8)
        let expected = try rectifiers.map { try $0.rectify(left: left, right: right) }
        #expect(expected[0].left.bytes != expected[1].left.bytes)
        let mismatches = Locked(0)
        DispatchQueue.concurrentPerform(iterations: 16) { i in
            guard let result = try? rectifiers[i % 2].rectify(left: left, right: right),
                  result.left.bytes == expected[i % 2].left.bytes, result.right.bytes == expected[i % 2].right.bytes
            else { return mismatches.withLock { $0 += 1 } }
        }
        #expect(mismatches.withLock { $0 } == 0)
    }

    @Test("maps compiled from the camera models resample like maps compiled from the float maps",
          arguments: PixelFormat.allCases)
    func modelAndStoredMapsAgree(format: PixelFormat) throws {
        for lens in ["brown", "fisheye"] {
            let calibration = Self.rig(lens)
            let fromModel = try Rectifier(calibration: calibration, threads: 2)
            let left = TestImages.pattern(format, width: Self.size.width, height: Self.size.height, seed: 3)
            let right = TestImages.pattern(format, width: Self.size.width, height: Self.size.height, seed: 4)
            // Rectify first, so the model rectifier compiles before its float maps exist.
            let a = try fromModel.rectify(left: left, right: right)
            let b = try Rectifier(maps: fromModel.maps, threads: 1).rectify(left: left, right: right)
            #expect(Set(a.left.bytes).count > 100)
            let differing = zip(a.left.bytes + a.right.bytes, b.left.bytes + b.right.bytes).filter { $0 != $1 }.count
            #expect(a.left.bytes.count == b.left.bytes.count && differing == 0,
                    "\(format), \(lens): \(differing) bytes differ")
        }
    }
}

/// Compiled maps give their entry tables back for the next maps of the same size.
@Suite("Entry memory")
struct EntryMemoryTests {
    /// A table given back is the one the next request of its size receives; another size
    /// gets new memory. (Memory of the test's own: the maps of tests running beside it use
    /// the shared one and can neither take this table nor evict it.)
    @Test func aGivenBackTableIsReusedForItsSizeOnly() throws {
        let memory = EntryMemory(keptBytesLimit: 1 << 20)
        let table = try memory.take(12_345)
        table[12_344] = 7  // writable to its end
        memory.give(table, count: 12_345)
        let other = try memory.take(12_346)
        #expect(other != table)
        let again = try memory.take(12_345)
        #expect(again == table)
        memory.give(again, count: 12_345)
        memory.give(other, count: 12_346)
        #expect(memory.keptByteCount == 4 * (12_345 + 12_346))
    }

    /// A table the machine cannot hold is an error naming the size, not the end of the process
    /// (it used to be a `fatalError`): 2^42 entries are 16 TiB, more than any machine here
    /// maps; `Int.max` entries overflow the byte count.
    @Test func aTableTooLargeIsAnErrorNotATrap() {
        let memory = EntryMemory(keptBytesLimit: 0)
        for count in [1 << 42, Int.max] {
            #expect {
                _ = try memory.take(count)
            } throws: { error in
                guard case ImageError.outOfMemory(let what, _) = error else { return false }
                return what.contains("\(count) rectification map entries")
            }
        }
    }

    /// The README's figure: compiled maps keep at most 128 MiB of given-back tables.
    @Test func theSharedMemoryKeeps128MiB() {
        #expect(EntryMemory.shared.keptBytesLimit == 128 * 1024 * 1024)
    }

    /// However many tables come back, at most the limit's worth is kept, the newest ones.
    @Test func keptTablesStayUnderTheLimit() throws {
        let memory = EntryMemory(keptBytesLimit: 1 << 20)
        let count = memory.keptBytesLimit / 4 / 3 + 1  // three of these exceed the limit
        let tables = try (0..<4).map { _ in try memory.take(count) }
        for table in tables { memory.give(table, count: count) }
        #expect(memory.keptByteCount == 2 * count * 4)
        // The newest two stayed: taken back newest first. (What is given back is what take
        // returned: the test owns those whichever tables they are.)
        let newest = try memory.take(count), next = try memory.take(count)
        #expect(newest == tables[3] && next == tables[2], "the oldest tables were kept instead of the newest")
        memory.give(next, count: count)
        memory.give(newest, count: count)
        memory.releaseKept()
        #expect(memory.keptByteCount == 0)
    }

    /// A rectifier built where an earlier one's tables are reused gives the same pixels as
    /// the first (every entry of a reused table is written again).
    @Test func reusedTablesGiveTheSamePixels() throws {
        let maps = StereoRectificationMaps(left: SIMDLevelTests.offGridMap(output: ImageSize(width: 96, height: 40),
                                                                          source: ImageSize(width: 90, height: 44), seed: 0),
                                           right: SIMDLevelTests.offGridMap(output: ImageSize(width: 96, height: 40),
                                                                           source: ImageSize(width: 90, height: 44), seed: 1),
                                           rectification: RemapFixtures.rectification)
        let left = TestImages.pattern(.gray8, width: 90, height: 44, seed: 3)
        let right = TestImages.pattern(.gray8, width: 90, height: 44, seed: 4)
        let first = try Rectifier(maps: maps, threads: 1).rectify(left: left, right: right)
        // Tables of this size now come back dirty (the first rectifier's entries) and are reused.
        let second = try Rectifier(maps: maps, threads: 2).rectify(left: left, right: right)
        #expect(first.left == second.left && first.right == second.right)
    }
}
