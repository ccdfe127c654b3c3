import CZstd
import Foundation
import ParallaxGeometry
import Testing
@testable import ParallaxCapture

/// The MCAP container and the ROS 2 messages in it: what is written reads back the same,
/// and every kind of damage is refused with the file, the offset and the reason.
/// (`make test-interop` has independent readers from PyPI read what this writes.)
@Suite("MCAP and ROS 2 messages")
struct MCAPTests {
    /// A small bag: two image topics and their camera info, `count` frames each, in chunks
    /// of `chunkSize` bytes.
    static func sampleBag(count: Int = 5, chunkSize: Int = 512, compression: MCAPWriter.Compression = .none) throws
        -> (bytes: [UInt8], images: [[UInt8]]) {
        var bytes: [UInt8] = []
        let writer = try MCAPWriter(profile: "ros2", chunkSize: chunkSize, compression: compression, output: { bytes.append(contentsOf: $0) })
        let imageSchema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "ros2msg",
                                               data: Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8))
        let infoSchema = try writer.addSchema(name: "sensor_msgs/msg/CameraInfo", encoding: "ros2msg",
                                              data: Array(ROS2.schemas["sensor_msgs/msg/CameraInfo"]!.utf8))
        let left = try writer.addChannel(schemaID: imageSchema, topic: "/stereo/left/image_raw", messageEncoding: "cdr")
        let right = try writer.addChannel(schemaID: imageSchema, topic: "/stereo/right/image_raw", messageEncoding: "cdr")
        let info = try writer.addChannel(schemaID: infoSchema, topic: "/stereo/left/camera_info", messageEncoding: "cdr")
        var images: [[UInt8]] = []
        for n in 0..<count {
            let stamp = Int64(1_000_000_000 + n * 33_333_333)
            let pixels = (0..<(8 * 6)).map { UInt8(truncatingIfNeeded: $0 * 7 + n) }
            images.append(pixels)
            let image = ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: stamp), frameID: "left"), height: 6, width: 8,
                                   encoding: "mono8", step: 8, data: pixels)
            try writer.addMessage(channel: left, sequence: UInt32(n), logTime: UInt64(stamp), publishTime: UInt64(stamp),
                                  data: image.serialized())
            try writer.addMessage(channel: right, sequence: UInt32(n), logTime: UInt64(stamp + 1000), publishTime: UInt64(stamp + 1000),
                                  data: image.serialized())
            let cameraInfo = ROS2.CameraInfo(header: image.header, height: 6, width: 8, distortionModel: "plumb_bob",
                                             d: [0.1, -0.2, 0, 0, 0.01], k: [100, 0, 4, 0, 100, 3, 0, 0, 1],
                                             r: [1, 0, 0, 0, 1, 0, 0, 0, 1], p: [100, 0, 4, 0, 0, 100, 3, 0, 0, 0, 1, 0])
            try writer.addMessage(channel: info, sequence: UInt32(n), logTime: UInt64(stamp), publishTime: UInt64(stamp),
                                  data: cameraInfo.serialized())
        }
        try writer.finish()
        return (bytes, images)
    }

    @Test("what is written reads back, chunks stored or zstd-compressed: header, summary statistics, channels, every message in order",
          arguments: MCAPWriter.Compression.allCases)
    func roundTrip(compression: MCAPWriter.Compression) throws {
        let (bytes, images) = try Self.sampleBag(compression: compression)
        #expect(Array(bytes.prefix(8)) == MCAPFormat.magic && Array(bytes.suffix(8)) == MCAPFormat.magic)
        let file = try MCAPFile(bytes: bytes, name: "sample.mcap")
        #expect(try Self.indexedMessages(bytes) == 15, "the summary's indexes lead to every message")
        #expect(file.profile == "ros2" && file.library.hasPrefix("parallax "))
        let statistics = try #require(file.statistics)
        #expect(statistics.messageCount == 15 && statistics.channelCount == 3 && statistics.schemaCount == 2)
        #expect(statistics.chunkCount > 1, "512-byte chunks: the 15 messages (about 100 bytes each) span several")
        #expect(statistics.channelMessageCounts == [0: 5, 1: 5, 2: 5])
        #expect(statistics.messageStartTime == 1_000_000_000 && statistics.messageEndTime == 1_000_000_000 + 4 * 33_333_333 + 1000)
        var seen: [String: [UInt64]] = [:]
        var decoded: [[UInt8]] = []
        try file.forEachMessage { message in
            seen[message.channel.topic, default: []].append(message.logTime)
            if message.channel.topic == "/stereo/left/image_raw" {
                let image = try ROS2.Image(cdr: message.data)
                #expect(image.width == 8 && image.height == 6 && image.encoding == "mono8" && image.header.frameID == "left")
                #expect(image.header.stamp.nanoseconds == Int64(message.logTime))
                decoded.append(image.data)
            } else if message.channel.topic == "/stereo/left/camera_info" {
                let info = try ROS2.CameraInfo(cdr: message.data)
                #expect(info.d == [0.1, -0.2, 0, 0, 0.01] && info.k[0] == 100 && info.p[10] == 1 && info.distortionModel == "plumb_bob")
            }
        }
        #expect(decoded == images)
        #expect(seen.mapValues(\.count) == ["/stereo/left/image_raw": 5, "/stereo/right/image_raw": 5, "/stereo/left/camera_info": 5])
        #expect(seen["/stereo/left/image_raw"] == seen["/stereo/left/image_raw"]?.sorted())
    }

    /// An unfinished bag (its writer never finished, as a killed recording leaves it), with
    /// where each chunk's record ends and how many messages the chunks up to it hold: the
    /// writer hands each record to its output in one call, so the first output after a
    /// message that closes a chunk is that chunk's record.
    static func unfinishedBag(count: Int, compression: MCAPWriter.Compression) throws
        -> (bytes: [UInt8], messages: [(topic: String, data: [UInt8])], chunkEnds: [(end: Int, messages: Int)]) {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        let writer = try MCAPWriter(profile: "ros2", chunkSize: 700, compression: compression,
                                    output: { bytes.append(contentsOf: $0); ends.append(bytes.count) })
        let schema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "ros2msg",
                                          data: Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8))
        let channels = [try writer.addChannel(schemaID: schema, topic: "/stereo/left/image_raw", messageEncoding: "cdr"),
                        try writer.addChannel(schemaID: schema, topic: "/stereo/right/image_raw", messageEncoding: "cdr")]
        var messages: [(topic: String, data: [UInt8])] = []
        var chunkEnds: [(end: Int, messages: Int)] = []
        for n in 0..<count {
            for (side, channel) in channels.enumerated() {
                let stamp = Int64(1_000_000_000 + n * 33_333_333 + side * 1000)
                let pixels = (0..<48).map { UInt8(truncatingIfNeeded: $0 * 7 + n * 3 + side) }
                let image = ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: stamp), frameID: "s\(side)"), height: 6, width: 8,
                                       encoding: "mono8", step: 8, data: pixels)
                let calls = ends.count
                try writer.addMessage(channel: channel, sequence: UInt32(n), logTime: UInt64(stamp), publishTime: UInt64(stamp),
                                      data: image.serialized())
                messages.append((side == 0 ? "/stereo/left/image_raw" : "/stereo/right/image_raw", image.serialized()))
                if ends.count > calls { chunkEnds.append((ends[calls], messages.count)) }
            }
        }
        return (bytes, messages, chunkEnds)
    }

    /// Every cut from the header to the end (in steps that land in chunks, in their message
    /// indexes and on their boundaries): the finished file opens whole (footer, summary, every
    /// CRC-32 checked), holds exactly the messages of the chunks whose records lie wholly
    /// before the cut, byte for byte and in order, its statistics count them, and its summary's
    /// indexes lead to each of them. Mutations: not writing again the message indexes of a
    /// chunk whose own were cut (the index walk finds none), or leaving that chunk out (too
    /// few messages), fail it.
    @Test("a bag cut anywhere, stored or zstd, is finished up to its last whole chunk: whole on reopening, its messages byte for byte",
          arguments: MCAPWriter.Compression.allCases)
    func recoveryKeepsEveryWholeChunk(compression: MCAPWriter.Compression) throws {
        let (bytes, messages, chunkEnds) = try Self.unfinishedBag(count: 40, compression: compression)
        try #require(chunkEnds.count >= 8, "700-byte chunks: 80 messages of about 120 bytes close several")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mcap-recovery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var checked = 0
        for cut in stride(from: 60, through: bytes.count, by: 23) {
            let partial = folder.appendingPathComponent("cut.mcap.partial-\(cut)").path
            let target = folder.appendingPathComponent("cut-\(cut).mcap").path
            try Data(bytes.prefix(cut)).write(to: URL(fileURLWithPath: partial))
            let expected = chunkEnds.last { $0.end <= cut }?.messages ?? 0
            guard expected > 0 else {
                #expect(throws: MCAPRecoveryError.self) { try MCAPRecovery.finish(partial, as: target) }
                continue
            }
            let outcome = try MCAPRecovery.finish(partial, as: target)
            #expect(outcome.path == target && !FileManager.default.fileExists(atPath: partial))
            #expect(outcome.contents.messageCount == expected, "cut at \(cut)")
            let file = try MCAPFile(path: target)
            #expect(file.isComplete)
            #expect(file.statistics?.messageCount == UInt64(expected), "cut at \(cut)")
            var read: [(String, [UInt8])] = []
            try file.forEachMessage { read.append(($0.channel.topic, Array($0.data))) }
            #expect(read.count == expected)
            #expect(try Self.indexedMessages(try Array(Data(contentsOf: URL(fileURLWithPath: target)))) == expected,
                    "cut at \(cut): the summary's chunk indexes and the message indexes do not lead to every message")
            #expect(zip(read, messages).allSatisfy { $0.0 == $1.topic && $0.1 == $1.data }, "cut at \(cut): contents differ")
            checked += 1
        }
        #expect(checked > 50)
    }

    /// Messages found by following the summary as a seeking reader does (MCAPFile reads in
    /// file order and needs no index): footer → Chunk Index records → each chunk and its
    /// Message Index records → each indexed message inside the chunk's records, with the log
    /// time the index gives. Every step is checked; returns the messages found so.
    static func indexedMessages(_ bytes: [UInt8]) throws -> Int {
        struct Broken: Error, CustomStringConvertible { var description: String }
        func u64(_ at: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * $1) } }
        func u32(_ at: Int) -> Int { Int((0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }) }
        func u16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
        let footer = bytes.count - 8 - 9 - 20
        guard bytes[footer] == 0x02 else { throw Broken(description: "no footer") }
        var at = Int(u64(footer + 9)), end = Int(u64(footer + 17))
        if end == 0 { end = footer }
        var found = 0
        while at < end {
            let (opcode, length, content) = (bytes[at], Int(u64(at + 1)), at + 9)
            defer { at = content + length }
            guard opcode == 0x08 else { continue }  // a Chunk Index
            let start = u64(content), stop = u64(content + 8)
            let chunkAt = Int(u64(content + 16)), chunkLength = Int(u64(content + 24))
            guard bytes[chunkAt] == 0x06, 9 + Int(u64(chunkAt + 1)) == chunkLength else { throw Broken(description: "no chunk at \(chunkAt)") }
            // The chunk's records (stored as they are in these tests' uncompressed bags, or zstd).
            let compressionLength = u32(chunkAt + 9 + 28)
            let compression = String(decoding: bytes[(chunkAt + 9 + 32)..<(chunkAt + 9 + 32 + compressionLength)], as: UTF8.self)
            let recordsAt = chunkAt + 9 + 32 + compressionLength + 8
            let stored = Array(bytes[recordsAt..<(chunkAt + chunkLength)])
            let size = Int(u64(chunkAt + 9 + 16))
            var records = stored
            if compression == "zstd" {
                records = [UInt8](repeating: 0, count: size)
                let n = records.withUnsafeMutableBytes { o in stored.withUnsafeBytes { ZSTD_decompress(o.baseAddress, size, $0.baseAddress, $0.count) } }
                guard n == size else { throw Broken(description: "chunk at \(chunkAt) does not decompress") }
            }
            // Its message indexes: channel → offset of a Message Index record of that channel.
            let mapLength = u32(content + 32)
            var entry = content + 36
            while entry < content + 36 + mapLength {
                let (channel, indexAt) = (u16(entry), Int(u64(entry + 2)))
                entry += 10
                guard bytes[indexAt] == 0x07, u16(indexAt + 9) == channel else { throw Broken(description: "no index of \(channel) at \(indexAt)") }
                let pairs = u32(indexAt + 11)
                for k in 0..<(pairs / 16) {
                    let time = u64(indexAt + 15 + 16 * k), offset = Int(u64(indexAt + 15 + 16 * k + 8))
                    func r64(_ i: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(records[i + $1]) << (8 * $1) } }
                    guard offset + 31 <= records.count, records[offset] == 0x05,
                          UInt16(records[offset + 9]) | UInt16(records[offset + 10]) << 8 == channel,
                          r64(offset + 15) == time, time >= start, time <= stop else {
                        throw Broken(description: "index entry \(k) of channel \(channel) leads to no message logged at \(time)")
                    }
                    found += 1
                }
            }
        }
        return found
    }

    /// The name taken when the target exists, and a file that is not MCAP refused as it is.
    @Test("a recovered bag never replaces a file: NAME.recovered-PID.mcap beside it; a file that is not MCAP is refused and left")
    func recoveryNeverReplaces() throws {
        let (bytes, _, chunkEnds) = try Self.unfinishedBag(count: 10, compression: .none)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("mcap-recovery-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let target = folder.appendingPathComponent("rec.mcap").path
        try Data("the user's".utf8).write(to: URL(fileURLWithPath: target))
        let partial = target + ".partial-4242"
        try Data(bytes).write(to: URL(fileURLWithPath: partial))
        let outcome = try MCAPRecovery.finish(partial, as: target)
        #expect(outcome.path == folder.appendingPathComponent("rec.recovered-4242.mcap").path)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == "the user's")
        #expect(outcome.contents.messageCount == chunkEnds.last!.messages)
        let other = folder.appendingPathComponent("x.mcap.partial-1").path
        try Data("not a bag at all".utf8).write(to: URL(fileURLWithPath: other))
        #expect { try MCAPRecovery.finish(other, as: folder.appendingPathComponent("x.mcap").path) } throws: { error in
            "\(error)".contains("not an MCAP file")
        }
        #expect(FileManager.default.fileExists(atPath: other))
    }

    /// A bag whose topics lie in chunks of their own (all left images, then all right: each
    /// chunk holds one topic, as writers that chunk per topic make), played as two cameras
    /// play it, alternating: each chunk is decompressed once for the index and once for the
    /// playback. Mutation: keeping only the last chunk decompressed (as before) decompresses
    /// for nearly every message (measured: 96 decompressions against 2 × 16 chunks).
    @Test("topics in chunks of their own, read alternately as two cameras read them: each zstd chunk decompressed once")
    func alternatingTopicsDecompressOnce() throws {
        var bytes: [UInt8] = []
        let writer = try MCAPWriter(profile: "ros2", chunkSize: 600, compression: .zstd, output: { bytes.append(contentsOf: $0) })
        let schema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "ros2msg", data: Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8))
        for (side, topic) in ["/stereo/left/image_raw", "/stereo/right/image_raw"].enumerated() {
            let channel = try writer.addChannel(schemaID: schema, topic: topic, messageEncoding: "cdr")
            for n in 0..<40 {
                let stamp = Int64(1_000_000_000 + n * 33_333_333)
                let image = ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: stamp), frameID: topic), height: 6, width: 8,
                                       encoding: "mono8", step: 8, data: (0..<48).map { UInt8(truncatingIfNeeded: $0 + n + side * 100) })
                try writer.addMessage(channel: channel, sequence: UInt32(n), logTime: UInt64(stamp), publishTime: UInt64(stamp),
                                      data: image.serialized())
            }
        }
        try writer.finish()
        let file = try MCAPFile(bytes: bytes, name: "per-topic.mcap")
        let chunks = try #require(file.statistics?.chunkCount)
        let entries = try file.entriesByTopic()
        #expect(file.decompressions.load(ordering: .relaxed) == chunks && chunks >= 8)
        let (left, right) = (try #require(entries["/stereo/left/image_raw"]), try #require(entries["/stereo/right/image_raw"]))
        var pixels: [[UInt8]] = []
        for (l, r) in zip(left, right) {
            for entry in [l, r] { pixels.append(try file.withData(of: entry) { try ROS2.Image(cdr: $0).data }) }
        }
        #expect(pixels.count == 80 && pixels[1] == (0..<48).map { UInt8(truncatingIfNeeded: $0 + 100) } && pixels[78].first == 39)
        #expect(file.decompressions.load(ordering: .relaxed) == 2 * chunks, "each chunk once for the index, once for the playback")
    }

    @Test("messages in zstd chunks are read again by entry, from the chunk decompressed on demand")
    func entriesInCompressedChunks() throws {
        let (bytes, images) = try Self.sampleBag(compression: .zstd)
        let file = try MCAPFile(bytes: bytes, name: "zstd.mcap")
        let entries = try #require(try file.entriesByTopic()["/stereo/left/image_raw"])
        #expect(entries.count == 5 && entries.allSatisfy { $0.compressedChunk != nil })
        // In reverse, so the cached chunk changes between reads.
        for (entry, expected) in zip(entries, images).reversed() {
            let image = try file.withData(of: entry) { try ROS2.Image(cdr: $0) }
            #expect(image.data == expected)
        }
        #expect(bytes.count < (try Self.sampleBag(compression: .none)).bytes.count, "zstd made the bag no smaller")
    }

    /// The decompression deadline: a zstd bag read with one already past is refused at its
    /// first chunk, before any byte of it is decompressed; read with none, or one in the
    /// future, the same bytes read whole (the streaming decompression gives zstd's bytes).
    @Test("a decompression deadline that has passed refuses the chunk it meets; none reads the bag whole")
    func decompressionDeadline() throws {
        let (bytes, images) = try Self.sampleBag(compression: .zstd)
        let late = try MCAPFile(bytes: bytes, name: "late.mcap", decompressionDeadline: monotonicNanoseconds() - 1)
        let error = try #require(throws: MCAPReadError.self) { try late.entriesByTopic() }
        #expect("\(error)".contains("late.mcap: at byte ") && error.reason.contains("the time limit ran out with a zstd chunk of") && error.reason.hasSuffix("bytes to decompress (0 done)"),
                "\(error)")
        for deadline in [nil, monotonicNanoseconds() + 3_600_000_000_000] {
            let file = try MCAPFile(bytes: bytes, name: "zstd.mcap", decompressionDeadline: deadline)
            let entries = try #require(try file.entriesByTopic()["/stereo/left/image_raw"])
            #expect(try entries.map { try file.withData(of: $0) { try ROS2.Image(cdr: $0).data } } == images)
        }
    }

    @Test("ROS 2 time splits nanoseconds into seconds and a nanosecond part below 10⁹, also before the epoch")
    func timeSplits() {
        #expect(ROS2.Time(nanoseconds: 1_500_000_001) == ROS2.Time(sec: 1, nanosec: 500_000_001))
        #expect(ROS2.Time(nanoseconds: -1) == ROS2.Time(sec: -1, nanosec: 999_999_999))
        #expect(ROS2.Time(nanoseconds: -1).nanoseconds == -1)
    }

    /// Each kind of damage, made to a good file, and what the reader must say about it.
    @Test("damage is refused with the offset and the reason: cut short, a bad CRC, a record longer than the file, a compressed chunk, an unknown channel, not MCAP")
    func damageIsRefused() throws {
        let (good, _) = try Self.sampleBag()
        func refusal(_ bytes: [UInt8], truncated: Bool = false) -> MCAPReadError? {
            do {
                let file = try MCAPFile(bytes: bytes, name: "bag.mcap", allowingTruncation: truncated)
                try file.forEachMessage { _ in }
                return nil
            } catch let error as MCAPReadError {
                return error
            } catch {
                Issue.record("not an MCAPReadError: \(error)")
                return nil
            }
        }
        // Not MCAP, or another major version.
        #expect(refusal(Array("hello world, not a bag".utf8))?.reason.contains("not an MCAP file") == true)
        // Found by the fuzz target: the magic's first five bytes alone (the version byte was read past the end).
        #expect(refusal([0x89, 0x4D, 0x43, 0x41, 0x50])?.reason.contains("not an MCAP file") == true)
        #expect(refusal([])?.reason.contains("not an MCAP file") == true)
        var version = good
        version[5] = 0x31
        #expect(refusal(version)?.reason.contains("major version 1 is not 0") == true)
        // Cut short: refused unless truncation is allowed, then the whole records are read.
        let cut = Array(good.prefix(good.count / 2))
        #expect(refusal(cut)?.reason.contains("cut short") == true)
        #expect(refusal(cut, truncated: true) == nil)
        // One byte flipped inside a chunk's records: the chunk's CRC.
        let chunkAt = try #require(Self.offsets(of: .chunk, in: good).first)
        var flipped = good
        flipped[chunkAt + 9 + 8 + 8 + 8 + 4 + 4 + 8 + 40] ^= 0xFF
        let badChunk = try #require(refusal(flipped))
        #expect(badChunk.offset == chunkAt && badChunk.reason.contains("chunk's CRC-32"), "\(badChunk)")
        // A flipped byte in the summary: the footer's CRC.
        var summary = good
        summary[good.count - 8 - 29 - 30] ^= 0x01
        #expect(refusal(summary)?.reason.contains("summary's CRC-32") == true)
        // A record whose length runs past the file.
        var long = good
        long.replaceSubrange((chunkAt + 1)..<(chunkAt + 9), with: withUnsafeBytes(of: UInt64(1 << 40).littleEndian, Array.init))
        let tooLong = try #require(refusal(long))
        #expect(tooLong.offset == chunkAt && tooLong.reason.contains("more than the"), "\(tooLong)")
        // A chunk compressed with something Parallax does not read ("" → "lz4" changes the length: rebuild).
        let lz4 = try Self.rewritingFirstChunk(good) { compression in compression = Array("lz4".utf8) }
        let compressed = try #require(refusal(lz4))
        #expect(compressed.reason.contains("\"lz4\"") && compressed.offset == chunkAt, "\(compressed)")
        // Stored bytes said to be zstd are no zstd frame.
        let notZstd = try Self.rewritingFirstChunk(good) { compression in compression = Array("zstd".utf8) }
        #expect(try #require(refusal(notZstd)).reason.contains("not a zstd frame"))
        // A zstd chunk with a byte of its compressed data changed: it does not decompress, or its CRC fails.
        let (packed, _) = try Self.sampleBag(compression: .zstd)
        let packedChunk = try #require(Self.offsets(of: .chunk, in: packed).first)
        var damaged = packed
        damaged[packedChunk + 9 + 8 + 8 + 8 + 4 + 4 + 4 + 8 + 20] ^= 0x5A
        let broken = try #require(refusal(damaged))
        #expect(broken.offset == packedChunk && (broken.reason.contains("does not decompress") || broken.reason.contains("CRC-32")
                                                 || broken.reason.contains("decompresses to")), "\(broken)")
        // A message on a channel the file never defines.
        var stray = good
        let messageAt = chunkAt + 9 + 8 + 8 + 8 + 4 + 4 + 8  // the chunk's first record
        let firstMessage = try #require(Self.firstMessage(in: stray, from: messageAt))
        stray[firstMessage + 9] = 0x63  // channel 99
        stray[firstMessage + 10] = 0
        let unknown = try #require(refusal(Self.recomputingChunkCRC(stray, chunkAt: chunkAt)))
        #expect(unknown.reason.contains("channel 99") && unknown.offset == firstMessage, "\(unknown)")
        #expect(unknown.description.hasPrefix("bag.mcap: at byte \(firstMessage): "))
    }

    /// Each check of the reader fed exactly its defect, in a file built record by record
    /// (``MCAPRecords``), beside the same file without it, which reads.
    @Test("each refusal fed exactly its defect: the data section's CRC, a first record that is no Header, a schema or channel defined twice, a channel naming no schema, a chunk's or a zstd chunk's size, footer offsets outside the file, records running past their chunk or the summary")
    func everyRefusalHasItsDefect() throws {
        typealias R = MCAPRecords
        func refusal(_ bytes: [UInt8]) -> String? {
            do {
                let file = try MCAPFile(bytes: bytes, name: "bag.mcap")
                try file.forEachMessage { _ in }
                return nil
            } catch let error as MCAPReadError {
                return error.description
            } catch {
                return "not an MCAPReadError: \(error)"
            }
        }
        let defined = R.schema(id: 1, name: "sensor_msgs/msg/Image") + R.channel(id: 1, schema: 1, topic: "/left")
        let body = defined + R.message(channel: 1)
        // The control: well formed, its data section's CRC right, a schema and channel repeated
        // as they were, and a message delivered.
        let good = R.file(defined + body, dataCRC: R.dataCRC(of: defined + body))
        #expect(refusal(good) == nil)
        var delivered = 0
        try MCAPFile(bytes: good, name: "bag.mcap").forEachMessage { message in
            delivered += 1
            #expect(message.channel.topic == "/left" && Array(message.data) == [1, 2, 3])
        }
        #expect(delivered == 1)

        func expectRefusal(_ bytes: [UInt8], _ phrase: String, _ what: String) {
            let message = refusal(bytes)
            #expect(message?.contains(phrase) == true, "\(what): \(message ?? "read without complaint")")
        }
        expectRefusal(R.file(body, dataCRC: R.dataCRC(of: body) ^ 1), "the data section's CRC-32", "a data section CRC one bit off")
        expectRefusal(R.file(body, first: R.schema(id: 1, name: "x")), "the first record is not a Header", "a Schema first")
        expectRefusal(R.file(R.schema(id: 1, name: "a") + R.schema(id: 1, name: "b")), "schema 1 is defined twice, differently",
                      "schema 1 twice")
        expectRefusal(R.file(defined + R.channel(id: 1, schema: 1, topic: "/right")), "channel 1 is defined twice, differently",
                      "channel 1 twice")
        expectRefusal(R.file(R.channel(id: 1, schema: 7, topic: "/left")), "names schema 7, which is not defined before it",
                      "a channel on schema 7")
        expectRefusal(R.file(R.chunk(body, uncompressedSize: UInt64(body.count + 1))),
                      "a chunk of \(body.count) bytes says it holds \(body.count + 1)", "a stored chunk's size one more")
        expectRefusal(R.file(R.chunk(body, compression: "zstd", uncompressedSize: 1 << 31)), "at most 1 GiB", "a zstd chunk of 2 GiB")
        // A real zstd chunk whose stated size is one more than its frame's.
        let (packed, _) = try Self.sampleBag(compression: .zstd)
        let chunkAt = try #require(Self.offsets(of: .chunk, in: packed).first)
        let sizeAt = chunkAt + MCAPFormat.recordPrefix + 16
        let size = packed[sizeAt..<(sizeAt + 8)].reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        var oversized = packed
        oversized.replaceSubrange(sizeAt..<(sizeAt + 8), with: R.u64(size + 1))
        expectRefusal(oversized, "says it holds \(size + 1) bytes, its frame \(size)", "a zstd chunk's size one more")
        expectRefusal(R.file(body, footer: (1 << 40, 0, 0)), "the footer's summary offsets (1099511627776, 0) lie outside the file",
                      "a summary a terabyte in")
        // Inside a chunk: a record whose prefix does not fit, and one longer than what is left.
        expectRefusal(R.file(R.chunk(body + [0x05, 0x01])), "runs past the chunk", "two bytes after the chunk's last record")
        expectRefusal(R.file(R.chunk([MCAPFormat.Opcode.message.rawValue] + R.u64(1000) + [1, 2, 3])),
                      "a record of 1000 bytes, more than the 3 left", "a message said to be longer than its chunk")
        // In the summary: a record whose prefix does not fit before the footer.
        expectRefusal(R.file(body, summary: [0x03, 0x01, 0x00]), "a summary record runs past the summary", "three bytes of summary")
        #expect(refusal(R.file(body, summary: R.schema(id: 1, name: "sensor_msgs/msg/Image"))) == nil)
    }

    @Test("CDR that does not decode names its field: a short image, data that is not height × step, big-endian CDR")
    func cdrDamage() throws {
        let image = ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: 5), frameID: "f"), height: 2, width: 2, encoding: "mono8",
                               step: 2, data: [1, 2, 3, 4])
        let bytes = image.serialized()
        #expect(try bytes.withUnsafeBytes { try ROS2.Image(cdr: $0) } == image)
        let short = Array(bytes.dropLast(3))
        #expect(throws: CDRError.self) { try short.withUnsafeBytes { try ROS2.Image(cdr: $0) } }
        var lying = bytes
        lying[lying.count - 12] = 3  // step 3: its low byte sits before data's count (4) and its 4 bytes
        let mismatch = try #require(throws: CDRError.self) { try lying.withUnsafeBytes { try ROS2.Image(cdr: $0) } }
        #expect(mismatch.field == "data" && mismatch.reason.contains("height × step"), "\(mismatch)")
        var bigEndian = bytes
        bigEndian[1] = 0
        let be = try #require(throws: CDRError.self) { try bigEndian.withUnsafeBytes { try ROS2.Image(cdr: $0) } }
        #expect(be.reason.contains("big-endian"))
    }

    @Test("the ros2msg schemas name each type they use, after a line of = and MSG:")
    func schemasListTheirDependencies() throws {
        let info = try #require(ROS2.schemas["sensor_msgs/msg/CameraInfo"])
        #expect(info.hasPrefix("std_msgs/Header header\n"))
        for dependency in ["std_msgs/Header", "builtin_interfaces/Time", "sensor_msgs/RegionOfInterest"] {
            #expect(info.contains(String(repeating: "=", count: 80) + "\nMSG: \(dependency)\n"), "\(dependency)")
        }
    }

    // MARK: Helpers that edit files

    /// Offsets of the records with `opcode` in the data section (records walked from the header).
    static func offsets(of opcode: MCAPFormat.Opcode, in bytes: [UInt8]) -> [Int] {
        var found: [Int] = []
        var at = 8
        while at + 9 <= bytes.count {
            let length = bytes[(at + 1)..<(at + 9)].reversed().reduce(0) { $0 << 8 | Int($1) }
            if bytes[at] == opcode.rawValue { found.append(at) }
            if bytes[at] == MCAPFormat.Opcode.footer.rawValue { break }
            at += 9 + length
        }
        return found
    }

    /// The first Message record from `start` on (inside a chunk's records).
    static func firstMessage(in bytes: [UInt8], from start: Int) -> Int? {
        var at = start
        while at + 9 <= bytes.count {
            if bytes[at] == MCAPFormat.Opcode.message.rawValue { return at }
            at += 9 + bytes[(at + 1)..<(at + 9)].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        return nil
    }

    /// The file with the first chunk's CRC recomputed over its (edited) records.
    static func recomputingChunkCRC(_ bytes: [UInt8], chunkAt: Int) -> [UInt8] {
        var out = bytes
        let recordsAt = chunkAt + 9 + 8 + 8 + 8 + 4 + 4 + 8
        let size = bytes[(chunkAt + 9 + 16)..<(chunkAt + 9 + 24)].reversed().reduce(0) { $0 << 8 | Int($1) }
        let crc = bytes[recordsAt..<(recordsAt + size)].withUnsafeBytes { CRC32.of($0) }
        out.replaceSubrange((chunkAt + 9 + 24)..<(chunkAt + 9 + 28), with: withUnsafeBytes(of: crc.littleEndian, Array.init))
        return out
    }

    /// The file with the first chunk's compression string replaced by `edit`'s (lengths fixed;
    /// offsets after it no longer match the summary, which the reader does not need to read
    /// messages in file order).
    static func rewritingFirstChunk(_ bytes: [UInt8], _ edit: (inout [UInt8]) -> Void) throws -> [UInt8] {
        let chunkAt = try #require(offsets(of: .chunk, in: bytes).first)
        let length = bytes[(chunkAt + 1)..<(chunkAt + 9)].reversed().reduce(0) { $0 << 8 | Int($1) }
        let compressionAt = chunkAt + 9 + 28
        var compression: [UInt8] = []
        edit(&compression)
        var content = Array(bytes[(chunkAt + 9)..<compressionAt])
        content += withUnsafeBytes(of: UInt32(compression.count).littleEndian, Array.init) + compression
        content += bytes[(compressionAt + 4)..<(chunkAt + 9 + length)]
        let prefix = [MCAPFormat.Opcode.chunk.rawValue] + withUnsafeBytes(of: UInt64(content.count).littleEndian, Array.init)
        // Drop the summary (its offsets moved): a file whose footer says there is none.
        let dataEnd = try #require(offsets(of: .dataEnd, in: bytes).first)
        var out = Array(bytes[..<chunkAt]) + prefix + content + Array(bytes[(chunkAt + 9 + length)..<dataEnd])
        out += [MCAPFormat.Opcode.dataEnd.rawValue] + withUnsafeBytes(of: UInt64(4).littleEndian, Array.init) + [0, 0, 0, 0]
        out += [MCAPFormat.Opcode.footer.rawValue] + withUnsafeBytes(of: UInt64(20).littleEndian, Array.init) + [UInt8](repeating: 0, count: 20)
        return out + MCAPFormat.magic
    }
}

