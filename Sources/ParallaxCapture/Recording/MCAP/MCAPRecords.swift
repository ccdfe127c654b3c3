/// A message type described in an MCAP file; channels name it by ``id``.
public struct MCAPSchema: Sendable, Hashable {
    /// The id channels name it by (never 0, which means "no schema").
    public var id: UInt16
    /// The message type, e.g. `sensor_msgs/msg/Image`.
    public var name: String
    /// How ``data`` describes it, e.g. `ros2msg`.
    public var encoding: String
    /// The definition itself.
    public var data: [UInt8]

    /// A schema with these fields.
    public init(id: UInt16, name: String, encoding: String, data: [UInt8]) {
        (self.id, self.name, self.encoding, self.data) = (id, name, encoding, data)
    }
}

/// A stream of messages in an MCAP file, on one topic; messages name it by ``id``.
public struct MCAPChannel: Sendable, Hashable {
    /// The id messages name it by.
    public var id: UInt16
    /// The schema of its messages (0: none).
    public var schemaID: UInt16
    /// The topic, e.g. `/stereo/left/image_raw`.
    public var topic: String
    /// How messages are serialized, e.g. `cdr`.
    public var messageEncoding: String
    /// Extra key–value pairs (rosbag2 keeps `offered_qos_profiles` here).
    public var metadata: [String: String]

    /// A channel with these fields.
    public init(id: UInt16, schemaID: UInt16, topic: String, messageEncoding: String, metadata: [String: String] = [:]) {
        (self.id, self.schemaID, self.topic, self.messageEncoding, self.metadata) = (id, schemaID, topic, messageEncoding, metadata)
    }
}

/// An MCAP file's Statistics record: counts and the time span of its messages.
public struct MCAPStatistics: Sendable, Hashable {
    /// Messages in the file.
    public var messageCount: UInt64
    /// Schemas and channels in the file.
    public var schemaCount: Int, channelCount: Int
    /// Chunks in the file.
    public var chunkCount: Int
    /// The earliest and latest message log times (nanoseconds).
    public var messageStartTime: UInt64, messageEndTime: UInt64
    /// Messages on each channel, by channel id.
    public var channelMessageCounts: [UInt16: UInt64]
}

/// One message read from an MCAP file. ``data`` is valid only during the call it is
/// handed to; copy it to keep it.
public struct MCAPMessage {
    /// The channel it was written on.
    public var channel: MCAPChannel
    /// The writer's sequence number.
    public var sequence: UInt32
    /// When it was logged and published (nanoseconds).
    public var logTime: UInt64, publishTime: UInt64
    /// The serialized message.
    public var data: UnsafeRawBufferPointer
    /// Where its record starts in the file (inside a chunk: where the chunk starts).
    public var fileOffset: Int
}

/// Where one message of an MCAP file is: enough to read it again
/// (``MCAPFile/withData(of:_:)``) without holding its bytes.
public struct MCAPMessageEntry: Sendable, Hashable {
    /// Its channel's id.
    public var channelID: UInt16
    /// The writer's sequence number.
    public var sequence: UInt32
    /// When it was logged and published (nanoseconds).
    public var logTime: UInt64, publishTime: UInt64
    /// Its serialized bytes' place: in the file, or in the decompressed records of
    /// ``compressedChunk``.
    public var dataRange: Range<Int>
    /// The compressed chunk it is in (numbered from 0 in file order), or `nil` when its bytes
    /// are in the file as they are.
    public var compressedChunk: Int?
}
