import Foundation
import ParallaxGeometry

/// Why an interrupted MCAP file could not be finished.
public struct MCAPRecoveryError: Error, Sendable, CustomStringConvertible {
    /// The unfinished file.
    public var file: String
    /// What is wrong, as a sentence.
    public var reason: String
    /// True when the file held nothing whole to keep (it is then as it was, and of no use).
    public var keptNothing = false

    /// An error about `file`.
    public init(file: String, reason: String, keptNothing: Bool = false) {
        (self.file, self.reason, self.keptNothing) = (file, reason, keptNothing)
    }

    /// `FILE: reason`.
    public var description: String { "\(file): \(reason)" }
}

/// Finishes an MCAP file that a recording left without its summary: a process killed while
/// it wrote, or a write that failed on a full disk.
///
/// ``MCAPWriter`` writes chunk after chunk, each followed by its message indexes, and the
/// summary only at the end; so such a file is whole up to some chunk. Recovery reads it
/// from the start and keeps every record up to the last chunk that is whole and checks out
/// (its length within the file, its records decompressed and matching its CRC-32), writes
/// that chunk's message indexes again if they were cut, then the data section's end, the
/// summary (schemas, channels, statistics, chunk indexes) and the footer, in place: the cut
/// tail is the only thing dropped, and nothing is copied. The file then reads as any
/// finished bag does, with its summary, in Parallax and in other MCAP readers.
public enum MCAPRecovery {
    /// What a recovered file holds.
    public struct Outcome: Sendable {
        /// The finished file.
        public var path: String
        /// The topics (in the order their channels were defined), their types and messages,
        /// and the span of the log times kept.
        public var contents: MCAPRecorder.BagContents
        /// Whole chunks kept.
        public var chunks: Int
        /// Bytes of the cut tail that were dropped (a chunk cut short by the kill).
        public var droppedBytes: Int

        /// Pairs kept: the fewer of the two sides' images (a chunk may end between them).
        public var pairs: Int {
            let images = contents.topics.filter { $0.type.hasPrefix("sensor_msgs/msg/") && $0.type.hasSuffix("Image") }
            let bySide = ["/stereo/left/", "/stereo/right/"].map { side in
                images.filter { $0.name.hasPrefix(side) }.reduce(0) { $0 + $1.messages }
            }
            return bySide.min() ?? 0
        }
    }

    /// Finishes the unfinished MCAP file at `partial` in place and moves it to `target`,
    /// never over a file that is there (then to ``recoveredName(for:pid:)``'s name beside it).
    ///
    /// - Throws: ``MCAPRecoveryError`` when the file has no whole chunk to keep (it is then
    ///   left as it was), is not an MCAP file, or cannot be written or renamed.
    public static func finish(_ partial: String, as target: String) throws(MCAPRecoveryError) -> Outcome {
        let scan = try Scan(path: partial)
        guard scan.chunks > 0 else {
            throw MCAPRecoveryError(file: partial, reason: "holds no whole chunk of messages (\(scan.size) bytes): nothing to keep",
                                    keptNothing: true)
        }
        try scan.writeEnd()
        let destination = try moveIntoPlace(partial, target)
        return Outcome(path: destination, contents: scan.contents, chunks: scan.chunks, droppedBytes: scan.size - scan.cut)
    }

    /// The name a recovered bag takes when `target` is taken: `NAME.recovered-PID.mcap`.
    public static func recoveredName(for target: String, pid: Int32) -> String {
        let stem = target.lowercased().hasSuffix(".mcap") ? String(target.dropLast(5)) : target
        return stem + ".recovered-\(pid).mcap"
    }