/// MCAP files built record by record (the specification's layouts: little-endian integers,
/// strings and byte arrays after their length), to feed the reader one defect at a time.
enum MCAPRecords {
    static func u16(_ v: UInt16) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func u32(_ v: UInt32) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func u64(_ v: UInt64) -> [UInt8] { withUnsafeBytes(of: v.littleEndian, Array.init) }
    static func string(_ s: String) -> [UInt8] { u32(UInt32(s.utf8.count)) + Array(s.utf8) }
    static func record(_ opcode: MCAPFormat.Opcode, _ content: [UInt8]) -> [UInt8] {
        [opcode.rawValue] + u64(UInt64(content.count)) + content
    }
    static let header = record(.header, string("ros2") + string("parallax tests"))
    static func schema(id: UInt16, name: String) -> [UInt8] {
        record(.schema, u16(id) + string(name) + string("ros2msg") + u32(0))
    }
    static func channel(id: UInt16, schema: UInt16, topic: String) -> [UInt8] {
        record(.channel, u16(id) + u16(schema) + string(topic) + string("cdr") + u32(0))
    }
    static func message(channel: UInt16) -> [UInt8] {
        record(.message, u16(channel) + u32(0) + u64(1) + u64(1) + [1, 2, 3])
    }
    static func chunk(_ records: [UInt8], compression: String = "", uncompressedSize: UInt64? = nil) -> [UInt8] {
        record(.chunk, u64(1) + u64(1) + u64(uncompressedSize ?? UInt64(records.count)) + u32(0) + string(compression)
               + u64(UInt64(records.count)) + records)
    }
    /// The CRC-32 Data End states for a data section of the header and `records`.
    static func dataCRC(of records: [UInt8]) -> UInt32 { (MCAPFormat.magic + header + records).withUnsafeBytes { CRC32.of($0) } }
    /// Magic, `first` (the header), `records`, Data End, a `summary` if any, the footer, magic.
    /// The footer points at the summary unless `footer` says otherwise.
    static func file(_ records: [UInt8], dataCRC: UInt32 = 0, first: [UInt8] = header, summary: [UInt8] = [],
                     footer: (UInt64, UInt64, UInt32)? = nil) -> [UInt8] {
        let data = MCAPFormat.magic + first + records + record(.dataEnd, u32(dataCRC))
        let offsets = footer ?? (summary.isEmpty ? 0 : UInt64(data.count), 0, 0)
        return data + summary + record(.footer, u64(offsets.0) + u64(offsets.1) + u32(offsets.2)) + MCAPFormat.magic
    }
}

