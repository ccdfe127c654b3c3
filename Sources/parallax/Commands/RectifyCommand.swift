import ArgumentParser
import Foundation
import ParallaxGeometry
import ParallaxImage

/// `parallax rectify`: rectifies one stereo pair of image files.
struct RectifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rectify",
        abstract: "Rectify a stereo pair of image files with a calibration.",
        discussion: """
            Reads PNG, JPEG, PGM or PPM (chosen by content) and writes each output in the format its \
            extension names. Rows of the rectified images are epipolar lines: a point appears on the \
            same row in both. --preview shows the pair side by side with guide lines to check that by \
            eye; --anaglyph overlays them in red and cyan so the convergence plane (where the two \
            images coincide) can be seen.
            """)

    @OptionGroup var shared: RectificationArguments

    @Option(name: .long, help: "Left image file.")
    var left: String

    @Option(name: .long, help: "Right image file.")
    var right: String

    @Option(name: .customLong("output-left"), help: "Where to write the rectified left image (.png, .jpg, .pgm, .ppm).")
    var outputLeft: String

    @Option(name: .customLong("output-right"), help: "Where to write the rectified right image.")
    var outputRight: String

    @Option(name: .long, help: "nearest, bilinear or bicubic (also: speed, balanced, quality).")
    var interpolation: Interpolation = .bilinear

    @Option(name: .long, help: "Also write the pair side by side with horizontal guide lines (PNG recommended).")
    var preview: String?

    @Option(name: .long, help: "Also write a red-cyan anaglyph of the pair.")
    var anaglyph: String?

    @Option(name: .long, parsing: .unconditional, help: "Threads to use (default: all processors).")
    var threads: Int?

    func validate() throws {
        if let threads, threads < 1 || threads > 1024 {
            throw ValidationError("--threads must be from 1 to 1024 (this machine has \(ProcessInfo.processInfo.activeProcessorCount) cores), got \(threads)")
        }
        for path in [outputLeft, outputRight] + [preview, anaglyph].compactMap({ $0 }) where ImageFileFormat(pathExtensionOf: path) == nil {
            throw ValidationError("'\(path)' has no image extension the writer knows (.png, .jpg, .jpeg, .pgm, .ppm)")
        }
    }


    func run() throws {
        try OutputFiles.check(
            outputs: [("--output-left", outputLeft), ("--output-right", outputRight), ("--preview", preview), ("--anaglyph", anaglyph)]
                .compactMap { option, path in path.map { (option, $0) } },
            inputs: [("--left", left), ("--right", right), ("--calibration", shared.calibration)])
        let calibration = try shared.loadCalibration()
        let leftImage = try Self.read(left)
        var rightImage = try Self.read(right)
        for (path, image, camera) in [(left, leftImage, calibration.left), (right, rightImage, calibration.right)]
        where image.size != camera.size {
            throw CLIError("\(path): the image is \(image.size) but the calibration \(shared.calibration) is for \(camera.size) images")
        }
        if rightImage.format != leftImage.format {
            // One gray and one colour file: rectify both in colour.
            rightImage = try rightImage.converted(to: leftImage.format)
        }
        let rectifier: Rectifier
        let options = RectificationOptions(alpha: shared.optionsAlpha)
        let classic = try shared.rectification(of: calibration, options)
        let convergence = try shared.convergenceDistance(for: calibration, rectification: classic)
        do {
            rectifier = try Rectifier(
                calibration: calibration,
                convergenceDistance: convergence,
                options: options,
                interpolation: interpolation,
                threads: threads)
        } catch {
            throw CLIError("\(shared.calibration): \(error)")
        }
        let (l, r) = try rectifier.rectify(left: leftImage, right: rightImage)
        // A last guard: an image that came out all black, from an input that is not, is a
        // geometry problem, not a result.
        for (side, image, input) in [("left", l, leftImage), ("right", r, rightImage)]
        where image.bytes.allSatisfy({ $0 == 0 }) && !input.bytes.allSatisfy({ $0 == 0 }) {
            throw CLIError("the rectified \(side) image is all black: nothing of the input lands in it with \(shared.calibration)"
                           + (shared.convergence.map { " and --convergence \($0)" } ?? "") + "; nothing was written")
        }
        // Encode everything first, then write all or nothing.
        var files = [(path: outputLeft, bytes: try Self.encode(l, for: outputLeft)),
                     (path: outputRight, bytes: try Self.encode(r, for: outputRight))]
        if let preview {
            let image = try StereoPreview.sideBySide(left: l, right: r, layout: rectifier.maps.rectification.layout)
            files.append((preview, try Self.encode(image, for: preview)))
        }
        if let anaglyph {
            files.append((anaglyph, try Self.encode(try StereoPreview.anaglyph(left: l, right: r), for: anaglyph)))
        }
        try OutputFiles.writeAll(files)
        let written = files.map(\.path)
        let plane = rectifier.maps.rectification.convergenceDistance.map {
            "convergence plane at \(RectificationArguments.length($0, calibration.translationUnit))"
        } ?? "convergence at infinity"
        print("rectified \(leftImage.size) \(leftImage.format.rawValue) pair (\(plane)); wrote \(written.joined(separator: ", "))")
    }

    /// `image` encoded in the format `path`'s extension names (validated up front).
    static func encode(_ image: ImageBuffer, for path: String) throws -> [UInt8] {
        guard let format = ImageFileFormat(pathExtensionOf: path) else {
            throw CLIError("'\(path)' has no image extension the writer knows (.png, .jpg, .jpeg, .pgm, .ppm)")
        }
        return try image.encoded(as: format, destination: path)
    }

    static func read(_ path: String) throws -> ImageBuffer {
        do {
            return try ImageBuffer(contentsOfFile: path)
        } catch {
            throw CLIError(error.description)
        }
    }
}

extension Interpolation: ExpressibleByArgument {
    /// `nearest`, `bilinear` or `bicubic`, or AVFoundation's words for them: `speed`,
    /// `balanced`, `quality`; in any case.
    public init?(argument: String) {
        switch argument.lowercased() {
        case "nearest", "speed": self = .nearest
        case "bilinear", "balanced": self = .bilinear
        case "bicubic", "quality": self = .bicubic
        default: return nil
        }
    }
}
