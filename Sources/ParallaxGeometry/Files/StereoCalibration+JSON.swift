/// The Parallax stereo calibration file (JSON), documented in `Calibration/README.md`.
///
///     {"format": "parallax-stereo-calibration", "version": 1,
///      "left": CAMERA, "right": CAMERA,
///      "extrinsics": {"rotation": [9 numbers, row-major], "translation": [tx, ty, tz]},
///      "unit": "m" | "cm" | "mm" | "in" | "unitless"}
///
/// `unit` is the translation's unit (``StereoCalibration/translationUnit``); a file
/// without it (older ones) reads as `unitless`.
///
/// with CAMERA = `{"width", "height", "intrinsics": {"fx", "fy", "cx", "cy", "skew"},
/// "distortion": {"model": "brown" | "fisheye", "coefficients": [...]}}`.
/// Keys Parallax does not know are kept in ``StereoCalibration/extra`` and written back.
extension StereoCalibration {
    /// The value of the `"format"` key.
    public static let fileFormatName = "parallax-stereo-calibration"
    /// The newest file version this library reads and the one it writes.
    public static let fileFormatVersion = 1

    /// Reads a calibration from JSON text. `source` names the file in errors.
    public init(jsonText: String, source: String = "<text>") throws(CalibrationFileError) {
        let reader = FieldReader(file: source)
        let object = try reader.document(jsonText, format: Self.fileFormatName, newestVersion: Self.fileFormatVersion)
        let left = try reader.camera(object["left"], at: "left")
        let right = try reader.camera(object["right"], at: "right")
        let ext = try reader.object(object["extrinsics"], at: "extrinsics")
        let rotationValues = try reader.numbers(ext["rotation"], at: "extrinsics.rotation", count: 9)
        let translationValues = try reader.numbers(ext["translation"], at: "extrinsics.translation", count: 3)
        let rotation = Matrix3x3(rowMajor: rotationValues)
        // A rotation read from a file with a few digits is slightly off; far off is an error.
        let orthogonalityError = (rotation * rotation.transposed - .identity).frobeniusNorm
        guard orthogonalityError < 1e-3, rotation.determinant > 0 else {
            throw .invalid(file: source, key: "extrinsics.rotation",
                           message: "not a rotation matrix (‖R Rᵀ − I‖ = \(orthogonalityError), det = \(rotation.determinant))")
        }
        var unit = LengthUnit.unitless
        if let value = object["unit"] {
            let text = try reader.string(value, at: "unit")
            guard let known = LengthUnit(rawValue: text) else {
                throw .invalid(file: source, key: "unit",
                               message: "expected one of \(LengthUnit.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")), found \"\(text)\"")
            }
            unit = known
        }
        var extra: [String: JSONValue] = [:]
        for (key, value) in object.pairs where !["format", "version", "left", "right", "extrinsics", "unit"].contains(key) {
            extra[key] = value
        }
        self.init(left: left, right: right,
                  extrinsics: RigidTransform(rotation: rotation,
                                             translation: SIMD3(translationValues[0], translationValues[1], translationValues[2])),
                  translationUnit: unit, extra: extra)
    }

    /// Reads the Parallax JSON calibration file at `path`.
    ///
    /// To read any format Parallax writes (its JSON, OpenCV YAML, a pair of ROS
    /// camera_info files), told apart by content, use `CalibrationFile.load(_:)` from
    /// ParallaxCalibration (part of `import Parallax`), as the command-line tool does.
    ///
    /// - Throws: ``CalibrationFileError/notParallaxJSON(file:found:)`` naming what the file
    ///   is when it is not JSON; otherwise as ``init(jsonText:source:)``.
    public init(contentsOfFile path: String) throws(CalibrationFileError) {
        let text: String
        do { text = try FileAccess.readText(atPath: path, as: .calibration) } catch { throw .unreadable(error) }
        let kind = CalibrationTextKind(of: text)
        guard kind == .parallaxJSON else { throw .notParallaxJSON(file: path, found: kind.name) }
        try self.init(jsonText: text, source: path)
    }

    /// The JSON text of this calibration.
    public func jsonText() -> String {
        var root = JSONObject([
            ("format", .string(Self.fileFormatName)),
            ("version", .number(Double(Self.fileFormatVersion))),
            ("left", cameraJSON(left)),
            ("right", cameraJSON(right)),
            ("extrinsics", .object(JSONObject([
                ("rotation", .array(extrinsics.rotation.rowMajor.map(JSONValue.number))),
                ("translation", .array([extrinsics.translation.x, extrinsics.translation.y, extrinsics.translation.z].map(JSONValue.number))),
            ]))),
            ("unit", .string(translationUnit.rawValue)),
        ])
        for key in extra.keys.sorted() { root[key] = extra[key] }
        return JSONValue.object(root).serialized() + "\n"
    }

    /// Writes the calibration to `path` atomically (no partial file on failure).
    public func write(toFile path: String) throws(FileAccessError) {
        try FileAccess.writeAtomically(jsonText(), toPath: path)
    }
}

