import CRemapKernels
import Foundation
import ParallaxGeometry
import Testing
@testable import ParallaxImage

/// Maps and references for the rectifier tests.
enum RemapFixtures {
    /// A small rig (64 × 48) whose rectification the maps below are carried with.
    static let rectification: StereoRectification = {
        let camera = CameraModel(size: ImageSize(width: 64, height: 48),
                                 intrinsics: CameraIntrinsics(fx: 60, fy: 60, cx: 31.5, cy: 23.5))
        let calibration = StereoCalibration(left: camera, right: camera,
                                            extrinsics: RigidTransform(translation: SIMD3(-0.1, 0, 0)))
        return try! calibration.rectification()
    }()

    /// A map with rotation, scale, barrel distortion, positions off the
    /// source (border blending) and a few undefined entries, on a 1/8-pixel
    /// grid so that derived chroma maps land exactly on OpenCV's 1/32 grid.
    static func warpedMap(output: ImageSize, source: ImageSize, seed: Double = 0) -> RectificationMap {
        var xs = [Float](repeating: .nan, count: output.area), ys = xs
        let cx = Double(source.width) / 2, cy = Double(source.height) / 2
        for v in 0..<output.height {
            for u in 0..<output.width {
                let x = Double(u) - Double(output.width) / 2, y = Double(v) - Double(output.height) / 2
                let r2 = (x * x + y * y) / Double(output.width * output.width)
                let s = 1.08 + 0.25 * r2 + 0.02 * seed
                let a = 0.07 + 0.01 * seed
                let sx = (x * cos(a) - y * sin(a)) * s + cx + 0.37
                let sy = (x * sin(a) + y * cos(a)) * s + cy - 0.21
                // A small undefined patch, like rays a fisheye lens cannot see.
                if u < 3 && v < 2 { continue }
                xs[v * output.width + u] = Float((sx * 8).rounded() / 8)
                ys[v * output.width + u] = Float((sy * 8).rounded() / 8)
            }
        }
        return RectificationMap(outputSize: output, sourceSize: source, sourceX: xs, sourceY: ys)
    }

    static func maps(output: ImageSize = ImageSize(width: 64, height: 48),
                     source: ImageSize = ImageSize(width: 64, height: 48)) -> StereoRectificationMaps {
        StereoRectificationMaps(left: warpedMap(output: output, source: source),
                                right: warpedMap(output: output, source: source, seed: 1),
                                rectification: rectification)
    }

    /// Bilinear reference for one channel grid stored with a pixel step and channel offset.
    static func reference(_ bytes: [UInt8], width: Int, height: Int, step: Int, offset: Int, rowBytes: Int,
                          map: RectificationMap, border: UInt8) -> [UInt8] {
        var plane = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height { for x in 0..<width { plane[y * width + x] = bytes[y * rowBytes + x * step + offset] } }
        return ReferenceRemap.bilinear(plane, channels: 1, map: map, border: border)
    }

    /// The chroma map our convention implies, written out independently of
    /// the engine: 4:2:2 chroma j sits at luma column 2j; 4:2:0 chroma (j, k)
    /// at luma (2j, 2k + ½).
    static func chromaMap(of map: RectificationMap, vertical420: Bool) -> RectificationMap {
        let w = map.outputSize.width / 2, h = vertical420 ? map.outputSize.height / 2 : map.outputSize.height
        var xs = [Float](repeating: .nan, count: w * h), ys = xs
        for k in 0..<h {
            for j in 0..<w {
                if vertical420 {
                    let a = 2 * k * map.outputSize.width + 2 * j, b = a + map.outputSize.width
                    xs[k * w + j] = (map.sourceX[a] + map.sourceX[b]) / 2 / 2
                    ys[k * w + j] = ((map.sourceY[a] + map.sourceY[b]) / 2 - 0.5) / 2
                } else {
                    xs[k * w + j] = map.sourceX[k * map.outputSize.width + 2 * j] / 2
                    ys[k * w + j] = map.sourceY[k * map.outputSize.width + 2 * j]
                }
            }
        }
        let source = ImageSize(width: map.sourceSize.width / 2,
                               height: vertical420 ? map.sourceSize.height / 2 : map.sourceSize.height)
        return RectificationMap(outputSize: ImageSize(width: w, height: h), sourceSize: source, sourceX: xs, sourceY: ys)
    }
}

/// OpenCV's fixed-point maps and remap outputs (Tests/Fixtures/opencv/remap, README.md there).
enum OpenCVRemapFixtures {
    static let folder = TestImages.fixtures + "/opencv/remap/"

