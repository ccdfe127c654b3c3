import Foundation
import Testing
import ParallaxCalibration
import ParallaxGeometry
import Yams

/// The rig of `Tests/Fixtures/exchange` and the values its script wrote into each file
/// (`values.json`, made by `make_exchange_files.py` with OpenCV, numpy and PyYAML).
enum ExchangeFixtures {
    static let directory = TestFixtures.directory.deletingLastPathComponent().appendingPathComponent("exchange")
    static func path(_ name: String) -> String { directory.appendingPathComponent(name).path }

    static func values() throws -> JSONObject {
        let text = try FileAccess.readText(atPath: path("values.json"))
        return try #require(try JSONValue(parsing: text).object, "values.json is not a JSON object")
    }

    static func numbers(_ value: JSONValue?, _ what: String, count: Int) throws -> [Double] {
        let array = value?.array?.compactMap { $0.number }
        let values = try #require(array, "values.json: no list of numbers for \(what)")
        try #require(values.count == count, "values.json: \(what) has \(values.count) values, expected \(count)")
        return values
    }

    /// The rig as the script defined it, T in millimetres (`T_mm`) or metres (`T_m`).
    static func rig(translation key: String, unit: LengthUnit) throws -> StereoCalibration {
        let v = try values()
        let s = try numbers(v["size"], "size", count: 2)
        let size = ImageSize(width: Int(s[0]), height: Int(s[1]))
        func camera(_ side: String) throws -> CameraModel {
            let entry = try #require(v[side]?.object, "values.json: no \(side)")
            return CameraModel(size: size, intrinsics: CameraIntrinsics(matrix: Matrix3x3(rowMajor: try numbers(entry["K"], "\(side).K", count: 9))),
                               distortion: try LensDistortion(modelName: "brown", coefficients: try numbers(entry["D"], "\(side).D", count: 5)))
        }
        let t = try numbers(v[key], key, count: 3)
        return StereoCalibration(left: try camera("left"), right: try camera("right"),
                                 extrinsics: RigidTransform(rotation: Matrix3x3(rowMajor: try numbers(v["R"], "R", count: 9)),
                                                            translation: SIMD3(t[0], t[1], t[2])),
                                 translationUnit: unit)
    }

    /// Largest differences of `read` from `truth` in every field, each named.
    struct Differences: CustomStringConvertible {
        var size = true
        var intrinsics = 0.0
        var distortion = 0.0
        var distortionCounts = true
        var rotation = 0.0
        var translation = 0.0
        var unit = true
        var description: String {
            "sizes equal \(size), intrinsics \(intrinsics) (relative), distortion \(distortion) (absolute, counts equal \(distortionCounts)), "
                + "R \(rotation) (entries), T \(translation) (relative), units equal \(unit)"
        }
    }

    /// Every field: both sizes, fx, fy, cx, cy and skew of both cameras, every distortion coefficient, the
    /// nine entries of R, the three of T and the unit.
    static func differences(_ read: StereoCalibration, _ truth: StereoCalibration) -> Differences {
        var d = Differences()
        d.size = read.left.size == truth.left.size && read.right.size == truth.right.size
        for (a, b) in [(read.left, truth.left), (read.right, truth.right)] {
            let x = a.intrinsics, y = b.intrinsics
            for (p, q) in [(x.fx, y.fx), (x.fy, y.fy), (x.cx, y.cx), (x.cy, y.cy)] { d.intrinsics = max(d.intrinsics, abs(p / q - 1)) }
            // Skew relative to fx: it is zero on one side.
            d.intrinsics = max(d.intrinsics, abs(x.skew - y.skew) / y.fx)
            let c = a.distortion.coefficients, e = b.distortion.coefficients
            d.distortionCounts = d.distortionCounts && c.count == e.count && a.distortion.isFisheye == b.distortion.isFisheye
            for i in 0..<min(c.count, e.count) { d.distortion = max(d.distortion, abs(c[i] - e[i])) }
        }
        for (p, q) in zip(read.extrinsics.rotation.rowMajor, truth.extrinsics.rotation.rowMajor) { d.rotation = max(d.rotation, abs(p - q)) }
        d.translation = length(read.extrinsics.translation - truth.extrinsics.translation) / length(truth.extrinsics.translation)
        d.unit = read.translationUnit == truth.translationUnit
        return d
    }

