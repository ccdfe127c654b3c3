import Testing
import ParallaxCalibration
import ParallaxGeometry

/// Parallax's solver against OpenCV's on the same observations: OpenCV's own corners of its
/// stereo sample (`opencv-sample-corners.json`) and OpenCV's `calibrateCamera` and
/// `stereoCalibrate` on them (`opencv-sample-stereo-calibration.json`, made by
/// `make_opencv_stereo_calibration.py`; the flags are documented there).
///
/// Both solve the same least-squares problem (brown5: fx, fy, cx, cy, k1, k2, p1, p2, k3 per
/// camera, every parameter free, joint refinement), so Parallax runs with plain squared loss and
/// no outlier rejection here: its defaults (Huber at 2 px, outlier pairs dropped) would solve a
/// different problem and drop a pair whose outer corners OpenCV's cornerSubPix pulled off.
///
/// Two solvers stopped near one minimum differ by where each stopped, and where an iterative
/// solver stops depends on the rounding of every step: on OpenBLAS's kernels, which it picks per
/// CPU (`OPENBLAS_CORETYPE`). So the bounds are derived from the stopping rules and the
/// problem's conditioning (``StoppingBounds``), never from the differences one machine printed;
/// `make test-cpus` runs this suite under each core type.
@Suite("Parallax's solver against OpenCV's on the same corners")
struct OpenCVSolverAgreementTests {
    /// How far two solutions of one least-squares problem may lie apart when each stopped near
    /// its minimum p*, parameter by parameter.
    ///
    /// Near p* the cost f = Σ|e|² rises as f(p) − f(p*) ≈ (p − p*)ᵀ JᵀJ (p − p*) (J the
    /// Jacobian of the residuals). Cauchy–Schwarz in that metric bounds each parameter:
    /// |p_k − p*_k| ≤ √(f(p) − f(p*)) · √[(JᵀJ)⁻¹]_kk, and √[(JᵀJ)⁻¹]_kk = σ_k / σ, where σ_k is
    /// the parameter's standard deviation and σ² = f / (m − n) for m residuals and n unknowns
    /// (the covariance the solver reports, marginalised over the board poses). With the excess
    /// relative to the cost, Δ = (f(p) − f(p*)) / f, that is |p_k − p*_k| ≤ √(Δ (m − n)) σ_k.
    ///
    /// - Parallax's excess: the solver stops once an accepted step lowers the cost by less than
    ///   `relativeCostTolerance` (τ) of it. Near the minimum (damping down to 1e-12) its steps
    ///   are Gauss–Newton's, which on residuals this small contract the excess by a ratio ρ ≤ ½
    ///   per step, so the excess left after the last step is ρ/(1 − ρ)·τ ≤ τ. The cost is a sum
    ///   of m squares, known to m·u relative (u = 2⁻⁵³), which is also where the solver stops
    ///   when no step lowers it any more. Its third stop, every parameter moving by less than
    ///   1e-12 of itself, leaves an excess of the order of that step squared, far below τ. The
    ///   calibrators build their solver with the default tolerances, read here from a default
    ///   solver. Δ_P = τ + m·u. (ρ ≤ ½ is the one assumption, Gauss–Newton's rate on residuals
    ///   this small; it is not measured here.)
    /// - OpenCV's excess: its cost above Parallax's (the fixture's RMS against this run's), plus
    ///   Parallax's own excess and OpenCV's rounding: Δ_O = max(0, gap) + m·u + Δ_P.
    /// - The quadratic model leaves out S = Σ e_i ∇²e_i beside JᵀJ; residuals of 0.4 px keep it
    ///   small, and a factor 2 covers S up to ¾ JᵀJ.
    ///
    /// So |Parallax_k − OpenCV_k| ≤ 2 (√Δ_P + √Δ_O) √(m − n) σ_k: ``sigmas`` times σ_k. A rotation
    /// vector's bound carries over to the angle between the two rotations: the exponential map
    /// of SO(3), whose curvature is not negative, does not lengthen distances.
    struct StoppingBounds {
        /// The factor on each parameter's σ.
        var sigmas: Double
        /// Parallax's excess over the minimum, relative (Δ_P).
        var parallaxExcess: Double
        /// OpenCV's cost above Parallax's, relative (the fixture's RMS against this run's).
        var gap: Double

