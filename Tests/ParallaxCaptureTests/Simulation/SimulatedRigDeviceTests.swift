import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

@Suite("Simulated rig as capture devices")
struct SimulatedRigDeviceTests {
    /// A tiny rig so rendering costs nothing in debug builds.
    static let rig = SimulatedStereoRig.example(size: ImageSize(width: 32, height: 24))
    static let interval = FrameInterval(numerator: 1, denominator: 100)

    static func collect(_ camera: SimulatedCamera, frames: Int, timeout: Double = 10) -> FrameCollector {
        let collector = FrameCollector(keepFrames: false)
        do { try camera.start(collector.handler) } catch { Issue.record("start failed: \(error)") }
        collector.waitForFrames(frames, timeoutSeconds: timeout)
        camera.stop()
        return collector
    }

    /// FirstPrograms.md: `SimulatedStereoRig.example()` "is a 640×480 pair with a chessboard"
    /// (its doc: a 9 × 6 board 0.6 m away, the cameras 6 cm apart, in metres).
    @Test("the example rig is a 640×480 pair with a 9 × 6 chessboard 0.6 m away, 6 cm apart")
    func exampleRigIsTheDocumentedOne() throws {
        let rig = SimulatedStereoRig.example()
        #expect(rig.calibration.left.size == ImageSize(width: 640, height: 480) && rig.calibration.right.size == rig.calibration.left.size)
        let board = try #require(rig.scene.target, "the example rig has no board")
        #expect(board.target.columns == 9 && board.target.rows == 6, "\(board.target.columns) × \(board.target.rows)")
        // The middle of the corner grid (4 and 2.5 squares of 25 mm from the first corner) is 0.6 m out.
        let middle = board.pose.rotation * SIMD3(4 * 0.025, 2.5 * 0.025, 0) + board.pose.translation
        #expect(abs(middle.z - 0.6) < 1e-12, "\(middle)")
        #expect(rig.calibration.translationUnit == .metre && abs(abs(rig.calibration.extrinsics.translation.x) - 0.06) < 1e-12)
    }

    @Test("Offset and drift put frame k of each camera exactly where the shared clock says")
    func offsetAndDrift() throws {
        let epoch: Int64 = 1_000_000_000_000
        let device = SimulatedRigDevice(rig: Self.rig, frameInterval: Self.interval,
                                        rightTiming: SimulatedCameraTiming(offsetNanoseconds: 2_500_000, driftPPM: 100),
                                        pace: .asFastAsPossible, epochNanoseconds: epoch)
        let left = Self.collect(device.left, frames: 200).records.prefix(200)
        let right = Self.collect(device.right, frames: 200).records.prefix(200)
        #expect(left.count == 200 && right.count == 200)
        for record in left {
            #expect(record.timestampNanoseconds == epoch + Int64(record.sequence) * 10_000_000)
        }
        // Right frame k: epoch + 2.5 ms + k · 10 ms · (1 + 100 ppm); the k-th frame drifts 1 µs per frame.
        for record in right {
            let expected = Double(epoch) + 2_500_000 + Double(record.sequence) * 10_000_000 * (1 + 100e-6)
            #expect(abs(Double(record.timestampNanoseconds) - expected) <= 1)
        }
        let lastRight = try #require(right.last), lastLeft = try #require(left.last)
        let expectedSkew: Int64 = 2_500_000 + 199_000
        #expect(lastRight.timestampNanoseconds - lastLeft.timestampNanoseconds == expectedSkew)
    }

    @Test("Jitter stays within its bound around the true exposure time, and drops leave sequence gaps")
    func jitterAndDrops() {
        let device = SimulatedRigDevice(rig: Self.rig, frameInterval: Self.interval,
                                        leftTiming: SimulatedCameraTiming(jitterNanoseconds: 300_000, dropProbability: 0.2),
                                        pace: .asFastAsPossible, seed: 42)
        let collector = Self.collect(device.left, frames: 400)
        let records = Array(collector.records.prefix(400))
        #expect(records.count == 400)
        var deviations: [Int64] = []
        for record in records {
            let deviation = record.timestampNanoseconds - device.left.exposureTimeNanoseconds(ofFrame: record.sequence)
            deviations.append(deviation)
        }
        #expect(deviations.allSatisfy { abs($0) <= 300_000 })
        // Uniform jitter: its spread uses the bound (both signs, more than half the range).
        #expect((deviations.max() ?? 0) - (deviations.min() ?? 0) > 300_000)
        // Every missing sequence number was reported as a simulated drop.
        let last = records[records.count - 1].sequence
        let missing = Int(last) + 1 - records.count
        let dropped = collector.events.reduce(0) { total, event in
            if case .dropped(let n, .simulated) = event { return total + n }
            return total
        }
        #expect(dropped >= missing)
        // 20 % of ~500 frames: the binomial standard deviation is ≈ 9, so 60…140 is beyond 4 σ.
        #expect(missing > 60 && missing < 140, "\(missing) of \(last + 1) frames dropped")
    }

    @Test("Real-time pace delivers frames at their timestamps on CLOCK_MONOTONIC")
    func realTimePacing() throws {
        let device = SimulatedRigDevice(rig: Self.rig, frameInterval: Self.interval, pace: .realTime)
        let arrivals = ArrivalLog()
        try device.left.start { output in
            if case .frame(let frame) = output { arrivals.add(frame.timestampNanoseconds, monotonicNanoseconds()) }
        }
        let deadline = Date(timeIntervalSinceNow: 5)
        while arrivals.count < 12 && Date() < deadline { usleep(5_000) }
        device.left.stop()
        let log = arrivals.entries
        #expect(log.count >= 12)
        // Never early: no frame is handed out before the moment it stamps, so the stream cannot run
        // ahead of the clock (as fast as possible, these frames would come at once). How late a
        // frame may be is the scheduler's business, not a bound a unit test can hold on a loaded
        // machine (sanitizers, a shared VM): the session's lateness figures are measured in Benchmarks/.
        #expect(log.allSatisfy { $0.arrival >= $0.timestamp })
        // Ten intervals take ten intervals.
        let span = log[11].timestamp - log[1].timestamp
        #expect(span == 10 * 10_000_000)
    }

    @Test("Frames carry the rendered view and the camera model of the active format")
    func framesCarryRenderAndModel() throws {
        let device = SimulatedRigDevice(rig: Self.rig, pace: .asFastAsPossible)
        let collector = FrameCollector()
        try device.right.start(collector.handler)
        #expect(collector.waitForFrames(1, timeoutSeconds: 10))
        device.right.stop()
        let frame = try #require(collector.frames.first)
        let expected = try Self.rig.render(.right)
        #expect(frame.copyImage() == expected)
        #expect(frame.camera == Self.rig.calibration.right)
        #expect(frame.source.stableID == "simulated-right")
    }
}

/// Thread-safe (timestamp, arrival) pairs.
final class ArrivalLog: @unchecked Sendable {
    private let lock = NSLock()
    private var log: [(timestamp: Int64, arrival: Int64)] = []
    func add(_ timestamp: Int64, _ arrival: Int64) { lock.lock(); log.append((timestamp, arrival)); lock.unlock() }
    var count: Int { lock.lock(); defer { lock.unlock() }; return log.count }
    var entries: [(timestamp: Int64, arrival: Int64)] { lock.lock(); defer { lock.unlock() }; return log }
}
