import Foundation
import ParallaxGeometry
import ParallaxImage

extension StereoSession {
    /// Where the session is in its life.
    enum Phase: Sendable { case idle, running, ending, stopped }

    /// Whether one side's camera is there. Whether it is switched on is the device's to say
    /// (``StereoDevice/enabledSides``), not stored here.
    enum SideState: Sendable, Equatable {
        case present
        /// Unplugged at this monotonic time; looked for since.
        case disconnected(since: Int64, lastAttempt: Int64)
        /// Its stream ended (the end of a recording).
        case ended
    }

    /// The consumer's callback.
    final class PairHandler: Sendable {
        let call: @Sendable (StereoPair) -> Void
        init(_ call: @escaping @Sendable (StereoPair) -> Void) { self.call = call }
    }

    /// A pair from the synchronizer on its way to the session thread.
    struct Incoming: Sendable {
        var pair: SynchronizedPair<Frame>
        var number: Int
    }

    /// Counters of one pressure window.
    struct Window: Sendable {
        var pairsProcessed = 0
        var rectifyNanoseconds: Int64 = 0
        var consumerPairs = 0
        var consumerNanoseconds: Int64 = 0
        var delivered = 0
        var framesArrived = 0
        var cameraLosses = 0
        var sessionLosses = 0
    }

    /// Everything the session's threads share, under one lock.
    struct State {
        var phase = Phase.idle
        var endReason: String?
        var discardOnEnd = false
        /// The pair callback, held by reference (reading a closure out of the lock would
        /// re-wrap it, one allocation per pair).
        var handler: PairHandler?
        var worker: CaptureThread?
        var startedAt: Int64 = 0
        var sides = PerSide(repeating: SideState.present)

        /// Pairs waiting for the session thread: two for live cameras (newest wins), more
        /// for sources that wait (their cameras are held back before this fills).
        var incoming: Ring<Incoming>
        var pairsMade = 0
        var pushed = PerSide(repeating: 0)
        /// When each side last pushed a frame (monotonic nanoseconds), or was last held in ``waitForRoom(_:)`` for the consumer.
        var lastPush = PerSide<Int64>(repeating: 0)
        var decided = PerSide(repeating: 0)
        var lostByCamera = PerSide<[DropReason: Int]>(repeating: [:])
        var sessionDrops: [SessionDropReason: Int] = [:]
        var delivered = 0
        var pool: PairStoragePool
        var rectifyTimes = DurationHistogram()
        var consumerTimes = DurationHistogram()
        /// When the consumer of ``pairs`` got its last pair (to time how long it took).
        var handedOverAt: Int64?

        var window = Window()
        var windowStart: Int64 = 0
        /// Frames arrived and lost in the last windows (for the loss rate's longer view).
        var lossHistory: [(arrived: Int, lost: Int)] = []
        var pairsPerSecond = 0.0
        var tracker: PressureTracker
        var nominalSince: Int64?
        var lastRateChange: Int64 = 0
        /// The rate frames reach the session (the cameras', or a device's fixed cap below it),
        /// and the session's own cap on pairs per second (`nil`: none).
        let cameraFramesPerSecond: Double
        var capFramesPerSecond: Double? {
            didSet {
                guard let rate = capFramesPerSecond else {
                    cap = nil
                    return
                }
                let interval = Int64(1e9 / rate)
                if cap == nil {
                    cap = FrameRateCap(intervalNanoseconds: interval, cameraIntervalNanoseconds: Int64(1e9 / cameraFramesPerSecond))
                } else {
                    cap?.intervalNanoseconds = interval
                }
            }
        }
        /// The grid of ``capFramesPerSecond``, kept across rate changes.
        var cap: FrameRateCap?

        var events: [SessionEvent] = []
        var stills: [StillRequest] = []

