import ArgumentParser
import Foundation
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage

/// `parallax disparity`: the disparity map of one stereo pair of image files.
struct DisparityCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disparity",
        abstract: "Compute the disparity map of a stereo pair with the semi-global matcher.",
        discussion: """
            The pair must be rectified, or given with --calibration, which rectifies it first (the map is then \
            of the rectified left image). Colour images are matched on their luma. The output's extension picks \
            its format: .pfm (Middlebury's Float32 PFM, +inf where invalid) or .png (16-bit at KITTI's scale, \
            256 × disparity, 0 where invalid; disparities 0 to 255 only). --color adds a picture of the map with \
            a colour bar. Every output is written whole or not at all.
            """)

    @Option(name: .long, help: "Left image file (PNG, JPEG, PGM or PPM).")
    var left: String

    @Option(name: .long, help: "Right image file.")
    var right: String

    @Option(name: .long, help: "Rectify the pair with this calibration first (any format Parallax reads).")
    var calibration: String?

    @OptionGroup var matcher: DisparityOptions

    @Option(name: .long, help: "Where to write the disparity map: .pfm or .png.")
    var output: String

    @Option(name: .customLong("color"), help: "Also write a colourised picture of the map with a colour bar (.png).")
    var colour: String?

    @Flag(name: .long, help: "Print one JSON object: the range, density, invalid pixels by reason, timing.")
    var json = false

    func validate() throws {
        let ext = URL(fileURLWithPath: output).pathExtension.lowercased()
        guard ext == "pfm" || ext == "png" else {
            throw ValidationError("--output '\(output)' must end in .pfm (Float32) or .png (16-bit, KITTI's scale)")
        }
        if let colour, URL(fileURLWithPath: colour).pathExtension.lowercased() != "png" {
            throw ValidationError("--color '\(colour)' must end in .png")
        }
    }

    func run() throws {
        try OutputFiles.check(outputs: [("--output", output), ("--color", colour)].compactMap { o, p in p.map { (o, $0) } },
                              inputs: [("--left", left), ("--right", right), ("--calibration", calibration)].compactMap { o, p in p.map { (o, $0) } })
        var leftImage = try RectifyCommand.read(left), rightImage = try RectifyCommand.read(right)
        if let calibration {
            (leftImage, rightImage) = try Self.rectified(leftImage, rightImage, calibration: calibration, paths: (left, right))
        }
        guard leftImage.size == rightImage.size else {
            throw CLIError("\(left) is \(leftImage.size) but \(right) is \(rightImage.size): a rectified pair has one size")
        }
        leftImage = try Self.luma(leftImage, path: left)
        rightImage = try Self.luma(rightImage, path: right)
        try MemoryLimit.check(leftImage.size, bytesPerPixel: 2 * matcher.disparities, copies: 1, option: "--disparities")
        let matcher = try matcher.matcher(for: leftImage.size)
        var map = DisparityMap()
        let start = monotonicSeconds()
        do {
            try leftImage.withView { l in try rightImage.withView { r in try matcher.match(left: l, right: r, into: &map) } }
        } catch {
            throw CLIError("\(left), \(right): \(error)")
        }
        let seconds = monotonicSeconds() - start
        var files: [(path: String, bytes: [UInt8])] = []
        // Every output encoded before any is written, each error naming its file.
        do {
            files.append((output, URL(fileURLWithPath: output).pathExtension.lowercased() == "pfm" ? map.pfm() : try map.kittiPNG(destination: output)))
        } catch {
            throw CLIError("\(output): \(error); nothing was written")
        }
        if let colour {
            do { files.append((colour, try map.colourised().encoded(as: .png, destination: colour))) } catch {
                throw CLIError("\(colour): \(error); nothing was written")
            }
        }
        try OutputFiles.writeAll(files)
        let valid = map.values.filter(\.isFinite)
        if json {
            print(JSONValue.object(JSONObject([
                ("size", .string("\(map.size)")), ("min_disparity", .number(Double(map.minimumDisparity))),
                ("disparities", .number(Double(map.disparityCount))), ("paths", .string(matcher.configuration.paths.rawValue)),
                ("threads", .number(Double(matcher.configuration.threads))), ("simd", .string(matcher.simdLevel.rawValue)),
                ("density", jsonNumber(map.density)), ("valid", .number(Double(map.validCount))),
                ("invalid", .object(JSONObject([
                    ("outside", .number(Double(map.invalid.outside))), ("ambiguous", .number(Double(map.invalid.ambiguous))),
                    ("inconsistent", .number(Double(map.invalid.inconsistent))), ("speckle", .number(Double(map.invalid.speckle))),
                ]))),
                ("disparity_min", valid.min().map { jsonNumber(Double($0)) } ?? .null),
                ("disparity_max", valid.max().map { jsonNumber(Double($0)) } ?? .null),
                ("ms", jsonNumber(seconds * 1000)), ("output", .string(output)),
            ])).serialized(indent: 0))
        } else {
            let range = valid.isEmpty ? "none valid" : String(format: "%.2f…%.2f px", valid.min() ?? 0, valid.max() ?? 0)
            print("disparity \(map.size), \(map.minimumDisparity)…\(map.minimumDisparity + map.disparityCount - 1) searched, "
                  + "\(matcher.configuration.paths.count) paths: \(String(format: "%.1f", 100 * map.density)) % valid (\(range)), "
                  + "\(String(format: "%.1f", seconds * 1000)) ms; wrote \(files.map(\.path).joined(separator: ", "))")
        }
    }

    /// The pair rectified with the calibration at `source` (one resample each, bilinear).
    static func rectified(_ left: ImageBuffer, _ right: ImageBuffer, calibration source: String,
                          paths: (String, String)) throws -> (ImageBuffer, ImageBuffer) {
        let calibration = try RectificationArguments.loadCalibration(source)
        for (path, image, camera) in [(paths.0, left, calibration.left), (paths.1, right, calibration.right)] where image.size != camera.size {
            throw CLIError("\(path): the image is \(image.size) but the calibration \(source) is for \(camera.size) images")
        }
        do {
            let rectifier = try Rectifier(calibration: calibration)
            let gray = (try luma(left, path: paths.0), try luma(right, path: paths.1))
            return try rectifier.rectify(left: gray.0, right: gray.1)
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError("\(source): \(error)")
        }
    }

    /// Gray images as they are, colour ones converted to their luma.
    static func luma(_ image: ImageBuffer, path: String) throws -> ImageBuffer {
        switch image.format {
        case .gray8, .yuyv, .uyvy, .nv12, .i420, .i422: return image
        default:
            do { return try image.converted(to: .gray8) } catch { throw CLIError("\(path): \(error)") }
        }
    }
}
