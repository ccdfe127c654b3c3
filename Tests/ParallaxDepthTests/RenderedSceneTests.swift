import ParallaxCapture
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage
import Testing

/// Rectified pairs rendered from the simulated rig's scene renderer with ideal pinhole cameras
/// side by side, so that the true disparity of every pixel is known from the geometry.
enum RenderedPair {
    /// Two distortion-free cameras of focal length `focal` px with the same principal point,
    /// the right one `baseline` metres to the right of the left (its frame = the left's shifted
    /// by −baseline along x): already rectified, a point at depth Z has disparity f · B / Z.
    static func rig(size: ImageSize, focal: Double, baseline: Double, scene: SimulatedScene) -> SimulatedStereoRig {
        let intrinsics = CameraIntrinsics(fx: focal, fy: focal, cx: Double(size.width - 1) / 2, cy: Double(size.height - 1) / 2)
        let camera = CameraModel(size: size, intrinsics: intrinsics, distortion: .none)
        let extrinsics = RigidTransform(rotation: .identity, translation: SIMD3(-baseline, 0, 0))
        return SimulatedStereoRig(calibration: StereoCalibration(left: camera, right: camera, extrinsics: extrinsics,
                                                                 translationUnit: .metre), scene: scene)
    }

    /// A fronto-parallel textured wall at `depth` metres filling the view.
    static func wall(depth: Double, seed: UInt64 = 5) -> SimulatedScene {
        SimulatedScene(backgroundLevel: 100, planes: [
            .frontoParallel(depth: depth, texture: .valueNoise(cellSize: 0.004 * depth, seed: seed, dark: 30, light: 220)),
        ])
    }
}

@Suite("Semi-global matcher on rendered scenes with exact disparity")
struct RenderedSceneTests {
    @Test("a fronto-parallel wall: the median disparity within 0.1 px of f·B/Z", arguments: [0.9, 1.6, 3.1])
    func wallMedianIsFocalTimesBaselineOverDepth(depth: Double) throws {
        let size = ImageSize(width: 320, height: 240), focal = 277.0, baseline = 0.08
        let rig = RenderedPair.rig(size: size, focal: focal, baseline: baseline, scene: RenderedPair.wall(depth: depth))
        let left = try rig.render(.left), right = try rig.render(.right)
        let matcher = try SemiGlobalMatcher(configuration: .init(disparityCount: 64), size: size)
        let map = try left.withView { l in try right.withView { r in try matcher.match(left: l, right: r) } }
        let truth = focal * baseline / depth
        let valid = map.values.filter(\.isFinite).sorted()
        let median = Double(valid[valid.count / 2])
        print("wall at \(depth) m: truth \(truth) px, median \(median) px, density \(map.density)")
        #expect(abs(median - truth) <= 0.1, "median \(median), truth \(truth)")
        // Depth through Q: the ideal rig's rectification keeps f, the principal point and the
        // baseline, so Z = f·B/d, and a disparity within 0.1 px of the truth d gives a depth
        // within Z · 0.1 / (d − 0.1) of Z (dZ/dd = −Z/d, at the end of the interval).
        let rectification = try rig.calibration.rectification()
        var depths: [Float] = []
        map.depths(through: rectification, into: &depths)
        let finite = depths.filter(\.isFinite).sorted()
        #expect(finite.count == map.validCount, "a depth for every valid disparity")
        let medianDepth = Double(finite[finite.count / 2])
        #expect(abs(medianDepth - depth) <= depth * 0.1 / (truth - 0.1), "median depth \(medianDepth) m, truth \(depth) m")
        // One pixel: the valid one nearest the centre of the middle row. Its winner is a whole
        // disparity next to the truth and its offset within ±½ of it, so it is within 1 px.
        let x = try #require((0..<160).flatMap { [160 - $0, 160 + $0] }.first { map[$0, 120] != nil })
        let point = try #require(map.point(x: x, y: 120, through: rectification))
        #expect(abs(point.z - depth) <= depth * 1 / (truth - 1), "pixel (\(x), 120) at \(point.z) m, truth \(depth) m")
        #expect(abs(point.x - (Double(x) - 159.5) * depth / focal) <= 0.01 * depth, "x through Q: \(point.x) m")
    }
}
