/// The synchronizer's deterministic state machine: single-threaded, driven by the caller's
/// clock, so that tests and offline tools (``RecordedStreamPairing``, `parallax pair`)
/// replay exactly what a live ``OutputSynchronizer`` would do.
///
/// Feed frames with ``push(_:timestampNanoseconds:sequence:exposureNanoseconds:origin:payload:now:emit:)``;
/// every frame comes out exactly once through `emit`, in a pair or in a drop. Nothing is
/// allocated per frame: waiting frames live in preallocated rings.
///
/// ## The approximate policy and its proof rule
///
/// Call the oldest waiting frames of the two cameras the *heads*, `e` the earlier head
/// (on camera E) and `h` the later one (on camera H). The pairs contiguous to the previous
/// pair are `(e, x)` for x at or after `h` on H, and `(y, h)` for y at or after `e` on E.
/// Every `(e, x)` spreads at least `h − e`, which `(e, h)` already achieves, so the best
/// contiguous pair contains `h`, and its partner is the E frame closest to `h`, counting
/// frames not yet arrived. The partner `p` among the waiting E frames is found by walking
/// from `e` while the distance to `h` shrinks (ties keep the earlier frame). The choice is
/// *proven* when no future E frame can be strictly closer:
///
/// - the walk stopped at a waiting E frame at least as far from `h` as `p` (frames after it
///   are later still, so farther), or `p` coincides with `h`; or
/// - the next E frame cannot arrive before `last + s`, where `last` is the latest E pairing
///   timestamp seen and `s` the minimum frame spacing
///   (``SynchronizerConfiguration/minimumFrameSpacingNanoseconds``), and
///   `last + s − h ≥ |h − p|`.
///
/// With a known frame interval the second case holds the moment the later frame of a pair
/// arrives unless the skew exceeds about half the spacing, so pairs are released with no
/// waiting; without it (s = 1 ns) a pair waits for the next frame of the partner's camera,
/// as in message_filters.
///
/// The maximum skew enters through one rule: when `h − e` exceeds it, `e` is farther than
/// that from every frame that may still be its partner (`h` and later H frames), so `e` is
/// dropped (``FrameDropReason/noMatchWithinSkew``) and no longer counts for contiguity.
/// Otherwise the best partner of `h` is within the skew (it is at most `h − e` away). When
/// one camera has no waiting frame, its next frame is at least `last + s`, so the other
/// camera's head is dropped as soon as `last + s` lies more than the maximum skew after it,
/// or once it has waited the maximum latency with the other camera silent (its partner
/// was lost; waiting longer would only hold a driver buffer).
/// Each decision depends only on the timestamps, never on when frames arrived, so a live
/// run and an offline replay of the same streams make the same pairs. Unproven pairs are released anyway after
/// ``SynchronizerConfiguration/maximumLatencyNanoseconds`` (flagged
/// ``SynchronizedPair/releasedOnDeadline``) or at ``finish(now:emit:)``.
///
/// E frames skipped over by a pair are dropped as ``FrameDropReason/superseded`` when they
/// were within the maximum skew of `h`, else as ``FrameDropReason/noMatchWithinSkew``.
public final class SynchronizerCore<Payload> {
    /// The configuration the core was made with.
    public let configuration: SynchronizerConfiguration
    /// Called for every pair and every dropped frame, in order.
    public typealias Emit = (SynchronizerEvent<Payload>) -> Void

    private let queues: [FrameRing<SynchronizedFrame<Payload>>]
    /// Latest pairing timestamp pushed per side (consumed or not), for the spacing bound.
    private var lastPairing: [Int64?] = [nil, nil]
    /// Latest mid-exposure timestamp per side, to detect time going backwards.
    private var lastMidExposure: [Int64?] = [nil, nil]
    private var lastSequence: [UInt64?] = [nil, nil]
    private var enabled: [Bool] = [true, true]
    private let spacing: Int64
    private let clock: ClockEstimator?

