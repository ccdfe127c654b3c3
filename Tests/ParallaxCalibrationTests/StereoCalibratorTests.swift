import Testing
@testable import ParallaxCalibration
import ParallaxGeometry

@Suite("Stereo calibration on synthetic ground truth")
struct StereoCalibratorTests {
    /// Calibration/GUIDE.md's defaults: Huber loss quadratic up to 2 px; a pair (or a view) set
    /// aside above 4× the median RMS and 1 px; a corner above 8× its camera's noise level and
    /// 0.5 px. What each rule does is asserted by rejectsAPairWhoseCornersAreShuffled and
    /// CornerOutlierTests; these are the figures the guide quotes.
    @Test("the outlier rules and the loss default to the figures the calibration guide quotes")
    func defaultsAreTheGuidesFigures() {
        // Calibration/GUIDE.md: "the default `huber` is quadratic up to 2 px and linear beyond, so a
        // few bad corners pull with bounded force": weight 1 and cost e² up to 2 px; beyond, the
        // cost grows as 2·2·e − 4 (slope 4, not 2e) and the weight falls as 2/e.
        let huber = RobustLoss.huber(threshold: 2)
        #expect(huber.weight(norm: 1) == 1 && huber.weight(norm: 2) == 1 && huber.weight(norm: 4) == 0.5 && huber.weight(norm: 8) == 0.25)
        #expect(huber.cost(norm: 1) == 1 && huber.cost(norm: 2) == 4 && huber.cost(norm: 4) == 12 && huber.cost(norm: 8) == 28)
        #expect(RobustLoss.squared.cost(norm: 8) == 64 && RobustLoss.squared.weight(norm: 8) == 1)
        let board = CalibrationBoard(columns: 9, rows: 6, squareSize: 1)
        let stereo = StereoCalibrator(target: board, model: .brown5)
        #expect(stereo.loss == .huber(threshold: 2))
        #expect(stereo.outlierFactor == 4 && stereo.outlierFloorPixels == 1)
        #expect(stereo.cornerOutlierFactor == 8 && stereo.cornerOutlierFloorPixels == 0.5 && stereo.rejectCorners)
        let mono = MonoCalibrator(target: board, model: .brown5)
        #expect(mono.loss == .huber(threshold: 2) && mono.outlierFactor == 4 && mono.outlierFloorPixels == 1)
        // What `parallax calibrate` runs without --loss: the pipeline's default.
        #expect(CalibrationPipeline(board: board, model: .brown5, fixed: .none).loss == .huber(threshold: 2))
    }

    /// Prints and returns the largest differences of `c` from `truth`: relative focal, principal point (px),
    /// distortion (absolute), rotation (rad), translation (relative).
    @discardableResult
    static func errors(_ label: String, _ c: StereoCalibration, _ truth: StereoCalibration)
        -> (focal: Double, principal: Double, distortion: [Double], rotation: Double, translation: Double)
    {
        var focal = 0.0, principal = 0.0
        var distortion = [Double](repeating: 0, count: truth.left.distortion.coefficients.count)
        for (estimated, known) in [(c.left, truth.left), (c.right, truth.right)] {
            let a = estimated.intrinsics, b = known.intrinsics
            focal = max(focal, abs(a.fx / b.fx - 1), abs(a.fy / b.fy - 1))
            principal = max(principal, abs(a.cx - b.cx), abs(a.cy - b.cy))
            let d = estimated.distortion.coefficients, e = known.distortion.coefficients
            #expect(d.count == e.count, "\(label): \(d.count) distortion coefficients, the truth has \(e.count)")
            for i in distortion.indices where i < d.count && i < e.count { distortion[i] = max(distortion[i], abs(d[i] - e[i])) }
        }
        let rotation = length((c.extrinsics.rotation * truth.extrinsics.rotation.transposed).rodriguesVector)
        let translation = length(c.extrinsics.translation - truth.extrinsics.translation) / length(truth.extrinsics.translation)
        print("\(label): focal \(focal) relative, principal point \(principal) px, distortion \(distortion), "
              + "rotation \(rotation) rad, translation \(translation) relative")
        return (focal, principal, distortion, rotation, translation)
    }

