import Foundation
import ParallaxGeometry
import ParallaxImage

/// An MCAP file opened once and shared by the cameras that play its topics back.
///
/// Sendable because after ``init(path:decompressionDeadline:)`` nothing changes: the file's bytes are mapped read
/// only, its schemas and channels were all read by the index scan, and the devices only
/// call ``MCAPFile/withData(of:_:)``, which reads those bytes.
public final class MCAPBag: @unchecked Sendable {
    /// The file.
    public let file: MCAPFile
    /// The image topics (`sensor_msgs/msg/Image` or `CompressedImage`), sorted.
    public let imageTopics: [String]
    /// Where each topic's messages are, in file order (from the one pass at opening).
    public let entries: [String: [MCAPMessageEntry]]

    /// Opens and checks `path`: every record, CRC and channel is read once here, in the pass
    /// that also finds where each topic's messages are.
    ///
    /// `decompressionDeadline` (CLOCK_MONOTONIC nanoseconds) bounds the time its chunks
    /// take to decompress, here and in playback (``MCAPFile/init(path:allowingTruncation:decompressionDeadline:)``).
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` with the reader's reason.
    public init(path: String, decompressionDeadline: Int64? = nil) throws(CaptureError) {
        let opened: MCAPFile
        do {
            opened = try MCAPFile(path: path, decompressionDeadline: decompressionDeadline)
            entries = try opened.entriesByTopic()
        } catch {
            throw .recording(path: path, reason: "\(error)")
        }
        file = opened
        imageTopics = opened.channels.values.filter { channel in
            ["sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage"].contains(opened.schemas[channel.schemaID]?.name ?? "")
        }.map(\.topic).sorted()
    }

    /// True when `topic` holds `sensor_msgs/msg/CompressedImage` (JPEG or PNG bytes) rather
    /// than `Image`.
    public func isCompressed(_ topic: String) -> Bool {
        guard let channel = file.channels.values.first(where: { $0.topic == topic }) else { return false }
        return file.schemas[channel.schemaID]?.name == "sensor_msgs/msg/CompressedImage"
    }

    /// One message of an image topic, decoded: its pixels (packed, in a pixel format with a
    /// V4L2 code, as ``BagTopicDevice`` plays them) and its header stamp (nanoseconds).
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the file, topic and message.
    public func image(_ entry: MCAPMessageEntry, on topic: String) throws(CaptureError) -> (image: ImageBuffer, stampNanoseconds: Int64) {
        do {
            return try BagTopicDevice.decode(entry, of: self, compressed: isCompressed(topic))
        } catch {
            throw .recording(path: file.name, reason: "topic \(topic), message \(entry.sequence): \(error)")
        }
    }

    /// A message's header stamp (nanoseconds), read from the first bytes of its CDR
    /// (`std_msgs/Header` begins every image message) without decoding the rest.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` when the message is too short.
    public func stamp(of entry: MCAPMessageEntry, on topic: String) throws(CaptureError) -> Int64 {
        do {
            return try file.withData(of: entry) { bytes in try ROS2.Header.stamp(cdr: bytes) }
        } catch {
            throw .recording(path: file.name, reason: "topic \(topic), message \(entry.sequence): \(error)")
        }
    }

    /// The left and right image topics when the bag has exactly two: the one whose name says
    /// `left` is left (else the first in name order); `nil` otherwise.
    public var defaultTopics: PerSide<String>? {
        guard imageTopics.count == 2 else { return nil }
        let left = imageTopics.first { $0.lowercased().contains("left") } ?? imageTopics[0]
        return PerSide(left: left, right: imageTopics.first { $0 != left }!)
    }
}