    /// `count` little-endian values of a raw fixture file; its size must be exactly that.
    static func littleEndian<T: FixedWidthInteger>(_ name: String, as type: T.Type, count: Int) throws -> [T] {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: folder + name)))
        let size = MemoryLayout<T>.size
        try #require(bytes.count == count * size, "\(name): \(bytes.count) bytes, expected \(count) values of \(size) bytes")
        return (0..<count).map { i in
            var value: T = 0
            for b in 0..<size { value |= T(truncatingIfNeeded: bytes[i * size + b]) << (8 * b) }
            return value
        }
    }

    /// A float map stored as float32 bits (all x, then all y) for `output` over `source`.
    static func floatMap(_ name: String, output: ImageSize, source: ImageSize) throws -> RectificationMap {
        let bits = try littleEndian("\(name)-map.f32", as: UInt32.self, count: 2 * output.area)
        let values = bits.map(Float.init(bitPattern:))
        return RectificationMap(outputSize: output, sourceSize: source, sourceX: Array(values[..<output.area]),
                                sourceY: Array(values[output.area...]))
    }

    /// One map entry as OpenCV's remap reads it: the first tap and the 5-bit fractions.
    struct Entry: Equatable, CustomStringConvertible {
        var x: Int, y: Int, fx: Int, fy: Int
        var description: String { "(\(x) + \(fx)/32, \(y) + \(fy)/32)" }
        /// True when no tap of the 2×2 neighbourhood is inside a `width × height` source, so
        /// BORDER_CONSTANT writes the border value whatever the fractions.
        func isOutside(width: Int, height: Int) -> Bool { x < -1 || y < -1 || x >= width || y >= height }
    }

    /// cv2.convertMaps' CV_16SC2 + CV_16UC1 output, one entry per output sample.
    static func convertMapsOutput(_ name: String, count: Int) throws -> [Entry] {
        let fixed = try littleEndian("\(name)-fixed.i16", as: Int16.self, count: 2 * count)
        let fractions = try littleEndian("\(name)-fraction.u16", as: UInt16.self, count: count)
        return (0..<count).map { i in
            Entry(x: Int(fixed[2 * i]), y: Int(fixed[2 * i + 1]), fx: Int(fractions[i] & 31), fy: Int(fractions[i] >> 5))
        }
    }

    /// The entries a compiled map holds, decoded: span entries from their byte offset and
    /// fractions, the others from the side table; `nil` for an undefined sample.
    static func entries(of map: CompiledMap) -> [Entry?] {
        var result: [Entry?] = []
        result.reserveCapacity(map.width * map.height)
        for v in 0..<map.height {
            for u in 0..<map.width {
                let e = map.entries[v * map.width + u]
                if u >= Int(map.spanStart[v]) && u < Int(map.spanEnd[v]) {
                    let offset = map.rowBase[v] + Int(e >> 10)
                    result.append(Entry(x: offset % map.sourceRowBytes / map.layout.pixelStride, y: offset / map.sourceRowBytes,
                                        fx: Int(e & 31), fy: Int((e >> 5) & 31)))
                } else {
                    let s = map.slow[Int(e)]
                    result.append(s.x == .min ? nil : Entry(x: Int(s.x), y: Int(s.y), fx: Int(s.fx), fy: Int(s.fy)))
                }
            }
        }
        return result
    }

    /// Compiles `map` the way the rectifier does for a source of `layout` (packed unless
    /// `rowBytes` says otherwise).
    static func compile(_ map: RectificationMap, layout: SampleLayout,
                        level: parallax_simd_level = SIMDLevel.supported.kernelLevel, rowBytes: Int? = nil,
                        interpolation: Interpolation = .bilinear,
                        pool: WorkerPool = WorkerPool(threadCount: 2)) throws -> CompiledMap {
        try map.sourceX.withUnsafeBufferPointer { xs in
            try map.sourceY.withUnsafeBufferPointer { ys in
                try CompiledMap(rows: PositionRows(luma: .stored(xs: xs.baseAddress!, ys: ys.baseAddress!),
                                            lumaWidth: map.outputSize.width, lumaHeight: map.outputSize.height,
                                            lumaSourceWidth: map.sourceSize.width,
                                            lumaSourceHeight: map.sourceSize.height, grid: .full, level: level),
                            sourceRowBytes: rowBytes ?? map.sourceSize.width * layout.pixelStride, layout: layout,
                            interpolation: interpolation, pool: pool)
            }
        }
    }

    /// Compares compiled entries with OpenCV's, entry by entry. Where OpenCV's integer part
    /// is not saturated to int16 and Parallax has a position, the two must be equal; where
    /// either is saturated or undefined (NaN, infinite, |x| ≥ 2¹⁶), both must lie outside
    /// the source, so both write the border value. Returns (equal, both outside).
    static func compare(_ ours: [Entry?], _ theirs: [Entry], source: ImageSize, _ label: String,
                        sourceLocation: SourceLocation = #_sourceLocation) throws -> (equal: Int, outside: Int) {
        try #require(ours.count == theirs.count, "\(label): \(ours.count) entries vs OpenCV's \(theirs.count)",
                     sourceLocation: sourceLocation)
        var equal = 0, outside = 0
        for (i, (mine, cv)) in zip(ours, theirs).enumerated() {
            let saturated = cv.x <= Int(Int16.min) || cv.x >= Int(Int16.max) || cv.y <= Int(Int16.min) || cv.y >= Int(Int16.max)
            if let mine, !saturated {
                #expect(mine == cv, "\(label) entry \(i): \(mine), OpenCV \(cv)", sourceLocation: sourceLocation)
                if mine == cv { equal += 1 }
            } else {
                let mineOutside = mine?.isOutside(width: source.width, height: source.height) ?? true
                #expect(mineOutside && cv.isOutside(width: source.width, height: source.height),
                        "\(label) entry \(i): \(mine.map(String.init(describing:)) ?? "undefined"), OpenCV \(cv)",
                        sourceLocation: sourceLocation)
                if mineOutside { outside += 1 }
            }
        }
        return (equal, outside)
    }

    /// Levels of `ours` that differ from `theirs`, after checking format and size.
    static func differingLevels(_ ours: ImageBuffer, _ theirs: ImageBuffer, _ label: String,
                                sourceLocation: SourceLocation = #_sourceLocation) throws -> (count: Int, worst: Int) {
        try #require(ours.format == theirs.format && ours.size == theirs.size && ours.bytes.count == theirs.bytes.count,
                     "\(label): \(ours.format) \(ours.size) vs OpenCV's \(theirs.format) \(theirs.size)", sourceLocation: sourceLocation)
        var count = 0, worst = 0
        for (a, b) in zip(ours.bytes, theirs.bytes) where a != b {
            count += 1
            worst = max(worst, abs(Int(a) - Int(b)))
        }
        return (count, worst)
    }
}