    /// Checks every field of `read` against `truth` within the bounds (0: exactly).
    static func expectEveryField(_ label: String, _ read: StereoCalibration, _ truth: StereoCalibration,
                                 intrinsics: Double = 0, distortion: Double = 0, rotation: Double = 0, translation: Double = 0) {
        let d = differences(read, truth)
        print("\(label): \(d)")
        #expect(d.size && d.distortionCounts && d.unit, "\(label): \(d)")
        #expect(d.intrinsics <= intrinsics, "\(label): \(d)")
        #expect(d.distortion <= distortion, "\(label): \(d)")
        #expect(d.rotation <= rotation, "\(label): \(d)")
        #expect(d.translation <= translation, "\(label): \(d)")
    }
}

@Suite("Reading calibration files other tools wrote")
struct ForeignCalibrationFileTests {
    /// cv2.FileStorage writes 17 significant digits, so every value comes back to the bit.
    @Test func readsOpenCVsStereoFileExactly() throws {
        let truth = try ExchangeFixtures.rig(translation: "T_mm", unit: .unitless)
        let file = ExchangeFixtures.path("opencv/stereo.yml")
        ExchangeFixtures.expectEveryField("opencv/stereo.yml", try OpenCVStereoFile.calibration(contentsOfFiles: [file]), truth)
        let (loaded, format) = try CalibrationFile.load(file)
        #expect(format == .openCVYAML)
        ExchangeFixtures.expectEveryField("opencv/stereo.yml by content", loaded, truth)
    }