/// Plays back one camera from one image topic of a ROS 2 bag in MCAP: `sensor_msgs/msg/Image`
/// (`mono8`, `rgb8`, `bgr8`, `rgba8`, `bgra8`, `yuv422_yuy2`, `uyvy`) or `CompressedImage`
/// (JPEG or PNG), as ``RecordedFolderDevice`` plays an EuRoC folder: frames carry the header
/// stamps and their message number as sequence, at the recorded pace or as fast as they
/// decode, then ``CaptureEvent/stopped``. A message that does not decode is a recoverable
/// error event naming the file, topic and message, and is skipped.
public final class BagTopicDevice: CaptureDevice, StopRequesting, Sendable {
    /// Who this device is (`bag:PATH#TOPIC`).
    public let identity: DeviceIdentity
    /// The topic played.
    public let topic: String
    /// Real-time playback or as fast as frames decode.
    public let pace: SimulationPace
    private let bag: MCAPBag
    private let entries: [MCAPMessageEntry]
    private let isCompressed: Bool
    private let recordedFormat: CaptureFormat
    private let configured: Locked<CaptureFormat>
    private let thread = Locked<CaptureThread?>(nil)

    /// The camera of `topic` in `bag`; its first message gives the format.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the file and topic: no such
    ///   image topic, no message on it, or a first message that does not decode.
    public init(bag: MCAPBag, topic: String, pace: SimulationPace = .asFastAsPossible) throws(CaptureError) {
        let path = bag.file.name
        guard let channel = bag.file.channels.values.first(where: { $0.topic == topic }) else {
            throw .recording(path: path, reason: "has no topic \(topic); its image topics: \(bag.imageTopics.joined(separator: ", "))")
        }
        let schema = bag.file.schemas[channel.schemaID]
        let type = schema?.name ?? "no schema"
        guard bag.imageTopics.contains(topic) else {
            throw .recording(path: path, reason: "topic \(topic) holds \(type), not sensor_msgs/msg/Image or CompressedImage")
        }
        // The name alone does not say how the bytes are laid out: ROS 2's CDR, described by a
        // ros2msg (or ros2idl) schema, is what Parallax decodes.
        guard channel.messageEncoding == "cdr", let schema, ["ros2msg", "ros2idl"].contains(schema.encoding) else {
            throw .recording(path: path, reason: "topic \(topic) holds \(type) encoded as \(channel.messageEncoding) "
                             + "(schema encoding \(schema?.encoding ?? "none")); Parallax reads ROS 2 messages: cdr with a ros2msg or "
                             + "ros2idl schema")
        }
        entries = (bag.entries[topic] ?? []).sorted { $0.logTime < $1.logTime }
        guard let first = entries.first else { throw .recording(path: path, reason: "topic \(topic) has no messages") }
        (self.bag, self.topic, self.pace) = (bag, topic, pace)
        isCompressed = type == "sensor_msgs/msg/CompressedImage"
        let decoded: (image: ImageBuffer, stamp: Int64)
        do { decoded = try Self.decode(first, of: bag, compressed: isCompressed) } catch {
            throw .recording(path: path, reason: "topic \(topic), message 0: \(error)")
        }
        let stamps = entries.map(\.logTime)
        let steps = zip(stamps, stamps.dropFirst()).map { $1 &- $0 }.filter { $0 > 0 }.sorted()
        let median = steps.isEmpty ? 33_333_333 : steps[steps.count / 2]
        recordedFormat = CaptureFormat(fourCC: CaptureFormat.fourCC(of: decoded.image.format) ?? .grey, size: decoded.image.size,
                                       frameInterval: FrameInterval(framesPerSecond: 1e9 / Double(median)))
        configured = Locked(recordedFormat)
        identity = DeviceIdentity(stableID: "bag:\(path)#\(topic)", name: "bag \(topic)", path: path)
    }

    deinit { stop() }

