import ParallaxGeometry

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A waiting frame as the engine sees it: timestamps and the payload's slot, no payload.
@usableFromInline
struct EngineFrame {
    @usableFromInline var timestamp: Int64
    @usableFromInline var midExposure: Int64
    @usableFromInline var pairing: Int64
    @usableFromInline var sequence: UInt64
    @usableFromInline var exposure: Int64?
    @usableFromInline var arrival: Int64
    /// Where ``SynchronizerCore`` keeps the payload.
    @usableFromInline var slot: Int32

    @inlinable
    func frame<Payload>(side: StereoSide, payload: Payload) -> SynchronizedFrame<Payload> {
        SynchronizedFrame(
            side: side, timestampNanoseconds: timestamp, midExposureTimestampNanoseconds: midExposure,
            pairingTimestampNanoseconds: pairing, sequence: sequence, exposureNanoseconds: exposure,
            arrivalNanoseconds: arrival, payload: payload)
    }
}

/// What the engine decided; ``SynchronizerCore`` attaches the payloads.
@usableFromInline
enum EngineEvent {
    case pair(left: EngineFrame, right: EngineFrame, release: Int64, deadline: Bool)
    case drop(side: StereoSide, frame: EngineFrame, reason: DropReason)
}

/// The synchronizer's decisions, on timestamps only. Not generic, so that it is compiled
/// for its concrete data (generic code run through metadata was several times slower);
/// ``SynchronizerCore`` wraps it with payloads. See ``SynchronizerCore`` for the rules.
@usableFromInline
struct SynchronizerEngine {
    @usableFromInline let configuration: SynchronizerConfiguration
    private var leftQueue: Ring<EngineFrame>
    private var rightQueue: Ring<EngineFrame>
    /// Decisions since the owner last drained them; at most every waiting frame plus one.
    @usableFromInline var events: Ring<EngineEvent>
    /// Latest pairing timestamp pushed per side (consumed or not), for the spacing bound.
    private var lastPairing = PerSide<Int64?>(repeating: nil)
    /// Latest mid-exposure timestamp per side, to detect time going backwards.
    private var lastMidExposure = PerSide<Int64?>(repeating: nil)
    private var lastSequence = PerSide<UInt64?>(repeating: nil)
    /// Why each side is off (switched off, or disconnected), or `nil` while it is on.
    private var off = PerSide<DropReason?>(repeating: nil)
    private let spacing: Int64
    private let estimatesClock: Bool
    private let appliesClock: Bool
    private var clock: ClockEstimator

    // Statistics.
    private var framesPushed = PerSide(repeating: 0)
    private var dropCounts: [Int] = Array(repeating: 0, count: 2 * DropReason.caseCount)
    private var pairCount = 0
    private var deadlinePairCount = 0
    private var discontinuityCount = 0
    private var skews = DurationHistogram()
    private var latencies = DurationHistogram()

    /// Frames that can be waiting at once: both queues full plus the one being pushed.
    @usableFromInline var maximumLiveFrames: Int { 2 * leftQueue.capacity + 1 }

    @usableFromInline
    init(configuration: SynchronizerConfiguration) {
        self.configuration = configuration
        let capacity = max(1, configuration.queueCapacity)
        leftQueue = Ring(capacity: capacity)
        rightQueue = Ring(capacity: capacity)
        events = Ring(capacity: 2 * capacity + 2)
        spacing = configuration.minimumFrameSpacingNanoseconds
        estimatesClock = configuration.clockCorrection != .off
        appliesClock = configuration.clockCorrection == .apply
        clock = ClockEstimator(
            window: configuration.clockEstimatorWindow, frameIntervalNanoseconds: configuration.frameIntervalNanoseconds)
    }

    @usableFromInline func waitingFrameCount(_ side: StereoSide) -> Int { side == .left ? leftQueue.count : rightQueue.count }
    @usableFromInline func isEnabled(_ side: StereoSide) -> Bool { off[side] == nil }

    // MARK: Input

