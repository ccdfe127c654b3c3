import Foundation
import ParallaxGeometry
import ParallaxImage

/// Where a session's pairs are recorded (``StereoSession/record(into:pairs:timeoutSeconds:)``):
/// an EuRoC folder (``EuRoCRecorder``) or a ROS 2 MCAP file (``MCAPRecorder``).
public protocol StereoPairRecorder: AnyObject, Sendable {
    /// Writes both sides of `pair`, or neither.
    func record(_ pair: StereoPair) throws(CaptureError)
    /// Ends the recording and keeps it.
    func finish() throws(CaptureError)
    /// Ends the recording without keeping it as a replacement of an older one.
    func abandon()
    /// True until ``finish()`` or ``abandon()``.
    var isOpen: Bool { get }
    /// True when the recording replaces an older one at its path when it finishes.
    var replacesOlderRecording: Bool { get }
    /// After a write error (``record(_:)`` or ``finish()`` threw; the recorder is still open):
    /// ends the recording keeping what of it is whole, and says what was kept and where, or
    /// why nothing could be, in a sentence.
    func keepAfterWriteError() -> String
}

extension EuRoCRecorder: StereoPairRecorder {
    /// Ends the recording as ``abandon()`` does: a new folder keeps what its CSVs list.
    public func keepAfterWriteError() -> String {
        abandon()
        return replacesOlderRecording ? "the older recording in \(directory) was kept (this one replaced it only once whole)"
            : "\(directory) keeps the frames its data.csv files list"
    }
}

/// A recorder that also takes pairs made without a session, as images: the bag recorders
/// (``MCAPRecorder``, ``ROS2BagFolderRecorder``), which `parallax rectify-dataset` writes to.
public protocol ImagePairRecorder: StereoPairRecorder {
    /// Writes a pair given as images, each stamped with its frame's time (`rectified` chooses
    /// `image_rect` over `image_raw`); `number` names the pair in errors.
    func record(images: PerSide<ImageBuffer>, stamps: PerSide<Int64>, rectified: Bool, number: Int) throws(CaptureError)
}

/// Records a session's pairs as a ROS 2 bag in one MCAP file (the `ros2` profile, CDR
/// messages with `ros2msg` schemas; `make test-interop` has PyPI's `mcap` and
/// `mcap-ros2-support` read it):
///
/// | topic | type | what |
/// |---|---|---|
/// | `/stereo/left/image_raw`, `/stereo/right/image_raw` (`image_rect` when the session rectifies) | `sensor_msgs/msg/Image` | the pixels as the session hands them: `mono8`, `rgb8`, `bgr8`, `rgba8`, `bgra8`, `yuv422_yuy2`, `uyvy`; planar YUV (a decoded JPEG's) as `rgb8` |
/// | `/stereo/left/image_raw/compressed`, `…/right/…` | `sensor_msgs/msg/CompressedImage` | an unrectified MJPEG frame's JPEG bytes exactly as they came (image_transport's name for them) |
/// | `/stereo/left/camera_info`, `/stereo/right/camera_info` | `sensor_msgs/msg/CameraInfo` | with every image, when camera info is given |
///
/// Header stamps and log times are the frames' timestamps (CLOCK_MONOTONIC nanoseconds).
/// The file is written beside its path under a temporary name and appears only at
/// ``finish()``; ``abandon()`` leaves whatever was at the path as it was. A path that exists
/// is refused unless `replacingExisting`.
///
/// A recording cut short keeps what it wrote. Chunks reach the file as they close (about a
/// second each), so a process killed while recording leaves `PATH.partial-PID` whole up to
/// its last chunk; the next recorder at that path finishes it as `NAME.recovered-PID.mcap`
/// (``MCAPRecovery``, said in ``tidied``). After a write error (a full disk),
/// ``keepAfterWriteError()`` finishes what is whole at the path, or beside it when an older
/// file is there.
public final class MCAPRecorder: ImagePairRecorder {
    /// The bag's path.
    public let path: String
    /// True when an older file at ``path`` is replaced at ``finish()``.
    public let replacesOlderRecording: Bool
    /// What the recorder did before starting with the unfinished bags that killed recordings
    /// left at this path: each finished and kept, or removed when nothing in it was whole, a
    /// sentence each.
    public let tidied: [String]

    private let state: Locked<State>
    private let frameIDs: PerSide<String>
    private let cameraInfo: PerSide<ROS2.CameraInfo>?

