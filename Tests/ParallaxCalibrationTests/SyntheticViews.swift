import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry

/// SplitMix64 from the library, so synthetic tests repeat exactly.
typealias SeededRandom = SeededRandomGenerator

/// A ground-truth stereo rig and board poses for solver tests.
struct SyntheticRig {
    let target = CalibrationBoard(columns: 11, rows: 8, squareSize: 30, unit: "mm")
    let size = ImageSize(width: 640, height: 480)
    let left = CameraModel(size: ImageSize(width: 640, height: 480),
                           intrinsics: CameraIntrinsics(fx: 520, fy: 515, cx: 322, cy: 236),
                           distortion: .brownConrady(BrownConrady(k1: -0.25, k2: 0.09, p1: 0.001, p2: -0.0005, k3: 0)))
    let right = CameraModel(size: ImageSize(width: 640, height: 480),
                            intrinsics: CameraIntrinsics(fx: 525, fy: 522, cx: 315, cy: 245),
                            distortion: .brownConrady(BrownConrady(k1: -0.22, k2: 0.06, p1: -0.0008, p2: 0.0004, k3: 0)))
    /// Left → right: right camera 65 mm to the right, slightly turned.
    let extrinsics = RigidTransform(rodrigues: SIMD3(0.01, -0.02, 0.005), translation: SIMD3(-65, 0.8, -1.2))

    var calibration: StereoCalibration { StereoCalibration(left: left, right: right, extrinsics: extrinsics) }

    /// `count` board poses (board → left camera) that keep every corner inside both images.
    func poses(count: Int, random: inout SeededRandom) -> [RigidTransform] {
        var out: [RigidTransform] = []
        let centre = SIMD3(Double(target.columns - 1) * target.squareSize / 2, Double(target.rows - 1) * target.squareSize / 2, 0)
        while out.count < count {
            let tilt = SIMD3(Double.random(in: -0.9...0.9, using: &random), Double.random(in: -0.9...0.9, using: &random),
                             Double.random(in: -0.4...0.4, using: &random))
            let rotation = Matrix3x3(rodrigues: tilt)
            let distance = Double.random(in: 280...460, using: &random)
            let offset = SIMD3(Double.random(in: -0.2...0.12, using: &random) * distance, Double.random(in: -0.15...0.15, using: &random) * distance, distance)
            let pose = RigidTransform(rotation: rotation, translation: offset - rotation * centre)
            let right = extrinsics.composed(after: pose)
            let ok = target.objectPoints.allSatisfy { p in
                guard let a = left.project(pose.apply(p)), let b = self.right.project(right.apply(p)) else { return false }
                return a.x > 10 && a.y > 10 && a.x < 630 && a.y < 470 && b.x > 10 && b.y > 10 && b.x < 630 && b.y < 470
            }
            if ok { out.append(pose) }
        }
        return out
    }

    /// Corner observations of each pose in both cameras with Gaussian noise of `sigma` pixels per coordinate.
    func views(poses: [RigidTransform], sigma: Double, random: inout SeededRandom) -> [StereoView] {
        poses.enumerated().map { index, pose in
            let right = extrinsics.composed(after: pose)
            func observe(_ camera: CameraModel, _ transform: RigidTransform) -> [SIMD2<Double>] {
                target.objectPoints.map { p in
                    let pixel = camera.project(transform.apply(p)) ?? .zero
                    return pixel + SIMD2(random.nextGaussian(), random.nextGaussian()) * sigma
                }
            }
            return StereoView(left: CalibrationView(name: "left\(index).png", corners: observe(left, pose)),
                              right: CalibrationView(name: "right\(index).png", corners: observe(self.right, right)))
        }
    }
}
