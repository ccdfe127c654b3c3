import ParallaxGeometry

/// The lens model a calibration fits, and how a camera's parameters are laid
/// out in the solver's vector: `[fx, fy, cx, cy, distortion…]`.
public enum LensModelKind: String, Hashable, Sendable, CaseIterable {
    /// Brown–Conrady k1, k2, p1, p2.
    case brown4
    /// Brown–Conrady k1, k2, p1, p2, k3 (OpenCV's default).
    case brown5
    /// Brown–Conrady with the rational terms: k1, k2, p1, p2, k3, k4, k5, k6.
    case brown8
    /// Kannala–Brandt fisheye k1..k4 (OpenCV's `cv::fisheye`).
    case fisheye

    /// Number of distortion coefficients.
    public var distortionCount: Int {
        switch self {
        case .brown4, .fisheye: return 4
        case .brown5: return 5
        case .brown8: return 8
        }
    }

    /// Number of parameters per camera: 4 intrinsics (no skew) plus the distortion.
    public var parameterCount: Int { 4 + distortionCount }

    /// Names of the parameters, in vector order, for reports.
    public var parameterNames: [String] {
        let d: [String]
        switch self {
        case .fisheye: d = ["k1", "k2", "k3", "k4"]
        default: d = Array(["k1", "k2", "p1", "p2", "k3", "k4", "k5", "k6"].prefix(distortionCount))
        }
        return ["fx", "fy", "cx", "cy"] + d
    }

    /// The camera described by `p` (``parameterCount`` values from `offset`).
    @inlinable
    public func cameraModel(_ p: [Double], offset: Int = 0, size: ImageSize) -> CameraModel {
        let intrinsics = CameraIntrinsics(fx: p[offset], fy: p[offset + 1], cx: p[offset + 2], cy: p[offset + 3])
        let d = offset + 4
        let distortion: LensDistortion
        switch self {
        case .fisheye:
            distortion = .kannalaBrandt(KannalaBrandt(k1: p[d], k2: p[d + 1], k3: p[d + 2], k4: p[d + 3]))
        case .brown4, .brown5, .brown8:
            var b = BrownConrady(k1: p[d], k2: p[d + 1], p1: p[d + 2], p2: p[d + 3], coefficientCount: distortionCount)
            if self != .brown4 { b.k3 = p[d + 4] }
            if self == .brown8 { (b.k4, b.k5, b.k6) = (p[d + 5], p[d + 6], p[d + 7]) }
            distortion = .brownConrady(b)
        }
        return CameraModel(size: size, intrinsics: intrinsics, distortion: distortion)
    }

    /// The parameter vector of `camera` for this model (missing coefficients are zero, extra ones dropped).
    public func parameters(of camera: CameraModel) -> [Double] {
        let k = camera.intrinsics
        var c = camera.distortion.coefficients
        if camera.distortion.isFisheye != (self == .fisheye) { c = [] }
        c += Array(repeating: 0, count: max(0, distortionCount - c.count))
        return [k.fx, k.fy, k.cx, k.cy] + c.prefix(distortionCount)
    }

    /// What ``parameters(of:)`` would drop of `camera`'s lens: `nil` when this model holds
    /// it exactly, else a description of the lens (for an error naming the model that would
    /// hold it), so that intrinsics held fixed are never changed by a narrower model.
    public func lensItCannotHold(_ camera: CameraModel) -> String? {
        let coefficients = camera.distortion.coefficients
        if camera.distortion.isFisheye != (self == .fisheye) {
            guard coefficients.contains(where: { $0 != 0 }) else { return nil }
            return camera.distortion.isFisheye ? "a fisheye lens" : "a Brown–Conrady lens"
        }
        guard coefficients.dropFirst(distortionCount).contains(where: { $0 != 0 }) else { return nil }
        return "\(coefficients.count) distortion coefficients (\(rawValue) holds \(distortionCount))"
    }

    /// The model for a command-line name: brown4, brown5, brown8 or fisheye.
    public init?(commandLineName: String) {
        self.init(rawValue: commandLineName.lowercased())
    }
}
