/// How the synchronizer decides which left and right frames belong together.
///
/// Every policy also honours ``SynchronizerConfiguration/maximumSkewNanoseconds``: a pair
/// whose frames are farther apart than that is never made.
public enum SynchronizationPolicy: Sendable, Hashable, CustomStringConvertible {
    /// Frames pair only when their timestamps are equal, or their sequence numbers are
    /// equal: for hardware-synchronized cameras and side-by-side cameras whose two halves
    /// come from one sensor readout. Decisions are immediate.
    case exact(ExactMatchKey)
    /// Optimal approximate pairing with the guarantees of ROS message_filters'
    /// ApproximateTime policy, for two streams:
    ///
    /// - each frame is used in at most one pair;
    /// - pairs never cross: if left frame *a* comes before left frame *b*, *a*'s partner
    ///   comes before *b*'s partner;
    /// - pairs are contiguous: between two consecutive pairs, at least one camera has no
    ///   dropped frame;
    /// - each pair has the smallest spread (|right − left|) among all candidate pairs that
    ///   are contiguous to the previous pair (ties go to the earlier frame).
    ///
    /// Unlike message_filters, a pair is released as soon as those guarantees are proven,
    /// which with a known frame interval is normally at the arrival of its later frame;
    /// see ``SynchronizerCore`` for the proof rule.
    case approximate
    /// The oldest waiting left and right frames pair as soon as their pairing timestamps are
    /// within `toleranceNanoseconds` of each other (and within the maximum skew); the
    /// older one is dropped when they are not. The lowest latency, with no optimality
    /// guarantee: use it when frame intervals are much longer than the skew.
    case epsilon(toleranceNanoseconds: Int64)

    /// `exact(timestamp)`, `exact(sequence)`, `approximate` or `epsilon(<ns> ns)`.
    public var description: String {
        switch self {
        case .exact(let key): "exact(\(key))"
        case .approximate: "approximate"
        case .epsilon(let tolerance): "epsilon(\(tolerance) ns)"
        }
    }
}

/// What "the same frame" means for ``SynchronizationPolicy/exact(_:)``.
public enum ExactMatchKey: Sendable, Hashable, CustomStringConvertible {
    /// Equal pairing timestamps (after mid-exposure and clock correction).
    case timestamp
    /// Equal sequence numbers, as from a side-by-side camera split into two streams or
    /// two cameras that were reset together.
    case sequence

    /// `timestamp` or `sequence`.
    public var description: String { self == .timestamp ? "timestamp" : "sequence" }
}

/// Whether the synchronizer estimates, and corrects, the offset and drift between the two
/// cameras' timestamp clocks.
public enum ClockCorrection: Sendable, Hashable {
    /// No estimate is kept.
    case off
    /// The offset and drift are estimated from matched pairs and reported in the
    /// statistics, but pairing uses the timestamps as they are (the right choice when both
    /// cameras stamp frames on one host clock, as V4L2 does).
    case estimate
    /// As ``estimate``, and right-camera timestamps are mapped onto the left camera's
    /// clock with the current estimate before pairing (for cameras that stamp frames with
    /// their own clocks). With a known frame interval, the first pair waits until a few
    /// frames of each camera (8, or the queue capacity) have measured the offset modulo the
    /// interval, so any initial offset below half an interval is found despite jitter;
    /// without one, the initial offset plus twice the jitter must stay below half the
    /// spacing of frames. The correction changes slightly between frames; keep
    /// ``SynchronizerConfiguration/timestampJitterNanoseconds`` non-zero so that the
    /// spacing bound absorbs it.
    case apply
}
