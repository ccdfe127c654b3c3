import Foundation
import ParallaxGeometry
import Testing

@Suite struct MathTests {
    @Test func inverseTimesMatrixIsIdentity() throws {
        let m = Matrix3x3(rowMajor: [4, 7, 2, 3, 6, 1, 2, 5, 3])
        let inv = try #require(m.inverse)
        #expect(((m * inv) - .identity).frobeniusNorm < 1e-12)
        #expect(abs(m.determinant - 9) < 1e-12)
        #expect(Matrix3x3(rowMajor: [1, 2, 3, 2, 4, 6, 0, 0, 1]).inverse == nil)
        let m4 = Matrix4x4(rowMajor: [2, 0, 0, 1, 0, 3, 0, 2, 0, 0, 4, 3, 0, 0, 0, 1])
        let inv4 = try #require(m4.inverse)
        #expect((m4 * inv4).rowMajor.elementsEqual(Matrix4x4.identity.rowMajor) { abs($0 - $1) < 1e-12 })
        #expect(abs(m4.determinant - 24) < 1e-12)
    }

    @Test(arguments: [SIMD3(0.0, 0, 0), SIMD3(0.3, -0.2, 0.1), SIMD3(1e-9, 0, 2e-9), SIMD3(0, 3.14159, 0),
                      SIMD3(2.0, 1.0, -1.5), SIMD3(0.0, 0.0, Double.pi - 1e-7)])
    func rodriguesRoundTrips(vector: SIMD3<Double>) {
        let r = Matrix3x3(rodrigues: vector)
        #expect(((r * r.transposed) - .identity).frobeniusNorm < 1e-12)
        #expect(abs(r.determinant - 1) < 1e-12)
        let back = Matrix3x3(rodrigues: r.rodriguesVector)
        #expect((back - r).frobeniusNorm < 1e-9, "\(vector) → \(r.rodriguesVector)")
        #expect(abs(r.rotationAngle - min(length(vector), 2 * .pi - length(vector))) < 1e-6)
    }

    @Test func quaternionsAgreeWithMatrices() {
        for v in [SIMD3(0.3, -0.2, 0.1), SIMD3(0, 3.1, 0), SIMD3(-2.5, 0.4, 0.9)] {
            let r = Matrix3x3(rodrigues: v)
            let q = Quaternion(r)
            #expect((q.rotationMatrix - r).frobeniusNorm < 1e-12)
            let r2 = Matrix3x3(rodrigues: SIMD3(0.1, 0.2, -0.3))
            #expect(((q * Quaternion(r2)).rotationMatrix - r * r2).frobeniusNorm < 1e-12)
        }
    }

    @Test func rigidTransformsComposeAndInvert() {
        let a = RigidTransform(rodrigues: SIMD3(0.1, 0.2, 0.3), translation: SIMD3(1, 2, 3))
        let b = RigidTransform(rodrigues: SIMD3(-0.3, 0.05, 0.2), translation: SIMD3(-4, 0, 2))
        let p = SIMD3(0.5, -1.5, 7.0)
        #expect(length(a.composed(after: b).apply(p) - a.apply(b.apply(p))) < 1e-12)
        #expect(length(a.inverse.apply(a.apply(p)) - p) < 1e-12)
    }

    @Test func homographyComposeInvertNormalize() throws {
        let h = Homography(Matrix3x3(rowMajor: [1.1, 0.02, 5, -0.01, 0.95, -3, 1e-4, 2e-4, 2]))
        let inv = try #require(h.inverse)
        let p = SIMD2(123.0, -45.0)
        let q = try #require(h.apply(p))
        #expect(length(try #require(inv.apply(q)) - p) < 1e-9)
        #expect(h.normalized.matrix[2, 2] == 1)
        #expect(length(try #require(h.normalized.apply(p)) - q) < 1e-9)
        #expect(length(try #require(inv.composed(after: h).apply(p)) - p) < 1e-9)
    }
}

@Suite struct IntrinsicsTests {
    let k = CameraIntrinsics(fx: 500, fy: 510, cx: 319.5, cy: 239.5)
    let size = ImageSize(width: 640, height: 480)

    @Test func fieldOfViewAndZoom() {
        let fov = k.fieldOfView(for: size)
        // Centred principal point: 2·atan(320/500).
        #expect(abs(fov.horizontal - 2 * atan(320.0 / 500)) < 1e-12)
        #expect(abs(fov.vertical - 2 * atan(240.0 / 510)) < 1e-12)
        let zoomed = k.fieldOfView(for: size, zoom: 2)
        #expect(abs(zoomed.horizontal - 2 * atan(tan(fov.horizontal / 2) / 2)) < 1e-12)
        #expect(fov.diagonal > fov.horizontal && fov.diagonal < fov.horizontal + fov.vertical)
    }

    @Test func resolutionCropAndBinningFollowThePixelCentreConvention() {
        // Halving the resolution: pixel centre x maps to (x + 0.5)/2 − 0.5.
        let half = k.scaled(from: size, to: ImageSize(width: 320, height: 240))
        #expect(half.fx == 250 && half.fy == 255 && half.cx == 159.5 && half.cy == 119.5)
        #expect(k.binned(horizontal: 2, vertical: 2) == half)
        let crop = k.cropped(x: 100, y: 40)
        #expect(crop.cx == 219.5 && crop.cy == 199.5 && crop.fx == 500)
        // The same scene point lands on corresponding pixels.
        let n = SIMD2(0.1, -0.05)
        let p = k.pixel(fromNormalized: n), ph = half.pixel(fromNormalized: n)
        #expect(abs((p.x + 0.5) / 2 - 0.5 - ph.x) < 1e-12)
    }

    @Test func lensFieldOfViewIsWiderWithBarrelDistortion() throws {
        let pinhole = CameraModel(size: size, intrinsics: k)
        let barrel = CameraModel(size: size, intrinsics: k, distortion: .brownConrady(BrownConrady(k1: -0.2)))
        #expect(try barrel.fieldOfView().horizontal > pinhole.fieldOfView().horizontal)
        #expect(abs(try pinhole.fieldOfView().horizontal - k.fieldOfView(for: size).horizontal) < 1e-9)
    }
}

/// A row out of range is a programmer error: it stops the program instead of reading row 2.
@Suite("Matrix subscripts")
struct MatrixSubscriptTests {
    @Test func rowsInRangeReadTheirEntries() {
        let m = Matrix3x4(Matrix3x3(rowMajor: [1, 2, 3, 4, 5, 6, 7, 8, 9]), SIMD3(10, 11, 12))
        #expect(m[2, 3] == 12 && m[0, 0] == 1)
        #expect(Matrix4x4.identity[3, 3] == 1)
    }

    @Test func anOutOfRangeRowTraps() async {
        await #expect(processExitsWith: .failure) { _ = Matrix3x3.identity[3, 0] }
        await #expect(processExitsWith: .failure) { _ = Matrix3x4(Matrix3x3.identity, .zero)[-1, 0] }
        await #expect(processExitsWith: .failure) { _ = Matrix4x4.identity[4, 0] }
    }
}