        init(policy: PressurePolicy, poolLimit: Int, incomingCapacity: Int, cameraFramesPerSecond: Double) {
            incoming = Ring(capacity: max(1, incomingCapacity))
            tracker = PressureTracker(policy: policy)
            lossHistory.reserveCapacity(policy.lossHorizonWindows + 1)
            pool = PairStoragePool(limit: poolLimit)
            self.cameraFramesPerSecond = cameraFramesPerSecond
        }

        /// Counts a dropped pair; its two frames are losses in the pressure window unless the
        /// session meant to drop it (its own frame-rate cap, or the end).
        mutating func countDrop(_ reason: SessionDropReason) {
            sessionDrops[reason, default: 0] += 1
            if reason != .adaptiveFrameRateCap && reason != .sessionStopped { window.sessionLosses += 2 }
        }

        var currentFramesPerSecond: Double { min(cameraFramesPerSecond, capFramesPerSecond ?? cameraFramesPerSecond) }

        /// Whether `side` delivers frames: its camera is there and switched on (`enabled`, the
        /// device's ``StereoDevice/enabledSides``, read before the lock).
        func isActive(_ side: StereoSide, enabled: PerSide<Bool>) -> Bool { sides[side] == .present && enabled[side] }
    }

    // MARK: Camera threads

    /// One output of the device, on a camera's thread (or the session thread, for a
    /// reconnection): the session's own bookkeeping, then the one route into the
    /// synchronizer (``OutputSynchronizer/push(_:)``), then the event.
    func receive(_ output: StereoOutput) {
        if case .frame(_, let side) = output {
            if case .waitForConsumer = backPressure { waitForRoom(side) }
            let now = monotonicNanoseconds()
            state.withLock { s in
                s.pushed[side] += 1
                s.lastPush[side] = now
                s.window.framesArrived += 1
            }
            synchronizer.push(output)
            return
        }
        var event: (kind: SessionEvent.Kind, side: StereoSide)?
        var endReason: String?
        switch output {
        case .frame: return
        case .event(.dropped(let count, let reason), let side):
            state.withLock { s in
                s.lostByCamera[side][reason, default: 0] += count
                if reason != .frameRateCap { s.window.cameraLosses += count }
            }
        case .event(.stalled, let side): event = (.stalled, side)
        case .event(.resumed, let side): event = (.resumed, side)
        case .event(.recoverableError(let error), let side): event = (.deviceError("\(error)"), side)
        case .event(.disconnected, let side):
            let now = monotonicNanoseconds()
            state.withLock { $0.sides[side] = .disconnected(since: now, lastAttempt: now) }
            event = (.disconnected, side)
            if !(options.reconnects && device.constituents[side] is any ReconnectableCaptureDevice) {
                endReason = "the \(side) camera (\(device.identities[side].name)) disconnected"
            }
        case .event(.stopped, let side):
            let enabled = device.enabledSides
            let bothEnded = state.withLock { s -> Bool in
                guard s.phase == .running else { return false }
                s.sides[side] = .ended
                return !s.isActive(side.opposite, enabled: enabled)
            }
            if bothEnded { endReason = "end of stream" }
        case .disabled(let side): event = (.disabled, side)
        case .enabled(let side): event = (.enabled, side)
        case .reconnected(let side, _):
            state.withLock { $0.sides[side] = .present }
            event = (.reconnected, side)
        }
        synchronizer.push(output)
        if let event { emit(event.kind, side: event.side) }
        if let endReason { requestEnd(endReason) }
        wake()
    }

    /// How long a side of a source that can wait (a recording, the simulated rig) may push
    /// nothing before the other side stops waiting for it. Such a side is only ever slow
    /// (decoding files, rendering, a thread the machine did not schedule), never gone, so
    /// this is long: at two seconds a loaded machine made the other side overflow its queue.
    static let waitableSourceStallNanoseconds: Int64 = 30_000_000_000