    /// One way to load a calibration: the YAML Parallax writes (`calibrate --opencv-yaml`)
    /// given to the JSON-only `StereoCalibration(contentsOfFile:)` is named for what it is,
    /// with the loader that reads it (it used to fail with "1:1: unexpected character '%'");
    /// `CalibrationFile.load` reads it, as the README shows.
    @Test func theJSONLoaderNamesParallaxsOwnYAMLAndPointsToTheOneLoader() throws {
        let truth = try ExchangeFixtures.rig(translation: "T_mm", unit: .unitless)
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-\(UUID()).yml").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try OpenCVStereoFile.write(truth, rectification: nil, toFile: path)
        #expect {
            _ = try StereoCalibration(contentsOfFile: path)
        } throws: { error in
            (error as? CalibrationFileError) == .notParallaxJSON(file: path, found: "OpenCV YAML")
                && "\(error)".contains("CalibrationFile.load")
        }
        let (loaded, format) = try CalibrationFile.load(path)
        #expect(format == .openCVYAML)
        ExchangeFixtures.expectEveryField("Parallax's own OpenCV YAML", loaded, truth)
    }

    /// Files saved by editors that add a byte-order mark (UTF-8) or write UTF-16 (with one)
    /// read as the same calibration; UTF-16 JSON used to be called "a JPEG image", a UTF-8 mark
    /// refused with parser jargon.
    @Test func byteOrderMarksAndUTF16AreReadAsText() throws {
        let truth = try ExchangeFixtures.rig(translation: "T_mm", unit: .unitless)
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-bom-\(UUID())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let json = truth.jsonText(), yaml = OpenCVStereoFile.text(for: truth, rectification: nil)
        var utf16LE: [UInt8] = [0xFF, 0xFE], utf16BE: [UInt8] = [0xFE, 0xFF]
        for unit in json.utf16 {
            utf16LE += [UInt8(unit & 0xFF), UInt8(unit >> 8)]
            utf16BE += [UInt8(unit >> 8), UInt8(unit & 0xFF)]
        }
        let files: [(String, [UInt8], CalibrationFile.Format)] = [
            ("utf16le.json", utf16LE, .parallaxJSON), ("utf16be.json", utf16BE, .parallaxJSON),
            ("bom.json", [0xEF, 0xBB, 0xBF] + Array(json.utf8), .parallaxJSON),
            ("bom.yml", [0xEF, 0xBB, 0xBF] + Array(yaml.utf8), .openCVYAML),
        ]
        for (name, bytes, expected) in files {
            let path = dir.appendingPathComponent(name).path
            #expect(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
            let (loaded, format) = try CalibrationFile.load(path)
            #expect(format == expected, "\(name): \(format)")
            ExchangeFixtures.expectEveryField(name, loaded, truth)
        }
    }

    @Test func readsOpenCVsPythonNamesExactly() throws {
        let truth = try ExchangeFixtures.rig(translation: "T_mm", unit: .unitless)
        let (loaded, format) = try CalibrationFile.load(ExchangeFixtures.path("opencv/stereo-python-names.yml"))
        #expect(format == .openCVYAML)
        ExchangeFixtures.expectEveryField("opencv/stereo-python-names.yml", loaded, truth)
    }

    /// stereo_calib's two files carry no image size: the library takes it separately, and loading
    /// them by name alone says so; with the size added to one of them they load by name.
    @Test func readsStereoCalibsTwoFilesWithTheSizeGiven() throws {
        let truth = try ExchangeFixtures.rig(translation: "T_mm", unit: .unitless)
        let files = [ExchangeFixtures.path("opencv/intrinsics.yml"), ExchangeFixtures.path("opencv/extrinsics.yml")]
        let read = try OpenCVStereoFile.calibration(contentsOfFiles: files, size: truth.left.size)
        ExchangeFixtures.expectEveryField("opencv/intrinsics.yml + extrinsics.yml", read, truth)
        #expect {
            _ = try CalibrationFile.load(files.joined(separator: ","))
        } throws: { error in
            (error as? CalibrationFormatError)?.message.contains("no image size") == true
        }
        // With the size in one of them, the pair loads by name (`--calibration intrinsics.yml,extrinsics.yml`).
        let (loaded, format) = try CalibrationFile.load(ExchangeFixtures.path("opencv/intrinsics-with-size.yml") + "," + files[1])
        #expect(format == .openCVYAML)
        ExchangeFixtures.expectEveryField("opencv/intrinsics-with-size.yml,extrinsics.yml", loaded, truth)
    }

    /// R stored as a Rodrigues vector: Parallax's rotation of it equals cv2.Rodrigues's to rounding
    /// (measured 8.7e-19 on an entry of about 0.004, its last bit; held to one ulp of the diagonal's 1).
    @Test func readsARodriguesVectorAsOpenCVDoes() throws {
        let truth = try ExchangeFixtures.rig(translation: "T_mm", unit: .unitless)
        let (loaded, _) = try CalibrationFile.load(ExchangeFixtures.path("opencv/stereo-rodrigues.yml"))
        ExchangeFixtures.expectEveryField("opencv/stereo-rodrigues.yml", loaded, truth, rotation: 2.2e-16)
    }

    /// One camera_info as the script wrote it (`values.json`), every field.
    static func expectCameraInfo(_ info: ROSCameraInfo, _ expected: JSONObject, _ label: String) throws {
        func data(_ key: String, count: Int) throws -> [Double] {
            try ExchangeFixtures.numbers(expected[key]?.object?["data"], "\(label).\(key).data", count: count)
        }
        #expect(info.cameraName == expected["camera_name"]?.string, "\(label): camera_name \(info.cameraName)")
        #expect(Double(info.camera.size.width) == expected["image_width"]?.number && Double(info.camera.size.height) == expected["image_height"]?.number,
                "\(label): size \(info.camera.size)")
        let k = try data("camera_matrix", count: 9), d = try data("distortion_coefficients", count: 5)
        let r = try data("rectification_matrix", count: 9), p = try data("projection_matrix", count: 12)
        #expect(info.camera.intrinsics.matrix.rowMajor == k, "\(label): camera_matrix \(info.camera.intrinsics)")
        #expect(expected["distortion_model"]?.string == "plumb_bob")
        #expect(!info.camera.distortion.isFisheye && info.camera.distortion.coefficients == d, "\(label): distortion \(info.camera.distortion)")
        #expect(info.rectification.rowMajor == r, "\(label): rectification_matrix")
        #expect(info.projection.rowMajor == p, "\(label): projection_matrix")
    }

    /// camera_info files as camera_calibration_parsers writes them (every digit): each field reads back
    /// exactly, and the rig rebuilt from R1, R2 and P2 is the script's, in metres, to the rounding in
    /// cv2.stereoRectify. Measured: R entries 1.1e-14, T 3.9e-15 relative; held to about three times.
    @Test func readsROSCameraInfoManagerFiles() throws {
        let expected = try #require(try ExchangeFixtures.values()["ros-camera_info_manager"]?.object)
        for side in ["left", "right"] {
            let info = try ROSCameraInfo(contentsOfFile: ExchangeFixtures.path("ros-camera_info_manager/\(side).yaml"))
            try Self.expectCameraInfo(info, try #require(expected[side]?.object), "ros-camera_info_manager/\(side).yaml")
        }
        let (rig, format) = try CalibrationFile.load(ExchangeFixtures.path("ros-camera_info_manager"))
        #expect(format == .rosCameraInfo)
        ExchangeFixtures.expectEveryField("ros-camera_info_manager", rig, try ExchangeFixtures.rig(translation: "T_m", unit: .metre),
                                          rotation: 3e-14, translation: 1.2e-14)
    }

    /// camera_info files as ROS's camera_calibration writes them (K and P to 5 decimals, R to 8, D to 6,
    /// lists over several lines): each field reads back as written, and the rig rebuilt from the rounded
    /// R1, R2 and P2 is the script's to that rounding. The cameras are exact (the rig's K and D need
    /// no more digits). R = R2ᵀ R1 with every entry of R1 and R2 within 5e-9 is within 3e-8 per entry;
    /// T comes from P2[0][3] = −170.86712 px, within 5e-6 px (3e-8 relative), divided by f' and turned
    /// by R2ᵀ: within 4e-8 relative. Measured: R 5.7e-9, T 1.1e-8.
    @Test func readsROSCameraCalibrationFiles() throws {
        let expected = try #require(try ExchangeFixtures.values()["ros-camera_calibration"]?.object)
        for side in ["left", "right"] {
            let info = try ROSCameraInfo(contentsOfFile: ExchangeFixtures.path("ros-camera_calibration/\(side).yaml"))
            try Self.expectCameraInfo(info, try #require(expected[side]?.object), "ros-camera_calibration/\(side).yaml")
        }
        let (rig, _) = try CalibrationFile.load(ExchangeFixtures.path("ros-camera_calibration/left.yaml") + ","
                                                 + ExchangeFixtures.path("ros-camera_calibration/right.yaml"))
        ExchangeFixtures.expectEveryField("ros-camera_calibration", rig, try ExchangeFixtures.rig(translation: "T_m", unit: .metre),
                                          rotation: 3e-8, translation: 4e-8)
    }

    /// Parallax writes Kalibr camchains but does not read them: a camchain in Kalibr's layout is named.
    @Test func namesAKalibrCamchain() throws {
        let file = ExchangeFixtures.path("kalibr/camchain.yaml")
        #expect {
            _ = try CalibrationFile.load(file)
        } throws: { error in
            (error as? CalibrationFormatError)?.description == "\(file): is a Kalibr camchain, not a calibration Parallax reads (Parallax JSON, OpenCV YAML, or a pair of ROS camera_info files)"
        }
    }
}

