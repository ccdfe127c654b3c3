import Testing
import ParallaxCalibration
import ParallaxGeometry

@Suite("Stereo calibration on synthetic ground truth")
struct StereoCalibratorTests {
    /// The figure: 20 views, 0.2 px corner noise → focal within 0.2 %, principal point within 1 px,
    /// baseline within 0.3 %, relative rotation within 0.05°.
    ///
    /// "0.2 px corner noise" is read as a 2-D RMS error of 0.2 px (σ = 0.2/√2 per coordinate). At that
    /// noise the fit's own covariance gives σ ≈ 0.03° for the relative rotation about x and y and
    /// σ ≈ 0.4 px for the principal points on this rig (11×8 board, tilts up to ±50°), so the tolerances
    /// sit at 1.5–2.5 σ: the seed is fixed so the test repeats exactly.
    @Test func recoversTheRigFromTwentyNoisyViews() throws {
        let rig = SyntheticRig()
        var random = SeededRandom(seed: 7)
        let poses = rig.poses(count: 20, random: &random)
        let views = rig.views(poses: poses, sigma: 0.2 / 2.0.squareRoot(), random: &random)
        let result = try StereoCalibrator(target: rig.target, model: .brown5).calibrate(pairs: views, size: rig.size)
        let c = result.calibration
        let rotationError = length((c.extrinsics.rotation * rig.extrinsics.rotation.transposed).rodriguesVector) * 180 / Double.pi
        print("synthetic rig, 20 views: focal error % L \(100 * (c.left.intrinsics.fx / rig.left.intrinsics.fx - 1)), "
              + "\(100 * (c.left.intrinsics.fy / rig.left.intrinsics.fy - 1)) R \(100 * (c.right.intrinsics.fx / rig.right.intrinsics.fx - 1)), "
              + "\(100 * (c.right.intrinsics.fy / rig.right.intrinsics.fy - 1)); principal point error px L "
              + "\(length(SIMD2(c.left.intrinsics.cx - rig.left.intrinsics.cx, c.left.intrinsics.cy - rig.left.intrinsics.cy))) R "
              + "\(length(SIMD2(c.right.intrinsics.cx - rig.right.intrinsics.cx, c.right.intrinsics.cy - rig.right.intrinsics.cy))); "
              + "baseline error % \(100 * (c.baseline / rig.calibration.baseline - 1)); rotation error ° \(rotationError)")
        #expect(result.pairs.count == 20)
        #expect(result.rejected.isEmpty)
        for (estimated, truth) in [(c.left, rig.left), (c.right, rig.right)] {
            #expect(abs(estimated.intrinsics.fx / truth.intrinsics.fx - 1) < 0.002)
            #expect(abs(estimated.intrinsics.fy / truth.intrinsics.fy - 1) < 0.002)
            #expect(abs(estimated.intrinsics.cx - truth.intrinsics.cx) < 1)
            #expect(abs(estimated.intrinsics.cy - truth.intrinsics.cy) < 1)
        }
        #expect(abs(c.baseline / rig.calibration.baseline - 1) < 0.003)
        let difference = c.extrinsics.rotation * rig.extrinsics.rotation.transposed
        let angleDegrees = length(difference.rodriguesVector) * 180 / Double.pi
        #expect(angleDegrees < 0.05)
        // The fit absorbs a few degrees of freedom, so the RMS lands just under the 0.2 px of the noise.
        #expect(result.rms > 0.18 && result.rms < 0.205)
        #expect(result.standardDeviations[result.standardDeviations.count - 6] < 0.001)
        #expect(result.epipolarErrorMean < 0.5)
        #expect(result.rectifiedVerticalRMS < 0.3)
        // Standard deviations are small but non-zero.
        #expect(result.standardDeviations[0] > 0 && result.standardDeviations[0] < 2)
    }

