import ParallaxGeometry
import Testing

/// R1, R2, P1, P2, Q and ROIs against `cv2.stereoRectify` and `cv2.fisheye.stereoRectify`
/// (fixture made by Fixtures/make_fixtures.py).
///
/// Agreement is measured per matrix, relative to its largest entry: max |ours − OpenCV|
/// over max |OpenCV| (so an entry near zero is held to the matrix's scale, not its own).
/// Both sides compute in double precision along the same steps, so they differ by the
/// rounding of a few dozen operations: a few 1e-14 for stereoRectify (the worst measured
/// is 1.3e-14), less for the fisheye version (1.5e-15). The bounds are those figures with
/// a little room, so a change of method, not just of rounding, fails them.
@Suite struct StereoRectificationTests {
    static let reference = Result { try Fixtures.json("stereo-rectify-reference") }
    static let bound = 2e-14
    static let fisheyeBound = 2e-15

    /// max |actual − expected| / max |expected|, after checking the counts; entries OpenCV
    /// writes as exactly 0 (the structure of P and Q) must be exactly 0 here too.
    static func relativeDifference(_ actual: [Double], _ expected: [Double], _ what: String,
                                   sourceLocation: SourceLocation = #_sourceLocation) throws -> Double {
        try #require(actual.count == expected.count, "\(what): \(actual.count) entries vs OpenCV's \(expected.count)",
                     sourceLocation: sourceLocation)
        let scale = expected.map(abs).max() ?? 0
        try #require(scale > 0, "\(what): OpenCV's matrix is zero", sourceLocation: sourceLocation)
        var worst = 0.0
        for (i, (a, e)) in zip(actual, expected).enumerated() {
            if e == 0 { #expect(a == 0, "\(what)[\(i)]: \(a), OpenCV has exactly 0", sourceLocation: sourceLocation) }
            worst = max(worst, abs(a - e) / scale)
        }
        return worst
    }

    @Test func matchesOpenCVStereoRectifyForEveryRecordedCase() throws {
        let reference = try Self.reference.get()
        let cases = try #require(reference.object?["cases"]?.array)
        try #require(cases.count == 17)
        var worst: [String: Double] = [:]
        var roisCompared = 0
        for entry in cases {
            let o = try #require(entry.object)
            let rigName = try #require(o["rig"]?.string)
            let calibration = try Fixtures.rig(rigName, in: reference)
            let alpha = try #require(o["alpha"]?.number)
            let newSize = try Fixtures.numbers(o["new_size"])
            try #require(newSize.count == 2)
            let options = RectificationOptions(
                alpha: alpha < 0 ? nil : alpha,
                outputSize: newSize[0] * newSize[1] > 0 ? ImageSize(width: Int(newSize[0]), height: Int(newSize[1])) : nil,
                zeroDisparity: o["zero_disparity"] == .bool(true))
            let r = try calibration.rectification(options)
            let label = "\(rigName) alpha \(alpha) size \(newSize) zeroDisparity \(options.zeroDisparity)"
            for (name, mine) in [("R1", r.r1.rowMajor), ("R2", r.r2.rowMajor), ("P1", r.p1.rowMajor),
                                 ("P2", r.p2.rowMajor), ("Q", r.q.rowMajor)] {
                let d = try Self.relativeDifference(mine, try Fixtures.numbers(o[name]), "\(label) \(name)")
                #expect(d <= Self.bound, "\(label) \(name): \(d) of the matrix's largest entry")
                worst[name] = max(worst[name] ?? 0, d)
            }
            // The valid-pixel rectangles: integers, equal to OpenCV's.
            for (mine, key) in [(r.roi1, "roi1"), (r.roi2, "roi2")] {
                let expected = try Fixtures.numbers(o[key]).map { Int($0) }
                #expect(mine.array == expected, "\(label) \(key): \(mine.array) vs OpenCV \(expected)")
                roisCompared += 1
            }
        }
        #expect(roisCompared == 34)
        print("stereoRectify vs OpenCV over \(cases.count) cases, worst relative to each matrix's largest entry: "
              + worst.keys.sorted().map { "\($0) \(worst[$0]!)" }.joined(separator: ", "))
    }