@Suite("Rectifier")
struct RectifierTests {
    /// The kernels' arithmetic on a real image: OpenCV's sample pair resampled through
    /// OpenCV's own fixed-point maps (convertMaps of initUndistortRectifyMap, stored as
    /// 32 x and 32 y, so dividing by 32 gives float maps that compile to the same entries)
    /// by cv2.remap and by the rectifier. Made by make_remap_reference.py.
    @Test("bilinear output equals cv2.remap through OpenCV's fixed-point maps of its sample pair")
    func matchesOpenCVThroughItsOwnMaps() throws {
        let folder = OpenCVRemapFixtures.folder
        var sides: [(source: ImageBuffer, map: RectificationMap, expected: ImageBuffer)] = []
        for side in ["left", "right"] {
            let source = try ImageBuffer(contentsOfFile: folder + "\(side)-source.png")
            let packed = try ImageBuffer(contentsOfFile: folder + "\(side)-map.png")
            let expected = try ImageBuffer(contentsOfFile: folder + "\(side)-opencv.png")
            try #require(packed.format == .rgba8 && packed.size == ImageSize(width: 640, height: 480))
            var xs = [Float](repeating: .nan, count: packed.size.area), ys = xs
            let b = packed.bytes
            for i in 0..<packed.size.area {
                let qx = Int16(bitPattern: UInt16(b[4 * i]) | UInt16(b[4 * i + 1]) << 8)
                let qy = Int16(bitPattern: UInt16(b[4 * i + 2]) | UInt16(b[4 * i + 3]) << 8)
                if qx != .min && qy != .min {
                    xs[i] = Float(qx) / 32
                    ys[i] = Float(qy) / 32
                }
            }
            let map = RectificationMap(outputSize: packed.size, sourceSize: source.size, sourceX: xs, sourceY: ys)
            sides.append((source, map, expected))
        }
        let maps = StereoRectificationMaps(left: sides[0].map, right: sides[1].map, rectification: RemapFixtures.rectification)
        let rectifier = Rectifier(maps: maps, interpolation: .bilinear, threads: 2)
        let (left, right) = try rectifier.rectify(left: sides[0].source, right: sides[1].source)
        var compared = 0
        for (name, ours, theirs) in [("left", left, sides[0].expected), ("right", right, sides[1].expected)] {
            let d = try OpenCVRemapFixtures.differingLevels(ours, theirs, name)
            #expect(d.count == 0, "\(name): \(d.count) pixels differ from cv2.remap, by up to \(d.worst)")
            compared += ours.bytes.count
        }
        #expect(compared == 614_400)
    }

