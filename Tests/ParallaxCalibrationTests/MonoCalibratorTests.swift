import Foundation
import Testing
import ParallaxCalibration
import ParallaxGeometry

@Suite("Mono calibration")
struct MonoCalibratorTests {
    /// Every camera parameter of `result` within 3.5 σ of `truth`'s, σ being the fit's own standard deviation.
    ///
    /// The fit's σ is honest: over 24 seeds of the fisheye test below the errors had an RMS of
    /// 0.85–1.23 σ per parameter. 3.5 σ (two-sided 5e-4 per parameter) rather than 3 σ because the
    /// fixed draws are arbitrary: seed 21 of the fisheye test puts cy at 3.1 σ.
    static func expectWithinFitSigma(_ result: MonoCalibrationResult, _ truth: CameraModel) {
        let errors = zip(result.model.parameters(of: result.camera), result.model.parameters(of: truth)).map { $0 - $1 }
        let deviations = result.standardDeviations
        #expect(errors.count == deviations.count && result.model.parameterNames.count == deviations.count)
        print("\(result.model) mono errors in fit σ: "
              + zip(result.model.parameterNames, zip(errors, deviations)).map { "\($0) \((abs($1.0) / $1.1 * 100).rounded() / 100)" }.joined(separator: ", "))
        for (name, (error, deviation)) in zip(result.model.parameterNames, zip(errors, deviations)) {
            #expect(deviation > 0 && abs(error) <= 3.5 * deviation, "\(name): error \(error), fit σ \(deviation)")
        }
    }

    /// Least squares leaves √(1 − p/n) of the noise (σ per coordinate) in the residuals, give or take
    /// 1/√(2(n − p)) of that; held within 3 of those.
    static func expectRMSOfTheNoise(_ result: MonoCalibrationResult, corners: Int, sigma: Double) {
        let n = Double(result.viewNames.count * corners * 2)
        let p = Double(result.standardDeviations.count + result.viewNames.count * 6)
        let expected = 2.0.squareRoot() * sigma * (1 - p / n).squareRoot()
        let spread = expected / (2 * (n - p)).squareRoot()
        print("mono rms \(result.rms), expected \(expected) ± \(spread)")
        #expect(abs(result.rms - expected) <= 3 * spread)
    }

    /// Fisheye (Kannala–Brandt) camera, the left camera of the fisheye rig (corners from
    /// `cv2.fisheye.projectPoints`), 12 views, 0.1 px noise per coordinate.
    @Test func fitsAFisheyeLens() throws {
        let rig = try SyntheticRig.load("fisheye_stereo")
        var random = SeededRandom(seed: 21)
        let views = rig.monoViews(count: 12, sigma: 0.1, random: &random)
        try #require(views.count == 12)
        let result = try MonoCalibrator(target: rig.target, model: .fisheye).calibrate(views: views, size: rig.size)
        #expect(result.camera.distortion.isFisheye)
        #expect(result.viewNames.count == 12 && result.rejected.isEmpty)
        Self.expectWithinFitSigma(result, rig.left)
        Self.expectRMSOfTheNoise(result, corners: rig.target.cornerCount, sigma: 0.1)
    }

    /// Noise-free corners from `cv2.projectPoints` with OpenCV's rational model (8 coefficients):
    /// the solver lands on OpenCV's camera to rounding, so Parallax's brown8 is that model.
    /// Measured: focal 1.1e-16 relative, principal point 2.8e-14 px, radial factor 4.4e-15, p1 and p2
    /// 1.8e-17, RMS 4.7e-14 px; the bounds are about ten times these.
    @Test func recoversTheRationalModelFromNoiseFreeCorners() throws {
        let rig = try SyntheticRig.load("rational_mono")
        var random = SeededRandom(seed: 1)
        let views = rig.monoViews(sigma: 0, random: &random)
        try #require(views.count == 15)
        let result = try MonoCalibrator(target: rig.target, model: .brown8).calibrate(views: views, size: rig.size)
        let a = result.camera.intrinsics, b = rig.left.intrinsics
        let focal = max(abs(a.fx / b.fx - 1), abs(a.fy / b.fy - 1))
        let principal = max(abs(a.cx - b.cx), abs(a.cy - b.cy))
        let d = result.camera.distortion.coefficients, e = rig.left.distortion.coefficients
        try #require(d.count == 8 && e.count == 8)
        // (1 + k1 r² + k2 r⁴ + k3 r⁶) / (1 + k4 r² + k5 r⁴ + k6 r⁶) is the same function when numerator and
        // denominator share a factor (1 + a r²), and the truth has k3 = k6 = 0: the coefficients are not
        // unique, the radial factor and the tangential terms are. Written out here, not the library's.
        func radial(_ c: [Double], _ r2: Double) -> Double {
            (1 + r2 * (c[0] + r2 * (c[1] + r2 * c[4]))) / (1 + r2 * (c[5] + r2 * (c[6] + r2 * c[7])))
        }
        let radialDifference = (0...100).map { i -> Double in
            let r2 = 0.8 * Double(i) / 100
            return abs(radial(d, r2) - radial(e, r2))
        }.max() ?? .infinity
        let tangential = max(abs(d[2] - e[2]), abs(d[3] - e[3]))
        print("rational noise-free: rms \(result.rms), focal \(focal), principal \(principal) px, radial factor \(radialDifference), "
              + "p1 p2 \(tangential), coefficients \(zip(d, e).map { $0 - $1 })")
        #expect(result.rms <= 5e-13)
        #expect(focal <= 2e-15)
        #expect(principal <= 3e-13)
        #expect(radialDifference <= 5e-14)
        #expect(tangential <= 2e-16)
    }

