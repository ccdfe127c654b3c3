import ParallaxGeometry

/// The synchronizer's deterministic state machine: single-threaded, driven by the caller's
/// clock, so that tests and offline tools (``RecordedStreamPairing``, `parallax pair`)
/// replay exactly what a live ``OutputSynchronizer`` would do.
///
/// Feed frames with ``push(_:timestampNanoseconds:sequence:exposureNanoseconds:timestampSource:payload:now:emit:)``;
/// every frame comes out exactly once through `emit`, in a pair or in a drop. Nothing is
/// allocated per frame: waiting frames live in preallocated rings, payloads in a
/// preallocated slab. The decisions are made by a non-generic engine on timestamps only;
/// this class is inlinable so that it is specialized for the caller's payload type.
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
/// dropped (``DropReason/noMatchWithinSkew``) and no longer counts for contiguity.
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
/// E frames skipped over by a pair are dropped as ``DropReason/superseded`` when they
/// were within the maximum skew of `h`, else as ``DropReason/noMatchWithinSkew``.
public final class SynchronizerCore<Payload> {
    /// The configuration the core was made with.
    public let configuration: SynchronizerConfiguration
    /// Called for every pair and every dropped frame, in order. It may read the core's
    /// statistics but must not push or otherwise change the core: the core is
    /// single-threaded and not reentrant (a programmer error that stops on a precondition).
    public typealias Emit = (SynchronizerEvent<Payload>) -> Void

    /// The engine and the payload slab, in one value so that each call is one exclusive
    /// access (the `emit` callbacks run outside it and may read the statistics).
    @usableFromInline var state: CoreState<Payload>

    /// Creates a core; see ``SynchronizerConfiguration`` for what each setting does.
    /// Capacities below 1 are raised to 1.
    public init(configuration: SynchronizerConfiguration) {
        self.configuration = configuration
        state = CoreState(engine: SynchronizerEngine(configuration: configuration))
    }

    /// Frames waiting for a partner on `side`.
    public func waitingFrameCount(_ side: StereoSide) -> Int { state.engine.waitingFrameCount(side) }

    /// Whether `side` is enabled (see ``setEnabled(_:for:dropping:emit:)``).
    public func isEnabled(_ side: StereoSide) -> Bool { state.engine.isEnabled(side) }

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
    ///   - timestampSource: where the timestamp was taken.
    ///   - payload: carried through to the pair or drop.
    ///   - now: the current time on the caller's clock (nanoseconds): the frame's arrival,
    ///     and the clock for deadlines and latency.
    ///   - emit: receives the pairs and drops this arrival decides, in order.
    ///
    /// A timestamp that is not later than the previous one of the same camera (after
    /// mid-exposure) is a time jump or reset: every waiting frame of both cameras is dropped
    /// with ``DropReason/discontinuity``, the clock estimate restarts, and this frame
    /// starts the new stretch. While a camera is disabled the frame is dropped with
    /// ``DropReason/constituentDisabled``.
    @inlinable
    public func push(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, exposureNanoseconds: Int64? = nil,
        timestampSource: TimestampSource = .endOfFrame, payload: Payload, now: Int64, emit: Emit
    ) {
        state.push(
            side, timestamp: timestampNanoseconds, sequence: sequence, exposure: exposureNanoseconds, timestampSource: timestampSource,
            payload: payload, now: now)
        deliver(emit)
    }

    /// Reports a frame the capture layer received damaged: it is dropped with
    /// ``DropReason/deviceError`` and counted; pairing state is untouched.
    @inlinable
    public func pushDamaged(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, payload: Payload, emit: Emit
    ) {
        reject(side, timestampNanoseconds: timestampNanoseconds, sequence: sequence, payload: payload, reason: .deviceError, emit: emit)
    }

    /// Counts a frame and drops it at once with `reason`, without looking at it (for frames
    /// refused before pairing, such as after the streams finished). `reason` is one of the
    /// synchronizer's (``DropReason/Stage/synchronizer``).
    @inlinable
    public func reject(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, payload: Payload, reason: DropReason,
        emit: Emit
    ) {
        precondition(reason.stage == .synchronizer, "\(reason) is not a synchronizer's drop reason")
        state.reject(side, timestamp: timestampNanoseconds, sequence: sequence, payload: payload, reason: reason)
        deliver(emit)
    }

    /// Enables or disables one camera. While either camera is off no pair can be made:
    /// disabling drops every waiting frame, and frames pushed meanwhile, with `reason`
    /// (``DropReason/constituentDisabled`` for a camera switched off,
    /// ``DropReason/disconnected`` for one unplugged; disabling a camera already off
    /// only changes the reason). Enabling again starts afresh (the spacing bound forgets the
    /// old frames; the clock estimate is kept). `reason` is one of the synchronizer's.
    @inlinable
    public func setEnabled(_ isEnabled: Bool, for side: StereoSide, dropping reason: DropReason = .constituentDisabled,
                           emit: Emit) {
        precondition(reason.stage == .synchronizer, "\(reason) is not a synchronizer's drop reason")
        state.engine.setEnabled(isEnabled, for: side, dropping: reason)
        deliver(emit)
    }

