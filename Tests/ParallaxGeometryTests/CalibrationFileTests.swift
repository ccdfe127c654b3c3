import Foundation
import ParallaxGeometry
import Testing

@Suite struct CalibrationFileTests {
    static let valid = """
        {"format": "parallax-stereo-calibration", "version": 1,
         "left": {"width": 640, "height": 480,
                  "intrinsics": {"fx": 500.5, "fy": 501, "cx": 320, "cy": 240, "skew": 0},
                  "distortion": {"model": "brown", "coefficients": [-0.2, 0.05, 0.001, -0.002, 0.01]}},
         "right": {"width": 640, "height": 480,
                   "intrinsics": {"fx": 499, "fy": 500, "cx": 318, "cy": 241, "skew": 0},
                   "distortion": {"model": "fisheye", "coefficients": [0.01, -0.002, 0.0003, -0.00004]}},
         "extrinsics": {"rotation": [1, 0, 0, 0, 1, 0, 0, 0, 1], "translation": [-60, 0.5, 0.25]},
         "rig_name": "bench rig", "notes": {"operator": "A"}}
        """

    @Test func readsWritesAndRoundTripsWithExtraKeys() throws {
        let c = try StereoCalibration(jsonText: Self.valid)
        #expect(c.left.intrinsics.fx == 500.5)
        #expect(c.left.distortion.coefficients == [-0.2, 0.05, 0.001, -0.002, 0.01])
        #expect(c.right.distortion.isFisheye)
        #expect(c.extrinsics.translation == SIMD3(-60, 0.5, 0.25))
        #expect(abs(c.baseline - (3600 + 0.25 + 0.0625).squareRoot()) < 1e-12)
        #expect(c.extra["rig_name"] == .string("bench rig"))
        let again = try StereoCalibration(jsonText: c.jsonText())
        #expect(again == c)
    }

    @Test func writesAtomicallyAndReadsBackFromDisk() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("calib.json").path
        let c = try StereoCalibration(jsonText: Self.valid)
        try c.write(toFile: path)
        #expect(try StereoCalibration(contentsOfFile: path) == c)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["calib.json"])
        // Writing into a missing folder fails without leaving anything behind.
        #expect(throws: FileAccessError.self) { try c.write(toFile: dir.appendingPathComponent("no/such/calib.json").path) }
    }

    @Test func syntaxErrorsNameFileLineAndColumn() {
        let broken = "{\n  \"format\": \"parallax-stereo-calibration\",\n  \"version\": 1,,\n}"
        #expect(throws: CalibrationFileError.syntax(file: "rig.json", line: 3, column: 16, message: "expected a key in quotes")) {
            try StereoCalibration(jsonText: broken, source: "rig.json")
        }
    }

    @Test(arguments: [
        ("\"fx\": 500.5", "\"fx\": \"wide\"", "left.intrinsics.fx"),
        ("\"coefficients\": [-0.2, 0.05, 0.001, -0.002, 0.01]", "\"coefficients\": [-0.2, 0.05, 0.001]", "left.distortion"),
        ("\"translation\": [-60, 0.5, 0.25]", "\"translation\": [-60, 0.5]", "extrinsics.translation"),
        ("\"rotation\": [1, 0, 0, 0, 1, 0, 0, 0, 1]", "\"rotation\": [1, 0, 0, 0, 1, 0, 0, 0, 2]", "extrinsics.rotation"),
        ("\"model\": \"brown\"", "\"model\": \"polynomial9\"", "left.distortion"),
        ("\"left\": {\"width\": 640", "\"left\": {\"width\": 0", "left.width"),
    ])
    func invalidValuesNameTheKey(original: String, replacement: String, key: String) throws {
        let text = Self.valid.replacingOccurrences(of: original, with: replacement)
        #expect(text != Self.valid)
        do {
            _ = try StereoCalibration(jsonText: text, source: "rig.json")
            Issue.record("accepted an invalid \(key)")
        } catch {
            guard case .invalid(let file, let k, _) = error else { Issue.record("wrong error \(error)"); return }
            #expect(file == "rig.json" && k == key, "\(error)")
        }
    }

    /// A number too large for a double (`1e999`) is named as that, not as "a number,
    /// expected a finite number" (which says nothing of what is wrong).
    @Test func aNumberBeyondDoubleSaysSo() {
        let text = Self.valid.replacingOccurrences(of: "\"fx\": 500.5", with: "\"fx\": 1e999")
        #expect(throws: CalibrationFileError.invalid(file: "rig.json", key: "left.intrinsics.fx",
                                                    message: "the number is beyond the range of a double (about ±1.8e308)")) {
            try StereoCalibration(jsonText: text, source: "rig.json")
        }
    }

    @Test func missingKeysAndVersionsAreReported() {
        let noRight = Self.valid.replacingOccurrences(of: "\"right\"", with: "\"rigth\"")
        #expect(throws: CalibrationFileError.missing(file: "<text>", key: "right")) { try StereoCalibration(jsonText: noRight) }
        let future = Self.valid.replacingOccurrences(of: "\"version\": 1", with: "\"version\": 7")
        #expect(throws: CalibrationFileError.unsupportedVersion(file: "<text>", version: 7, newestSupported: 1)) {
            try StereoCalibration(jsonText: future)
        }
        #expect(throws: CalibrationFileError.self) { try StereoCalibration(contentsOfFile: "/nonexistent/calib.json") }
    }

    /// Found by probing the fuzz target calibration-json by hand: a version too large for an
    /// Int (1e300) trapped in the conversion meant to check that it is whole.
    @Test func versionsBeyondIntAreInvalidNotATrap() {
        for version in ["1e300", "-1e300", "9223372036854775808", "2147483648", "0", "1.5"] {
            let text = Self.valid.replacingOccurrences(of: "\"version\": 1", with: "\"version\": \(version)")
            #expect(throws: CalibrationFileError.invalid(file: "<text>", key: "version",
                                                         message: "expected a whole number from 1 to 2147483647, found \(Double(version)!)")) {
                try StereoCalibration(jsonText: text)
            }
        }
        let largest = Self.valid.replacingOccurrences(of: "\"version\": 1", with: "\"version\": 2147483647")
        #expect(throws: CalibrationFileError.unsupportedVersion(file: "<text>", version: 2_147_483_647, newestSupported: 1)) {
            try StereoCalibration(jsonText: largest)
        }
    }

    @Test func jsonParserHandlesEscapesAndRejectsGarbage() throws {
        let v = try JSONValue(parsing: #"{"a": "x\"y\u00e9\ud83d\ude00", "b": [1, -2.5e3, true, null]}"#)
        #expect(v.object?["a"] == .string("x\"yé😀"))
        #expect(v.object?["b"] == .array([.number(1), .number(-2500), .bool(true), .null]))
        #expect(try JSONValue(parsing: v.serialized()) == v)
        for bad in ["", "{", "[1,]", "{\"a\" 1}", "01x", "\"unterminated", "{\"a\":1}{"] {
            #expect(throws: JSONSyntaxError.self, "\(bad)") { try JSONValue(parsing: bad) }
        }
    }
}
