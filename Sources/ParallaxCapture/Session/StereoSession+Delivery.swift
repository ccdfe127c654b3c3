import Foundation
import ParallaxGeometry
import ParallaxImage

// The session thread: takes pairs, holds the adaptive frame-rate cap, rectifies and
// delivers them to the callback or the `pairs` queue.

extension StereoSession {
    // MARK: Session thread

    /// The session thread: takes pairs, rectifies and delivers them, ticks the
    /// synchronizer's deadline, measures pressure and looks for vanished cameras. It holds
    /// the session only for one step at a time, so a session nobody holds goes away.
    static func run(_ session: WeakSession, thread: CaptureThread) {
        while let current = session.session, current.step(thread) {}
    }

    /// One step of the session thread; false once the session has finished.
    func step(_ thread: CaptureThread) -> Bool {
        if state.withLock({ $0.phase != .running }) || thread.shouldStop {
            finishSession(thread)
            return false
        }
        if let next = takeIncoming() {
            process(next, thread: thread, ending: false)
        } else {
            let tick = min(0.02, max(0.002, 0.5 / state.withLock { $0.currentFramesPerSecond }))
            signal.lock()
            if state.withLock({ $0.incoming.isEmpty && $0.phase == .running }) {
                _ = signal.wait(until: Date(timeIntervalSinceNow: tick))
            }
            signal.unlock()
            synchronizer.releaseExpired()
        }
        let now = monotonicNanoseconds()
        evaluatePressureIfDue(now: now)
        reconnectIfDue(now: now)
        return true
    }

    /// The next pair from ``State/incoming``, now the one being processed until
    /// ``process(_:thread:ending:)`` returns (or the end drops it).
    func takeIncoming() -> Incoming? {
        let next = state.withLock { s -> Incoming? in
            let next = s.incoming.popFirst()
            if next != nil { s.processing += 1 }
            return next
        }
        if next != nil { wake() }
        return next
    }

    /// Counts a pair taken by ``takeIncoming()`` and dropped without being processed.
    func dropTaken(_ reason: DropReason) {
        state.withLock { s in
            s.countDrop(reason)
            s.processing -= 1
        }
    }

    /// Counts a pair the session dropped (see ``State/countDrop(_:)``).
    func drop(_ reason: DropReason) {
        state.withLock { $0.countDrop(reason) }
    }

    /// Rectifies and delivers one pair on the session thread.
    func process(_ incoming: Incoming, thread: CaptureThread, ending: Bool) {
        // Delivered, queued or dropped by now, whichever way this returns.
        defer { state.withLock { $0.processing -= 1 } }
        let pair = incoming.pair
        let started = monotonicNanoseconds()
        guard passesFrameRateCap(pair.left.timestampNanoseconds) else {
            drop(.adaptiveFrameRateCap)
            return
        }
        var storage: PairStorage?
        var rectifyNanoseconds: Int64 = 0
        var rectification: StereoRectification?
        if let rectifier, let leftImage = pair.left.payload.image, let rightImage = pair.right.payload.image {
            // The frames' own layout: for MJPEG, what the JPEGs decoded to.
            storage = takeStorage(format: leftImage.format, size: rectifier.outputSize)
            guard let storage else {
                drop(.noFreeBuffer)
                return
            }
            do {
                rectification = try rectifier.rectify(left: leftImage, right: rightImage,
                                                      into: storage.mutableView(.left), storage.mutableView(.right))
            } catch {
                drop(.rectificationFailed)
                emit(.deviceError("pair \(incoming.number) could not be rectified: \(error)"))
                return
            }
            rectifyNanoseconds = monotonicNanoseconds() - started
        } else if rectifier != nil {
            drop(.rectificationFailed)
            emit(.deviceError("pair \(incoming.number) has no pixels to rectify (\(format.fourCC))"))
            return
        }
        let keepFrames = storage == nil || options.keepsRawFrames
        func side(_ frame: SynchronizedFrame<Frame>, _ s: StereoSide) -> StereoPairSide {
            StereoPairSide(timestampNanoseconds: frame.payload.timestampNanoseconds, sequence: frame.payload.sequence,
                           exposureNanoseconds: frame.payload.exposureNanoseconds, source: frame.payload.source,
                           camera: models?[s] ?? frame.payload.camera,
                           image: storage.map { $0.view(s) } ?? frame.payload.image,
                           frame: keepFrames ? frame.payload : nil)
        }
        let stereoPair = StereoPair(
            number: incoming.number, left: side(pair.left, .left), right: side(pair.right, .right),
            skewNanoseconds: pair.skewNanoseconds, isRectified: storage != nil, rectification: rectification,
            pairingLatencyNanoseconds: pair.latencyNanoseconds, queuedNanoseconds: max(0, started - pair.releaseNanoseconds),
            rectifyNanoseconds: rectifyNanoseconds, storage: storage)
        state.withLock { s in
            s.window.pairsProcessed += 1
            s.window.rectifyNanoseconds += rectifyNanoseconds
            if storage != nil { s.rectifyTimes.record(rectifyNanoseconds) }
        }
        feedStills(stereoPair)
        deliver(stereoPair, thread: thread, ending: ending)
    }

