import Foundation
import ParallaxGeometry
import ParallaxImage

// The session's pressure windows, and the adaptive frame rate they drive.

extension StereoSession {
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
}