    private struct State {
        var writer: MCAPWriter?
        var channels: [String: UInt16] = [:]
        var schemas: [String: UInt16] = [:]
        var sequence: [String: UInt32] = [:]
        var pairs = 0
        var contents = BagContents()
    }

    /// What a bag holds so far: its topics in the order they first appeared, with their types
    /// and message counts, and the span of its log times (what a rosbag2 `metadata.yaml` says).
    public struct BagContents: Sendable, Hashable {
        /// One topic: its name, its message type (`sensor_msgs/msg/Image`…) and its messages.
        public struct Topic: Sendable, Hashable {
            /// The topic's name.
            public var name: String
            /// The ROS 2 message type.
            public var type: String
            /// Messages written on it.
            public var messages: Int
        }
        /// The topics, in the order of their first message.
        public var topics: [Topic] = []
        /// The first and last messages' log times (nanoseconds), or `nil` before any.
        public var firstLogTime: UInt64?, lastLogTime: UInt64?
        /// Messages on every topic.
        public var messageCount: Int { topics.reduce(0) { $0 + $1.messages } }
    }

    /// Starts a bag at `path`. `frameIDs` are the header's frames of reference; with
    /// `cameraInfo`, each image is followed by its side's camera info (stamped like it);
    /// `compression` says how chunks are stored.
    ///
    /// Unfinished bags that killed recordings left at `path` are finished first
    /// (``MCAPRecovery/recoverInterrupted(beside:)``), or with `recoveringInterrupted` false
    /// (for output made again from its input, as `rectify-dataset`'s) removed; ``tidied``
    /// says which.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when `path` exists (and not
    ///   `replacingExisting`), is a folder, or its folder cannot be written.
    public init(path: String, replacingExisting: Bool = false,
                frameIDs: PerSide<String> = PerSide(left: "stereo_left", right: "stereo_right"),
                cameraInfo: PerSide<ROS2.CameraInfo>? = nil, compression: MCAPWriter.Compression = .none,
                recoveringInterrupted: Bool = true) throws(CaptureError) {
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
        if exists && isFolder.boolValue { throw .recording(path: path, reason: "is a folder; an MCAP bag is one file") }
        if exists && !replacingExisting {
            throw .recording(path: path, reason: "already exists; choose a new name, or replace it on purpose")
        }
        self.path = path
        replacesOlderRecording = exists
        if recoveringInterrupted {
            tidied = MCAPRecovery.recoverInterrupted(beside: path)
        } else {
            tidied = MCAPRecovery.interrupted(beside: path).compactMap { found in
                unlink(found.path) == 0
                    ? "removed \((found.path as NSString).lastPathComponent), the unfinished output of a run that was killed" : nil
            }
        }
        self.frameIDs = frameIDs
        self.cameraInfo = cameraInfo
        do {
            state = Locked(State(writer: try MCAPWriter(path: path, profile: "ros2", compression: compression)))
        } catch {
            throw .recording(path: path, reason: "\(error)")
        }
    }

    /// Pairs written so far.
    public var pairsWritten: Int { state.withLock { $0.pairs } }

    /// The topics, counts and time span written so far.
    public var contents: BagContents { state.withLock { $0.contents } }

    /// True until ``finish()`` or ``abandon()``.
    public var isOpen: Bool { state.withLock { $0.writer != nil } }

    /// Writes both sides of `pair` (and their camera info). A write error (a full disk) is
    /// thrown here or by ``finish()``, and leaves the recorder open for
    /// ``keepAfterWriteError()`` (or ``abandon()``).
    public func record(_ pair: StereoPair) throws(CaptureError) {
        var pixels = PerSide<Pixels?>(repeating: nil)
        for side in StereoSide.allCases {
            let image = pair[side]
            if !pair.isRectified, let frame = image.frame, frame.format.pixelFormat == nil {
                pixels[side] = .jpeg(Array(frame.payload.bytes))  // as it came
            } else if let view = image.image {
                pixels[side] = .image(ImageBuffer(copying: view))
            } else {
                throw .recording(path: path, reason: "the \(side) image of pair \(pair.number) has no pixels to record")
            }
        }
        try write(messages(PerSide(left: pixels.left!, right: pixels.right!),
                           stamps: PerSide(left: pair.left.timestampNanoseconds, right: pair.right.timestampNanoseconds),
                           rectified: pair.isRectified, number: pair.number))
    }

