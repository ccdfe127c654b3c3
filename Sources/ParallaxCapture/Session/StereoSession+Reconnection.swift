import Foundation
import ParallaxGeometry
import ParallaxImage

// Cameras that vanished, looked for again on the session thread.

extension StereoSession {
    /// Tries to bring back every vanished side whose retry is due. A camera that comes
    /// back announces itself through the device (``StereoOutput/reconnected(_:isEnabled:)``,
    /// see ``receive(_:)``), before its first frame.
    func reconnectIfDue(now: Int64) {
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
