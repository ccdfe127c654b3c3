import ParallaxGeometry
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Pairs the frames of two cameras as they arrive, from any threads, and hands the pairs
/// to one consumer: an `AsyncSequence` (``pairs``) or a callback.
///
/// The capture layer calls ``push(_:timestampNanoseconds:sequence:exposureNanoseconds:timestampSource:payload:)``
/// from each camera's thread. Pairing is a ``SynchronizerCore`` behind a lock, so a push
/// costs a few hundred nanoseconds and never waits for the consumer. What happens to pairs
/// the consumer of ``pairs`` has not read yet is the ``BackPressure`` given at creation:
///
/// - ``BackPressure/newestWins(queuedPairs:)`` (the default, with
///   ``SynchronizerConfiguration/outputCapacity`` pairs) for live cameras: when the queue
///   is full the oldest pair is dropped (both frames reported with
///   ``DropReason/queueOverflow``), so the consumer always gets the newest moments and
///   a slow consumer never holds the cameras' buffers;
/// - ``BackPressure/waitForConsumer`` for replays: every pair waits for the consumer (the
///   queue grows as far as the consumer is behind), none is dropped.
///
/// ``statistics`` counts pairs made and pairs delivered apart.
///
/// Handlers run on the thread that pushed, in event order, after the lock is released;
/// they may read ``statistics`` but must not push, or they wait for themselves.
///
/// Arrival and release times are read from `CLOCK_MONOTONIC` (the clock V4L2 stamps
/// buffers with). A replay of recorded frames uses ``SynchronizerClock/frameTimestamps``
/// instead: each frame arrives at its own timestamp, so pairing depends on the timestamps
/// alone, exactly as ``RecordedStreamPairing`` pairs two logs.
///
/// ```swift
/// let synchronizer = OutputSynchronizer<String>(configuration: configuration,
///                                               backPressure: .waitForConsumer, clock: .frameTimestamps)
/// let consumer = Task { for await pair in synchronizer.pairs { print(pair.left.payload, pair.right.payload) } }
/// for frame in framesInTimestampOrder {
///     synchronizer.push(frame.side, timestampNanoseconds: frame.time, sequence: frame.number, payload: frame.file)
/// }
/// synchronizer.finish()
/// await consumer.value
/// ```
public final class OutputSynchronizer<Payload: Sendable>: Sendable {
    /// Receives each pair, on the pushing thread.
    public typealias PairHandler = @Sendable (SynchronizedPair<Payload>) -> Void
    /// Receives each dropped frame (with its payload), on the pushing thread.
    public typealias DropHandler = @Sendable (FrameDrop, Payload) -> Void

    @usableFromInline
    struct State: ~Copyable {
        @usableFromInline let core: SynchronizerCore<Payload>
        /// Events for the handlers, filled under the lock, drained outside it.
        @usableFromInline var outbox: Ring<SynchronizerEvent<Payload>>
        /// Pairs for the `AsyncSequence` consumer.
        @usableFromInline var output: Ring<SynchronizedPair<Payload>>
        @usableFromInline var waiter: UnsafeContinuation<SynchronizedPair<Payload>?, Never>?
        /// A pair for the waiting consumer, resumed once the lock is released. Kept here
        /// rather than in a local variable, which the event router would capture in a heap box.
        @usableFromInline var handover: (UnsafeContinuation<SynchronizedPair<Payload>?, Never>, SynchronizedPair<Payload>)?
        @usableFromInline var finished = false
        @usableFromInline var outputOverflow = PerSide(repeating: 0)
        /// Pairs handed to the consumer or the pair handler.
        @usableFromInline var delivered = 0
        /// The latest timestamp pushed: the time under ``SynchronizerClock/frameTimestamps``.
        @usableFromInline var latestTimestamp = Int64.min

        @usableFromInline
        init(
            core: SynchronizerCore<Payload>, outbox: Ring<SynchronizerEvent<Payload>>,
            output: Ring<SynchronizedPair<Payload>>
        ) {
            self.core = core
            self.outbox = outbox
            self.output = output
        }
    }