/// A bag's topic played back as a camera: the image layouts ROS 2 uses, rows with padding.
@Suite("Bag topics as cameras")
struct BagTopicDeviceTests {
    @Test("ROS 2 images become packed images: mono8, rgb8 with padded rows, yuv422_yuy2, rgba8 without its alpha; other encodings are refused by name")
    func imagesUnpack() throws {
        let header = ROS2.Header(stamp: ROS2.Time(nanoseconds: 1), frameID: "")
        // 3×2 rgb8 with rows of 12 bytes (3 of padding).
        let padded = ROS2.Image(header: header, height: 2, width: 3, encoding: "rgb8", step: 12,
                                data: [1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 0, 0, 10, 11, 12, 13, 14, 15, 16, 17, 18, 0, 0, 0])
        let rgb = try BagTopicDevice.image(padded)
        #expect(rgb.format == .rgb8 && rgb.bytes == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18])
        let mono = try BagTopicDevice.image(ROS2.Image(header: header, height: 1, width: 2, encoding: "mono8", step: 2, data: [7, 9]))
        #expect(mono.format == .gray8 && mono.bytes == [7, 9])
        let yuyv = try BagTopicDevice.image(ROS2.Image(header: header, height: 1, width: 2, encoding: "yuv422_yuy2", step: 4, data: [1, 2, 3, 4]))
        #expect(yuyv.format == .yuyv && yuyv.bytes == [1, 2, 3, 4])
        let rgba = try BagTopicDevice.image(ROS2.Image(header: header, height: 1, width: 1, encoding: "rgba8", step: 4, data: [9, 8, 7, 255]))
        #expect(rgba.format == .rgb8 && rgba.bytes == [9, 8, 7])
        let sixteen = ROS2.Image(header: header, height: 1, width: 1, encoding: "mono16", step: 2, data: [0, 1])
        #expect(throws: CDRError.self) { try BagTopicDevice.image(sixteen) }
        let short = ROS2.Image(header: header, height: 1, width: 4, encoding: "rgb8", step: 6, data: [UInt8](repeating: 0, count: 6))
        let error = try #require(throws: CDRError.self) { try BagTopicDevice.image(short) }
        #expect(error.field == "step", "\(error)")
    }

