import Testing
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// Detection accuracy against the simulated rig's renderer, whose corners are exact
/// to a few thousandths of a pixel (its own tests hold that).
@Suite("Chessboard detection on rendered boards")
struct RenderedBoardTests {
    /// Renders `board` at `pose` through `camera`, blurs by σ = `blur` px, adds Gaussian noise of
    /// σ = `noise` levels, and returns the image with the true corners.
    static func render(camera: CameraModel, pose: RigidTransform, blur: Double, noise: Double, seed: UInt64)
        throws -> (GrayImage, [SIMD2<Double>])
    {
        let board = ChessboardTarget(columns: 9, rows: 6, squareSize: 0.025)
        let placed = PlacedTarget(target: board, pose: pose)
        let scene = SimulatedScene(backgroundLevel: 120, target: placed)
        let buffer = try SceneRenderer(samplesPerAxis: 3).render(scene, camera: camera)
        var image = try GrayImage(buffer).gaussianBlurred(sigma: blur)
        var random = SeededRandom(seed: seed)
        for i in image.pixels.indices {
            image.pixels[i] = min(255, max(0, (image.pixels[i] + Float(noise * random.nextGaussian())).rounded()))
        }
        let truth = SceneRenderer.projectedCorners(of: placed, camera: camera).compactMap { $0 }
        return (image, truth)
    }

    static let camera = CameraModel(size: ImageSize(width: 320, height: 240),
                                    intrinsics: CameraIntrinsics(fx: 300, fy: 300, cx: 161.5, cy: 118.5),
                                    distortion: .brownConrady(BrownConrady(k1: -0.08, k2: 0.02)))

    static func pose(_ rodrigues: SIMD3<Double>, distance: Double) -> RigidTransform {
        let rotation = Matrix3x3(rodrigues: rodrigues)
        return RigidTransform(rotation: rotation, translation: SIMD3(0, 0, distance) - rotation * SIMD3(0.1, 0.0625, 0))
    }

    /// The issue's figure: blur σ = 1 px and noise σ = 2 levels → corner RMS ≤ 0.05 px.
    @Test func cornersAreWithinFiveHundredthsOfAPixel() throws {
        var squares = 0.0, count = 0
        for (index, rodrigues) in [SIMD3(0.3, -0.4, 0.1), SIMD3(-0.2, 0.5, -0.15), SIMD3(0, 0, 3.0)].enumerated() {
            let (image, truth) = try Self.render(camera: Self.camera, pose: Self.pose(rodrigues, distance: 0.42),
                                                 blur: 1, noise: 2, seed: UInt64(index + 1))
            #expect(truth.count == 54)
            let result = TestFixtures.detector(CalibrationBoard(columns: 9, rows: 6, squareSize: 0.025)).detect(in: image)
            guard case .success(let detection) = result else {
                Issue.record("view \(index): \(result)")
                continue
            }
            for (a, b) in zip(detection.corners, truth) {
                squares += length_squared(a - b)
                count += 1
            }
        }
        let rms = (squares / Double(max(count, 1))).squareRoot()
        print("rendered boards (blur σ 1 px, noise σ 2): corner RMS \(rms) px over \(count) corners")
        #expect(count == 3 * 54)
        #expect(rms <= 0.05, "corner RMS \(rms) px")
    }

    /// A board turned upside down (180° about the optical axis) keeps its origin: the corner
    /// order follows the board, not the image.
    @Test func upsideDownBoardKeepsItsOrigin() throws {
        let (image, truth) = try Self.render(camera: Self.camera, pose: Self.pose(SIMD3(0, 0, Double.pi), distance: 0.45),
                                             blur: 0.7, noise: 1, seed: 9)
        let result = TestFixtures.detector(CalibrationBoard(columns: 9, rows: 6, squareSize: 0.025)).detect(in: image)
        guard case .success(let detection) = result else {
            Issue.record("\(result)")
            return
        }
        try #require(detection.corners.count == 54 && truth.count == 54)
        // Corner 0 is the true corner 0 (now near the bottom right of the image), not the top-left one.
        #expect(length(detection.corners[0] - truth[0]) < 0.2)
        #expect(truth[0].x > 160 && truth[0].y > 120)
    }

    /// A board held in portrait (turned by 90°) is still numbered from its own origin along its rows.
    @Test func portraitBoardKeepsItsNumbering() throws {
        let (image, truth) = try Self.render(camera: Self.camera, pose: Self.pose(SIMD3(0, 0, Double.pi / 2), distance: 0.5),
                                             blur: 0.7, noise: 1, seed: 10)
        let result = TestFixtures.detector(CalibrationBoard(columns: 9, rows: 6, squareSize: 0.025)).detect(in: image)
        guard case .success(let detection) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(detection.corners.count == 54 && truth.count == 54)
        let worst = zip(detection.corners, truth).map { length($0 - $1) }.max() ?? .infinity
        #expect(worst < 0.2)
    }
}

@inline(__always) func length_squared(_ v: SIMD2<Double>) -> Double { v.x * v.x + v.y * v.y }
