import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing

/// The renderer must put chessboard corners exactly where the camera model
/// projects them, since calibration and rectification tests take its ground
/// truth on trust.
///
/// Tolerance: the issue asks for 0.05 px. What limits the agreement is
/// (a) 8-bit rounding: ±0.5 level on a 205-level edge with a gradient of
/// about 205 levels/px moves an edge by ≤ 0.0025 px per sample, averaged
/// over ~50 edge samples in the window; (b) the ray interpolation inside a
/// pixel (exact for a pinhole, < 10⁻³ px for these lenses); (c) the
/// refinement's own bias from bilinear resampling, which the point symmetry
/// of the window mostly cancels. Together they stay an order of magnitude
/// under 0.05 px, so the mean is held to 0.02 px as well, which would catch
/// a systematic half-sample shift (1/8 px at 4 × 4 samples).
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

    /// Renders, refines every visible corner from the projected position and returns the errors in pixels.
    static func cornerErrors(camera: CameraModel, cameraFromWorld: RigidTransform = .identity,
                             pose: RigidTransform) throws -> [Double] {
        let placed = PlacedTarget(target: board, pose: pose)
        let scene = SimulatedScene(backgroundLevel: 128, target: placed)
        let image = try SceneRenderer(samplesPerAxis: 4).render(scene, camera: camera, cameraFromWorld: cameraFromWorld)
        let truth = SceneRenderer.projectedCorners(of: placed, camera: camera, cameraFromWorld: cameraFromWorld)
        var errors: [Double] = []
        for case let expected? in truth {
            // Start half a pixel off so the refinement has to find the corner itself.
            let start = expected + SIMD2(0.4, -0.3)
            let found = try #require(SaddlePointRefinement.refine(image, near: start))
            errors.append(length(found - expected))
        }
        return errors
    }

    static func check(_ errors: [Double], expectedCount: Int) {
        #expect(errors.count == expectedCount)
        let worst = errors.max() ?? .infinity
        let mean = errors.reduce(0, +) / Double(max(errors.count, 1))
        #expect(worst < 0.05, "worst corner error \(worst) px")
        #expect(mean < 0.02, "mean corner error \(mean) px")
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
