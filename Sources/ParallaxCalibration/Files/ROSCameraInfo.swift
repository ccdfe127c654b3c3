import ParallaxGeometry

/// One camera's ROS `camera_info` YAML (the format of camera_calibration_parsers):
/// image_width, image_height, camera_name, camera_matrix, distortion_model
/// (`plumb_bob`, `rational_polynomial` or `equidistant`), distortion_coefficients,
/// rectification_matrix and projection_matrix, each matrix as rows, cols, data.
///
/// A stereo pair is two such files; the right one's projection matrix carries the
/// baseline as `P[0][3] = −f·B` (or `P[1][3]` for a vertical rig), with B in metres:
/// ROS measures lengths in metres (REP 103), and its stereo nodes turn that column into
/// depths in metres. ``stereoPair(_:rectification:leftName:rightName:)`` converts a
/// calibration whose unit is known; ``stereoCalibration(left:right:rightFile:)`` reads the pair
/// back in metres.
public struct ROSCameraInfo: Hashable, Sendable {
    /// The `camera_name` field.
    public var cameraName: String
    /// Size, intrinsics and distortion.
    public var camera: CameraModel
    /// R1 or R2: the rotation into the rectified frame (identity for a mono camera).
    public var rectification: Matrix3x3
    /// P1 or P2: the rectified camera's projection.
    public var projection: Matrix3x4

    /// A camera_info; the projection defaults to `[K | 0]` (a mono camera).
    public init(cameraName: String, camera: CameraModel, rectification: Matrix3x3 = .identity, projection: Matrix3x4? = nil) {
        self.cameraName = cameraName
        self.camera = camera
        self.rectification = rectification
        self.projection = projection ?? Matrix3x4(camera.intrinsics.matrix, .zero)
    }

    /// The ROS name of the distortion model of `camera`.
    static func modelName(_ distortion: LensDistortion) -> String {
        switch distortion {
        case .kannalaBrandt: return "equidistant"
        case .brownConrady(let b): return b.coefficientCount == 8 ? "rational_polynomial" : "plumb_bob"
        case .none: return "plumb_bob"
        }
    }

    /// The distortion as ROS names and lists it: the model (`plumb_bob`, `rational_polynomial`
    /// or `equidistant`) and its coefficients (`plumb_bob` padded to 5, an ideal lens 5 zeros).
    public var distortion: (model: String, coefficients: [Double]) {
        var d = camera.distortion.coefficients
        if case .none = camera.distortion { d = [0, 0, 0, 0, 0] }
        if case .brownConrady(let b) = camera.distortion, b.coefficientCount < 5 { d += [Double](repeating: 0, count: 5 - d.count) }
        return (Self.modelName(camera.distortion), d)
    }

    /// The YAML text.
    public var text: String {
        let d = distortion.coefficients
        func matrix(_ name: String, rows: Int, cols: Int, _ values: [Double]) -> String {
            "\(name):\n  rows: \(rows)\n  cols: \(cols)\n  data: \(yamlList(values))\n"
        }
        return "image_width: \(camera.size.width)\n"
            + "image_height: \(camera.size.height)\n"
            + "camera_name: \(yamlString(cameraName))\n"
            + matrix("camera_matrix", rows: 3, cols: 3, camera.intrinsics.matrix.rowMajor)
            + "distortion_model: \(Self.modelName(camera.distortion))\n"
            + matrix("distortion_coefficients", rows: 1, cols: d.count, d)
            + matrix("rectification_matrix", rows: 3, cols: 3, rectification.rowMajor)
            + matrix("projection_matrix", rows: 3, cols: 4, projection.rowMajor)
    }