    /// The recorded format (size and pixel format of the first image, median interval).
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] { [recordedFormat] }
    /// The recorded size and pixel format, at any interval.
    public func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool {
        format.size == recordedFormat.size && format.fourCC == recordedFormat.fourCC
    }
    /// The format in use (see ``CaptureDevice/activeFormat``).
    public var activeFormat: CaptureFormat? { configured.withLock { $0 } }

    /// Accepts the recorded size and pixel format at any interval (playback keeps the
    /// recorded times), as ``RecordedFolderDevice`` does.
    @discardableResult
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat {
        guard format.size == recordedFormat.size, format.fourCC == recordedFormat.fourCC else {
            throw .unsupportedFormat(device: identity.name, requested: format, available: [recordedFormat])
        }
        configured.withLock { $0 = format }
        return format
    }

    /// Starts streaming into `handler` (see ``CaptureDevice/start(_:)``).
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        let (entries, bag, identity, topic, compressed) = (self.entries, self.bag, self.identity, self.topic, isCompressed)
        let format = configured.withLock { $0 }, pace = self.pace
        let worker = CaptureThread(name: "parallax.bag \(topic)") { thread in
            let startedAt = monotonicNanoseconds()
            let t0 = Int64(clamping: entries.first?.logTime ?? 0)
            for (number, entry) in entries.enumerated() {
                if thread.shouldStop { break }
                do {
                    let (image, stamp) = try Self.decode(entry, of: bag, compressed: compressed)
                    if pace == .realTime, !thread.sleep(untilMonotonicNanoseconds: startedAt + (Int64(clamping: entry.logTime) - t0)) { break }
                    guard image.size == format.size, CaptureFormat.fourCC(of: image.format) == format.fourCC else {
                        throw MessageLoss(reason: .formatChanged, CDRError(
                            field: "data", reason: "is a \(image.size) \(image.format.rawValue) image; the topic's first was "
                                + "\(format.size) \(format.fourCC)"))
                    }
                    let pixels = SharedPixels(image)
                    handler(.frame(Frame(image: pixels.view, payload: pixels.payload, format: format, timestampNanoseconds: stamp,
                                         timestampSource: .midExposure, sequence: UInt64(number), source: identity,
                                         release: { _ = pixels })))
                } catch {
                    // Every message is a frame or a loss with its reason: said, then counted.
                    handler(.event(.recoverableError(.recording(path: bag.file.name, reason: "topic \(topic), message \(number): \(error)"))))
                    handler(.event(.dropped(count: 1, reason: (error as? MessageLoss)?.reason ?? .malformedMessage)))
                }
            }
            handler(.event(.stopped))
        }
        thread.withLock { $0 = worker }
    }

    /// Asks the playback thread to stop without waiting for it (``stop()`` waits).
    func requestStop() {
        thread.withLock { $0 }?.stopRequested.store(true, ordering: .releasing)
    }

    /// Stops streaming and waits for the device thread (see ``CaptureDevice/stop()``).
    public func stop() {
        let worker = thread.withLock { t in defer { t = nil }; return t }
        worker?.stopAndJoin(timeoutSeconds: 5)
    }

    // MARK: Decoding

    /// Why one message is not a frame: the loss's reason in the account, and what was wrong.
    struct MessageLoss: Error, CustomStringConvertible {
        let reason: DropReason
        let problem: any Error
        init(reason: DropReason, _ problem: any Error) { (self.reason, self.problem) = (reason, problem) }
        var description: String { "\(problem)" }
    }

    /// A message's image (packed rows, in a pixel format with a V4L2 code) and its header
    /// stamp. Throws ``MessageLoss`` with the reason (`malformed_message`,
    /// `unsupported_encoding`, `corrupt_frame` for compressed bytes that do not decode), or
    /// the container's error for a chunk that cannot be read (counted as `malformed_message`).
    static func decode(_ entry: MCAPMessageEntry, of bag: MCAPBag, compressed: Bool) throws -> (ImageBuffer, Int64) {
        try bag.file.withData(of: entry) { bytes in
            if compressed {
                let message: ROS2.CompressedImage
                do { message = try ROS2.CompressedImage(cdr: bytes) } catch { throw MessageLoss(reason: .malformedMessage, error) }
                do {
                    return (try packed(ImageBuffer(decoding: message.data, source: "\(message.format) image")), message.header.stamp.nanoseconds)
                } catch { throw MessageLoss(reason: .corruptFrame, error) }
            }
            let message: ROS2.Image
            do { message = try ROS2.Image(cdr: bytes) } catch { throw MessageLoss(reason: .malformedMessage, error) }
            let format: PixelFormat
            do { format = try pixelFormat(ofEncoding: message.encoding) } catch { throw MessageLoss(reason: .unsupportedEncoding, error) }
            do { return (try image(message, format: format), message.header.stamp.nanoseconds) } catch {
                throw MessageLoss(reason: .malformedMessage, error)
            }
        }
    }

    /// The ROS image encodings Parallax plays, and the pixel format each becomes.
    private static let formats: [String: PixelFormat] = ["mono8": .gray8, "8UC1": .gray8, "rgb8": .rgb8, "bgr8": .bgr8, "rgba8": .rgba8,
                                                         "bgra8": .bgra8, "yuv422_yuy2": .yuyv, "uyvy": .uyvy, "yuv422": .uyvy]

    /// The pixel format of ROS image encoding `encoding`, or an error naming those played.
    static func pixelFormat(ofEncoding encoding: String) throws(CDRError) -> PixelFormat {
        guard let format = formats[encoding] else {
            throw CDRError(field: "encoding", reason: "is \(encoding); Parallax plays \(formats.keys.sorted().joined(separator: ", "))")
        }
        return format
    }

    /// A ROS 2 image's pixels as an ``ImageBuffer``.
    static func image(_ message: ROS2.Image) throws -> ImageBuffer {
        try image(message, format: pixelFormat(ofEncoding: message.encoding))
    }

    private static func image(_ message: ROS2.Image, format: PixelFormat) throws -> ImageBuffer {
        let size = ImageSize(width: Int(message.width), height: Int(message.height))
        let row = format.minimumBytesPerRow(width: size.width)
        guard size.width > 0, size.height > 0, Int(message.step) >= row else {
            throw CDRError(field: "step", reason: "is \(message.step) for \(size) \(message.encoding) (at least \(row))")
        }
        var bytes = [UInt8](); bytes.reserveCapacity(row * size.height)
        for y in 0..<size.height {
            let start = y * Int(message.step)
            bytes += message.data[start..<(start + row)]
        }
        return try packed(ImageBuffer(format: format, size: size, bytes: bytes))
    }

    /// `image` in a pixel format that has a V4L2 code (RGBA and BGRA lose their alpha;
    /// planar YUV from a JPEG becomes RGB).
    private static func packed(_ image: ImageBuffer) throws -> ImageBuffer {
        if CaptureFormat.fourCC(of: image.format) != nil { return image }
        return try image.converted(to: image.format == .bgra8 ? .bgr8 : .rgb8)
    }
}

extension StereoDevice {
    /// Two image topics of a ROS 2 bag (one MCAP file) as a stereo device.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the file, and the topic at
    ///   fault; one topic for both sides is refused (its frames would pair with themselves).
    public convenience init(bag: MCAPBag, topics: PerSide<String>, pace: SimulationPace = .asFastAsPossible) throws(CaptureError) {
        guard topics.left != topics.right else {
            throw .recording(path: bag.file.name, reason: "\(topics.left) is given for both sides: a stereo pair needs two "
                             + "image topics, one per camera (the bag has \(bag.imageTopics.joined(separator: ", ")))")
        }
        let left = try BagTopicDevice(bag: bag, topic: topics.left, pace: pace)
        let right = try BagTopicDevice(bag: bag, topic: topics.right, pace: pace)
        self.init(constituents: PerSide(left: left, right: right), kind: .recording)
    }
}
