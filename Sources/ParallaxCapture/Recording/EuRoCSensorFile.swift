import Foundation
import ParallaxGeometry

/// EuRoC's per-camera `sensor.yaml`, written beside each camera's `data.csv` (the layout of
/// the EuRoC MAV and TUM VI datasets, which Kalibr, OpenVINS and ORB-SLAM's tools read):
///
///     sensor_type: camera
///     T_BS: {cols: 4, rows: 4, data: [...]}   the camera's pose in the body frame, metres
///     rate_hz: 30
///     resolution: [640, 480]
///     camera_model: pinhole
///     intrinsics: [fu, fv, cu, cv]
///     distortion_model: radial-tangential     (k1, k2, p1, p2) or equidistant (k1..k4)
///     distortion_coefficients: [...]
///
/// The body frame is the left camera's (cam0's `T_BS` is the identity); cam1's maps its points
/// into cam0's frame, the inverse of the calibration's extrinsics. `ParallaxCalibration`'s
/// `CalibrationFile` reads a folder with both files back as a stereo calibration.
public enum EuRoCSensorFile {
    /// Both cameras' files for `calibration` at `rateHz` (`rate_hz` is left out when it is `nil`: unknown).
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` (path: `sensor.yaml`) when the
    ///   format cannot hold the calibration exactly: a translation without a unit (`T_BS` is
    ///   in metres), a Brown–Conrady lens with k3 or rational terms (the format's
    ///   radial-tangential model has k1, k2, p1, p2), or skew.
    public static func texts(for calibration: StereoCalibration, rateHz: Double?,
                             comment: String = "recorded by parallax") throws(CaptureError) -> PerSide<String> {
        guard let millimetres = calibration.translationUnit.millimetres else {
            throw .recording(path: "sensor.yaml", reason: "the calibration's translation has no unit, and T_BS is in metres")
        }
        let metres = millimetres / 1000
        let leftToRight = RigidTransform(rotation: calibration.extrinsics.rotation,
                                         translation: calibration.extrinsics.translation * metres)
        let poses = PerSide(left: RigidTransform.identity, right: leftToRight.inverse)
        var texts = PerSide(repeating: "")
        for side in StereoSide.allCases {
            texts[side] = try text(camera: calibration[side], bodyFromCamera: poses[side], rateHz: rateHz,
                                   comment: "\(comment), cam\(side.rawValue) (\(side))")
        }
        return texts
    }

    /// The files of the cameras a rectification makes: pinhole without distortion (P1's and
    /// P2's intrinsics), the right one offset from the left along the baseline only.
    public static func texts(rectifiedBy rectification: StereoRectification, of calibration: StereoCalibration,
                             rateHz: Double?, comment: String = "recorded by parallax, rectified") throws(CaptureError) -> PerSide<String> {
        let rectified = StereoCalibration(
            left: CameraModel(size: rectification.size, intrinsics: rectification.leftIntrinsics, distortion: .none),
            right: CameraModel(size: rectification.size, intrinsics: rectification.rightIntrinsics, distortion: .none),
            extrinsics: RigidTransform(rotation: .identity, translation: rectification.r2 * calibration.extrinsics.translation),
            translationUnit: calibration.translationUnit)
        return try texts(for: rectified, rateHz: rateHz, comment: comment)
    }

    private static func text(camera: CameraModel, bodyFromCamera pose: RigidTransform, rateHz: Double?,
                             comment: String) throws(CaptureError) -> String {
        let k = camera.intrinsics
        guard k.skew == 0 else {
            throw .recording(path: "sensor.yaml", reason: "the camera has skew (\(k.skew)), which the pinhole model there has no place for")
        }
        let model: String, coefficients: [Double]
        switch camera.distortion {
        case .none:
            (model, coefficients) = ("radial-tangential", [0, 0, 0, 0])
        case .brownConrady(let b):
            guard b.k3 == 0, !b.isRational else {
                throw .recording(path: "sensor.yaml", reason: "the lens has k3 or rational terms (k3 = \(b.k3)), and its radial-tangential "
                                 + "model holds only k1, k2, p1, p2")
            }
            (model, coefficients) = ("radial-tangential", [b.k1, b.k2, b.p1, b.p2])
        case .kannalaBrandt(let f):
            (model, coefficients) = ("equidistant", [f.k1, f.k2, f.k3, f.k4])
        }
        let r: [Double] = pose.rotation.rowMajor
        let t: SIMD3<Double> = pose.translation
        var rows: [[Double]] = []
        for row in 0..<3 { rows.append([r[3 * row], r[3 * row + 1], r[3 * row + 2], t[row]]) }
        rows.append([0, 0, 0, 1])
        let data: String = rows.map { (values: [Double]) -> String in values.map(yamlNumber).joined(separator: ", ") }
            .joined(separator: ",\n         ")
        let intrinsicsText: String = [k.fx, k.fy, k.cx, k.cy].map(yamlNumber).joined(separator: ", ")
        let coefficientsText: String = coefficients.map(yamlNumber).joined(separator: ", ")
        let rateLine: String = rateHz.map { "\nrate_hz: " + yamlNumber($0) } ?? ""
        return """
            # General sensor definitions.
            sensor_type: camera
            comment: \(comment)

            # Sensor extrinsics wrt. the body-frame (the left camera's), metres.
            T_BS:
              cols: 4
              rows: 4
              data: [\(data)]

            # Camera specific definitions.\(rateLine)
            resolution: [\(camera.size.width), \(camera.size.height)]
            camera_model: pinhole
            intrinsics: [\(intrinsicsText)] # fu, fv, cu, cv
            distortion_model: \(model)
            distortion_coefficients: [\(coefficientsText)]

            """
    }
}
