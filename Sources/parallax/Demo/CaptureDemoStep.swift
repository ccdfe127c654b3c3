import Foundation
import ParallaxCapture
import ParallaxGeometry

/// Streams the simulated rig in real time, pairs its frames and records the pairs.
struct CaptureDemoStep: DemoStep {
    let title = "capture (simulated rig)"

    func run(_ context: DemoContext) async throws {
        let folder = context.path("capture")
        let device = SimulatedRigDevice(
            rig: .example(size: ImageSize(width: 640, height: 480)),
            frameInterval: FrameInterval(numerator: 1, denominator: 30),
            leftTiming: SimulatedCameraTiming(jitterNanoseconds: 200_000),
            rightTiming: SimulatedCameraTiming(offsetNanoseconds: 3_000_000, driftPPM: 40, jitterNanoseconds: 200_000,
                                               dropProbability: 0.02),
            pace: .realTime)
        try device.prepare()
        let recorder = try EuRoCRecorder(directory: folder, cameraCount: 2)
        let summary = try recordSynchronizedPairs(left: device.left, right: device.right, pairs: 30, into: recorder,
                                                  timeoutSeconds: 20)
        let stats = summary.statistics
        print("   right camera: 3 ms offset, 40 ppm drift, ±0.2 ms jitter, 2 % drops")
        print("   \(summary.pairsWritten) pairs; skew p50 \(String(format: "%.2f", Double(stats.skew.p50Nanoseconds) / 1e6)) ms, "
              + "max \(String(format: "%.2f", Double(stats.skew.maxNanoseconds) / 1e6)) ms; "
              + "lost by the cameras: left \(summary.deviceDrops.left), right \(summary.deviceDrops.right); "
              + "unpaired: left \(stats.drops(.left)), right \(stats.drops(.right))")
        print("   recorded to \(folder)/ (EuRoC layout, cam0 left, cam1 right)")
    }
}