/// What Parallax writes, parsed back by Yams's generic YAML reader (not Parallax's readers), every field
/// compared with the calibration it was written from; then the round trips through Parallax's readers.
/// The rig is the exchange rig in millimetres: different cameras, non-zero p1, p2, k3, a skew on the right.
@Suite("Writing calibration files, every field")
struct WrittenCalibrationFileTests {
    static func rig() throws -> StereoCalibration { try ExchangeFixtures.rig(translation: "T_mm", unit: .millimetre) }

    /// A YAML document as a tree of Yams nodes. OpenCV's `%YAML:1.0` line is not YAML 1.1 (the colon), so
    /// it is turned into a comment first, as OpenCV's own readers skip it.
    static func parse(_ text: String) throws -> Node {
        let cleaned = text.hasPrefix("%YAML:1.0\n") ? "#" + text.dropFirst() : Substring(text)
        return try #require(try Yams.compose(yaml: String(cleaned)), "not a YAML document")
    }

    static func number(_ node: Node?, _ what: String) throws -> Double {
        let text = try #require(node?.scalar?.string, "\(what) is not a scalar")
        return try #require(Double(text), "\(what) = '\(text)' is not a number")
    }

    static func numbers(_ node: Node?, _ what: String) throws -> [Double] {
        let sequence = try #require(node?.sequence, "\(what) is not a list")
        return try sequence.enumerated().map { try number($1, "\(what)[\($0)]") }
    }