    @Test func matchesOpenCVFisheyeStereoRectify() throws {
        let reference = try Self.reference.get()
        let cases = try #require(reference.object?["fisheye_cases"]?.array)
        try #require(cases.count == 3)
        let calibration = try Fixtures.rig("fisheye", in: reference)
        var worst = 0.0
        for entry in cases {
            let o = try #require(entry.object)
            let balance = try #require(o["balance"]?.number)
            let r = try calibration.rectification(RectificationOptions(alpha: balance))
            for (name, mine) in [("R1", r.r1.rowMajor), ("R2", r.r2.rowMajor), ("P1", r.p1.rowMajor),
                                 ("P2", r.p2.rowMajor), ("Q", r.q.rowMajor)] {
                let d = try Self.relativeDifference(mine, try Fixtures.numbers(o[name]), "fisheye balance \(balance) \(name)")
                #expect(d <= Self.fisheyeBound, "fisheye balance \(balance) \(name): \(d) of the matrix's largest entry")
                worst = max(worst, d)
            }
        }
        print("fisheye stereoRectify vs OpenCV over \(cases.count) balances: worst \(worst) of a matrix's largest entry")
    }

    @Test func verticalRigIsDetectedAndRowsBecomeColumns() throws {
        let calibration = try Fixtures.rig("vertical", in: try Self.reference.get())
        let r = try calibration.rectification()
        #expect(r.layout == .vertical)
        // A point seen by both rectified cameras lands on the same column.
        let point = SIMD3(120.0, -80, 1500)
        let (l, rr) = try #require(r.project(r.r1 * point))
        // r.project takes left-rectified-frame points; the right view is P2 applied to the same point.
        #expect(abs(l.x - rr.x) < 1e-9)
    }

    @Test func rectifiedCorrespondencesShareARow() throws {
        // Project scene points through the real (distorted) cameras, then map
        // them through the exact undistortion and R/P: rows must agree.
        let calibration = try Fixtures.rig("rotated", in: try Self.reference.get())
        let r = try calibration.rectification(RectificationOptions(alpha: 0))
        for point in [SIMD3(-200.0, -150, 1200), SIMD3(300, 100, 900), SIMD3(0, 0, 3000), SIMD3(150, 220, 1800)] {
            let leftPixel = try #require(calibration.left.project(point))
            let rightPixel = try #require(calibration.right.project(calibration.extrinsics.apply(point)))
            let ln = try calibration.left.normalizedCoordinates(ofPixel: leftPixel)
            let rn = try calibration.right.normalizedCoordinates(ofPixel: rightPixel)
            let lr = r.p1.leftBlock * (r.r1 * ln.homogeneous)
            let rr = r.p2.leftBlock * (r.r2 * rn.homogeneous)
            #expect(abs(lr.y / lr.z - rr.y / rr.z) < 1e-6, "vertical disparity for \(point)")
        }
    }

    @Test func zeroBaselineAndMismatchedSizesAreTypedErrors() throws {
        let camera = CameraModel(size: ImageSize(width: 640, height: 480),
                                 intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240))
        let same = StereoCalibration(left: camera, right: camera, extrinsics: .identity)
        #expect(throws: RectificationError.zeroBaseline) { try same.rectification() }
        var other = camera
        other.size = ImageSize(width: 320, height: 240)
        let mixed = StereoCalibration(left: camera, right: other, extrinsics: RigidTransform(translation: SIMD3(-60, 0, 0)))
        #expect(throws: RectificationError.sizeMismatch(left: camera.size, right: other.size)) { try mixed.rectification() }
    }
}