    /// Positions off the 1/32 grid, where the rounding rule decides the entry: random
    /// float32 positions, exact ties, the border thresholds, NaN, infinities and far values,
    /// and a crop of a real calibration's map (make_fixed_point_reference.py).
    @Test("compiled entries equal cv2.convertMaps (CV_16SC2) at off-grid positions", arguments: ["random", "calibration"])
    func compiledEntriesMatchConvertMaps(name: String) throws {
        let (output, source) = Self.fixedPointFixtureSizes(name)
        let map = try OpenCVRemapFixtures.floatMap(name, output: output, source: source)
        let theirs = try OpenCVRemapFixtures.convertMapsOutput(name, count: output.area)
        // Each layout compiles its own spans (3-byte pixels keep a spare column), so each is
        // checked, by the compiling kernel of every level this CPU runs.
        for layout in [SampleLayout.interleaved(1), .interleaved(3), .interleaved(4)] {
            for level in MapBuildingTests.mapLevels {
                let ours = OpenCVRemapFixtures.entries(of: try OpenCVRemapFixtures.compile(map, layout: layout, level: level))
                let what = "\(name) \(layout.channels)-channel, level \(level.rawValue)"
                let (equal, outside) = try OpenCVRemapFixtures.compare(ours, theirs, source: source, what)
                #expect(equal + outside == output.area)
                print("compiled \(what) map vs convertMaps: \(equal) entries equal, "
                      + "\(outside) outside the source on both sides, of \(output.area)")
            }
        }
    }

    @Test("bilinear pixels equal cv2.remap at off-grid positions",
          arguments: [("random", "gray", PixelFormat.gray8), ("random", "bgr", .rgb8), ("random", "bgr", .bgr8),
                      ("random", "bgra", .rgba8), ("random", "bgra", .bgra8), ("calibration", "gray", .gray8)],
          SIMDLevelTests.levels)
    func pixelsMatchRemap(fixture: (name: String, channels: String, format: PixelFormat), level: SIMDLevel) throws {
        let (name, channels, format) = fixture
        let (output, size) = Self.fixedPointFixtureSizes(name)
        let map = try OpenCVRemapFixtures.floatMap(name, output: output, source: size)
        let folder = OpenCVRemapFixtures.folder
        let sourceFile = name == "calibration" ? "left-source.png" : "\(name)-source-\(channels).png"
        // The files hold the bytes in the order cv2 wrote them; remap treats every channel
        // alike, so the same bytes are read as either channel order.
        let source = try ImageBuffer(contentsOfFile: folder + sourceFile)
        let expected = try ImageBuffer(contentsOfFile: folder + "\(name)-remap-\(channels).png")
        try #require(source.format.interleavedChannels == format.interleavedChannels && source.size == size)
        let input = try ImageBuffer(format: format, size: size, bytes: source.bytes)
        let reference = try ImageBuffer(format: format, size: output, bytes: expected.bytes)
        let rectifier = Rectifier(maps: StereoRectificationMaps(left: map, right: map, rectification: RemapFixtures.rectification),
                                  threads: 2, simdLevel: level)
        let (left, right) = try rectifier.rectify(left: input, right: input)
        for (side, image) in [("left", left), ("right", right)] {
            let d = try OpenCVRemapFixtures.differingLevels(image, reference, "\(name) \(format) \(side)")
            #expect(d.count == 0, "\(name) \(format) \(side) at \(level): \(d.count) levels differ from cv2.remap, by up to \(d.worst)")
        }
    }

    /// The camera formats' luma kernels (2-byte steps for YUYV and UYVY, a plane of its own
    /// for NV12) on the same off-grid map: their luma must be cv2.remap's gray output.
    @Test("the luma of YUYV, UYVY and NV12 equals cv2.remap at off-grid positions", arguments: [PixelFormat.yuyv, .uyvy, .nv12],
          SIMDLevelTests.levels)
    func lumaMatchesRemap(format: PixelFormat, level: SIMDLevel) throws {
        let (output, size) = Self.fixedPointFixtureSizes("random")
        let map = try OpenCVRemapFixtures.floatMap("random", output: output, source: size)
        let gray = try ImageBuffer(contentsOfFile: OpenCVRemapFixtures.folder + "random-source-gray.png")
        let expected = try ImageBuffer(contentsOfFile: OpenCVRemapFixtures.folder + "random-remap-gray.png")
        try #require(gray.format == .gray8 && gray.size == size && expected.size == output)
        // Luma from the gray source, chroma from a pattern (its own grid is not compared here).
        var bytes = TestImages.pattern(format, width: size.width, height: size.height, seed: 13).bytes
        let (step, offset) = format == .yuyv ? (2, 0) : format == .uyvy ? (2, 1) : (1, 0)
        for i in 0..<size.area { bytes[i * step + offset] = gray.bytes[i] }
        let input = try ImageBuffer(format: format, size: size, bytes: bytes)
        let rectifier = Rectifier(maps: StereoRectificationMaps(left: map, right: map, rectification: RemapFixtures.rectification),
                                  threads: 2, simdLevel: level)
        let (left, _) = try rectifier.rectify(left: input, right: input)
        var differing = 0
        for i in 0..<output.area where left.bytes[i * step + offset] != expected.bytes[i] { differing += 1 }
        #expect(differing == 0, "\(format) at \(level): \(differing) of \(output.area) luma samples differ from cv2.remap")
    }