    /// Every number of the list `node` is a float to YAML 1.1 readers (PyYAML, which ROS's Python tools
    /// and Kalibr use): YAML 1.1's float pattern needs a decimal point, so `1e-05` or `0` would come back
    /// as a string or an integer there. (Pattern from the YAML 1.1 float type, without the sexagesimal form.)
    static func expectYAML11Floats(_ node: Node?, _ what: String) {
        let pattern = /[-+]?[0-9][0-9_]*\.[0-9_]*([eE][-+][0-9]+)?/
        let texts = node?.sequence?.map { $0.scalar?.string ?? "" } ?? []
        #expect(!texts.isEmpty, "\(what) is not a list")
        for text in texts { #expect(text.wholeMatch(of: pattern) != nil, "\(what): '\(text)' is not a YAML 1.1 float") }
    }

    /// A `rows`/`cols`/`data` matrix (OpenCV's and ROS's layout): its shape and values.
    static func matrix(_ node: Node?, _ name: String) throws -> (rows: Int, cols: Int, data: [Double]) {
        let m = try #require(node, "no '\(name)'")
        let rows = try number(m["rows"], "\(name).rows"), cols = try number(m["cols"], "\(name).cols")
        let data = try numbers(m["data"], "\(name).data")
        try #require(data.count == Int(rows * cols), "\(name) is \(rows)×\(cols) with \(data.count) values")
        return (Int(rows), Int(cols), data)
    }

    @Test func openCVYAMLCarriesEveryField() throws {
        let rig = try Self.rig()
        let rectification = try rig.rectification()
        let text = OpenCVStereoFile.text(for: rig, rectification: rectification)
        #expect(text.hasPrefix("%YAML:1.0\n---\n"))
        let root = try Self.parse(text)
        #expect(try Self.number(root["image_width"], "image_width") == 1280 && (try Self.number(root["image_height"], "image_height")) == 720)
        let expected: [(String, Int, Int, [Double])] = [
            ("M1", 3, 3, rig.left.intrinsics.matrix.rowMajor), ("D1", 1, 5, rig.left.distortion.coefficients),
            ("M2", 3, 3, rig.right.intrinsics.matrix.rowMajor), ("D2", 1, 5, rig.right.distortion.coefficients),
            ("R", 3, 3, rig.extrinsics.rotation.rowMajor),
            ("T", 3, 1, [rig.extrinsics.translation.x, rig.extrinsics.translation.y, rig.extrinsics.translation.z]),
            ("R1", 3, 3, rectification.r1.rowMajor), ("R2", 3, 3, rectification.r2.rowMajor),
            ("P1", 3, 4, rectification.p1.rowMajor), ("P2", 3, 4, rectification.p2.rowMajor), ("Q", 4, 4, rectification.q.rowMajor),
        ]
        for (name, rows, cols, values) in expected {
            let m = try Self.matrix(root[name], name)
            #expect(m.rows == rows && m.cols == cols, "\(name) is \(m.rows)×\(m.cols)")
            #expect(m.data == values, "\(name): \(m.data) written, \(values) in the calibration")
            #expect(root[name]?.tag.description == "tag:yaml.org,2002:opencv-matrix", "\(name) tag \(String(describing: root[name]?.tag))")
            #expect(root[name]?["dt"]?.scalar?.string == "d")
        }
        // The right camera's skew is in M2[0][1], where OpenCV keeps it.
        #expect(try Self.matrix(root["M2"], "M2").data[1] == 0.75)
        // Back through Parallax's reader: every field to the bit, the unit from `translation_unit`.
        #expect(rig.translationUnit == .millimetre && root["translation_unit"]?.scalar?.string == "mm")
        ExchangeFixtures.expectEveryField("OpenCV YAML round trip", try OpenCVStereoFile.calibration(from: [(text, "rig.yml")]), rig)
        // A unitless calibration writes no key and reads back unitless; an unknown unit is named with its line.
        var unitless = rig
        unitless.translationUnit = .unitless
        let plain = OpenCVStereoFile.text(for: unitless, rectification: nil)
        #expect(!plain.contains("translation_unit"))
        #expect(try OpenCVStereoFile.calibration(from: [(plain, "rig.yml")]).translationUnit == .unitless)
        let furlongs = plain.replacingOccurrences(of: "image_height: 720\n", with: "image_height: 720\ntranslation_unit: furlong\n")
        #expect {
            try OpenCVStereoFile.calibration(from: [(furlongs, "rig.yml")])
        } throws: { error in
            "\(error)".contains("rig.yml:5: 'translation_unit' is furlong; expected mm, cm, m or in")
        }
    }

