import ParallaxGeometry

/// One account of a session, in two parts a user can check from outside.
///
/// **Lost by the camera** (``lost(_:reason:)``; ``lostByCamera`` by ``DropReason``,
/// ``lostByName(_:)`` by name): frames that never reached
/// the session, so they are not among its frames: sequence gaps, damaged buffers and
/// undecodable JPEGs, time going backwards, a restart of the stream, simulated losses, and
/// frames a device's fixed frame-rate cap held back (`frame_rate_cap`).
///
/// **Dropped** (``dropped(_:)``, by reason ``dropped(_:reason:)``, by name
/// ``droppedByName(_:)``): frames that reached the session and were not handed on in a
/// pair, either because the synchronizer could not pair them (a
/// ``DropReason/Stage/synchronizer`` reason) or because the session dropped the pair it
/// made (a ``DropReason/Stage/session`` reason: the consumer behind, no free buffer, its
/// own adaptive cap `adaptive_frame_rate_cap`, the end).
///
/// For each side, once the session has stopped (``StereoSession/stop()``, or its end and
/// the consumer has read every pair), exactly:
///
///     frames(side) == pairsDelivered + dropped(side)
///
/// (``accountsForEveryFrame(_:)``, which checks each stage's own counts: the synchronizer's
/// frames against its pairs and drops, its pairs against those the session received, and
/// those against the pairs delivered, dropped and still held, ``pairsInFlight``, counted
/// where they are). While it runs, ``pairsInFlight`` pairs are on their way and frames
/// waiting in the synchronizer for a partner are not decided yet. The three
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
    public var sessionDrops: [DropReason: Int]
    /// Pairs the session received from the synchronizer (``pairsMade`` once it has stopped).
    public var pairsReceived: Int
    /// Pairs handed to the consumer.
    public var pairsDelivered: Int
    /// Pairs the session holds: received, not yet delivered or dropped. Counted where they
    /// are (waiting for the session thread, being rectified, in the consumer's queue), not
    /// derived from the other counts; 0 once the session has stopped and the consumer has
    /// read every pair (or ``StereoSession/stop()`` dropped them).
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
        synchronizer.dropped(side) + sessionDropped
    }

    /// Frames of `side` that reached the session and were dropped with `reason`: by the
    /// synchronizer (a ``DropReason/Stage/synchronizer`` reason) or in pairs the session
    /// dropped (a ``DropReason/Stage/session`` reason, equal on both sides: a dropped pair
    /// holds one frame of each). Zero for a camera's reason: those frames never reached the
    /// session (``lost(_:reason:)``).
    public func dropped(_ side: StereoSide, reason: DropReason) -> Int {
        switch reason.stage {
        case .camera: 0
        case .synchronizer: synchronizer.dropped(side, reason: reason)
        case .session: sessionDrops[reason, default: 0]
        }
    }

    /// Pairs the session dropped, for any reason.
    public var sessionDropped: Int { sessionDrops.values.reduce(0, +) }

    /// Every frame of `side` that reached the session is in a delivered pair, dropped with
    /// a reason, or in a pair in flight (exact once the session has stopped), each stage
    /// checked on its own counts: the synchronizer's frames are its pairs and its drops,
    /// its pairs are the pairs the session received, and those are the pairs delivered,
    /// dropped by the session and held (``pairsInFlight``).
    public func accountsForEveryFrame(_ side: StereoSide) -> Bool {
        frames(side) == pairsMade + synchronizer.dropped(side)
            && pairsMade == pairsReceived
            && pairsReceived == pairsDelivered + sessionDropped + pairsInFlight
    }

    /// What does not add up in a closed account, or nil: once the session has stopped and its
    /// pairs are read (or ``StereoSession/stop()`` dropped them), every frame of both sides
    /// is accounted for (``accountsForEveryFrame(_:)``) and no pair is in flight. A message
    /// here is a defect in Parallax: `stream` and `view` end with it as an error.
    public var accountDiscrepancy: String? {
        if StereoSide.allCases.allSatisfy(accountsForEveryFrame) && pairsInFlight == 0 { return nil }
        return "the frame account does not close: frames left \(frames(.left)), right \(frames(.right)); "
            + "the synchronizer dropped left \(synchronizer.dropped(.left)), right \(synchronizer.dropped(.right)) and made "
            + "\(pairsMade) pairs; the session received \(pairsReceived), delivered \(pairsDelivered), dropped "
            + "\(sessionDropped) and holds \(pairsInFlight)"
    }

    /// The frames of `side` that reached the session and were dropped, by snake_case reason
    /// name: the synchronizer's (`superseded`, `constituent_disabled`, …) and the session's
    /// (`consumer_behind`, `adaptive_frame_rate_cap`, …); zeros omitted. `stream --json`
    /// prints these as `dropped`.
    public func droppedByName(_ side: StereoSide) -> [String: Int] {
        var all: [String: Int] = [:]
        for reason in DropReason.allCases where reason.stage != .camera {
            let count = dropped(side, reason: reason)
            if count > 0 { all[reason.rawValue] = count }
        }
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
