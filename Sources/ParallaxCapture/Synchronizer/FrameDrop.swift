/// Why a frame did not end up in a synchronized pair.
///
/// Every frame handed to a synchronizer ends in exactly one pair or exactly one drop
/// with one of these reasons.
public enum FrameDropReason: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// No frame of the other camera can pair with it within the maximum skew (for the
    /// exact policy: no frame with an equal timestamp or sequence number; for the epsilon
    /// policy: none within epsilon).
    case noMatchWithinSkew = 0
    /// A frame of the same camera that is closer in time to the other camera's frame took
    /// its place (this frame was within the maximum skew of that frame, but farther).
    case superseded = 1
    /// A bounded queue was full: a side's pending-frame queue (the other camera is silent
    /// and nothing can be proven), or the output queue (the consumer reads pairs more
    /// slowly than they are made; the oldest pair gives way to the newest).
    case queueOverflow = 2
    /// The frame arrived, or was waiting, while one of the two cameras was disabled.
    case constituentDisabled = 3
    /// Time went backwards (or the stream was reset) on one camera: every waiting frame is
    /// flushed, because timestamps before and after a jump cannot be compared.
    case discontinuity = 4
    /// The capture layer reported the frame as damaged (for example V4L2's error flag).
    case deviceError = 5

    /// Number of reasons (``allCases`` builds an array on every use; counters index with this).
    @usableFromInline static let caseCount = 6

    /// A stable snake_case name, used in reports and JSON (`no_match_within_skew`, ...).
    public var description: String {
        switch self {
        case .noMatchWithinSkew: "no_match_within_skew"
        case .superseded: "superseded"
        case .queueOverflow: "queue_overflow"
        case .constituentDisabled: "constituent_disabled"
        case .discontinuity: "discontinuity"
        case .deviceError: "device_error"
        }
    }
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