    @usableFromInline
    mutating func push(
        _ side: StereoSide, timestamp: Int64, sequence: UInt64, exposure: Int64?, timestampSource: TimestampSource, slot: Int32,
        now: Int64
    ) {
        framesPushed[side] += 1
        let mid = timestampSource.midExposure(timestampNanoseconds: timestamp, exposureNanoseconds: exposure)
        var frame = EngineFrame(
            timestamp: timestamp, midExposure: mid, pairing: mid, sequence: sequence, exposure: exposure, arrival: now,
            slot: slot)
        // While either side is off nothing can pair; the frame is dropped for why its partner
        // is missing.
        if let reason = off[side.opposite] ?? off[side] {
            events.append(.drop(side: side, frame: frame, reason: reason))
            count(side, reason)
            return
        }
        var sequenceWentBack = false
        if case .exact(.sequence) = configuration.policy, let last = lastSequence[side] { sequenceWentBack = sequence <= last }
        if let last = lastMidExposure[side], mid <= last || sequenceWentBack {
            flushWaiting(reason: .discontinuity)
            discontinuityCount += 1
            forgetHistory()
            clock.reset()
        }
        if side == .right, appliesClock, let offset = clock.predictedOffset(atLeft: mid) {
            frame.pairing = mid &- offset
        }
        // A correction that moved between frames must not make one camera's times go back.
        if let last = lastPairing[side], frame.pairing <= last { frame.pairing = last &+ 1 }
        if side == .left ? leftQueue.isFull : rightQueue.isFull { dropHead(side, .queueOverflow) }
        if side == .left { leftQueue.append(frame) } else { rightQueue.append(frame) }
        lastPairing[side] = frame.pairing
        lastMidExposure[side] = mid
        lastSequence[side] = sequence
        if needsPhase && !leftQueue.isEmpty && !rightQueue.isEmpty {
            // Hold decisions until both cameras have shown enough frames for the phase.
            let enough = min(Self.phaseAcquisitionFrames, leftQueue.capacity)
            guard (leftQueue.count >= enough && rightQueue.count >= enough) || leftQueue.isFull || rightQueue.isFull
            else { return }
            acquirePhase()
        }
        resolve(now: now, endOfStream: false)
    }

    /// Frames per camera the phase is measured on before the first pair under
    /// ``ClockCorrection/apply`` (capped by the queue capacity).
    static var phaseAcquisitionFrames: Int { 8 }

    /// Under ``ClockCorrection/apply`` with a known frame interval, nothing is known of the
    /// clock offset before the first pair, and pairing raw timestamps would take the wrong
    /// neighbour whenever offset plus jitter passes half an interval. The offset modulo the
    /// interval (the phase) is unambiguous for any offset below half an interval, and a
    /// circular mean over a few frames measures it well despite the jitter.
    private var needsPhase: Bool {
        appliesClock && configuration.frameIntervalNanoseconds != nil && !clock.hasReference
    }

    /// Measures the right camera's phase against the left one on the waiting frames (the
    /// circular mean of right − nearest left, modulo the frame interval), seeds the clock
    /// estimator with it and re-stamps the waiting right frames.
    private mutating func acquirePhase() {
        guard let interval = configuration.frameIntervalNanoseconds, interval > 0, !leftQueue.isEmpty else { return }
        let period = Double(interval)
        var sumCos = 0.0, sumSin = 0.0
        var l = 0
        for r in 0..<rightQueue.count {
            let right = rightQueue[r].midExposure
            while l + 1 < leftQueue.count,
                distance(leftQueue[l + 1].midExposure, right) <= distance(leftQueue[l].midExposure, right)
            {
                l += 1
            }
            let angle = 2 * Double.pi * Double(right &- leftQueue[l].midExposure) / period
            sumCos += cos(angle)
            sumSin += sin(angle)
        }
        let phase = Int64((atan2(sumSin, sumCos) / (2 * Double.pi) * period).rounded())
        clock.seed(offsetNanoseconds: phase)
        var previous: Int64?
        for r in 0..<rightQueue.count {
            var frame = rightQueue[r]
            frame.pairing = frame.midExposure &- phase
            if let previous, frame.pairing <= previous { frame.pairing = previous &+ 1 }
            previous = frame.pairing
            rightQueue.replace(at: r, with: frame)
        }
        lastPairing.right = previous
    }

    @usableFromInline
    mutating func reject(_ side: StereoSide, timestamp: Int64, sequence: UInt64, slot: Int32, reason: DropReason) {
        framesPushed[side] += 1
        let frame = EngineFrame(
            timestamp: timestamp, midExposure: timestamp, pairing: timestamp, sequence: sequence, exposure: nil,
            arrival: 0, slot: slot)
        events.append(.drop(side: side, frame: frame, reason: reason))
        count(side, reason)
    }

    @usableFromInline
    mutating func setEnabled(_ isEnabled: Bool, for side: StereoSide, dropping reason: DropReason) {
        guard isEnabled else {
            // Already off: only the reason changes (a camera switched off while unplugged).
            if off[side] != nil {
                off[side] = reason
                return
            }
            off[side] = reason
            flushWaiting(reason: reason)
            forgetHistory()
            return
        }
        guard off[side] != nil else { return }
        off[side] = nil
        forgetHistory()
    }

