/// Everything that decides how a synchronizer pairs frames.
///
/// All durations are nanoseconds. The defaults suit two free-running cameras at the same
/// frame rate: pass the stereo device's shared frame interval as `frameIntervalNanoseconds`
/// (``init(policy:frameIntervalNanoseconds:maximumSkewNanoseconds:timestampJitterNanoseconds:maximumLatencyNanoseconds:queueCapacity:outputCapacity:clockCorrection:clockEstimatorWindow:)``)
/// so that pairs are released as soon as they are proven.
public struct SynchronizerConfiguration: Sendable, Hashable {
    /// How frames are matched.
    public var policy: SynchronizationPolicy
    /// Frames farther apart than this never pair (nanoseconds, compared on pairing
    /// timestamps). Default: half the frame interval when one is known, else 10 ms.
    public var maximumSkewNanoseconds: Int64
    /// The shared frame interval of the two cameras (nanoseconds), or `nil` when unknown.
    /// Consecutive frames of one camera are assumed to be at least
    /// `frameIntervalNanoseconds − 2 · timestampJitterNanoseconds` apart: that lower bound is
    /// what lets a pair be proven optimal the moment its later frame arrives.
    public var frameIntervalNanoseconds: Int64?
    /// How far a timestamp may stray from its regular place (nanoseconds, peak, not a
    /// standard deviation). Shrinks the spacing lower bound; default 0.
    public var timestampJitterNanoseconds: Int64
    /// No pair waits longer than this for its proof (nanoseconds, measured from the
    /// arrival of its later frame): it is then released as the best pair among the frames
    /// seen. Default 100 ms. The deadline is checked whenever a frame arrives or the
    /// owner calls ``SynchronizerCore/advance(to:emit:)``.
    public var maximumLatencyNanoseconds: Int64
    /// Frames waiting per camera. When a camera's queue is full its oldest frame is dropped
    /// with ``DropReason/queueOverflow``; keep it small, since waiting frames may hold
    /// driver buffers. Default 8, at least 1.
    public var queueCapacity: Int
    /// Pairs waiting for the consumer of an ``OutputSynchronizer``; when full, the oldest
    /// pair is dropped (newest wins). Default 2, at least 1.
    public var outputCapacity: Int
    /// Clock offset and drift estimation and correction. Default ``ClockCorrection/estimate``.
    public var clockCorrection: ClockCorrection
    /// Matched pairs the clock estimator fits its line to (the most recent ones).
    /// Default 4096, at least 2.
    public var clockEstimatorWindow: Int

    /// Creates a configuration; see each property for the defaults.
    public init(
        policy: SynchronizationPolicy = .approximate,
        frameIntervalNanoseconds: Int64? = nil,
        maximumSkewNanoseconds: Int64? = nil,
        timestampJitterNanoseconds: Int64 = 0,
        maximumLatencyNanoseconds: Int64 = 100_000_000,
        queueCapacity: Int = 8,
        outputCapacity: Int = 2,
        clockCorrection: ClockCorrection = .estimate,
        clockEstimatorWindow: Int = 4096
    ) {
        self.policy = policy
        self.frameIntervalNanoseconds = frameIntervalNanoseconds
        self.maximumSkewNanoseconds = maximumSkewNanoseconds ?? frameIntervalNanoseconds.map { $0 / 2 } ?? 10_000_000
        self.timestampJitterNanoseconds = timestampJitterNanoseconds
        self.maximumLatencyNanoseconds = maximumLatencyNanoseconds
        self.queueCapacity = queueCapacity
        self.outputCapacity = outputCapacity
        self.clockCorrection = clockCorrection
        self.clockEstimatorWindow = clockEstimatorWindow
    }

    /// The smallest possible distance (nanoseconds, ≥ 1) between two consecutive pairing
    /// timestamps of one camera: `frameInterval − 2 · jitter`, or 1 ns when the interval is
    /// unknown (timestamps of one camera strictly increase).
    @inlinable
    public var minimumFrameSpacingNanoseconds: Int64 {
        guard let interval = frameIntervalNanoseconds else { return 1 }
        return max(1, interval &- 2 &* max(0, timestampJitterNanoseconds))
    }
}
