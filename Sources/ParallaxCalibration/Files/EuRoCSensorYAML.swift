import ParallaxGeometry

/// One camera's EuRoC `sensor.yaml` (the EuRoC MAV and TUM VI datasets' layout, which
/// `parallax capture` writes beside each camera's `data.csv` when it knows the calibration):
/// `T_BS` (the camera's pose in the body frame, metres), `resolution`, `camera_model: pinhole`,
/// `intrinsics` (fu, fv, cu, cv), `distortion_model` (`radial-tangential` with k1, k2, p1, p2,
/// or `equidistant` with k1..k4) and `distortion_coefficients`; `rate_hz` when present.
public struct EuRoCSensorYAML: Sendable {
    /// The camera: size, intrinsics and lens.
    public var camera: CameraModel
    /// The camera's pose in the body frame: `p_B = T_BS · p_S`, in metres.
    public var bodyFromCamera: RigidTransform
    /// The camera's frame rate, when the file gives one.
    public var rateHz: Double?

    /// Reads a file's text; `file` names it in errors.
    ///
    /// - Throws: ``CalibrationFormatError`` naming the file, line and field: a missing or
    ///   malformed field, a camera model other than pinhole, a lens model the file format does
    ///   not define, `T_BS` that is not a rigid motion.
    public init(text: String, file: String = "<text>") throws(CalibrationFormatError) {
        let y = try YAMLReader(text: text, file: file)
        if let type = y.node("sensor_type")?.scalar?.string, type != "camera" {
            throw y.error(y.node("sensor_type"), "sensor_type is \(type); a camera's sensor.yaml says camera")
        }
        let resolution = try y.numbers(try y.required("resolution"))
        guard resolution.count == 2, resolution.allSatisfy({ $0 >= 1 && $0 <= 65_536 && $0 == $0.rounded() }) else {
            throw y.error(y.node("resolution"), "resolution must be [width, height] in whole pixels (1 to 65536)")
        }
        let model = try y.string("camera_model")
        guard model == "pinhole" else {
            throw y.error(y.node("camera_model"), "camera_model is \(model); Parallax reads pinhole cameras")
        }
        let k = try y.numbers(try y.required("intrinsics"))
        guard k.count == 4, k.allSatisfy(\.isFinite) else {
            throw y.error(y.node("intrinsics"), "intrinsics must be [fu, fv, cu, cv], four finite numbers")
        }
        let intrinsics = CameraIntrinsics(fx: k[0], fy: k[1], cx: k[2], cy: k[3])
        guard intrinsics.isValid else { throw y.error(y.node("intrinsics"), "intrinsics \(k) are not a valid camera (focal lengths must be positive)") }
        let lensName = try y.string("distortion_model")
        let coefficients = try y.numbers(try y.required("distortion_coefficients"))
        var distortion: LensDistortion
        do {
            distortion = try LensDistortion(modelName: lensName == "radial-tangential" ? "radtan" : lensName, coefficients: coefficients)
            // Radial-tangential all zero: a lens without distortion (what a rectified camera's
            // file says). Equidistant all zero stays the ideal fisheye (r = f·θ).
            if lensName == "radial-tangential" || lensName == "radtan", coefficients.allSatisfy({ $0 == 0 }) { distortion = .none }
        } catch {
            throw y.error(y.node("distortion_model"), error.description)
        }
        let pose = try y.matrix("T_BS", shapes: [(4, 4)]).data
        let rotation = Matrix3x3(rowMajor: [pose[0], pose[1], pose[2], pose[4], pose[5], pose[6], pose[8], pose[9], pose[10]])
        // A rigid motion: orthonormal rotation (to the rounding of a file's printed digits) and [0 0 0 1] below.
        let orthogonality = (rotation.transposed * rotation - .identity).rowMajor.map(abs).max() ?? .infinity
        guard orthogonality < 1e-6, rotation.determinant > 0, Array(pose[12...]) == [0, 0, 0, 1] else {
            throw y.error(y.node("T_BS"), "T_BS is not a rigid motion (its rotation is off by \(orthogonality), or its last row is not 0 0 0 1)")
        }
        camera = CameraModel(size: ImageSize(width: Int(resolution[0]), height: Int(resolution[1])), intrinsics: intrinsics,
                             distortion: distortion)
        bodyFromCamera = RigidTransform(rotation: rotation, translation: SIMD3(pose[3], pose[7], pose[11]))
        rateHz = y.node("rate_hz") == nil ? nil : try y.number(try y.required("rate_hz"))
    }

    /// The stereo calibration of two cameras' files: the left is cam0, the right cam1, and
    /// the extrinsics (left camera frame to right) are `T_BS(right)⁻¹ · T_BS(left)`, in metres.
    public static func stereoCalibration(left: EuRoCSensorYAML, right: EuRoCSensorYAML) -> StereoCalibration {
        StereoCalibration(left: left.camera, right: right.camera,
                          extrinsics: right.bodyFromCamera.inverse.composed(after: left.bodyFromCamera), translationUnit: .metre)
    }
}
