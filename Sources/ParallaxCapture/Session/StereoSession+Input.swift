import Foundation
import ParallaxGeometry
import ParallaxImage

// What reaches the session from the cameras' threads: the device's outputs, the
// synchronizer's pairs and drops, and the wait of sources that can wait.

extension StereoSession {
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
                if s.lostSince[side] != nil { s.lostSince[side] = nil }
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
            state.withLock { s in
                let since = s.lostSince[side] ?? now
                s.lostSince[side] = since
                s.sides[side] = .disconnected(since: since, lastAttempt: now)
            }
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
            // After the end (a camera thread that outlived its stop's deadline): dropped at
            // once, as nobody will take it from the queue.
            if s.phase == .stopped {
                s.pairsMade += 1
                s.countDrop(.sessionStopped)
                return Incoming(pair: pair, number: s.pairsMade - 1)
            }
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
}