    /// The configuration the synchronizer was made with.
    public let configuration: SynchronizerConfiguration
    @usableFromInline let state: Locked<State>
    /// Held while handlers run, so events reach them in order even when both cameras push.
    @usableFromInline let delivery = Locked<Void>(())
    @usableFromInline let pairHandler: PairHandler?
    @usableFromInline let dropHandler: DropHandler?
    @usableFromInline let now: @Sendable () -> Int64
    /// Whether time is the frames' own (``SynchronizerClock/frameTimestamps``).
    @usableFromInline let usesFrameTime: Bool
    /// Whether the output queue grows rather than drops (``BackPressure/waitForConsumer``).
    @usableFromInline let waitsForConsumer: Bool

    /// Creates a synchronizer.
    ///
    /// - Parameters:
    ///   - configuration: the policy, frame interval, skew, latency and capacities.
    ///   - pairHandler: when given, pairs go to it and ``pairs`` yields nothing; when `nil`,
    ///     read pairs from ``pairs``.
    ///   - dropHandler: called for every dropped frame, if given (they are always counted).
    ///   - backPressure: what happens to pairs the consumer of ``pairs`` has not read;
    ///     `nil`: ``BackPressure/newestWins(queuedPairs:)`` with the configuration's
    ///     ``SynchronizerConfiguration/outputCapacity``.
    ///   - clock: what "now" is: `CLOCK_MONOTONIC` (live cameras), the frames' own
    ///     timestamps (replays), or a clock of the caller's.
    public init(
        configuration: SynchronizerConfiguration, pairHandler: PairHandler? = nil, dropHandler: DropHandler? = nil,
        backPressure: BackPressure? = nil, clock: SynchronizerClock = .monotonic
    ) {
        var configuration = configuration
        if case .newestWins(let queued)? = backPressure { configuration.outputCapacity = max(1, queued) }
        self.configuration = configuration
        self.pairHandler = pairHandler
        self.dropHandler = dropHandler
        self.waitsForConsumer = backPressure == .waitForConsumer
        switch clock {
        case .monotonic:
            now = monotonicNanoseconds
            usesFrameTime = false
        case .frameTimestamps:
            now = monotonicNanoseconds
            usesFrameTime = true
        case .custom(let read):
            now = read
            usesFrameTime = false
        }
        // Each frame produces one event at most once; a push can therefore decide at most
        // every waiting frame plus itself, and output overflow adds two drops per pair.
        let queue = max(1, configuration.queueCapacity)
        state = Locked(
            State(
                core: SynchronizerCore(configuration: configuration),
                outbox: Ring(capacity: 4 * queue + 4),
                output: Ring(capacity: max(1, configuration.outputCapacity))))
    }

    // MARK: Input (camera threads)

    /// Hands one frame to the synchronizer; thread-safe. See
    /// ``SynchronizerCore/push(_:timestampNanoseconds:sequence:exposureNanoseconds:timestampSource:payload:now:emit:)``
    /// for the meaning of each argument. Frames pushed after ``finish()`` are dropped with
    /// ``DropReason/afterStop``.
    @inlinable
    public func push(
        _ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, exposureNanoseconds: Int64? = nil,
        timestampSource: TimestampSource = .endOfFrame, payload: Payload
    ) {
        perform(arriving: timestampNanoseconds) { core, now, emit in
            core.push(
                side, timestampNanoseconds: timestampNanoseconds, sequence: sequence,
                exposureNanoseconds: exposureNanoseconds, timestampSource: timestampSource, payload: payload, now: now, emit: emit)
        } afterFinish: { core, emit in
            core.reject(
                side, timestampNanoseconds: timestampNanoseconds, sequence: sequence, payload: payload,
                reason: .afterStop, emit: emit)
        }
    }

    /// Reports a frame that arrived damaged (dropped with ``DropReason/deviceError``).
    @inlinable
    public func pushDamaged(_ side: StereoSide, timestampNanoseconds: Int64, sequence: UInt64, payload: Payload) {
        perform { core, _, emit in
            core.pushDamaged(side, timestampNanoseconds: timestampNanoseconds, sequence: sequence, payload: payload, emit: emit)
        } afterFinish: { _, _ in }
    }

    /// Enables or disables one camera (see ``SynchronizerCore/setEnabled(_:for:dropping:emit:)``).
    public func setEnabled(_ isEnabled: Bool, for side: StereoSide, dropping reason: DropReason = .constituentDisabled) {
        perform { core, _, emit in core.setEnabled(isEnabled, for: side, dropping: reason, emit: emit) } afterFinish: { _, _ in }
    }

