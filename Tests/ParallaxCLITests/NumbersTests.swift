import Foundation
import Testing
@testable import parallax

/// Out-of-range numbers on the command line and in files: each a clear error naming the
/// option or field (exit 1 or 64), never a trap, a hang or an attempt to allocate terabytes.
@Suite("Numbers at the command line")
struct NumbersTests {
    static let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path
    static let data = "/usr/share/doc/opencv-doc/examples/data"

    @Test("every out-of-range number is refused with its name, before any work")
    func outOfRangeNumbers() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var tiny = try String(contentsOfFile: Self.sample, encoding: .utf8)
        tiny = tiny.replacingOccurrences(of: "\"fx\": 524.0970745055303", with: "\"fx\": 1e-300")
        let tinyPath = dir.appendingPathComponent("tiny-fx.json").path
        try tiny.write(toFile: tinyPath, atomically: true, encoding: .utf8)
        #expect(tiny.contains("1e-300"))
        let out = dir.path + "/out"
        let cases: [(arguments: [String], names: String)] = [
            (["rectification", "--calibration", Self.sample, "--convergence", "1e-300"], "--convergence"),
            (["rectification", "--calibration", tinyPath], "left.intrinsics.fx"),
            (["calibrate", "--left", "\(Self.data)/left0*.jpg", "--right", "\(Self.data)/right0*.jpg", "--board", "9x6",
              "--square", "1", "--time-budget", "2h", "--output", out + ".json"], "--time-budget"),
            (["calibrate", "--left", "\(Self.data)/left0*.jpg", "--right", "\(Self.data)/right0*.jpg", "--board", "9x6",
              "--square", "1", "--time-budget", "1e18s", "--output", out + ".json"], "--time-budget"),
            (["calibrate", "--left", "\(Self.data)/left0*.jpg", "--right", "\(Self.data)/right0*.jpg", "--board", "9x6",
              "--square", "-25mm", "--output", out + ".json"], "-25mm"),
            (["capture", "--simulated", "--timeout", "nan", "--output", out], "--timeout"),
            (["capture", "--simulated", "--timeout", "nans", "--output", out], "--timeout"),
            (["stream", "--simulated", "--timeout", "2d"], "--timeout"),
            (["capture", "--simulated", "--size", "100000x100000", "--output", out], "--size"),
            (["bench", "rectify", "--size", "100000x100000"], "--size"),
            (["bench", "uncertainty", "--draws", "0"], "--draws"),
            (["bench", "uncertainty", "--size", "100000x100000"], "--size"),
            (["calibrate", "--live", "--simulated", "--pairs", "2", "--output", out + ".json"], "--pairs"),
            (["calibrate", "--live", "--simulated", "--uncertainty-target", "nan", "--output", out + ".json"], "--uncertainty-target"),
            (["calibrate", "--live", "--simulated", "--time-limit", "nan", "--output", out + ".json"], "--time-limit"),
            (["stream", "--simulated", "--size", "100000x100000"], "--size"),
            (["capture", "--simulated", "--format", "", "--output", out], "--format"),
            (["stream", "--simulated", "--format", "64x48@2000000000:GREY"], "--format"),
        ]
        for item in cases {
            let result = try ParallaxCLI.run(item.arguments, timeout: 60)
            #expect(result.status == 1 || result.status == 64, "\(item.arguments): status \(result.status), \(result.stderr)")
            #expect(result.stderr.contains(item.names), "\(item.arguments): \(result.stderr)")
            #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("crashed"))
        }
        #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: out + ".json"))
        // Negative numbers are numbers: OpenCV users type --alpha -1 for "no scaling".
        let alpha = try ParallaxCLI.run(["rectification", "--calibration", Self.sample, "--alpha", "-1"])
        #expect(alpha.status == 0, "\(alpha.stderr)")
        // …and every numeric option takes one as its value, to refuse it by its range, never
        // as a missing value ("--frames -1" used to say "Missing value for '--frames'").
        for (arguments, says) in [(["stream", "--simulated", "--frames", "-1"], "--frames must be positive"),
                                  (["stream", "--simulated", "--max-fps", "-3"], "--max-fps -3.0 is outside"),
                                  (["stream", "--simulated", "--timeout", "-1s"], "'-1s' is invalid for '--timeout"),
                                  (["capture", "--simulated", "--frames", "-5", "--output", out], "--frames")] {
            let result = try ParallaxCLI.run(arguments, timeout: 60)
            #expect(result.status == 64 && result.stderr.contains(says) && !result.stderr.contains("Missing value"),
                    "\(arguments): \(result.status) \(result.stderr)")
        }
    }

    @Test("every duration option takes the same syntax, and a bare number is refused with it")
    func oneDurationSyntax() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.path + "/out"
        let bare: [[String]] = [
            ["capture", "--simulated", "--timeout", "5", "--output", out],
            ["stream", "--simulated", "--timeout", "5"],
            ["stream", "--simulated", "--consumer-delay", "50"],
            ["calibrate", "--left", "\(Self.data)/left0*.jpg", "--right", "\(Self.data)/right0*.jpg", "--board", "9x6",
             "--square", "25mm", "--time-budget", "2", "--output", out + ".json"],
            ["pair", "--left", "a.csv", "--right", "b.csv", "--max-skew", "5"],
            ["pair", "--left", "a.csv", "--right", "b.csv", "--frame-interval", "33.3"],
        ]
        for arguments in bare {
            let result = try ParallaxCLI.run(arguments, timeout: 60)
            let option = arguments.first { $0.hasPrefix("--") && ["--timeout", "--consumer-delay", "--time-budget", "--max-skew", "--frame-interval"].contains($0) }!
            #expect(result.status == 64, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(option) && result.stderr.contains("a duration needs a unit (a number with a unit: 200us, 33.3ms, 5s, 2min, 1h)"),
                    "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: out) && !FileManager.default.fileExists(atPath: out + ".json"))
        #expect(DurationArgument(argument: "2min")?.nanoseconds == 120_000_000_000)
        #expect(DurationArgument(argument: "1.5h")?.nanoseconds == 5_400_000_000_000)
        #expect(DurationArgument(argument: "33.3ms")?.description == "33.3ms")
        // The README's spellings of one duration syntax: 200us or 200µs, 1000000ns, 5s.
        #expect(DurationArgument(argument: "200us")?.nanoseconds == 200_000 && DurationArgument(argument: "200µs")?.nanoseconds == 200_000)
        #expect(DurationArgument(argument: "1000000ns")?.nanoseconds == 1_000_000 && DurationArgument(argument: "5s")?.nanoseconds == 5_000_000_000)
    }
}