    /// The rational model with 0.05 px noise: the fitted lens maps rays to the same pixels as the
    /// true one across the image (coefficients themselves trade off against each other).
    @Test func fitsTheRationalModel() throws {
        let rig = try SyntheticRig.load("rational_mono")
        var random = SeededRandom(seed: 8)
        let views = rig.monoViews(sigma: 0.05, random: &random)
        try #require(views.count == 15)
        let result = try MonoCalibrator(target: rig.target, model: .brown8).calibrate(views: views, size: rig.size)
        Self.expectRMSOfTheNoise(result, corners: rig.target.cornerCount, sigma: 0.05)
        var worst = 0.0, count = 0
        for j in -5...5 {
            for i in -5...5 {
                let ray = SIMD3(0.1 * Double(i), 0.07 * Double(j), 1)
                guard let a = result.camera.project(ray), let b = rig.left.project(ray) else {
                    Issue.record("ray \(ray) does not project")
                    continue
                }
                worst = max(worst, length(a - b))
                count += 1
            }
        }
        print("rational, 0.05 px: largest pixel difference \(worst) over \(count) rays")
        #expect(count == 11 * 11)
        // Measured 0.153 px, at the grid's corners, where the board reaches least.
        #expect(worst < 0.25, "largest pixel difference \(worst)")
    }

    /// Identical fronto-parallel views cannot fix the focal length: the error says to tilt the board.
    @Test func frontoParallelViewsAreDegenerate() {
        let board = CalibrationBoard(columns: 11, rows: 8, squareSize: 30, unit: .millimetre)
        // An ideal pinhole (f 500, centre 320, 240) written out here, not the library's projection.
        let corners = board.objectPoints.map { p -> SIMD2<Double> in
            let q = p + SIMD3(-150, -100, 600)
            return SIMD2(500 * q.x / q.z + 320, 500 * q.y / q.z + 240)
        }
        let views = (0..<4).map { CalibrationView(name: "flat\($0).png", corners: corners) }
        #expect {
            _ = try MonoCalibrator(target: board).calibrate(views: views, size: ImageSize(width: 640, height: 480))
        } throws: { error in
            guard case CalibrationError.degenerate(let message) = error else { return false }
            return message.contains("tilt")
        }
    }

    /// Calibration/GUIDE.md: "fronto-parallel views alone leave the focal length undetermined",
    /// not only when they repeat: boards facing the camera at other places, distances and turns
    /// about the optical axis all give h₁ = K r₁, h₂ = K r₂ with r₁, r₂ in the image plane, so
    /// Zhang's constraints say nothing about the focal length. The error says to tilt the board.
    @Test("distinct fronto-parallel views (moved, nearer, farther, turned in the image plane) cannot fix the focal length")
    func distinctFrontoParallelViewsAreDegenerate() {
        let board = CalibrationBoard(columns: 11, rows: 8, squareSize: 30, unit: .millimetre)
        // (offset x, offset y, depth, turn about the optical axis) of each view, the board facing the camera.
        let placements: [(Double, Double, Double, Double)] = [(-150, -100, 600, 0), (-250, -60, 750, 0.2),
                                                              (-80, -150, 900, -0.3), (-200, -120, 520, 0.5)]
        let views = placements.enumerated().map { index, placement in
            let (dx, dy, depth, turn) = placement
            let corners = board.objectPoints.map { p -> SIMD2<Double> in
                // An ideal pinhole (f 500, centre 320, 240) written out here, not the library's projection.
                let q = SIMD3(cos(turn) * p.x - sin(turn) * p.y + dx, sin(turn) * p.x + cos(turn) * p.y + dy, depth)
                return SIMD2(500 * q.x / q.z + 320, 500 * q.y / q.z + 240)
            }
            #expect(corners.allSatisfy { $0.x > 0 && $0.x < 640 && $0.y > 0 && $0.y < 480 }, "view \(index) leaves the image")
            return CalibrationView(name: "flat\(index).png", corners: corners)
        }
        #expect {
            _ = try MonoCalibrator(target: board).calibrate(views: views, size: ImageSize(width: 640, height: 480))
        } throws: { error in
            guard case CalibrationError.degenerate(let message) = error else { return false }
            return message.contains("tilt")
        }
    }

    /// A view with a misdetected corner block is named as an outlier with its RMS; the rest calibrate normally.
    @Test func namesAnOutlierView() throws {
        let rig = try SyntheticRig.load("brown5_stereo")
        var random = SeededRandom(seed: 4)
        var views = rig.monoViews(count: 10, sigma: 0.1, random: &random)
        try #require(views.count == 10)
        for i in 0..<30 { views[2].corners[i] += SIMD2(6, -5) }
        let result = try MonoCalibrator(target: rig.target).calibrate(views: views, size: rig.size)
        #expect(result.viewNames.count == 9)
        #expect(result.rejected.map(\.name) == ["view2.png"])
        #expect(result.rejected.first?.reason.contains("outlier") == true)
        Self.expectWithinFitSigma(result, rig.left)
    }
}
