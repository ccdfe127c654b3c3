import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport

/// Rigs, devices and helpers shared by the session tests.
enum SessionFixtures {
    static let interval = FrameInterval(numerator: 1, denominator: 30)

    /// The simulated rig at `size` as a stereo device: left on time, right 3 ms late with
    /// 40 ppm drift and ±1 ms jitter, `drops` of frames lost on each side.
    static func simulated(size: ImageSize = ImageSize(width: 160, height: 120), pace: SimulationPace = .asFastAsPossible,
                          drops: Double = 0.01, noise: Double = 0, format: PixelFormat = .gray8,
                          seed: UInt64 = 11) -> (SimulatedRigDevice, StereoDevice) {
        let rig = SimulatedRigDevice(
            rig: .example(size: size), frameInterval: interval, pixelFormat: format,
            leftTiming: SimulatedCameraTiming(jitterNanoseconds: 1_000_000, dropProbability: drops, noiseStandardDeviation: noise),
            rightTiming: SimulatedCameraTiming(offsetNanoseconds: 3_000_000, driftPPM: 40, jitterNanoseconds: 1_000_000,
                                               dropProbability: drops, noiseStandardDeviation: noise),
            pace: pace, seed: seed)
        return (rig, StereoDevice(simulated: rig))
    }

    /// Pairs whose two frames were not exposed at the same moment: the left frame is not
    /// the one whose true exposure is nearest the right frame's.
    static func mismatches(_ pairs: [(left: UInt64, right: UInt64)], rig: SimulatedRigDevice) -> Int {
        pairs.filter { pair in
            let right = rig.right.exposureTimeNanoseconds(ofFrame: pair.right)
            let candidates = [pair.left > 0 ? pair.left - 1 : pair.left, pair.left, pair.left + 1]
            let nearest = candidates.min { abs(rig.left.exposureTimeNanoseconds(ofFrame: $0) - right)
                < abs(rig.left.exposureTimeNanoseconds(ofFrame: $1) - right) }
            return nearest != pair.left
        }.count
    }

    /// Two small GREY virtual UVC cameras (160×120 at 30 fps) on separate buses.
    static func virtualPair() throws -> (VirtualUVCDriver, StereoDevice) {
        func spec(_ path: String, port: String, seed: UInt64) -> VirtualCameraSpec {
            var spec = VirtualCameraSpec(
                path: path, card: "Virtual \(port)", busInfo: "usb-0000:00:14.0-\(port)",
                formats: [.init(fourCC: .grey, sizes: [ImageSize(width: 160, height: 120)], intervals: [interval])],
                seed: seed)
            spec.usb = USBLocation(bus: Int(port) ?? 1, portPath: port, speedMbps: 480, serial: "SN\(port)")
            return spec
        }
        let driver = VirtualUVCDriver(cameras: [spec("/dev/video0", port: "1", seed: 3), spec("/dev/video2", port: "2", seed: 5)])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2"))
        try device.configure(StereoConfiguration(format: CaptureFormat(fourCC: .grey, size: ImageSize(width: 160, height: 120),
                                                                       frameInterval: interval)))
        return (driver, device)
    }
}

/// Collects what a session delivers through a callback, thread-safely.
final class PairLog: @unchecked Sendable {
    private let lock = NSLock()
    private var sequences: [(left: UInt64, right: UInt64)] = []
    private var sources: [PerSide<String>] = []
    private var convergence: [Double?] = []
    private let condition = NSCondition()

    var handler: @Sendable (StereoPair) -> Void {
        { [self] pair in
            lock.lock()
            sequences.append((pair.left.sequence, pair.right.sequence))
            sources.append(PerSide(left: pair.left.source.stableID, right: pair.right.source.stableID))
            convergence.append(pair.rectification?.convergenceDistance)
            lock.unlock()
            condition.lock()
            condition.broadcast()
            condition.unlock()
        }
    }

    var count: Int { lock.lock(); defer { lock.unlock() }; return sequences.count }
    var pairs: [(left: UInt64, right: UInt64)] { lock.lock(); defer { lock.unlock() }; return sequences }
    var stableIDs: [PerSide<String>] { lock.lock(); defer { lock.unlock() }; return sources }

    /// Waits until at least `n` pairs arrived; false after `seconds`.
    func wait(for n: Int, seconds: Double = 10) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        condition.lock()
        defer { condition.unlock() }
        while count < n {
            if !condition.wait(until: deadline) { return count >= n }
        }
        return true
    }
}

/// Runs `body` on a thread of its own and awaits its result. Tests whose work blocks
/// (condition waits, polling) use it so they do not hold one of the cooperative threads
/// (one per core) that the async tests beside them need. Assert on the result, on the
/// test's own task: `#expect` on another thread is not attributed to the test.
func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread { continuation.resume(with: Result { try body() }) }
    }
}

/// Waits until `predicate` holds, polling; false after `seconds`.
func eventually(seconds: Double = 10, _ predicate: () -> Bool) -> Bool {
    let deadline = Date(timeIntervalSinceNow: seconds)
    while Date() < deadline {
        if predicate() { return true }
        usleep(10_000)
    }
    return predicate()
}

/// The horizontal shift (pixels, subpixel by a parabola through the best three) that best
/// maps `left` onto `right` over a rectangle: right(x − d, y) ≈ left(x, y), so `d` is the
/// disparity (left minus right coordinate).
func measuredDisparity(left: ImageView, right: ImageView, x: Range<Int>, y: Range<Int>, search: ClosedRange<Int>) -> Double {
    func cost(_ d: Int) -> Double {
        var sum = 0.0
        for row in y {
            for col in x {
                let a = Double(left.byte(x: col, y: row)), b = Double(right.byte(x: col - d, y: row))
                sum += (a - b) * (a - b)
            }
        }
        return sum
    }
    let costs = search.map { ($0, cost($0)) }
    guard let best = costs.min(by: { $0.1 < $1.1 }) else { return .nan }
    guard best.0 > search.lowerBound, best.0 < search.upperBound else { return Double(best.0) }
    let c0 = cost(best.0 - 1), c1 = best.1, c2 = cost(best.0 + 1)
    let denominator = c0 - 2 * c1 + c2
    return Double(best.0) + (denominator > 0 ? 0.5 * (c0 - c2) / denominator : 0)
}