    /// Every parameter of `result` within 3.5 σ of `rig`'s, σ being the fit's own standard deviation
    /// (3.5 σ: see ``MonoCalibratorTests/expectWithinFitSigma(_:_:)``)
    /// (order of ``StereoCalibrationResult/standardDeviations``: left camera, right camera, then rx ry rz tx ty tz).
    static func expectWithinFitSigma(_ result: StereoCalibrationResult, _ rig: SyntheticRig, model: LensModelKind) {
        let c = result.calibration
        let truth = model.parameters(of: rig.left) + model.parameters(of: rig.right)
        let estimate = model.parameters(of: c.left) + model.parameters(of: c.right)
        let rotationError = (c.extrinsics.rotation * rig.extrinsics.rotation.transposed).rodriguesVector
        let translationError = c.extrinsics.translation - rig.extrinsics.translation
        let errors = zip(estimate, truth).map { $0 - $1 } + [rotationError.x, rotationError.y, rotationError.z,
                                                              translationError.x, translationError.y, translationError.z]
        let deviations = result.standardDeviations
        let names = model.parameterNames.map { "left " + $0 } + model.parameterNames.map { "right " + $0 } + ["rx", "ry", "rz", "tx", "ty", "tz"]
        #expect(errors.count == deviations.count && names.count == deviations.count,
                "\(errors.count) errors, \(names.count) names, \(deviations.count) standard deviations")
        let inSigmas = zip(errors, deviations).map { abs($0) / $1 }
        print("\(model) errors in fit σ: " + zip(names, inSigmas).map { "\($0) \(($1 * 100).rounded() / 100)" }.joined(separator: ", "))
        for (name, (error, deviation)) in zip(names, zip(errors, deviations)) {
            #expect(deviation > 0 && abs(error) <= 3.5 * deviation, "\(name): error \(error), fit σ \(deviation)")
        }
    }

    /// Least squares leaves √(1 − p/n) of the noise in the residuals (p parameters including the board
    /// poses, n residuals), give or take 1/√(2(n − p)) of that: the RMS is held within 3 of those.
    static func expectRMSOfTheNoise(_ result: StereoCalibrationResult, _ rig: SyntheticRig, sigma: Double) {
        let n = Double(result.pairs.count * rig.target.cornerCount * 2 * 2)
        let p = Double(result.standardDeviations.count + result.pairs.count * 6)
        let expected = 2.0.squareRoot() * sigma * (1 - p / n).squareRoot()
        let spread = expected / (2 * (n - p)).squareRoot()
        print("rms \(result.rms), expected \(expected) ± \(spread)")
        #expect(abs(result.rms - expected) <= 3 * spread)
    }

    /// The bounds of a noise-free recovery: the data are exact to the last bit of OpenCV's double
    /// projection, so the solution is the truth up to rounding. Measured (brown5 / fisheye): focal
    /// 2.2e-16 relative, principal point 5.7e-14 px (one ulp of 322), distortion 2.9e-15 / 2.3e-14,
    /// rotation 7e-17 / 3.2e-16 rad, translation 2.0e-15 / 4.9e-16 relative, RMS 6.2e-14 / 5.3e-14 px;
    /// the bounds are about ten times these.
    static func expectExactRecovery(_ label: String, _ result: StereoCalibrationResult, _ truth: StereoCalibration, distortion: Double) {
        let e = errors(label, result.calibration, truth)
        print("\(label): rms \(result.rms) px")
        #expect(result.rms <= 5e-13)
        #expect(e.focal <= 2e-15)
        #expect(e.principal <= 5e-13)
        #expect(e.distortion.allSatisfy { $0 <= distortion }, "\(label): distortion differs by \(e.distortion)")
        #expect(e.rotation <= 3e-15)
        #expect(e.translation <= 2e-14)
    }

    /// Noise-free corners from `cv2.projectPoints`: the solver lands on the rig OpenCV projected with,
    /// to rounding, so Parallax's Brown–Conrady model is OpenCV's; and the result's E and F are the
    /// rig's (``expectTheRigsEssentialAndFundamentalMatrices(_:_:)``).
    @Test func recoversTheRigFromNoiseFreeCorners() throws {
        let rig = try SyntheticRig.load("brown5_stereo")
        var random = SeededRandom(seed: 1)
        let views = rig.views(sigma: 0, random: &random)
        try #require(views.count == 20)
        let result = try StereoCalibrator(target: rig.target, model: .brown5).calibrate(pairs: views, size: rig.size)
        #expect(result.pairs.count == 20 && result.rejected.isEmpty)
        Self.expectExactRecovery("brown5 noise-free", result, rig.calibration, distortion: 3e-14)
        Self.expectTheRigsEssentialAndFundamentalMatrices(result, rig)
        // T is in the board's unit, and says so (ROS files are written in metres from it).
        #expect(rig.target.unit == .millimetre && result.calibration.translationUnit == .millimetre)
    }

    /// Calibration/GUIDE.md: the stereo solve gives "E, F". On noise-free corners the rig is recovered to
    /// rounding (``expectExactRecovery(_:_:_:distortion:)``: rotation within 3e-15 rad, translation
    /// within 2e-14 relative, focal lengths 2e-15 relative, principal points 5e-13 px). So:
    /// - E is [T]× R of the true rig, built here from its R and T, up to scale and sign: the two,
    ///   each divided by its Frobenius norm, differ by at most the rotation error plus twice the
    ///   translation's, about 4.3e-14; held to 1e-13.
    /// - F puts every right image point on the epipolar line of its left point. The points are
    ///   the true rig's pinhole projections of every board corner in every view (board → left
    ///   camera → right camera, no lens, as F is for undistorted pixels). The recovery errors move
    ///   a line by at most f·(3e-15 + 2e-14) + 2e-15·400 px + 5e-13 px ≈ 1.3e-11 px for f = 525 px
    ///   and points within 400 px of the centre, and evaluating x_rᵀ F x_l adds a few roundings of
    ///   coordinates up to 640 px (~1e-13 px each): held to 1e-10 px.
    /// (Measured: 1.4e-15 for E, 2.3e-13 px for the 1760 corners.)
    static func expectTheRigsEssentialAndFundamentalMatrices(_ result: StereoCalibrationResult, _ rig: SyntheticRig) {
        let r = rig.extrinsics.rotation, t = rig.extrinsics.translation
        let cross = Matrix3x3(rowMajor: [0, -t.z, t.y, t.z, 0, -t.x, -t.y, t.x, 0])
        let truth = cross * r
        func entries(_ m: Matrix3x3) -> [Double] { (0..<3).flatMap { i in (0..<3).map { j in m[i, j] } } }
        func normalized(_ m: Matrix3x3) -> [Double] {
            let e = entries(m)
            let norm = e.map { $0 * $0 }.reduce(0, +).squareRoot()
            return e.map { $0 / norm }
        }
        let estimated = normalized(result.essential), expected = normalized(truth)
        let sign: Double = zip(estimated, expected).map { $0 * $1 }.reduce(0, +) < 0 ? -1 : 1
        let essentialError = zip(estimated, expected).map { abs($0 - sign * $1) }.max() ?? .infinity
        print("E against [T]×R of the true rig: \(essentialError) (normalized, sign \(sign))")
        #expect(essentialError <= 1e-13)

        let f = result.fundamental
        var worst = 0.0, points = 0
        for pose in rig.poses {
            for corner in rig.target.objectPoints {
                let inLeft = pose.apply(corner), inRight = rig.extrinsics.apply(inLeft)
                let xl = rig.left.intrinsics.pixel(fromNormalized: SIMD2(inLeft.x / inLeft.z, inLeft.y / inLeft.z)).homogeneous
                let xr = rig.right.intrinsics.pixel(fromNormalized: SIMD2(inRight.x / inRight.z, inRight.y / inRight.z)).homogeneous
                let line = f * xl
                worst = max(worst, abs(dot(xr, line)) / length(SIMD2(line.x, line.y)))
                points += 1
            }
        }
        print("epipolar distance of \(points) true corners under the estimated F: at most \(worst) px")
        #expect(points == rig.poses.count * rig.target.cornerCount && worst <= 1e-10)
    }

    /// 20 views with 0.2 px corner noise (a 2-D RMS of 0.2 px: σ = 0.2/√2 per coordinate, seeded):
    /// every parameter lands within 3.5 σ of the truth, σ being the fit's own standard deviation, and
    /// the RMS within 3 σ of what least squares leaves of the noise.
    ///
    /// The old issue's figures hold with room here (focal within 0.2 %, principal point within 1 px,
    /// baseline within 0.3 %) except the relative rotation's 0.05°: the fit's σ about x and y is
    /// 0.026° and 0.034° on this rig, so a draw of the noise stays under 0.05° only three times in
    /// four (this seed: 0.069°, 1.7 σ and 1.6 σ per axis). The figures printed below are the measured ones.
    @Test func recoversTheRigFromTwentyNoisyViews() throws {
        let rig = try SyntheticRig.load("brown5_stereo")
        var random = SeededRandom(seed: 7)
        let sigma = 0.2 / 2.0.squareRoot()
        let views = rig.views(sigma: sigma, random: &random)
        try #require(views.count == 20)
        let result = try StereoCalibrator(target: rig.target, model: .brown5).calibrate(pairs: views, size: rig.size)
        let c = result.calibration
        Self.errors("brown5, 20 views, 0.2 px", c, rig.calibration)
        #expect(result.pairs.count == 20)
        #expect(result.rejected.isEmpty)

        Self.expectWithinFitSigma(result, rig, model: .brown5)
        // The old issue's figures, which this draw meets but for the rotation (see above).
        for (estimated, known) in [(c.left, rig.left), (c.right, rig.right)] {
            #expect(abs(estimated.intrinsics.fx / known.intrinsics.fx - 1) < 0.002)
            #expect(abs(estimated.intrinsics.fy / known.intrinsics.fy - 1) < 0.002)
            #expect(abs(estimated.intrinsics.cx - known.intrinsics.cx) < 1)
            #expect(abs(estimated.intrinsics.cy - known.intrinsics.cy) < 1)
        }
        #expect(abs(c.baseline / rig.calibration.baseline - 1) < 0.003)

        Self.expectRMSOfTheNoise(result, rig, sigma: sigma)
        print("epipolar \(result.epipolarErrorMean), rectified vertical \(result.rectifiedVerticalRMS)")
        // After rectification y_left − y_right carries the noise of both corners, 0.2 px RMS; the epipolar
        // figure adds two point-to-line distances, each |N(0, 0.2)| on average 0.2·√(2/π). Measured 4.6 % and
        // 4.7 % above these (the calibration's own error adds to the noise); held within 10 %.
        #expect(abs(result.rectifiedVerticalRMS / 0.2 - 1) < 0.1)
        #expect(abs(result.epipolarErrorMean / (2 * 0.2 * (2 / Double.pi).squareRoot()) - 1) < 0.1)
    }

    @Test func holdsAFixedSideExactly() throws {
        let rig = try SyntheticRig.load("brown5_stereo")
        var random = SeededRandom(seed: 11)
        let views = rig.views(count: 8, sigma: 0.1, random: &random)
        try #require(views.count == 8)
        var calibrator = StereoCalibrator(target: rig.target, model: .brown5, fixed: .left)
        calibrator.minimumPairs = 3
        let result = try calibrator.calibrate(pairs: views, size: rig.size, leftCamera: rig.left)
        #expect(result.calibration.left.intrinsics == rig.left.intrinsics)
        #expect(result.calibration.left.distortion == rig.left.distortion)
        // The held side has no spread; the right camera lands within 3.5 σ of the truth.
        let n = LensModelKind.brown5.parameterCount
        let deviations = result.standardDeviations
        try #require(deviations.count == 2 * n + 6)
        #expect(deviations[0..<n].allSatisfy { $0 == 0 })
        let errors = zip(LensModelKind.brown5.parameters(of: result.calibration.right), LensModelKind.brown5.parameters(of: rig.right)).map { $0 - $1 }
        print("fixed left: right camera errors in fit σ \(zip(errors, deviations[n..<(2 * n)]).map { abs($0) / $1 })")
        for (error, deviation) in zip(errors, deviations[n..<(2 * n)]) { #expect(deviation > 0 && abs(error) <= 3.5 * deviation) }
    }

    @Test func rejectsAPairWhoseCornersAreShuffled() throws {
        let rig = try SyntheticRig.load("brown5_stereo")
        var random = SeededRandom(seed: 5)
        var views = rig.views(count: 10, sigma: 0.1, random: &random)
        try #require(views.count == 10)
        // A right image from another moment: corners of a different pose.
        views[3].right.corners = views[6].right.corners
        let result = try StereoCalibrator(target: rig.target).calibrate(pairs: views, size: rig.size)
        #expect(result.pairs.count == 9)
        #expect(result.rejected.count == 1)
        #expect(result.rejected.first?.name == "left3.png + right3.png")
        Self.expectRMSOfTheNoise(result, rig, sigma: 0.1)
    }

    @Test func failsWithNamedViewsWhenTooFewRemain() throws {
        let rig = try SyntheticRig.load("brown5_stereo")
        var random = SeededRandom(seed: 3)
        var views = rig.views(count: 3, sigma: 0.1, random: &random)
        try #require(views.count == 3)
        views[1].left.corners = Array(views[1].left.corners.prefix(10))
        #expect {
            _ = try StereoCalibrator(target: rig.target).calibrate(pairs: views, size: rig.size)
        } throws: { error in
            guard case CalibrationError.notEnoughViews(let usable, _, let rejected) = error else { return false }
            return usable == 2 && rejected.contains { $0.name == "left1.png" }
        }
    }
}

