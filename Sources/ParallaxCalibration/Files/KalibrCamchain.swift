import ParallaxGeometry

/// Kalibr's camchain YAML for a stereo pair (cam0 = left, cam1 = right), as Kalibr
/// writes it and its tools (e.g. VINS, ORB-SLAM configuration scripts) read it:
/// `camera_model: pinhole`, `intrinsics: [fu, fv, pu, pv]`, `distortion_model`
/// `radtan` (k1, k2, p1, p2) or `equidistant` (k1..k4), `resolution: [w, h]`, and for
/// cam1 `T_cn_cnm1`, the 4 × 4 transform from cam0's frame into cam1's (OpenCV's R, T).
///
/// Kalibr works in metres, so translations are scaled by `metersPerUnit`
/// (0.001 for a calibration in millimetres).
public enum KalibrCamchain {
    /// Why a calibration cannot be written exactly.
    public struct Warning: Hashable, Sendable, CustomStringConvertible {
        /// What was lost.
        public var message: String
        /// The message itself.
        public var description: String { message }
    }

    /// The YAML text and any information the format cannot carry.
    public static func text(for calibration: StereoCalibration, metersPerUnit: Double,
                            topics: (String, String) = ("/cam0/image_raw", "/cam1/image_raw")) -> (text: String, warnings: [Warning]) {
        var warnings: [Warning] = []
        func camera(_ name: String, _ model: CameraModel, topic: String, transform: RigidTransform?) -> String {
            var out = "\(name):\n"
            if let t = transform {
                out += "  T_cn_cnm1:\n"
                let r = t.rotation.rowMajor
                let tr = t.translation * metersPerUnit
                for row in 0..<3 {
                    out += "  - \(yamlList([r[3 * row], r[3 * row + 1], r[3 * row + 2], tr[row]]))\n"
                }
                out += "  - [ 0.0, 0.0, 0.0, 1.0 ]\n"
            }
            out += "  camera_model: pinhole\n"
            let k = model.intrinsics
            out += "  intrinsics: \(yamlList([k.fx, k.fy, k.cx, k.cy]))\n"
            switch model.distortion {
            case .kannalaBrandt(let f):
                out += "  distortion_model: equidistant\n  distortion_coeffs: \(yamlList([f.k1, f.k2, f.k3, f.k4]))\n"
            case .brownConrady(let b):
                if b.k3 != 0 || b.isRational {
                    warnings.append(Warning(message: "\(name): Kalibr's radtan model has no k3..k6; they were dropped (k3 = \(b.k3))"))
                }
                out += "  distortion_model: radtan\n  distortion_coeffs: \(yamlList([b.k1, b.k2, b.p1, b.p2]))\n"
            case .none:
                out += "  distortion_model: radtan\n  distortion_coeffs: [ 0.0, 0.0, 0.0, 0.0 ]\n"
            }
            if k.skew != 0 { warnings.append(Warning(message: "\(name): Kalibr's pinhole model has no skew; it was dropped")) }
            out += "  resolution: [ \(model.size.width), \(model.size.height) ]\n"
            out += "  rostopic: \(topic)\n"
            return out
        }
        let text = camera("cam0", calibration.left, topic: topics.0, transform: nil)
            + camera("cam1", calibration.right, topic: topics.1, transform: calibration.extrinsics)
        return (text, warnings)
    }

    /// Writes the file atomically.
    public static func write(_ calibration: StereoCalibration, metersPerUnit: Double, toFile path: String) throws(FileAccessError) -> [Warning] {
        let (text, warnings) = text(for: calibration, metersPerUnit: metersPerUnit)
        try FileAccess.writeAtomically(text, toPath: path)
        return warnings
    }
}