    // Statistics.
    private var framesPushed: [Int] = [0, 0]
    private var dropCounts: [Int] = Array(repeating: 0, count: 2 * FrameDropReason.caseCount)
    private var pairCount = 0
    private var deadlinePairCount = 0
    private var discontinuityCount = 0
    private var skews = DurationHistogram()
    private var latencies = DurationHistogram()

    /// Creates a core; see ``SynchronizerConfiguration`` for what each setting does.
    /// Capacities below 1 are raised to 1.
    public init(configuration: SynchronizerConfiguration) {
        self.configuration = configuration
        let capacity = max(1, configuration.queueCapacity)
        queues = [FrameRing(capacity: capacity), FrameRing(capacity: capacity)]
        spacing = configuration.minimumFrameSpacingNanoseconds
        switch configuration.clockCorrection {
        case .off: clock = nil
        case .estimate, .apply:
            clock = ClockEstimator(
                window: configuration.clockEstimatorWindow,
                frameIntervalNanoseconds: configuration.frameIntervalNanoseconds)
        }
    }

    /// Frames waiting for a partner on `side`.
    public func waitingFrameCount(_ side: StereoSide) -> Int { queues[side.rawValue].count }

    /// Whether `side` is enabled (see ``setEnabled(_:for:now:emit:)``).
    public func isEnabled(_ side: StereoSide) -> Bool { enabled[side.rawValue] }

    // MARK: Input

    /// Hands one frame to the synchronizer.
    ///
    /// - Parameters:
    ///   - side: the camera that produced it.
    ///   - timestampNanoseconds: its capture timestamp (nanoseconds; for V4L2 the buffer
    ///     timestamp on CLOCK_MONOTONIC, never "now after dequeue").
    ///   - sequence: its sequence number (used by ``ExactMatchKey/sequence``; a sequence
    ///     number that goes backwards then counts as a reset).
    ///   - exposureNanoseconds: its exposure time, when known, to move the timestamp to
    ///     mid-exposure.
    ///   - origin: what the timestamp refers to.
    ///   - payload: carried through to the pair or drop.
    ///   - now: the current time on the caller's clock (nanoseconds): the frame's arrival,
    ///     and the clock for deadlines and latency.
    ///   - emit: receives the pairs and drops this arrival decides, in order.
    ///
    /// A timestamp that is not later than the previous one of the same camera (after
    /// mid-exposure) is a time jump or reset: every waiting frame of both cameras is dropped
    /// with ``FrameDropReason/discontinuity``, the clock estimate restarts, and this frame
    /// starts the new stretch.
    public func push(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, exposureNanoseconds: Int64? = nil,
        origin: TimestampOrigin = .endOfExposure, payload: Payload, now: Int64, emit: Emit
    ) {
        let s = side.rawValue
        framesPushed[s] += 1
        guard enabled[0] && enabled[1] else {
            drop(side, timestampNanoseconds, sequence, payload, .constituentDisabled, emit)
            return
        }
        let mid = origin.midExposure(timestampNanoseconds: timestampNanoseconds, exposureNanoseconds: exposureNanoseconds)
        let sequenceWentBack: Bool
        if case .exact(.sequence) = configuration.policy, let last = lastSequence[s] {
            sequenceWentBack = sequence <= last
        } else {
            sequenceWentBack = false
        }
        if let last = lastMidExposure[s], mid <= last || sequenceWentBack {
            flushWaiting(reason: .discontinuity, emit)
            discontinuityCount += 1
            lastPairing = [nil, nil]
            lastMidExposure = [nil, nil]
            lastSequence = [nil, nil]
            clock?.reset()
        }
        var pairing = mid
        if side == .right, configuration.clockCorrection == .apply, let offset = clock?.predictedOffset(atLeft: mid) {
            pairing = mid &- offset
        }
        // A correction that moved between frames must not make one camera's times go back.
        if let last = lastPairing[s], pairing <= last { pairing = last &+ 1 }

        let queue = queues[s]
        if queue.isFull, let oldest = queue.popFirst() {
            drop(oldest, .queueOverflow, emit)
        }
        queue.append(
            SynchronizedFrame(
                side: side, timestampNanoseconds: timestampNanoseconds, midExposureTimestampNanoseconds: mid,
                pairingTimestampNanoseconds: pairing,
                sequence: sequence, exposureNanoseconds: exposureNanoseconds, arrivalNanoseconds: now, payload: payload))
        lastPairing[s] = pairing
        lastMidExposure[s] = mid
        lastSequence[s] = sequence
        resolve(now: now, endOfStream: false, emit)
    }

