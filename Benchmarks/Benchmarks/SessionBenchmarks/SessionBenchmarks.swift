import Benchmark
import Foundation
import Parallax
import ParallaxTestSupport
import Synchronization

// Pairs per second through a whole StereoSession (device → synchronizer → rectifier →
// callback) and allocations per pair once it runs. One benchmark iteration is one pair:
// `mallocCountTotal` counts the allocations of every pair in a run (target: 0).
//
// The frames come from a device made for this benchmark: its frames are made before the
// measurement (a camera allocates one `Frame` object per frame it dequeues; that is the
// device's cost, not the session's), then handed to the session one left/right pair at a
// time; the next pair waits until the callback got the previous one. Images are 160×120
// gray, rectified with the simulated rig's calibration into the session's reused buffers.

/// One session for every run, so that no run measures another's start or teardown
/// (threads exiting, buffers freed) on the side.
final class SessionFixture: @unchecked Sendable {
    static let shared = SessionFixture()

    let size = ImageSize(width: 160, height: 120)
    let format: CaptureFormat
    let pixels: PerSide<SharedPixels>
    let cameras: PerSide<HandFedCamera>
    let session: StereoSession
    let delivered = Atomic<Int>(0)
    var next = 0

    init() {
        let interval = FrameInterval(numerator: 1, denominator: 30)
        format = CaptureFormat(fourCC: .grey, size: size, frameInterval: interval)
        let rig = SimulatedStereoRig.example(size: size)
        guard let left = try? rig.render(.left), let right = try? rig.render(.right) else { fatalError("rendering failed") }
        pixels = PerSide(left: SharedPixels(left), right: SharedPixels(right))
        cameras = PerSide(left: HandFedCamera(name: "left", format: format), right: HandFedCamera(name: "right", format: format))
        let device = StereoDevice(left: cameras.left, right: cameras.right)
        try? device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        options.rectification.threads = 1
        guard let session = try? StereoSession(device: device, calibration: rig.calibration, options: options) else {
            fatalError("the benchmark session could not be made")
        }
        self.session = session
        try? session.start(delivering: { [unowned self] pair in
            blackHole(pair.left.image)
            self.delivered.add(1, ordering: .releasing)
        })
        run(frames(2_000))  // pools, plans and pressure windows reach their steady state
    }

    /// `count` left/right frame pairs, 30 fps, the right 2 ms late.
    func frames(_ count: Int) -> [PerSide<Frame>] {
        (0..<count).map { _ in
            defer { next += 1 }
            let t = 1_000_000_000 + Int64(next) * format.frameInterval.nanoseconds
            return PerSide { side in
                cameras[side].frame(pixels[side], timestampNanoseconds: t + (side == .right ? 2_000_000 : 0), sequence: UInt64(next))
            }
        }
    }

    /// Hands over each pair and waits until the callback has it (a pair is released when
    /// its later frame arrives).
    func run(_ batch: [PerSide<Frame>]) {
        for pair in batch {
            let before = delivered.load(ordering: .acquiring)
            cameras.left.deliver(pair.left)
            cameras.right.deliver(pair.right)
            while delivered.load(ordering: .acquiring) == before { sched_yield() }
        }
    }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .cpuTotal, .mallocCountTotal],
                                           scalingFactor: .kilo, maxDuration: .seconds(3), maxIterations: 10)

    Benchmark("Session/pairs rectified through a session with a callback (pairs)") { benchmark in
        let fixture = SessionFixture.shared
        let batch = fixture.frames(benchmark.scaledIterations.count)
        benchmark.startMeasurement()
        fixture.run(batch)
        benchmark.stopMeasurement()
        blackHole(fixture.session.statistics.pairsDelivered)
    }
}
