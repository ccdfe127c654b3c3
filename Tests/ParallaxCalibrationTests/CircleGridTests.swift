import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing

/// Circle grids (symmetric and OpenCV's asymmetric) rendered by the simulated rig's renderer,
/// whose circle edges are box-filtered, with a known camera and board poses.
@Suite("Circle grids on rendered sets")
struct CircleGridTests {
    static let camera = CameraModel(size: ImageSize(width: 320, height: 240),
                                    intrinsics: CameraIntrinsics(fx: 290, fy: 290, cx: 161.5, cy: 118.5),
                                    distortion: .brownConrady(BrownConrady(k1: -0.08, k2: 0.02, p1: 0.0004, p2: -0.0003)))

    /// The printed target and the board the calibration is told about.
    static func boards(_ pattern: BoardPattern) -> (ChessboardTarget, CalibrationBoard) {
        switch pattern {
        case .asymmetricCircles:
            return (ChessboardTarget(columns: 4, rows: 11, squareSize: 0.02, pattern: .asymmetricCircles),
                    CalibrationBoard(columns: 4, rows: 11, squareSize: 0.02, unit: .metre, pattern: .asymmetricCircles))
        default:
            return (ChessboardTarget(columns: 7, rows: 6, squareSize: 0.03, pattern: .circles),
                    CalibrationBoard(columns: 7, rows: 6, squareSize: 0.03, unit: .metre, pattern: .circles))
        }
    }

    /// `count` poses that keep every circle inside the image with a margin: turned up to about
    /// 35°, 0.45–0.8 m away, spread over the image.
    static func poses(_ target: ChessboardTarget, count: Int, seed: UInt64) -> [RigidTransform] {
        var random = SeededRandomGenerator(seed: seed)
        let points = target.cornerPoints
        let centre = points.reduce(SIMD3<Double>.zero, +) / Double(points.count)
        var poses: [RigidTransform] = []
        while poses.count < count {
            let rotation = Matrix3x3(rodrigues: SIMD3((random.nextUnit() - 0.5) * 1.2, (random.nextUnit() - 0.5) * 1.2,
                                                      (random.nextUnit() - 0.5) * 0.6))
            let z = 0.45 + 0.35 * random.nextUnit()
            let offset = SIMD3((random.nextUnit() - 0.5) * 0.5 * z, (random.nextUnit() - 0.5) * 0.35 * z, z)
            let pose = RigidTransform(rotation: rotation, translation: offset - rotation * centre)
            let margin = 2 * target.circleRadius * target.squareSize * 290 / z + 4
            let inside = points.allSatisfy { p in
                guard let q = camera.project(pose.apply(p)) else { return false }
                return q.x > margin && q.y > margin && q.x < 320 - margin && q.y < 240 - margin
            }
            if inside { poses.append(pose) }
        }
        return poses
    }

    static func render(_ target: ChessboardTarget, pose: RigidTransform, noise: Double, seed: UInt64) throws
        -> (GrayImage, [SIMD2<Double>])
    {
        let placed = PlacedTarget(target: target, pose: pose)
        let buffer = try SceneRenderer(samplesPerAxis: 3).render(SimulatedScene(backgroundLevel: 120, target: placed), camera: camera)
        var image = try GrayImage(buffer)
        var random = SeededRandomGenerator(seed: seed)
        for i in image.pixels.indices {
            image.pixels[i] = min(255, max(0, (image.pixels[i] + Float(noise * random.nextGaussian())).rounded()))
        }
        return (image, SceneRenderer.projectedCorners(of: placed, camera: camera).compactMap { $0 })
    }

    @Test("Centres of tilted circles land on the images of the true centres once corrected for perspective",
          arguments: [BoardPattern.circles, .asymmetricCircles])
    func centresAreCorrectedForPerspective(_ pattern: BoardPattern) throws {
        let (target, board) = Self.boards(pattern)
        var corrected = 0.0, plain = 0.0, count = 0
        for (index, pose) in Self.poses(target, count: 4, seed: 77).enumerated() {
            let (image, truth) = try Self.render(target, pose: pose, noise: 1, seed: UInt64(index + 1))
            var detector = CircleGridDetector(board: board)
            detector.timeBudgetSeconds = 600
            guard case .success(let found) = detector.detect(in: image) else {
                Issue.record("view \(index): \(detector.detect(in: image))")
                continue
            }
            detector.correctsPerspective = false
            guard case .success(let centroids) = detector.detect(in: image) else { continue }
            #expect(found.corners.count == board.cornerCount && truth.count == board.cornerCount)
            for (k, t) in truth.enumerated() {
                corrected += length_squared(found.corners[k] - t)
                plain += length_squared(centroids.corners[k] - t)
                count += 1
            }
        }
        let rmsCorrected = (corrected / Double(max(count, 1))).squareRoot(), rmsPlain = (plain / Double(max(count, 1))).squareRoot()
        print("\(pattern.rawValue): centre RMS \(rmsCorrected) px corrected, \(rmsPlain) px as plain centroids, \(count) circles")
        #expect(count == 4 * board.cornerCount)
        // Measured 0.0054 and 0.0053 px corrected, 0.022 px for plain centroids (circles, acircles).
        #expect(rmsCorrected <= 0.01)
        #expect(rmsPlain >= 0.015)  // the bias the correction removes
    }

