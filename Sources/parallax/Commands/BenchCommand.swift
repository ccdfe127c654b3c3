import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// `parallax bench`: measures the rectification engine on the benchmark rig.
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure rectification, detection and disparity speed, or the honesty of calibration σ on rendered sets.",
        discussion: """
            Uses StereoCalibration.benchmarkRig, the rig Benchmarks/compare-opencv also uses, so the \
            numbers compare with OpenCV's, or any calibration given with --calibration (its image size). \
            Prints the CPU's vector level the kernels used (--simd lowers it, to compare levels). Build in \
            release mode for meaningful figures.
            """,
        subcommands: [BenchRectifyCommand.self, BenchMapsCommand.self, BenchDetectCommand.self, BenchUncertaintyCommand.self,
                      BenchDisparityCommand.self, BenchDisparityScenesCommand.self])
}

/// Options shared by the bench subcommands.
struct BenchOptions: ParsableArguments {
    @Option(name: .long, help: "Image size, WxH, of the benchmark rig (default 1920x1080; not with --calibration).")
    var size: String?

    @Option(name: .long, help: "Time this calibration (any format Parallax reads) at its image size instead of the benchmark rig.")
    var calibration: String?

    @Option(name: .long, help: "Vector instructions for the kernels: \(SIMDLevel.allCases.dropLast().map(\.rawValue).joined(separator: ", ")) or \(SIMDLevel.allCases.last!.rawValue) (default: the widest this CPU has, \(SIMDLevel.supported.rawValue)).")
    var simd: SIMDLevel?

    @Option(name: .long, help: "Pixel format: gray8, rgb8, bgr8, rgba8, bgra8, yuyv, uyvy, nv12, i420 or i422; for bench rectify also mjpeg (decode + rectify a JPEG pair).")
    var format: String = "gray8"

    @Option(name: .long, parsing: .unconditional, help: "Threads per pair, including the caller's (default: all processors, as rectify uses).")
    var threads: Int?

    @Option(name: .long, parsing: .unconditional, help: "Timed repetitions (after warm-up).")
    var iterations: Int = 50

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func validate() throws {
        if let size {
            guard calibration == nil else { throw ValidationError("--size and --calibration exclude each other: a calibration sets its own image size") }
            guard ImageSize(parsing: size) != nil else { throw ValidationError("--size must look like 1920x1080, got '\(size)'") }
        }
        guard let format = format == "mjpeg" ? .gray8 : PixelFormat(rawValue: format) else {
            throw ValidationError("--format must be one of \(PixelFormat.allCases.map(\.rawValue).joined(separator: ", ")) "
                                  + "(or mjpeg for bench rectify), got '\(format)'")
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
    /// `--format mjpeg`: a JPEG pair decoded and rectified.
    var isMJPEG: Bool { format == "mjpeg" }
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

    @Option(name: .long, help: "With --format mjpeg: time these JPEG files (LEFT.jpg,RIGHT.jpg) instead of the simulated scene encoded at quality 90.")
    var jpeg: String?

    @Option(name: .long, help: "With --format mjpeg: what the pair is decoded and rectified to: gray8, bgr8, rgb8, or the JPEG's own planes i420 (4:2:0) or i422 (4:2:2).")
    var output: String?

    func validate() throws {
        if !options.isMJPEG && (jpeg != nil || output != nil) {
            throw ValidationError("--jpeg and --output are for --format mjpeg")
        }
        if let output, !["gray8", "bgr8", "rgb8", "i420", "i422"].contains(output) {
            throw ValidationError("--output must be gray8, bgr8, rgb8, i420 or i422, got '\(output)'")
        }
        if let jpeg, jpeg.split(separator: ",").count != 2 { throw ValidationError("--jpeg takes LEFT.jpg,RIGHT.jpg") }
        if options.isMJPEG && compact { throw ValidationError("--compact is for uncompressed formats") }
    }

    func run() throws {
        if options.isMJPEG { return try runMJPEG() }
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
                + "\(rectifier.simdLevel) on \(CPUModel.name): median \(formatNumber(median)) ms, min \(formatNumber(minimum)) ms per pair, \(String(format: "%.1f", megapixels)) MP/s")
            print("convergence change (set the plane, apply it; no map rebuilt): median \(formatNumber(change.median)) ms, "
                + "max \(formatNumber(changeMax)) ms; the pairs after it: median \(formatNumber(shifted.median)) ms")
        }
    }
}

