import Foundation
import ParallaxGeometry
import Testing
@testable import ParallaxImage

/// The run-time dispatched kernels against the portable ones: same pixels for every
/// format, and no read outside the source.
@Suite("SIMD levels")
struct SIMDLevelTests {
    /// Every level this CPU runs, the portable baseline first.
    static let levels = SIMDLevel.allCases.filter { $0 <= .supported }

    /// The cap `PARALLAX_SIMD` puts on the level (`make test-cpus` sets it), or nil for none;
    /// a value that names no level caps at the baseline, as the kernels read it.
    static let environmentCap: SIMDLevel? = ProcessInfo.processInfo.environment["PARALLAX_SIMD"]
        .flatMap { $0.isEmpty ? nil : SIMDLevel(rawValue: $0) ?? .baseline }

    /// Why a comparison between levels did not run: nothing but the baseline to compare.
    static let onlyTheBaseline = "only the portable kernels run here (no AVX2 on this CPU, or PARALLAX_SIMD=baseline): no other level to compare with them"

    /// Every level with each way its AVX2 resampling kernels can fetch taps (gathers, scalar
    /// loads), whichever this CPU would choose.
    static let kernelChoices: [(level: SIMDLevel, loads: Bool)] = levels.flatMap { level in
        level >= .avx2 ? [(level, false), (level, true)] : [(level, false)]
    }

    #if arch(x86_64)
    @Test("AVX2 kernels are chosen exactly when the kernel's /proc/cpuinfo lists avx2 and fma, AVX-512 ones when it also lists avx512f, dq, bw and vl, within PARALLAX_SIMD's cap")
    func detectionAgreesWithCPUInfo() throws {
        let info = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let line = try #require(info.split(separator: "\n").first { $0.hasPrefix("flags") })
        let flags = Set(line.split(separator: ":").last?.split(separator: " ").map(String.init) ?? [])
        let avx2 = flags.contains("avx2") && flags.contains("fma")
        let avx512 = avx2 && ["avx512f", "avx512dq", "avx512bw", "avx512vl"].allSatisfy(flags.contains)
        let cpu: SIMDLevel = avx512 ? .avx512 : avx2 ? .avx2 : .baseline
        let expected = min(cpu, Self.environmentCap ?? .avx512)
        #expect(SIMDLevel.supported == expected, "CPU \(cpu), PARALLAX_SIMD \(Self.environmentCap.map(\.rawValue) ?? "unset")")
        #expect(Rectifier(maps: RemapFixtures.maps()).simdLevel == expected)
        #expect(Rectifier(maps: RemapFixtures.maps(), simdLevel: .baseline).simdLevel == .baseline)
    }