    /// The whole chain on OpenCV's sample pair: Parallax rectifies OpenCV's calibration of
    /// it (stereoRectify's defaults: alpha −1, zero disparity), builds its own maps and
    /// resamples; OpenCV did the same with stereoRectify → initUndistortRectifyMap (CV_32FC1)
    /// → convertMaps (CV_16SC2) → remap (INTER_LINEAR, BORDER_CONSTANT 0)
    /// (make_remap_reference.py). Parallax's float maps equal OpenCV's bit for bit
    /// (RectificationMapTests), so every fixed-point entry and every pixel is equal too.
    @Test("the rectifier's own maps of OpenCV's sample pair give cv2's chain's pixels exactly")
    func wholeChainMatchesOpenCV() throws {
        let folder = OpenCVRemapFixtures.folder
        let calibration = try StereoCalibration(contentsOfFile: TestImages.fixtures + "/opencv/opencv-sample-calibration.json")
        let rectifier = try Rectifier(calibration: calibration, threads: 2)
        let size = ImageSize(width: 640, height: 480)
        try #require(rectifier.outputSize == size)
        let left = try ImageBuffer(contentsOfFile: folder + "left-source.png")
        let right = try ImageBuffer(contentsOfFile: folder + "right-source.png")
        let (ours, oursRight) = try rectifier.rectify(left: left, right: right)
        var pixels = 0
        for (side, image, map) in [("left", ours, rectifier.maps.left), ("right", oursRight, rectifier.maps.right)] {
            let expected = try ImageBuffer(contentsOfFile: folder + "\(side)-opencv.png")
            let d = try OpenCVRemapFixtures.differingLevels(image, expected, side)
            #expect(d.count == 0, "\(side): \(d.count) of \(image.bytes.count) pixels differ from OpenCV's chain, by up to \(d.worst)")
            pixels += image.bytes.count
            // OpenCV's entries, from the packed 32 x, 32 y of make_remap_reference.py.
            let packed = try ImageBuffer(contentsOfFile: folder + "\(side)-map.png")
            try #require(packed.format == .rgba8 && packed.size == size)
            let b = packed.bytes
            let theirs = (0..<size.area).map { i in
                let qx = Int(Int16(bitPattern: UInt16(b[4 * i]) | UInt16(b[4 * i + 1]) << 8))
                let qy = Int(Int16(bitPattern: UInt16(b[4 * i + 2]) | UInt16(b[4 * i + 3]) << 8))
                return OpenCVRemapFixtures.Entry(x: qx >> 5, y: qy >> 5, fx: qx & 31, fy: qy & 31)
            }
            let entries = OpenCVRemapFixtures.entries(of: try OpenCVRemapFixtures.compile(map, layout: .interleaved(1)))
            let (equal, _) = try OpenCVRemapFixtures.compare(entries, theirs, source: size, "\(side) sample map")
            #expect(equal == size.area)
        }
        #expect(pixels == 614_400)
    }

    /// Output and source sizes of the fixed-point fixtures (make_fixed_point_reference.py).
    static func fixedPointFixtureSizes(_ name: String) -> (output: ImageSize, source: ImageSize) {
        name == "random" ? (ImageSize(width: 96, height: 64), ImageSize(width: 80, height: 60))
            : (ImageSize(width: 160, height: 120), ImageSize(width: 640, height: 480))
    }