@Suite("Stereo calibration of a fisheye rig")
struct FisheyeStereoTests {
    /// Noise-free corners from `cv2.fisheye.projectPoints`: the solver lands on OpenCV's rig to
    /// rounding, so Parallax's Kannala–Brandt model is `cv::fisheye`'s.
    @Test func recoversAFisheyeRigFromNoiseFreeCorners() throws {
        let rig = try SyntheticRig.load("fisheye_stereo")
        var random = SeededRandom(seed: 1)
        let views = rig.views(sigma: 0, random: &random)
        try #require(views.count == 12)
        let result = try StereoCalibrator(target: rig.target, model: .fisheye).calibrate(pairs: views, size: rig.size)
        #expect(result.pairs.count == 12 && result.rejected.isEmpty)
        StereoCalibratorTests.expectExactRecovery("fisheye noise-free", result, rig.calibration, distortion: 2e-13)
    }

    @Test func recoversAFisheyeRig() throws {
        let rig = try SyntheticRig.load("fisheye_stereo")
        var random = SeededRandom(seed: 17)
        let views = rig.views(sigma: 0.1, random: &random)
        try #require(views.count == 12)
        let result = try StereoCalibrator(target: rig.target, model: .fisheye).calibrate(pairs: views, size: rig.size)
        StereoCalibratorTests.errors("fisheye, 12 views, 0.1 px", result.calibration, rig.calibration)
        #expect(result.pairs.count == 12 && result.rejected.isEmpty)
        #expect(result.calibration.left.distortion.isFisheye && result.calibration.right.distortion.isFisheye)
        StereoCalibratorTests.expectWithinFitSigma(result, rig, model: .fisheye)
        StereoCalibratorTests.expectRMSOfTheNoise(result, rig, sigma: 0.1)
        // y_left − y_right carries both corners' noise, √2 · 0.1 px, scaled by the rectified focal length.
        let scale = result.rectification.p1[0, 0] / rig.left.intrinsics.fx
        let floor = 2.0.squareRoot() * 0.1 * scale
        print("rectified vertical \(result.rectifiedVerticalRMS), noise in the rectified image \(floor)")
        // Rectifying a fisheye image magnifies more away from the centre, so the figure sits above that
        // floor: measured 9.6 % above, held within 20 %.
        #expect(result.rectifiedVerticalRMS >= floor && result.rectifiedVerticalRMS <= 1.2 * floor)
    }
}