    /// Drops every waiting frame with `reason`, for example ``DropReason/deviceError``
    /// when a camera failed.
    public func flush(reason: DropReason) {
        perform { core, _, emit in core.flush(reason: reason, emit: emit) } afterFinish: { _, _ in }
    }

    /// Releases pairs whose maximum latency ran out. Pushes check deadlines too; call this
    /// from a capture loop's poll timeout so that a pair is not held past its deadline
    /// while both cameras are quiet.
    public func releaseExpired() {
        perform { core, now, emit in core.advance(to: now, emit: emit) } afterFinish: { _, _ in }
    }

    /// Ends the streams: waiting frames are decided (pairs released, the rest dropped), the
    /// ``pairs`` sequence ends after the consumer has read what is queued, and later pushes
    /// are dropped.
    public func finish() {
        perform(finishing: true) { core, now, emit in core.finish(now: now, emit: emit) } afterFinish: { _, _ in }
        let waiter = state.withLock { state -> UnsafeContinuation<SynchronizedPair<Payload>?, Never>? in
            defer { state.waiter = nil }
            return state.output.isEmpty ? state.waiter : nil
        }
        waiter?.resume(returning: nil)
    }

    // MARK: Output

    /// Counters, distributions and the clock estimate so far; thread-safe. Pairs made and
    /// pairs delivered are counted apart (see ``SynchronizerStatistics/pairsDelivered``).
    public var statistics: SynchronizerStatistics {
        state.withLock { state in
            var statistics = state.core.statistics
            statistics.addDrops(.left, .queueOverflow, state.outputOverflow.left)
            statistics.addDrops(.right, .queueOverflow, state.outputOverflow.right)
            statistics.pairsDelivered = state.delivered
            statistics.pairsWaiting = state.output.count
            statistics.pairsDroppedAtOutput = state.outputOverflow.left
            return statistics
        }
    }

    /// The pairs, oldest first, for one consumer at a time. Ends after ``finish()``; yields
    /// nothing when a pair handler was given. Under the default back-pressure it keeps the
    /// newest ``SynchronizerConfiguration/outputCapacity`` pairs; a replay that must lose
    /// none creates the synchronizer with ``BackPressure/waitForConsumer``.
    public var pairs: SynchronizedPairs<Payload> { SynchronizedPairs(synchronizer: self) }

    /// Whether a consumer of ``pairs`` is waiting for the next pair right now (tests use it
    /// to hand a pair to a consumer that is known to be waiting, without sleeping).
    package var hasWaitingConsumer: Bool { state.withLock { $0.waiter != nil } }