    /// The camera_info pair ROS needs: every field, the baseline in metres although the calibration is in
    /// millimetres (P2[0][3] = −f'·B with B in metres, ROS's unit), and back through Parallax's reader.
    @Test func rosCameraInfoCarriesEveryFieldInMetres() throws {
        let rig = try Self.rig()
        let rectification = try rig.rectification()
        let (left, right) = ROSCameraInfo.stereoPair(rig, rectification: rectification)
        for (name, info, camera, r, p) in [("left", left, rig.left, rectification.r1, rectification.p1),
                                           ("right", right, rig.right, rectification.r2, rectification.p2)] {
            let root = try Self.parse(info.text)
            #expect(try Self.number(root["image_width"], "image_width") == 1280 && (try Self.number(root["image_height"], "image_height")) == 720)
            #expect(root["camera_name"]?.scalar?.string == name)
            #expect(root["distortion_model"]?.scalar?.string == "plumb_bob")
            let k = try Self.matrix(root["camera_matrix"], "camera_matrix")
            #expect(k.rows == 3 && k.cols == 3 && k.data == camera.intrinsics.matrix.rowMajor, "\(name): camera_matrix \(k)")
            let d = try Self.matrix(root["distortion_coefficients"], "distortion_coefficients")
            #expect(d.rows == 1 && d.cols == 5 && d.data == camera.distortion.coefficients, "\(name): distortion_coefficients \(d)")
            for key in ["camera_matrix", "distortion_coefficients", "rectification_matrix", "projection_matrix"] {
                Self.expectYAML11Floats(root[key]?["data"], "\(name): \(key)")
            }
            let rm = try Self.matrix(root["rectification_matrix"], "rectification_matrix")
            #expect(rm.rows == 3 && rm.cols == 3 && rm.data == r.rowMajor, "\(name): rectification_matrix \(rm)")
            let pm = try Self.matrix(root["projection_matrix"], "projection_matrix")
            var metres = p
            for row in 0..<3 { metres[row, 3] = p[row, 3] * 0.001 }
            #expect(pm.rows == 3 && pm.cols == 4 && pm.data == metres.rowMajor, "\(name): projection_matrix \(pm.data), expected \(metres.rowMajor)")
        }
        // The right projection's baseline: −f'·B, B = |T| in metres (the rig's 119.8 mm is 0.1198 m).
        let p = try Self.matrix(try Self.parse(right.text)["projection_matrix"], "projection_matrix").data
        print("ROS right P[0][3] \(p[3]), −f'·B \(-p[0] * rig.baseline / 1000)")
        #expect(abs(p[3] / (-p[0] * rig.baseline / 1000) - 1) < 1e-15)
        // Back through Parallax's reader: the cameras to the bit, R and T (in metres) to the rectification's
        // rounding (measured 3.3e-16 per entry of R, 4.5e-15 relative on T; held to about three times).
        var metres = rig
        metres.extrinsics.translation = rig.extrinsics.translation * 0.001
        metres.translationUnit = .metre
        let back = try ROSCameraInfo.stereoCalibration(left: try ROSCameraInfo(text: left.text, file: "left.yaml"),
                                                       right: try ROSCameraInfo(text: right.text, file: "right.yaml"))
        ExchangeFixtures.expectEveryField("ROS round trip", back, metres, rotation: 1e-15, translation: 1.3e-14)
    }