    @usableFromInline
    mutating func advance(to now: Int64) {
        // While the phase is being acquired with both cameras waiting, nothing is decided.
        if needsPhase && !leftQueue.isEmpty && !rightQueue.isEmpty { return }
        resolve(now: now, endOfStream: false)
    }

    @usableFromInline
    mutating func finish(now: Int64) {
        if needsPhase && !leftQueue.isEmpty && !rightQueue.isEmpty { acquirePhase() }
        resolve(now: now, endOfStream: true)
        forgetHistory()
    }

    @usableFromInline
    mutating func flush(reason: DropReason) {
        flushWaiting(reason: reason)
        forgetHistory()
    }

    private mutating func forgetHistory() {
        lastPairing = PerSide(repeating: nil)
        lastMidExposure = PerSide(repeating: nil)
        lastSequence = PerSide(repeating: nil)
    }

    // MARK: Statistics

    @usableFromInline
    var statistics: SynchronizerStatistics {
        SynchronizerStatistics(
            pairs: pairCount, pairsReleasedOnDeadline: deadlinePairCount,
            framesLeft: framesPushed.left, framesRight: framesPushed.right, dropCounts: dropCounts,
            discontinuities: discontinuityCount, skew: skews.summary, latency: latencies.summary,
            clock: estimatesClock ? clock.estimate : nil)
    }

    @usableFromInline var clockEstimate: ClockEstimate? { estimatesClock ? clock.estimate : nil }

    // MARK: Decisions

    private mutating func resolve(now: Int64, endOfStream: Bool) {
        let maxSkew = configuration.maximumSkewNanoseconds
        while true {
            guard let l = leftQueue.first, let r = rightQueue.first else {
                let waitingSide: StereoSide
                if !leftQueue.isEmpty { waitingSide = .left } else if !rightQueue.isEmpty { waitingSide = .right } else { return }
                if !resolveLone(waitingSide, now: now, endOfStream: endOfStream, maxSkew: maxSkew) { return }
                continue
            }
            switch configuration.policy {
            case .exact(.timestamp):
                if l.pairing == r.pairing {
                    makePair(partnerSide: .left, partnerIndex: 0, now: now, deadline: false)
                } else {
                    dropHead(l.pairing < r.pairing ? .left : .right, .noMatchWithinSkew)
                }
            case .exact(.sequence):
                if l.sequence == r.sequence {
                    if distance(l.pairing, r.pairing) <= maxSkew {
                        makePair(partnerSide: .left, partnerIndex: 0, now: now, deadline: false)
                    } else {
                        dropHead(.left, .noMatchWithinSkew)
                        dropHead(.right, .noMatchWithinSkew)
                    }
                } else {
                    dropHead(l.sequence < r.sequence ? .left : .right, .noMatchWithinSkew)
                }
            case .epsilon(let tolerance):
                if distance(l.pairing, r.pairing) <= min(tolerance, maxSkew) {
                    makePair(partnerSide: .left, partnerIndex: 0, now: now, deadline: false)
                } else {
                    dropHead(l.pairing < r.pairing ? .left : .right, .noMatchWithinSkew)
                }
            case .approximate:
                if !resolveApproximate(l, r, now: now, endOfStream: endOfStream, maxSkew: maxSkew) { return }
            }
        }
    }

    /// One step of the approximate policy with both heads present; `false` when it must wait.
    private mutating func resolveApproximate(
        _ l: EngineFrame, _ r: EngineFrame, now: Int64, endOfStream: Bool, maxSkew: Int64
    ) -> Bool {
        let earlierSide: StereoSide = l.pairing <= r.pairing ? .left : .right
        let later = earlierSide == .left ? r : l
        let target = later.pairing
        let head = earlierSide == .left ? l : r
        if target &- head.pairing > maxSkew {
            // The earlier head is too far from the later head, hence from every frame that
            // may still be its partner.
            dropHead(earlierSide, .noMatchWithinSkew)
            return true
        }
        var best = 0
        var bestDistance = distance(head.pairing, target)
        var bestArrival = head.arrival
        var walkStopped = false
        let count = waitingFrameCount(earlierSide)
        var index = 1
        while index < count {
            let candidate = earlierSide == .left ? leftQueue[index] : rightQueue[index]
            let d = distance(candidate.pairing, target)
            if d < bestDistance {
                best = index
                bestDistance = d
                bestArrival = candidate.arrival
            } else {
                walkStopped = true
                break
            }
            index += 1
        }
        var proven = walkStopped || bestDistance == 0 || endOfStream
        if !proven, let last = lastPairing[earlierSide] {
            proven = (last &+ spacing) &- target >= bestDistance
        }
        if proven {
            makePair(partnerSide: earlierSide, partnerIndex: best, now: now, deadline: false)
            return true
        }
        if now &- max(later.arrival, bestArrival) >= configuration.maximumLatencyNanoseconds {
            makePair(partnerSide: earlierSide, partnerIndex: best, now: now, deadline: true)
            return true
        }
        return false
    }

