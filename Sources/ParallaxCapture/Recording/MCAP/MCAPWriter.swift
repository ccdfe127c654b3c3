import CZstd
import ParallaxGeometry

/// Why an MCAP file could not be written.
public enum MCAPWriteError: Error, Sendable, CustomStringConvertible {
    /// The output refused the bytes (a full disk, a folder that cannot be written to).
    case cannotWrite(FileAccessError)
    /// A message named a channel that was never added.
    case unknownChannel(UInt16)
    /// A channel named a schema that was never added.
    case unknownSchema(UInt16)
    /// More than 65 535 schemas or channels (their ids are `UInt16`).
    case tooMany(String)
    /// The writer was used after ``MCAPWriter/finish()``.
    case finished

    /// The reason, as a sentence.
    public var description: String {
        switch self {
        case .cannotWrite(let error): "\(error)"
        case .unknownChannel(let id): "MCAP: a message for channel \(id), which was never added"
        case .unknownSchema(let id): "MCAP: a channel with schema \(id), which was never added"
        case .tooMany(let what): "MCAP: more than 65535 \(what)"
        case .finished: "MCAP: the file was already finished"
        }
    }
}

/// Writes an MCAP file (mcap.dev/spec) as a stream: messages go into chunks, each followed
/// by its message indexes; ``finish()`` writes the summary (schemas, channels, statistics and
/// a chunk index per chunk, with summary offsets) and the footer, with the data section's and
/// the summary's CRC-32, so readers can seek by time and check what they read.
///
/// Schema and channel records are written to the data section as they are added (before any
/// message that uses them) and again in the summary. Chunks are stored as they are, or
/// compressed with zstd (``Compression``).
///
/// Written to a path, the file appears only at ``finish()`` (written beside it under a
/// temporary name, renamed when complete); a writer dropped before that leaves whatever
/// was at the path as it was. Each chunk is handed to the system as soon as it closes (at
/// `chunkSize` bytes, or once it spans `chunkSeconds` of log time), so a process killed while
/// it writes leaves the temporary file whole up to its last chunk: ``MCAPRecovery`` finishes
/// it, and ``keepUnfinished()`` leaves it for that after a write error.
public final class MCAPWriter {
    /// A schema as added: its id is what channels name.
    public typealias Schema = MCAPSchema
    /// A channel as added: its id is what messages name.
    public typealias Channel = MCAPChannel

    private let output: (UnsafeRawBufferPointer) throws(FileAccessError) -> Void
    private let commit: () throws(FileAccessError) -> Void
    /// The file written to a path: flushed at each chunk, kept unfinished on request.
    private let file: AtomicFileWriter?
    private let chunkSize: Int
    private let chunkNanoseconds: UInt64
    private let compression: Compression

    /// How chunks are stored.
    public enum Compression: String, Sendable, CaseIterable {
        /// As they are: the fastest to write and to read in place.
        case none
        /// zstd at level 3 (libzstd), MCAP's usual compression; images compress little,
        /// camera info and headers much.
        case zstd
    }
    private var offset: UInt64 = 0
    private var dataCRC = CRC32()
    private var isFinished = false

    private(set) public var schemas: [Schema] = []
    private(set) public var channels: [Channel] = []
    private var chunkIndexes: [[UInt8]] = []
    private var messageCount: UInt64 = 0
    private var messageCounts: [UInt16: UInt64] = [:]
    private var startTime = UInt64.max, endTime: UInt64 = 0

    /// The chunk being filled: its records, time span and each channel's (log time, offset).
    private var chunk: [UInt8] = []
    private var chunkStart = UInt64.max, chunkEnd: UInt64 = 0
    private var chunkIndex: [UInt16: [(UInt64, UInt64)]] = [:]

    /// Starts a file written through `output` (which receives every byte, in order), with
    /// the header's `profile` (`ros2` for ROS 2 bags, or empty) and `library`; a chunk is
    /// closed once it holds `chunkSize` bytes of records or spans `chunkSeconds` of log time.
    /// `commit` runs at the end of ``finish()``.
    public init(profile: String, library: String = "parallax \(ParallaxVersion.string)", chunkSize: Int = 4 << 20,
                chunkSeconds: Double = 1, compression: Compression = .none,
                output: @escaping (UnsafeRawBufferPointer) throws(FileAccessError) -> Void,
                commit: @escaping () throws(FileAccessError) -> Void = {}) throws(MCAPWriteError) {
        (self.output, self.commit, self.chunkSize, self.compression) = (output, commit, max(1, chunkSize), compression)
        chunkNanoseconds = UInt64(max(0, min(chunkSeconds, 1e9)) * 1e9)
        file = nil
        try start(profile: profile, library: library)
    }