    /// Reports a frame the capture layer received damaged: it is dropped with
    /// ``FrameDropReason/deviceError`` and counted; pairing state is untouched.
    public func pushDamaged(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, payload: Payload, emit: Emit
    ) {
        reject(side, timestampNanoseconds: timestampNanoseconds, sequence: sequence, payload: payload, reason: .deviceError, emit: emit)
    }

    /// Counts a frame and drops it at once with `reason`, without looking at it (for frames
    /// refused before pairing, such as after the streams finished).
    public func reject(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, payload: Payload, reason: FrameDropReason,
        emit: Emit
    ) {
        framesPushed[side.rawValue] += 1
        drop(side, timestampNanoseconds, sequence, payload, reason, emit)
    }

    /// Enables or disables one camera. While either camera is disabled no pair can be made:
    /// disabling drops every waiting frame, and frames pushed meanwhile, with
    /// ``FrameDropReason/constituentDisabled``. Enabling again starts afresh (the spacing
    /// bound forgets the old frames; the clock estimate is kept).
    public func setEnabled(_ isEnabled: Bool, for side: StereoSide, emit: Emit) {
        guard enabled[side.rawValue] != isEnabled else { return }
        enabled[side.rawValue] = isEnabled
        if !isEnabled { flushWaiting(reason: .constituentDisabled, emit) }
        lastPairing = [nil, nil]
        lastMidExposure = [nil, nil]
        lastSequence = [nil, nil]
    }

    /// Lets time pass with no frame arriving: releases pairs whose
    /// ``SynchronizerConfiguration/maximumLatencyNanoseconds`` has run out.
    public func advance(to now: Int64, emit: Emit) {
        resolve(now: now, endOfStream: false, emit)
    }

    /// The streams ended: every waiting frame is decided (no later frame can arrive, so
    /// each remaining best pair is final) and the core is ready for a new stream.
    public func finish(now: Int64, emit: Emit) {
        resolve(now: now, endOfStream: true, emit)
        lastPairing = [nil, nil]
        lastMidExposure = [nil, nil]
        lastSequence = [nil, nil]
    }

    /// Drops every waiting frame with `reason` (for example ``FrameDropReason/deviceError``
    /// when a camera failed, or ``FrameDropReason/discontinuity`` on a format change).
    public func flush(reason: FrameDropReason, emit: Emit) {
        flushWaiting(reason: reason, emit)
        lastPairing = [nil, nil]
        lastMidExposure = [nil, nil]
        lastSequence = [nil, nil]
    }

    // MARK: Statistics

    /// Counters and distributions since the core was made (or ``resetStatistics()``).
    public var statistics: SynchronizerStatistics {
        SynchronizerStatistics(
            pairs: pairCount,
            pairsReleasedOnDeadline: deadlinePairCount,
            framesLeft: framesPushed[0], framesRight: framesPushed[1],
            dropCounts: dropCounts,
            discontinuities: discontinuityCount,
            skew: skews.summary, latency: latencies.summary,
            clock: clock?.estimate)
    }

    /// Zeroes the counters and distributions (not the clock estimate).
    public func resetStatistics() {
        framesPushed = [0, 0]
        for i in dropCounts.indices { dropCounts[i] = 0 }
        pairCount = 0
        deadlinePairCount = 0
        discontinuityCount = 0
        skews.reset()
        latencies.reset()
    }

    /// The current clock estimate, if any pair was matched since the last reset.
    public var clockEstimate: ClockEstimate? { clock?.estimate }

    // MARK: Decisions