    /// An image topic whose schema is named right but whose bytes are not ROS 2's CDR (JSON
    /// messages, a jsonschema schema) is refused by name, as is one topic for both cameras.
    /// Mutation: checking the schema's name alone (as before) accepts the JSON topics, and
    /// decoding their bytes as CDR fails later with a field error that says nothing of why.
    @Test("image topics not in CDR, or one topic for both cameras, are refused naming the topic and the encoding")
    func encodingsChecked() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bag-encodings-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("json.mcap").path
        let writer = try MCAPWriter(path: path, profile: "")
        let cdrSchema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "ros2msg", data: Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8))
        let jsonSchema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "jsonschema", data: Array("{}".utf8))
        let cdr = try writer.addChannel(schemaID: cdrSchema, topic: "/cdr/image", messageEncoding: "cdr")
        let json = try writer.addChannel(schemaID: jsonSchema, topic: "/json/image", messageEncoding: "json")
        let image = ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: 1), frameID: ""), height: 1, width: 2,
                               encoding: "mono8", step: 2, data: [1, 2])
        try writer.addMessage(channel: cdr, sequence: 0, logTime: 1, publishTime: 1, data: image.serialized())
        try writer.addMessage(channel: json, sequence: 0, logTime: 1, publishTime: 1, data: Array(#"{"height":1}"#.utf8))
        try writer.finish()
        let bag = try MCAPBag(path: path)
        #expect { try BagTopicDevice(bag: bag, topic: "/json/image") } throws: { error in
            "\(error)".contains("topic /json/image holds sensor_msgs/msg/Image encoded as json (schema encoding jsonschema)")
        }
        #expect(throws: Never.self) { try BagTopicDevice(bag: bag, topic: "/cdr/image") }
        #expect { try StereoDevice(bag: bag, topics: PerSide(left: "/cdr/image", right: "/cdr/image")) } throws: { error in
            "\(error)".contains("/cdr/image is given for both sides")
        }
    }

    /// Twelve image messages of which four lie (data shorter than height × step, width 0,
    /// `mono16`, another size mid-stream): each is an error said and a loss with its reason,
    /// so the eight good ones plus the four losses are the twelve recorded. Mutation: dropping
    /// the loss event (as before) leaves four messages nowhere in the account.
    @Test("every message of a bag topic is a frame or a loss with its reason: malformed_message, unsupported_encoding, format_changed")
    func lyingMessagesAreLosses() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("bag-lies-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("lies.mcap").path
        let writer = try MCAPWriter(path: path, profile: "ros2")
        let schema = try writer.addSchema(name: "sensor_msgs/msg/Image", encoding: "ros2msg", data: Array(ROS2.schemas["sensor_msgs/msg/Image"]!.utf8))
        let channel = try writer.addChannel(schemaID: schema, topic: "/cam/image", messageEncoding: "cdr")
        func image(_ k: Int, width: UInt32 = 4, encoding: String = "mono8", dataCount: Int? = nil) -> ROS2.Image {
            let step = width * (encoding == "mono16" ? 2 : 1)
            return ROS2.Image(header: ROS2.Header(stamp: ROS2.Time(nanoseconds: Int64(k + 1) * 33_333_333), frameID: "cam"),
                              height: 2, width: width, encoding: encoding, step: step,
                              data: [UInt8](repeating: UInt8(k), count: dataCount ?? Int(2 * step)))
        }
        let lies: [Int: (ROS2.Image, DropReason)] = [
            3: (image(3, dataCount: 5), .malformedMessage),       // 5 bytes for 2 × 4
            5: (image(5, width: 0), .malformedMessage),
            7: (image(7, encoding: "mono16"), .unsupportedEncoding),
            9: (image(9, width: 6), .formatChanged),
        ]
        for k in 0..<12 {
            let message = lies[k]?.0 ?? image(k)
            try writer.addMessage(channel: channel, sequence: UInt32(k), logTime: UInt64(k + 1) * 33_333_333,
                                  publishTime: UInt64(k + 1) * 33_333_333, data: message.serialized())
        }
        try writer.finish()
        let device = try BagTopicDevice(bag: try MCAPBag(path: path), topic: "/cam/image")
        let frames = Locked<[UInt64: UInt8]>([:]), losses = Locked<[DropReason: Int]>([:]), errors = Locked<[String]>([])
        let stopped = DispatchSemaphore(value: 0)
        try device.start { output in
            switch output {
            case .frame(let frame): frames.withLock { $0[frame.sequence] = frame.payload.bytes.first }
            case .event(.dropped(let count, let reason)): losses.withLock { $0[reason, default: 0] += count }
            case .event(.recoverableError(let error)): errors.withLock { $0.append("\(error)") }
            case .event(.stopped): stopped.signal()
            default: break
            }
        }
        defer { device.stop() }
        #expect(stopped.wait(timeout: .now() + 10) == .success, "the playback ended")
        let good = Set(0..<12).subtracting(lies.keys)
        // Each good message is the frame at its own index, with its own bytes.
        #expect(frames.withLock { $0 } == Dictionary(uniqueKeysWithValues: good.map { (UInt64($0), UInt8($0)) }))
        #expect(losses.withLock { $0 } == [.malformedMessage: 2, .unsupportedEncoding: 1, .formatChanged: 1])
        let said = errors.withLock { $0 }
        #expect(said.count == 4, "\(said)")
        for k in lies.keys.sorted() {
            #expect(said.contains { $0.contains("lies.mcap") && $0.contains("message \(k):") }, "message \(k) named: \(said)")
        }
    }
}