        /// The largest `gap` taken as "the same minimum": OpenCV ran to a relative step of 1e-15
        /// (the fixture's recipe) and stalls 8.3e-12 above Parallax's cost in the stereo solve,
        /// level with it (to rounding) in the mono ones. A wider gap would mean the two solve
        /// different problems, and the bound would widen with it: the test refuses it instead.
        static let largestGap = 1e-10

        init(residuals m: Int, unknowns n: Int, parallaxRMS: Double, openCVRMS: Double) {
            let rounding = Double(m) * 0x1p-53
            parallaxExcess = BlockSparseLevenbergMarquardt().relativeCostTolerance + rounding
            gap = (openCVRMS * openCVRMS) / (parallaxRMS * parallaxRMS) - 1
            let openCVExcess = max(0, gap) + rounding + parallaxExcess
            sigmas = 2 * (parallaxExcess.squareRoot() + openCVExcess.squareRoot()) * Double(m - n).squareRoot()
        }

        /// The RMS figures: Parallax's cost no higher than OpenCV's beyond its own excess, and
        /// OpenCV's no higher than Parallax's beyond ``largestGap``.
        func expectSameMinimum(_ label: String) {
            print("\(label): OpenCV's cost above Parallax's by \(gap) relative; parameter bound \(sigmas) σ")
            #expect(-gap <= parallaxExcess, "\(label): Parallax's cost is above OpenCV's by \(-gap) relative")
            #expect(gap <= Self.largestGap, "\(label): OpenCV's cost is above Parallax's by \(gap) relative: not the same minimum")
        }
    }

    /// Parameter names in ``LensModelKind/brown5`` order.
    static let parameterNames = ["fx", "fy", "cx", "cy", "k1", "k2", "p1", "p2", "k3"]

    static func fixture() throws -> JSONObject {
        let json = try TestFixtures.json("opencv-sample-stereo-calibration.json")
        return try #require(json.object, "opencv-sample-stereo-calibration.json is not a JSON object")
    }

    static func numbers(_ object: JSONObject, _ name: String, count: Int) throws -> [Double] {
        let array = object[name]?.array?.compactMap { $0.number }
        let values = try #require(array, "no list of numbers '\(name)' in opencv-sample-stereo-calibration.json")
        try #require(values.count == count, "'\(name)' has \(values.count) values, expected \(count)")
        return values
    }

    static func camera(_ object: JSONObject, k: String, d: String, distortionCount: Int) throws -> CameraModel {
        let m = try numbers(object, k, count: 9)
        // OpenCV's calibrateCamera and stereoCalibrate never fit skew: a non-zero one would mean a wrong fixture.
        try #require(m[1] == 0 && m[3] == 0 && m[6] == 0 && m[7] == 0 && m[8] == 1, "'\(k)' is not an upper-triangular camera matrix without skew")
        let distortion = try LensDistortion(modelName: "brown", coefficients: try numbers(object, d, count: distortionCount))
        return CameraModel(size: ImageSize(width: 640, height: 480), intrinsics: CameraIntrinsics(matrix: Matrix3x3(rowMajor: m)),
                           distortion: distortion)
    }

    /// OpenCV's corners rounded to float32, as OpenCV's calibration takes them, so both solvers see the same numbers.
    static func openCVPairs() throws -> [StereoView] {
        let corners = try TestFixtures.corners("opencv-sample-corners.json")
        return try TestFixtures.openCVPairNumbers.map { n in
            func view(_ name: String) throws -> CalibrationView {
                let points = try #require(corners[name], "no corners for \(name) in opencv-sample-corners.json")
                try #require(points.count == 54, "\(name) has \(points.count) corners, the 9×6 board has 54")
                return CalibrationView(name: name, corners: points.map { SIMD2(Double(Float($0.x)), Double(Float($0.y))) })
            }
            return StereoView(left: try view(TestFixtures.sampleName("left", n)), right: try view(TestFixtures.sampleName("right", n)))
        }
    }

