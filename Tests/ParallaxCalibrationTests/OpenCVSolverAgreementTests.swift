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
/// Measured differences (x86_64, OpenCV 5.0.0), stereo: fx, fy ≤ 5.5e-9 relative, cx, cy ≤ 4.2e-7
/// relative, k1 ≤ 5.7e-8, k2 ≤ 8.4e-7, p1, p2 ≤ 2.1e-8, k3 ≤ 3.5e-6, R 2.3e-7 rad, T 6.9e-8
/// relative, RMS 4.2e-12 relative (Parallax's slightly lower: OpenCV stops a little short of the
/// minimum along the cy–k3 valley); mono: fx, fy ≤ 7.5e-11, cx, cy ≤ 9.7e-10 relative, k1 ≤ 1.4e-9,
/// k2 ≤ 1.6e-8, p1, p2 ≤ 4.8e-11, k3 ≤ 4.4e-8, RMS ≤ 6e-15 relative (OpenCV itself varies by
/// about 1e-11 relative on fx from run to run). The bounds are about three times these.
@Suite("Parallax's solver against OpenCV's on the same corners")
struct OpenCVSolverAgreementTests {
    /// Bounds on the difference from OpenCV, each about three times the measured one.
    struct Bounds {
        /// Relative, on fx and fy.
        var focal: Double
        /// Relative, on cx and cy.
        var principalPoint: Double
        /// Absolute, on k1, k2, p1, p2, k3 in that order.
        var distortion: [Double]
    }

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

    /// Records the differences of `mine` from OpenCV's `theirs`, prints them and checks them against `bounds`.
    static func expectAgreement(_ label: String, _ mine: CameraModel, _ theirs: CameraModel, _ bounds: Bounds) {
        let a = mine.intrinsics, b = theirs.intrinsics
        let focal = [a.fx / b.fx - 1, a.fy / b.fy - 1].map(abs)
        let principal = [a.cx / b.cx - 1, a.cy / b.cy - 1].map(abs)
        #expect(a.skew == 0, "\(label): the solver fits no skew")
        let d = mine.distortion.coefficients, e = theirs.distortion.coefficients
        #expect(d.count == 5 && e.count == 5, "\(label): brown5 has 5 coefficients, got \(d.count) and \(e.count)")
        let distortion = zip(d, e).map { abs($0 - $1) }
        print("\(label) vs OpenCV: fx, fy relative \(focal), cx, cy relative \(principal), k1 k2 p1 p2 k3 absolute \(distortion)")
        #expect(focal.allSatisfy { $0 <= bounds.focal }, "\(label): fx, fy differ from OpenCV by \(focal) relative")
        #expect(principal.allSatisfy { $0 <= bounds.principalPoint }, "\(label): cx, cy differ from OpenCV by \(principal) relative")
        #expect(distortion.count == bounds.distortion.count)
        for (i, (difference, bound)) in zip(distortion, bounds.distortion).enumerated() {
            #expect(difference <= bound, "\(label): \(["k1", "k2", "p1", "p2", "k3"][i]) differs from OpenCV by \(difference)")
        }
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
        let result = try calibrator.calibrate(pairs: Self.openCVPairs(), size: ImageSize(width: 640, height: 480))
        #expect(result.pairs.count == 13 && result.rejected.isEmpty)

        let rms = try #require(opencv["rms"]?.number)
        print("stereo RMS: Parallax \(result.rms), OpenCV \(rms)")
        #expect(abs(result.rms / rms - 1) <= 1.3e-11)
        let stereoBounds = Bounds(focal: 1.6e-8, principalPoint: 1.3e-6, distortion: [1.7e-7, 2.5e-6, 6e-8, 6e-8, 1.05e-5])
        Self.expectAgreement("stereo left", result.calibration.left,
                             try Self.camera(opencv, k: "K1", d: "D1", distortionCount: 5), stereoBounds)
        Self.expectAgreement("stereo right", result.calibration.right,
                             try Self.camera(opencv, k: "K2", d: "D2", distortionCount: 5), stereoBounds)

        let rotation = Matrix3x3(rowMajor: try Self.numbers(opencv, "R", count: 9))
        let t = try Self.numbers(opencv, "T", count: 3)
        let translation = SIMD3(t[0], t[1], t[2])
        let angle = length((result.calibration.extrinsics.rotation * rotation.transposed).rodriguesVector)
        let translationError = length(result.calibration.extrinsics.translation - translation) / length(translation)
        print("R differs from OpenCV's by \(angle) rad, T by \(translationError) relative")
        #expect(angle <= 7e-7)
        #expect(translationError <= 2e-7)
    }

    /// Each side's `MonoCalibrator` result equals `cv2.calibrateCamera`'s on the same corners.
    @Test func monoCalibrationsAgreeWithCalibrateCamera() throws {
        let fixture = try Self.fixture()
        let opencv = try #require(fixture["brown5_joint"]?.object, "no 'brown5_joint' in opencv-sample-stereo-calibration.json")
        let pairs = try Self.openCVPairs()
        var calibrator = MonoCalibrator(target: CalibrationBoard(columns: 9, rows: 6, squareSize: 1), model: .brown5)
        calibrator.loss = .squared
        calibrator.outlierFactor = .infinity
        for (side, views) in [("left", pairs.map(\.left)), ("right", pairs.map(\.right))] {
            let reference = try #require(opencv["mono_" + side]?.object, "no 'mono_\(side)' under 'brown5_joint'")
            let result = try calibrator.calibrate(views: views, size: ImageSize(width: 640, height: 480))
            #expect(result.viewNames.count == 13)
            let rms = try #require(reference["rms"]?.number)
            print("mono \(side) RMS: Parallax \(result.rms), OpenCV \(rms)")
            #expect(abs(result.rms / rms - 1) <= 2e-14)
            Self.expectAgreement("mono \(side)", result.camera, try Self.camera(reference, k: "K", d: "D", distortionCount: 5),
                                 Bounds(focal: 2.5e-10, principalPoint: 3e-9, distortion: [4e-9, 5e-8, 1e-10, 1.5e-10, 1.3e-7]))
        }
    }
}
