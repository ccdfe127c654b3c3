import ArgumentParser
import Foundation
import ParallaxGeometry
import ParallaxImage

/// `parallax bench`: measures the rectification engine on the benchmark rig.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure rectification and detection speed, or the honesty of calibration σ on rendered sets.",
        discussion: """
            Uses StereoCalibration.benchmarkRig, the rig Benchmarks/compare-opencv also uses, so the \
            numbers compare with OpenCV's, or any calibration given with --calibration (its image size). \
            Prints the CPU's vector level the kernels used (--simd lowers it, to compare levels). Build in \
            release mode for meaningful figures.
            """,
        subcommands: [BenchRectifyCommand.self, BenchMapsCommand.self, BenchDetectCommand.self, BenchUncertaintyCommand.self])
}

/// Options shared by the bench subcommands.
struct BenchOptions: ParsableArguments {
    @Option(name: .long, help: "Image size, WxH, of the benchmark rig (default 1920x1080; not with --calibration).")
    var size: String?

    @Option(name: .long, help: "Time this calibration (any format Parallax reads) at its image size instead of the benchmark rig.")
    var calibration: String?

    @Option(name: .long, help: "Vector instructions for the kernels: \(SIMDLevel.allCases.dropLast().map(\.rawValue).joined(separator: ", ")) or \(SIMDLevel.allCases.last!.rawValue) (default: the widest this CPU has, \(SIMDLevel.supported.rawValue)).")
    var simd: SIMDLevel?

    @Option(name: .long, help: "Pixel format: gray8, rgb8, bgr8, rgba8, bgra8, yuyv, uyvy or nv12.")
    var format: String = "gray8"

    @Option(name: .long, help: "Threads per pair, including the caller's (default: all processors, as rectify uses).")
    var threads: Int?

    @Option(name: .long, help: "Timed repetitions (after warm-up).")
    var iterations: Int = 50

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func validate() throws {
        if let size {
            guard calibration == nil else { throw ValidationError("--size and --calibration exclude each other: a calibration sets its own image size") }
            guard ImageSize(parsing: size) != nil else { throw ValidationError("--size must look like 1920x1080, got '\(size)'") }
        }
        guard let format = PixelFormat(rawValue: format) else {
            throw ValidationError("--format must be one of \(PixelFormat.allCases.map(\.rawValue).joined(separator: ", ")), got '\(format)'")
        }
        if let size = size.flatMap(ImageSize.init(parsing:)) {
            do { try format.validate(size) } catch { throw ValidationError("\(error)") }
            // Sources, float and compiled maps for both sides, outputs.
            try MemoryLimit.check(size, bytesPerPixel: 4, copies: 24, option: "--size")
        }
        if let simd, simd > SIMDLevel.supported {
            throw ValidationError("--simd \(simd.rawValue): this CPU has no \(simd) (its widest level is \(SIMDLevel.supported.rawValue))")
        }
        if let threads, threads < 1 { throw ValidationError("--threads must be at least 1, got \(threads)") }
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
    }

    /// `--threads`, or every processor.
    var threadCount: Int { threads ?? ProcessInfo.processInfo.activeProcessorCount }

    var pixelFormat: PixelFormat { PixelFormat(rawValue: format) ?? .gray8 }
    /// `--simd`, or the widest level the CPU has.
    var simdLevel: SIMDLevel { simd ?? .supported }

    /// The calibration to time: `--calibration`, or the benchmark rig at `--size`.
    func loadCalibration() throws -> StereoCalibration {
        guard let calibration else {
            return StereoCalibration.benchmarkRig(size: size.flatMap(ImageSize.init(parsing:)) ?? ImageSize(width: 1920, height: 1080))
        }
        let loaded = try RectificationArguments.loadCalibration(calibration)
        guard loaded.left.size == loaded.right.size else {
            throw CLIError("\(calibration): the cameras' image sizes differ (\(loaded.left.size), \(loaded.right.size)); bench times one size")
        }
        do { try pixelFormat.validate(loaded.left.size) } catch { throw CLIError("\(calibration): \(error)") }
        try MemoryLimit.check(loaded.left.size, bytesPerPixel: 4, copies: 24, option: "--calibration")
        return loaded
    }

    /// A rectifier for `calibration` with these options' threads and level, or an error naming
    /// the calibration.
    func rectifier(for calibration: StereoCalibration, interpolation: Interpolation = .bilinear,
                   compactMaps: Bool = false) throws -> Rectifier {
        do {
            return try Rectifier(calibration: calibration, interpolation: interpolation, threads: threadCount,
                                 simdLevel: simdLevel, compactMaps: compactMaps)
        } catch {
            throw CLIError("\(self.calibration ?? "the benchmark rig"): \(error)")
        }
    }

