import ArgumentParser
import Foundation
import Synchronization
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

            Both logs are read twice, a line at a time: once to report every bad line, \
            their time spans and a log in the wrong unit before any output, then to pair \
            them. Logs that do not overlap in time, or whose frame spacings show one is not \
            in nanoseconds, are refused. A log out of order is read whole and sorted.

            Durations take a unit: 5ms, 200us, 33.3ms, 1000000ns, 0.5s (a bare number is refused).
            """)

    @Option(name: .long, help: "The left camera's timestamp log (EuRoC CSV).")
    var left: String

    @Option(name: .long, help: "The right camera's timestamp log (EuRoC CSV).")
    var right: String

    @Option(name: .long, help: "approximate (optimal nearest pairs), exact (equal timestamps) or epsilon (within --max-skew).")
    var policy: PolicyArgument = .approximate

    @Option(name: .long, parsing: .unconditional, help: "Frames farther apart never pair (e.g. 5ms). Default: half the frame interval.",
            transform: DurationArgument.parse)
    var maxSkew: DurationArgument?

    @Option(name: .long, parsing: .unconditional, help: "The cameras' frame interval (e.g. 33.3ms). Default: the median spacing of the logs' first 100,000 frames (of a whole unsorted log).",
            transform: DurationArgument.parse)
    var frameInterval: DurationArgument?

    @Option(name: .long, help: "Write the pairs to this CSV file (atomically) instead of standard output.")
    var output: String?

    @Flag(name: .long, help: "Print a JSON summary on standard output.")
    var json = false

    func run() throws {
        // The output file is opened (its temporary beside it) before any work, so that an
        // unwritable place fails at once.
        var fileWriter: AtomicFileWriter?
        if let output {
            try OutputFiles.check(outputs: [("--output", output)], inputs: [("--left", left), ("--right", right)])
            do {
                let folder = (output as NSString).deletingLastPathComponent
                if !folder.isEmpty { try FileAccess.createDirectories(atPath: folder) }
                fileWriter = try AtomicFileWriter(path: output)
            } catch {
                throw CLIError(error.description)
            }
        }
        // Pass 1: every bad line, the spans, the spacing and the order, before any output.
        // The two logs are read at once, one per core.
        let checking = StatusLine.progress("pair: checking the logs")
        let results = Locked<[Result<TimestampLogSummary, RecordedTimestampLogError>?]>([nil, nil])
        let fractions = Locked<[Double]>([0, 0])
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let result = Result { () throws(RecordedTimestampLogError) in
                try TimestampLogSummary(scanning: index == 0 ? left : right) { read, size in
                    let done = fractions.withLock {
                        $0[index] = Double(read) / Double(max(size, 1))
                        return ($0[0] + $0[1]) / 2
                    }
                    checking.update(done, "")
                }
            }
            results.withLock { $0[index] = result }
        }
        checking.finish()
        var summaries: [TimestampLogSummary] = [], problems: [String] = []
        for result in results.withLock({ $0 }) {
            switch result {
            case .success(let summary): summaries.append(summary)
            case .failure(let error): problems.append(error.description)
            case nil: break
            }
        }
        guard problems.isEmpty else { throw CLIError(problems.joined(separator: "\n")) }
        let (leftSummary, rightSummary) = (summaries[0], summaries[1])
        try Self.checkUnits(leftSummary, rightSummary)
        for warning in Self.doubts(left: left, right: right, leftSummary, rightSummary, frameInterval: frameInterval?.nanoseconds) {
            warn("warning: " + warning)
        }

        func defaultInterval(_ spacings: [Int64?]) -> Int64? { spacings.compactMap { $0 }.filter { $0 > 0 }.min() }
        let firstGuess = frameInterval?.nanoseconds ?? defaultInterval([leftSummary.typicalSpacingNanoseconds, rightSummary.typicalSpacingNanoseconds])
        try Self.checkOverlap(leftSummary, rightSummary, maximumSkew: maxSkew?.nanoseconds ?? firstGuess.map { $0 / 2 } ?? 10_000_000)

        // Pass 2: pair as the frames stream by (an unsorted log is read whole and sorted).
        // Frames wait only while the other camera is silent; a gap longer than this many
        // frames drops the oldest as queue_overflow (they could pair with nothing anyway).
        let capacity = min(max(leftSummary.frameCount, rightSummary.frameCount) + 1, 1 << 16)
        let leftFrames = try PairFrameSource(leftSummary, window: capacity)
        let rightFrames = try PairFrameSource(rightSummary, window: capacity)
        let interval = frameInterval?.nanoseconds ?? defaultInterval([leftFrames.spacing, rightFrames.spacing])
        let skew = maxSkew?.nanoseconds ?? interval.map { $0 / 2 } ?? 10_000_000
        let policy: SynchronizationPolicy
        switch self.policy {
        case .approximate: policy = .approximate
        case .exact: policy = .exact(.timestamp)
        case .epsilon: policy = .epsilon(toleranceNanoseconds: skew)
        }
        let configuration = SynchronizerConfiguration(
            policy: policy, frameIntervalNanoseconds: interval, maximumSkewNanoseconds: skew,
            queueCapacity: capacity, clockCorrection: .estimate)

        let writer = fileWriter ?? (json ? nil : AtomicFileWriter(standardOutput: ()))
        do {
            try writer?.write("left_timestamp_ns,right_timestamp_ns,left_filename,right_filename,skew_ns\n")
        } catch {
            throw CLIError(error.description)
        }
        var skews: [UInt64] = []
        let keepsSkews = json  // read once: a property wrapper's getter costs more than the pairing
        var pairCount = 0
        var writeError: String?
        // Rows are formatted into a local buffer and handed to the writer a megabyte at a time.
        var rows: [UInt8] = []
        rows.reserveCapacity(1 << 20 + 4096)
        let pairing = StatusLine.progress("pair: pairing")
        let totalBytes = Double(max(leftFrames.fileSize + rightFrames.fileSize, 1))
        let statistics = RecordedStreamPairing.replay(
            configuration: configuration, left: leftFrames.next, right: rightFrames.next,
            emit: { event in
                guard case .pair(let pair) = event else { return }
                pairCount += 1
                if keepsSkews { skews.append(pair.skewNanoseconds.magnitude) }
                if writer != nil {
                    Self.appendRow(pair, leftFrames, rightFrames, to: &rows)
                    if rows.count >= 1 << 20 { writeError = writeError ?? Self.hand(&rows, to: writer) }
                }
                if pairCount & 0xFFFF == 0 {
                    let done = Double(leftFrames.bytesRead + rightFrames.bytesRead) / totalBytes
                    pairing.update(done, "(\(pairCount) pairs)")
                }
            })
        if writeError == nil, let writer { writeError = Self.hand(&rows, to: writer) }
        pairing.finish()
        let consequence = output != nil ? "nothing was written" : "the pairs already on standard output are incomplete"
        for source in [leftFrames, rightFrames] {
            if let error = source.error { throw CLIError("\(error); \(consequence)") }
            if source.grew {
                warn("warning: \(source.path) grew while it was being paired: its \(source.frameLimit) frames of the first pass were paired, later lines were not")
            }
        }
        if let writeError { throw CLIError(writeError) }
        guard pairCount > 0 else {
            throw CLIError("""
                no frame paired: \(statistics.dropped(.left)) left and \(statistics.dropped(.right)) right frames were dropped \
                (\(Self.dropList(statistics))); the logs overlap in time but no two frames are within --max-skew \
                \(Self.formatDuration(skew)) of each other
                """)
        }
        do {
            try writer?.commit()
        } catch {
            throw CLIError(error.description)
        }
        if json {
            // One line, as every other command's --json.
            print(Self.summary(statistics, pairs: pairCount, skews: &skews, leftSummary, rightSummary).serialized(indent: 0))
        } else if let output {
            print("\(pairCount) pairs from \(statistics.framesLeft) left and \(statistics.framesRight) right frames; written to \(output)")
            // Release latency means nothing for a replay; the rest is the live report.
            print(statistics.description.split(separator: "\n").dropFirst().filter { !$0.hasPrefix("latency") }.joined(separator: "\n"))
        }
    }

    /// Writes and empties `rows`; the reason on failure.
    private static func hand(_ rows: inout [UInt8], to writer: AtomicFileWriter?) -> String? {
        defer { rows.removeAll(keepingCapacity: true) }
        do {
            try writer?.write(rows)
            return nil
        } catch {
            return error.description
        }
    }

    /// One CSV row, formatted in place (`String` interpolation would dominate the run time).
    private static func appendRow(
        _ pair: SynchronizedPair<Int>, _ left: PairFrameSource, _ right: PairFrameSource, to buffer: inout [UInt8]
    ) {
        appendDecimal(pair.left.timestampNanoseconds, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        appendDecimal(pair.right.timestampNanoseconds, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        left.appendFilename(pair.left.payload, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        right.appendFilename(pair.right.payload, to: &buffer)
        buffer.append(UInt8(ascii: ","))
        appendDecimal(pair.skewNanoseconds, to: &buffer)
        buffer.append(UInt8(ascii: "\n"))
    }

    static func appendDecimal(_ value: Int64, to buffer: inout [UInt8]) {
        if value < 0 { buffer.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes, room for the 20 digits of UInt64.max
        withUnsafeMutableBytes(of: &digits) { raw in
            var first = raw.count
            repeat {
                first -= 1
                raw[first] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            buffer.append(contentsOf: raw[first...])
        }
    }

    /// A file name as a CSV field: quoted when it holds a comma, quote or line break.
    static func appendField(_ name: some Collection<UInt8>, to buffer: inout [UInt8]) {
        let special = name.contains { $0 == UInt8(ascii: ",") || $0 == UInt8(ascii: "\"") || $0 == 10 || $0 == 13 }
        guard special else {
            buffer.append(contentsOf: name)
            return
        }
        buffer.append(UInt8(ascii: "\""))
        for byte in name {
            if byte == UInt8(ascii: "\"") { buffer.append(byte) }
            buffer.append(byte)
        }
        buffer.append(UInt8(ascii: "\""))
    }

    /// Refuses logs whose frame spacings differ by a power of 1000: one of them is not in
    /// nanoseconds.
    /// Frames under 10 µs apart (100 000 fps) are refused too: such a log is in another unit
    /// (a 30 fps log in milliseconds reads as frames 33 ns apart).
    static func checkUnits(_ left: TimestampLogSummary, _ right: TimestampLogSummary) throws {
        guard let a = left.typicalSpacingNanoseconds, let b = right.typicalSpacingNanoseconds, a > 0, b > 0 else { return }
        let (coarse, fine) = a < b ? (left, right) : (right, left)
        let ratio = Double(max(a, b)) / Double(min(a, b))
        let powers = (log10(ratio) / 3).rounded()
        let units = ["nanoseconds", "microseconds", "milliseconds", "seconds"]
        if powers >= 1, powers <= 3, abs(log10(ratio) - 3 * powers) < log10(3) {
            let unit = units[Int(powers)]
            throw CLIError("""
                \(coarse.path) looks like it counts \(unit), not nanoseconds: read as nanoseconds its frames are \
                \(formatDuration(coarse.typicalSpacingNanoseconds ?? 0)) apart, those of \(fine.path) \
                \(formatDuration(fine.typicalSpacingNanoseconds ?? 0)) (a factor of \(Int(pow(1000, powers)))). \
                Both logs must give nanoseconds (EuRoC `#timestamp [ns]`)
                """)
        }
        if ratio > 30 {
            warn("warning: the frame spacings differ by a factor of \(Int(ratio.rounded())) (\(left.path) \(formatDuration(a)), \(right.path) \(formatDuration(b))); are both logs from the same rig, in nanoseconds?")
        }
        // Both in the same other unit: the spacings agree, but no camera runs that fast.
        for log in [left, right] {
            if let spacing = log.typicalSpacingNanoseconds, spacing < 10_000 {
                throw CLIError("""
                    \(log.path): read as nanoseconds its frames are \(formatDuration(spacing)) apart (over 100 000 frames a \
                    second): its timestamps are in another unit. Both logs must give nanoseconds (EuRoC `#timestamp [ns]`)
                    """)
            }
        }
    }

    /// Refuses logs that do not overlap in time (within the maximum skew).
    static func checkOverlap(_ left: TimestampLogSummary, _ right: TimestampLogSummary, maximumSkew: Int64) throws {
        func span(_ s: TimestampLogSummary) -> String {
            "\(s.path) spans \(seconds(s.firstTimestampNanoseconds))–\(seconds(s.lastTimestampNanoseconds)) s "
                + "(\(s.frameCount) frames over \(formatDuration(s.lastTimestampNanoseconds - s.firstTimestampNanoseconds)))"
        }
        let (early, late) = left.firstTimestampNanoseconds <= right.firstTimestampNanoseconds ? (left, right) : (right, left)
        let gap = late.firstTimestampNanoseconds.subtractingReportingOverflow(early.lastTimestampNanoseconds)
        guard !gap.overflow, gap.partialValue > maximumSkew else { return }
        throw CLIError("""
            the logs do not overlap in time, so no frame can pair: \(span(left)); \(span(right)). \
            \(late.path) starts \(formatDuration(gap.partialValue)) after \(early.path) ends. \
            Were they recorded together, on the same clock?
            """)
    }

    /// Nanoseconds as seconds with millisecond digits.
    static func seconds(_ nanoseconds: Int64) -> String {
        let whole = nanoseconds / 1_000_000_000, milli = (nanoseconds % 1_000_000_000) / 1_000_000
        return "\(whole)." + String(repeating: "0", count: 3 - String(milli).count) + String(milli)
    }

    /// A duration in the unit that reads best: `33.3 ms`, `200 µs`, `1.5 h`.
    static func formatDuration(_ nanoseconds: Int64) -> String {
        let value = Double(nanoseconds)
        let steps: [(Double, String)] = [(3.6e12, "h"), (60e9, "min"), (1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        for (scale, unit) in steps where value.magnitude >= scale {
            return String(format: "%.3g %@", value / scale, unit)
        }
        return "\(nanoseconds) ns"
    }

    static func dropList(_ statistics: SynchronizerStatistics) -> String {
        DropReason.reasons(of: .synchronizer).compactMap { reason in
            let n = statistics.dropped(reason: reason)
            return n > 0 ? "\(n) \(reason.description)" : nil
        }.joined(separator: ", ")
    }

    /// The `--json` object; skew percentiles are exact (nearest rank over |skew|).
    static func summary(
        _ s: SynchronizerStatistics, pairs: Int, skews: inout [UInt64], _ left: TimestampLogSummary, _ right: TimestampLogSummary
    ) -> JSONValue {
        skews.sort()
        func percentile(_ fraction: Double) -> JSONValue {
            guard !skews.isEmpty else { return .null }
            let rank = max(1, Int((fraction * Double(skews.count)).rounded(.up)))
            return .number(Double(skews[rank - 1]))
        }
        var reasons = JSONObject()
        for reason in DropReason.reasons(of: .synchronizer) {
            reasons[reason.description] = .number(Double(s.dropped(reason: reason)))
        }
        return .object(JSONObject([
            ("pairs", .number(Double(pairs))),
            ("left_frames", .number(Double(left.frameCount))),
            ("right_frames", .number(Double(right.frameCount))),
            ("dropped_left", .number(Double(s.dropped(.left)))),
            ("dropped_right", .number(Double(s.dropped(.right)))),
            ("drop_reasons", .object(reasons)),
            ("skew_ns_p50", percentile(0.5)),
            ("skew_ns_p99", percentile(0.99)),
            ("skew_ns_max", skews.last.map { .number(Double($0)) } ?? .null),
            ("estimated_offset_ns", s.clock.map { .number(Double($0.offsetNanoseconds)) } ?? .null),
            ("estimated_drift_ppm", s.clock?.driftPartsPerMillion.map { .number(($0 * 1000).rounded() / 1000) } ?? .null),
        ]))
    }
}

extension PairCommand {
    /// Inputs that pair, but not as the user meant: both options naming one file (every frame
    /// pairs with itself, perfectly), and a `--frame-interval` more than 25 % off the logs'
    /// median spacing (the synchronizer's proofs then rest on a wrong interval and most
    /// frames are dropped).
    static func doubts(left: String, right: String, _ leftSummary: TimestampLogSummary, _ rightSummary: TimestampLogSummary,
                       frameInterval: Int64?) -> [String] {
        var doubts: [String] = []
        var a = stat(), b = stat()
        if stat(left, &a) == 0, stat(right, &b) == 0, a.st_dev == b.st_dev, a.st_ino == b.st_ino {
            doubts.append("--left and --right are the same log (\(right)): every frame pairs with itself, "
                          + "so the pairs and their skew say nothing; give each camera's own log")
        }
        if let frameInterval, frameInterval > 0 {
            for (option, summary) in [("--left", leftSummary), ("--right", rightSummary)] {
                guard let spacing = summary.typicalSpacingNanoseconds, spacing > 0 else { continue }
                let ratio = Double(frameInterval) / Double(spacing)
                if abs(ratio - 1) > 0.25 {
                    doubts.append("--frame-interval \(formatDuration(frameInterval)) contradicts the \(option) log, whose frames are "
                                  + "\(formatDuration(spacing)) apart (median): pairing may drop most frames; "
                                  + "leave --frame-interval out to use the logs' own spacing")
                }
            }
        }
        return doubts
    }
}

/// Writes a line to standard error.
func warn(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// `--policy`.
enum PolicyArgument: String, ExpressibleByArgument, CaseIterable {
    case approximate, exact, epsilon
}
