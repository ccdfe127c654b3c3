import Foundation
import ParallaxGeometry
import ParallaxImage

/// Renders a stereo pair of a simple scene through the simulated rig's
/// lenses, rectifies it with the convergence plane on the middle panel, and
/// writes the pair, the side-by-side preview and the anaglyph.
///
/// The scene, in the left camera's frame (millimetres): a checkered wall at
/// 3 m, a ringed panel at 1.5 m (the convergence distance, so it shows no
/// colour fringes in the anaglyph) and a small striped panel at 0.9 m.
struct RectifyDemoStep: DemoStep {
    let title = "rectification engine: preview and anaglyph"

    static let convergence = 1500.0

    func run(_ context: DemoContext) async throws {
        let calibration = context.shared["calibration"] as? StereoCalibration ?? GeometryDemoStep.rig
        let left = try Self.render(calibration.left, pose: RigidTransform())
        let right = try Self.render(calibration.right, pose: calibration.extrinsics)
        try left.write(toFile: context.path("rendered-left.png"))
        try right.write(toFile: context.path("rendered-right.png"))

        let start = Date()
        let rectifier = try Rectifier(calibration: calibration, convergenceDistance: Self.convergence,
                                      options: RectificationOptions(alpha: 0))
        try rectifier.prepare(for: .rgb8)
        let built = Date().timeIntervalSince(start)
        var outLeft = try ImageBuffer(format: .rgb8, size: rectifier.outputSize), outRight = outLeft
        let pairStart = Date()
        try left.withView { l in try right.withView { r in try rectifier.rectify(left: l, right: r, into: &outLeft, &outRight) } }
        let pair = Date().timeIntervalSince(pairStart)
        try outLeft.write(toFile: context.path("rectified-left.png"))
        try outRight.write(toFile: context.path("rectified-right.png"))
        try StereoPreview.sideBySide(left: outLeft, right: outRight, layout: rectifier.maps.rectification.layout)
            .write(toFile: context.path("rectified-preview.png"))
        try StereoPreview.anaglyph(left: outLeft, right: outRight).write(toFile: context.path("rectified-anaglyph.png"))
        print(String(format: "   rendered a %@ pair through the rig's lenses; maps built in %.0f ms, pair rectified in %.2f ms on %d threads",
                     "\(left.size)", built * 1000, pair * 1000, rectifier.threadCount))
        print("   wrote rectified-left/right.png, rectified-preview.png (guide lines: features sit on one row) and")
        print("   rectified-anaglyph.png (the ringed panel at \(Int(Self.convergence)) mm is the zero-parallax plane: no colour fringes)")
    }

    /// Ray-traces the scene for a camera whose frame is `pose` applied to the left camera's frame.
    static func render(_ camera: CameraModel, pose: RigidTransform) throws -> ImageBuffer {
        let size = camera.size
        let inverse = pose.rotation.transposed
        let centre = inverse * (-pose.translation)
        var bytes = [UInt8](repeating: 0, count: size.area * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                guard let ray = try? camera.ray(throughPixel: SIMD2(Double(x), Double(y))) else { continue }
                let (r, g, b) = shade(origin: centre, direction: inverse * ray)
                let i = (y * size.width + x) * 3
                bytes[i] = r; bytes[i + 1] = g; bytes[i + 2] = b
            }
        }
        return try ImageBuffer(format: .rgb8, size: size, bytes: bytes)
    }

    /// The colour seen along a ray (left-camera frame, millimetres): the
    /// nearest of the two panels it hits, else the wall.
    static func shade(origin: SIMD3<Double>, direction: SIMD3<Double>) -> (UInt8, UInt8, UInt8) {
        func hit(_ depth: Double) -> SIMD2<Double>? {
            guard direction.z > 1e-9 else { return nil }
            let s = (depth - origin.z) / direction.z
            guard s > 0 else { return nil }
            return SIMD2(origin.x + s * direction.x, origin.y + s * direction.y)
        }
        if let p = hit(900), abs(p.x + 250) < 110, abs(p.y - 60) < 160 {
            // Near panel: diagonal stripes.
            let stripe = (Int(((p.x + p.y) / 18).rounded(.down)) & 1) == 0
            return stripe ? (230, 90, 40) : (250, 220, 120)
        }
        if let p = hit(convergence), abs(p.x - 80) < 330, abs(p.y + 20) < 250 {
            // Convergence panel: rings around its centre.
            let r = ((p.x - 80) * (p.x - 80) + (p.y + 20) * (p.y + 20)).squareRoot()
            let v = 0.5 + 0.5 * cos(r / 14)
            return (UInt8(40 + 180 * v), UInt8(60 + 170 * v), UInt8(200 - 60 * v))
        }
        guard let p = hit(3000) else { return (0, 0, 0) }
        let check = (Int((p.x / 200).rounded(.down)) + Int((p.y / 200).rounded(.down))) & 1 == 0
        return check ? (70, 110, 70) : (190, 200, 185)
    }
}
