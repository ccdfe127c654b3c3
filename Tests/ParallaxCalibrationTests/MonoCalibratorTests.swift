import Testing
import ParallaxCalibration
import ParallaxGeometry

@Suite("Mono calibration")
struct MonoCalibratorTests {
    static let board = CalibrationBoard(columns: 11, rows: 8, squareSize: 30, unit: "mm")

    static func views(camera: CameraModel, count: Int, sigma: Double, seed: UInt64) -> [CalibrationView] {
        var random = SeededRandom(seed: seed)
        let centre = SIMD3(5 * 30.0, 3.5 * 30.0, 0)
        var out: [CalibrationView] = []
        while out.count < count {
            let rotation = Matrix3x3(rodrigues: SIMD3(Double.random(in: -0.8...0.8, using: &random),
                                                      Double.random(in: -0.8...0.8, using: &random),
                                                      Double.random(in: -0.4...0.4, using: &random)))
            let distance = Double.random(in: 300...500, using: &random)
            let pose = RigidTransform(rotation: rotation, translation: SIMD3(Double.random(in: -0.15...0.15, using: &random) * distance,
                                                                             Double.random(in: -0.12...0.12, using: &random) * distance,
                                                                             distance) - rotation * centre)
            let pixels = board.objectPoints.compactMap { camera.project(pose.apply($0)) }
            guard pixels.count == board.cornerCount,
                  pixels.allSatisfy({ $0.x > 5 && $0.y > 5 && $0.x < Double(camera.size.width) - 5 && $0.y < Double(camera.size.height) - 5 })
            else { continue }
            out.append(CalibrationView(name: "view\(out.count).png",
                                       corners: pixels.map { $0 + SIMD2(random.nextGaussian(), random.nextGaussian()) * sigma }))
        }
        return out
    }

    /// Fisheye (Kannala–Brandt) camera, 12 views, 0.1 px noise: focal within 0.3 %, principal point within 1 px,
    /// and k1 within a few σ of the fit's own standard deviation.
    @Test func fitsAFisheyeLens() throws {
        let truth = CameraModel(size: ImageSize(width: 640, height: 480),
                                intrinsics: CameraIntrinsics(fx: 300, fy: 300, cx: 318, cy: 243),
                                distortion: .kannalaBrandt(KannalaBrandt(k1: 0.05, k2: -0.01, k3: 0.002, k4: 0)))
        let result = try MonoCalibrator(target: Self.board, model: .fisheye)
            .calibrate(views: Self.views(camera: truth, count: 12, sigma: 0.1, seed: 21), size: truth.size)
        #expect(abs(result.camera.intrinsics.fx / 300 - 1) < 0.003)
        #expect(abs(result.camera.intrinsics.cx - 318) < 1 && abs(result.camera.intrinsics.cy - 243) < 1)
        #expect(result.camera.distortion.isFisheye)
        let k1 = result.camera.distortion.coefficients[0]
        #expect(abs(k1 - 0.05) < max(5 * result.standardDeviations[4], 0.005))
        #expect(result.rms < 0.15)
    }

    /// The rational model recovers its own coefficients' effect: the fitted lens maps rays to the same
    /// pixels as the true one across the image (coefficients themselves trade off against each other).
    @Test func fitsTheRationalModel() throws {
        let truth = CameraModel(size: ImageSize(width: 640, height: 480),
                                intrinsics: CameraIntrinsics(fx: 480, fy: 482, cx: 321, cy: 238),
                                distortion: .brownConrady(BrownConrady(k1: 0.3, k2: -0.1, p1: 0, p2: 0, k3: 0, k4: 0.6, k5: -0.05, k6: 0)))
        let result = try MonoCalibrator(target: Self.board, model: .brown8)
            .calibrate(views: Self.views(camera: truth, count: 15, sigma: 0.05, seed: 8), size: truth.size)
        #expect(result.rms < 0.07)
        var worst = 0.0
        for y in stride(from: -0.35, through: 0.35, by: 0.07) {
            for x in stride(from: -0.5, through: 0.5, by: 0.1) {
                let ray = SIMD3(x, y, 1)
                if let a = result.camera.project(ray), let b = truth.project(ray) { worst = max(worst, length(a - b)) }
            }
        }
        #expect(worst < 0.3, "largest pixel difference \(worst)")
    }

    /// Identical fronto-parallel views cannot fix the focal length: the error says to tilt the board.
    @Test func frontoParallelViewsAreDegenerate() {
        let camera = CameraModel(size: ImageSize(width: 640, height: 480), intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240))
        let corners = Self.board.objectPoints.compactMap { camera.project($0 + SIMD3(-150, -100, 600)) }
        let views = (0..<4).map { CalibrationView(name: "flat\($0).png", corners: corners) }
        #expect {
            _ = try MonoCalibrator(target: Self.board).calibrate(views: views, size: camera.size)
        } throws: { error in
            guard case CalibrationError.degenerate(let message) = error else { return false }
            return message.contains("tilt")
        }
    }

    /// A view with a misdetected corner block is named as an outlier with its RMS; the rest calibrate normally.
    @Test func namesAnOutlierView() throws {
        let camera = CameraModel(size: ImageSize(width: 640, height: 480), intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240),
                                 distortion: .brownConrady(BrownConrady(k1: -0.1, k2: 0.01)))
        var views = Self.views(camera: camera, count: 10, sigma: 0.1, seed: 4)
        for i in 0..<30 { views[2].corners[i] += SIMD2(6, -5) }
        let result = try MonoCalibrator(target: Self.board).calibrate(views: views, size: camera.size)
        #expect(result.viewNames.count == 9)
        #expect(result.rejected.map(\.name) == ["view2.png"])
        #expect(result.rejected.first?.reason.contains("outlier") == true)
        #expect(abs(result.camera.intrinsics.fx / 500 - 1) < 0.003)
    }
}
