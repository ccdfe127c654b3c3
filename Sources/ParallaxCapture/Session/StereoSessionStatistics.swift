import ParallaxGeometry

/// Why a session dropped a pair after the synchronizer made it (both frames count): the
/// third stage of the frame account (see ``DropReason`` for the three). The raw value is
/// the reason's stable snake_case name.
public enum SessionDropReason: String, Hashable, Sendable, CaseIterable {
    /// The consumer was behind: the pair queue was full and the newest pair won.
    case consumerBehind = "consumer_behind"
    /// Every pooled rectification buffer was held by pairs the consumer kept.
    case noFreeBuffer = "no_free_buffer"
    /// The pair could not be rectified (the error was reported as an event).
    case rectificationFailed = "rectification_failed"
    /// The session stopped before the consumer read the pair.
    case sessionStopped = "session_stopped"
    /// Held back by the session's own adaptive frame-rate cap (lowered under pressure, see
    /// ``PressurePolicy/adaptsFrameRate``): not a loss. A device's fixed cap holds frames
    /// back before they reach the session (``DropReason/frameRateCap``).
    case adaptiveFrameRateCap = "adaptive_frame_rate_cap"
}

/// One account of a session, in two parts a user can check from outside.
///
/// **Lost by the camera** (``lost(_:reason:)``; ``lostByCamera`` by ``DropReason``,
/// ``lostByName(_:)`` by name): frames that never reached
/// the session, so they are not among its frames: sequence gaps, damaged buffers and
/// undecodable JPEGs, time going backwards, a restart of the stream, simulated losses, and
/// frames a device's fixed frame-rate cap held back (`frame_rate_cap`).
///
/// **Dropped** (``dropped(_:)``, by reason ``dropped(_:reason:)-(_,FrameDropReason)`` and
/// ``dropped(_:reason:)-(_,SessionDropReason)``, by name ``droppedByName(_:)``): frames that reached the session and were not
/// handed on in a pair, either because the synchronizer could not pair them
/// (``FrameDropReason``) or because the session dropped the pair it made
/// (``SessionDropReason``: the consumer behind, no free buffer, its own adaptive cap
/// `adaptive_frame_rate_cap`, the end).
///
/// For each side, once the session has stopped (``StereoSession/stop()``, or its end and
/// the consumer has read every pair), exactly:
///
///     frames(side) == pairsDelivered + dropped(side)
///
/// (``accountsForEveryFrame(_:)``). While it runs, ``pairsInFlight`` pairs are on their
/// way and frames waiting in the synchronizer for a partner are not decided yet. The three
/// stages' reason names are distinct, so every name says which part it belongs to.
public struct StereoSessionStatistics: Sendable {
    /// The synchronizer's account: frames in, pairs made, pairing drops by side and reason,
    /// skew and latency distributions, the clock estimate.
    public var synchronizer: SynchronizerStatistics
    /// Frames each camera lost before they reached the session, by reason; not among
    /// ``frames(_:)``.
    public var lostByCamera: PerSide<[DropReason: Int]>
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
    public var pairsMade: Int { synchronizer.pairsMade }

    /// Frames `side`'s camera lost before they reached the session, with `reason`, or for
    /// any reason when `reason` is `nil`.
    public func lost(_ side: StereoSide, reason: DropReason? = nil) -> Int {
        if let reason { return lostByCamera[side][reason, default: 0] }
        return lostByCamera[side].values.reduce(0, +)
    }

    /// Frames of `side` that reached the session and were dropped, for any reason: those
    /// the synchronizer could not pair and those in pairs the session dropped.
    public func dropped(_ side: StereoSide) -> Int {
        synchronizer.dropped(side) + sessionDrops.values.reduce(0, +)
    }

    /// Frames of `side` the synchronizer could not pair with `reason`.
    public func dropped(_ side: StereoSide, reason: FrameDropReason) -> Int { synchronizer.dropped(side, reason: reason) }

    /// Frames of `side` in pairs the session dropped with `reason` (equal on both sides:
    /// a dropped pair holds one frame of each).
    public func dropped(_ side: StereoSide, reason: SessionDropReason) -> Int { sessionDrops[reason, default: 0] }

    /// Every frame of `side` that reached the session is in a delivered pair, dropped with
    /// a reason, or in a pair in flight (exact once the session has stopped).
    public func accountsForEveryFrame(_ side: StereoSide) -> Bool {
        frames(side) == pairsDelivered + dropped(side) + pairsInFlight
    }

    /// The frames of `side` that reached the session and were dropped, by snake_case reason
    /// name: the synchronizer's (`superseded`, `constituent_disabled`, …) and the session's
    /// (`consumer_behind`, `adaptive_frame_rate_cap`, …); zeros omitted. `stream --json`
    /// prints these as `dropped`.
    public func droppedByName(_ side: StereoSide) -> [String: Int] {
        var all: [String: Int] = [:]
        for reason in FrameDropReason.allCases {
            let count = synchronizer.dropped(side, reason: reason)
            if count > 0 { all[reason.rawValue, default: 0] += count }
        }
        for (reason, count) in sessionDrops where count > 0 { all[reason.rawValue, default: 0] += count }
        return all
    }

    /// The frames `side`'s camera lost, by snake_case reason name (`sequence_gap`,
    /// `corrupt_frame`, `frame_rate_cap`, …); zeros omitted. `stream --json` prints these as
    /// `lost_by_camera`.
    public func lostByName(_ side: StereoSide) -> [String: Int] {
        var all: [String: Int] = [:]
        for (reason, count) in lostByCamera[side] where count > 0 { all[reason.rawValue, default: 0] += count }
        return all
    }
}
