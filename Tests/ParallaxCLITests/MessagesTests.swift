import Foundation
import Testing

/// What the CLI says: its version, and errors that name a path once, in a sentence.
@Suite("Messages")
struct MessagesTests {
    static let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path
    static let data = "/usr/share/doc/opencv-doc/examples/data"

    @Test func versionIsPrinted() throws {
        let result = try ParallaxCLI.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("parallax 0.1.0"), "\(result.stdout)")
    }

    /// Help texts are prose and one-line examples: no line ends in a backslash, which in a
    /// Swift string continues the line and printed means a stray `\\`.
    @Test("no help text shows a stray line-continuation backslash")
    func helpTextsHaveNoStrayBackslashes() throws {
        let commands = ["demo", "devices", "cost", "capture", "stream", "pair", "calibrate", "target", "rectification",
                        "rectify", "bench", "bench maps", "bench rectify", "bench detect", "bench uncertainty"]
        for command in commands {
            let result = try ParallaxCLI.run(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
            for line in result.stdout.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasSuffix("\\") {
                Issue.record("parallax \(command) --help: \(line)")
            }
        }
    }

    @Test("errors name the path once, with the system's reason as a sentence, never a Foundation dump")
    func pathsOnceAndNoDumps() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("missing.jpg").path
        let cases: [(arguments: [String], path: String, says: String)] = [
            (["rectify", "--calibration", Self.sample, "--left", missing, "--right", "\(Self.data)/right01.jpg",
              "--output-left", dir.path + "/l.png", "--output-right", dir.path + "/r.png"],
             missing, "\(missing): cannot open: No such file or directory"),
            (["rectify", "--calibration", Self.sample, "--left", "\(Self.data)/left01.jpg", "--right", "\(Self.data)/right01.jpg",
              "--output-left", "/proc/parallax-test/l.png", "--output-right", dir.path + "/r.png"],
             "/proc/parallax-test:", "/proc/parallax-test: cannot create the folder: No such file or directory"),
            (["capture", "--simulated", "--frames", "2", "--output", "/proc/parallax-test"],
             "/proc/parallax-test:", "/proc/parallax-test: cannot create the folder: No such file or directory"),
        ]
        for item in cases {
            let result = try ParallaxCLI.run(item.arguments)
            #expect(result.status == 1, "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.contains(item.says), "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.components(separatedBy: item.path).count == 2, "named more than once: \(result.stderr)")
            #expect(!result.stderr.contains("NSCocoaErrorDomain") && !result.stderr.contains("Error Domain"), "\(result.stderr)")
        }
    }
}