    private func resolve(now: Int64, endOfStream: Bool, _ emit: Emit) {
        let maxSkew = configuration.maximumSkewNanoseconds
        while true {
            let left = queues[0], right = queues[1]
            guard let l = left.first, let r = right.first else {
                guard let waitingSide = left.isEmpty ? (right.isEmpty ? nil : StereoSide.right) : .left else { return }
                if !resolveLone(waitingSide, now: now, endOfStream: endOfStream, maxSkew: maxSkew, emit) { return }
                continue
            }
            switch configuration.policy {
            case .exact(.timestamp):
                if l.pairingTimestampNanoseconds == r.pairingTimestampNanoseconds {
                    makePair(partnerSide: .left, partnerIndex: 0, now: now, deadline: false, emit)
                } else {
                    dropHead(l.pairingTimestampNanoseconds < r.pairingTimestampNanoseconds ? .left : .right, .noMatchWithinSkew, emit)
                }
            case .exact(.sequence):
                if l.sequence == r.sequence {
                    if distance(l.pairingTimestampNanoseconds, r.pairingTimestampNanoseconds) <= maxSkew {
                        makePair(partnerSide: .left, partnerIndex: 0, now: now, deadline: false, emit)
                    } else {
                        dropHead(.left, .noMatchWithinSkew, emit)
                        dropHead(.right, .noMatchWithinSkew, emit)
                    }
                } else {
                    dropHead(l.sequence < r.sequence ? .left : .right, .noMatchWithinSkew, emit)
                }
            case .epsilon(let tolerance):
                let bound = min(tolerance, maxSkew)
                if distance(l.pairingTimestampNanoseconds, r.pairingTimestampNanoseconds) <= bound {
                    makePair(partnerSide: .left, partnerIndex: 0, now: now, deadline: false, emit)
                } else {
                    dropHead(l.pairingTimestampNanoseconds < r.pairingTimestampNanoseconds ? .left : .right, .noMatchWithinSkew, emit)
                }
            case .approximate:
                if !resolveApproximate(l, r, now: now, endOfStream: endOfStream, maxSkew: maxSkew, emit) { return }
            }
        }
    }

    /// One step of the approximate policy with both heads present; `false` when it must wait.
    private func resolveApproximate(
        _ l: SynchronizedFrame<Payload>, _ r: SynchronizedFrame<Payload>, now: Int64, endOfStream: Bool,
        maxSkew: Int64, _ emit: Emit
    ) -> Bool {
        let earlierSide: StereoSide = l.pairingTimestampNanoseconds <= r.pairingTimestampNanoseconds ? .left : .right
        let candidates = queues[earlierSide.rawValue]
        let later = earlierSide == .left ? r : l
        let target = later.pairingTimestampNanoseconds
        if target &- candidates[0].pairingTimestampNanoseconds > maxSkew {
            // The earlier head is too far from the later head, hence from every frame that
            // may still be its partner.
            dropHead(earlierSide, .noMatchWithinSkew, emit)
            return true
        }
        var best = 0
        var bestDistance = distance(candidates[0].pairingTimestampNanoseconds, target)
        var walkStopped = false
        var index = 1
        while index < candidates.count {
            let d = distance(candidates[index].pairingTimestampNanoseconds, target)
            if d < bestDistance {
                best = index
                bestDistance = d
            } else {
                walkStopped = true
                break
            }
            index += 1
        }
        var proven = walkStopped || bestDistance == 0 || endOfStream
        if !proven, let last = lastPairing[earlierSide.rawValue] {
            proven = (last &+ spacing) &- target >= bestDistance
        }
        if proven {
            makePair(partnerSide: earlierSide, partnerIndex: best, now: now, deadline: false, emit)
            return true
        }
        let arrival = max(later.arrivalNanoseconds, candidates[best].arrivalNanoseconds)
        if now &- arrival >= configuration.maximumLatencyNanoseconds {
            makePair(partnerSide: earlierSide, partnerIndex: best, now: now, deadline: true, emit)
            return true
        }
        return false
    }

