import Foundation
@testable import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

/// The session's pressure windows closed at times the test chooses, on a session that is made
/// but not started (so no session thread closes windows of its own): what each window's
/// counters turn into, exactly, without depending on how fast the machine is.
@Suite("Session pressure windows: the factors an event carries, the frame-rate steps")
struct SessionPressureWindowTests {
    static let interval = FrameInterval(numerator: 1, denominator: 30)
    /// The policy's window, and a monotonic time far from zero (the session has never changed its rate).
    static let window: Int64 = 500_000_000
    static let origin: Int64 = 1_000_000_000_000

    /// A session over two hand-fed 30 fps cameras, adapting its frame rate, its first window
    /// starting at ``origin``.
    static func session() throws -> StereoSession {
        let format = CaptureFormat(fourCC: .grey, size: ImageSize(width: 32, height: 24), frameInterval: interval)
        let device = StereoDevice(left: HandFedCamera(name: "left", format: format), right: HandFedCamera(name: "right", format: format))
        try device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure = PressurePolicy(windowSeconds: Double(window) / 1e9, adaptsFrameRate: true, readsMachineState: false)
        let session = try StereoSession(device: device, options: options)
        session.state.withLock { $0.windowStart = origin }
        return session
    }

    /// README: events include "pressure changed (with the factors)". One window: 10 pairs
    /// rectified in 20 ms each and handed to a consumer that took 100 ms each, 190 frames
    /// arrived and 10 lost by the cameras. Over the 33 333 333 ns interval the cameras
    /// deliver, that is a processing load of 0.6 and a consumer load of 3.0 (each within the
    /// roundings of 1e9 / (1e9 / interval), a few ulps), and a loss rate of 10 / 200 = 5 %
    /// exactly; nothing waits in the consumer's queue. The event carries those factors with
    /// the level they reach (critical: a load of 1.0 or more).
    @Test("a pressure-changed event carries the window's factors: processing and consumer load, queue fill, loss rate")
    func aPressureChangeCarriesItsFactors() throws {
        let session = try Self.session()
        session.state.withLock { s in
            s.window.pairsProcessed = 10
            s.window.rectifyNanoseconds = 10 * 20_000_000
            s.window.consumerPairs = 10
            s.window.consumerNanoseconds = 10 * 100_000_000
            s.window.framesArrived = 190
            s.window.cameraLosses = 10
        }
        session.evaluatePressureIfDue(now: Self.origin + Self.window - 1)
        #expect(session.statistics.events.isEmpty, "a window closed before its half second")
        session.evaluatePressureIfDue(now: Self.origin + Self.window)
        let changes = session.statistics.events.compactMap { event -> (PressureLevel, PressureFactors)? in
            if case .pressureChanged(let level, let factors) = event.kind { return (level, factors) }
            return nil
        }
        try #require(changes.count == 1, "\(session.statistics.events.map(\.description))")
        let (level, factors) = changes[0]
        let interval = Double(Self.interval.nanoseconds)
        #expect(level == .critical && session.pressure == .critical)
        #expect(abs(factors.processingLoad - 20_000_000 / interval) <= 1e-15 * factors.processingLoad, "\(factors)")
        #expect(abs(factors.consumerLoad - 100_000_000 / interval) <= 1e-15 * factors.consumerLoad, "\(factors)")
        #expect(factors.lossRate == 0.05 && factors.queueFill == 0, "\(factors)")
        #expect(factors.thermalHeadroomCelsius == nil && factors.cpuFrequencyLimit == nil)
    }

    /// README: "With `adaptsFrameRate` the session lowers its frame-rate cap by a quarter when a
    /// window's work is serious or worse, at most once every two windows so each rate is judged on
    /// a whole window". Twelve windows in a row with a consumer taking 100 ms a pair: its load
    /// over the frame interval is 3.0 at 30 fps, 2.25, 1.69, 1.27 and 0.95 (still serious) at each
    /// lower rate, 0.71 (fair) at the sixth. So the rate is lowered at windows 1, 3, 5, 7 and 9,
    /// each time by exactly a quarter (one rounding of a product), never in the window after a
    /// change, and not at all once the work is only fair.
    @Test("with adaptsFrameRate the rate falls a quarter at a time, at most once every two windows, while the work is serious")
    func theFrameRateIsLoweredAtMostOnceEveryTwoWindows() throws {
        let session = try Self.session()
        let camera = 1e9 / Double(Self.interval.nanoseconds)
        var rates: [Double] = []
        for k in 1...12 {
            session.state.withLock { s in
                s.window.consumerPairs = 10
                s.window.consumerNanoseconds = 10 * 100_000_000
            }
            session.evaluatePressureIfDue(now: Self.origin + Int64(k) * Self.window)
            rates.append(try #require(session.statistics.framesPerSecond))
        }
        let before = [camera] + rates.dropLast()
        let lowered = zip(before, rates).enumerated().filter { $0.element.1 != $0.element.0 }.map { $0.offset + 1 }
        print("frame rate after each window: \(rates.map { String(format: "%.3f", $0) })")
        #expect(lowered == [1, 3, 5, 7, 9], "lowered at windows \(lowered)")
        for k in lowered {
            let ratio = rates[k - 1] / before[k - 1]
            #expect(abs(ratio - 0.75) <= 2 * Double.ulpOfOne, "window \(k): × \(ratio)")
        }
        let announced = session.statistics.events.compactMap { if case .frameRateChanged(let fps) = $0.kind { return fps }; return nil }
        #expect(announced == lowered.map { rates[$0 - 1] })
        // Five products, a rounding each, against pow's own: within 8 ulps.
        #expect(abs((rates.last ?? 0) - camera * pow(0.75, 5)) <= 8 * Double.ulpOfOne * camera)
    }
}
