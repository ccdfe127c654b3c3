import Foundation
import ParallaxGeometry

/// The simulated rig's calibration, its rectification and a convergence plane.
struct GeometryDemoStep: DemoStep {
    let title = "stereo geometry: rectification and convergence plane"

    /// The rig the demo simulates: two 640×480 cameras 60 mm apart, slightly
    /// toed in, with moderate barrel distortion. Later steps render it, pair
    /// its frames and calibrate it.
    static let rig = StereoCalibration(
        left: CameraModel(size: ImageSize(width: 640, height: 480),
                          intrinsics: CameraIntrinsics(fx: 520, fy: 520, cx: 322.0, cy: 238.5),
                          distortion: .brownConrady(BrownConrady(k1: -0.12, k2: 0.03, p1: 0.0005, p2: -0.0003, k3: 0))),
        right: CameraModel(size: ImageSize(width: 640, height: 480),
                           intrinsics: CameraIntrinsics(fx: 515, fy: 516, cx: 317.5, cy: 242.0),
                           distortion: .brownConrady(BrownConrady(k1: -0.11, k2: 0.025, p1: -0.0004, p2: 0.0002, k3: 0))),
        extrinsics: RigidTransform(rodrigues: SIMD3(0.004, -0.03, 0.002), translation: SIMD3(-60, 0.4, 0.8)),
        extra: ["rig_name": .string("parallax demo rig (simulated)")])

    func run(_ context: DemoContext) async throws {
        let calibration = Self.rig
        let path = context.path("rig-calibration.json")
        try calibration.write(toFile: path)
        print("   wrote the simulated rig's calibration to \(context.shownPath("rig-calibration.json"))")
        let rectification = try calibration.rectification(RectificationOptions(alpha: 0))
        print(String(format: "   rectified: %@ layout, focal %.2f px, baseline %.2f mm, valid area left %@ right %@",
                     rectification.layout.rawValue, rectification.focalLength, abs(rectification.signedBaseline),
                     "\(rectification.roi1.array)", "\(rectification.roi2.array)"))
        let distance = 1500.0
        let converged = rectification.converged(atDistance: distance)
        print(String(format: "   convergence plane at %.0f mm: images shift %.2f px in total (f·B/Z = %.2f)",
                     distance, 2 * converged.convergenceShift,
                     rectification.focalLength * abs(rectification.signedBaseline) / distance))
        let start = Date()
        let maps = calibration.rectificationMaps(for: converged)
        let defined = maps.left.sourceX.filter { !$0.isNaN }.count
        print(String(format: "   built both rectification maps in %.0f ms (%d of %d left pixels have a source)",
                     Date().timeIntervalSince(start) * 1000, defined, maps.left.sourceX.count))
        context.shared["calibration"] = calibration
        context.shared["rectification"] = converged
    }
}