    @Test func holdsAFixedSideExactly() throws {
        let rig = SyntheticRig()
        var random = SeededRandom(seed: 11)
        let views = rig.views(poses: rig.poses(count: 8, random: &random), sigma: 0.1, random: &random)
        var calibrator = StereoCalibrator(target: rig.target, model: .brown5, fixed: .left)
        calibrator.minimumPairs = 3
        let result = try calibrator.calibrate(pairs: views, size: rig.size, leftCamera: rig.left)
        #expect(result.calibration.left.intrinsics == rig.left.intrinsics)
        #expect(abs(result.calibration.right.intrinsics.fx / rig.right.intrinsics.fx - 1) < 0.005)
        #expect(result.standardDeviations[0] == 0)
    }

    @Test func rejectsAPairWhoseCornersAreShuffled() throws {
        let rig = SyntheticRig()
        var random = SeededRandom(seed: 5)
        var views = rig.views(poses: rig.poses(count: 10, random: &random), sigma: 0.1, random: &random)
        // A right image from another moment: corners of a different pose.
        views[3].right.corners = views[6].right.corners
        let result = try StereoCalibrator(target: rig.target).calibrate(pairs: views, size: rig.size)
        #expect(result.pairs.count == 9)
        #expect(result.rejected.count == 1)
        #expect(result.rejected.first?.name == "left3.png + right3.png")
        #expect(result.rms < 0.2)
    }

    @Test func failsWithNamedViewsWhenTooFewRemain() throws {
        let rig = SyntheticRig()
        var random = SeededRandom(seed: 3)
        var views = rig.views(poses: rig.poses(count: 3, random: &random), sigma: 0.1, random: &random)
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
    @Test func recoversAFisheyeRig() throws {
        let lens = LensDistortion.kannalaBrandt(KannalaBrandt(k1: 0.04, k2: -0.01, k3: 0.001, k4: 0))
        let size = ImageSize(width: 640, height: 480)
        let truth = StereoCalibration(
            left: CameraModel(size: size, intrinsics: CameraIntrinsics(fx: 320, fy: 320, cx: 321, cy: 238), distortion: lens),
            right: CameraModel(size: size, intrinsics: CameraIntrinsics(fx: 318, fy: 319, cx: 317, cy: 243), distortion: lens),
            extrinsics: RigidTransform(rodrigues: SIMD3(0.005, -0.01, 0.002), translation: SIMD3(-80, 0.5, 0.3)))
        let board = CalibrationBoard(columns: 11, rows: 8, squareSize: 30)
        var random = SeededRandom(seed: 17)
        var views: [StereoView] = []
        let centre = SIMD3(150.0, 105, 0)
        while views.count < 12 {
            let rotation = Matrix3x3(rodrigues: SIMD3(Double.random(in: -0.8...0.8, using: &random), Double.random(in: -0.8...0.8, using: &random),
                                                      Double.random(in: -0.3...0.3, using: &random)))
            let d = Double.random(in: 250...420, using: &random)
            let pose = RigidTransform(rotation: rotation, translation: SIMD3(Double.random(in: -0.3...0.2, using: &random) * d,
                                                                            Double.random(in: -0.2...0.2, using: &random) * d, d) - rotation * centre)
            let right = truth.extrinsics.composed(after: pose)
            let l = board.objectPoints.compactMap { truth.left.project(pose.apply($0)) }
            let r = board.objectPoints.compactMap { truth.right.project(right.apply($0)) }
            let inside = (l + r).allSatisfy { $0.x > 5 && $0.y > 5 && $0.x < 635 && $0.y < 475 }
            guard l.count == board.cornerCount, r.count == board.cornerCount, inside else { continue }
            func noisy(_ p: [SIMD2<Double>]) -> [SIMD2<Double>] { p.map { $0 + SIMD2(random.nextGaussian(), random.nextGaussian()) * 0.1 } }
            views.append(StereoView(left: CalibrationView(name: "l\(views.count)", corners: noisy(l)),
                                    right: CalibrationView(name: "r\(views.count)", corners: noisy(r))))
        }
        let result = try StereoCalibrator(target: board, model: .fisheye).calibrate(pairs: views, size: size)
        #expect(result.calibration.left.distortion.isFisheye)
        #expect(abs(result.calibration.baseline / truth.baseline - 1) < 0.005)
        #expect(abs(result.calibration.left.intrinsics.fx / 320 - 1) < 0.005)
        #expect(result.rms < 0.15)
        #expect(result.rectifiedVerticalRMS < 0.2)
    }
}