extension BenchRectifyCommand {
    /// `--format mjpeg`: both JPEGs decoded (in parallel on two threads when there are two,
    /// as a stereo device's cameras decode on their own threads) and the pair rectified into
    /// reused buffers; also each step alone, so the pipeline's overhead above their sum shows.
    func runMJPEG() throws {
        let calibration = try options.loadCalibration()
        let size = calibration.left.size
        let bytes = try jpegPair(size: size)
        let kind = output ?? "i420"
        let decoding: MJPEGOutput = kind == "gray8" ? .gray8 : kind == "bgr8" ? .bgr8 : kind == "rgb8" ? .rgb8 : .ycbcr
        let pairDecoder = try MJPEGPairDecoder(output: decoding, threads: options.threadCount)
        let first = pairDecoder.left
        // Each JPEG decoded whole once before any timing, its errors naming its file.
        let names = jpeg.map { $0.split(separator: ",").map(String.init) } ?? ["the simulated left JPEG", "the simulated right JPEG"]
        let layouts = try zip(names, bytes).map { name, jpeg in
            do {
                return try jpeg.withUnsafeBytes { raw in
                    let layout = try first.layout(for: first.header(of: raw))
                    _ = try first.decode(raw)
                    return layout
                }
            } catch { throw CLIError("\(name): \(error)") }
        }
        guard layouts[0] == layouts[1], layouts[0].size == size else {
            throw CLIError("the JPEGs decode to \(layouts[0].size) \(layouts[0].format.rawValue) and \(layouts[1].size) "
                           + "\(layouts[1].format.rawValue); both must be \(size) (the calibration's size)")
        }
        let format = layouts[0].format
        if decoding == .ycbcr, format.rawValue != kind {
            throw CLIError("these JPEGs decode to \(format.rawValue) (their chroma subsampling); use --output \(format.rawValue)")
        }
        let rectifier = try options.rectifier(for: calibration)
        if let export {
            let decoded = try bytes.map { jpeg in try jpeg.withUnsafeBytes { try first.decode($0) } }
            try BenchImages.export(to: export, calibration: calibration, rectifier: rectifier, left: decoded[0], right: decoded[1])
        }
        try rectifier.prepare(for: format)
        var decodedLeft = try ImageBuffer(format: format, size: size), decodedRight = decodedLeft
        var outLeft = try ImageBuffer(format: format, size: rectifier.outputSize), outRight = outLeft
        // Both decoded at once on the rectifier's threads (one after the other with one thread).
        func decodeBoth() throws {
            try decodedLeft.withMutableView { a in
                try decodedRight.withMutableView { b in
                    try bytes[0].withUnsafeBytes { l in
                        try bytes[1].withUnsafeBytes { r in try pairDecoder.decode(left: l, right: r, into: a, b) }
                    }
                }
            }
        }
        func rectify() throws {
            try decodedLeft.withView { l in try decodedRight.withView { r in try rectifier.rectify(left: l, right: r, into: &outLeft, &outRight) } }
        }
        func time(_ work: () throws -> Void) throws -> (median: Double, min: Double) {
            try warmUp(work)
            var samples: [Double] = []
            samples.reserveCapacity(options.iterations)
            for _ in 0..<options.iterations {
                let start = monotonicSeconds()
                try work()
                samples.append(monotonicSeconds() - start)
            }
            return summarise(samples)
        }
        // The three timings interleave in rounds, so a slow stretch of the machine falls on all.
        var whole: [Double] = [], decodeOnly: [Double] = [], rectifyOnly: [Double] = []
        for _ in 0..<5 {
            whole.append(try time { try decodeBoth(); try rectify() }.median)
            decodeOnly.append(try time(decodeBoth).median)
            rectifyOnly.append(try time(rectify).median)
        }
        func middle(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let (total, decodeTime, rectifyTime) = (middle(whole), middle(decodeOnly), middle(rectifyOnly))
        let overhead = total / (decodeTime + rectifyTime) - 1
        let jpegBytes = bytes.map(\.count).reduce(0, +)
        if options.json {
            print(JSONValue.object(JSONObject([
                ("operation", .string("decode-rectify-pair")), ("size", .string("\(size)")), ("format", .string("mjpeg")),
                ("output", .string(format.rawValue)), ("jpeg_bytes", .number(Double(jpegBytes))),
                ("threads", .number(Double(options.threadCount))), ("iterations", .number(Double(options.iterations))),
                ("ms_per_pair_median", jsonNumber(total)), ("decode_ms_median", jsonNumber(decodeTime)),
                ("rectify_ms_median", jsonNumber(rectifyTime)), ("overhead", jsonNumber(overhead)),
            ] + options.contextFields)).serialized(indent: 0))
        } else {
            print("decode-rectify-pair \(size) mjpeg → \(format.rawValue), \(options.threadCount) thread(s), \(rectifier.simdLevel): "
                + "median \(formatNumber(total)) ms per pair; decoding alone \(formatNumber(decodeTime)) ms, rectifying alone "
                + "\(formatNumber(rectifyTime)) ms, overhead \(String(format: "%.1f", overhead * 100)) % (\(jpegBytes) JPEG bytes)")
        }
    }

    /// The JPEG pair to time: `--jpeg`, or the simulated rig's two views at `size` encoded at quality 90.
    private func jpegPair(size: ImageSize) throws -> [[UInt8]] {
        if let jpeg {
            return try jpeg.split(separator: ",").map { name in
                let path = String(name)
                guard let data = FileManager.default.contents(atPath: path) else { throw CLIError("\(path): cannot read it") }
                return [UInt8](data)
            }
        }
        let rig = SimulatedStereoRig.example(size: size)
        return try [StereoSide.left, .right].map { side in try JPEGEncoder.encode(try rig.render(side, format: .rgb8), quality: 90) }
    }
}

/// `parallax bench maps`: time to build both maps.
struct BenchMapsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "maps",
        abstract: "Time building both rectification maps (float maps, then the fixed-point maps for --format).")

    @OptionGroup var options: BenchOptions

    func validate() throws {
        if options.isMJPEG { throw ValidationError("--format mjpeg is for bench rectify; maps are built for pixel formats") }
    }

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
