import Foundation
import ParallaxGeometry
import Testing

@Suite struct CameraModelTests {
    /// A 640×480 camera with k1 = −0.4. Its distortion folds at normalized
    /// radius 1/√(3·0.4) ≈ 0.913 (distorted radius ≈ 0.609); with f = 600 the
    /// image corners sit at distorted radius 0.667, past the fold, so the
    /// focal length here is 800 (corner radius 0.5) to keep the whole image invertible.
    static let strongBarrel = CameraModel(
        size: ImageSize(width: 640, height: 480),
        intrinsics: CameraIntrinsics(fx: 800, fy: 790, cx: 319.5, cy: 241.0),
        distortion: .brownConrady(BrownConrady(k1: -0.4, k2: 0.0, p1: 0.001, p2: -0.0005)))

    static let fisheye = CameraModel(
        size: ImageSize(width: 640, height: 480),
        intrinsics: CameraIntrinsics(fx: 230, fy: 231, cx: 320.5, cy: 239.0),
        distortion: .kannalaBrandt(KannalaBrandt(k1: 0.02, k2: -0.005, k3: 0.001, k4: -0.0002)))

    static let rational = CameraModel(
        size: ImageSize(width: 640, height: 480),
        intrinsics: CameraIntrinsics(fx: 500, fy: 500, cx: 320, cy: 240, skew: 0.3),
        distortion: .brownConrady(BrownConrady(k1: 0.35, k2: -0.2, p1: 0.0004, p2: -0.0003, k3: 0.01, k4: 0.62, k5: -0.18, k6: 0.05)))

    /// Every pixel on a 4-pixel grid over the whole image (edges included)
    /// unprojects and reprojects to within the solver's tolerance, 1e-9 px for
    /// these 640×480 images (every pixel is within 1000 px of the origin), plus
    /// 1e-12 px for the rounding of the extra projection of the round trip.
    @Test(arguments: [("brown k1=-0.4", strongBarrel), ("fisheye", fisheye), ("rational", rational)])
    func unprojectThenProjectRoundTripsOverTheWholeImage(name: String, camera: CameraModel) throws {
        var worst = 0.0
        for y in stride(from: -0.5, through: Double(camera.size.height) - 0.5, by: 4) {
            for x in stride(from: -0.5, through: Double(camera.size.width) - 0.5, by: 4) {
                let pixel = SIMD2(x, y)
                let ray = try camera.ray(throughPixel: pixel)
                let back = try #require(camera.project(ray * 3.7))
                worst = max(worst, length(back - pixel))
            }
        }
        #expect(worst <= CameraModel.unprojectionTolerancePixels + 1e-12, "\(name): worst round-trip error \(worst) px")
        print("unproject/project round trip, \(name): worst \(worst) px over the whole image")
        #expect(camera.invertibility().isInvertible, "\(name) must be invertible over its image")
    }

    /// The tolerance is 1e-9 px within 1000 px of the origin and 1e-12 of the distance
    /// beyond; a 12000×9000 image (corners 15 000 px out) unprojects to it everywhere.
    @Test func farPixelsConvergeToTheirDistanceScaledTolerance() throws {
        #expect(CameraModel.unprojectionTolerance(atPixel: SIMD2(600, 800)) == 1e-9)
        #expect(CameraModel.unprojectionTolerance(atPixel: SIMD2(30, 40)) == 1e-9)
        #expect(abs(CameraModel.unprojectionTolerance(atPixel: SIMD2(6000, 8000)) - 1e-8) < 1e-22)
        let camera = CameraModel(
            size: ImageSize(width: 12000, height: 9000),
            intrinsics: CameraIntrinsics(fx: 9000, fy: 9000, cx: 5999.5, cy: 4499.5),
            distortion: .brownConrady(BrownConrady(k1: -0.12, k2: 0.05, p1: 0.0003, p2: -0.0002)))
        var worstRelative = 0.0
        for y in stride(from: -0.5, through: 8999.5, by: 250) {
            for x in stride(from: -0.5, through: 11999.5, by: 250) {
                let pixel = SIMD2(x, y)
                let back = try #require(camera.project(try camera.ray(throughPixel: pixel)))
                // The solver's tolerance at this pixel, plus the rounding of one more
                // projection: a few ulps of a 15 000 px coordinate (about 2e-12 px each).
                let allowed = CameraModel.unprojectionTolerance(atPixel: pixel) + 1e-11
                worstRelative = max(worstRelative, length(back - pixel) / allowed)
            }
        }
        #expect(worstRelative <= 1, "worst round trip \(worstRelative) of its tolerance")
    }

    @Test func projectThenUnprojectRecoversTheRay() throws {
        for camera in [Self.strongBarrel, Self.fisheye] {
            for point in [SIMD3(0.1, -0.2, 1.0), SIMD3(-0.25, 0.18, 1), SIMD3(0.0, 0.0, 2)] {
                let pixel = try #require(camera.project(point))
                let ray = try camera.ray(throughPixel: pixel)
                #expect(length(ray - normalize(point)) < 1e-9)
            }
        }
    }

    @Test func pixelsPastTheFoldAreReportedNotReturned() throws {
        // f = 600: the corners' distorted radius (0.667) exceeds the model's maximum (0.609).
        var camera = Self.strongBarrel
        camera.intrinsics = CameraIntrinsics(fx: 600, fy: 600, cx: 319.5, cy: 239.5)
        camera.distortion = .brownConrady(BrownConrady(k1: -0.4))
        #expect(throws: UnprojectionError.self) { try camera.normalizedCoordinates(ofPixel: SIMD2(-0.5, -0.5)) }
        let report = camera.invertibility()
        #expect(!report.isInvertible)
        #expect(report.failingPixels.contains(SIMD2(-0.5, -0.5)))
        // The centre is fine.
        let centre = try camera.normalizedCoordinates(ofPixel: SIMD2(319.5, 239.5))
        #expect(length(centre) < 1e-12)
    }

    @Test func nonFinitePixelIsAnError() {
        do {
            _ = try Self.strongBarrel.normalizedCoordinates(ofPixel: SIMD2(.nan, 1))
            Issue.record("a NaN pixel unprojected")
        } catch {
            guard case .nonFinitePixel = error else { Issue.record("wrong error \(error)"); return }
        }
    }

    @Test func pointsBehindAPinholeCameraDoNotProject() {
        #expect(Self.strongBarrel.project(SIMD3(0, 0, -1)) == nil)
        #expect(Self.strongBarrel.project(SIMD3(1, 0, 0)) == nil)
        // A fisheye sees 100° off axis.
        let angle = 100.0 * Double.pi / 180
        #expect(Self.fisheye.project(SIMD3(sin(angle), 0, cos(angle))) != nil)
    }

    @Test func fisheyeRaysBeyondNinetyDegreesRoundTrip() throws {
        let camera = CameraModel(size: ImageSize(width: 800, height: 800),
                                 intrinsics: CameraIntrinsics(fx: 200, fy: 200, cx: 399.5, cy: 399.5),
                                 distortion: .kannalaBrandt(KannalaBrandt(k1: 0.01)))
        let angle = 100.0 * Double.pi / 180
        let ray = SIMD3(sin(angle) * 0.6, sin(angle) * 0.8, cos(angle))
        let pixel = try #require(camera.project(ray))
        let back = try camera.ray(throughPixel: pixel)
        #expect(length(back - ray) < 1e-9)
        #expect(throws: UnprojectionError.self) { try camera.normalizedCoordinates(ofPixel: pixel) }
    }
}