    /// The unfinished MCAP files beside `path` that processes which are gone were writing:
    /// `FileAccess`'s temporaries `PATH.partial-PID` (and `-N`), with their PIDs.
    public static func interrupted(beside path: String) -> [(path: String, pid: Int32)] {
        let folder = (path as NSString).deletingLastPathComponent
        let prefix = (path as NSString).lastPathComponent + ".partial-"
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: folder.isEmpty ? "." : folder)) ?? []
        return entries.filter { $0.hasPrefix(prefix) }.sorted().compactMap { entry in
            let digits = entry.dropFirst(prefix.count).prefix { $0.isNumber }
            guard let pid = Int32(digits), pid != getpid(), kill(pid, 0) != 0, errno == ESRCH else { return nil }
            return ((folder.isEmpty ? "" : folder + "/") + entry, pid)
        }
    }

    /// Finishes every unfinished MCAP file beside `path` whose process is gone, each under
    /// ``recoveredName(for:pid:)`` (the path itself is left to the recording about to start);
    /// returns what was done, a sentence each. A file with nothing whole in it is removed (and
    /// said); one that cannot be finished is left as it is (and said).
    public static func recoverInterrupted(beside path: String) -> [String] {
        interrupted(beside: path).map { found -> String in
            let name = (found.path as NSString).lastPathComponent
            do throws(MCAPRecoveryError) {
                let outcome = try finish(found.path, as: recoveredName(for: path, pid: found.pid))
                return "recovered \(outcome.pairs) pairs (\(outcome.chunks) chunks) from \(name), the unfinished bag of a recording "
                    + "that was killed, into \(outcome.path)"
            } catch {
                if error.keptNothing, unlink(found.path) == 0 {
                    return "removed \(name), the unfinished bag of a recording that was killed before it wrote a whole chunk"
                }
                return "could not recover \(name), the unfinished bag of a recording that was killed: \(error.reason); it was left as it is"
            }
        }
    }

    /// Renames `partial` to `target`, or to the recovered name when `target` exists: never
    /// over a file (link, then unlink, so the check and the move are one step).
    private static func moveIntoPlace(_ partial: String, _ target: String) throws(MCAPRecoveryError) -> String {
        // The process that wrote it: the digits after ".partial-" in FileAccess's temporary names.
        let marker = partial.range(of: ".partial-", options: .backwards)
        let pid = marker.flatMap { Int32(partial[$0.upperBound...].prefix { $0.isNumber }) } ?? getpid()
        for destination in [target, recoveredName(for: target, pid: pid)] {
            if link(partial, destination) == 0 {
                unlink(partial)
                return destination
            }
            guard errno == EEXIST else {
                throw MCAPRecoveryError(file: partial, reason: "finished, but cannot be moved to \(destination): "
                                        + String(cString: strerror(errno)) + "; it is whole where it is")
            }
        }
        throw MCAPRecoveryError(file: partial, reason: "finished, but \(target) and \(recoveredName(for: target, pid: pid)) "
                                + "both exist; it is whole where it is")
    }

    // MARK: Reading what is whole

    /// One pass over the file's records: what is whole, and where to cut.
    private struct Scan {
        let path: String
        let size: Int
        /// Where the kept records end.
        private(set) var cut: Int
        private(set) var chunks = 0
        private(set) var contents = MCAPRecorder.BagContents()
        private var state = MCAPWriter.ResumedState()
        /// Message indexes written again for the last chunk when its own were cut.
        private var rebuiltIndexes: [UInt8] = []

        init(path: String) throws(MCAPRecoveryError) {
            self.path = path
            cut = 0
            // Mapped read-only, as MCAPFile reads bags: hours of recording are not copied.
            guard let file = FileDescriptor(opening: path, flags: O_RDONLY | O_CLOEXEC | O_NONBLOCK) else {
                throw MCAPRecoveryError(file: path, reason: "cannot be opened: " + String(cString: strerror(errno)))
            }
            guard let status = file.status(), status.st_mode & S_IFMT == S_IFREG else {
                throw MCAPRecoveryError(file: path, reason: "is not a regular file")
            }
            size = Int(status.st_size)
            guard size > 0 else { throw MCAPRecoveryError(file: path, reason: "is empty: nothing to keep", keptNothing: true) }
            guard let mapped = mmap(nil, size, PROT_READ, MAP_PRIVATE, file.rawValue, 0), mapped != MAP_FAILED else {
                throw MCAPRecoveryError(file: path, reason: "cannot be mapped: " + String(cString: strerror(errno)))
            }
            defer { munmap(mapped, size) }
            try read(UnsafeRawBufferPointer(start: mapped, count: size))
        }

        private func fail(_ reason: String) -> MCAPRecoveryError { MCAPRecoveryError(file: path, reason: reason) }

        private mutating func read(_ raw: UnsafeRawBufferPointer) throws(MCAPRecoveryError) {
            let magic = MCAPFormat.magic
            guard raw.count >= magic.count, Array(raw.prefix(magic.count)) == magic else {
                throw fail("not an MCAP file (no MCAP magic at the start)")
            }
            guard let header = wholeRecord(at: magic.count, in: raw, end: raw.count), header.opcode == MCAPFormat.Opcode.header.rawValue else {
                throw fail("its Header record is missing or cut short")
            }
            var at = header.content.upperBound
            cut = at
            /// The chunk whose message indexes are being read: its parts for the chunk index.
            var pending: OpenChunk?
            func close(_ chunk: OpenChunk, indexesEnd: Int) {
                state.addChunk(chunk.summary, indexOffsets: chunk.indexOffsets, indexesLength: UInt64(indexesEnd - chunk.indexesStart))
                chunks += 1
                cut = indexesEnd
            }
            scan: while let record = wholeRecord(at: at, in: raw, end: raw.count) {
                var fields = MCAPFieldReader(raw, from: record.content.lowerBound, to: record.content.upperBound)
                let opcode = MCAPFormat.Opcode(rawValue: record.opcode)
                if opcode == .messageIndex, var chunk = pending {
                    guard let channel = try? fields.u16("channel_id"), chunk.index[channel] != nil else { break scan }
                    chunk.indexOffsets.append((channel, UInt64(at)))
                    pending = chunk
                    at = record.content.upperBound
                    if chunk.indexOffsets.count == chunk.index.count {
                        close(chunk, indexesEnd: at)
                        pending = nil
                    }
                    continue
                }
                // Anything else after a chunk: its indexes were whole (the writer moved on).
                guard pending == nil else { break scan }
                switch opcode {
                case .schema:
                    guard let schema = try? MCAPFile.schema(&fields) else { break scan }
                    state.schemas.append(schema)
                case .channel:
                    guard let channel = try? MCAPFile.channel(&fields), state.knows(schemaID: channel.schemaID) else { break scan }
                    state.channels.append(channel)
                case .chunk:
                    guard let chunk = try? OpenChunk(&fields, at: at, end: record.content.upperBound, raw: raw, state: &state) else {
                        break scan
                    }
                    if chunk.index.isEmpty {
                        state.addChunk(chunk.summary, indexOffsets: [], indexesLength: 0)
                        chunks += 1
                        cut = record.content.upperBound
                    } else {
                        pending = chunk
                    }
                default:
                    // Data End and the summary (a finish cut short), or records this writer
                    // never puts in a data section: the data ends before them.
                    break scan
                }
                at = record.content.upperBound
                if pending == nil { cut = at }
            }
            if var chunk = pending {
                // The kill fell among the last chunk's message indexes: cut them and write
                // them again from the chunk's own records.
                cut = chunk.indexesStart
                chunk.indexOffsets = []
                var offset = UInt64(cut)
                for (channel, entries) in chunk.index.sorted(by: { $0.key < $1.key }) {
                    let record = MCAPFormat.messageIndex(channel: channel, entries: entries)
                    chunk.indexOffsets.append((channel, offset))
                    offset += UInt64(record.count)
                    rebuiltIndexes += record
                }
                state.addChunk(chunk.summary, indexOffsets: chunk.indexOffsets, indexesLength: UInt64(rebuiltIndexes.count))
                chunks += 1
            }
            state.dataCRC.update(UnsafeRawBufferPointer(rebasing: raw[0..<cut]))
            state.offset = UInt64(cut)
            // The kept messages, by topic in the order the channels were defined.
            for channel in state.channels {
                let count = Int(state.messageCounts[channel.id] ?? 0)
                guard count > 0 else { continue }
                let type = state.schemas.first { $0.id == channel.schemaID }?.name ?? ""
                contents.topics.append(.init(name: channel.topic, type: type, messages: count))
            }
            if state.messageCount > 0 { (contents.firstLogTime, contents.lastLogTime) = (state.startTime, state.endTime) }
        }

        /// Cuts the file after its last whole record, then writes the rebuilt indexes, the
        /// data section's end, the summary and the footer, and flushes it to the disk.
        func writeEnd() throws(MCAPRecoveryError) {
            guard let file = FileDescriptor(opening: path, flags: O_WRONLY | O_CLOEXEC) else {
                throw fail("cannot be opened for writing: " + String(cString: strerror(errno)))
            }
            guard ftruncate(file.rawValue, off_t(cut)) == 0, lseek(file.rawValue, 0, SEEK_END) == off_t(cut) else {
                throw fail("cannot be cut after its last whole chunk: " + String(cString: strerror(errno)))
            }
            let writer = MCAPWriter(resuming: state, output: { bytes throws(FileAccessError) in
                guard file.writeAll(bytes) else {
                    throw .cannotWrite(path: path, reason: String(cString: strerror(errno)))
                }
            })
            do {
                try writer.appendData(rebuiltIndexes)
                try writer.finish()
            } catch {
                throw fail("its summary cannot be written: \(error)")
            }
            guard file.sync(), file.close() else { throw fail("cannot be flushed to the disk: " + String(cString: strerror(errno))) }
        }
    }

    /// A whole chunk: its summary fields and, per channel, its messages' (log time, offset).
    private struct OpenChunk {
        var summary: MCAPWriter.ChunkSummary
        var index: [UInt16: [(UInt64, UInt64)]] = [:]
        var indexOffsets: [(UInt16, UInt64)] = []
        let indexesStart: Int

        /// Reads the chunk record's fields at `at`, decompresses and checks its records and
        /// counts its messages into `state`; throws when anything does not check out.
        init(_ f: inout MCAPFieldReader, at: Int, end: Int, raw: UnsafeRawBufferPointer,
             state: inout MCAPWriter.ResumedState) throws {
            struct Damaged: Error {}
            let start = try f.u64("message_start_time"), stop = try f.u64("message_end_time")
            let size = try f.u64("uncompressed_size"), crc = try f.u32("uncompressed_crc")
            let compression = try f.string("compression")
            let records = try f.range64("records")
            let stored = UnsafeRawBufferPointer(rebasing: raw[records])
            var decompressed: [UInt8] = []
            switch compression {
            case "":
                guard UInt64(stored.count) == size else { throw Damaged() }
            case "zstd":
                guard size <= UInt64(MCAPFile.largestChunk) else { throw Damaged() }
                decompressed = try MCAPFile.zstdChunk(stored, size: Int(size))
            default:
                throw Damaged()
            }
            var index: [UInt16: [(UInt64, UInt64)]] = [:]
            var counted: [UInt16: UInt64] = [:]
            try (compression.isEmpty ? stored : nil).map { try Self.messages(in: $0, crc: crc, into: &index, counts: &counted) }
            try decompressed.withUnsafeBytes { bytes in
                if !compression.isEmpty { try Self.messages(in: bytes, crc: crc, into: &index, counts: &counted) }
            }
            guard index.keys.allSatisfy({ id in state.channels.contains { $0.id == id } }) else { throw Damaged() }
            for (channel, count) in counted { state.count(channel, messages: count) }
            if !counted.isEmpty { state.span(start, stop) }
            self.index = index
            indexesStart = end
            summary = MCAPWriter.ChunkSummary(start: start, end: stop, offset: UInt64(at), length: UInt64(end - at),
                                              compression: compression, storedSize: UInt64(stored.count), size: size)
        }

        /// The messages among a chunk's records (after their CRC-32 is checked).
        private static func messages(in content: UnsafeRawBufferPointer, crc: UInt32, into index: inout [UInt16: [(UInt64, UInt64)]],
                                     counts: inout [UInt16: UInt64]) throws {
            struct Damaged: Error {}
            guard crc == 0 || CRC32.of(content) == crc else { throw Damaged() }
            var at = 0
            while at < content.count {
                guard let record = wholeRecord(at: at, in: content, end: content.count) else { throw Damaged() }
                if record.opcode == MCAPFormat.Opcode.message.rawValue {
                    var f = MCAPFieldReader(content, from: record.content.lowerBound, to: record.content.upperBound)
                    let channel = try f.u16("channel_id")
                    _ = try f.u32("sequence")
                    let logTime = try f.u64("log_time")
                    index[channel, default: []].append((logTime, UInt64(at)))
                    counts[channel, default: 0] += 1
                }
                at = record.content.upperBound
            }
        }
    }
}

/// The record at `at`: its opcode and content, or `nil` when it runs past `end`.
private func wholeRecord(at: Int, in raw: UnsafeRawBufferPointer, end: Int) -> (opcode: UInt8, content: Range<Int>)? {
    guard at >= 0, at + MCAPFormat.recordPrefix <= end else { return nil }
    var prefix = MCAPFieldReader(raw, from: at, to: at + MCAPFormat.recordPrefix)
    guard let code = try? prefix.u8("opcode"), let length = try? prefix.u64("length"),
          length <= UInt64(end - at - MCAPFormat.recordPrefix) else { return nil }
    return (code, (at + MCAPFormat.recordPrefix)..<(at + MCAPFormat.recordPrefix + Int(length)))
}
