import ParallaxGeometry

/// One camera in OpenCV FileStorage YAML, with the keys OpenCV's calibration sample
/// (`samples/cpp/calibration.cpp`) writes and reads: `image_width`, `image_height`,
/// `camera_matrix`, `distortion_coefficients` and `avg_reprojection_error`.
public enum OpenCVCameraFile {
    /// The YAML text for `camera`, fitted with RMS reprojection error `rms` (pixels).
    public static func text(for camera: CameraModel, rms: Double) -> String {
        var out = "%YAML:1.0\n---\n"
        out += "image_width: \(camera.size.width)\n"
        out += "image_height: \(camera.size.height)\n"
        if camera.distortion.isFisheye { out += "distortion_model: fisheye\n" }
        let d = camera.distortion.coefficients
        out += "camera_matrix: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: \(yamlList(camera.intrinsics.matrix.rowMajor))\n"
        out += "distortion_coefficients: !!opencv-matrix\n   rows: \(max(d.count, 1))\n   cols: 1\n   dt: d\n   data: \(yamlList(d.isEmpty ? [0] : d))\n"
        out += "avg_reprojection_error: \(yamlNumber(rms))\n"
        return out
    }
}

/// OpenCV FileStorage YAML for stereo calibrations, as OpenCV's `stereo_calib`
/// sample writes them: `%YAML:1.0`, then `!!opencv-matrix` entries (rows, cols,
/// dt, data) named M1, D1, M2, D2 (intrinsics and distortion; K1 and K2 are read as
/// M1 and M2, as OpenCV's Python API names them), R, T (left → right),
/// and R1, R2, P1, P2, Q (rectification).
///
/// One file holds everything when Parallax writes it, plus `image_width` and
/// `image_height` (OpenCV's sample keeps the size out of the files). Reading also
/// accepts the sample's two files (intrinsics.yml and extrinsics.yml) given together.
/// A fisheye calibration adds `distortion_model: fisheye`, since OpenCV's file
/// cannot otherwise tell four fisheye coefficients from four Brown ones.
/// A calibration whose translation has a unit adds `translation_unit` (`"mm"`, `"cm"`,
/// `"m"` or `"in"`): OpenCV's format has no place for the unit, its readers skip keys they
/// do not ask for, and Parallax reads it back, so a distance such as `--convergence 1.5m`
/// converts against the YAML file as against the JSON one.
public enum OpenCVStereoFile {
    /// The YAML text for `calibration`, with rectification when given.
    public static func text(for calibration: StereoCalibration, rectification: StereoRectification?) -> String {
        var out = "%YAML:1.0\n---\n"
        out += "image_width: \(calibration.left.size.width)\n"
        out += "image_height: \(calibration.left.size.height)\n"
        if calibration.left.distortion.isFisheye { out += "distortion_model: fisheye\n" }
        if calibration.translationUnit != .unitless { out += "translation_unit: \"\(calibration.translationUnit.rawValue)\"\n" }
        func matrix(_ name: String, rows: Int, cols: Int, _ values: [Double]) {
            out += "\(name): !!opencv-matrix\n   rows: \(rows)\n   cols: \(cols)\n   dt: d\n   data: \(yamlList(values))\n"
        }
        let d1 = calibration.left.distortion.coefficients, d2 = calibration.right.distortion.coefficients
        matrix("M1", rows: 3, cols: 3, calibration.left.intrinsics.matrix.rowMajor)
        matrix("D1", rows: 1, cols: max(d1.count, 1), d1.isEmpty ? [0] : d1)
        matrix("M2", rows: 3, cols: 3, calibration.right.intrinsics.matrix.rowMajor)
        matrix("D2", rows: 1, cols: max(d2.count, 1), d2.isEmpty ? [0] : d2)
        matrix("R", rows: 3, cols: 3, calibration.extrinsics.rotation.rowMajor)
        let t = calibration.extrinsics.translation
        matrix("T", rows: 3, cols: 1, [t.x, t.y, t.z])
        if let r = rectification {
            matrix("R1", rows: 3, cols: 3, r.r1.rowMajor)
            matrix("R2", rows: 3, cols: 3, r.r2.rowMajor)
            matrix("P1", rows: 3, cols: 4, r.p1.rowMajor)
            matrix("P2", rows: 3, cols: 4, r.p2.rowMajor)
            matrix("Q", rows: 4, cols: 4, r.q.rowMajor)
        }
        return out
    }

    /// Writes the file atomically (temporary file, then rename).
    public static func write(_ calibration: StereoCalibration, rectification: StereoRectification?, toFile path: String) throws(FileAccessError) {
        try FileAccess.writeAtomically(text(for: calibration, rectification: rectification), toPath: path)
    }