    /// Lets time pass with no frame arriving: releases pairs whose
    /// ``SynchronizerConfiguration/maximumLatencyNanoseconds`` has run out, and drops frames
    /// that waited that long while the other camera was silent.
    @inlinable
    public func advance(to now: Int64, emit: Emit) {
        state.engine.advance(to: now)
        deliver(emit)
    }

    /// The streams ended: every waiting frame is decided (no later frame can arrive, so
    /// each remaining best pair is final) and the core is ready for a new stream.
    @inlinable
    public func finish(now: Int64, emit: Emit) {
        state.engine.finish(now: now)
        deliver(emit)
    }

    /// Drops every waiting frame with `reason` (for example ``DropReason/deviceError``
    /// when a camera failed, or ``DropReason/discontinuity`` on a format change); `reason`
    /// is one of the synchronizer's.
    @inlinable
    public func flush(reason: DropReason, emit: Emit) {
        precondition(reason.stage == .synchronizer, "\(reason) is not a synchronizer's drop reason")
        state.engine.flush(reason: reason)
        deliver(emit)
    }

    // MARK: Statistics

    /// Counters and distributions since the core was made.
    public var statistics: SynchronizerStatistics { state.engine.statistics }

    /// The current clock estimate, if estimation is on and a pair was matched since the
    /// last reset.
    public var clockEstimate: ClockEstimate? { state.engine.clockEstimate }

    /// Hands the engine's decisions to `emit`, with their payloads, one at a time.
    @inlinable
    func deliver(_ emit: Emit) {
        while let event = state.nextEvent() { emit(event) }
    }
}

/// The engine plus the payloads of the frames it holds, by slot.
@usableFromInline
struct CoreState<Payload> {
    @usableFromInline var engine: SynchronizerEngine
    @usableFromInline var slab: [Payload?]
    /// Free slots of `slab`: `freeSlots[0..<freeCount]`.
    @usableFromInline var freeSlots: [Int32]
    @usableFromInline var freeCount: Int

    @usableFromInline
    init(engine: SynchronizerEngine) {
        self.engine = engine
        let slots = engine.maximumLiveFrames
        slab = Array(repeating: nil, count: slots)
        freeSlots = (0..<Int32(slots)).reversed().map { $0 }
        freeCount = slots
    }

    @inlinable
    mutating func push(
        _ side: StereoSide, timestamp: Int64, sequence: UInt64, exposure: Int64?, timestampSource: TimestampSource,
        payload: Payload, now: Int64
    ) {
        let slot = store(payload)
        engine.push(side, timestamp: timestamp, sequence: sequence, exposure: exposure, timestampSource: timestampSource, slot: slot, now: now)
    }

    @inlinable
    mutating func reject(_ side: StereoSide, timestamp: Int64, sequence: UInt64, payload: Payload, reason: DropReason) {
        let slot = store(payload)
        engine.reject(side, timestamp: timestamp, sequence: sequence, slot: slot, reason: reason)
    }

    @inlinable
    mutating func setEnabled(_ isEnabled: Bool, for side: StereoSide, dropping reason: DropReason) {
        engine.setEnabled(isEnabled, for: side, dropping: reason)
    }
    @inlinable
    mutating func advance(to now: Int64) { engine.advance(to: now) }
    @inlinable
    mutating func finish(now: Int64) { engine.finish(now: now) }
    @inlinable
    mutating func flush(reason: DropReason) { engine.flush(reason: reason) }

    @inlinable
    mutating func store(_ payload: Payload) -> Int32 {
        // The engine holds at most `maximumLiveFrames` frames and every call hands back what
        // it decided, so a slot is always free here.
        precondition(freeCount > 0, "SynchronizerCore: payload slots exhausted")
        freeCount -= 1
        let slot = freeSlots[freeCount]
        slab[Int(slot)] = payload
        return slot
    }

    @inlinable
    mutating func take(_ slot: Int32) -> Payload {
        let payload = slab[Int(slot)].take().unsafelyUnwrapped
        freeSlots[freeCount] = slot
        freeCount += 1
        return payload
    }

    /// The engine's next decision with its payloads, or `nil`.
    @inlinable
    mutating func nextEvent() -> SynchronizerEvent<Payload>? {
        guard let event = engine.events.popFirst() else { return nil }
        switch event {
        case .pair(let left, let right, let release, let deadline):
            return .pair(
                SynchronizedPair(
                    left: left.frame(side: .left, payload: take(left.slot)),
                    right: right.frame(side: .right, payload: take(right.slot)),
                    releaseNanoseconds: release, releasedOnDeadline: deadline))
        case .drop(let side, let frame, let reason):
            let drop = FrameDrop(side: side, timestampNanoseconds: frame.timestamp, sequence: frame.sequence, reason: reason)
            return .drop(drop, payload: take(frame.slot))
        }
    }
}
