import Foundation
import ParallaxGeometry
import ParallaxImage

// How a session ends: asked from any thread, carried out on the session thread, the
// account closed before the sequences end.

extension StereoSession {
    /// Asks the session thread to end the session (from any thread).
    func requestEnd(_ reason: String) {
        let ending = state.withLock { s -> Bool in
            guard s.phase == .running else { return false }
            s.phase = .ending
            s.endReason = reason
            return true
        }
        // Frames from now on are after the end: the synchronizer drops them as
        // `after_stop` instead of pairing them, and sources that run as fast as
        // they can are told to stop now.
        if ending {
            synchronizer.finish()
            device.requestStop()
        }
        wake()
    }

    /// Ends the session and waits for the session thread (unless called on it).
    func end(reason: String, discarding: Bool) {
        var neverStarted = false
        let worker = state.withLock { s -> CaptureThread? in
            switch s.phase {
            case .idle:
                s.phase = .stopped
                neverStarted = true
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
        if neverStarted {
            // No session thread will end the sequences: a reader of a session stopped before
            // it started gets nil (and `.stopped`) instead of waiting forever.
            emit(.stopped(reason: reason))
            pairQueue.finish()
            eventQueue.finish()
            return
        }
        device.requestStop()
        wake()
        worker?.stopAndJoin(timeoutSeconds: 30)
    }

    /// The end itself, on the session thread: the device stops, the synchronizer decides
    /// every waiting frame, and what it releases is delivered (or, when discarding, dropped
    /// as ``DropReason/sessionStopped``).
    func finishSession(_ thread: CaptureThread) {
        // The synchronizer finishes first, so frames that arrive while the cameras stop are
        // dropped as `after_stop` rather than paired after the end.
        synchronizer.finish()
        device.stop()
        let (reason, discard) = state.withLock { ($0.endReason ?? "stopped", $0.discardOnEnd) }
        while let next = takeIncoming() {
            if discard || state.withLock({ $0.discardOnEnd }) {
                dropTaken(.sessionStopped)
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
        let watches = state.withLock { s -> [HotplugWatch] in
            s.phase = .stopped
            s.handler = nil
            defer { s.watches = [] }
            return s.watches
        }
        for watch in watches { watch.cancel() }
        // A pair that came in while the end ran (its camera's thread was late to stop): dropped
        // with the others, so the closed account holds nothing in flight.
        while takeIncoming() != nil { dropTaken(.sessionStopped) }
        // The event first: a consumer whose `pairs` loop ends reads a closed account.
        emit(.stopped(reason: reason))
        pairQueue.finish()
        eventQueue.finish()
        wake()
    }
}
