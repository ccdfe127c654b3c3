/// What one pass over a recorded timestamp log finds, in constant memory: its frame count,
/// time span, whether it is in order, and its typical frame spacing. `parallax pair` reads
/// each log once like this (every bad line is reported before any output), then again to
/// pair them.
public struct TimestampLogSummary: Sendable, Hashable {
    /// The log's path.
    public var path: String
    /// Frames listed.
    public var frameCount: Int
    /// The earliest timestamp (nanoseconds).
    public var firstTimestampNanoseconds: Int64
    /// The latest timestamp (nanoseconds).
    public var lastTimestampNanoseconds: Int64
    /// Whether every timestamp is later than the one before it. An unsorted log must be
    /// read whole and sorted (``RecordedTimestampLog``) before it can be paired.
    public var isSorted: Bool
    /// The median gap between consecutive timestamps among the first
    /// ``spacingSampleSize`` frames, or `nil` with fewer than two frames: a robust guess of
    /// the frame interval when a few frames are missing.
    public var typicalSpacingNanoseconds: Int64?

    /// Frames whose gaps make ``typicalSpacingNanoseconds``.
    public static let spacingSampleSize = 100_000

    /// Reads the log at `path` once.
    ///
    /// - Parameters:
    ///   - path: the log file (an EuRoC `data.csv`, see ``RecordedTimestampLog``); it becomes
    ///     ``path`` and names the log in errors.
    ///   - progress: called now and then with the bytes read so far and the file's
    ///     size.
    /// - Throws: ``RecordedTimestampLogError``: unreadable, empty, or malformed lines
    ///   (listed with their numbers; a repeated timestamp in an ordered log is one).
    public init(scanning path: String, progress: (_ bytesRead: Int, _ fileSize: Int) -> Void = { _, _ in })
        throws(RecordedTimestampLogError)
    {
        let reader = try TimestampLogReader(path: path)
        var problems: [RecordedTimestampLogError.Problem] = []
        var count = 0
        var first = Int64.max, last = Int64.min
        var previous: (timestamp: Int64, line: Int)?
        var sorted = true
        var gaps: [Int64] = []
        gaps.reserveCapacity(Self.spacingSampleSize)
        while let line = try reader.next() {
            switch line {
            case .problem(let problem):
                problems.append(problem)
            case .frame(let timestamp, let number):
                count += 1
                first = min(first, timestamp)
                last = max(last, timestamp)
                if let previous {
                    if timestamp == previous.timestamp {
                        problems.append(.init(line: number, message: "timestamp \(timestamp) repeats line \(previous.line)"))
                    } else if timestamp < previous.timestamp {
                        sorted = false
                    } else if sorted, gaps.count < Self.spacingSampleSize - 1 {
                        gaps.append(timestamp - previous.timestamp)
                    }
                }
                previous = (timestamp, number)
                if count & 0xFFFF == 0 { progress(reader.bytesRead, reader.fileSize) }
            }
            if problems.count >= RecordedTimestampLogError.problemLimit { break }
        }
        guard problems.isEmpty else { throw .malformedLines(path: path, lines: problems) }
        guard count > 0 else { throw .empty(path: path) }
        progress(reader.bytesRead, reader.fileSize)
        self.path = path
        frameCount = count
        firstTimestampNanoseconds = first
        lastTimestampNanoseconds = last
        isSorted = sorted
        if gaps.isEmpty {
            typicalSpacingNanoseconds = nil
        } else {
            let middle = gaps.count / 2
            gaps.sort()
            typicalSpacingNanoseconds = gaps[middle]
        }
    }
}