    /// The JSON fields every bench result carries about the machine and the workload's origin.
    var contextFields: [(String, JSONValue)] {
        [("simd", .string(simdLevel.rawValue)), ("simd_description", .string(simdLevel.description)),
         // How the AVX2 resampling kernels fetch taps (SIMDLevel.avx2TapsByLoads).
         ("avx2_taps", .string(SIMDLevel.avx2TapsByLoads ? "loads" : "gathers")), ("cpu", .string(CPUModel.name)),
         ("calibration", calibration.map { .string($0) } ?? .string("benchmark-rig"))]
    }
}

extension SIMDLevel: ExpressibleByArgument {}

/// The CPU's model name, as the kernel reports it.
enum CPUModel {
    static let name: String = {
        let info = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8)) ?? ""
        for line in info.split(separator: "\n") where line.hasPrefix("model name") || line.hasPrefix("Model") {
            if let value = line.split(separator: ":", maxSplits: 1).last { return value.trimmingCharacters(in: .whitespaces) }
        }
        return "unknown CPU"
    }()
}

/// Monotonic time in seconds.
func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
}

/// Runs `work` untimed at least `minimum` times and for at least `seconds`: caches, page
/// faults, thread wake-up paths, and the start of the process. (OpenBLAS, which the
/// calibration code links, starts its worker threads at load time and lets them spin for a
/// fraction of a second: on a two-core machine a two-thread benchmark timed in that window
/// measured some runs at half speed.)
func warmUp(seconds: Double = 0.3, minimum: Int = 3, _ work: () throws -> Void) rethrows {
    let start = monotonicSeconds()
    var runs = 0
    while runs < minimum || monotonicSeconds() - start < seconds {
        try work()
        runs += 1
    }
}

/// Median and minimum of timings in seconds, reported in milliseconds.
func summarise(_ seconds: [Double]) -> (median: Double, min: Double) {
    let sorted = seconds.sorted()
    let mid = sorted.count / 2
    let median = sorted.count % 2 == 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
    return (median * 1000, (sorted.first ?? 0) * 1000)
}

func formatNumber(_ value: Double) -> String { String(format: "%.4f", value) }

/// A timing for the JSON output, to the same four decimals the text output shows.
func jsonNumber(_ value: Double) -> JSONValue { .number((value * 1e4).rounded() / 1e4) }

/// `parallax bench rectify`: time per rectified pair.
struct BenchRectifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rectify",
        abstract: "Time rectifying one pair (both images), bilinear by default.")

    @OptionGroup var options: BenchOptions

    @Option(name: .long, help: "nearest, bilinear or bicubic.")
    var interpolation: Interpolation = .bilinear

    @Option(name: .long, help: "Also write the rig, maps and source images here (for Benchmarks/compare-opencv).")
    var export: String?

    @Flag(name: .long, help: "Compact maps: no whole fixed-point maps, each pair compiles its entries a few rows at a time.")
    var compact = false

    func run() throws {
        let format = options.pixelFormat
        let calibration = try options.loadCalibration()
        let size = calibration.left.size
        let rectifier = try options.rectifier(for: calibration, interpolation: interpolation, compactMaps: compact)
        let left = try BenchImages.pattern(format, size: size, seed: 1)
        let right = try BenchImages.pattern(format, size: size, seed: 2)
        if let export { try BenchImages.export(to: export, calibration: calibration, rectifier: rectifier, left: left, right: right) }
        try rectifier.prepare(for: format)
        var outLeft = try ImageBuffer(format: format, size: rectifier.outputSize), outRight = outLeft
        var timings: [Double] = [], changes: [Double] = [], converged: [Double] = []
        timings.reserveCapacity(options.iterations)
        try left.withView { (l: ImageView) throws in
            try right.withView { (r: ImageView) throws in
                try warmUp { try rectifier.rectify(left: l, right: r, into: &outLeft, &outRight) }
                for _ in 0..<options.iterations {
                    let start = monotonicSeconds()
                    try rectifier.rectify(left: l, right: r, into: &outLeft, &outRight)
                    timings.append(monotonicSeconds() - start)
                }
                // A live convergence change: the call that moves the plane and the rectification
                // it applies (no map is rebuilt), then pairs resampled with the shift, at planes
                // 10 to 80 baselines away in turn.
                for k in 0..<max(4, options.iterations / 4) {
                    let distance = calibration.baseline * [10.0, 20, 40, 80][k % 4]
                    let start = monotonicSeconds()
                    rectifier.setConvergence(atDistance: distance)
                    _ = rectifier.rectification(for: format)
                    changes.append(monotonicSeconds() - start)
                    let pairStart = monotonicSeconds()
                    try rectifier.rectify(left: l, right: r, into: &outLeft, &outRight)
                    converged.append(monotonicSeconds() - pairStart)
                }
            }
        }
        let (median, minimum) = summarise(timings)
        let megapixels = 2 * Double(size.area) / 1e6 / (median / 1000)
        let change = summarise(changes), shifted = summarise(converged), changeMax = (changes.max() ?? 0) * 1000
        if options.json {
            print(JSONValue.object(JSONObject([
                ("operation", .string("rectify-pair")), ("size", .string("\(size)")), ("format", .string(format.rawValue)),
                ("threads", .number(Double(options.threadCount))), ("iterations", .number(Double(options.iterations))),
                ("interpolation", .string(rectifier.interpolation.rawValue)), ("compact_maps", .bool(compact)),
                ("ms_per_pair_median", jsonNumber(median)), ("ms_per_pair_min", jsonNumber(minimum)),
                ("megapixels_per_second", jsonNumber(megapixels)),
                ("convergence_change_ms_median", jsonNumber(change.median)), ("convergence_change_ms_max", jsonNumber(changeMax)),
                ("ms_per_converged_pair_median", jsonNumber(shifted.median)),
            ] + options.contextFields)).serialized(indent: 0))
        } else {
            print("rectify-pair \(size) \(format.rawValue) \(rectifier.interpolation.rawValue)\(compact ? ", compact maps" : ""), \(options.threadCount) thread(s), "
                + "\(rectifier.simdLevel): median \(formatNumber(median)) ms, min \(formatNumber(minimum)) ms per pair, \(String(format: "%.1f", megapixels)) MP/s")
            print("convergence change (set the plane, apply it; no map rebuilt): median \(formatNumber(change.median)) ms, "
                + "max \(formatNumber(changeMax)) ms; the pairs after it: median \(formatNumber(shifted.median)) ms")
        }
    }
}

