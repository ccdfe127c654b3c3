import ParallaxGeometry
import ParallaxImage

/// Two calibrated virtual cameras looking at one ``SimulatedScene``: the
/// geometry of the simulated stereo rig, its renders and its ground truth.
///
/// The world frame is the left camera's frame; the right camera sits at
/// `calibration.extrinsics` (left → right, OpenCV's R, T), so any baseline
/// direction, vergence or roll is just a different calibration. Each camera
/// may have its own size, intrinsics and Brown–Conrady or fisheye lens.
///
/// The streaming side (clock, offsets, drift, jitter, drops) is
/// ``SimulatedRigDevice``; this type is pure geometry and has no state.
public struct SimulatedStereoRig: Hashable, Sendable {
    /// Both cameras and the motion between them (translation in the scene's unit).
    public var calibration: StereoCalibration
    /// What the cameras see.
    public var scene: SimulatedScene
    /// How images are made.
    public var samplesPerAxis: Int

    /// A rig seeing `scene`; `samplesPerAxis` is the renderer's supersampling at silhouettes and texture edges (≥ 1).
    public init(calibration: StereoCalibration, scene: SimulatedScene, samplesPerAxis: Int = 4) {
        self.calibration = calibration
        self.scene = scene
        self.samplesPerAxis = max(1, samplesPerAxis)
    }

    /// The camera model of one camera.
    public func model(_ camera: StereoSide) -> CameraModel {
        camera == .left ? calibration.left : calibration.right
    }

    /// World (left camera) frame → this camera's frame.
    public func cameraFromWorld(_ camera: StereoSide) -> RigidTransform {
        camera == .left ? .identity : calibration.extrinsics
    }

    /// The image one camera sees (see ``SceneRenderer``); `isCancelled` can stop the
    /// rendering between rows (``SimulationError/cancelled``).
    public func render(_ camera: StereoSide, format: PixelFormat = .gray8, isCancelled: () -> Bool = { false })
        throws(SimulationError) -> ImageBuffer {
        try SceneRenderer(samplesPerAxis: samplesPerAxis)
            .render(scene, camera: model(camera), cameraFromWorld: cameraFromWorld(camera), format: format, isCancelled: isCancelled)
    }

    /// Ground truth: the target's inner corners in one camera's pixels, OpenCV
    /// order, `nil` where not visible (or when the scene has no target).
    public func projectedCorners(_ camera: StereoSide) -> [SIMD2<Double>?] {
        guard let target = scene.target else { return [] }
        return SceneRenderer.projectedCorners(of: target, camera: model(camera), cameraFromWorld: cameraFromWorld(camera))
    }

    /// Ground truth: the depth (z in that camera's frame, scene units) of the
    /// surface seen at `pixel`, or `nil` when the ray hits nothing or the pixel does not unproject.
    public func depth(atPixel pixel: SIMD2<Double>, camera: StereoSide) -> Double? {
        guard let ray = try? model(camera).ray(throughPixel: pixel) else { return nil }
        let worldFromCamera = cameraFromWorld(camera).inverse
        guard let hit = scene.firstHit(origin: worldFromCamera.translation, direction: worldFromCamera.rotation * ray)
        else { return nil }
        return hit.t * ray.z
    }

    /// A ready-made rig for demos and tests: two 60° cameras with mild
    /// Brown–Conrady distortion, 6 cm apart horizontally, looking at a 9 × 6
    /// chessboard (25 mm squares) 0.6 m away, slightly turned, in front of a
    /// textured wall at 2.5 m and a checkered panel at 1.2 m. Lengths in metres.
    public static func example(size: ImageSize = ImageSize(width: 640, height: 480)) -> SimulatedStereoRig {
        let w = Double(size.width), h = Double(size.height)
        let f = w / (2 * 0.5773502691896257)  // 60° horizontal field of view: f = (w/2) / tan 30°
        let lens = LensDistortion.brownConrady(BrownConrady(k1: -0.05, k2: 0.01, p1: 0.0005, p2: -0.0003))
        let left = CameraModel(size: size, intrinsics: CameraIntrinsics(fx: f, fy: f, cx: (w - 1) / 2 + 1.5, cy: (h - 1) / 2 - 1),
                               distortion: lens)
        let right = CameraModel(size: size, intrinsics: CameraIntrinsics(fx: f * 1.002, fy: f * 1.002, cx: (w - 1) / 2 - 2, cy: (h - 1) / 2 + 0.5),
                                distortion: lens)
        let extrinsics = RigidTransform(rodrigues: SIMD3(0.002, -0.004, 0.001), translation: SIMD3(-0.06, 0.0004, 0.0002))
        let board = ChessboardTarget(columns: 9, rows: 6, squareSize: 0.025)
        // Centre the board's corner grid on the axis, 0.6 m out, turned a little about y and x.
        let centre = SIMD3(4 * 0.025, 2.5 * 0.025, 0)
        let rotation = Matrix3x3(rodrigues: SIMD3(0.15, -0.25, 0.05))
        let pose = RigidTransform(rotation: rotation, translation: SIMD3(0.02, 0, 0.6) - rotation * centre)
        let scene = SimulatedScene(
            backgroundLevel: 90,
            planes: [
                .frontoParallel(depth: 2.5, texture: .valueNoise(cellSize: 0.08, seed: 7, dark: 40, light: 210),
                                tint: SIMD3(0.9, 1.0, 0.8)),
                ScenePlane(pose: RigidTransform(rotation: Matrix3x3(rodrigues: SIMD3(0, 0.5, 0)),
                                                translation: SIMD3(-0.5, 0.1, 1.2)),
                           halfExtent: SIMD2(0.25, 0.3),
                           texture: .checkerboard(period: 0.05, dark: 60, light: 180), tint: SIMD3(1.0, 0.7, 0.6)),
            ],
            target: PlacedTarget(target: board, pose: pose))
        return SimulatedStereoRig(
            calibration: StereoCalibration(left: left, right: right, extrinsics: extrinsics, translationUnit: .metre), scene: scene)
    }
}