    /// `side` has frames and the other camera none: drops the head when no future frame of
    /// the other camera can be close enough, or when it waited the maximum latency.
    /// `false` when it must wait.
    private mutating func resolveLone(_ side: StereoSide, now: Int64, endOfStream: Bool, maxSkew: Int64) -> Bool {
        guard let head = first(side) else { return false }
        if endOfStream {
            dropHead(side, .noMatchWithinSkew)
            return true
        }
        let other = side.opposite
        if case .exact(.sequence) = configuration.policy, let last = lastSequence[other], head.sequence <= last {
            dropHead(side, .noMatchWithinSkew)
            return true
        }
        guard let last = lastPairing[other] else { return false }
        let bound: Int64
        switch configuration.policy {
        case .exact(.timestamp): bound = 0
        case .epsilon(let tolerance): bound = min(tolerance, maxSkew)
        case .exact(.sequence), .approximate: bound = maxSkew
        }
        if (last &+ spacing) &- head.pairing > bound {
            dropHead(side, .noMatchWithinSkew)
            return true
        }
        // The other camera has been silent for the whole maximum latency: its frame for this
        // moment is lost or too late to matter, and this frame may be holding a driver buffer.
        if now &- head.arrival >= configuration.maximumLatencyNanoseconds {
            dropHead(side, .noMatchWithinSkew)
            return true
        }
        return false
    }

    /// Pairs the head of the later camera with frame `partnerIndex` of `partnerSide`,
    /// dropping the partner camera's frames before it.
    private mutating func makePair(partnerSide: StereoSide, partnerIndex: Int, now: Int64, deadline: Bool) {
        let otherSide = partnerSide.opposite
        guard let target = first(otherSide)?.pairing else { return }
        for _ in 0..<partnerIndex {
            guard let skipped = first(partnerSide) else { return }
            let reason: DropReason =
                distance(skipped.pairing, target) <= configuration.maximumSkewNanoseconds ? .superseded : .noMatchWithinSkew
            dropHead(partnerSide, reason)
        }
        guard let partner = popFirst(partnerSide), let other = popFirst(otherSide) else { return }
        let (left, right) = partnerSide == .left ? (partner, other) : (other, partner)
        pairCount += 1
        if deadline { deadlinePairCount += 1 }
        skews.record(right.pairing &- left.pairing)
        latencies.record(max(0, now &- max(left.arrival, right.arrival)))
        if estimatesClock { clock.add(left: left.midExposure, right: right.midExposure) }
        events.append(.pair(left: left, right: right, release: now, deadline: deadline))
    }

    private mutating func dropHead(_ side: StereoSide, _ reason: DropReason) {
        guard let frame = popFirst(side) else { return }
        events.append(.drop(side: side, frame: frame, reason: reason))
        count(side, reason)
    }

    private mutating func count(_ side: StereoSide, _ reason: DropReason) {
        dropCounts[side.rawValue * DropReason.caseCount + reason.index] += 1
    }

    private mutating func flushWaiting(reason: DropReason) {
        // Oldest first across both cameras, so drop events stay in time order.
        while true {
            switch (leftQueue.first, rightQueue.first) {
            case (nil, nil): return
            case (let l?, let r?): dropHead(l.pairing <= r.pairing ? .left : .right, reason)
            case (_?, nil): dropHead(.left, reason)
            case (nil, _?): dropHead(.right, reason)
            }
        }
    }

    @inline(__always)
    private func first(_ side: StereoSide) -> EngineFrame? { side == .left ? leftQueue.first : rightQueue.first }

    @inline(__always)
    private mutating func popFirst(_ side: StereoSide) -> EngineFrame? {
        side == .left ? leftQueue.popFirst() : rightQueue.popFirst()
    }

    @inline(__always)
    private func distance(_ a: Int64, _ b: Int64) -> Int64 { a >= b ? a &- b : b &- a }
}