    /// The next pair, waiting for one if none is queued; `nil` once finished and drained,
    /// or when the task is cancelled.
    func nextPair() async -> SynchronizedPair<Payload>? {
        if let ready = state.withLock({ state -> SynchronizedPair<Payload>?? in
            if let pair = state.output.popFirst() {
                state.delivered += 1
                return .some(pair)
            }
            return state.finished ? .some(nil) : nil
        }) {
            return ready
        }
        return await withTaskCancellationHandler {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<SynchronizedPair<Payload>?, Never>) in
                let immediate = state.withLock { state -> SynchronizedPair<Payload>?? in
                    if let pair = state.output.popFirst() {
                        state.delivered += 1
                        return .some(pair)
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    precondition(state.waiter == nil, "OutputSynchronizer.pairs supports one consumer at a time")
                    state.waiter = continuation
                    return nil
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        } onCancel: {
            let waiter = state.withLock { state in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: nil)
        }
    }

    // MARK: Plumbing

    /// Runs `body` on the core under the lock, routes its events, then resumes the consumer
    /// and calls the handlers outside the lock. Inlinable, like ``SynchronizerCore``, so
    /// that it is specialized for the caller's payload type.
    ///
    /// `arriving` is the timestamp of a frame being pushed: under
    /// ``SynchronizerClock/frameTimestamps`` the time is the latest such timestamp.
    @inlinable
    func perform(
        finishing: Bool = false, arriving timestamp: Int64? = nil,
        _ body: (SynchronizerCore<Payload>, Int64, SynchronizerCore<Payload>.Emit) -> Void,
        afterFinish: (SynchronizerCore<Payload>, SynchronizerCore<Payload>.Emit) -> Void
    ) {
        delivery.withLock { _ in
            let clockTime = usesFrameTime ? 0 : now()
            let handover = state.withLock { state -> (UnsafeContinuation<SynchronizedPair<Payload>?, Never>, SynchronizedPair<Payload>)? in
                if let timestamp, timestamp > state.latestTimestamp { state.latestTimestamp = timestamp }
                let time = usesFrameTime ? state.latestTimestamp : clockTime
                let hasPairHandler = self.pairHandler != nil, hasDropHandler = self.dropHandler != nil
                let waitsForConsumer = self.waitsForConsumer
                func overflowed(_ frame: SynchronizedFrame<Payload>) {
                    state.outputOverflow[frame.side] += 1
                    guard hasDropHandler else { return }
                    let drop = FrameDrop(
                        side: frame.side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence,
                        reason: .queueOverflow)
                    state.outbox.append(.drop(drop, payload: frame.payload))
                }
                func emit(_ event: SynchronizerEvent<Payload>) {
                    switch event {
                    case .pair(let pair):
                        if hasPairHandler {
                            state.delivered += 1
                            state.outbox.append(event)
                        } else if let waiter = state.waiter, state.handover == nil {
                            state.waiter = nil
                            state.delivered += 1
                            state.handover = (waiter, pair)
                        } else {
                            if state.output.isFull {
                                if waitsForConsumer {
                                    state.output.grow()
                                } else if let oldest = state.output.popFirst() {
                                    overflowed(oldest.left)
                                    overflowed(oldest.right)
                                }
                            }
                            state.output.append(pair)
                        }
                    case .drop:
                        if hasDropHandler { state.outbox.append(event) }
                    }
                }
                if state.finished {
                    afterFinish(state.core, emit)
                } else {
                    body(state.core, time, emit)
                    // Under the same lock as the core's finish: a push from another thread
                    // is then either decided by it or rejected after it, never kept.
                    if finishing { state.finished = true }
                }
                defer { state.handover = nil }
                return state.handover
            }
            if let (waiter, pair) = handover { waiter.resume(returning: pair) }
            while let event = state.withLock({ $0.outbox.popFirst() }) {
                switch event {
                case .pair(let pair): pairHandler?(pair)
                case .drop(let drop, let payload): dropHandler?(drop, payload)
                }
            }
        }
    }
}

/// The pairs of an ``OutputSynchronizer`` as an `AsyncSequence`: bounded, newest wins.
public struct SynchronizedPairs<Payload: Sendable>: AsyncSequence, Sendable {
    /// A synchronized pair.
    public typealias Element = SynchronizedPair<Payload>
    let synchronizer: OutputSynchronizer<Payload>

    /// Reads pairs as they are released.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let synchronizer: OutputSynchronizer<Payload>
        /// The next pair, or `nil` once the synchronizer finished and the queue is empty.
        public mutating func next() async -> SynchronizedPair<Payload>? { await synchronizer.nextPair() }
    }

    /// Creates the iterator.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(synchronizer: synchronizer) }
}

extension OutputSynchronizer where Payload == Frame {
    /// Hands a captured frame to the synchronizer; thread-safe. A ``Frame`` is already on
    /// mid-exposure (its device moved it there), so it is paired by its timestamp as is.
    @inlinable
    public func push(_ frame: Frame, from side: StereoSide) {
        push(side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence,
             exposureNanoseconds: frame.exposureNanoseconds, timestampSource: .midExposure, payload: frame)
    }
}

/// What "now" is for an ``OutputSynchronizer``: when a frame arrived, and when a waiting
/// frame's deadline (``SynchronizerConfiguration/maximumLatencyNanoseconds``) ran out.
public enum SynchronizerClock: Sendable {
    /// `CLOCK_MONOTONIC`, the clock V4L2 stamps buffers with: for live cameras.
    case monotonic
    /// The frames' own timestamps: each frame arrives at its timestamp, and time is the
    /// latest timestamp pushed, so pairing depends on the timestamps alone however fast
    /// the frames are pushed. For replays of recorded frames, pushed in timestamp order
    /// across both cameras (``RecordedStreamPairing/replay(configuration:left:right:emit:)``
    /// merges two streams that way).
    case frameTimestamps
    /// A clock of the caller's (tests): nanoseconds, never decreasing.
    case custom(@Sendable () -> Int64)
}