    /// The leading magic and the Header. The data section's CRC covers everything before
    /// Data End, from the leading magic on.
    private func start(profile: String, library: String) throws(MCAPWriteError) {
        try emitData(MCAPFormat.magic)
        try emitData(MCAPFieldWriter.record(.header) { $0.string(profile); $0.string(library) })
    }

    /// Starts a file at `path`, written beside it under a temporary name and renamed over it
    /// by ``finish()``.
    public init(path: String, profile: String, chunkSize: Int = 4 << 20, chunkSeconds: Double = 1,
                compression: Compression = .none) throws(MCAPWriteError) {
        let file: AtomicFileWriter
        do { file = try AtomicFileWriter(path: path) } catch { throw .cannotWrite(error) }
        (output, commit) = ({ bytes throws(FileAccessError) in try file.write(bytes) }, { () throws(FileAccessError) in try file.commit() })
        (self.file, self.chunkSize, self.compression) = (file, max(1, chunkSize), compression)
        chunkNanoseconds = UInt64(max(0, min(chunkSeconds, 1e9)) * 1e9)
        try start(profile: profile, library: "parallax \(ParallaxVersion.string)")
    }

    /// Goes on with a file whose data section so far `state` describes (``MCAPRecovery``):
    /// nothing is written until ``appendData(_:)`` or ``finish()``.
    init(resuming state: ResumedState, output: @escaping (UnsafeRawBufferPointer) throws(FileAccessError) -> Void) {
        (self.output, commit, file, chunkSize, chunkNanoseconds, compression) = (output, {}, nil, 4 << 20, 1_000_000_000, .none)
        (offset, dataCRC, schemas, channels, chunkIndexes) = (state.offset, state.dataCRC, state.schemas, state.channels, state.chunkIndexes)
        (messageCount, messageCounts, startTime, endTime) = (state.messageCount, state.messageCounts, state.startTime, state.endTime)
    }

    /// Records of the data section written as they are (a recovered chunk's message indexes).
    func appendData(_ bytes: [UInt8]) throws(MCAPWriteError) {
        guard !bytes.isEmpty else { return }
        try emitData(bytes)
    }

    /// Stops writing and leaves what was written under its temporary name, which it returns
    /// (`nil` for a writer without a path, or once finished): after a write error, for
    /// ``MCAPRecovery/finish(_:as:)`` to keep what is whole. The writer can be used no more.
    public func keepUnfinished() -> String? {
        guard !isFinished else { return nil }
        isFinished = true
        return file?.keepUnfinished()
    }

    /// Adds a schema; returns its id (from 1).
    public func addSchema(name: String, encoding: String, data: [UInt8]) throws(MCAPWriteError) -> UInt16 {
        guard !isFinished else { throw .finished }
        guard schemas.count < Int(UInt16.max) else { throw .tooMany("schemas") }
        let schema = Schema(id: UInt16(schemas.count + 1), name: name, encoding: encoding, data: data)
        schemas.append(schema)
        try emitData(Self.record(schema))
        return schema.id
    }

    /// Adds a channel whose messages follow schema `schemaID` (0: none); returns its id (from 0).
    public func addChannel(schemaID: UInt16, topic: String, messageEncoding: String,
                           metadata: [String: String] = [:]) throws(MCAPWriteError) -> UInt16 {
        guard !isFinished else { throw .finished }
        guard schemaID == 0 || Int(schemaID) <= schemas.count else { throw .unknownSchema(schemaID) }
        guard channels.count <= Int(UInt16.max) else { throw .tooMany("channels") }
        let channel = Channel(id: UInt16(channels.count), schemaID: schemaID, topic: topic, messageEncoding: messageEncoding,
                              metadata: metadata)
        channels.append(channel)
        try emitData(Self.record(channel))
        return channel.id
    }

    /// Adds one message on `channel`, logged at `logTime` (nanoseconds).
    public func addMessage(channel: UInt16, sequence: UInt32, logTime: UInt64, publishTime: UInt64,
                           data: UnsafeRawBufferPointer) throws(MCAPWriteError) {
        guard !isFinished else { throw .finished }
        guard Int(channel) < channels.count else { throw .unknownChannel(channel) }
        chunkIndex[channel, default: []].append((logTime, UInt64(chunk.count)))
        var fields = MCAPFieldWriter()
        fields.u8(MCAPFormat.Opcode.message.rawValue)
        fields.u64(UInt64(2 + 4 + 8 + 8 + data.count))
        fields.u16(channel)
        fields.u32(sequence)
        fields.u64(logTime)
        fields.u64(publishTime)
        chunk += fields.bytes
        chunk.append(contentsOf: data)
        chunkStart = min(chunkStart, logTime)
        chunkEnd = max(chunkEnd, logTime)
        startTime = min(startTime, logTime)
        endTime = max(endTime, logTime)
        messageCount += 1
        messageCounts[channel, default: 0] += 1
        if chunk.count >= chunkSize || chunkEnd - chunkStart >= chunkNanoseconds { try closeChunk() }
    }