    /// Kalibr's camchain: every field, T_cn_cnm1 = [R | T in metres; 0 0 0 1], and what radtan and the
    /// pinhole model cannot carry (k3, skew) named in warnings rather than dropped silently.
    @Test func kalibrCamchainCarriesEveryFieldItCan() throws {
        let rig = try Self.rig()
        let (text, warnings) = KalibrCamchain.text(for: rig, metersPerUnit: 0.001)
        let root = try Self.parse(text)
        for (name, camera) in [("cam0", rig.left), ("cam1", rig.right)] {
            let cam = try #require(root[name], "no \(name)")
            let k = camera.intrinsics, d = camera.distortion.coefficients
            #expect(cam["camera_model"]?.scalar?.string == "pinhole")
            #expect(try Self.numbers(cam["intrinsics"], "\(name).intrinsics") == [k.fx, k.fy, k.cx, k.cy])
            #expect(cam["distortion_model"]?.scalar?.string == "radtan")
            #expect(try Self.numbers(cam["distortion_coeffs"], "\(name).distortion_coeffs") == Array(d.prefix(4)))
            #expect(try Self.numbers(cam["resolution"], "\(name).resolution") == [1280, 720])
            #expect(cam["rostopic"]?.scalar?.string == "/\(name)/image_raw")
            Self.expectYAML11Floats(cam["intrinsics"], "\(name).intrinsics")
            Self.expectYAML11Floats(cam["distortion_coeffs"], "\(name).distortion_coeffs")
        }
        #expect(root["cam0"]?["T_cn_cnm1"] == nil)
        let rows = try #require(root["cam1"]?["T_cn_cnm1"]?.sequence, "cam1 has no T_cn_cnm1")
        try #require(rows.count == 4, "T_cn_cnm1 has \(rows.count) rows")
        let transform = try rows.enumerated().map { try Self.numbers($1, "T_cn_cnm1[\($0)]") }
        let r = rig.extrinsics.rotation.rowMajor, t = rig.extrinsics.translation * 0.001
        for row in 0..<3 {
            #expect(transform[row] == [r[3 * row], r[3 * row + 1], r[3 * row + 2], t[row]], "T_cn_cnm1 row \(row): \(transform[row])")
        }
        #expect(transform[3] == [0, 0, 0, 1])
        for (index, row) in rows.enumerated() { Self.expectYAML11Floats(row, "T_cn_cnm1[\(index)]") }
        // k3 of both cameras and the right camera's skew.
        #expect(warnings.count == 3, "\(warnings)")
        #expect(warnings.filter { $0.message.contains("k3") }.count == 2 && warnings.contains { $0.message.contains("cam1") && $0.message.contains("skew") })
    }

    /// Parallax's own JSON: every field, the unit and the skew included, to the bit.
    @Test func jsonRoundTripsEveryField() throws {
        let rig = try Self.rig()
        let back = try StereoCalibration(jsonText: rig.jsonText(), source: "rig.json")
        ExchangeFixtures.expectEveryField("JSON round trip", back, rig)
        #expect(back == rig)
    }
}
