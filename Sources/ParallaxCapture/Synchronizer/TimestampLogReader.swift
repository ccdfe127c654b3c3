#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry

/// Reads a recorded timestamp log (see ``RecordedTimestampLog`` for the format) one line at
/// a time in bounded memory, for logs of millions of frames.
///
/// The file is read in 1 MiB chunks; a line is parsed in place, and its file name becomes a
/// `String` only when asked for (``filename``). The rules are exactly those of
/// ``RecordedTimestampLog/init(text:path:)``: `#` comments and blank lines are skipped,
/// spaces and tabs around fields are ignored, `\n`, `\r\n` and `\r` end lines.
public final class TimestampLogReader {
    /// What one call to ``next()`` found.
    public enum Line: Sendable, Hashable {
        /// A frame: its timestamp (nanoseconds) and its 1-based line number. Its file name is
        /// ``TimestampLogReader/filename`` until the next call.
        case frame(timestampNanoseconds: Int64, line: Int)
        /// A line that is not `timestamp,filename`.
        case problem(RecordedTimestampLogError.Problem)
    }

    /// The log's path, for messages.
    public let path: String
    /// The file's size in bytes when it was opened (for progress).
    public let fileSize: Int
    /// Bytes consumed so far.
    public private(set) var bytesRead = 0

    /// The open file, or `nil` for a log read from memory.
    private let file: FileDescriptor?
    /// The bytes read and not yet parsed, and the only code here that touches memory.
    private var window: ByteWindow
    private var atEndOfFile = false
    private var lineNumber = 0
    private var filenameRange = 0..<0
    /// Where the next `\n` at or after the last search is (`window.end` when there is none):
    /// kept so that a file whose lines end in a bare `\r` is not searched to the end of the
    /// window for every line. Forgotten when the window moves.
    private var knownNewline: Int?

    /// The longest line read (64 MiB): a timestamp and a file name take well under a kilobyte.
    static let longestLineBytes = 64 << 20

    /// Opens the log at `path`.
    ///
    /// - Parameters:
    ///   - path: the log file (an EuRoC `data.csv`); a folder is refused. It also names the
    ///     log in messages.
    ///   - chunkSize: bytes read at a time (the buffer grows for a longer line).
    /// - Throws: ``RecordedTimestampLogError/unreadable(path:reason:)``.
    public init(path: String, chunkSize: Int = 1 << 20) throws(RecordedTimestampLogError) {
        self.path = path
        // What the path is, before opening it: a device or socket is never read (`/dev/zero`
        // has no end); regular files and pipes are.
        var status = stat()
        if stat(path, &status) == 0 {
            switch status.st_mode & S_IFMT {
            case S_IFREG, S_IFIFO: break
            case S_IFDIR: throw .unreadable(path: path, reason: "it is a folder, not a file")
            case S_IFCHR, S_IFBLK: throw .unreadable(path: path, reason: "it is a device, not a file; a timestamp log is expected")
            default: throw .unreadable(path: path, reason: "it is not a file (a socket?); a timestamp log is expected")
            }
        }
        guard let file = FileDescriptor(opening: path, flags: O_RDONLY | O_CLOEXEC) else {
            throw .unreadable(path: path, reason: Self.systemReason())
        }
        self.file = file
        fileSize = file.status().map { Int($0.st_size) } ?? 0
        window = ByteWindow(capacity: chunkSize)
    }

    /// Reads a log already in memory (`path` names it in messages).
    public init(bytes: [UInt8], path: String) {
        self.path = path
        file = nil
        fileSize = bytes.count
        window = ByteWindow(copying: bytes)
        atEndOfFile = true
    }

    deinit {
        window.deallocate()
    }

    /// The file name of the frame ``next()`` returned last.
    public var filename: String { String(decoding: window.bytes(filenameRange), as: UTF8.self) }

    /// The file name's UTF-8 bytes, valid until the next call to ``next()``.
    public var filenameBytes: UnsafeRawBufferPointer { window.bytes(filenameRange) }

    /// The next frame or bad line, or `nil` at the end of the file.
    ///
    /// - Throws: ``RecordedTimestampLogError/unreadable(path:reason:)`` when reading fails.
    public func next() throws(RecordedTimestampLogError) -> Line? {
        while true {
            guard let (lineStart, lineEnd) = try nextLineBounds() else { return nil }
            lineNumber += 1
            if let line = parse(lineStart, lineEnd) { return line }
        }
    }

    // MARK: Lines

    private static let newline = UInt8(ascii: "\n"), carriageReturn = UInt8(ascii: "\r")