    @Test("AVX2 taps come by scalar loads exactly on AMD and Hygon CPUs and where the kernel reports a Gather Data Sampling mitigation, unless PARALLAX_AVX2_TAPS says otherwise")
    func tapFetchAgreesWithTheSystem() throws {
        let info = try String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)
        let vendorLine = info.split(separator: "\n").first { $0.hasPrefix("vendor_id") }
        let vendor = vendorLine?.split(separator: ":").last?.trimmingCharacters(in: .whitespaces) ?? ""
        let gatherDataSampling = (try? String(contentsOfFile: "/sys/devices/system/cpu/vulnerabilities/gather_data_sampling",
                                              encoding: .utf8)) ?? ""
        var expected = ["AuthenticAMD", "HygonGenuine"].contains(vendor) || gatherDataSampling.hasPrefix("Mitigation")
        switch ProcessInfo.processInfo.environment["PARALLAX_AVX2_TAPS"] {
        case "loads": expected = true
        case "gathers": expected = false
        default: break
        }
        #expect(SIMDLevel.avx2TapsByLoads == expected, "vendor \(vendor), gather data sampling \(gatherDataSampling)")
        #expect(Rectifier(maps: RemapFixtures.maps()).avx2TapsByLoads == expected)
        #expect(SIMDLevel.avx2.description.contains("loads") == expected)
    }
    #endif

    /// A zoomed-out, rotated, distorted view whose positions are off every grid (not
    /// multiples of 1/32 pixel) and reach past every edge of the source.
    static func offGridMap(output: ImageSize, source: ImageSize, seed: Double) -> RectificationMap {
        var xs = [Float](repeating: .nan, count: output.area), ys = xs
        let cx = Double(source.width) / 2 + 0.173, cy = Double(source.height) / 2 - 0.291
        for v in 0..<output.height {
            for u in 0..<output.width {
                let x = Double(u) - Double(output.width) / 2, y = Double(v) - Double(output.height) / 2
                let r2 = (x * x + y * y) / Double(output.width * output.width)
                let s = 0.97 + 0.31 * r2 + 0.013 * seed, a = 0.061 + 0.017 * seed
                if (u + 3 * v) % 97 == 0 { continue }  // scattered undefined samples
                xs[v * output.width + u] = Float((x * cos(a) - y * sin(a)) * s + cx)
                ys[v * output.width + u] = Float((x * sin(a) + y * cos(a)) * s + cy)
            }
        }
        return RectificationMap(outputSize: output, sourceSize: source, sourceX: xs, sourceY: ys)
    }

    @Test("every level gives the portable kernels' pixels, for every format and thread count",
          .enabled(if: levels.count > 1, Comment(rawValue: onlyTheBaseline)), arguments: PixelFormat.allCases)
    func levelsAgree(format: PixelFormat) throws {
        // Widths that leave tails after groups of 16, 8 and 4 samples on every plane.
        let output = ImageSize(width: 206, height: 62), source = ImageSize(width: 190, height: 70)
        let maps = StereoRectificationMaps(left: Self.offGridMap(output: output, source: source, seed: 0),
                                           right: Self.offGridMap(output: output, source: source, seed: 1),
                                           rectification: RemapFixtures.rectification)
        let left = TestImages.pattern(format, width: source.width, height: source.height, seed: 5)
        let right = TestImages.pattern(format, width: source.width, height: source.height, seed: 6)
        // Without a live convergence, and with one that shifts the sides by ±6 pixels
        // (spans then start and end at other columns of each plane).
        var unshifted: ImageBuffer?
        for distance in [nil, 0.5] as [Double?] {
            let reference = Rectifier(maps: maps, threads: 1, simdLevel: .baseline)
            if let distance { reference.setConvergence(atDistance: distance) }
            let portable = try reference.rectify(left: left, right: right)
            // Not a vacuous comparison: the output carries the source's texture, and the shift moves it.
            #expect(Set(portable.left.bytes).count > 200)
            if let unshifted { #expect(portable.left != unshifted) } else { unshifted = portable.left }
            for (level, loads) in Self.kernelChoices.dropFirst() {
                for threads in [1, 2] {
                    let rectifier = Rectifier(maps: maps, threads: threads, simdLevel: level)
                    rectifier.avx2TapsByLoads = loads
                    if let distance { rectifier.setConvergence(atDistance: distance) }
                    let fast = try rectifier.rectify(left: left, right: right)
                    let differing = zip(fast.left.bytes + fast.right.bytes, portable.left.bytes + portable.right.bytes)
                        .filter { $0 != $1 }.count
                    #expect(fast.left.bytes.count == portable.left.bytes.count && differing == 0,
                            "\(format) at \(level)\(loads ? " (taps by loads)" : ""), \(threads) threads, convergence \(distance.map { "\($0) m" } ?? "none"): \(differing) bytes differ from the portable kernels")
                }
            }
        }
    }

    /// The source ends exactly where an unreadable page begins and every output sample
    /// reads near the bottom-right corner: a kernel reading one byte past the source
    /// crashes the test instead of passing by luck.
    @Test("kernels never read past a source that ends at an unreadable page", arguments: PixelFormat.allCases)
    func readsStayInsideTheSource(format: PixelFormat) throws {
        let size = ImageSize(width: 64, height: 48)
        var xs = [Float](), ys = [Float]()
        for v in 0..<size.height {
            for u in 0..<size.width {
                xs.append(Float(size.width - 3) + Float(u % 9) * 0.271)
                ys.append(Float(size.height - 2) + Float(v % 7) * 0.193)
            }
        }
        let map = RectificationMap(outputSize: size, sourceSize: size, sourceX: xs, sourceY: ys)
        let maps = StereoRectificationMaps(left: map, right: map, rectification: RemapFixtures.rectification)
        let image = TestImages.pattern(format, width: size.width, height: size.height, seed: 17)
        let expected = try Rectifier(maps: maps, threads: 1, simdLevel: .baseline).rectify(left: image, right: image).left

        let count = image.bytes.count
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let total = (count + page - 1) / page * page + page
        let region = try #require(mmap(nil, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0))
        try #require(region != MAP_FAILED)
        defer { munmap(region, total) }
        let guardPage = region + (total - page)
        try #require(mprotect(guardPage, page, PROT_NONE) == 0)
        let start = guardPage - count
        image.bytes.withUnsafeBytes { start.copyMemory(from: $0.baseAddress!, byteCount: count) }
        let view = ImageView(packed: format, size: size, baseAddress: UnsafeRawPointer(start), byteCount: count)
        for (level, loads) in Self.kernelChoices {
            var left = try ImageBuffer(format: format, size: size), right = left
            let rectifier = Rectifier(maps: maps, threads: 2, simdLevel: level)
            rectifier.avx2TapsByLoads = loads
            try rectifier.rectify(left: view, right: view, into: &left, &right)
            #expect(left == expected && right == expected, "\(format) at \(level)\(loads ? " (taps by loads)" : "")")
        }
    }
}