/// A calibration file that could not be read, with the file and the key at fault.
public enum CalibrationFileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file could not be read (the system's reason).
    case unreadable(FileAccessError)
    /// The file is not JSON; `found` says what it is ("OpenCV YAML", "ROS camera_info").
    case notParallaxJSON(file: String, found: String)
    /// Not valid JSON at `line`:`column` (both from 1).
    case syntax(file: String, line: Int, column: Int, message: String)
    /// A key the format needs is not there (`key` names it, with its path where nested).
    case missing(file: String, key: String)
    /// The value at `key` is of the wrong type or out of range; `message` says what was expected.
    case invalid(file: String, key: String, message: String)
    /// Written by a newer Parallax (its `version` is above the newest this one reads).
    case unsupportedVersion(file: String, version: Int, newestSupported: Int)

    /// One line starting with the file name (and `line:column` for a syntax error) and saying
    /// what is wrong; an unreadable file gives the file-access error's own message.
    public var description: String {
        switch self {
        case .unreadable(let e): return e.description
        case .notParallaxJSON(let f, let found):
            return "\(f): is \(found), not Parallax JSON; CalibrationFile.load(_:) (ParallaxCalibration) reads every "
                + "calibration format Parallax writes"
        case .syntax(let f, let l, let c, let m): return "\(f):\(l):\(c): \(m)"
        case .missing(let f, let k): return "\(f): missing key \"\(k)\""
        case .invalid(let f, let k, let m): return "\(f): \"\(k)\": \(m)"
        case .unsupportedVersion(let f, let v, let n):
            return "\(f): file version \(v) is newer than this Parallax reads (up to \(n)); update Parallax"
        }
    }
}