    @Test("bilinear equals the plain reference for packed formats", arguments: [PixelFormat.gray8, .rgb8, .bgr8, .rgba8, .bgra8],
          SIMDLevelTests.levels)
    func bilinearInterleaved(format: PixelFormat, level: SIMDLevel) throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, threads: 2, simdLevel: level)
        let left = TestImages.pattern(format, width: 64, height: 48, seed: 1)
        let right = TestImages.pattern(format, width: 64, height: 48, seed: 2)
        let (l, r) = try rectifier.rectify(left: left, right: right)
        let channels = format.interleavedChannels!
        #expect(l.bytes == ReferenceRemap.bilinear(left.bytes, channels: channels, map: maps.left))
        #expect(r.bytes == ReferenceRemap.bilinear(right.bytes, channels: channels, map: maps.right))
    }

    @Test("a plane past the entries' offset limit (1080p BGRA, 8 MB) gets a base per row and the pixels of four gray planes, which need none",
          arguments: [false, true])
    func rowBasesPastTheOffsetLimit(compact: Bool) throws {
        let size = ImageSize(width: 1920, height: 1080)
        // The premise: a BGRA plane is larger than the 22-bit offsets reach from its start; a
        // gray plane is not (so its rows are compiled without per-row bases).
        #expect(PixelFormat.bgra8.minimumBytesPerRow(width: size.width) * size.height > CompiledMap.offsetLimit)
        #expect(PixelFormat.gray8.minimumBytesPerRow(width: size.width) * size.height < CompiledMap.offsetLimit)
        let rectifier = try Rectifier(calibration: StereoCalibration.benchmarkRig(size: size), threads: 2,
                                      compactMaps: compact)
        let image = TestImages.pattern(.bgra8, width: size.width, height: size.height, seed: 5)
        let (bgra, _) = try rectifier.rectify(left: image, right: image)
        var differing = 0
        for channel in 0..<4 {
            let plane = try ImageBuffer(format: .gray8, size: size,
                                        bytes: stride(from: channel, to: image.bytes.count, by: 4).map { image.bytes[$0] })
            let (gray, _) = try rectifier.rectify(left: plane, right: plane)
            for i in 0..<size.area where gray.bytes[i] != bgra.bytes[4 * i + channel] { differing += 1 }
        }
        // Counted, not compared as arrays: a failing comparison of 8 MB would print both.
        #expect(differing == 0, "\(differing) samples differ")
    }

    @Test("positions against the right and bottom edges match the reference", arguments: [PixelFormat.rgb8, .bgra8, .gray8])
    func edges(format: PixelFormat) throws {
        // Every output pixel reads near the bottom-right corner: x in the last
        // three columns, y in the last two rows (the 3-byte kernel needs a
        // spare column, so some of these must take the careful path).
        let size = ImageSize(width: 16, height: 8)
        var xs = [Float](), ys = [Float]()
        for v in 0..<8 {
            for u in 0..<16 {
                xs.append(Float(13) + Float(u % 8) * 0.375)
                ys.append(Float(6) + Float(v) * 0.125)
            }
        }
        let map = RectificationMap(outputSize: size, sourceSize: size, sourceX: xs, sourceY: ys)
        let maps = StereoRectificationMaps(left: map, right: map, rectification: RemapFixtures.rectification)
        let image = TestImages.pattern(format, width: 16, height: 8, seed: 11)
        let (l, _) = try Rectifier(maps: maps, threads: 1).rectify(left: image, right: image)
        #expect(l.bytes == ReferenceRemap.bilinear(image.bytes, channels: format.interleavedChannels!, map: map))
    }

    @Test("YUYV, UYVY, NV12, I420 and I422 are resampled per plane, chroma on its own grid",
          arguments: [PixelFormat.yuyv, .uyvy, .nv12, .i420, .i422], SIMDLevelTests.levels)
    func bilinearYUV(format: PixelFormat, level: SIMDLevel) throws {
        let size = ImageSize(width: 64, height: 48)
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, threads: 2, simdLevel: level)
        let left = TestImages.pattern(format, width: 64, height: 48, seed: 3)
        let right = TestImages.pattern(format, width: 64, height: 48, seed: 4)
        let (l, r) = try rectifier.rectify(left: left, right: right)
        for (input, output, map) in [(left, l, maps.left), (right, r, maps.right)] {
            let chroma = RemapFixtures.chromaMap(of: map, vertical420: format == .nv12 || format == .i420)
            let w = size.width, h = size.height
            switch format {
            case .i420, .i422:
                // Y, then Cb and Cr planes of w/2 bytes per row: each a gray plane on the chroma grid.
                let luma = RemapFixtures.reference(input.bytes, width: w, height: h, step: 1, offset: 0, rowBytes: w, map: map, border: 0)
                #expect(Array(output.bytes[0..<w * h]) == luma)
                let chromaRows = format == .i420 ? h / 2 : h, planeBytes = w / 2 * chromaRows
                for c in 0..<2 {
                    let start = w * h + c * planeBytes
                    let expected = RemapFixtures.reference(Array(input.bytes[start..<(start + planeBytes)]), width: w / 2,
                                                           height: chromaRows, step: 1, offset: 0, rowBytes: w / 2,
                                                           map: chroma, border: 128)
                    #expect(Array(output.bytes[start..<(start + planeBytes)]) == expected, "\(format) plane \(c + 1) at \(level)")
                }
            case .nv12:
                let luma = RemapFixtures.reference(input.bytes, width: w, height: h, step: 1, offset: 0, rowBytes: w, map: map, border: 0)
                #expect(Array(output.bytes[0..<w * h]) == luma)
                let chromaBytes = Array(input.bytes[(w * h)...])
                let outChroma = Array(output.bytes[(w * h)...])
                for c in 0..<2 {
                    let expected = RemapFixtures.reference(chromaBytes, width: w / 2, height: h / 2, step: 2, offset: c,
                                                           rowBytes: w, map: chroma, border: 128)
                    let actual = stride(from: c, to: outChroma.count, by: 2).map { outChroma[$0] }
                    #expect(actual == expected)
                }
            default:
                let yOffset = format == .yuyv ? 0 : 1
                let chromaOffsets = format == .yuyv ? [1, 3] : [0, 2]
                let luma = RemapFixtures.reference(input.bytes, width: w, height: h, step: 2, offset: yOffset,
                                                   rowBytes: 2 * w, map: map, border: 0)
                #expect(stride(from: yOffset, to: output.bytes.count, by: 2).map { output.bytes[$0] } == luma)
                for k in chromaOffsets {
                    let expected = RemapFixtures.reference(input.bytes, width: w / 2, height: h, step: 4, offset: k,
                                                           rowBytes: 2 * w, map: chroma, border: 128)
                    #expect(stride(from: k, to: output.bytes.count, by: 4).map { output.bytes[$0] } == expected)
                }
            }
        }
    }

    @Test("nearest picks the source pixel nearest each quantised position", arguments: [PixelFormat.gray8, .rgb8, .bgra8, .yuyv])
    func nearest(format: PixelFormat) throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, interpolation: .nearest, threads: 1)
        let image = TestImages.pattern(format, width: 64, height: 48, seed: 5)
        let (l, _) = try rectifier.rectify(left: image, right: image)
        let step = format.bytesPerPixel, rowBytes = image.bytesPerRow
        // Luma (or every channel of packed formats): compare pixel by pixel.
        let channels = format == .yuyv ? [0] : Array(0..<step)
        for v in 0..<48 {
            for u in 0..<64 {
                let i = v * 64 + u
                let sx = maps.left.sourceX[i], sy = maps.left.sourceY[i]
                for c in channels {
                    var expected: UInt8 = 0
                    if sx.isFinite && sy.isFinite {
                        let x = Int((sx + 0.5).rounded(.down)), y = Int((sy + 0.5).rounded(.down))
                        if x >= 0 && y >= 0 && x < 64 && y < 48 { expected = image.bytes[y * rowBytes + x * step + c] }
                    }
                    #expect(l.bytes[v * rowBytes + u * step + c] == expected)
                }
            }
        }
    }

    @Test("bicubic agrees with a double-precision cubic convolution within one level")
    func bicubic() throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, interpolation: .bicubic, threads: 2)
        let image = TestImages.smooth(.gray8, width: 64, height: 48)
        let (l, _) = try rectifier.rectify(left: image, right: image)
        func kernel(_ t: Double) -> Double {
            let a = -0.75, t = abs(t)
            if t <= 1 { return ((a + 2) * t - (a + 3)) * t * t + 1 }
            if t < 2 { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a }
            return 0
        }
        var worst = 0
        for i in 0..<(64 * 48) {
            let sx = Double(maps.left.sourceX[i]), sy = Double(maps.left.sourceY[i])
            var expected = 0.0
            if sx.isFinite && sy.isFinite {
                let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
                for j in -1...2 {
                    for k in -1...2 {
                        let x = x0 + k, y = y0 + j
                        let p = (x >= 0 && y >= 0 && x < 64 && y < 48) ? Double(image.bytes[y * 64 + x]) : 0
                        expected += kernel(sx - Double(x)) * kernel(sy - Double(y)) * p
                    }
                }
            }
            let e = Int(min(max(expected.rounded(), 0), 255))
            worst = max(worst, abs(Int(l.bytes[i]) - e))
        }
        // Weights in 1/2048 (error ≤ 16 · ½/2048 · 255 < 1 level) plus rounding: at most 1 level.
        #expect(worst <= 1)
    }

    @Test("results do not depend on the thread count or on padded row strides")
    func threadsAndStrides() throws {
        let maps = RemapFixtures.maps()
        let image = TestImages.pattern(.bgra8, width: 64, height: 48, seed: 9)
        let (single, _) = try Rectifier(maps: maps, threads: 1).rectify(left: image, right: image)
        let (triple, _) = try Rectifier(maps: maps, threads: 3).rectify(left: image, right: image)
        #expect(single == triple)
        // The same pixels with 24 bytes of padding per row, in and out.
        let rowBytes = 64 * 4 + 24
        var padded = [UInt8](repeating: 0xEE, count: rowBytes * 48)
        for y in 0..<48 { for x in 0..<(64 * 4) { padded[y * rowBytes + x] = image.bytes[y * 256 + x] } }
        var outLeft = [UInt8](repeating: 0, count: rowBytes * 48), outRight = outLeft
        let rectifier = Rectifier(maps: maps, threads: 2)
        try padded.withUnsafeBytes { raw in
            let view = try ImageView(format: .bgra8, size: image.size, baseAddress: raw.baseAddress!, byteCount: raw.count, bytesPerRow: rowBytes)
            try outLeft.withUnsafeMutableBytes { l in
                try outRight.withUnsafeMutableBytes { r in
                    let lo = MutableImageView(unchecked: .bgra8, size: image.size, plane0: l.baseAddress!, bytesPerRow0: rowBytes, plane1: nil, bytesPerRow1: 0)
                    let ro = MutableImageView(unchecked: .bgra8, size: image.size, plane0: r.baseAddress!, bytesPerRow0: rowBytes, plane1: nil, bytesPerRow1: 0)
                    try rectifier.rectify(left: view, right: view, into: lo, ro)
                }
            }
        }
        var unpadded: [UInt8] = []
        for y in 0..<48 { unpadded += outLeft[(y * rowBytes)..<(y * rowBytes + 256)] }
        #expect(unpadded == single.bytes)
    }

    @Test("reused destination buffers are written in place")
    func reusesDestinations() throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, threads: 2)
        let a = TestImages.pattern(.gray8, width: 64, height: 48, seed: 1)
        let b = TestImages.pattern(.gray8, width: 64, height: 48, seed: 2)
        var left = try ImageBuffer(format: .gray8, size: rectifier.outputSize), right = left
        try a.withView { av in try b.withView { bv in try rectifier.rectify(left: av, right: bv, into: &left, &right) } }
        let first = left.bytes.withUnsafeBufferPointer { $0.baseAddress }
        try b.withView { bv in try a.withView { av in try rectifier.rectify(left: bv, right: av, into: &left, &right) } }
        #expect(left.bytes.withUnsafeBufferPointer { $0.baseAddress } == first)
        #expect(left.bytes == ReferenceRemap.bilinear(b.bytes, channels: 1, map: maps.left))
    }

    @Test("mismatched sizes and formats are errors naming expected and actual")
    func mismatches() throws {
        let rectifier = Rectifier(maps: RemapFixtures.maps(), threads: 1)
        let good = TestImages.pattern(.gray8, width: 64, height: 48)
        let small = TestImages.pattern(.gray8, width: 32, height: 48)
        #expect(throws: ImageError.sizeMismatch(what: "right image", expected: ImageSize(width: 64, height: 48),
                                                actual: ImageSize(width: 32, height: 48))) {
            try rectifier.rectify(left: good, right: small)
        }
        do {
            _ = try rectifier.rectify(left: small, right: good)
            Issue.record("a 32x48 left image was accepted")
        } catch {
            #expect(error.description == "left image: expected 64x48, got 32x48")
        }
        #expect(throws: ImageError.self) {
            try rectifier.rectify(left: good, right: TestImages.pattern(.rgb8, width: 64, height: 48))
        }
    }

    @Test("a rectifier built from a calibration converges by half the disparity on each side")
    func fromCalibration() throws {
        let calibration = try StereoCalibration(contentsOfFile: TestImages.fixtures + "/opencv/opencv-sample-calibration.json")
            .adapted(to: ImageSize(width: 160, height: 120))
        let plain = try Rectifier(calibration: calibration, threads: 2)
        // 40 calibration units (chessboard squares): a few pixels of disparity at this size.
        let distance = 40.0
        let converged = try Rectifier(calibration: calibration, convergenceDistance: distance, threads: 2)
        #expect(plain.outputSize == ImageSize(width: 160, height: 120) && converged.outputSize == plain.outputSize)
        // A point at `distance` has disparity f·B/Z before the shift (B: the length of T, which
        // the rectifying rotation turns onto the x axis); each image takes half of it.
        let before = plain.maps.rectification, after = converged.maps.rectification
        let f = before.focalLength
        let t = calibration.extrinsics.translation
        let expected = f * (t * t).sum().squareRoot() / (2 * distance)
        #expect(abs(after.convergenceShift - expected) <= 1e-12 * expected,
                "shift \(after.convergenceShift) px, expected f·B/(2Z) = \(expected) px")
        #expect(abs((before.p1[0, 2] - after.p1[0, 2]) - expected) <= 1e-12 * f)
        #expect(abs((after.p2[0, 2] - before.p2[0, 2]) - expected) <= 1e-12 * f)
        #expect(after.convergenceDistance == distance)
        // The maps carry the shift: each map reads, at output pixel (u, v), where its camera
        // sees the ray through (u, v) of a rectified camera whose principal point moved by
        // `expected` px (left camera to the left, right camera to the right). Float32 maps
        // hold positions below 160 px to 8e-6 px.
        for (side, rotation, cx, camera, map) in [
            ("left", before.r1, before.p1[0, 2] - expected, calibration.left, converged.maps.left),
            ("right", before.r2, before.p2[0, 2] + expected, calibration.right, converged.maps.right),
        ] {
            for (u, v) in [(0, 0), (80, 60), (159, 119), (37, 101)] {
                let ray = rotation.transposed * SIMD3((Double(u) - cx) / f, (Double(v) - before.p1[1, 2]) / before.p1[1, 1], 1)
                let seen = try #require(camera.project(ray))
                let read = try #require(map.source(x: u, y: v))
                #expect(abs(Double(read.x) - seen.x) < 1e-4 && abs(Double(read.y) - seen.y) < 1e-4,
                        "\(side) map at (\(u), \(v)): \(read), the shifted camera sees \(seen)")
            }
        }
    }
}
