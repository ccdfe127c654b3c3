import Foundation
import ParallaxCapture
import ParallaxGeometry

/// Streams the simulated rig in real time as one stereo device, pairs its frames and
/// records the pairs; shows the USB cost two real webcams would have.
struct CaptureDemoStep: DemoStep {
    let title = "capture (simulated rig as one stereo device; USB cost of real webcams)"

    func run(_ context: DemoContext) async throws {
        let folder = context.path("capture")
        let device = SimulatedRigDevice(
            rig: .example(size: ImageSize(width: 640, height: 480)),
            frameInterval: FrameInterval(numerator: 1, denominator: 30),
            leftTiming: SimulatedRigTiming.left(), rightTiming: SimulatedRigTiming.right(),
            pace: .realTime)
        let stereo = StereoDevice(simulated: device)
        try stereo.configure(StereoConfiguration(format: CaptureFormat(fourCC: .grey, size: ImageSize(width: 640, height: 480),
                                                                       frameInterval: FrameInterval(numerator: 1, denominator: 30))))
        let recorder = try EuRoCRecorder(directory: folder)
        defer { recorder.abandon() }  // ended early: what was written stays, listed
        let session = try StereoSession(device: stereo)
        let summary = try await session.record(into: recorder, pairs: 30, timeoutSeconds: 20)
        let stats = summary.statistics
        let skew = stats.synchronizer.skew
        print("   the simulated rig (as `--simulated`): \(SimulatedRigTiming.summary)")
        print("   \(summary.pairsWritten) pairs; skew p50 \(String(format: "%.2f", Double(skew.p50Nanoseconds) / 1e6)) ms, "
              + "max \(String(format: "%.2f", Double(skew.maxNanoseconds) / 1e6)) ms; "
              + "lost by the cameras: left \(stats.lost(.left)), right \(stats.lost(.right)); "
              + "unpaired: left \(stats.synchronizer.dropped(.left)), right \(stats.synchronizer.dropped(.right))")
        print("   recorded to \(context.shownPath("capture"))/ (EuRoC layout, cam0 left, cam1 right)")
        // What two real webcams would cost on one USB 2.0 bus (`parallax cost`).
        let webcam = CaptureFormat(fourCC: .yuyv, size: ImageSize(width: 1280, height: 720),
                                   frameInterval: FrameInterval(numerator: 1, denominator: 30))
        let planned = PlannedRig(formats: PerSide(repeating: webcam), sharedBus: true, speed: .high)
        let fits = planned.alternatives(limit: 2).map { "\($0.rig.streaming(.left)) (\(String(format: "%.3f", $0.cost.cost)))" }
        print("   two USB 2.0 webcams at \(webcam) on one bus: hardware cost \(String(format: "%.3f", planned.cost.cost)), "
              + "refused before streaming; fits: \(fits.joined(separator: ", ")); see `parallax cost`")
    }
}