/// ``StereoRectification/findings(for:)``: degenerate rigs are named, good ones pass quietly.
@Suite("Degenerate geometry is named")
struct RectificationFindingsTests {
    static let camera = CameraModel(size: ImageSize(width: 640, height: 480),
                                    intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240))

    static func rig(rotationDegreesAboutY degrees: Double = 0, translation: SIMD3<Double>) -> StereoCalibration {
        let a = degrees * .pi / 180
        let rotation = Matrix3x3(rodrigues: SIMD3(0, a, 0))
        return StereoCalibration(left: camera, right: camera, extrinsics: RigidTransform(rotation: rotation, translation: translation))
    }

    static func findings(_ rig: StereoCalibration) throws -> [RectificationFinding] {
        try rig.rectification().findings(for: rig)
    }

    @Test func aSideBySideRigHasNoFinding() throws {
        #expect(try Self.findings(Self.rig(rotationDegreesAboutY: 2, translation: SIMD3(-60, 0.5, 1))).isEmpty)
    }

    @Test func aCameraBehindTheOtherIsFatal() throws {
        let findings = try Self.findings(Self.rig(translation: SIMD3(2, 1, -60)))
        #expect(findings.first?.severity == .fatal)
        #expect(findings.first?.message.contains("in front of the left one rather than beside it") == true)
    }

    @Test func viewsThatDoNotOverlapAreFatal() throws {
        let findings = try Self.findings(Self.rig(rotationDegreesAboutY: 150, translation: SIMD3(-60, 0, 0)))
        #expect(findings.contains { $0.severity == .fatal && $0.message.contains("has no valid pixel") }, "\(findings)")
    }

    @Test func tensOfDegreesAndSwappedCamerasAreWarnings() throws {
        let turned = try Self.findings(Self.rig(rotationDegreesAboutY: 30, translation: SIMD3(-60, 0, 0)))
        #expect(turned.contains { $0.severity == .warning && $0.message.contains("turned 30° against each other") }, "\(turned)")
        #expect(!turned.contains { $0.severity == .fatal })
        let swapped = try Self.findings(Self.rig(translation: SIMD3(60, 0, 0)))
        #expect(swapped.map(\.severity) == [.warning] && swapped[0].message.contains("were the cameras swapped?"), "\(swapped)")
    }

    @Test("a huge translation is named as corrupt, not as a zero translation")
    func hugeTranslation() throws {
        let huge = Self.rig(translation: SIMD3(-1e200, 0, 0))
        #expect(huge.baseline == 1e200)
        let findings = try Self.findings(huge)
        #expect(findings.first?.severity == .fatal && findings.first?.message.contains("implausible") == true, "\(findings)")
        #expect(throws: RectificationError.nonFiniteTranslation) {
            try Self.rig(translation: SIMD3(.infinity, 0, 0)).rectification()
        }
    }
}

extension RectificationFindingsTests {
    @Test("a right camera beside the left but turned more than 45° is not called 'behind'")
    func turnedButBeside() throws {
        // The right camera's centre is 60 units to the right; it looks 50° inwards.
        let rotation = Matrix3x3(rodrigues: SIMD3(0, -50 * Double.pi / 180, 0))
        let centre = SIMD3<Double>(60, 0, 0)
        let rig = StereoCalibration(left: Self.camera, right: Self.camera,
                                    extrinsics: RigidTransform(rotation: rotation, translation: -(rotation * centre)))
        #expect(abs(rig.rightCameraCentre.x - 60) < 1e-9)
        let findings = try rig.rectification().findings(for: rig)
        #expect(!findings.contains { $0.message.contains("rather than beside it") }, "\(findings)")
        #expect(findings.contains { $0.message.contains("turned 50° against each other") }, "\(findings)")
    }
}

extension RectificationFindingsTests {
    /// README: `rectification` and `rectify` "warn about … small valid regions". Two cameras side
    /// by side, the right one with four times the left's focal length. With alpha 1 the rectified
    /// image keeps every source pixel, so its focal length is about the wider camera's 500 px and
    /// the narrow camera fills a quarter of its width and of its height: (1/4)² = 6.25 % of the
    /// image, under the 10 % that draws the warning (the valid rectangle lies within a pixel or
    /// two of each edge of that quarter). At three times the focal length, (1/3)² = 11.1 %: no warning.
    @Test("a valid region under a tenth of the rectified image is a warning naming its share")
    func smallValidRegionIsAWarning() throws {
        func rig(rightFocal: Double) -> StereoCalibration {
            let narrow = CameraModel(size: Self.camera.size,
                                     intrinsics: CameraIntrinsics(fx: rightFocal, fy: rightFocal, cx: 320, cy: 240))
            return StereoCalibration(left: Self.camera, right: narrow, extrinsics: RigidTransform(translation: SIMD3(-60, 0, 0)))
        }
        let keepAll = RectificationOptions(alpha: 1)
        let quarter = rig(rightFocal: 2000)
        let rectification = try quarter.rectification(keepAll)
        let roi = rectification.roi2
        #expect(abs(roi.width - 160) <= 2 && abs(roi.height - 120) <= 2, "right valid region \(roi)")
        let share = Double(roi.width * roi.height) / Double(640 * 480)
        #expect(share < RectificationFinding.smallValidAreaFraction && RectificationFinding.smallValidAreaFraction == 0.1)
        let findings = rectification.findings(for: quarter)
        let percent = (share * 100 * 1000).rounded() / 1000
        #expect(findings.map(\.severity) == [.warning]
                && findings.first?.message == "only \(percent) % of the rectified right image is valid (\(roi))", "\(findings)")
        let third = rig(rightFocal: 1500)
        #expect(try third.rectification(keepAll).findings(for: third).isEmpty)
    }
}
