import Benchmark
import Foundation
import Parallax
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

/// A capture device whose frames the benchmark hands over itself.
final class HandFedCamera: CaptureDevice, @unchecked Sendable {
    let identity: DeviceIdentity
    let format: CaptureFormat
    private let handler = Mutex<(@Sendable (CaptureOutput) -> Void)?>(nil)

    init(name: String, format: CaptureFormat) {
        identity = DeviceIdentity(stableID: name, name: name)
        self.format = format
    }

    func supportedFormats() throws(CaptureError) -> [CaptureFormat] { [format] }
    var activeFormat: CaptureFormat? { format }
    func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat { self.format }
    func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) { self.handler.withLock { $0 = handler } }
    func stop() {
        let handler = self.handler.withLock { h in defer { h = nil }; return h }
        handler?(.event(.stopped))
    }

    /// Delivers `frame` on the caller's thread, as a camera's thread would.
    func deliver(_ frame: Frame) { handler.withLock { $0 }?(.frame(frame)) }
}

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(metrics: [.wallClock, .throughput, .cpuTotal, .mallocCountTotal],
                                           scalingFactor: .kilo, maxDuration: .seconds(3), maxIterations: 10)

    Benchmark("Session/pairs rectified through a session with a callback (pairs)") { benchmark in
        let size = ImageSize(width: 160, height: 120)
        let interval = FrameInterval(numerator: 1, denominator: 30)
        let format = CaptureFormat(fourCC: .grey, size: size, frameInterval: interval)
        let rig = SimulatedStereoRig.example(size: size)
        let pixels = PerSide(left: SharedPixels((try? rig.render(.left)) ?? (try! ImageBuffer(format: .gray8, size: size))),
                             right: SharedPixels((try? rig.render(.right)) ?? (try! ImageBuffer(format: .gray8, size: size))))
        let cameras = PerSide(left: HandFedCamera(name: "left", format: format), right: HandFedCamera(name: "right", format: format))
        let device = StereoDevice(left: cameras.left, right: cameras.right)
        try? device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        options.rectification.threads = 1
        guard let session = try? StereoSession(device: device, calibration: rig.calibration, options: options) else {
            fatalError("the benchmark session could not be made")
        }
        let delivered = Atomic<Int>(0)
        try? session.start(delivering: { pair in
            blackHole(pair.left.image)
            delivered.add(1, ordering: .releasing)
        })
        let frameNanoseconds = interval.nanoseconds
        var k = 0
        func frames(_ count: Int) -> [PerSide<Frame>] {
            (0..<count).map { _ in
                defer { k += 1 }
                let t = 1_000_000_000 + Int64(k) * frameNanoseconds
                return PerSide { side in
                    let p = pixels[side]
                    return Frame(image: p.view, payload: p.payload, format: format, timestampNanoseconds: t + (side == .right ? 2_000_000 : 0),
                                 timestampSource: .midExposure, sequence: UInt64(k), source: cameras[side].identity, release: { _ = p })
                }
            }
        }
        func run(_ batch: [PerSide<Frame>]) {
            for pair in batch {
                let before = delivered.load(ordering: .acquiring)
                cameras.left.deliver(pair.left)
                cameras.right.deliver(pair.right)
                // Wait for this pair (a pair is released when its later frame arrives).
                while delivered.load(ordering: .acquiring) == before { sched_yield() }
            }
        }
        // Warm up: pools, plans and windows reach their steady state.
        run(frames(2_000))
        let measured = frames(benchmark.scaledIterations.count + 1)
        benchmark.startMeasurement()
        run(Array(measured.dropLast()))
        benchmark.stopMeasurement()
        session.stop()
        blackHole(session.statistics.pairsDelivered)
    }
}
