import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// `parallax bench detect`: time board detection on image files, per image, the way
/// Benchmarks/compare-opencv times OpenCV's findChessboardCorners + cornerSubPix.
struct BenchDetectCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Time board detection (search and sub-pixel refinement) on image files.",
        discussion: """
            Each image is read and converted to gray once, then detected --iterations times; an image's \
            time is its fastest run (reading and decoding are not timed). Prints the median and mean \
            over images, and how many boards were found. Build in release mode for meaningful figures.
            """)

    @Argument(help: "Image files (PNG or JPEG) showing the board.")
    var images: [String]

    @Option(name: [.long, .customLong("target")], help: "The board: COLUMNSxROWS inner corners (chessboard), circles:COLSxROWS or acircles:COLSxROWS.")
    var board: String = "9x6"

    @Option(name: .long, parsing: .unconditional, help: "Timed runs per image; the fastest counts.")
    var iterations: Int = 5

    @Flag(name: .long, help: "Print one JSON object.")
    var json = false

    func validate() throws {
        guard !images.isEmpty else { throw ValidationError("give at least one image") }
        guard iterations >= 1 else { throw ValidationError("--iterations must be at least 1, got \(iterations)") }
    }

    func run() throws {
        let target: CalibrationBoard
        do { target = try CalibrationBoard(parsing: board, square: "1") } catch { throw ValidationError(error.description) }
        let detector = ChessboardDetector(board: target)
        var seconds: [Double] = [], found = 0
        for path in images {
            let image: GrayImage
            do { image = try GrayImage(ImageBuffer(contentsOfFile: path)) } catch {
                throw ValidationError("\(path) is unreadable: \(error)")
            }
            var best = Double.infinity, detected = false
            for _ in 0..<iterations {
                let start = monotonicSeconds()
                let result = detector.detect(in: image)
                best = min(best, monotonicSeconds() - start)
                if case .success = result { detected = true }
            }
            seconds.append(best)
            if detected { found += 1 }
        }
        let median = summarise(seconds).median
        let mean = 1000 * seconds.reduce(0, +) / Double(seconds.count)
        if json {
            print(JSONValue.object(JSONObject([
                ("operation", .string("detect")), ("board", .string(board)), ("images", .number(Double(images.count))),
                ("found", .number(Double(found))), ("iterations", .number(Double(iterations))),
                ("ms_median", jsonNumber(median)), ("ms_mean", jsonNumber(mean)),
                ("ms_per_image", .array(seconds.map { jsonNumber(1000 * $0) })), ("cpu", .string(CPUModel.name)),
            ])).serialized(indent: 0))
        } else {
            print("detect \(board): \(found)/\(images.count) found, per image median \(formatNumber(median)) ms, mean \(formatNumber(mean)) ms (fastest of \(iterations) runs each)")
        }
    }
}
