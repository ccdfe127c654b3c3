import ParallaxCapture
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage

/// Rendered rectified pairs with exact disparity, for the matcher's benchmarks: the simulated
/// rig's renderer with two distortion-free cameras side by side (focal length 0.8 × width,
/// the right camera `baseline` to the right), so a point at depth Z has disparity f·B/Z.
struct DisparityScene {
    /// The scene's name: wall, tilted or occlusion.
    let name: String
    let rig: SimulatedStereoRig
    /// The range to search.
    let minimumDisparity: Int, disparityCount: Int

    static let baseline = 0.1

    /// The three scenes at `size` for `disparityCount` disparities: a textured wall at
    /// 0.4 · D; a panel turned 35° about the vertical axis (0.25 … 0.55 · D) before a wall at
    /// 0.1 · D; a textured panel at 0.6 · D before a wall whose left half has almost no texture
    /// (levels within ±3 of 120), at 0.15 · D, with occluded bands beside the panel.
    static func all(size: ImageSize, disparityCount: Int) -> [DisparityScene] {
        let focal = 0.8 * Double(size.width)
        func depth(_ disparity: Double) -> Double { focal * baseline / disparity }
        let d = Double(disparityCount)
        func texture(_ seed: UInt64, at z: Double) -> SceneTexture {
            // About 1.5 px per noise cell at the plane's depth.
            .valueNoise(cellSize: 1.5 * z / focal, seed: seed, dark: 30, light: 225)
        }
        let wallDepth = depth(0.4 * d)
        let wall = SimulatedScene(backgroundLevel: 100, planes: [.frontoParallel(depth: wallDepth, texture: texture(3, at: wallDepth))])
        let far = depth(0.1 * d), panel = depth(0.4 * d)
        let tilted = SimulatedScene(backgroundLevel: 100, planes: [
            ScenePlane(pose: RigidTransform(rotation: Matrix3x3(rodrigues: SIMD3(0, 0.61, 0)), translation: SIMD3(0, 0, panel)),
                       halfExtent: SIMD2(0.35 * panel, 0.3 * panel), texture: texture(5, at: panel)),
            .frontoParallel(depth: far, texture: texture(7, at: far)),
        ])
        let back = depth(0.15 * d), front = depth(0.6 * d)
        let occlusion = SimulatedScene(backgroundLevel: 100, planes: [
            ScenePlane(pose: RigidTransform(translation: SIMD3(0.05 * front, 0, front)), halfExtent: SIMD2(0.18 * front, 0.2 * front),
                       texture: texture(11, at: front)),
            // The wall's left half: faint noise only (the matcher has little to go on there).
            ScenePlane(pose: RigidTransform(translation: SIMD3(-back, 0, back)), halfExtent: SIMD2(back, 2 * back),
                       texture: .valueNoise(cellSize: 1.5 * back / focal, seed: 13, dark: 117, light: 123)),
            .frontoParallel(depth: back * 1.0001, texture: texture(17, at: back)),
        ])
        return [("wall", wall), ("tilted", tilted), ("occlusion", occlusion)].map { name, scene in
            DisparityScene(name: name, rig: rig(size: size, focal: focal, scene: scene), minimumDisparity: 0, disparityCount: disparityCount)
        }
    }

    static func rig(size: ImageSize, focal: Double, scene: SimulatedScene) -> SimulatedStereoRig {
        let intrinsics = CameraIntrinsics(fx: focal, fy: focal, cx: Double(size.width - 1) / 2, cy: Double(size.height - 1) / 2)
        let camera = CameraModel(size: size, intrinsics: intrinsics, distortion: .none)
        return SimulatedStereoRig(
            calibration: StereoCalibration(left: camera, right: camera, extrinsics: RigidTransform(translation: SIMD3(-baseline, 0, 0)),
                                           translationUnit: .metre),
            scene: scene)
    }

    /// The true disparity of every left pixel (+∞ where the ray meets nothing) and whether the
    /// right camera sees the same point (not occluded): the point at the left pixel's depth,
    /// projected into the right image, must be the first surface the right camera meets there.
    func truth() throws -> (disparity: DisparityMap, visible: [Bool]) {
        let size = rig.calibration.left.size, focal = rig.calibration.left.intrinsics.fx
        var values = [Float](repeating: .infinity, count: size.width * size.height)
        var visible = [Bool](repeating: false, count: size.width * size.height)
        for y in 0..<size.height {
            for x in 0..<size.width {
                guard let z = rig.depth(atPixel: SIMD2(Double(x), Double(y)), camera: .left) else { continue }
                let disparity = focal * Self.baseline / z
                values[y * size.width + x] = Float(disparity)
                // Seen by the right camera: inside its image (pixel centres span −½ … width − ½) and
                // the first surface there.
                let xr = Double(x) - disparity
                guard xr >= -0.5, xr <= Double(size.width) - 0.5 else { continue }
                let seen = rig.depth(atPixel: SIMD2(xr, Double(y)), camera: .right)
                visible[y * size.width + x] = seen.map { abs($0 - z) <= 1e-6 * z } ?? false
            }
        }
        let map = try DisparityMap(size: size, minimumDisparity: minimumDisparity, disparityCount: disparityCount, values: values)
        return (map, visible)
    }
}