    /// The bounds of the next line in the window (terminator excluded), reading more as needed.
    private func nextLineBounds() throws(RecordedTimestampLogError) -> (Int, Int)? {
        var searchFrom = window.start
        while true {
            if let terminator = firstTerminator(from: searchFrom) {
                let isPairedCR = window[terminator] == Self.carriageReturn
                if isPairedCR && terminator + 1 == window.end && !atEndOfFile {
                    // Whether `\r` is followed by `\n` is in the next chunk.
                    searchFrom = terminator - window.start
                    try refill()
                    searchFrom += window.start
                    continue
                }
                let next = isPairedCR && terminator + 1 < window.end && window[terminator + 1] == Self.newline
                    ? terminator + 2 : terminator + 1
                let bounds = (window.start, terminator)
                bytesRead += next - window.start
                window.start = next
                return bounds
            }
            if atEndOfFile {
                guard window.start < window.end else { return nil }
                let bounds = (window.start, window.end)
                bytesRead += window.end - window.start
                window.start = window.end
                return bounds
            }
            searchFrom = window.end - window.start
            try refill()
            searchFrom += window.start
        }
    }

    /// The first `\n` or `\r` at or after `index`: `memchr` finds the `\n` (vectorized), then
    /// the line before it is searched for a `\r`.
    private func firstTerminator(from index: Int) -> Int? {
        guard index < window.end else { return nil }
        let newline: Int
        if let known = knownNewline, known >= index {
            newline = known
        } else {
            newline = window.firstIndex(of: Self.newline, in: index..<window.end) ?? window.end
            knownNewline = newline
        }
        if let cr = window.firstIndex(of: Self.carriageReturn, in: index..<newline) { return cr }
        return newline < window.end ? newline : nil
    }

    /// Moves the unparsed bytes to the front (growing the window for a line longer than it)
    /// and reads more after them.
    private func refill() throws(RecordedTimestampLogError) {
        knownNewline = nil
        window.moveUnparsedToFront()
        if window.isFull {
            // A line is a timestamp and a file name: one that fills this much is not a log.
            guard window.capacity < Self.longestLineBytes else {
                throw .unreadable(path: path, reason: "line \(lineNumber + 1) is longer than \(Self.longestLineBytes >> 20) MiB; "
                                  + "is it a timestamp log?")
            }
            window.grow(to: min(window.capacity * 2, Self.longestLineBytes))
        }
        // A log read from memory is read to its end at once: only a file refills.
        guard let file, let n = window.append(readingFrom: file) else {
            throw .unreadable(path: path, reason: Self.systemReason())
        }
        if n == 0 { atEndOfFile = true }
    }

    // MARK: Fields

    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// Parses `window[lineStart..<lineEnd]`: `nil` for a comment or blank line.
    private func parse(_ lineStart: Int, _ lineEnd: Int) -> Line? {
        let bytes = window
        var s = lineStart
        // A UTF-8 byte-order mark before the first line (some editors save one), as the
        // calibration readers drop it.
        if lineNumber == 1, lineEnd - s >= 3, bytes[s] == 0xEF, bytes[s + 1] == 0xBB, bytes[s + 2] == 0xBF { s += 3 }
        while s < lineEnd, Self.isBlank(bytes[s]) { s += 1 }
        if s == lineEnd || bytes[s] == UInt8(ascii: "#") { return nil }
        // Exactly one comma: memchr finds the first, and any second.
        guard let comma = bytes.firstIndex(of: UInt8(ascii: ","), in: s..<lineEnd) else {
            return .problem(.init(line: lineNumber, message: "expected 2 fields `timestamp,filename`, found 1"))
        }
        if bytes.firstIndex(of: UInt8(ascii: ","), in: (comma + 1)..<lineEnd) != nil {
            var commas = 0
            for i in comma..<lineEnd where bytes[i] == UInt8(ascii: ",") { commas += 1 }
            return .problem(.init(line: lineNumber, message: "expected 2 fields `timestamp,filename`, found \(commas + 1)"))
        }
        let (timeStart, timeEnd) = Self.trimmed(bytes, s, comma)
        guard let timestamp = Self.parseTimestamp(bytes, timeStart, timeEnd) else {
            // At most the start of a long field is decoded: a message quotes it, never echoes it.
            let shownEnd = min(timeEnd, timeStart + 60)
            var text = String(decoding: bytes.bytes(timeStart..<shownEnd), as: UTF8.self)
            if timeEnd > shownEnd { text += "… (\(timeEnd - timeStart) bytes)" }
            return .problem(.init(line: lineNumber, message: "timestamp `\(text)` is not a non-negative integer (nanoseconds)"))
        }
        let (nameStart, nameEnd) = Self.trimmed(bytes, comma + 1, lineEnd)
        guard nameStart < nameEnd else { return .problem(.init(line: lineNumber, message: "empty file name")) }
        filenameRange = nameStart..<nameEnd
        return .frame(timestampNanoseconds: timestamp, line: lineNumber)
    }

