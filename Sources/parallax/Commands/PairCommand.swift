import ArgumentParser
import Foundation
import ParallaxCapture
import ParallaxGeometry

/// `parallax pair`: pairs two recorded timestamp logs (EuRoC `#timestamp [ns],filename`)
/// as the live synchronizer would, and writes the pairs as CSV or a JSON summary.
struct PairCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair the frames of two recorded cameras by timestamp.",
        discussion: """
            Reads two EuRoC-style logs (`#timestamp [ns],filename`, e.g. mav0/cam0/data.csv \
            and mav0/cam1/data.csv) and pairs their frames with the synchronizer's policy. \
            Every frame ends in a pair or in a drop with a reason.

            Without --output or --json the pairs are written to standard output as CSV: \
            left_timestamp_ns,right_timestamp_ns,left_filename,right_filename,skew_ns \
            (skew = right − left). With --json a summary object is printed instead \
            (pairs, frames, drops by reason, skew percentiles, estimated clock offset and drift).

            Durations take a unit: 5ms, 200us, 33.3ms, 1000000ns, 0.5s.
            """)

    @Option(name: .long, help: "The left camera's timestamp log (EuRoC CSV).")
    var left: String

    @Option(name: .long, help: "The right camera's timestamp log (EuRoC CSV).")
    var right: String

    @Option(name: .long, help: "approximate (optimal nearest pairs), exact (equal timestamps) or epsilon (within --max-skew).")
    var policy: PolicyArgument = .approximate

    @Option(name: .long, help: "Frames farther apart never pair. Default: half the frame interval.")
    var maxSkew: DurationArgument?

    @Option(name: .long, help: "The cameras' frame interval. Default: the median spacing of the logs.")
    var frameInterval: DurationArgument?

    @Option(name: .long, help: "Write the pairs to this CSV file (atomically) instead of standard output.")
    var output: String?

    @Flag(name: .long, help: "Print a JSON summary on standard output.")
    var json = false

    func run() throws {
        let leftLog = try Self.load(left)
        let rightLog = try Self.load(right)
        let interval = frameInterval?.nanoseconds ?? Self.guessInterval(leftLog, rightLog)
        let skew = maxSkew?.nanoseconds ?? interval.map { $0 / 2 } ?? 10_000_000
        let policy: SynchronizationPolicy
        switch self.policy {
        case .approximate: policy = .approximate
        case .exact: policy = .exact(.timestamp)
        case .epsilon: policy = .epsilon(toleranceNanoseconds: skew)
        }
        let configuration = SynchronizerConfiguration(
            policy: policy, frameIntervalNanoseconds: interval, maximumSkewNanoseconds: skew,
            queueCapacity: max(leftLog.entries.count, rightLog.entries.count) + 1, clockCorrection: .estimate)
        let result = RecordedStreamPairing(left: leftLog, right: rightLog, configuration: configuration)

        var csv = "left_timestamp_ns,right_timestamp_ns,left_filename,right_filename,skew_ns\n"
        csv.reserveCapacity(result.pairs.count * 80)
        for pair in result.pairs {
            let l = leftLog.entries[pair.left], r = rightLog.entries[pair.right]
            csv += "\(l.timestampNanoseconds),\(r.timestampNanoseconds),\(Self.csvField(l.filename)),\(Self.csvField(r.filename)),\(pair.skewNanoseconds)\n"
        }
        if let output {
            do {
                try FileAccess.writeAtomically(csv, toPath: output)
            } catch {
                throw PairCommandFailure(message: error.description)
            }
        }
        if json {
            print(Self.summary(result, leftLog, rightLog).serialized(indent: 2))
        } else if output == nil {
            FileHandle.standardOutput.write(Data(csv.utf8))
        } else {
            let s = result.statistics
            print("\(result.pairs.count) pairs from \(s.framesLeft) left and \(s.framesRight) right frames; written to \(output ?? "")")
            // Release latency means nothing for a replay; the rest is the live report.
            print(s.description.split(separator: "\n").dropFirst().filter { !$0.hasPrefix("latency") }.joined(separator: "\n"))
        }
    }

    static func load(_ path: String) throws -> RecordedTimestampLog {
        let log: RecordedTimestampLog
        do {
            log = try RecordedTimestampLog(contentsOfFile: path)
        } catch {
            throw PairCommandFailure(message: error.description)
        }
        if log.wasUnsorted {
            warn("warning: \(path): timestamps were not in order; sorted them before pairing")
        }
        return log
    }

    static func guessInterval(_ a: RecordedTimestampLog, _ b: RecordedTimestampLog) -> Int64? {
        let guesses = [a.medianSpacingNanoseconds, b.medianSpacingNanoseconds].compactMap { $0 }.filter { $0 > 0 }
        return guesses.min()
    }

    /// Quotes a file name for CSV when it contains a comma, quote or line break.
    static func csvField(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The `--json` object; skew percentiles are exact (nearest rank over |skew|).
    static func summary(_ result: RecordedStreamPairing, _ left: RecordedTimestampLog, _ right: RecordedTimestampLog) -> JSONValue {
        let s = result.statistics
        let skews = result.pairs.map { $0.skewNanoseconds.magnitude }.sorted()
        func percentile(_ fraction: Double) -> JSONValue {
            guard !skews.isEmpty else { return .null }
            let rank = max(1, Int((fraction * Double(skews.count)).rounded(.up)))
            return .number(Double(skews[rank - 1]))
        }
        var reasons = JSONObject()
        for reason in FrameDropReason.allCases {
            reasons[reason.description] = .number(Double(s.drops(reason: reason)))
        }
        return .object(JSONObject([
            ("pairs", .number(Double(result.pairs.count))),
            ("left_frames", .number(Double(left.entries.count))),
            ("right_frames", .number(Double(right.entries.count))),
            ("dropped_left", .number(Double(s.drops(.left)))),
            ("dropped_right", .number(Double(s.drops(.right)))),
            ("drop_reasons", .object(reasons)),
            ("skew_ns_p50", percentile(0.5)),
            ("skew_ns_p99", percentile(0.99)),
            ("skew_ns_max", skews.last.map { .number(Double($0)) } ?? .null),
            ("estimated_offset_ns", s.clock.map { .number(Double($0.offsetNanoseconds)) } ?? .null),
            ("estimated_drift_ppm", s.clock?.driftPartsPerMillion.map { .number(($0 * 1000).rounded() / 1000) } ?? .null),
        ]))
    }
}

/// An input or output problem, printed as `Error: <message>` without the usage text.
struct PairCommandFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Writes a line to standard error.
private func warn(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// `--policy`.
enum PolicyArgument: String, ExpressibleByArgument, CaseIterable {
    case approximate, exact, epsilon
}