/// `parallax bench maps`: time to build both maps.
struct BenchMapsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "maps",
        abstract: "Time building both rectification maps (float maps, then the fixed-point maps for --format).")

    @OptionGroup var options: BenchOptions

    func run() throws {
        let format = options.pixelFormat
        let calibration = try options.loadCalibration()
        let size = calibration.left.size
        var timings: [Double] = []
        try warmUp { try options.rectifier(for: calibration).prepare(for: format) }
        for _ in 0..<options.iterations {
            let start = monotonicSeconds()
            let rectifier = try options.rectifier(for: calibration)
            try rectifier.prepare(for: format)
            timings.append(monotonicSeconds() - start)
        }
        let (median, minimum) = summarise(timings)
        if options.json {
            print(JSONValue.object(JSONObject([
                ("operation", .string("build-maps")), ("size", .string("\(size)")), ("format", .string(format.rawValue)),
                ("threads", .number(Double(options.threadCount))), ("iterations", .number(Double(options.iterations))),
                ("ms_median", jsonNumber(median)), ("ms_min", jsonNumber(minimum)),
            ] + options.contextFields)).serialized(indent: 0))
        } else {
            print("build-maps \(size) \(format.rawValue): median \(formatNumber(median)) ms, min \(formatNumber(minimum)) ms")
        }
    }
}

/// Deterministic source images and the export for compare-opencv.
enum BenchImages {
    /// Texture with every byte varying (content does not change the work, but
    /// constant images could flatter caches).
    static func pattern(_ format: PixelFormat, size: ImageSize, seed: UInt32) throws -> ImageBuffer {
        let count = ImageBuffer.byteCount(format: format, size: size)
        var bytes = [UInt8](repeating: 0, count: count)
        var state: UInt32 = 2_463_534_242 &+ seed
        for i in 0..<count {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            bytes[i] = UInt8(truncatingIfNeeded: (i &* 3) &+ Int(state & 63))
        }
        return try ImageBuffer(format: format, size: size, bytes: bytes)
    }

    /// Writes `calibration.json`, `meta.json`, the float maps
    /// (`left-x.f32` … little-endian float32, row-major, NaN where undefined)
    /// and the raw source images (`left.raw`, `right.raw`, packed).
    static func export(to folder: String, calibration: StereoCalibration, rectifier: Rectifier,
                       left: ImageBuffer, right: ImageBuffer) throws {
        do { try FileAccess.createDirectories(atPath: folder) } catch { throw CLIError(error.description) }
        func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }
        try calibration.write(toFile: path("calibration.json"))
        func floats(_ values: [Float]) -> [UInt8] {
            values.withUnsafeBytes { Array($0) }  // little-endian on every platform Swift runs Parallax on
        }
        let maps = rectifier.maps
        try FileAccess.writeAtomically(floats(maps.left.sourceX), toPath: path("left-x.f32"))
        try FileAccess.writeAtomically(floats(maps.left.sourceY), toPath: path("left-y.f32"))
        try FileAccess.writeAtomically(floats(maps.right.sourceX), toPath: path("right-x.f32"))
        try FileAccess.writeAtomically(floats(maps.right.sourceY), toPath: path("right-y.f32"))
        try FileAccess.writeAtomically(left.bytes, toPath: path("left.raw"))
        try FileAccess.writeAtomically(right.bytes, toPath: path("right.raw"))
        let meta = JSONValue.object(JSONObject([
            ("width", .number(Double(left.size.width))), ("height", .number(Double(left.size.height))),
            ("format", .string(left.format.rawValue)),
            ("output_width", .number(Double(rectifier.outputSize.width))), ("output_height", .number(Double(rectifier.outputSize.height))),
        ])).serialized() + "\n"
        try FileAccess.writeAtomically(meta, toPath: path("meta.json"))
    }
}
