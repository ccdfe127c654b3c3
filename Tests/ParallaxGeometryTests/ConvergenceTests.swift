import ParallaxGeometry
import Testing

@Suite struct ConvergenceTests {
    static let calibration = StereoCalibration(
        left: CameraModel(size: ImageSize(width: 640, height: 480),
                          intrinsics: CameraIntrinsics(fx: 600, fy: 601, cx: 321, cy: 238),
                          distortion: .brownConrady(BrownConrady(k1: -0.2, k2: 0.05))),
        right: CameraModel(size: ImageSize(width: 640, height: 480),
                           intrinsics: CameraIntrinsics(fx: 598, fy: 599, cx: 317, cy: 243),
                           distortion: .brownConrady(BrownConrady(k1: -0.21, k2: 0.06))),
        extrinsics: RigidTransform(rodrigues: SIMD3(0.01, -0.02, 0.005), translation: SIMD3(-65, 0.8, 1.2)))

    @Test(arguments: [(400.0, StereoLayout.horizontal), (1500.0, .horizontal), (5000.0, .horizontal), (900.0, .vertical)])
    func pointsOnTheConvergencePlaneHaveZeroDisparityAndKeepTheirDepth(distance: Double, layout: StereoLayout) throws {
        var calibration = Self.calibration
        if layout == .vertical {
            calibration.extrinsics.translation = SIMD3(0.8, -65, 1.2)
        }
        let classic = try calibration.rectification(RectificationOptions(alpha: 0))
        #expect(classic.layout == layout)
        let converged = classic.converged(atDistance: distance)
        let axis = layout == .horizontal ? 0 : 1
        // f·B/Z: the total shift the issue specifies.
        let expectedShift = classic.focalLength * abs(classic.signedBaseline) / distance
        #expect(abs((classic.p1[axis, 2] - converged.p1[axis, 2]) + (converged.p2[axis, 2] - classic.p2[axis, 2]) - expectedShift) < 1e-9)
        for offset in [SIMD2(0.0, 0.0), SIMD2(-150, 80), SIMD2(200, -120)] {
            // A point on the plane z = distance of the left rectified frame.
            let point = SIMD3(offset.x, offset.y, distance)
            let (l, r) = try #require(converged.project(point))
            let disparity = l[axis] - r[axis]
            #expect(abs(disparity) < 1e-6, "disparity \(disparity) px at \(point)")
            print("convergence at \(distance) (\(layout)): disparity \(disparity) px at \(point)")
            // Depth through Q is unchanged by the shift.
            let (l0, r0) = try #require(classic.project(point))
            let before = try #require(classic.reproject(x: l0.x, y: l0.y, disparity: l0[axis] - r0[axis]))
            let after = try #require(converged.reproject(x: l.x, y: l.y, disparity: disparity))
            #expect(abs(before.z - distance) < 1e-6 * distance)
            #expect(length(after - point) < 1e-6 * distance, "point from Q after convergence: \(after) vs \(point)")
        }
        // Converging twice does not accumulate, and unconverging restores the classic matrices.
        let twice = converged.converged(atDistance: distance)
        #expect(twice.p1 == converged.p1 && twice.p2 == converged.p2)
        let back = converged.unconverged
        #expect(length(back.p1.row0 - classic.p1.row0) < 1e-9 && back.q.rowMajor.elementsEqual(classic.q.rowMajor) { abs($0 - $1) < 1e-9 })
    }

    @Test func nearerPointsHavePositiveFartherNegativeDisparity() throws {
        let r = try Self.calibration.rectification().converged(atDistance: 1000)
        #expect(r.disparity(atDistance: 500) > 0)
        #expect(r.disparity(atDistance: 2000) < 0)
        #expect(abs(r.disparity(atDistance: 1000)) < 1e-9)
        // Both signs of error count: without abs a depth far too small would pass.
        #expect(abs(try #require(r.depth(fromDisparity: r.disparity(atDistance: 730))) - 730) < 1e-9 * 730)
    }

    @Test func registrationHomographyAlignsThePlaneForUnrectifiedPairs() throws {
        // Pinhole cameras (the homography acts on undistorted images).
        var calibration = Self.calibration
        calibration.left.distortion = .none
        calibration.right.distortion = .none
        let distance = 1200.0
        let h = calibration.registrationHomography(atDistance: distance)
        for xy in [SIMD2(-300.0, -200), SIMD2(0, 0), SIMD2(250, 180)] {
            let point = SIMD3(xy.x, xy.y, distance)
            let l = try #require(calibration.left.project(point))
            let r = try #require(calibration.right.project(calibration.extrinsics.apply(point)))
            let mapped = try #require(h.apply(l))
            #expect(length(mapped - r) < 1e-6)
        }
    }

    @Test func triangulationRecoversAPoint() throws {
        let point = SIMD3(120.0, -45, 1700)
        let l = try #require(Self.calibration.left.project(point))
        let r = try #require(Self.calibration.right.project(Self.calibration.extrinsics.apply(point)))
        let recovered = try Self.calibration.triangulate(leftPixel: l, rightPixel: r)
        #expect(length(recovered - point) < 1e-6)
    }
}