    /// Adds one message on `channel`, logged at `logTime` (nanoseconds).
    public func addMessage(channel: UInt16, sequence: UInt32, logTime: UInt64, publishTime: UInt64,
                           data: [UInt8]) throws(MCAPWriteError) {
        try withBytes(data) { (bytes) throws(MCAPWriteError) in
            try addMessage(channel: channel, sequence: sequence, logTime: logTime, publishTime: publishTime, data: bytes)
        }
    }

    /// Closes the last chunk, writes the data section's end, the summary, the summary
    /// offsets and the footer, and (for a path) renames the file into place.
    public func finish() throws(MCAPWriteError) {
        guard !isFinished else { throw .finished }
        try closeChunk()
        isFinished = true
        try emit(MCAPFieldWriter.record(.dataEnd) { $0.u32(dataCRC.value) })

        let summaryStart = offset
        var summaryCRC = CRC32()
        var groups: [(MCAPFormat.Opcode, UInt64, UInt64)] = []
        func group(_ opcode: MCAPFormat.Opcode, _ records: [[UInt8]]) throws(MCAPWriteError) {
            guard !records.isEmpty else { return }
            let start = offset
            for record in records {
                summaryCRC.update(record)
                try emit(record)
            }
            groups.append((opcode, start, offset - start))
        }
        try group(.schema, schemas.map(Self.record))
        try group(.channel, channels.map(Self.record))
        let statistics = MCAPFieldWriter.record(.statistics) { s in
            s.u64(messageCount)
            s.u16(UInt16(schemas.count))
            s.u32(UInt32(channels.count))
            s.u32(0)  // attachments
            s.u32(0)  // metadata
            s.u32(UInt32(chunkIndexes.count))
            s.u64(messageCount == 0 ? 0 : startTime)
            s.u64(endTime)
            s.map(messageCounts.sorted { $0.key < $1.key }, key: { $0.u16($1) }, value: { $0.u64($1) })
        }
        try group(.statistics, [statistics])
        try group(.chunkIndex, chunkIndexes)

        let summaryOffsetStart = offset
        for (opcode, start, length) in groups {
            let record = MCAPFieldWriter.record(.summaryOffset) { $0.u8(opcode.rawValue); $0.u64(start); $0.u64(length) }
            summaryCRC.update(record)
            try emit(record)
        }
        // The footer's CRC covers the summary, the summary offsets and the footer up to itself.
        var footer = MCAPFieldWriter()
        footer.u8(MCAPFormat.Opcode.footer.rawValue)
        footer.u64(20)
        footer.u64(groups.isEmpty ? 0 : summaryStart)
        footer.u64(groups.isEmpty ? 0 : summaryOffsetStart)
        summaryCRC.update(footer.bytes)
        footer.u32(summaryCRC.value)
        try emit(footer.bytes)
        try emit(MCAPFormat.magic)
        do { try commit() } catch { throw .cannotWrite(error) }
    }

    // MARK: Records

    private static func record(_ schema: Schema) -> [UInt8] {
        MCAPFieldWriter.record(.schema) { $0.u16(schema.id); $0.string(schema.name); $0.string(schema.encoding); $0.data32(schema.data) }
    }

    private static func record(_ channel: Channel) -> [UInt8] {
        MCAPFieldWriter.record(.channel) { c in
            c.u16(channel.id)
            c.u16(channel.schemaID)
            c.string(channel.topic)
            c.string(channel.messageEncoding)
            c.map(channel.metadata.sorted { $0.key < $1.key }, key: { $0.string($1) }, value: { $0.string($1) })
        }
    }

