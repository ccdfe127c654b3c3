import ParallaxGeometry

extension StereoCalibration {
    /// The synthetic rig every Parallax speed measurement uses: `parallax
    /// bench`, the package-benchmark suite and `Benchmarks/compare-opencv`
    /// (which reads it from `parallax bench … --export`), so their numbers
    /// compare.
    ///
    /// Two cameras of `size` with a typical wide-angle webcam lens
    /// (horizontal field of view ≈ 77°, barrel distortion k1 = −0.28,
    /// k2 = 0.09, small tangential terms and k3), 6 cm apart, with a slight
    /// relative rotation and offsets so that rectification turns and warps
    /// both images, as on a real rig. Units: metres.
    public static func benchmarkRig(size: ImageSize) -> StereoCalibration {
        let w = Double(size.width), h = Double(size.height)
        func camera(_ dx: Double, _ dy: Double, _ k1: Double) -> CameraModel {
            let intrinsics = CameraIntrinsics(fx: 0.63 * w, fy: 0.63 * w, cx: (w - 1) / 2 + dx * w, cy: (h - 1) / 2 + dy * h)
            let lens = BrownConrady(k1: k1, k2: 0.09, p1: 0.0006, p2: -0.0004, k3: -0.012)
            return CameraModel(size: size, intrinsics: intrinsics, distortion: .brownConrady(lens))
        }
        return StereoCalibration(
            left: camera(0.004, -0.006, -0.28), right: camera(-0.005, 0.003, -0.27),
            extrinsics: RigidTransform(rodrigues: SIMD3(0.006, -0.012, 0.004), translation: SIMD3(-0.06, 0.0004, 0.0009)))
    }
}
