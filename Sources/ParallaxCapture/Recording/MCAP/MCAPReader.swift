import CZstd
import Foundation
import ParallaxGeometry
import Synchronization

/// Why an MCAP file cannot be read: the file, where in it (a byte offset), and what is wrong.
public struct MCAPReadError: Error, Sendable, CustomStringConvertible {
    /// The file (or the name given to bytes read from memory).
    public var file: String
    /// The byte offset of the record or field at fault, when there is one.
    public var offset: Int?
    /// What is wrong, as a sentence.
    public var reason: String

    /// `FILE: at byte N: reason`.
    public var description: String { "\(file)" + (offset.map { ": at byte \($0)" } ?? "") + ": \(reason)" }
}

/// An MCAP file opened for reading (mcap.dev/spec, major version 0): its header, its
/// summary when it has one (schemas, channels, statistics), and its messages in file order.
///
/// Everything is checked before it is believed: the magic at both ends, every record's
/// length against the file, every field against its record, the chunks' CRC-32 and the
/// data section's and summary's, channels named by messages, chunk compression (chunks are
/// read uncompressed or zstd-compressed; others, such as lz4, are refused by name). A file cut short, as a
/// recording killed mid-write leaves it, has no footer: ``init(path:allowingTruncation:decompressionDeadline:)``
/// refuses it, unless `allowingTruncation`, which reads the records that are whole.
public final class MCAPFile {
    /// The file's path (or the name given to bytes read from memory).
    public let name: String
    /// The header's profile (`ros2` for ROS 2 bags) and the library that wrote the file.
    public private(set) var profile = "", library = ""
    /// Every schema and channel, by id: the summary's, or those met in the data section.
    public private(set) var schemas: [UInt16: MCAPSchema] = [:]
    /// Every channel, by id.
    public private(set) var channels: [UInt16: MCAPChannel] = [:]
    /// The summary's statistics, when the file has them.
    public private(set) var statistics: MCAPStatistics?
    /// False when the file ends before its footer (read with `allowingTruncation`).
    public private(set) var isComplete = true

    /// The file's bytes: mapped read-only for a file (unmapped at deinit), or a copy of the
    /// bytes given. Never written through.
    private let raw: UnsafeRawBufferPointer
    private let isMapped: Bool
    /// Where the data section's records end: the Data End record, the summary, or (for a
    /// truncated file) the end of the last whole record.
    private var dataEnd = 0

