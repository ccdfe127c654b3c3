import Foundation
import ParallaxGeometry

// Cameras that vanished, found again: announced by hot-plug (udev, or a virtual driver's
// events) where the constituent can be watched, looked for now and then otherwise; reopened
// on the session thread.

extension StereoSession {
    /// Subscribes to the return of each reconnectable constituent (see
    /// ``ReconnectableCaptureDevice/watchArrivals(_:)``).
    func watchConstituents(_ box: WeakSession) {
        for side in StereoSide.allCases {
            guard let device = device.constituents[side] as? any ReconnectableCaptureDevice,
                  let watch = device.watchArrivals({ box.session?.cameraArrived(side) }) else { continue }
            state.withLock { s in
                s.watches.append(watch)
                s.watched[side] = true
            }
        }
    }

    /// A side's camera was announced (on the watcher's thread): the session thread tries it now.
    func cameraArrived(_ side: StereoSide) {
        state.withLock { s in
            s.arrivals[side] = true
            s.pendingArrival[side] = true
        }
        wake()
    }

    /// Tries to bring back every vanished side that was announced, or whose retry is due.
    /// A camera that comes back announces itself through the device
    /// (``StereoOutput/reconnected(_:isEnabled:)``, see ``receive(_:)``), before its first frame.
    func reconnectIfDue(now: Int64) {
        guard options.reconnects else { return }
        for side in StereoSide.allCases {
            let since = state.withLock { s -> Int64? in
                guard case .disconnected(let since, let last) = s.sides[side] else { return nil }
                // Watched and not announced: only the slow safety poll.
                let interval = s.watched[side] && !s.pendingArrival[side]
                    ? max(options.watchedReconnectIntervalSeconds, options.reconnectIntervalSeconds)
                    : options.reconnectIntervalSeconds
                guard s.arrivals[side] || now - last >= Int64(interval * 1e9) else { return nil }
                s.arrivals[side] = false
                s.sides[side] = .disconnected(since: since, lastAttempt: now)
                return since
            }
            guard let since else { continue }
            do {
                try device.reconnect(side)
                state.withLock { s in
                    s.reconnectFailures[side] = nil
                    s.pendingArrival[side] = false
                }
            } catch {
                // Not back yet is the normal case; anything else (another camera at its
                // port, a format it no longer offers) is said once.
                let message = "\(error)"
                let absent: Bool
                if case .capture(.cannotOpen(_, let errno), _) = error, errno == ENOENT { absent = true } else { absent = false }
                let isNew = state.withLock { s -> Bool in
                    defer { s.reconnectFailures[side] = message }
                    return s.reconnectFailures[side] != message
                }
                if !absent && isNew { emit(.deviceError("the \(side) camera could not be reopened: \(message)"), side: side) }
                if let timeout = options.reconnectTimeoutSeconds, Double(now - since) / 1e9 >= timeout {
                    requestEnd("the \(side) camera (\(device.identities[side].name)) did not come back within "
                               + "\(Int(timeout)) s: \(error)")
                }
            }
        }
    }
}
