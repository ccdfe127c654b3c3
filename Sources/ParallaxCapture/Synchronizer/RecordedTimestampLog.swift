import ParallaxGeometry

/// One camera's recorded frame list in the EuRoC / ASL dataset format: a CSV file whose
/// first line is the header `#timestamp [ns],filename` and whose other lines are
/// `<timestamp in ns>,<image file name>`.
///
/// Lines starting with `#` are comments, blank lines are skipped, spaces around fields and
/// Windows line ends are accepted. Every other line must be exactly two fields: a
/// non-negative integer and a non-empty file name.
public struct RecordedTimestampLog: Sendable, Hashable {
    /// One frame of the log.
    public struct Entry: Sendable, Hashable {
        /// Capture timestamp (nanoseconds).
        public var timestampNanoseconds: Int64
        /// The image's file name, as written in the log.
        public var filename: String
        /// The line of the log it came from (1-based).
        public var line: Int

        /// Creates an entry.
        public init(timestampNanoseconds: Int64, filename: String, line: Int) {
            self.timestampNanoseconds = timestampNanoseconds
            self.filename = filename
            self.line = line
        }
    }

    /// The frames, sorted by timestamp.
    public var entries: [Entry]
    /// Whether the file listed them out of order (they were sorted).
    public var wasUnsorted: Bool
    /// Where the log came from, for messages.
    public var path: String

    /// A log of frames known otherwise (a bag's index): sorted by timestamp here, with
    /// ``wasUnsorted`` saying whether they had to be.
    public init(entries: [Entry], path: String) {
        let sorted = entries.sorted { $0.timestampNanoseconds < $1.timestampNanoseconds }
        self.entries = sorted
        wasUnsorted = sorted != entries
        self.path = path
    }

    /// Parses log text.
    ///
    /// - Throws: ``RecordedTimestampLogError/malformedLines(path:lines:)`` listing every
    ///   bad line with its number and what is wrong with it, or
    ///   ``RecordedTimestampLogError/empty(path:)`` when no frame is listed.
    public init(text: String, path: String) throws(RecordedTimestampLogError) {
        try self.init(reading: TimestampLogReader(bytes: Array(text.utf8), path: path))
    }

    /// Reads and parses the log at `path` (whole, in memory: ``TimestampLogReader`` and
    /// ``TimestampLogSummary`` read one line at a time).
    public init(contentsOfFile path: String) throws(RecordedTimestampLogError) {
        try self.init(reading: TimestampLogReader(path: path))
    }

    private init(reading reader: TimestampLogReader) throws(RecordedTimestampLogError) {
        var entries: [Entry] = []
        var problems: [RecordedTimestampLogError.Problem] = []
        while let line = try reader.next() {
            switch line {
            case .frame(let timestamp, let number):
                entries.append(Entry(timestampNanoseconds: timestamp, filename: reader.filename, line: number))
            case .problem(let problem):
                problems.append(problem)
            }
        }
        let sorted = zip(entries, entries.dropFirst()).allSatisfy { $0.timestampNanoseconds <= $1.timestampNanoseconds }
        if !sorted { entries.sort { ($0.timestampNanoseconds, $0.line) < ($1.timestampNanoseconds, $1.line) } }
        for (a, b) in zip(entries, entries.dropFirst()) where a.timestampNanoseconds == b.timestampNanoseconds {
            problems.append(.init(line: b.line, message: "timestamp \(b.timestampNanoseconds) repeats line \(a.line)"))
        }
        guard problems.isEmpty else {
            throw .malformedLines(path: reader.path, lines: problems.sorted { $0.line < $1.line })
        }
        guard !entries.isEmpty else { throw .empty(path: reader.path) }
        self.entries = entries
        self.wasUnsorted = !sorted
        self.path = reader.path
    }

    /// The median spacing between consecutive timestamps (nanoseconds), or `nil` with
    /// fewer than two frames: a robust guess of the frame interval when a few frames are
    /// missing.
    public var medianSpacingNanoseconds: Int64? {
        guard entries.count >= 2 else { return nil }
        var gaps = zip(entries, entries.dropFirst()).map { $1.timestampNanoseconds - $0.timestampNanoseconds }
        gaps.sort()
        return gaps[gaps.count / 2]
    }
}

/// Why a recorded timestamp log could not be used.
public enum RecordedTimestampLogError: Error, Sendable, Hashable, CustomStringConvertible {
    /// One bad line.
    public struct Problem: Sendable, Hashable {
        /// 1-based line number.
        public var line: Int
        /// What is wrong.
        public var message: String
    }

    /// The file could not be read.
    case unreadable(path: String, reason: String)
    /// Lines that are not `timestamp,filename` (or repeat a timestamp).
    case malformedLines(path: String, lines: [Problem])
    /// No frame is listed.
    case empty(path: String)

    /// ``TimestampLogSummary`` stops reading a log at this many bad lines (so that a file
    /// of the wrong kind is not listed line by line for minutes).
    public static let problemLimit = 1000

    /// For example `cam0/data.csv: 2 malformed lines:\n  line 4: ...`.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            // The system's reason usually names the path already.
            return reason.contains(path) ? "cannot read the timestamp log \(reason)" : "\(path): cannot read the timestamp log: \(reason)"
        case .malformedLines(let path, let lines):
            let shown = lines.prefix(20).map { "  line \($0.line): \($0.message)" }
            let more = lines.count > 20 ? ["  ... and \(lines.count - 20) more"] : []
            // Only ``TimestampLogSummary`` stops at the limit; a whole-file read lists them all.
            let count = lines.count == Self.problemLimit ? "\(lines.count) or more malformed lines (reading stopped there)"
                : "\(lines.count) malformed line\(lines.count == 1 ? "" : "s")"
            return (["\(path): \(count) (expected `#timestamp [ns],filename` CSV):"]
                + shown + more).joined(separator: "\n")
        case .empty(let path):
            return "\(path): the timestamp log lists no frame"
        }
    }
}