    /// Sources that can wait are held here, before pushing: while the consumer's queue and
    /// the pairs on their way are full (for as long as the consumer takes, and the session
    /// runs), or while this side is so far ahead of the other that its synchronizer queue
    /// would overflow, for as long as the other side makes progress (a side that delivered
    /// nothing for ``waitableSourceStallNanoseconds`` may have stalled: the frame is then
    /// pushed and its fate counted like any other's).
    func waitForRoom(_ side: StereoSide) {
        let limit = synchronizer.configuration.queueCapacity - 1
        signal.lock()
        defer { signal.unlock() }
        while true {
            let now = monotonicNanoseconds()
            let enabled = device.enabledSides
            let (full, ahead) = state.withLock { s -> (Bool, Bool) in
                // A side being switched off or gone never waits: its camera is being stopped
                // (maybe from the session's own thread, which this wait would hold up).
                guard s.phase == .running, s.isActive(side, enabled: enabled) else { return (false, false) }
                let otherProgresses = s.isActive(side.opposite, enabled: enabled)
                    && now - s.lastPush[side.opposite] < Self.waitableSourceStallNanoseconds
                let full = s.incoming.count + pairQueue.count >= 2
                // Held here for the consumer, this side is alive, not stalled: the other side
                // must not take the wait for a stall and run ahead of it.
                if full { s.lastPush[side] = now }
                return (full, s.pushed[side] - s.decided[side] >= limit && otherProgresses)
            }
            guard full || ahead else { return }
            _ = signal.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
    }

    /// A pair from the synchronizer (on the pushing thread): queued for the session thread.
    func received(_ pair: SynchronizedPair<Frame>) {
        let overflow = state.withLock { s -> Incoming? in
            s.decided.left += 1
            s.decided.right += 1
            var dropped: Incoming?
            if s.incoming.isFull { dropped = s.incoming.popFirst() }
            s.incoming.append(Incoming(pair: pair, number: s.pairsMade))
            s.pairsMade += 1
            if dropped != nil { s.countDrop(s.phase == .running ? .consumerBehind : .sessionStopped) }
            return dropped
        }
        _ = overflow  // released here, outside the lock: its frames go back to their drivers
        wake()
    }

    /// A frame the synchronizer dropped (on the pushing thread).
    func decided(_ side: StereoSide) {
        state.withLock { $0.decided[side] += 1 }
        wake()
    }

    func wake() {
        signal.lock()
        signal.broadcast()
        signal.unlock()
    }

    // MARK: Ending

    /// Asks the session thread to end the session (from any thread).
    func requestEnd(_ reason: String) {
        let ending = state.withLock { s -> Bool in
            guard s.phase == .running else { return false }
            s.phase = .ending
            s.endReason = reason
            return true
        }
        // Frames from now on are after the end: the synchronizer drops them as
        // `constituent_disabled` instead of pairing them, and sources that run as fast as
        // they can are told to stop now.
        if ending {
            synchronizer.finish()
            device.requestStop()
        }
        wake()
    }

    /// Ends the session and waits for the session thread (unless called on it).
    func end(reason: String, discarding: Bool) {
        let worker = state.withLock { s -> CaptureThread? in
            switch s.phase {
            case .idle:
                s.phase = .stopped
                return nil
            case .running:
                s.phase = .ending
                s.endReason = reason
                s.discardOnEnd = discarding
            case .ending:
                if discarding { s.discardOnEnd = true }
            case .stopped:
                return nil
            }
            return s.worker
        }
        synchronizer.finish()
        device.requestStop()
        wake()
        worker?.stopAndJoin(timeoutSeconds: 30)
    }

    /// The end itself, on the session thread: the device stops, the synchronizer decides
    /// every waiting frame, and what it releases is delivered (or, when discarding, dropped
    /// as ``SessionDropReason/sessionStopped``).
    private func finishSession(_ thread: CaptureThread) {
        // The synchronizer finishes first, so frames that arrive while the cameras stop are
        // dropped as `constituent_disabled` rather than paired after the end.
        synchronizer.finish()
        device.stop()
        let (reason, discard) = state.withLock { ($0.endReason ?? "stopped", $0.discardOnEnd) }
        while let next = takeIncoming() {
            if discard || state.withLock({ $0.discardOnEnd }) {
                drop(.sessionStopped)
            } else {
                process(next, thread: thread, ending: true)
            }
        }
        if state.withLock({ $0.discardOnEnd }) {
            for _ in pairQueue.drain() { drop(.sessionStopped) }
        }
        let stills = state.withLock { s -> [StillRequest] in
            defer { s.stills = [] }
            return s.stills
        }
        for request in stills { request.fail(.ended(reason)) }
        state.withLock { s in
            s.phase = .stopped
            s.handler = nil
        }
        // The event first: a consumer whose `pairs` loop ends reads a closed account.
        emit(.stopped(reason: reason))
        pairQueue.finish()
        eventQueue.finish()
        wake()
    }

    // MARK: Session thread

    /// The session thread: takes pairs, rectifies and delivers them, ticks the
    /// synchronizer's deadline, measures pressure and looks for vanished cameras. It holds
    /// the session only for one step at a time, so a session nobody holds goes away.
    static func run(_ session: WeakSession, thread: CaptureThread) {
        while let current = session.session, current.step(thread) {}
    }

    /// One step of the session thread; false once the session has finished.
    private func step(_ thread: CaptureThread) -> Bool {
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

    private func takeIncoming() -> Incoming? {
        let next = state.withLock { $0.incoming.popFirst() }
        if next != nil { wake() }
        return next
    }

    /// Counts a pair the session dropped (see ``State/countDrop(_:)``).
    private func drop(_ reason: SessionDropReason) {
        state.withLock { $0.countDrop(reason) }
    }

    /// Rectifies and delivers one pair on the session thread.
    private func process(_ incoming: Incoming, thread: CaptureThread, ending: Bool) {
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
            storage = takeStorage(format: leftImage.format, size: rectifier.outputSize, ending: ending)
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

    /// A free pooled storage; sources that can wait wait (up to two seconds) for the
    /// consumer to let go of a pair.
    private func takeStorage(format pixel: PixelFormat, size: ImageSize, ending: Bool) -> PairStorage? {
        let deadline = monotonicNanoseconds() + 2_000_000_000
        while true {
            if let storage = state.withLock({ $0.pool.take(format: pixel, size: size) }) { return storage }
            guard case .waitForConsumer = backPressure, monotonicNanoseconds() < deadline,
                  state.withLock({ !$0.discardOnEnd }) else { return nil }
            usleep(1000)
        }
    }

    /// Hands a pair to the callback or the queue.
    private func deliver(_ pair: StereoPair, thread: CaptureThread, ending: Bool) {
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
    func nextPair() async -> StereoPair? {
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
        let pair = await pairQueue.next()
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
    private func passesFrameRateCap(_ timestamp: Int64) -> Bool {
        state.withLock { s -> Bool in
            guard let rate = s.capFramesPerSecond, rate < s.cameraFramesPerSecond else { return true }
            return s.cap?.admits(timestamp) ?? true
        }
    }

    // MARK: Pressure

    /// Closes a pressure window when one is due: computes the factors, updates the level
    /// with hysteresis, and adapts the frame rate when allowed. (Internal, not private, so a
    /// test can close windows at times it chooses.)
    func evaluatePressureIfDue(now: Int64) {
        let policy = options.pressure
        let windowNanoseconds = Int64(policy.windowSeconds * 1e9)
        guard let (window, fps) = state.withLock({ s -> (Window, Double)? in
            guard now - s.windowStart >= windowNanoseconds else { return nil }
            defer {
                s.window = Window()
                s.windowStart = now
            }
            s.pairsPerSecond = Double(s.window.delivered) / (Double(now - s.windowStart) / 1e9)
            return (s.window, s.currentFramesPerSecond)
        }) else { return }
        let interval = 1e9 / fps
        var factors = PressureFactors()
        if window.pairsProcessed > 0 {
            factors.processingLoad = Double(window.rectifyNanoseconds) / Double(window.pairsProcessed) / interval
        }
        if window.consumerPairs > 0 {
            factors.consumerLoad = Double(window.consumerNanoseconds) / Double(window.consumerPairs) / interval
        }
        if case .newestWins = backPressure, state.withLock({ $0.handler == nil }) {
            factors.queueFill = Double(pairQueue.count) / Double(backPressure.queuedPairs)
        }
        let (arrived, lost) = state.withLock { s -> (Int, Int) in
            s.lossHistory.append((window.framesArrived + window.cameraLosses, window.cameraLosses + window.sessionLosses))
            if s.lossHistory.count > policy.lossHorizonWindows { s.lossHistory.removeFirst() }
            return s.lossHistory.reduce((0, 0)) { ($0.0 + $1.arrived, $0.1 + $1.lost) }
        }
        if arrived > 0 { factors.lossRate = Double(lost) / Double(arrived) }
        if policy.readsMachineState {
            factors.thermalHeadroomCelsius = machine.thermalHeadroomCelsius()
            factors.cpuFrequencyLimit = machine.cpuFrequencyLimit()
        }
        // Lowering the frame rate helps when the work (resampling, the consumer, the machine)
        // does not fit the interval; lost frames alone (a flaky cable, a slow consumer's
        // earlier drops still in the loss horizon) are reported, not acted on.
        var workOnly = factors
        workOnly.lossRate = 0
        let windowLevel = policy.level(of: workOnly)
        let (changed, level) = state.withLock { s -> (PressureLevel?, PressureLevel) in
            let changed = s.tracker.update(factors)
            return (changed, s.tracker.level)
        }
        if let changed { emit(.pressureChanged(changed, factors)) }
        if level == .shutdown && policy.stopsAtShutdown {
            requestEnd("thermal shutdown: \(factors)")
            return
        }
        guard policy.adaptsFrameRate else { return }
        let newRate = state.withLock { s -> Double? in
            let current = s.currentFramesPerSecond
            if windowLevel >= .serious {
                s.nominalSince = nil
                // The window that saw the last change straddled it: judge the new rate on a whole window.
                guard now - s.lastRateChange >= 2 * windowNanoseconds else { return nil }
                let lowered = max(policy.minimumFramesPerSecond, current * policy.frameRateStep)
                guard lowered < current - 1e-9 else { return nil }
                s.capFramesPerSecond = lowered
                s.lastRateChange = now
                return lowered
            }
            guard level == .nominal && windowLevel == .nominal else {
                s.nominalSince = nil
                return nil
            }
            let since = s.nominalSince ?? now
            s.nominalSince = since
            guard s.capFramesPerSecond != nil,
                  Double(now - max(since, s.lastRateChange)) >= policy.raiseAfterSeconds * 1e9 else { return nil }
            let raised = current / policy.frameRateStep
            s.capFramesPerSecond = raised >= s.cameraFramesPerSecond - 1e-6 ? nil : raised
            s.lastRateChange = now
            return s.currentFramesPerSecond
        }
        if let newRate { emit(.frameRateChanged(newRate)) }
    }

    // MARK: Hot-plug

    /// Tries to bring back every vanished side whose retry is due. A camera that comes
    /// back announces itself through the device (``StereoOutput/reconnected(_:isEnabled:)``,
    /// see ``receive(_:)``), before its first frame.
    private func reconnectIfDue(now: Int64) {
        let interval = Int64(options.reconnectIntervalSeconds * 1e9)
        for side in StereoSide.allCases {
            guard case .disconnected(let since, let last) = state.withLock({ $0.sides[side] }),
                  options.reconnects, now - last >= interval else { continue }
            state.withLock { $0.sides[side] = .disconnected(since: since, lastAttempt: now) }
            do {
                try device.reconnect(side)
            } catch {
                if let timeout = options.reconnectTimeoutSeconds, Double(now - since) / 1e9 >= timeout {
                    requestEnd("the \(side) camera (\(device.identities[side].name)) did not come back within "
                               + "\(Int(timeout)) s: \(error)")
                }
            }
        }
    }
}
