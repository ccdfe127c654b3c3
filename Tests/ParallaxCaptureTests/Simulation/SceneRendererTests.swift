import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing

/// The renderer must put chessboard corners exactly where the camera model
/// projects them, since calibration and rectification tests take its ground
/// truth on trust.
///
/// Tolerance: the issue asks for 0.05 px. The instrument (``CornerFromEdges``)
/// is exact for box-filtered straight edges, so what remains is (a) 8-bit
/// rounding: ±0.5 level on a 205-level edge moves an edge point by at most
/// 2·0.5/205 ≈ 0.005 px, and a fit through eight points averages it down;
/// (b) the ray interpolation inside a pixel (exact for a pinhole, < 10⁻³ px
/// for these lenses); (c) the footprint box being the bounding box of the
/// sample's parallelogram, a symmetric blur that moves no edge. Together
/// they stay an order of magnitude under 0.05 px, so the mean is held to
/// 0.01 px as well, which would catch a systematic shift of a sixteenth of
/// a sample (1/4 px at 4 × 4 samples).
@Suite("Scene renderer")
struct SceneRendererTests {
    static let size = ImageSize(width: 160, height: 120)
    static let board = ChessboardTarget(columns: 5, rows: 4, squareSize: 0.03)

    /// A board pose `distance` in front of the camera, its corner grid centred
    /// on the optical axis, turned by `rodrigues`.
    static func pose(rodrigues: SIMD3<Double>, distance: Double, offset: SIMD3<Double> = .zero) -> RigidTransform {
        let centre = SIMD3(2 * board.squareSize, 1.5 * board.squareSize, 0)
        let rotation = Matrix3x3(rodrigues: rodrigues)
        return RigidTransform(rotation: rotation, translation: SIMD3(0, 0, distance) + offset - rotation * centre)
    }

    /// Measures corner `index` from the image, starting half a pixel off its
    /// projection; its neighbours' projections give the rough edge directions.
    static func measure(_ image: ImageBuffer, truth: [SIMD2<Double>?], index: Int) -> SIMD2<Double>? {
        guard let centre = truth[index] else { return nil }
        let i = index % board.columns, j = index / board.columns
        func corner(_ i: Int, _ j: Int) -> SIMD2<Double>? {
            guard i >= 0, j >= 0, i < board.columns, j < board.rows else { return nil }
            return truth[j * board.columns + i]
        }
        let along = (corner(i + 1, j) ?? centre) - (corner(i - 1, j) ?? centre)
        let down = (corner(i, j + 1) ?? centre) - (corner(i, j - 1) ?? centre)
        return CornerFromEdges.locate(image, near: centre + SIMD2(0.4, -0.3), directions: (along, down))
    }

    /// Renders, measures every visible corner and returns the errors in pixels.
    static func cornerErrors(camera: CameraModel, cameraFromWorld: RigidTransform = .identity,
                             pose: RigidTransform) throws -> [Double] {
        let placed = PlacedTarget(target: board, pose: pose)
        let scene = SimulatedScene(backgroundLevel: 128, target: placed)
        let image = try SceneRenderer(samplesPerAxis: 4).render(scene, camera: camera, cameraFromWorld: cameraFromWorld)
        let truth = SceneRenderer.projectedCorners(of: placed, camera: camera, cameraFromWorld: cameraFromWorld)
        var errors: [Double] = []
        for (index, expected) in truth.enumerated() {
            guard let expected else { continue }
            let found = try #require(measure(image, truth: truth, index: index))
            errors.append(length(found - expected))
        }
        return errors
    }

    static func check(_ errors: [Double], expectedCount: Int, lens: String) {
        #expect(errors.count == expectedCount)
        let worst = errors.max() ?? .infinity
        let mean = errors.reduce(0, +) / Double(max(errors.count, 1))
        print("rendered corners, \(lens): \(errors.count) corners, worst \(worst) px, mean \(mean) px")
        #expect(worst < 0.05, "worst corner error \(worst) px")
        #expect(mean < 0.01, "mean corner error \(mean) px")
    }

    @Test("Pinhole: corners of a tilted board land on their projections within 0.05 px")
    func pinholeCorners() throws {
        let camera = CameraModel(size: Self.size, intrinsics: CameraIntrinsics(fx: 150, fy: 152, cx: 80.3, cy: 59.6))
        let errors = try Self.cornerErrors(camera: camera, pose: Self.pose(rodrigues: SIMD3(0.3, -0.4, 0.2), distance: 0.33))
        Self.check(errors, expectedCount: 20, lens: "pinhole")
    }

    @Test("Brown–Conrady lens: corners within 0.05 px of CameraModel.project")
    func brownConradyCorners() throws {
        let lens = LensDistortion.brownConrady(BrownConrady(k1: -0.25, k2: 0.08, p1: 0.001, p2: -0.0015, k3: 0))
        let camera = CameraModel(size: Self.size, intrinsics: CameraIntrinsics(fx: 150, fy: 150, cx: 79.2, cy: 60.4),
                                 distortion: lens)
        let errors = try Self.cornerErrors(camera: camera,
                                           pose: Self.pose(rodrigues: SIMD3(-0.2, 0.35, -0.1), distance: 0.3,
                                                           offset: SIMD3(0.02, 0.01, 0)))
        Self.check(errors, expectedCount: 20, lens: "Brown–Conrady")
    }

