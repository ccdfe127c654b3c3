import ParallaxGeometry

/// What a synchronizer did so far: pairs, drops by camera and reason, skew and latency
/// distributions, and the clock estimate.
public struct SynchronizerStatistics: Sendable, Hashable, CustomStringConvertible {
    /// Pairs the synchronizer made (released by its pairing rule).
    public var pairsMade: Int
    /// Pairs handed to the consumer: read from ``OutputSynchronizer/pairs`` or passed to
    /// its pair handler. Made pairs that are not delivered are waiting (``pairsWaiting``)
    /// or were dropped at the output (``pairsDroppedAtOutput``, their frames counted as
    /// ``DropReason/queueOverflow`` beside any the input queue dropped alone):
    /// `pairsMade == pairsDelivered + pairsWaiting + pairsDroppedAtOutput`. Equal to
    /// ``pairsMade`` for a bare ``SynchronizerCore``, which hands every pair over as it makes it.
    public var pairsDelivered: Int
    /// Made pairs waiting for the consumer of ``OutputSynchronizer/pairs``.
    public var pairsWaiting: Int
    /// Made pairs the output queue dropped, newest winning, before the consumer read them.
    public var pairsDroppedAtOutput: Int
    /// Pairs made (the old name of ``pairsMade``).
    @available(*, deprecated, renamed: "pairsMade")
    public var pairs: Int { pairsMade }
    /// Pairs released before their optimality was proven (maximum latency ran out, or the
    /// stream ended).
    public var pairsReleasedOnDeadline: Int
    /// Frames the left camera handed in.
    public var framesLeft: Int
    /// Frames the right camera handed in.
    public var framesRight: Int
    /// Drop counters, indexed `side.rawValue * caseCount + reason.index`; read with ``dropped(_:reason:)``.
    private var dropCounts: [Int]
    /// Times the streams were flushed because time went backwards or a sequence reset.
    public var discontinuities: Int
    /// Distribution of |skew| (nanoseconds) of the released pairs, on pairing timestamps.
    public var skew: DurationSummary
    /// Distribution of release latency (nanoseconds): from the arrival of a pair's later
    /// frame to its release.
    public var latency: DurationSummary
    /// The clock offset and drift estimate, when estimation is on and a pair was matched.
    public var clock: ClockEstimate?

    /// Creates statistics (every pair made counted as delivered); `dropCounts` has `2 × DropReason.caseCount` entries indexed `side.rawValue * caseCount + reason.index`.
    package init(
        pairs: Int, pairsReleasedOnDeadline: Int, framesLeft: Int, framesRight: Int, dropCounts: [Int],
        discontinuities: Int, skew: DurationSummary, latency: DurationSummary, clock: ClockEstimate?
    ) {
        precondition(dropCounts.count == 2 * DropReason.caseCount, "dropCounts needs one entry per side and reason")
        self.pairsMade = pairs
        self.pairsDelivered = pairs
        self.pairsWaiting = 0
        self.pairsDroppedAtOutput = 0
        self.pairsReleasedOnDeadline = pairsReleasedOnDeadline
        self.framesLeft = framesLeft
        self.framesRight = framesRight
        self.dropCounts = dropCounts
        self.discontinuities = discontinuities
        self.skew = skew
        self.latency = latency
        self.clock = clock
    }

    /// Frames of `side` dropped with `reason`, or for any reason when `reason` is `nil`
    /// (zero for a reason of another stage than the synchronizer's).
    public func dropped(_ side: StereoSide, reason: DropReason? = nil) -> Int {
        let base = side.rawValue * DropReason.caseCount
        if let reason { return dropCounts[base + reason.index] }
        return dropCounts[base..<(base + DropReason.caseCount)].reduce(0, +)
    }

    /// Frames of both cameras dropped with `reason`.
    public func dropped(reason: DropReason) -> Int { dropped(.left, reason: reason) + dropped(.right, reason: reason) }

    /// The old name of ``dropped(_:reason:)``.
    @available(*, deprecated, renamed: "dropped(_:reason:)")
    public func drops(_ side: StereoSide, reason: DropReason? = nil) -> Int { dropped(side, reason: reason) }

    /// The old name of ``dropped(reason:)``.
    @available(*, deprecated, renamed: "dropped(reason:)")
    public func drops(reason: DropReason) -> Int { dropped(reason: reason) }

    /// Frames handed in by `side`.
    public func frames(_ side: StereoSide) -> Int { side == .left ? framesLeft : framesRight }

    /// Adds `count` drops of `side` with `reason` (for drops decided outside the core, such as
    /// output overflow in ``OutputSynchronizer``).
    mutating func addDrops(_ side: StereoSide, _ reason: DropReason, _ count: Int) {
        dropCounts[side.rawValue * DropReason.caseCount + reason.index] += count
    }

    /// A multi-line report: frames, pairs, drops by reason and camera, skew, latency, clock.
    public var description: String {
        var lines = [
            "frames: left \(framesLeft), right \(framesRight); pairs \(pairsMade) made (\(pairsReleasedOnDeadline) on deadline), "
                + "\(pairsDelivered) delivered, \(pairsWaiting) waiting"
        ]
        for reason in DropReason.reasons(of: .synchronizer) {
            let l = dropped(.left, reason: reason), r = dropped(.right, reason: reason)
            if l + r > 0 { lines.append("dropped \(reason): left \(l), right \(r)") }
        }
        if discontinuities > 0 { lines.append("discontinuities: \(discontinuities)") }
        lines.append("skew: \(skew)")
        lines.append("latency: \(latency)")
        if let clock { lines.append("clock: \(clock)") }
        return lines.joined(separator: "\n")
    }
}
