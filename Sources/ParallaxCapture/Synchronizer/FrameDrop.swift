import ParallaxGeometry

/// A frame that was not paired, and why.
public struct FrameDrop: Sendable, Hashable, CustomStringConvertible {
    /// The camera that produced the frame.
    public var side: StereoSide
    /// The frame's timestamp as it was pushed (nanoseconds, the capture clock, before any
    /// mid-exposure or clock correction).
    public var timestampNanoseconds: Int64
    /// The frame's sequence number as it was pushed.
    public var sequence: UInt64
    /// Why the frame was dropped.
    public var reason: DropReason

    /// Creates a drop record.
    public init(side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, reason: DropReason) {
        self.side = side
        self.timestampNanoseconds = timestampNanoseconds
        self.sequence = sequence
        self.reason = reason
    }

    /// For example `right frame 12 at 400000000 ns: superseded`.
    public var description: String {
        "\(side) frame \(sequence) at \(timestampNanoseconds) ns: \(reason)"
    }
}