    @Test("Fisheye lens: corners within 0.05 px of CameraModel.project")
    func fisheyeCorners() throws {
        let lens = LensDistortion.kannalaBrandt(KannalaBrandt(k1: 0.05, k2: -0.01, k3: 0.002, k4: 0))
        let camera = CameraModel(size: Self.size, intrinsics: CameraIntrinsics(fx: 95, fy: 95, cx: 80, cy: 60),
                                 distortion: lens)
        let errors = try Self.cornerErrors(camera: camera,
                                           pose: Self.pose(rodrigues: SIMD3(0.25, 0.3, 0.4), distance: 0.2,
                                                           offset: SIMD3(-0.01, 0.005, 0)))
        Self.check(errors, expectedCount: 20, lens: "fisheye")
    }

    @Test("Right camera of a vertical-baseline rig sees the corners where the extrinsics put them")
    func rightCameraOfVerticalRig() throws {
        let camera = CameraModel(size: Self.size, intrinsics: CameraIntrinsics(fx: 150, fy: 150, cx: 80, cy: 60))
        // Right camera 5 cm below the left one (y down), slightly rotated.
        let extrinsics = RigidTransform(rodrigues: SIMD3(0.02, -0.01, 0.03), translation: SIMD3(0.001, -0.05, 0.002))
        let rig = SimulatedStereoRig(
            calibration: StereoCalibration(left: camera, right: camera, extrinsics: extrinsics),
            scene: SimulatedScene(target: PlacedTarget(target: Self.board,
                                                       pose: Self.pose(rodrigues: SIMD3(0.1, 0.2, 0), distance: 0.33,
                                                                       offset: SIMD3(0, 0.025, 0)))))
        let image = try rig.render(.right)
        let truth = rig.projectedCorners(.right)
        #expect(truth.compactMap { $0 }.count == 20)
        var worst = 0.0
        for (index, expected) in truth.enumerated() {
            guard let expected else { continue }
            let found = try #require(Self.measure(image, truth: truth, index: index))
            worst = max(worst, length(found - expected))
        }
        #expect(worst < 0.05, "worst corner error \(worst) px")
        print("rendered corners, right camera of a vertical rig: worst \(worst) px")
        // A camera 5 cm lower sees the board higher up by about f·B/Z = 150 · 0.05 / 0.33 ≈ 23 px,
        // give or take f·ωx = 150 · 0.02 = 3 px from the rotation about x.
        let leftFirst = try #require(rig.projectedCorners(.left)[0]), rightFirst = try #require(truth[0])
        #expect(abs((leftFirst.y - rightFirst.y) - 150 * 0.05 / 0.33) < 3.5)
    }

    @Test("An edge inside a pixel is rendered with its exact coverage")
    func edgeCoverageIsExact() throws {
        // Fronto-parallel checkerboard at depth 1 seen by f = 100: a square of
        // 0.1 covers 10 px; with cx = 0.25 the edge at u = 0 crosses pixel 0 at
        // x = 0.25, three quarters of the way from its left border (−0.5).
        let camera = CameraModel(size: ImageSize(width: 8, height: 4), intrinsics: CameraIntrinsics(fx: 100, fy: 100, cx: 0.25, cy: -5.5))
        let scene = SimulatedScene(planes: [.frontoParallel(depth: 1, texture: .checkerboard(period: 0.1, dark: 0, light: 200))])
        let image = try SceneRenderer(samplesPerAxis: 2).render(scene, camera: camera)
        // Pixel (0, 0) spans u ∈ [−0.0075, 0.0025] on the plane, v ∈ [0.05, 0.06]:
        // 3/4 of it on u < 0 (square −1, light in this row), 1/4 on u ≥ 0 (dark).
        #expect(image.bytes[0] == 150)
        #expect(image.bytes[1] == 0)
    }

    @Test("Ground-truth depth is the distance along z to the surface seen")
    func groundTruthDepth() throws {
        let camera = CameraModel(size: Self.size, intrinsics: CameraIntrinsics(fx: 150, fy: 150, cx: 80, cy: 60))
        let rig = SimulatedStereoRig(
            calibration: StereoCalibration(left: camera, right: camera, extrinsics: RigidTransform(translation: SIMD3(-0.06, 0, 0))),
            scene: SimulatedScene(planes: [.frontoParallel(depth: 2.0, texture: .uniform(100)),
                                           .frontoParallel(depth: 0.8, halfExtent: SIMD2(0.1, 0.1), texture: .uniform(200))]))
        #expect(abs((rig.depth(atPixel: SIMD2(80, 60), camera: .left) ?? 0) - 0.8) < 1e-12)
        #expect(abs((rig.depth(atPixel: SIMD2(5, 5), camera: .left) ?? 0) - 2.0) < 1e-12)
        let image = try rig.render(.left)
        #expect(image.bytes[60 * 160 + 80] == 200)
        #expect(image.bytes[5 * 160 + 5] == 100)
    }
}