    /// Opens and checks the file at `path`: the magic, the footer and the summary. With
    /// `allowingTruncation`, a file cut short (no footer) is read up to its last whole record.
    ///
    /// `decompressionDeadline` (nanoseconds on CLOCK_MONOTONIC) bounds the time spent
    /// decompressing chunks, as `largestChunk` bounds their size: a chunk still decompressing
    /// then is refused, saying so (a command's time limit covers a bag that decompresses
    /// slowly, such as a zstd bomb, and not only its playback).
    public init(path: String, allowingTruncation: Bool = false, decompressionDeadline: Int64? = nil) throws(MCAPReadError) {
        name = path
        self.decompressionDeadline = decompressionDeadline
        // O_NONBLOCK: a FIFO opens at once (to be refused below as not a regular file) instead
        // of waiting for a writer that may never come; on a regular file it changes nothing.
        let descriptor = SystemCall.retryingInterrupts { Foundation.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) }
        guard descriptor >= 0 else {
            throw MCAPReadError(file: path, reason: "cannot be opened: \(String(cString: strerror(errno)))")
        }
        let file = FileDescriptor(rawValue: descriptor, owned: true)
        guard let status = file.status(), status.st_mode & S_IFMT == S_IFREG else {
            throw MCAPReadError(file: path, reason: "is not a regular file")
        }
        let size = Int(status.st_size)
        if size == 0 {
            (raw, isMapped) = (UnsafeRawBufferPointer(start: nil, count: 0), false)
        } else {
            guard let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), mapped != MAP_FAILED else {
                throw MCAPReadError(file: path, reason: "cannot be mapped: \(String(cString: strerror(errno)))")
            }
            (raw, isMapped) = (UnsafeRawBufferPointer(start: mapped, count: size), true)
        }
        try open(allowingTruncation: allowingTruncation)
    }

    /// Reads MCAP bytes held in memory, under `name` in errors (`decompressionDeadline` as for a file).
    public init(bytes: [UInt8], name: String, allowingTruncation: Bool = false, decompressionDeadline: Int64? = nil) throws(MCAPReadError) {
        self.name = name
        self.decompressionDeadline = decompressionDeadline
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: bytes.count, alignment: 8)
        copy.copyBytes(from: bytes)
        (raw, isMapped) = (UnsafeRawBufferPointer(copy), false)
        try open(allowingTruncation: allowingTruncation)
    }

    deinit {
        if isMapped { munmap(UnsafeMutableRawPointer(mutating: raw.baseAddress), raw.count) } else { raw.deallocate() }
    }

    private func fail(_ offset: Int?, _ reason: String) -> MCAPReadError { MCAPReadError(file: name, offset: offset, reason: reason) }

    // MARK: Opening

    private func open(allowingTruncation: Bool) throws(MCAPReadError) {
        let magic = MCAPFormat.magic
        do {
            guard raw.count >= magic.count, Array(raw.prefix(magic.count)) == magic else {
                // The sixth byte is the major version, an ASCII digit.
                let otherVersion = raw.count >= 6 && Array(raw.prefix(5)) == Array(magic.prefix(5))
                throw fail(0, otherVersion ? "MCAP major version \(Character(Unicode.Scalar(raw[5]))) is not 0, the one Parallax reads"
                                           : "not an MCAP file (no MCAP magic at the start)")
            }
            // The header, first.
            guard let header = try record(at: magic.count, in: raw), header.opcode == .header else {
                throw fail(magic.count, "the first record is not a Header")
            }
            var fields = MCAPFieldReader(raw, from: header.content.lowerBound, to: header.content.upperBound)
            do {
                profile = try fields.string("profile")
                library = try fields.string("library")
            } catch { throw fail(magic.count, "the Header record's \(error.field) runs past the record") }

            // The footer, last; without one the file was cut short.
            let footerStart = raw.count - magic.count - MCAPFormat.recordPrefix - 20
            let trailing = raw.count >= magic.count ? Array(raw.suffix(magic.count)) : []
            guard footerStart > header.content.upperBound, trailing == magic, raw[footerStart] == MCAPFormat.Opcode.footer.rawValue else {
                guard allowingTruncation else {
                    throw fail(raw.count, "the file ends without its footer and closing magic: it was cut short (a recording that "
                               + "did not finish?)")
                }
                isComplete = false
                dataEnd = raw.count
                return
            }
            var footer = MCAPFieldReader(raw, from: footerStart + MCAPFormat.recordPrefix, to: footerStart + MCAPFormat.recordPrefix + 20)
            let (summaryStart, summaryOffsetStart, summaryCRC) = try Self.footerFields(&footer)
            dataEnd = footerStart
            guard summaryStart != 0 else { return }
            guard summaryStart > UInt64(header.content.upperBound), summaryStart <= UInt64(footerStart),
                  summaryOffsetStart == 0 || (summaryOffsetStart >= summaryStart && summaryOffsetStart <= UInt64(footerStart)) else {
                throw fail(footerStart, "the footer's summary offsets (\(summaryStart), \(summaryOffsetStart)) lie outside the file")
            }
            if summaryCRC != 0 {
                let covered = UnsafeRawBufferPointer(rebasing: raw[Int(summaryStart)..<(footerStart + MCAPFormat.recordPrefix + 16)])
                let actual = CRC32.of(covered)
                guard actual == summaryCRC else {
                    throw fail(Int(summaryStart), "the summary's CRC-32 is \(hex(actual)), the footer says \(hex(summaryCRC)): the summary is damaged")
                }
            }
            dataEnd = Int(summaryStart)
            try readSummary(raw, from: Int(summaryStart), to: summaryOffsetStart == 0 ? footerStart : Int(summaryOffsetStart))
        }
    }

    private static func footerFields(_ footer: inout MCAPFieldReader) throws(MCAPReadError) -> (UInt64, UInt64, UInt32) {
        do { return (try footer.u64("summary_start"), try footer.u64("summary_offset_start"), try footer.u32("summary_crc")) } catch {
            throw MCAPReadError(file: "", reason: "unreachable: a 20-byte footer")
        }
    }

    private func readSummary(_ raw: UnsafeRawBufferPointer, from start: Int, to end: Int) throws(MCAPReadError) {
        var at = start
        while at < end {
            guard let r = try record(at: at, in: raw, limit: end) else { throw fail(at, "a summary record runs past the summary") }
            var f = MCAPFieldReader(raw, from: r.content.lowerBound, to: r.content.upperBound)
            do {
                switch r.opcode {
                case .schema: try register(Self.schema(&f), at: at)
                case .channel: try register(Self.channel(&f), at: at)
                case .statistics: statistics = try Self.statistics(&f)
                default: break  // chunk indexes and the rest: not needed to read in file order
                }
            } catch let short as MCAPFieldReader.Short {
                throw fail(at, "the \(r.opcode) record's \(short.field) runs past the record")
            } catch let error as MCAPReadError {
                throw error
            } catch { throw fail(at, "\(error)") }
            at = r.content.upperBound
        }
    }

    // MARK: Messages

    /// Hands every message to `body`, in file order, after checking each chunk's CRC; the
    /// data section's CRC is checked when its end is reached. A message on a channel the file
    /// never defined, or in a compressed chunk, is an ``MCAPReadError`` naming where it is;
    /// what `body` throws is passed on as it is.
    public func forEachMessage(_ body: (MCAPMessage) throws -> Void) throws {
        var crc = CRC32()
        var at = MCAPFormat.magic.count
        crc.update(UnsafeRawBufferPointer(rebasing: raw[0..<at]))
        while at < dataEnd {
            guard let r = try record(at: at, in: raw, limit: dataEnd) else {
                if isComplete { throw fail(at, "a record runs past the data section") }
                return  // a truncated file: its last record is cut
            }
            var f = MCAPFieldReader(raw, from: r.content.lowerBound, to: r.content.upperBound)
            do {
                switch r.opcode {
                case .schema: try register(Self.schema(&f), at: at)
                case .channel: try register(Self.channel(&f), at: at)
                case .message: try deliver(&f, at: at, body)
                case .chunk: try readChunk(&f, at: at, body)
                case .dataEnd:
                    let stated = try f.u32("data_section_crc")
                    guard stated == 0 || stated == crc.value else {
                        throw fail(at, "the data section's CRC-32 is \(hex(crc.value)), Data End says \(hex(stated)): the data is damaged")
                    }
                    return
                default: break
                }
            } catch let short as MCAPFieldReader.Short {
                throw fail(at, "the \(r.opcode) record's \(short.field) runs past the record")
            }
            crc.update(UnsafeRawBufferPointer(rebasing: raw[at..<r.content.upperBound]))
            at = r.content.upperBound
        }
    }

    /// Every message, by topic, in file order: one pass of ``forEachMessage(_:)`` (so every
    /// check it makes is made), as entries to read again with ``withData(of:_:)``.
    public func entriesByTopic() throws -> [String: [MCAPMessageEntry]] {
        var found: [String: [MCAPMessageEntry]] = [:]
        try forEachMessage { message in
            let base = currentChunk == nil ? raw.baseAddress : currentChunkBase
            guard let base, let start = message.data.baseAddress else { return }
            let offset = base.distance(to: start)
            found[message.channel.topic, default: []].append(
                MCAPMessageEntry(channelID: message.channel.id, sequence: message.sequence, logTime: message.logTime,
                                 publishTime: message.publishTime, dataRange: offset..<(offset + message.data.count),
                                 compressedChunk: currentChunk))
        }
        return found
    }

    /// Calls `body` with the bytes of `entry` (from ``entriesByTopic()`` of this file): the
    /// file's own bytes, or those of its decompressed chunk (the chunks used last are kept:
    /// readers going through several topics at once, each in its own chunks, decompress each
    /// chunk once). Valid during the call; safe to call from several threads at once.
    public func withData<R>(of entry: MCAPMessageEntry, _ body: (UnsafeRawBufferPointer) throws -> R) throws -> R {
        guard let chunk = entry.compressedChunk else {
            precondition(entry.dataRange.lowerBound >= 0 && entry.dataRange.upperBound <= raw.count, "an entry of another file")
            return try body(UnsafeRawBufferPointer(rebasing: raw[entry.dataRange]))
        }
        precondition(chunk >= 0 && chunk < compressedChunks.count, "an entry of another file")
        let cached = decompressedChunks.withLock { $0.bytes(of: chunk) }
        let bytes: [UInt8]
        if let cached {
            bytes = cached
        } else {
            let (records, size, at) = compressedChunks[chunk]
            bytes = try decompress(records, size: size, at: at)
            decompressedChunks.withLock { $0.keep(bytes, of: chunk) }
        }
        precondition(entry.dataRange.upperBound <= bytes.count, "an entry of another file")
        return try bytes.withUnsafeBytes { try body(UnsafeRawBufferPointer(rebasing: $0[entry.dataRange])) }
    }

    /// While a compressed chunk's messages are handed over: its number and where its
    /// decompressed records start.
    private var currentChunk: Int?
    private var currentChunkBase: UnsafeRawPointer?
    /// Each zstd chunk met so far: its compressed records, their size decompressed, and
    /// where the chunk starts in the file.
    private var compressedChunks: [(records: Range<Int>, size: Int, at: Int)] = []
    private let decompressedChunks = Locked(DecompressedChunks())

    /// The zstd chunks decompressed last, most recent last: at most 8, and 256 MiB together
    /// (with the one just used always kept). Two topics played at once, each from its own
    /// run of chunks, use two; 8 leave room for four such readers or a reader running ahead.
    struct DecompressedChunks {
        private var kept: [(chunk: Int, bytes: [UInt8])] = []
        private var total = 0
        static let most = 8, mostBytes = 256 << 20

        /// The chunk's records, if kept (then counted as used last).
        mutating func bytes(of chunk: Int) -> [UInt8]? {
            guard let index = kept.firstIndex(where: { $0.chunk == chunk }) else { return nil }
            let entry = kept.remove(at: index)
            kept.append(entry)
            return entry.bytes
        }

        /// Keeps a chunk's records, letting go of those used longest ago past the limits.
        mutating func keep(_ bytes: [UInt8], of chunk: Int) {
            guard !kept.contains(where: { $0.chunk == chunk }) else { return }
            kept.append((chunk, bytes))
            total += bytes.count
            while kept.count > 1 && (kept.count > Self.most || total > Self.mostBytes) {
                total -= kept.removeFirst().bytes.count
            }
        }
    }

    /// The largest decompressed chunk read: a chunk claiming more is refused before any
    /// memory is set aside (writers close chunks at a few MiB).
    static let largestChunk = 1 << 30

    /// When decompressing must have ended (CLOCK_MONOTONIC nanoseconds), if ever.
    public let decompressionDeadline: Int64?

    /// zstd chunks decompressed so far (what the tests count).
    let decompressions = Atomic<Int>(0)

    /// A zstd chunk's records, decompressed and checked against the size it states.
    private func decompress(_ records: Range<Int>, size: Int, at: Int) throws(MCAPReadError) -> [UInt8] {
        decompressions.add(1, ordering: .relaxed)
        do { return try Self.zstdChunk(UnsafeRawBufferPointer(rebasing: raw[records]), size: size, deadline: decompressionDeadline) } catch {
            throw fail(at, error.reason)
        }
    }

    /// Why a zstd chunk's records cannot be had, as a sentence.
    struct UndecodableChunk: Error { var reason: String }

    /// A zstd chunk's records (`source`, one zstd frame) decompressed, checked against the
    /// `size` the chunk states; shared with ``MCAPRecovery``, which reads chunks the same way.
    /// Past `deadline` (CLOCK_MONOTONIC nanoseconds) no chunk is begun, and a chunk larger
    /// than ``oneShotLimit`` (a bomb's) is decompressed a slice at a time so that the work
    /// stops within a slice instead of running on to the size cap.
    static func zstdChunk(_ source: UnsafeRawBufferPointer, size: Int, deadline: Int64? = nil) throws(UndecodableChunk) -> [UInt8] {
        let declared = ZSTD_getFrameContentSize(source.baseAddress, source.count)
        if declared != ZSTD_CONTENTSIZE_UNKNOWN {
            guard declared != ZSTD_CONTENTSIZE_ERROR else { throw UndecodableChunk(reason: "a zstd chunk whose data is not a zstd frame") }
            guard declared == UInt64(size) else {
                throw UndecodableChunk(reason: "a zstd chunk that says it holds \(size) bytes, its frame \(declared)")
            }
        }
        if let deadline, monotonicNanoseconds() > deadline { throw outOfTime(size: size, done: 0) }
        // Not zero-filled first: zstd writes every byte (a failure keeps none), and a bomb's
        // gigabyte is not touched twice.
        var failure: UndecodableChunk?
        let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            let out = UnsafeMutableRawBufferPointer(buffer)
            if let deadline, size > oneShotLimit {
                failure = sliced(source, into: out, deadline: deadline)
            } else {
                failure = oneShot(source, into: out)
            }
            initialized = failure == nil ? size : 0
        }
        if let failure { throw failure }
        return bytes
    }

    /// Why a chunk of `size` bytes was given up with `done` of them decompressed.
    private static func outOfTime(size: Int, done: Int) -> UndecodableChunk {
        UndecodableChunk(reason: "the time limit ran out with a zstd chunk of \(size) bytes to decompress (\(done) done)")
    }

    /// Decompresses `source` into `out` (exactly its size) in one call: nil, or the failure.
    private static func oneShot(_ source: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) -> UndecodableChunk? {
        let written = ZSTD_decompress(out.baseAddress, out.count, source.baseAddress, source.count)
        if ZSTD_isError(written) != 0 {
            return UndecodableChunk(reason: "a zstd chunk that does not decompress: \(String(cString: ZSTD_getErrorName(written)))")
        }
        return written == out.count ? nil
            : UndecodableChunk(reason: "a zstd chunk that says it holds \(out.count) bytes decompresses to \(written)")
    }

    /// Decompresses `source` into `out` (exactly its size) 1 KiB of input at a time, looking at
    /// the deadline before each: at most 32 MiB of output per step (256 run-length blocks of
    /// 128 KiB, zstd's densest), a few milliseconds. zstd writes straight into `out` (its
    /// stable-output mode), so no second buffer of the chunk's size is made.
    private static func sliced(_ source: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer,
                               deadline: Int64) -> UndecodableChunk? {
        guard let stream = ZSTD_createDStream() else { return UndecodableChunk(reason: "no memory for zstd's decompression state") }
        defer { ZSTD_freeDStream(stream) }
        // A chunk's frame may need a window as large as the chunk (up to `largestChunk`, 2³⁰);
        // zstd's streaming default stops at 2²⁷. 1001 is ZSTD_d_stableOutBuffer, which zstd.h
        // declares only for static linking; the shared library takes it all the same.
        for (parameter, value) in [(ZSTD_d_windowLogMax, Int32(30)), (ZSTD_dParameter(rawValue: 1001), 1)] {
            let result = ZSTD_DCtx_setParameter(stream, parameter, value)
            if ZSTD_isError(result) != 0 {
                return UndecodableChunk(reason: "zstd refused a decompression setting: \(String(cString: ZSTD_getErrorName(result)))")
            }
        }
        var output = ZSTD_outBuffer(dst: out.baseAddress, size: out.count, pos: 0)
        var consumed = 0
        while true {
            if monotonicNanoseconds() > deadline { return outOfTime(size: out.count, done: output.pos) }
            var input = ZSTD_inBuffer(src: source.baseAddress, size: min(source.count, consumed + 1024), pos: consumed)
            let before = (consumed, output.pos)
            let left = ZSTD_decompressStream(stream, &output, &input)
            consumed = input.pos
            if ZSTD_isError(left) != 0 {
                return UndecodableChunk(reason: "a zstd chunk that does not decompress: \(String(cString: ZSTD_getErrorName(left)))")
            }
            // 0: a frame ended and everything it held is out; the chunk's data may hold another.
            if left == 0 && consumed == source.count { break }
            if (consumed, output.pos) == before {
                return output.pos == out.count
                    ? UndecodableChunk(reason: "a zstd chunk that says it holds \(out.count) bytes decompresses to more")
                    : UndecodableChunk(reason: "a zstd chunk whose frame ends early (\(output.pos) of \(out.count) bytes)")
            }
        }
        return output.pos == out.count ? nil
            : UndecodableChunk(reason: "a zstd chunk that says it holds \(out.count) bytes decompresses to \(output.pos)")
    }

    /// The largest chunk decompressed in one call when a deadline is set (about 50 ms of
    /// zstd's time); larger ones go a slice at a time, checking the deadline between slices.
    static let oneShotLimit = 64 << 20

    private func deliver(_ f: inout MCAPFieldReader, at: Int, _ body: (MCAPMessage) throws -> Void) throws {
        let channelID = try f.u16("channel_id")
        let sequence = try f.u32("sequence")
        let logTime = try f.u64("log_time")
        let publishTime = try f.u64("publish_time")
        let data = f.rest()
        guard let channel = channels[channelID] else { throw fail(at, "a message on channel \(channelID), which the file never defines") }
        try body(MCAPMessage(channel: channel, sequence: sequence, logTime: logTime, publishTime: publishTime,
                             data: UnsafeRawBufferPointer(rebasing: f.bytes[data]), fileOffset: at))
    }

    private func readChunk(_ f: inout MCAPFieldReader, at: Int, _ body: (MCAPMessage) throws -> Void) throws {
        _ = try f.u64("message_start_time")
        _ = try f.u64("message_end_time")
        let uncompressedSize = try f.u64("uncompressed_size")
        let uncompressedCRC = try f.u32("uncompressed_crc")
        let compression = try f.string("compression")
        let records = try f.range64("records")
        switch compression {
        case "":
            guard UInt64(records.count) == uncompressedSize else {
                throw fail(at, "a chunk of \(records.count) bytes says it holds \(uncompressedSize)")
            }
            try readRecords(of: UnsafeRawBufferPointer(rebasing: raw[records]), chunkAt: at, crc: uncompressedCRC, fileOffset: records.lowerBound, body)
        case "zstd":
            guard uncompressedSize <= UInt64(Self.largestChunk) else {
                throw fail(at, "a zstd chunk that says it holds \(uncompressedSize) bytes (Parallax reads chunks of at most 1 GiB)")
            }
            let bytes = try decompress(records, size: Int(uncompressedSize), at: at)
            compressedChunks.append((records, Int(uncompressedSize), at))
            try bytes.withUnsafeBytes { buffer in
                currentChunk = compressedChunks.count - 1
                currentChunkBase = buffer.baseAddress
                defer { currentChunk = nil; currentChunkBase = nil }
                try readRecords(of: buffer, chunkAt: at, crc: uncompressedCRC, fileOffset: nil, body)
            }
        default:
            throw fail(at, "a chunk compressed with \"\(compression)\", which Parallax does not read (it reads uncompressed and zstd chunks)")
        }
    }

    /// A chunk's records, once their CRC is checked: schemas, channels and messages. Errors
    /// name the file offset of an uncompressed chunk's record, or the chunk and the record's
    /// place in its decompressed records.
    private func readRecords(of content: UnsafeRawBufferPointer, chunkAt at: Int, crc stated: UInt32, fileOffset: Int?,
                             _ body: (MCAPMessage) throws -> Void) throws {
        // 0: the writer computed none (the specification's "not available"). A CRC is taken
        // 16 MiB at a time, held to the decompression deadline as the decompression is.
        if stated != 0 {
            var crc = CRC32()
            var done = 0
            while done < content.count {
                if let decompressionDeadline, monotonicNanoseconds() > decompressionDeadline {
                    throw fail(at, "the time limit ran out checking the CRC-32 of a chunk of \(content.count) bytes (\(done) done)")
                }
                let end = min(content.count, done + (16 << 20))
                crc.update(UnsafeRawBufferPointer(rebasing: content[done..<end]))
                done = end
            }
            guard crc.value == stated else {
                throw fail(at, "the chunk's CRC-32 is \(hex(crc.value)), it says \(hex(stated)): the chunk is damaged")
            }
        }
        var inner = 0
        while inner < content.count {
            func where_(_ reason: String) -> MCAPReadError {
                fileOffset.map { fail($0 + inner, reason) } ?? fail(at, "at byte \(inner) of the decompressed chunk: " + reason)
            }
            guard let r = try record(at: inner, in: content, limit: content.count, strict: true) else {
                throw where_("a record inside the chunk at byte \(at) runs past the chunk")
            }
            var g = MCAPFieldReader(content, from: r.content.lowerBound, to: r.content.upperBound)
            do {
                // In the file: the record's own offset; inside a decompressed chunk: the chunk's.
                let offset = fileOffset.map { $0 + inner } ?? at
                switch r.opcode {
                case .schema: try register(Self.schema(&g), at: offset)
                case .channel: try register(Self.channel(&g), at: offset)
                case .message: try deliver(&g, at: offset, body)
                default: break
                }
            } catch let short as MCAPFieldReader.Short {
                throw where_("the \(r.opcode) record's \(short.field) runs past the record")
            }
            inner = r.content.upperBound
        }
    }

    // MARK: Records and fields

    /// The record at `offset`: its opcode and content range, checked against `limit` (the
    /// file's end by default). `nil` when even its prefix does not fit, or (in a truncated
    /// file, unless `strict`) when its content does not. Opcodes this version does not know
    /// come back as `.metadataIndex`, which every reader here skips, as the specification asks.
    private func record(at offset: Int, in raw: UnsafeRawBufferPointer, limit: Int? = nil, strict: Bool = false) throws(MCAPReadError)
        -> (opcode: MCAPFormat.Opcode, content: Range<Int>)?
    {
        let end = limit ?? raw.count
        guard offset + MCAPFormat.recordPrefix <= end else { return nil }
        var prefix = MCAPFieldReader(raw, from: offset, to: offset + MCAPFormat.recordPrefix)
        guard let code = try? prefix.u8("opcode"), let length = try? prefix.u64("length") else { return nil }
        guard length <= UInt64(end - offset - MCAPFormat.recordPrefix) else {
            if !isComplete && !strict { return nil }
            throw fail(offset, "a record of \(length) bytes, more than the \(end - offset - MCAPFormat.recordPrefix) left")
        }
        let content = (offset + MCAPFormat.recordPrefix)..<(offset + MCAPFormat.recordPrefix + Int(length))
        return (MCAPFormat.Opcode(rawValue: code) ?? .metadataIndex, content)
    }

    private func register(_ schema: MCAPSchema, at offset: Int) throws(MCAPReadError) {
        if let known = schemas[schema.id], known != schema {
            throw fail(offset, "schema \(schema.id) is defined twice, differently (\(known.name), \(schema.name))")
        }
        schemas[schema.id] = schema
    }

    private func register(_ channel: MCAPChannel, at offset: Int) throws(MCAPReadError) {
        if let known = channels[channel.id], known != channel {
            throw fail(offset, "channel \(channel.id) is defined twice, differently (\(known.topic), \(channel.topic))")
        }
        guard channel.schemaID == 0 || schemas[channel.schemaID] != nil else {
            throw fail(offset, "channel \(channel.id) (\(channel.topic)) names schema \(channel.schemaID), which is not defined before it")
        }
        channels[channel.id] = channel
    }

    static func schema(_ f: inout MCAPFieldReader) throws(MCAPFieldReader.Short) -> MCAPSchema {
        MCAPSchema(id: try f.u16("id"), name: try f.string("name"), encoding: try f.string("encoding"), data: try f.data32("data"))
    }

    static func channel(_ f: inout MCAPFieldReader) throws(MCAPFieldReader.Short) -> MCAPChannel {
        let id = try f.u16("id"), schemaID = try f.u16("schema_id")
        let topic = try f.string("topic"), encoding = try f.string("message_encoding")
        let pairs = try f.map("metadata") { (m: inout MCAPFieldReader) throws(MCAPFieldReader.Short) in
            (try m.string("metadata key"), try m.string("metadata value"))
        }
        return MCAPChannel(id: id, schemaID: schemaID, topic: topic, messageEncoding: encoding,
                           metadata: Dictionary(pairs, uniquingKeysWith: { _, last in last }))
    }

    private static func statistics(_ f: inout MCAPFieldReader) throws(MCAPFieldReader.Short) -> MCAPStatistics {
        let messages = try f.u64("message_count")
        let schemas = Int(try f.u16("schema_count")), channels = Int(try f.u32("channel_count"))
        _ = try f.u32("attachment_count")
        _ = try f.u32("metadata_count")
        let chunks = Int(try f.u32("chunk_count"))
        let start = try f.u64("message_start_time"), end = try f.u64("message_end_time")
        let counts = try f.map("channel_message_counts") { (m: inout MCAPFieldReader) throws(MCAPFieldReader.Short) in
            (try m.u16("channel id"), try m.u64("message count"))
        }
        return MCAPStatistics(messageCount: messages, schemaCount: schemas, channelCount: channels, chunkCount: chunks,
                              messageStartTime: start, messageEndTime: end,
                              channelMessageCounts: Dictionary(counts, uniquingKeysWith: { _, last in last }))
    }
}

private func hex(_ v: UInt32) -> String { "0x" + String(v, radix: 16, uppercase: true) }