    /// Parses camera_info YAML.
    /// - Throws: ``CalibrationFormatError`` with the line of the problem.
    public init(text: String, file: String = "<text>") throws(CalibrationFormatError) {
        let y = try YAMLReader(text: text, file: file)
        let size = ImageSize(width: try y.imageDimension("image_width"), height: try y.imageDimension("image_height"))
        guard !size.isEmpty else { throw y.error(y.node("image_width"), "the image size must be positive") }
        cameraName = y.node("camera_name")?.scalar?.string ?? ""
        let k = try y.matrix("camera_matrix", shapes: [(3, 3)]).data
        let modelNode = try y.required("distortion_model")
        let model = try y.string("distortion_model")
        let d = try y.matrix("distortion_coefficients")
        let distortion: LensDistortion
        do {
            // ROS pads plumb_bob to 5 and may write an empty list for an ideal lens.
            distortion = try LensDistortion(modelName: model, coefficients: d.data.isEmpty ? [0, 0, 0, 0] : d.data)
        } catch {
            throw y.error(modelNode, error.description)
        }
        let intrinsics = CameraIntrinsics(matrix: Matrix3x3(rowMajor: k))
        guard intrinsics.isValid else { throw y.error(y.node("camera_matrix"), "camera_matrix is not a valid camera matrix") }
        camera = CameraModel(size: size, intrinsics: intrinsics, distortion: distortion)
        rectification = y.node("rectification_matrix") == nil ? .identity
            : Matrix3x3(rowMajor: try y.matrix("rectification_matrix", shapes: [(3, 3)]).data)
        projection = y.node("projection_matrix") == nil ? Matrix3x4(intrinsics.matrix, .zero)
            : Matrix3x4(rowMajor: try y.matrix("projection_matrix", shapes: [(3, 4)]).data)
    }

    /// Reads a file.
    public init(contentsOfFile path: String) throws(CalibrationFormatError) {
        let text: String
        do { text = try FileAccess.readText(atPath: path, as: .calibration) } catch {
            throw CalibrationFormatError(file: path, line: nil, message: error.description)
        }
        try self.init(text: text, file: path)
    }

    /// The two files of a rectified stereo calibration.
    ///
    /// The baseline in the right projection matrix is converted to metres when the calibration
    /// records a unit (a calibration in millimetres gets `P[0][3] = −f·B/1000`). A
    /// `LengthUnit.unitless` calibration is written in its own units, which ROS tools (and
    /// ``stereoCalibration(left:right:rightFile:)``) take for metres.
    public static func stereoPair(_ calibration: StereoCalibration, rectification: StereoRectification,
                                  leftName: String = "left", rightName: String = "right") -> (left: ROSCameraInfo, right: ROSCameraInfo) {
        let metresPerUnit = calibration.translationUnit.millimetres.map { $0 / 1000 } ?? 1
        var p2 = rectification.p2
        for row in 0..<3 { p2[row, 3] *= metresPerUnit }
        return (ROSCameraInfo(cameraName: leftName, camera: calibration.left, rectification: rectification.r1, projection: rectification.p1),
                ROSCameraInfo(cameraName: rightName, camera: calibration.right, rectification: rectification.r2, projection: p2))
    }

    /// The stereo calibration two camera_info files describe: `R = R2ᵀ R1` and
    /// `T = R2ᵀ (P2[0][3] / f', P2[1][3] / f', P2[2][3])` (the baseline in the rectified frame),
    /// in metres (`LengthUnit.metre`), ROS's unit.
    ///
    /// - Parameters:
    ///   - left: the left camera's camera_info (R1, P1).
    ///   - right: the right camera's camera_info (R2, P2, whose last column holds the baseline).
    ///   - rightFile: names the right camera's file in errors (its `camera_name` when nil).
    public static func stereoCalibration(left: ROSCameraInfo, right: ROSCameraInfo,
                                         rightFile: String? = nil) throws(CalibrationFormatError) -> StereoCalibration {
        let f = right.projection[0, 0]
        let file = rightFile ?? right.cameraName
        guard f > 0 else { throw CalibrationFormatError(file: file, line: nil, message: "projection_matrix has no focal length") }
        let rectifiedTranslation = SIMD3(right.projection[0, 3] / f, right.projection[1, 3] / f, right.projection[2, 3])
        guard length(rectifiedTranslation) > 0 else {
            throw CalibrationFormatError(file: file, line: nil,
                                         message: "the right camera's projection_matrix has no baseline (P[0][3] = P[1][3] = 0)"
                                             + (rightFile.map { _ in "; is it the left camera's file twice?" } ?? ""))
        }
        let rotation = right.rectification.transposed * left.rectification
        return StereoCalibration(left: left.camera, right: right.camera,
                                 extrinsics: RigidTransform(rotation: rotation, translation: right.rectification.transposed * rectifiedTranslation),
                                 translationUnit: .metre)
    }
}