    /// Reads a calibration from OpenCV YAML text (one or more documents' keys merged).
    ///
    /// - Parameters:
    ///   - texts: the file contents with their names (intrinsics and extrinsics may be separate files).
    ///   - size: the image size when the files do not carry `image_width`/`image_height`.
    /// - Throws: ``CalibrationFormatError`` with the file and line of the first problem.
    public static func calibration(from texts: [(text: String, file: String)], size: ImageSize? = nil) throws(CalibrationFormatError) -> StereoCalibration {
        let readers = try texts.map { (t) throws(CalibrationFormatError) -> YAMLReader in try YAMLReader(text: t.text, file: t.file) }
        func reader(for key: String) throws(CalibrationFormatError) -> YAMLReader {
            if let r = readers.first(where: { $0.node(key) != nil }) { return r }
            throw CalibrationFormatError(file: texts.map(\.file).joined(separator: " + "), line: nil, message: "missing key '\(key)'")
        }
        var imageSize = size
        var fromFiles: ImageSize?
        for r in readers where r.node("image_width") != nil {
            let given = ImageSize(width: try r.imageDimension("image_width"), height: try r.imageDimension("image_height"))
            if let earlier = fromFiles, earlier != given {
                throw r.error(r.node("image_width"), "image size \(given) here, \(earlier) in the other file; "
                              + "both files must describe images of one size")
            }
            fromFiles = given
            imageSize = given
        }
        guard let imageSize, !imageSize.isEmpty else {
            throw CalibrationFormatError(file: texts.map(\.file).joined(separator: " + "), line: nil,
                                         message: "no image size: the file has no image_width/image_height; give the size explicitly")
        }
        var fisheye = false
        if let r = readers.first(where: { $0.node("distortion_model") != nil }) {
            fisheye = try r.string("distortion_model").lowercased() == "fisheye"
        }
        func camera(_ m: String, _ d: String) throws(CalibrationFormatError) -> CameraModel {
            let mr = try reader(for: m)
            let k = try mr.matrix(m, shapes: [(3, 3)]).data
            let dr = try reader(for: d)
            let dm = try dr.matrix(d)
            guard dm.rows == 1 || dm.cols == 1 else { throw dr.error(dr.node(d), "'\(d)' must be a row or column vector") }
            let distortion: LensDistortion
            do {
                distortion = try LensDistortion(modelName: fisheye ? "fisheye" : "brown", coefficients: dm.data.count == 1 && dm.data[0] == 0 ? [0, 0, 0, 0] : dm.data)
            } catch {
                throw dr.error(dr.node(d), error.description)
            }
            let intrinsics = CameraIntrinsics(matrix: Matrix3x3(rowMajor: k))
            guard intrinsics.isValid else { throw mr.error(mr.node(m), "'\(m)' is not a valid camera matrix") }
            return CameraModel(size: imageSize, intrinsics: intrinsics, distortion: distortion)
        }
        // OpenCV's C++ sample names the camera matrices M1 and M2, its Python API K1 and K2.
        let (m1, m2) = readers.contains { $0.node("M1") != nil } || !readers.contains { $0.node("K1") != nil } ? ("M1", "M2") : ("K1", "K2")
        let left = try camera(m1, "D1"), right = try camera(m2, "D2")
        let rr = try reader(for: "R")
        let r = try rr.matrix("R", shapes: [(3, 3), (3, 1), (1, 3)])
        if r.data.count == 3 {
            // OpenCV's rotation vectors are at most π long; past a full turn the angle is noise.
            let angle = (r.data[0] * r.data[0] + r.data[1] * r.data[1] + r.data[2] * r.data[2]).squareRoot()
            guard angle.isFinite, angle <= 2 * .pi else {
                throw rr.error(rr.node("R"), "'R' as a rotation vector turns \(angle) radians; a rotation vector is at most 2π long")
            }
        }
        let rotation = r.data.count == 3 ? Matrix3x3(rodrigues: SIMD3(r.data[0], r.data[1], r.data[2])) : Matrix3x3(rowMajor: r.data)
        guard abs(rotation.determinant - 1) < 1e-3 else { throw rr.error(rr.node("R"), "'R' is not a rotation (determinant \(rotation.determinant))") }
        let tr = try reader(for: "T")
        let t = try tr.matrix("T", shapes: [(3, 1), (1, 3)]).data
        var unit = LengthUnit.unitless
        if let r = readers.first(where: { $0.node("translation_unit") != nil }) {
            let symbol = try r.string("translation_unit")
            guard let known = LengthUnit(symbol: symbol) else {
                throw r.error(r.node("translation_unit"), "'translation_unit' is \(excerpt(symbol)); expected mm, cm, m or in")
            }
            unit = known
        }
        return StereoCalibration(left: left, right: right,
                                 extrinsics: RigidTransform(rotation: rotation, translation: SIMD3(t[0], t[1], t[2])),
                                 translationUnit: unit)
    }

    /// Reads `paths` (one file, or the intrinsics and extrinsics files of OpenCV's sample).
    public static func calibration(contentsOfFiles paths: [String], size: ImageSize? = nil) throws(CalibrationFormatError) -> StereoCalibration {
        var texts: [(text: String, file: String)] = []
        for path in paths {
            do {
                texts.append((try FileAccess.readText(atPath: path, as: .calibration), path))
            } catch {
                throw CalibrationFormatError(file: path, line: nil, message: error.description)
            }
        }
        return try calibration(from: texts, size: size)
    }
}