    /// A free pooled storage, or a new one while the consumer holds pairs (an event says
    /// so); `nil` once what it holds reaches ``StereoSessionOptions/heldPairsLimitBytes``,
    /// which ends the session with ``StereoSessionError/pairsHeld(held:pairBytes:limitBytes:)``.
    func takeStorage(format pixel: PixelFormat, size: ImageSize) -> PairStorage? {
        let pairBytes = 2 * max(1, ImageBuffer.byteCount(format: pixel, size: size))
        let limit = options.heldPairsLimitBytes / pairBytes
        let (storage, grown, steady) = state.withLock { s -> (PairStorage?, Int, Int) in
            let before = s.pool.count
            let storage = s.pool.take(format: pixel, size: size, limit: limit)
            return (storage, s.pool.count > before ? s.pool.count : 0, s.pool.steady)
        }
        if grown > steady {
            // Held: every storage but the one just made (the queue's among them).
            emit(.poolGrew(pairs: grown, held: grown - 1))
        }
        if storage == nil {
            let held = state.withLock { $0.pool.count }
            let failure = StereoSessionError.pairsHeld(held: held, pairBytes: pairBytes, limitBytes: options.heldPairsLimitBytes)
            let first = state.withLock { s -> Bool in
                guard s.failure == nil else { return false }
                s.failure = failure
                return true
            }
            if first { requestEnd("\(failure)") }
        }
        return storage
    }

    /// Hands a pair to the callback or the queue.
    func deliver(_ pair: StereoPair, thread: CaptureThread, ending: Bool) {
        if let handler = state.withLock({ $0.handler }) {
            let started = monotonicNanoseconds()
            handler.call(pair)
            let took = monotonicNanoseconds() - started
            state.withLock { s in
                s.delivered += 1
                s.window.delivered += 1
                s.window.consumerPairs += 1
                s.window.consumerNanoseconds += took
                s.consumerTimes.record(took)
            }
            return
        }
        if case .waitForConsumer = backPressure {
            // Wait for room; a consumer that takes nothing for five seconds while the session
            // ends has gone away, and what is left is dropped.
            var lastProgress = monotonicNanoseconds()
            var lastDelivered = state.withLock { $0.delivered }
            signal.lock()
            while pairQueue.isFull {
                // Stopped, or told to drop what is left: stop waiting.
                if thread.shouldStop || state.withLock({ $0.discardOnEnd }) { break }
                // An end that arrives while this pair waits (a recording's last frames) is an
                // end like any other: the pair waits for the consumer as the rest will, instead
                // of being pushed over the oldest queued pair.
                let endingNow = ending || state.withLock { $0.phase != .running }
                let delivered = state.withLock { $0.delivered }
                if delivered != lastDelivered {
                    lastDelivered = delivered
                    lastProgress = monotonicNanoseconds()
                } else if endingNow && monotonicNanoseconds() - lastProgress > 5_000_000_000 {
                    break
                }
                _ = signal.wait(until: Date(timeIntervalSinceNow: 0.02))
            }
            signal.unlock()
        }
        if pairQueue.push(pair) != nil {
            let stopping = ending || state.withLock { $0.discardOnEnd || $0.phase != .running }
            drop(stopping ? .sessionStopped : .consumerBehind)
        }
    }

    /// The next pair for the ``pairs`` consumer.
    func nextPair() async throws(StereoSessionError) -> StereoPair? {
        let (phase, delivers) = state.withLock { ($0.phase, $0.handler != nil) }
        if delivers {
            throw .invalidState("this session delivers its pairs to the callback given to start(delivering:); session.pairs yields none")
        }
        // A loop over the pairs of a session nobody started starts it, rather than waiting forever.
        if phase == .idle { try start() }
        let now = monotonicNanoseconds()
        state.withLock { s in
            if let handed = s.handedOverAt {
                let took = now - handed
                s.window.consumerPairs += 1
                s.window.consumerNanoseconds += took
                s.consumerTimes.record(took)
                s.handedOverAt = nil
            }
        }
        let pair: StereoPair?
        do { pair = try await pairQueue.next() } catch {
            throw .invalidState("session.pairs is already being read by another task; read it from one task at a time")
        }
        // Every pair handed over: a session that ended because its consumer held too many says so.
        if pair == nil, let failure = state.withLock({ $0.failure }) { throw failure }
        if pair != nil {
            let at = monotonicNanoseconds()
            state.withLock { s in
                s.delivered += 1
                s.window.delivered += 1
                s.handedOverAt = at
            }
        }
        wake()
        return pair
    }

    // MARK: Frame-rate cap

    /// The session's own cap on pairs per second, applied on the left timestamps (see
    /// ``FrameRateCap``, the rule ``StereoDevice`` decimates frames with).
    func passesFrameRateCap(_ timestamp: Int64) -> Bool {
        state.withLock { s -> Bool in
            guard let rate = s.capFramesPerSecond, rate < s.cameraFramesPerSecond else { return true }
            return s.cap?.admits(timestamp) ?? true
        }
    }
}