    private static func trimmed(_ bytes: ByteWindow, _ from: Int, _ to: Int) -> (Int, Int) {
        var a = from, b = to
        while a < b, isBlank(bytes[a]) { a += 1 }
        while b > a, isBlank(bytes[b - 1]) { b -= 1 }
        return (a, b)
    }

    /// Decimal digits with an optional `+`, within Int64.
    private static func parseTimestamp(_ bytes: ByteWindow, _ from: Int, _ to: Int) -> Int64? {
        var i = from
        if i < to, bytes[i] == UInt8(ascii: "+") { i += 1 }
        guard i < to else { return nil }
        var value: Int64 = 0
        if to - i <= 18 {
            // 18 digits cannot overflow Int64.
            while i < to {
                let digit = bytes[i] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value &* 10 &+ Int64(digit)
                i += 1
            }
            return value
        }
        while i < to {
            let digit = bytes[i] &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(Int64(digit))
            guard !o1, !o2 else { return nil }
            value = sum
            i += 1
        }
        return value
    }

    private static func systemReason() -> String { String(cString: strerror(errno)) }
}

/// The reader's bytes: `capacity` bytes of memory, of which `0..<end` hold what was read and
/// `start..<end` what is not parsed yet. Every pointer operation of the reader is here, each
/// checked against those bounds (`precondition`: a wrong index stops the process rather
/// than read memory outside the window).
private struct ByteWindow {
    private var memory: UnsafeMutableRawBufferPointer
    /// The first byte not parsed yet.
    var start = 0 {
        didSet { precondition(start >= 0 && start <= end, "window start \(start) outside 0...\(end)") }
    }
    /// One past the last byte read.
    private(set) var end = 0

    var capacity: Int { memory.count }
    var isFull: Bool { end == memory.count }

    /// An empty window of `capacity` bytes (at least 1).
    init(capacity: Int) {
        memory = .allocate(byteCount: max(capacity, 1), alignment: 16)
    }

    /// A window holding `bytes`, all read.
    init(copying bytes: [UInt8]) {
        memory = .allocate(byteCount: max(bytes.count, 1), alignment: 16)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0) }
        end = bytes.count
    }

    /// Frees the memory (the owner's `deinit`).
    func deallocate() { memory.deallocate() }

    /// The byte at `index` (within what was read).
    subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < end, "byte \(index) outside 0..<\(end)")
        return memory[index]
    }

    /// The bytes of `range` (within what was read), valid until the window next changes.
    func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        precondition(range.lowerBound >= 0 && range.upperBound <= end, "bytes \(range) outside 0..<\(end)")
        return UnsafeRawBufferPointer(rebasing: memory[range])
    }

    /// The first index of `byte` in `range` (`memchr`, vectorised), or `nil`.
    func firstIndex(of byte: UInt8, in range: Range<Int>) -> Int? {
        precondition(range.lowerBound >= 0 && range.upperBound <= end, "search \(range) outside 0..<\(end)")
        guard !range.isEmpty, let base = memory.baseAddress else { return nil }
        return memchr(base + range.lowerBound, Int32(byte), range.count).map { $0 - base }
    }

    /// Moves the unparsed bytes to the front: `start` becomes 0.
    mutating func moveUnparsedToFront() {
        guard start > 0 else { return }
        let pending = end - start
        if pending > 0, let base = memory.baseAddress { memmove(base, base + start, pending) }
        end = pending
        start = 0
    }

    /// Grows the memory to `capacity` bytes, keeping what was read.
    mutating func grow(to capacity: Int) {
        precondition(capacity >= end, "a window of \(end) bytes cannot shrink to \(capacity)")
        let larger = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 16)
        larger.copyMemory(from: UnsafeRawBufferPointer(rebasing: memory[0..<end]))
        memory.deallocate()
        memory = larger
    }

    /// Reads from `file` into the free space after `end` (retrying when a signal
    /// interrupts); returns the bytes read (0 at the end of the file), or `nil` with `errno`
    /// set on a failure.
    mutating func append(readingFrom file: FileDescriptor) -> Int? {
        guard let base = memory.baseAddress else { return nil }
        let n = file.read(into: base + end, count: memory.count - end)
        guard n >= 0 else { return nil }
        end += n
        return n
    }
}
