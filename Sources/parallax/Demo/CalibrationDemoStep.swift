import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// Calibrates the simulated rig from rendered chessboard views and compares the
/// result with the rig's ground truth.
struct CalibrationDemoStep: DemoStep {
    let title = "calibration: detect rendered boards, solve, compare with ground truth"

    /// Board poses (board → left camera): a spread of tilts and positions, as a
    /// person waving a board in front of the rig would produce.
    static func poses(board: ChessboardTarget, camera rig: SimulatedStereoRig, count: Int) -> [RigidTransform] {
        var state: UInt64 = 0x5EED
        func uniform(_ range: ClosedRange<Double>) -> Double {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return range.lowerBound + (range.upperBound - range.lowerBound) * Double(state >> 11) / Double(1 << 53)
        }
        let centre = SIMD3(Double(board.columns - 1) * board.squareSize / 2, Double(board.rows - 1) * board.squareSize / 2, 0)
        var poses: [RigidTransform] = []
        var attempts = 0
        while poses.count < count && attempts < 2000 {
            attempts += 1
            let rotation = Matrix3x3(rodrigues: SIMD3(uniform(-0.7...0.7), uniform(-0.7...0.7), uniform(-0.35...0.35)))
            let distance = uniform(420...720)
            let pose = RigidTransform(rotation: rotation,
                                      translation: SIMD3(uniform(-0.2...0.15) * distance, uniform(-0.15...0.15) * distance, distance) - rotation * centre)
            var candidate = rig
            candidate.scene.target = PlacedTarget(target: board, pose: pose)
            // Keep poses whose corners all land inside both images with a margin of 15 px.
            let inside = [StereoSide.left, .right].allSatisfy { side in
                candidate.projectedCorners(side).allSatisfy { p in
                    guard let p else { return false }
                    return p.x > 15 && p.y > 15 && p.x < Double(rig.model(side).size.width) - 15 && p.y < Double(rig.model(side).size.height) - 15
                }
            }
            if inside { poses.append(pose) }
        }
        return poses
    }

    func run(_ context: DemoContext) async throws {
        let truth = (context.shared["calibration"] as? StereoCalibration) ?? GeometryDemoStep.rig
        let board = ChessboardTarget(columns: 9, rows: 6, squareSize: 30)
        let rig = SimulatedStereoRig(calibration: truth, scene: SimulatedScene(backgroundLevel: 110), samplesPerAxis: 3)
        let poses = Self.poses(board: board, camera: rig, count: 15)
        let detector = ChessboardDetector(board: CalibrationBoard(columns: 9, rows: 6, squareSize: 30, unit: .millimetre))
        var views: [StereoView] = []
        let start = Date()
        for (index, pose) in poses.enumerated() {
            var scene = rig
            scene.scene.target = PlacedTarget(target: board, pose: pose)
            var found: [CalibrationView] = []
            for side in [StereoSide.left, .right] {
                let image = try GrayImage(scene.render(side))
                if case .success(let detection) = detector.detect(in: image) {
                    found.append(CalibrationView(name: "\(side)\(index)", corners: detection.corners))
                }
            }
            if found.count == 2 { views.append(StereoView(left: found[0], right: found[1])) }
        }
        print(String(format: "   rendered and detected %d of %d board poses in both cameras (%.1f s)",
                     views.count, poses.count, Date().timeIntervalSince(start)))
        let result = try StereoCalibrator(target: CalibrationBoard(columns: 9, rows: 6, squareSize: 30, unit: .millimetre), model: .brown5)
            .calibrate(pairs: views, size: truth.left.size)
        let estimate = result.calibration
        print(String(format: "   rms %.3f px, epipolar error %.3f px, rectified vertical rms %.3f px",
                     result.rms, result.epipolarErrorMean, result.rectifiedVerticalRMS))
        for (name, e, t) in [("left", estimate.left, truth.left), ("right", estimate.right, truth.right)] {
            print(String(format: "   %@: fx %.2f (true %.2f, %+.3f %%), fy %.2f (%+.3f %%), principal point off by (%+.2f, %+.2f) px",
                         name, e.intrinsics.fx, t.intrinsics.fx, 100 * (e.intrinsics.fx / t.intrinsics.fx - 1), e.intrinsics.fy,
                         100 * (e.intrinsics.fy / t.intrinsics.fy - 1), e.intrinsics.cx - t.intrinsics.cx, e.intrinsics.cy - t.intrinsics.cy))
        }
        let rotationError = length((estimate.extrinsics.rotation * truth.extrinsics.rotation.transposed).rodriguesVector) * 180 / Double.pi
        print(String(format: "   baseline %.3f mm (true %.3f, %+.3f %%), relative rotation off by %.4f°",
                     estimate.baseline, truth.baseline, 100 * (estimate.baseline / truth.baseline - 1), rotationError))
        let path = context.path("calibration-estimated.json")
        try estimate.write(toFile: path)
        print("   wrote the estimated calibration to \(context.shownPath("calibration-estimated.json"))")
        context.shared["estimatedCalibration"] = estimate
    }
}