    /// Writes a pair given as images, each stamped with its frame's time (`rectified` chooses
    /// `image_rect` over `image_raw`), with its camera info: a pair made without a session
    /// (`parallax rectify-dataset`). `number` names the pair in errors.
    public func record(images: PerSide<ImageBuffer>, stamps: PerSide<Int64>, rectified: Bool, number: Int) throws(CaptureError) {
        try write(messages(images.map { .image($0) }, stamps: stamps, rectified: rectified, number: number))
    }

    /// Why a bag cannot hold a frame stamped `nanoseconds`, or `nil` when it can: MCAP's log
    /// time counts unsigned nanoseconds, and ROS 2's `builtin_interfaces/Time` signed 32-bit
    /// seconds, so a bag holds stamps from 0 to 2³¹ − 1 s (1970 to January 2038).
    public static func unrepresentable(stampNanoseconds nanoseconds: Int64) -> String? {
        if nanoseconds < 0 { return "a ROS 2 bag's log times start at 0 (MCAP counts unsigned nanoseconds)" }
        if nanoseconds / 1_000_000_000 > Int64(Int32.max) {
            return "a ROS 2 stamp holds seconds in 32 bits, up to 2³¹ − 1 s (January 2038)"
        }
        return nil
    }

    /// A side's pixels: an MJPEG frame's JPEG bytes, or an image.
    private enum Pixels {
        case jpeg([UInt8])
        case image(ImageBuffer)
    }

    /// One message: its topic, type, stamp and CDR bytes.
    private typealias Message = (topic: String, type: String, stamp: Int64, bytes: [UInt8])

    /// A pair's messages, serialized (outside the lock: the slow part): each side's image
    /// (`Image`, or `CompressedImage` on `…/compressed` for JPEG bytes) and its camera info.
    private func messages(_ pixels: PerSide<Pixels>, stamps: PerSide<Int64>, rectified: Bool,
                          number: Int) throws(CaptureError) -> [Message] {
        var messages: [Message] = []
        for side in StereoSide.allCases {
            if let reason = Self.unrepresentable(stampNanoseconds: stamps[side]) {
                throw .recording(path: path, reason: "the \(side) image of pair \(number) is stamped \(stamps[side]) ns: \(reason)")
            }
            let header = ROS2.Header(stamp: ROS2.Time(nanoseconds: stamps[side]), frameID: frameIDs[side])
            let base = "/stereo/\(side)/" + (rectified ? "image_rect" : "image_raw")
            switch pixels[side] {
            case .jpeg(let bytes):
                let message = ROS2.CompressedImage(header: header, format: "jpeg", data: bytes)
                messages.append((base + "/compressed", "sensor_msgs/msg/CompressedImage", stamps[side], message.serialized()))
            case .image(let image):
                let message: ROS2.Image
                do { message = try Self.message(image, header: header) } catch {
                    throw .recording(path: path, reason: "the \(side) image of pair \(number): \(error)")
                }
                messages.append((base, "sensor_msgs/msg/Image", stamps[side], message.serialized()))
            }
            if var info = cameraInfo?[side] {
                info.header = header
                messages.append(("/stereo/\(side)/camera_info", "sensor_msgs/msg/CameraInfo", stamps[side], info.serialized()))
            }
        }
        return messages
    }

    /// Writes one pair's messages under the lock, in order; the pair counts once all are written.
    private func write(_ messages: [Message]) throws(CaptureError) {
        let failure: CaptureError? = state.withLock { state in
            guard let writer = state.writer else { return .recording(path: path, reason: "the recording was already finished or abandoned") }
            do throws(MCAPWriteError) {
                for message in messages {
                    let channel = try Self.channel(message.topic, type: message.type, in: &state, writer: writer)
                    let sequence = state.sequence[message.topic, default: 0]
                    state.sequence[message.topic] = sequence &+ 1
                    let time = UInt64(max(0, message.stamp))
                    try writer.addMessage(channel: channel, sequence: sequence, logTime: time, publishTime: time, data: message.bytes)
                    state.contents.count(message.topic, type: message.type, at: time)
                }
            } catch {
                return .recording(path: path, reason: Self.reason(error))
            }
            state.pairs += 1
            return nil
        }
        if let failure { throw failure }
    }