/// Typed access to the fields of a parsed file, turning every mismatch into
/// a ``CalibrationFileError`` that names the key path.
private struct FieldReader {
    /// The top-level object of a Parallax file, after checking its `format` and `version`.
    func document(_ text: String, format expected: String, newestVersion: Int) throws(CalibrationFileError) -> JSONObject {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: text)
        } catch {
            throw .syntax(file: file, line: error.line, column: error.column, message: error.message)
        }
        let object = try self.object(root, at: "")
        let format = try string(object["format"], at: "format")
        guard format == expected else {
            throw .invalid(file: file, key: "format", message: "expected \"\(expected)\", found \"\(format)\"")
        }
        let version = try number(object["version"], at: "version")
        // Checked as a Double first: converting 1e300 to Int would trap.
        guard version == version.rounded(), version >= 1, version <= Double(Int32.max) else {
            throw .invalid(file: file, key: "version", message: "expected a whole number from 1 to \(Int32.max), found \(version)")
        }
        guard Int(version) <= newestVersion else {
            throw .unsupportedVersion(file: file, version: Int(version), newestSupported: newestVersion)
        }
        return object
    }

    let file: String

    func object(_ v: JSONValue?, at key: String) throws(CalibrationFileError) -> JSONObject {
        guard let v else { throw .missing(file: file, key: key) }
        guard let o = v.object else { throw .invalid(file: file, key: key.isEmpty ? "(top level)" : key, message: "expected an object, found \(v.kindName)") }
        return o
    }

    func string(_ v: JSONValue?, at key: String) throws(CalibrationFileError) -> String {
        guard let v else { throw .missing(file: file, key: key) }
        guard let s = v.string else { throw .invalid(file: file, key: key, message: "expected a string, found \(v.kindName)") }
        return s
    }

    /// Why `v` is not a usable number: not a number at all, or one beyond Double's range
    /// (`1e999` parses as infinity; "found a number" would not say what is wrong).
    static func notFinite(_ v: JSONValue) -> String {
        if let n = v.number, !n.isFinite { return "the number is beyond the range of a double (about ±1.8e308)" }
        return "expected a finite number, found \(v.kindName)"
    }

    func number(_ v: JSONValue?, at key: String) throws(CalibrationFileError) -> Double {
        guard let v else { throw .missing(file: file, key: key) }
        guard let n = v.number, n.isFinite else { throw .invalid(file: file, key: key, message: Self.notFinite(v)) }
        return n
    }

    func numbers(_ v: JSONValue?, at key: String, count: Int? = nil) throws(CalibrationFileError) -> [Double] {
        guard let v else { throw .missing(file: file, key: key) }
        guard let items = v.array else { throw .invalid(file: file, key: key, message: "expected an array of numbers, found \(v.kindName)") }
        var result: [Double] = []
        for (i, item) in items.enumerated() {
            guard let n = item.number, n.isFinite else {
                throw .invalid(file: file, key: "\(key)[\(i)]", message: Self.notFinite(item))
            }
            result.append(n)
        }
        if let count, result.count != count {
            throw .invalid(file: file, key: key, message: "expected \(count) numbers, found \(result.count)")
        }
        return result
    }

    func camera(_ v: JSONValue?, at key: String) throws(CalibrationFileError) -> CameraModel {
        let o = try object(v, at: key)
        let width = try number(o["width"], at: "\(key).width")
        let height = try number(o["height"], at: "\(key).height")
        for (name, value) in [("width", width), ("height", height)] where !(value >= 1 && value == value.rounded() && value < 1e6) {
            throw .invalid(file: file, key: "\(key).\(name)", message: "image size must be positive whole numbers below a million, found \(width)x\(height)")
        }
        let k = try object(o["intrinsics"], at: "\(key).intrinsics")
        let fx = try number(k["fx"], at: "\(key).intrinsics.fx")
        let fy = try number(k["fy"], at: "\(key).intrinsics.fy")
        let cx = try number(k["cx"], at: "\(key).intrinsics.cx")
        let cy = try number(k["cy"], at: "\(key).intrinsics.cy")
        let skew = k["skew"] == nil ? 0 : try number(k["skew"], at: "\(key).intrinsics.skew")
        guard fx > 0, fy > 0 else {
            throw .invalid(file: file, key: "\(key).intrinsics", message: "focal lengths must be positive, found fx = \(fx), fy = \(fy)")
        }
        // A focal length below a pixel, or beyond ten million, describes no camera; the
        // principal point lies within a few image sizes of the image.
        for (name, value) in [("fx", fx), ("fy", fy)] where !(value >= 1 && value <= 1e7) {
            throw .invalid(file: file, key: "\(key).intrinsics.\(name)",
                           message: "\(value) px is not a usable focal length (expected 1 to 10 000 000 px)")
        }
        let span = 10 * max(width, height)
        for (name, value) in [("cx", cx), ("cy", cy)] where !(abs(value) <= span) {
            throw .invalid(file: file, key: "\(key).intrinsics.\(name)",
                           message: "\(value) px is not a usable principal point for a \(Int(width))x\(Int(height)) image")
        }
        guard skew.isFinite, abs(skew) <= 1e7 else {
            throw .invalid(file: file, key: "\(key).intrinsics.skew", message: "\(skew) is not a usable skew")
        }
        let d = try object(o["distortion"], at: "\(key).distortion")
        let model = try string(d["model"], at: "\(key).distortion.model")
        let coefficients = try numbers(d["coefficients"], at: "\(key).distortion.coefficients")
        let distortion: LensDistortion
        do {
            distortion = try LensDistortion(modelName: model, coefficients: coefficients)
        } catch {
            throw .invalid(file: file, key: "\(key).distortion", message: error.description)
        }
        return CameraModel(size: ImageSize(width: Int(width), height: Int(height)),
                           intrinsics: CameraIntrinsics(fx: fx, fy: fy, cx: cx, cy: cy, skew: skew),
                           distortion: distortion)
    }
}