    /// The parameters of `camera` in ``LensModelKind/brown5`` order.
    static func parameters(_ camera: CameraModel) -> [Double] {
        let i = camera.intrinsics
        return [i.fx, i.fy, i.cx, i.cy] + camera.distortion.coefficients
    }

    /// Checks every parameter of `mine` against OpenCV's `theirs` within `bounds.sigmas` of its
    /// standard deviation (`sigmas`, brown5 order) and prints the differences, absolute and in σ.
    /// Returns the largest difference in σ.
    @discardableResult
    static func expectAgreement(_ label: String, _ mine: CameraModel, _ theirs: CameraModel, sigmas: [Double],
                                _ bounds: StoppingBounds) -> Double {
        #expect(mine.intrinsics.skew == 0, "\(label): the solver fits no skew")
        let a = parameters(mine), b = parameters(theirs)
        #expect(a.count == 9 && b.count == 9 && sigmas.count == 9, "\(label): brown5 has 9 parameters, got \(a.count), \(b.count), \(sigmas.count)")
        var printed: [String] = []
        var largest = 0.0
        for (k, name) in parameterNames.enumerated() where k < min(a.count, b.count, sigmas.count) {
            let difference = abs(a[k] - b[k])
            #expect(sigmas[k] > 0, "\(label): σ of \(name) is \(sigmas[k])")
            #expect(difference <= bounds.sigmas * sigmas[k],
                    "\(label): \(name) differs from OpenCV by \(difference) (\(difference / sigmas[k]) σ; bound \(bounds.sigmas) σ)")
            largest = max(largest, difference / sigmas[k])
            printed.append("\(name) \(String(format: "%.2e", difference)) (\(String(format: "%.1e", difference / sigmas[k])) σ)")
        }
        print("\(label) vs OpenCV: " + printed.joined(separator: ", "))
        return largest
    }

    /// The issue's check: Parallax's stereo solution equals `cv2.stereoCalibrate`'s (after
    /// `calibrateCamera` per side) on OpenCV's own corners: same RMS, intrinsics, distortion, R and T.
    @Test func agreesWithStereoCalibrateOnOpenCVsCorners() throws {
        let fixture = try Self.fixture()
        let opencv = try #require(fixture["brown5_joint"]?.object, "no 'brown5_joint' in opencv-sample-stereo-calibration.json")
        var calibrator = StereoCalibrator(target: CalibrationBoard(columns: 9, rows: 6, squareSize: 1), model: .brown5)
        calibrator.loss = .squared
        calibrator.outlierFactor = .infinity
        calibrator.rejectCorners = false
        let pairs = try Self.openCVPairs()
        let result = try calibrator.calibrate(pairs: pairs, size: ImageSize(width: 640, height: 480))
        #expect(result.pairs.count == 13 && result.rejected.isEmpty)
        #expect(result.converged, "the joint refinement stopped on its iteration limit (\(result.iterations) iterations)")

        let rms = try #require(opencv["rms"]?.number)
        print("stereo RMS: Parallax \(result.rms), OpenCV \(rms)")
        // The README's figure for this solve, Parallax's own (OpenCV's is printed by the fixture's script).
        #expect((result.rms * 1000).rounded() / 1000 == 0.444, "stereo RMS \(result.rms): the README says 0.444 px")
        // Residuals: x and y of 54 corners in both images of each pair; unknowns: two cameras' 9
        // parameters, R and T, and one board pose per pair.
        let bounds = StoppingBounds(residuals: pairs.count * 54 * 4, unknowns: 2 * 9 + 6 + 6 * pairs.count,
                                    parallaxRMS: result.rms, openCVRMS: rms)
        bounds.expectSameMinimum("stereo")
        let sigmas = result.standardDeviations
        try #require(sigmas.count == 24, "σ of 2 × 9 camera parameters, R and T; got \(sigmas.count)")
        var largest = Self.expectAgreement("stereo left", result.calibration.left, try Self.camera(opencv, k: "K1", d: "D1", distortionCount: 5),
                                           sigmas: Array(sigmas[0..<9]), bounds)
        largest = max(largest, Self.expectAgreement("stereo right", result.calibration.right,
                                                    try Self.camera(opencv, k: "K2", d: "D2", distortionCount: 5),
                                                    sigmas: Array(sigmas[9..<18]), bounds))

        let rotation = Matrix3x3(rowMajor: try Self.numbers(opencv, "R", count: 9))
        let t = try Self.numbers(opencv, "T", count: 3)
        let translation = SIMD3(t[0], t[1], t[2])
        let angle = length((result.calibration.extrinsics.rotation * rotation.transposed).rodriguesVector)
        let translationError = length(result.calibration.extrinsics.translation - translation)
        // Each component within its bound, so the vector within the length of the bounds.
        let angleBound = bounds.sigmas * length(SIMD3(sigmas[18], sigmas[19], sigmas[20]))
        let translationBound = bounds.sigmas * length(SIMD3(sigmas[21], sigmas[22], sigmas[23]))
        print("R differs from OpenCV's by \(angle) rad (bound \(angleBound)), T by \(translationError / length(translation)) relative "
              + "(bound \(translationBound / length(translation)))")
        #expect(angle <= angleBound)
        #expect(translationError <= translationBound)
        print("stereo: largest difference from OpenCV \(String(format: "%.2e", largest)) σ, bound \(String(format: "%.2e", bounds.sigmas)) σ")
    }

    /// Each side's `MonoCalibrator` result equals `cv2.calibrateCamera`'s on the same corners.
    @Test func monoCalibrationsAgreeWithCalibrateCamera() throws {
        let fixture = try Self.fixture()
        let opencv = try #require(fixture["brown5_joint"]?.object, "no 'brown5_joint' in opencv-sample-stereo-calibration.json")
        let pairs = try Self.openCVPairs()
        var calibrator = MonoCalibrator(target: CalibrationBoard(columns: 9, rows: 6, squareSize: 1), model: .brown5)
        calibrator.loss = .squared
        calibrator.outlierFactor = .infinity
        var largest = 0.0, largestBound = 0.0
        for (side, views) in [("left", pairs.map(\.left)), ("right", pairs.map(\.right))] {
            let reference = try #require(opencv["mono_" + side]?.object, "no 'mono_\(side)' under 'brown5_joint'")
            let result = try calibrator.calibrate(views: views, size: ImageSize(width: 640, height: 480))
            #expect(result.viewNames.count == 13)
            #expect(result.converged, "mono \(side): the refinement stopped on its iteration limit")
            let rms = try #require(reference["rms"]?.number)
            print("mono \(side) RMS: Parallax \(result.rms), OpenCV \(rms)")
            // Residuals: x and y of 54 corners per view; unknowns: 9 camera parameters and a pose per view.
            let bounds = StoppingBounds(residuals: views.count * 54 * 2, unknowns: 9 + 6 * views.count,
                                        parallaxRMS: result.rms, openCVRMS: rms)
            bounds.expectSameMinimum("mono \(side)")
            largest = max(largest, Self.expectAgreement("mono \(side)", result.camera,
                                                        try Self.camera(reference, k: "K", d: "D", distortionCount: 5),
                                                        sigmas: result.standardDeviations, bounds))
            largestBound = max(largestBound, bounds.sigmas)
        }
        print("mono: largest difference from OpenCV \(String(format: "%.2e", largest)) σ, bound \(String(format: "%.2e", largestBound)) σ")
    }
}
