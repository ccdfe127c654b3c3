import ArgumentParser
import Foundation
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage

/// `parallax bench disparity`: time per matched pair.
struct BenchDisparityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disparity",
        abstract: "Time the semi-global matcher on a rendered pair (the tilted panel scene).",
        discussion: """
            The pair is the 'tilted' scene of `parallax bench disparity-scenes` at --size, rendered once; the \
            matcher runs into one reused map. Prints the CPU, the vector level and the working memory. \
            --export writes the pair (left.png, right.png) for Benchmarks/compare-opencv.
            """)

    @Option(name: .long, help: "Image size, WxH (default 640x480).")
    var size: String = "640x480"

    @OptionGroup var matcher: DisparityOptions

    @Option(name: .long, parsing: .unconditional, help: "Timed repetitions (after warm-up).")
    var iterations: Int = 20

    @Option(name: .long, help: "Also write the timed pair here, as left.png and right.png.")
    var export: String?

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard let size = ImageSize(parsing: size), size.width >= 16, size.height >= 16 else {
            throw ValidationError("--size must look like 640x480 (each side at least 16), got '\(size)'")
        }
        try MemoryLimit.check(size, bytesPerPixel: 2 * matcher.disparities, copies: 1, option: "--size")
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1") }
    }

    func run() throws {
        let size = ImageSize(parsing: self.size) ?? ImageSize(width: 640, height: 480)
        let scenes = DisparityScene.all(size: size, disparityCount: matcher.disparities)
        guard let scene = scenes.first(where: { $0.name == "tilted" }) else { throw CLIError("no tilted scene") }
        let left = try scene.rig.render(.left), right = try scene.rig.render(.right)
        if let export {
            try FileManager.default.createDirectory(atPath: export, withIntermediateDirectories: true)
            try OutputFiles.writeAll([("\(export)/left.png", try left.encoded(as: .png, destination: "\(export)/left.png")),
                                      ("\(export)/right.png", try right.encoded(as: .png, destination: "\(export)/right.png"))])
        }
        let matcher = try matcher.matcher(for: size)
        var map = DisparityMap()
        var timings: [Double] = []
        try left.withView { l in
            try right.withView { r in
                try warmUp { try matcher.match(left: l, right: r, into: &map) }
                for _ in 0..<iterations {
                    let start = monotonicSeconds()
                    try matcher.match(left: l, right: r, into: &map)
                    timings.append(monotonicSeconds() - start)
                }
            }
        }
        let (median, minimum) = summarise(timings)
        let c = matcher.configuration
        if json {
            let fields: [(String, JSONValue)] = [
                ("operation", .string("disparity")), ("size", .string("\(size)")), ("disparities", .number(Double(c.disparityCount))),
                ("min_disparity", .number(Double(c.minimumDisparity))), ("paths", .string(c.paths.rawValue)),
                ("census", .string("\(c.census)")), ("threads", .number(Double(c.threads))), ("iterations", .number(Double(iterations))),
                ("ms_per_pair_median", jsonNumber(median)), ("ms_per_pair_min", jsonNumber(minimum)),
                ("pairs_per_second", jsonNumber(1000 / median)), ("density", jsonNumber(map.density)),
                ("working_memory_bytes", .number(Double(matcher.workingMemoryBytes))),
                ("simd", .string(matcher.simdLevel.rawValue)), ("simd_description", .string(matcher.kernelDescription)),
                ("cpu", .string(CPUModel.name)),
            ]
            print(JSONValue.object(JSONObject(fields)).serialized(indent: 0))
        } else {
            let rate = String(format: "%.1f", 1000 / median), valid = String(format: "%.1f", 100 * map.density)
            let memory = String(format: "%.1f", Double(matcher.workingMemoryBytes) / 1_048_576)
            let what = "disparity \(size), \(c.disparityCount) disparities, \(c.paths.count) paths, census \(c.census), \(c.threads) thread(s)"
            print("\(what), \(matcher.kernelDescription) on \(CPUModel.name): median \(formatNumber(median)) ms, min \(formatNumber(minimum)) ms "
                  + "per pair (\(rate) pairs/s), \(valid) % valid, working memory \(memory) MiB")
        }
    }
}

/// `parallax bench disparity-scenes`: the rendered scenes with their exact disparity, as files.
struct BenchDisparityScenesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disparity-scenes",
        abstract: "Write rendered rectified pairs with exact disparity (wall, tilted, occlusion) for accuracy checks.",
        discussion: """
            Each scene goes to OUTPUT/NAME/: left.png and right.png (8-bit gray, rectified), truth.pfm (the true \
            disparity of every left pixel, +inf where none), nonoccluded.png (255 where the right camera sees the \
            same point, 0 where it is occluded) and scene.json (the range to search).
            """)

    @Option(name: .long, help: "The folder to write the scenes into (made if missing).")
    var output: String

    @Option(name: .long, help: "Image size, WxH (default 640x480).")
    var size: String = "640x480"

    @Option(name: .long, parsing: .unconditional, help: "The disparity range the scenes are made for (a multiple of 16, 16…256).")
    var disparities: Int = 128

    func validate() throws {
        guard let size = ImageSize(parsing: size), size.width >= 16, size.height >= 16, size.width <= 8192, size.height <= 8192 else {
            throw ValidationError("--size must look like 640x480 (each side 16…8192), got '\(size)'")
        }
        guard disparities >= 16, disparities <= 256, disparities % 16 == 0, disparities <= size.width else {
            throw ValidationError("--disparities must be a multiple of 16 from 16 to 256, at most the width, got \(disparities)")
        }
    }

    func run() throws {
        let size = ImageSize(parsing: self.size) ?? ImageSize(width: 640, height: 480)
        for scene in DisparityScene.all(size: size, disparityCount: disparities) {
            let folder = "\(output)/\(scene.name)"
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let left = try scene.rig.render(.left), right = try scene.rig.render(.right)
            let (truth, visible) = try scene.truth()
            let mask = try ImageBuffer(format: .gray8, size: size, bytes: visible.map { $0 ? 255 : 0 })
            let info = JSONValue.object(JSONObject([
                ("name", .string(scene.name)), ("min_disparity", .number(Double(scene.minimumDisparity))),
                ("disparities", .number(Double(scene.disparityCount))),
                ("focal_px", .number(scene.rig.calibration.left.intrinsics.fx)), ("baseline_m", .number(DisparityScene.baseline)),
            ])).serialized(indent: 2)
            try OutputFiles.writeAll([
                ("\(folder)/left.png", try left.encoded(as: .png, destination: "\(folder)/left.png")),
                ("\(folder)/right.png", try right.encoded(as: .png, destination: "\(folder)/right.png")),
                ("\(folder)/truth.pfm", truth.pfm()),
                ("\(folder)/nonoccluded.png", try mask.encoded(as: .png, destination: "\(folder)/nonoccluded.png")),
                ("\(folder)/scene.json", Array((info + "\n").utf8)),
            ])
            let known = truth.validCount, occluded = visible.filter { !$0 }.count
            print("\(scene.name): \(size), truth for \(known) pixels, \(occluded) not seen by the right camera; wrote \(folder)/")
        }
    }
}