    @Test("One camera calibrated from 12 rendered circle grids: focal within 0.2 %, principal point within 0.5 px",
          arguments: [BoardPattern.circles, .asymmetricCircles])
    func calibratesFromCircleGrids(_ pattern: BoardPattern) throws {
        let (target, board) = Self.boards(pattern)
        var detector = CircleGridDetector(board: board)
        detector.timeBudgetSeconds = 600
        var views: [CalibrationView] = []
        for (index, pose) in Self.poses(target, count: 12, seed: 5).enumerated() {
            let (image, _) = try Self.render(target, pose: pose, noise: 1, seed: UInt64(100 + index))
            guard case .success(let found) = detector.detect(in: image) else {
                Issue.record("view \(index): no grid")
                continue
            }
            views.append(CalibrationView(name: "view\(index)", corners: found.corners))
        }
        #expect(views.count == 12)
        let result = try MonoCalibrator(target: board, model: .brown5).calibrate(views: views, size: Self.camera.size)
        let k = result.camera.intrinsics, t = Self.camera.intrinsics
        let focal = max(abs(k.fx / t.fx - 1), abs(k.fy / t.fy - 1)), principal = max(abs(k.cx - t.cx), abs(k.cy - t.cy))
        print("\(pattern.rawValue): one camera from 12 rendered grids: focal \(focal * 100) %, principal point \(principal) px, "
              + "rms \(result.rms) px")
        #expect(focal <= 0.002)
        #expect(principal <= 0.5)
    }

    @Test("Targets parse as OpenCV names them, with OpenCV's object points")
    func parsing() throws {
        let a = try CalibrationBoard(parsing: "acircles:4x11", square: "20mm")
        #expect(a.pattern == .asymmetricCircles && a.columns == 4 && a.rows == 11)
        // OpenCV: Point3f((2 j + i % 2) · s, i · s, 0) for row i, column j.
        #expect(a.objectPoints[5] == SIMD3<Double>(3 * 20, 20, 0))
        #expect(a.objectPoints[43] == SIMD3<Double>(6 * 20, 10 * 20, 0))
        let c = try CalibrationBoard(parsing: "circles:7x6", square: "30mm")
        #expect(c.pattern == .circles && c.objectPoints[8] == SIMD3<Double>(30, 30, 0))
        #expect(try CalibrationBoard(parsing: "chessboard:9x6", square: "25mm") == CalibrationBoard(parsing: "9x6", square: "25mm"))
        // Calibration/GUIDE.md: an asymmetric grid needs "at least 3 rows" (a shifted row to tell rows apart):
        // three are accepted, two refused.
        let three = try CalibrationBoard(parsing: "acircles:4x3", square: "1")
        #expect(three.pattern == .asymmetricCircles && three.rows == 3 && three.cornerCount == 12)
        #expect(throws: TargetSpecificationError.self) { try CalibrationBoard(parsing: "acircles:4x2", square: "1") }
        #expect(throws: TargetSpecificationError.self) { try CalibrationBoard(parsing: "dots:4x4", square: "1") }
    }

    @Test("A chessboard is not mistaken for a circle grid")
    func chessboardIsNoCircleGrid() throws {
        let chess = ChessboardTarget(columns: 7, rows: 6, squareSize: 0.03)
        let pose = Self.poses(Self.boards(.circles).0, count: 1, seed: 3)[0]
        let placed = PlacedTarget(target: chess, pose: pose)
        let image = try GrayImage(try SceneRenderer().render(SimulatedScene(backgroundLevel: 120, target: placed), camera: Self.camera))
        var detector = CircleGridDetector(board: Self.boards(.circles).1)
        detector.timeBudgetSeconds = 600
        if case .success = detector.detect(in: image) { Issue.record("a chessboard was read as a circle grid") }
    }
}
