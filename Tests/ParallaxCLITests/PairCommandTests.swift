import Foundation
import ParallaxGeometry
import Testing
@testable import parallax

/// `parallax pair`, run as the built binary.
@Suite("parallax pair")
struct PairCommandTests {
    struct Result {
        var status: Int32
        var standardOutput: String
        var standardError: String
    }

    /// The `parallax` executable built next to the test bundle.
    static func binary() throws -> URL {
        var candidates: [URL] = []
        let runner = URL(fileURLWithPath: CommandLine.arguments[0])
        candidates.append(runner.deletingLastPathComponent())
        candidates.append(Bundle.main.bundleURL)
        candidates.append(Bundle.main.bundleURL.deletingLastPathComponent())
        for bundle in Bundle.allBundles where bundle.bundlePath.hasSuffix(".xctest") {
            candidates.append(bundle.bundleURL.deletingLastPathComponent())
        }
        for directory in candidates {
            let url = directory.appendingPathComponent("parallax")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "parallax binary not found near \(candidates)"])
    }

    /// Runs `parallax` with `arguments`; fails the test after 30 s.
    static func run(_ arguments: [String], in directory: URL) throws -> Result {
        let process = Process()
        process.executableURL = try binary()
        process.arguments = arguments
        process.currentDirectoryURL = directory
        let out = directory.appendingPathComponent("stdout-\(UUID().uuidString)")
        let err = directory.appendingPathComponent("stderr-\(UUID().uuidString)")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        let deadline = Date().addingTimeInterval(30)
        while process.isRunning && Date() < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            Issue.record("parallax \(arguments) did not finish within 30 s")
        }
        process.waitUntilExit()
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        return Result(
            status: process.terminationStatus, standardOutput: try String(contentsOf: out, encoding: .utf8),
            standardError: try String(contentsOf: err, encoding: .utf8))
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-pair-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Frames per camera in the logs: 2 s at 20 Hz, long enough for a drift estimate.
    static let frameCount = 40

    /// 20 Hz cameras: the right one 3 ms late, right frame 4 lost, left frame 7 lost.
    static func writeLogs(in directory: URL, shuffleRight: Bool = false) throws {
        var left = "#timestamp [ns],filename\n"
        var rightLines: [String] = []
        for k in 0..<Self.frameCount {
            let t = Int64(1_403_636_579_000_000_000) + Int64(k) * 50_000_000
            if k != 7 { left += "\(t),\(t).png\n" }
            if k != 4 { rightLines.append("\(t + 3_000_000),\(t + 3_000_000).png") }
        }
        if shuffleRight { rightLines.swapAt(1, 5) }
        try left.write(to: directory.appendingPathComponent("cam0.csv"), atomically: true, encoding: .utf8)
        try ("#timestamp [ns],filename\r\n" + rightLines.joined(separator: "\r\n") + "\r\n")
            .write(to: directory.appendingPathComponent("cam1.csv"), atomically: true, encoding: .utf8)
    }

    @Test("writes the pairs as CSV with the documented columns")
    func csvOutput() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory)
        let result = try Self.run(
            ["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--output", "pairs.csv", "--frame-interval", "50ms"],
            in: directory)
        #expect(result.status == 0, "\(result.standardError)")
        let csv = try String(contentsOf: directory.appendingPathComponent("pairs.csv"), encoding: .utf8)
        var expected = "left_timestamp_ns,right_timestamp_ns,left_filename,right_filename,skew_ns\n"
        for k in 0..<Self.frameCount where k != 4 && k != 7 {
            let t = Int64(1_403_636_579_000_000_000) + Int64(k) * 50_000_000
            expected += "\(t),\(t + 3_000_000),\(t).png,\(t + 3_000_000).png,3000000\n"
        }
        #expect(csv == expected)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("partial") }
        #expect(leftovers.isEmpty)
    }

    @Test("--json prints the summary object with every documented key")
    func jsonSummary() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory)
        let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--json"], in: directory)
        #expect(result.status == 0, "\(result.standardError)")
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(result.standardOutput.utf8)) as? [String: Any])
        #expect(Set(object.keys) == [
            "pairs", "left_frames", "right_frames", "dropped_left", "dropped_right", "drop_reasons", "skew_ns_p50",
            "skew_ns_p99", "skew_ns_max", "estimated_offset_ns", "estimated_drift_ppm",
        ])
        #expect(object["pairs"] as? Int == Self.frameCount - 2)
        #expect(object["left_frames"] as? Int == Self.frameCount - 1)
        #expect(object["right_frames"] as? Int == Self.frameCount - 1)
        // Left 4 and right 7 lost their partners; the median spacing (50 ms) gives a 25 ms
        // maximum skew, and the neighbours are 47 ms and 53 ms away.
        #expect(object["dropped_left"] as? Int == 1)
        #expect(object["dropped_right"] as? Int == 1)
        let reasons = try #require(object["drop_reasons"] as? [String: Int])
        #expect(reasons["no_match_within_skew"] == 2)
        // Every reason the synchronizer has, zeros included: eight (after_stop among them).
        #expect(reasons.keys.sorted() == ["after_stop", "constituent_disabled", "device_error", "disconnected", "discontinuity",
                                          "no_match_within_skew", "queue_overflow", "superseded"])
        #expect(object["skew_ns_p50"] as? Int == 3_000_000)
        #expect(object["skew_ns_p99"] as? Int == 3_000_000)
        #expect(object["skew_ns_max"] as? Int == 3_000_000)
        #expect(object["estimated_offset_ns"] as? Int == 3_000_000)
        let drift = try #require(object["estimated_drift_ppm"] as? Double)
        #expect(abs(drift) < 1e-6)
    }

    @Test("malformed lines are reported with their line numbers and nothing is written")
    func malformedLines() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory)
        try "#timestamp [ns],filename\n100,a.png\n200;b.png\n\n-5,c.png\n300,d.png,extra\n400,\n"
            .write(to: directory.appendingPathComponent("bad.csv"), atomically: true, encoding: .utf8)
        let result = try Self.run(
            ["pair", "--left", "bad.csv", "--right", "cam1.csv", "--output", "pairs.csv"], in: directory)
        #expect(result.status != 0)
        for line in [3, 5, 6, 7] { #expect(result.standardError.contains("line \(line):"), "\(result.standardError)") }
        #expect(!result.standardError.contains("line 2:"))
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("pairs.csv").path))
    }

    @Test("unsorted input is sorted, with a warning on standard error")
    func unsortedInput() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory, shuffleRight: true)
        let shuffled = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv"], in: directory)
        #expect(shuffled.status == 0)
        #expect(shuffled.standardError.contains("cam1.csv") && shuffled.standardError.contains("sorted"))
        try Self.writeLogs(in: directory)
        let sorted = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv"], in: directory)
        #expect(sorted.standardError.isEmpty)
        #expect(shuffled.standardOutput == sorted.standardOutput)
        #expect(sorted.standardOutput.split(separator: "\n").count == Self.frameCount - 1)  // header + pairs
    }

    /// Writes `text` as `name` in `directory`.
    static func write(_ text: String, _ name: String, in directory: URL) throws {
        try text.write(to: directory.appendingPathComponent(name), atomically: true, encoding: .utf8)
    }

    /// Logs that pair, but not as meant, used to pass without a word: the same log on both
    /// sides reported 300 perfect pairs, and a `--frame-interval` of a third of the logs'
    /// spacing paired 1 of 300. Both now warn (and still run: the user may mean it); a
    /// matching interval and two logs warn of nothing.
    @Test("pair warns when both logs are one file and when --frame-interval contradicts the logs")
    func warnsOfPairingsThatMeanNothing() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory)
        let same = try Self.run(["pair", "--left", "cam0.csv", "--right", "./cam0.csv", "--json"], in: directory)
        #expect(same.status == 0 && same.standardError.contains("warning: --left and --right are the same log (./cam0.csv)"),
                "\(same.standardError)")
        let contradicting = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--frame-interval", "16.7ms", "--json"],
                                         in: directory)
        #expect(contradicting.standardError.contains("warning: --frame-interval 16.7 ms contradicts the --left log, whose frames are 50 ms apart (median)")
                && contradicting.standardError.contains("the --right log"), "\(contradicting.standardError)")
        for fine in [["--frame-interval", "50ms"], ["--frame-interval", "55ms"], []] {
            let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--json"] + fine, in: directory)
            #expect(result.status == 0 && !result.standardError.contains("warning"), "\(fine): \(result.standardError)")
            // One JSON style: one line, as every other command's --json (it used to be pretty-printed).
            #expect(result.standardOutput.split(separator: "\n").count == 1, "\(result.standardOutput)")
        }
    }

    /// A 30 Hz log of `count` frames from `start` (in `scale` units per nanosecond).
    static func log(start: Int64, count: Int, divisor: Int64 = 1) -> String {
        "#timestamp [ns],filename\n" + (0..<count).map { k -> String in
            let t = (start + Int64(k) * 33_333_333) / divisor
            return "\(t),\(k).png"
        }.joined(separator: "\n") + "\n"
    }

    @Test("logs that do not overlap in time are refused with both spans, and an earlier output is left as it was")
    func noOverlap() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.write(Self.log(start: 1_000_000_000_000, count: 100), "cam0.csv", in: directory)
        try Self.write(Self.log(start: 5_000_000_000_000, count: 100), "cam1.csv", in: directory)
        try Self.write("earlier pairs\n", "pairs.csv", in: directory)
        let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--output", "pairs.csv"], in: directory)
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("the logs do not overlap in time"), "\(result.standardError)")
        #expect(result.standardError.contains("cam0.csv spans 1000.000–1003.299 s"), "\(result.standardError)")
        #expect(result.standardError.contains("cam1.csv starts 1.11 h after cam0.csv ends"), "\(result.standardError)")
        #expect(try String(contentsOf: directory.appendingPathComponent("pairs.csv"), encoding: .utf8) == "earlier pairs\n")
    }

    @Test("an error found after a big log's background parser started stops cleanly (no trap)")
    func errorWhileParsing() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        // Left: five batches, so its parser fills its queue. Right: out of order, with a
        // repeated timestamp that only the whole-log read finds, after the left parser started.
        try Self.write(Self.log(start: 1_000_000_000_000, count: 40_000), "cam0.csv", in: directory)
        var right = Self.log(start: 1_000_003_000_000, count: 100).split(separator: "\n").map(String.init)
        right.swapAt(10, 50)
        right[70] = right[20].split(separator: ",")[0] + ",again.png"
        try Self.write(right.joined(separator: "\n") + "\n", "cam1.csv", in: directory)
        let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--output", "pairs.csv"], in: directory)
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("repeats line"), "\(result.standardError)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("pairs") }
        #expect(left.isEmpty, "\(left)")
    }

    @Test("a log in microseconds beside one in nanoseconds is named, not paired")
    func unitMismatch() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.write(Self.log(start: 1_403_636_579_000_000_000, count: 100), "cam0.csv", in: directory)
        try Self.write(Self.log(start: 1_403_636_579_000_000_000, count: 100, divisor: 1000), "cam1.csv", in: directory)
        let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--json"], in: directory)
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("cam1.csv looks like it counts microseconds, not nanoseconds"), "\(result.standardError)")
        #expect(result.standardError.contains("a factor of 1000"), "\(result.standardError)")
        #expect(result.standardOutput.isEmpty)
    }

    /// README: a log whose spacing shows it counts microseconds, milliseconds or seconds is
    /// refused with the unit named. Frames 2 s apart, so that a log in whole seconds still
    /// has distinct timestamps.
    @Test("logs in milliseconds or seconds are refused with the unit named")
    func coarserUnits() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        func log(divisor: Int64) -> String {
            "#timestamp [ns],filename\n" + (0..<50).map { k in "\((1_403_636_579_000_000_000 + Int64(k) * 2_000_000_000) / divisor),\(k).png" }
                .joined(separator: "\n") + "\n"
        }
        try Self.write(log(divisor: 1), "cam0.csv", in: directory)
        for (divisor, unit, factor) in [(Int64(1_000_000), "milliseconds", "1000000"), (1_000_000_000, "seconds", "1000000000")] {
            try Self.write(log(divisor: divisor), "cam1.csv", in: directory)
            let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--json"], in: directory)
            #expect(result.status == 1, "\(result.standardError)")
            #expect(result.standardError.contains("cam1.csv looks like it counts \(unit), not nanoseconds"), "\(result.standardError)")
            #expect(result.standardError.contains("a factor of \(factor)"), "\(result.standardError)")
        }
    }

    /// README: the maximum skew defaults to half the frame interval (the median spacing,
    /// 50 ms here). The left camera skips every fourth frame (its median spacing stays
    /// 50 ms); the right one has a frame only in those holes, δ after the missing frame, so
    /// its nearest left frame is 50 ms − δ away: δ = 26 ms pairs all 25 (24 ms ≤ 25 ms),
    /// δ = 24 ms none (26 ms > 25 ms).
    @Test("the maximum skew defaults to half the median spacing")
    func defaultSkewIsHalfTheSpacing() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let start: Int64 = 1_403_636_579_000_000_000, ms: Int64 = 1_000_000
        func log(_ times: [Int64]) -> String {
            "#timestamp [ns],filename\n" + times.enumerated().map { "\(start + $0.element),\($0.offset).png\n" }.joined()
        }
        try Self.write(log((0..<100).filter { $0 % 4 != 2 }.map { Int64($0) * 50 * ms }), "cam0.csv", in: directory)
        try Self.write(log((0..<25).map { Int64(4 * $0 + 2) * 50 * ms + 26 * ms }), "cam1.csv", in: directory)
        let within = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--json"], in: directory)
        #expect(within.status == 0, "\(within.standardError)")
        #expect(within.standardOutput.contains("\"pairs\":25,"), "\(within.standardOutput.prefix(300))")
        try Self.write(log((0..<25).map { Int64(4 * $0 + 2) * 50 * ms + 24 * ms }), "cam1.csv", in: directory)
        let beyond = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--json"], in: directory)
        #expect(beyond.status == 1 && beyond.standardError.contains("no frame paired"), "\(beyond.standardError)")
    }

    @Test("overlapping logs with no frame within --max-skew are an error, not zero pairs with exit 0")
    func zeroPairs() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory)
        let result = try Self.run(
            ["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--max-skew", "1ms", "--output", "pairs.csv"], in: directory)
        #expect(result.status == 1, "\(result.standardError)")
        #expect(result.standardError.contains("no frame paired"), "\(result.standardError)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("pairs.csv").path))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains("partial") }
        #expect(leftovers.isEmpty)
    }

    @Test("an output that is an input is refused before any work, and the input is intact")
    func outputIsInput() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        try Self.writeLogs(in: directory)
        let before = try Data(contentsOf: directory.appendingPathComponent("cam0.csv"))
        let result = try Self.run(["pair", "--left", "cam0.csv", "--right", "cam1.csv", "--output", "./cam0.csv"], in: directory)
        #expect(result.status != 0)
        #expect(result.standardError.contains("is also the input --left"), "\(result.standardError)")
        #expect(try Data(contentsOf: directory.appendingPathComponent("cam0.csv")) == before)
    }

    /// README: "Progress goes to stderr for runs over two seconds". `pair`'s progress line on a
    /// clock the test moves: nothing before two seconds, the first line at two; then, standard
    /// error being no terminal, a new line at most every five seconds; on a terminal, the line
    /// is rewritten in place at most once a second and ended when the run finishes.
    @Test("pair's progress line: silent for the first two seconds, then at most every 5 s (every second, in place, on a terminal)")
    func progressOnlyAfterTwoSeconds() {
        for terminal in [false, true] {
            let start = ContinuousClock.now
            let elapsed = Locked<Duration>(.zero)
            let written = Locked<[String]>([])
            let progress = StatusLine.progress("pair: pairing", clock: { start + elapsed.withLock { $0 } }, terminal: terminal,
                                        write: { text in written.withLock { $0.append(text) } })
            func update(atMilliseconds ms: Int, _ fraction: Double) -> [String] {
                elapsed.withLock { $0 = .milliseconds(ms) }
                let before = written.withLock { $0.count }
                progress.update(fraction, "(\(ms) pairs)")
                return Array(written.withLock { $0 }.dropFirst(before))
            }
            func line(_ text: String) -> String { terminal ? "\r" + text + "\u{1B}[K" : text + "\n" }
            #expect(update(atMilliseconds: 0, 0.1).isEmpty)
            #expect(update(atMilliseconds: 1999, 0.4).isEmpty, "terminal \(terminal): a line before two seconds")
            #expect(update(atMilliseconds: 2000, 0.5) == [line("pair: pairing: 50 % (2000 pairs)")])
            let cadence = terminal ? 1000 : 5000
            #expect(update(atMilliseconds: 2000 + cadence - 1, 0.6).isEmpty, "terminal \(terminal)")
            #expect(update(atMilliseconds: 2000 + cadence, 0.7) == [line("pair: pairing: 70 % (\(2000 + cadence) pairs)")])
            progress.finish()
            #expect(Array(written.withLock { $0 }.suffix(1)) == (terminal ? ["\n"] : [line("pair: pairing: 70 % (\(2000 + cadence) pairs)")]))
        }
        // A run that ends within two seconds prints nothing, not even the terminal's line end.
        let quiet = Locked<[String]>([])
        let start = ContinuousClock.now
        let elapsed = Locked<Duration>(.zero)
        let short = StatusLine.progress("pair: pairing", clock: { start + elapsed.withLock { $0 } }, terminal: true,
                                 write: { text in quiet.withLock { $0.append(text) } })
        elapsed.withLock { $0 = .milliseconds(1999) }
        short.update(1, "")
        short.finish()
        #expect(quiet.withLock { $0 }.isEmpty)
    }

    @Test("durations take ns, us, ms and s, with decimals")
    func durations() {
        #expect(DurationArgument(argument: "5ms")?.nanoseconds == 5_000_000)
        #expect(DurationArgument(argument: "200us")?.nanoseconds == 200_000)
        #expect(DurationArgument(argument: "33.3ms")?.nanoseconds == 33_300_000)
        #expect(DurationArgument(argument: "1000000ns")?.nanoseconds == 1_000_000)
        #expect(DurationArgument(argument: "0.5s")?.nanoseconds == 500_000_000)
        for bad in ["5", "ms", "-5ms", "5xs", "1e3ms", "0ns", "nanms", "1.2.3ms"] {
            #expect(DurationArgument(argument: bad) == nil, "\(bad)")
        }
    }
}