    /// `side` has frames and the other camera none: drops the head when no future frame of
    /// the other camera can be close enough. `false` when it must wait.
    private func resolveLone(_ side: StereoSide, now: Int64, endOfStream: Bool, maxSkew: Int64, _ emit: Emit) -> Bool {
        guard let head = queues[side.rawValue].first else { return false }
        if endOfStream {
            dropHead(side, .noMatchWithinSkew, emit)
            return true
        }
        let other = side.opposite.rawValue
        if case .exact(.sequence) = configuration.policy, let last = lastSequence[other], head.sequence <= last {
            dropHead(side, .noMatchWithinSkew, emit)
            return true
        }
        guard let last = lastPairing[other] else { return false }
        let earliestFuture = last &+ spacing
        let bound: Int64
        switch configuration.policy {
        case .exact(.timestamp): bound = 0
        case .epsilon(let tolerance): bound = min(tolerance, maxSkew)
        case .exact(.sequence), .approximate: bound = maxSkew
        }
        if earliestFuture &- head.pairingTimestampNanoseconds > bound {
            dropHead(side, .noMatchWithinSkew, emit)
            return true
        }
        // The other camera has been silent for the whole maximum latency: its frame for this
        // moment is lost or too late to matter, and this frame may be holding a driver buffer.
        if now &- head.arrivalNanoseconds >= configuration.maximumLatencyNanoseconds {
            dropHead(side, .noMatchWithinSkew, emit)
            return true
        }
        return false
    }

    /// Pairs the head of the later camera with frame `partnerIndex` of `partnerSide`,
    /// dropping the partner camera's frames before it.
    private func makePair(partnerSide: StereoSide, partnerIndex: Int, now: Int64, deadline: Bool, _ emit: Emit) {
        let partnerQueue = queues[partnerSide.rawValue]
        let otherQueue = queues[partnerSide.opposite.rawValue]
        guard let target = otherQueue.first?.pairingTimestampNanoseconds else { return }
        for _ in 0..<partnerIndex {
            guard let skipped = partnerQueue.popFirst() else { return }
            let reason: FrameDropReason =
                distance(skipped.pairingTimestampNanoseconds, target) <= configuration.maximumSkewNanoseconds
                ? .superseded : .noMatchWithinSkew
            drop(skipped, reason, emit)
        }
        guard let partner = partnerQueue.popFirst(), let other = otherQueue.popFirst() else { return }
        let (left, right) = partnerSide == .left ? (partner, other) : (other, partner)
        let pair = SynchronizedPair(left: left, right: right, releaseNanoseconds: now, releasedOnDeadline: deadline)
        pairCount += 1
        if deadline { deadlinePairCount += 1 }
        skews.record(pair.skewNanoseconds)
        latencies.record(max(0, pair.latencyNanoseconds))
        clock?.add(left: left.midExposureTimestampNanoseconds, right: right.midExposureTimestampNanoseconds)
        emit(.pair(pair))
    }

    private func dropHead(_ side: StereoSide, _ reason: FrameDropReason, _ emit: Emit) {
        if let frame = queues[side.rawValue].popFirst() { drop(frame, reason, emit) }
    }

    private func flushWaiting(reason: FrameDropReason, _ emit: Emit) {
        // Oldest first across both cameras, so drop events stay in time order.
        while true {
            let l = queues[0].first, r = queues[1].first
            guard l != nil || r != nil else { return }
            if let l, r == nil || l.pairingTimestampNanoseconds <= r.unsafelyUnwrapped.pairingTimestampNanoseconds {
                dropHead(.left, reason, emit)
            } else {
                dropHead(.right, reason, emit)
            }
        }
    }

    private func drop(_ frame: SynchronizedFrame<Payload>, _ reason: FrameDropReason, _ emit: Emit) {
        drop(frame.side, frame.timestampNanoseconds, frame.sequence, frame.payload, reason, emit)
    }

    private func drop(
        _ side: StereoSide, _ timestamp: Int64, _ sequence: UInt64, _ payload: Payload, _ reason: FrameDropReason,
        _ emit: Emit
    ) {
        dropCounts[side.rawValue * FrameDropReason.caseCount + reason.rawValue] += 1
        emit(.drop(FrameDrop(side: side, timestampNanoseconds: timestamp, sequence: sequence, reason: reason), payload: payload))
    }

    @inline(__always)
    private func distance(_ a: Int64, _ b: Int64) -> Int64 {
        a >= b ? a &- b : b &- a
    }
}
