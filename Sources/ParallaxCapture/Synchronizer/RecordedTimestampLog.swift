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

    /// Parses log text.
    ///
    /// - Throws: ``RecordedTimestampLogError/malformedLines(path:lines:)`` listing every
    ///   bad line with its number and what is wrong with it, or
    ///   ``RecordedTimestampLogError/empty(path:)`` when no frame is listed.
    public init(text: String, path: String) throws(RecordedTimestampLogError) {
        var entries: [Entry] = []
        var problems: [RecordedTimestampLogError.Problem] = []
        var lineNumber = 0
        // `\r\n` is one Character in Swift, so `isNewline` splits Windows line ends too.
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            lineNumber += 1
            let trimmed = line.drop { $0 == " " || $0 == "\t" }
            if trimmed.isEmpty || trimmed.hasPrefix("#") { continue }
            let fields = line.split(separator: ",", omittingEmptySubsequences: false).map {
                String($0.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
            }
            guard fields.count == 2 else {
                problems.append(.init(line: lineNumber, message: "expected 2 fields `timestamp,filename`, found \(fields.count)"))
                continue
            }
            guard let timestamp = Int64(fields[0]), timestamp >= 0 else {
                problems.append(.init(line: lineNumber, message: "timestamp `\(fields[0])` is not a non-negative integer (nanoseconds)"))
                continue
            }
            guard !fields[1].isEmpty else {
                problems.append(.init(line: lineNumber, message: "empty file name"))
                continue
            }
            entries.append(Entry(timestampNanoseconds: timestamp, filename: fields[1], line: lineNumber))
        }
        let sorted = zip(entries, entries.dropFirst()).allSatisfy { $0.timestampNanoseconds <= $1.timestampNanoseconds }
        if !sorted { entries.sort { ($0.timestampNanoseconds, $0.line) < ($1.timestampNanoseconds, $1.line) } }
        for (a, b) in zip(entries, entries.dropFirst()) where a.timestampNanoseconds == b.timestampNanoseconds {
            problems.append(.init(line: b.line, message: "timestamp \(b.timestampNanoseconds) repeats line \(a.line)"))
        }
        guard problems.isEmpty else {
            throw .malformedLines(path: path, lines: problems.sorted { $0.line < $1.line })
        }
        guard !entries.isEmpty else { throw .empty(path: path) }
        self.entries = entries
        self.wasUnsorted = !sorted
        self.path = path
    }

    /// Reads and parses the log at `path`.
    public init(contentsOfFile path: String) throws(RecordedTimestampLogError) {
        let text: String
        do {
            text = try FileAccess.readText(atPath: path)
        } catch {
            throw .unreadable(path: path, reason: error.description)
        }
        try self.init(text: text, path: path)
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

    /// For example `cam0/data.csv: 2 malformed lines:\n  line 4: ...`.
    public var description: String {
        switch self {
        case .unreadable(let path, let reason):
            // The system's reason usually names the path already.
            return reason.contains(path) ? "cannot read the timestamp log \(reason)" : "\(path): cannot read the timestamp log: \(reason)"
        case .malformedLines(let path, let lines):
            let shown = lines.prefix(20).map { "  line \($0.line): \($0.message)" }
            let more = lines.count > 20 ? ["  ... and \(lines.count - 20) more"] : []
            return (["\(path): \(lines.count) malformed line\(lines.count == 1 ? "" : "s") (expected `#timestamp [ns],filename` CSV):"]
                + shown + more).joined(separator: "\n")
        case .empty(let path):
            return "\(path): the timestamp log lists no frame"
        }
    }
}
