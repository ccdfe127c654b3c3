/// Why a session dropped a pair after the synchronizer made it (both frames count).
public enum SessionDropReason: String, Hashable, Sendable, CaseIterable {
    /// The consumer was behind: the pair queue was full and the newest pair won.
    case consumerBehind = "consumer_behind"
    /// Every pooled rectification buffer was held by pairs the consumer kept.
    case noFreeBuffer = "no_free_buffer"
    /// The pair could not be rectified (the error was reported as an event).
    case rectificationFailed = "rectification_failed"
    /// The session stopped before the consumer read the pair.
    case sessionStopped = "session_stopped"
    /// Held back by the session's frame-rate cap (lowered under pressure, see
    /// ``PressurePolicy/adaptsFrameRate``): not a loss.
    case frameRateCap = "frame_rate_cap"
}

/// One account of a session: every frame that reached it ends in a delivered pair or a
/// drop with a reason, and frames the cameras lost before they reached it are counted
/// beside them.
///
/// For each side, once the session has stopped (``StereoSession/stop()``, or its end and
/// the consumer has read every pair): `frames(side) == pairsDelivered + pairingDrops(side)
/// + sessionDrops(side)`. While it runs, ``pairsInFlight`` pairs are on their way and
/// frames waiting in the synchronizer for a partner are not decided yet.
public struct StereoSessionStatistics: Sendable {
    /// The synchronizer's account: frames in, pairs made, pairing drops by side and reason,
    /// skew and latency distributions, the clock estimate.
    public var synchronizer: SynchronizerStatistics
    /// Frames each camera lost before they reached the session, by reason (sequence gaps,
    /// corrupt buffers, time going backwards, simulated losses) and frames a frame-rate cap
    /// held back (``DropReason/frameRateCap``).
    public var cameraDrops: PerSide<[DropReason: Int]>
    /// Pairs the session dropped after the synchronizer made them, by reason (each counts
    /// one frame on each side).
    public var sessionDrops: [SessionDropReason: Int]
    /// Pairs handed to the consumer.
    public var pairsDelivered: Int
    /// Pairs the synchronizer made that are not yet delivered or dropped.
    public var pairsInFlight: Int
    /// Pairs delivered per second over the last measurement window.
    public var pairsPerSecond: Double
    /// Time spent rectifying each pair.
    public var rectification: DurationSummary
    /// Time the consumer spent on each pair.
    public var consumer: DurationSummary
    /// The pressure level now.
    public var pressure: PressureLevel
    /// The frame rate each side delivers now (frames per second).
    public var framesPerSecond: Double?
    /// Pooled rectification buffers allocated (pairs of images).
    public var pooledBuffers: Int
    /// Every event so far (the most recent 10 000).
    public var events: [SessionEvent]

    /// Frames of `side` that reached the session.
    public func frames(_ side: StereoSide) -> Int { synchronizer.frames(side) }
    /// Pairs the synchronizer made.
    public var pairsMade: Int { synchronizer.pairs }
    /// Frames of `side` the synchronizer could not pair (all reasons).
    public func pairingDrops(_ side: StereoSide) -> Int { synchronizer.drops(side) }
    /// Frames of `side` in pairs the session dropped (all reasons; equal on both sides).
    public func sessionDrops(_ side: StereoSide) -> Int { sessionDrops.values.reduce(0, +) }
    /// Frames `side` lost before the session (all reasons).
    public func cameraDrops(_ side: StereoSide) -> Int { cameraDrops[side].values.reduce(0, +) }

    /// Every frame of `side` that reached the session is in a delivered pair, dropped with
    /// a reason, or in a pair in flight (exact once the session has stopped).
    public func accountsForEveryFrame(_ side: StereoSide) -> Bool {
        frames(side) == pairsDelivered + pairingDrops(side) + sessionDrops(side) + pairsInFlight
    }

    /// Every drop of `side` by a snake_case reason name: the cameras' (`sequence_gap`,
    /// `corrupt_buffer`, `frame_rate_cap`, …), the synchronizer's (`superseded`,
    /// `constituent_disabled`, …) and the session's (`consumer_behind`, …); zeros omitted.
    public func drops(_ side: StereoSide) -> [String: Int] {
        var all: [String: Int] = [:]
        for (reason, count) in cameraDrops[side] where count > 0 { all[reason.snakeCaseName, default: 0] += count }
        for reason in FrameDropReason.allCases {
            let count = synchronizer.drops(side, reason: reason)
            if count > 0 { all[reason.description, default: 0] += count }
        }
        for (reason, count) in sessionDrops where count > 0 { all[reason.rawValue, default: 0] += count }
        return all
    }
}

extension DropReason {
    /// `corrupt_buffer`, `sequence_gap`, `timestamp_went_backwards`, `stream_restarted`, `simulated`,
    /// `frame_rate_cap`, `corrupt_frame`, `no_decode_buffer`.
    public var snakeCaseName: String {
        switch self {
        case .corruptBuffer: "corrupt_buffer"
        case .sequenceGap: "sequence_gap"
        case .timestampWentBackwards: "timestamp_went_backwards"
        case .streamRestarted: "stream_restarted"
        case .simulated: "simulated"
        case .frameRateCap: "frame_rate_cap"
        case .corruptFrame: "corrupt_frame"
        case .noDecodeBuffer: "no_decode_buffer"
        }
    }
}
