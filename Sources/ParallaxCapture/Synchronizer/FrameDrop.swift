import ParallaxGeometry

/// Why a frame did not end up in a synchronized pair: the second stage of the frame
/// account (see ``DropReason`` for the three).
///
/// Every frame handed to a synchronizer ends in exactly one pair or exactly one drop
/// with one of these reasons. The raw value is the reason's stable snake_case name.
public enum FrameDropReason: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No frame of the other camera can pair with it within the maximum skew (for the
    /// exact policy: no frame with an equal timestamp or sequence number; for the epsilon
    /// policy: none within epsilon).
    case noMatchWithinSkew = "no_match_within_skew"
    /// A frame of the same camera that is closer in time to the other camera's frame took
    /// its place (this frame was within the maximum skew of that frame, but farther).
    case superseded = "superseded"
    /// A bounded queue was full: a side's pending-frame queue (the other camera is silent
    /// and nothing can be proven), or the output queue (the consumer reads pairs more
    /// slowly than they are made; the oldest pair gives way to the newest).
    case queueOverflow = "queue_overflow"
    /// The frame arrived, or was waiting, while one of the two cameras was disabled.
    case constituentDisabled = "constituent_disabled"
    /// Time went backwards (or the stream was reset) on one camera: every waiting frame is
    /// flushed, because timestamps before and after a jump cannot be compared.
    case discontinuity = "discontinuity"
    /// The capture layer reported the frame as damaged (for example V4L2's error flag).
    case deviceError = "device_error"
    /// The frame was waiting, or arrived, while one of the two cameras was disconnected
    /// (unplugged), until it came back.
    case disconnected = "disconnected"

    /// Number of reasons (``allCases`` builds an array on every use; counters index with this).
    @usableFromInline static let caseCount = 7

    /// The reason's position among ``allCases``, for counters kept in flat arrays
    /// (``allCases`` builds an array on every use).
    @inlinable var index: Int {
        switch self {
        case .noMatchWithinSkew: 0
        case .superseded: 1
        case .queueOverflow: 2
        case .constituentDisabled: 3
        case .discontinuity: 4
        case .deviceError: 5
        case .disconnected: 6
        }
    }

    /// The snake_case name (the raw value).
    public var description: String { rawValue }
}

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
    public var reason: FrameDropReason

    /// Creates a drop record.
    public init(side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, reason: FrameDropReason) {
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