    /// Writes the chunk being filled, then one message index per channel in it, and keeps
    /// its chunk index for the summary.
    private func closeChunk() throws(MCAPWriteError) {
        guard !chunk.isEmpty else { return }
        let records = chunk
        let crc = records.withUnsafeBytes { CRC32.of($0) }
        let stored = compression == .zstd ? Self.zstd(records) : records
        let name = compression == .zstd ? "zstd" : ""
        let chunkStartOffset = offset
        try emitData(MCAPFieldWriter.record(.chunk) { c in
            c.u64(chunkStart)
            c.u64(chunkEnd)
            c.u64(UInt64(records.count))
            c.u32(crc)
            c.string(name)
            c.u64(UInt64(stored.count))
            c.bytes += stored
        })
        let summary = ChunkSummary(start: chunkStart, end: chunkEnd, offset: chunkStartOffset, length: offset - chunkStartOffset,
                                   compression: name, storedSize: UInt64(stored.count), size: UInt64(records.count))
        var indexOffsets: [(UInt16, UInt64)] = []
        let indexStart = offset
        for (channel, entries) in chunkIndex.sorted(by: { $0.key < $1.key }) {
            indexOffsets.append((channel, offset))
            try emitData(MCAPFormat.messageIndex(channel: channel, entries: entries))
        }
        chunkIndexes.append(summary.indexRecord(indexOffsets: indexOffsets, indexesLength: offset - indexStart))
        chunk.removeAll(keepingCapacity: true)
        chunkIndex.removeAll(keepingCapacity: true)
        (chunkStart, chunkEnd) = (.max, 0)
        // Handed to the system now: a kill from here on leaves this chunk in the file.
        if let file { do { try file.flush() } catch { throw .cannotWrite(error) } }
    }

    /// A chunk's place and fields, as its Chunk Index record gives them.
    struct ChunkSummary {
        var start: UInt64, end: UInt64, offset: UInt64, length: UInt64
        var compression: String
        var storedSize: UInt64, size: UInt64

        /// The Chunk Index record, with the offsets of the chunk's message indexes.
        func indexRecord(indexOffsets: [(UInt16, UInt64)], indexesLength: UInt64) -> [UInt8] {
            MCAPFieldWriter.record(.chunkIndex) { c in
                c.u64(start)
                c.u64(end)
                c.u64(offset)
                c.u64(length)
                c.map(indexOffsets, key: { $0.u16($1) }, value: { $0.u64($1) })
                c.u64(indexesLength)
                c.string(compression)
                c.u64(storedSize)
                c.u64(size)
            }
        }
    }

    /// What a writer resuming an unfinished file needs to know of its data section
    /// (``MCAPRecovery`` reads it): where it ends and its CRC so far, its schemas and
    /// channels, and its chunks' index records, message counts and time span.
    struct ResumedState {
        var offset: UInt64 = 0
        var dataCRC = CRC32()
        var schemas: [Schema] = []
        var channels: [Channel] = []
        var chunkIndexes: [[UInt8]] = []
        var messageCount: UInt64 = 0
        var messageCounts: [UInt16: UInt64] = [:]
        var startTime = UInt64.max, endTime: UInt64 = 0

        /// True for 0 (no schema) and a schema already read.
        func knows(schemaID: UInt16) -> Bool { schemaID == 0 || schemas.contains { $0.id == schemaID } }

        mutating func addChunk(_ chunk: ChunkSummary, indexOffsets: [(UInt16, UInt64)], indexesLength: UInt64) {
            chunkIndexes.append(chunk.indexRecord(indexOffsets: indexOffsets, indexesLength: indexesLength))
        }

        mutating func count(_ channel: UInt16, messages: UInt64) {
            messageCount += messages
            messageCounts[channel, default: 0] += messages
        }

        mutating func span(_ start: UInt64, _ end: UInt64) {
            (startTime, endTime) = (min(startTime, start), max(endTime, end))
        }
    }

    /// `bytes` as one zstd frame (level 3), its content size in its header.
    private static func zstd(_ bytes: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: ZSTD_compressBound(bytes.count))
        let written = out.withUnsafeMutableBytes { o in
            bytes.withUnsafeBytes { i in ZSTD_compress(o.baseAddress, o.count, i.baseAddress, i.count, 3) }
        }
        // Compressing into a buffer of ZSTD_compressBound cannot fail but for memory.
        precondition(ZSTD_isError(written) == 0, "zstd: \(String(cString: ZSTD_getErrorName(written)))")
        out.removeLast(out.count - written)
        return out
    }

    // MARK: Output

    /// Writes bytes of the data section (counted in its CRC).
    private func emitData(_ bytes: [UInt8]) throws(MCAPWriteError) {
        dataCRC.update(bytes)
        try emit(bytes)
    }

    private func emit(_ bytes: [UInt8]) throws(MCAPWriteError) {
        do throws(FileAccessError) {
            try withBytes(bytes) { (raw) throws(FileAccessError) in try output(raw) }
        } catch { throw .cannotWrite(error) }
        offset += UInt64(bytes.count)
    }
}