    /// Writes the summary and footer and renames the bag into place (over an older file
    /// when replacing one). Calling it again does nothing. A write error leaves the recorder
    /// open for ``keepAfterWriteError()``.
    public func finish() throws(CaptureError) {
        // Under the lock, so that a failed finish leaves the writer where keepAfterWriteError() finds it.
        let failure: MCAPWriteError? = state.withLock { state in
            guard let writer = state.writer else { return nil }
            do throws(MCAPWriteError) {
                try writer.finish()
                state.writer = nil
                return nil
            } catch { return error }
        }
        if let failure { throw .recording(path: path, reason: Self.reason(failure)) }
    }

    /// A write error's reason, without the path when it is the bag's own (the error names it).
    private static func reason(_ error: MCAPWriteError) -> String {
        if case .cannotWrite(let file) = error { return file.reason }
        return "\(error)"
    }

    /// After a write error: ends the recording and finishes what of it is whole
    /// (``MCAPRecovery``): at ``path`` when nothing is there, else beside it. Says what was
    /// kept and where, or why nothing could be.
    public func keepAfterWriteError() -> String {
        do {
            let kept = try keepWhole()
            return "kept \(kept.pairs) pairs (up to the last whole chunk) in \(kept.path)"
        } catch {
            return "nothing could be kept: \(error)"
        }
    }

    /// The bag's writer ended, what of it is whole finished at `path` (or beside it). The
    /// rosbag2 folder's recorder keeps its bag through this too.
    func keepWhole() throws(MCAPRecoveryError) -> MCAPRecovery.Outcome {
        guard let writer = state.withLock({ state -> MCAPWriter? in defer { state.writer = nil }; return state.writer }) else {
            throw MCAPRecoveryError(file: path, reason: "the recording was already finished or abandoned")
        }
        return try Self.keepWhole(writer, at: path)
    }

    private static func keepWhole(_ writer: MCAPWriter, at path: String) throws(MCAPRecoveryError) -> MCAPRecovery.Outcome {
        guard let partial = writer.keepUnfinished() else {
            throw MCAPRecoveryError(file: path, reason: "nothing was written to keep", keptNothing: true)
        }
        do { return try MCAPRecovery.finish(partial, as: path) } catch {
            if error.keptNothing { unlink(partial) }
            throw error
        }
    }

    /// Drops the bag being written; whatever was at the path stays as it was.
    public func abandon() {
        state.withLock { $0.writer = nil }  // the temporary file goes with the writer
    }

    // MARK: Messages

    private static func channel(_ topic: String, type: String, in state: inout State, writer: MCAPWriter) throws(MCAPWriteError) -> UInt16 {
        if let known = state.channels[topic] { return known }
        let schema: UInt16
        if let known = state.schemas[type] {
            schema = known
        } else {
            schema = try writer.addSchema(name: type, encoding: "ros2msg", data: Array((ROS2.schemas[type] ?? "").utf8))
            state.schemas[type] = schema
        }
        let channel = try writer.addChannel(schemaID: schema, topic: topic, messageEncoding: "cdr",
                                            metadata: ["offered_qos_profiles": ROS2.offeredQoSProfiles])
        state.channels[topic] = channel
        return channel
    }

    /// An image as a ROS 2 `Image`: packed formats under their ROS encoding, planar and
    /// semi-planar YUV converted to `rgb8` (ROS has no encoding for them).
    static func message(_ buffer: ImageBuffer, header: ROS2.Header) throws(ImageError) -> ROS2.Image {
        let encodings: [PixelFormat: String] = [.gray8: "mono8", .rgb8: "rgb8", .bgr8: "bgr8", .rgba8: "rgba8", .bgra8: "bgra8",
                                                .yuyv: "yuv422_yuy2", .uyvy: "uyvy"]
        let packed = encodings[buffer.format] == nil ? try buffer.converted(to: .rgb8) : buffer
        return ROS2.Image(header: header, height: UInt32(packed.size.height), width: UInt32(packed.size.width),
                          encoding: encodings[packed.format]!, step: UInt32(packed.bytesPerRow), data: packed.bytes)
    }
}

extension MCAPRecorder.BagContents {
    mutating func count(_ topic: String, type: String, at time: UInt64) {
        if let index = topics.firstIndex(where: { $0.name == topic }) {
            topics[index].messages += 1
        } else {
            topics.append(Topic(name: topic, type: type, messages: 1))
        }
        firstLogTime = min(firstLogTime ?? time, time)
        lastLogTime = max(lastLogTime ?? time, time)
    }
}