/// A camera as the files write it (CAMERA above).
private func cameraJSON(_ c: CameraModel) -> JSONValue {
    .object(JSONObject([
        ("width", .number(Double(c.size.width))),
        ("height", .number(Double(c.size.height))),
        ("intrinsics", .object(JSONObject([
            ("fx", .number(c.intrinsics.fx)), ("fy", .number(c.intrinsics.fy)),
            ("cx", .number(c.intrinsics.cx)), ("cy", .number(c.intrinsics.cy)),
            ("skew", .number(c.intrinsics.skew)),
        ]))),
        ("distortion", .object(JSONObject([
            ("model", .string(c.distortion.modelName)),
            ("coefficients", .array(c.distortion.coefficients.map(JSONValue.number))),
        ]))),
    ]))
}

/// The Parallax one-camera calibration file (JSON), written by `parallax calibrate --images`:
///
///     {"format": "parallax-camera-calibration", "version": 1, "camera": CAMERA}
///
/// with CAMERA as in the stereo file. Other keys (the calibration's `rms` and `uncertainty`)
/// are kept in ``extra`` and written back.
public struct CameraCalibrationFile: Sendable {
    /// The value of the `"format"` key.
    public static let fileFormatName = "parallax-camera-calibration"
    /// The newest file version this library reads and the one it writes.
    public static let fileFormatVersion = 1

    /// The calibrated camera.
    public var camera: CameraModel
    /// Keys other than `format`, `version` and `camera`, written after them.
    public var extra: [String: JSONValue]

    /// A file for `camera` with `extra` keys.
    public init(camera: CameraModel, extra: [String: JSONValue] = [:]) {
        self.camera = camera
        self.extra = extra
    }

    /// Reads the file's JSON text; `source` names the file in errors.
    public init(jsonText: String, source: String = "<text>") throws(CalibrationFileError) {
        let reader = FieldReader(file: source)
        let object = try reader.document(jsonText, format: Self.fileFormatName, newestVersion: Self.fileFormatVersion)
        camera = try reader.camera(object["camera"], at: "camera")
        extra = [:]
        for (key, value) in object.pairs where !["format", "version", "camera"].contains(key) { extra[key] = value }
    }

    /// Reads the file at `path`.
    public init(contentsOfFile path: String) throws(CalibrationFileError) {
        let text: String
        do { text = try FileAccess.readText(atPath: path, as: .calibration) } catch { throw .unreadable(error) }
        try self.init(jsonText: text, source: path)
    }

    /// The JSON text of the file.
    public func jsonText() -> String {
        var root = JSONObject([
            ("format", .string(Self.fileFormatName)),
            ("version", .number(Double(Self.fileFormatVersion))),
            ("camera", cameraJSON(camera)),
        ])
        for key in extra.keys.sorted() { root[key] = extra[key] }
        return JSONValue.object(root).serialized() + "\n"
    }
}
