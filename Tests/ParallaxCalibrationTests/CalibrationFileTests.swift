import Foundation
import Testing
@testable import ParallaxCalibration
import ParallaxGeometry

@Suite("Calibration files: OpenCV YAML, ROS camera_info, Kalibr camchain")
struct CalibrationFileTests {
    static var examples: URL {
        TestFixtures.directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Calibration/examples")
    }

    static func sample() throws -> StereoCalibration {
        try StereoCalibration(contentsOfFile: TestFixtures.directory.deletingLastPathComponent()
            .appendingPathComponent("opencv/opencv-sample-calibration.json").path)
    }

    /// Every field (sizes, fx, fy, cx, cy, skew, each distortion coefficient, R, T, unit) within `tolerance`,
    /// relative on the intrinsics and T, absolute on the coefficients and R's entries.
    static func expectEqual(_ a: StereoCalibration, _ b: StereoCalibration, tolerance: Double = 0, _ label: String = "") {
        ExchangeFixtures.expectEveryField(label, a, b, intrinsics: tolerance, distortion: tolerance, rotation: tolerance, translation: tolerance)
    }

    @Test func openCVYAMLRoundTripsExactly() throws {
        let calibration = try Self.sample()
        let text = OpenCVStereoFile.text(for: calibration, rectification: try calibration.rectification())
        #expect(text.hasPrefix("%YAML:1.0\n---\n"))
        #expect(text.contains("M1: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: ["))
        for key in ["D1", "M2", "D2", "R", "T", "R1", "R2", "P1", "P2", "Q"] { #expect(text.contains("\n\(key): !!opencv-matrix")) }
        let back = try OpenCVStereoFile.calibration(from: [(text, "round-trip.yml")])
        Self.expectEqual(back, calibration, tolerance: 0, "sample through OpenCV YAML")
    }

    /// Calibration/GUIDE.md: "example stereo calibration files (Parallax JSON, OpenCV YAML, ROS,
    /// Kalibr) are in `examples/`". Each loads through the one loader as the format its README
    /// table says, and all describe the rig of `parallax-calibration.json`: the YAML Parallax
    /// wrote to the bit, the ROS pair up to the rounding of rebuilding R and T from R1, R2 and
    /// P2 (as in `rosCameraInfoRoundTripsAndRebuildsTheRig`), and the Kalibr camchain is
    /// exactly what Parallax writes for it today (the file cannot rot unnoticed).
    @Test func everyExampleLoadsAsTheRigItDescribes() throws {
        func path(_ name: String) -> String { Self.examples.appendingPathComponent(name).path }
        let (rig, format) = try CalibrationFile.load(path("parallax-calibration.json"))
        #expect(format == .parallaxJSON)
        let yaml = try CalibrationFile.load(path("opencv-stereo-written-by-parallax.yml"))
        #expect(yaml.format == .openCVYAML)
        Self.expectEqual(yaml.calibration, rig, tolerance: 0, "opencv-stereo-written-by-parallax.yml")
        let ros = try CalibrationFile.load(path("ros"))
        #expect(ros.format == .rosCameraInfo)
        var rebuilt = ros.calibration
        #expect(rebuilt.translationUnit == .metre)  // ROS's unit; this rig's translation is in squares
        rebuilt.translationUnit = rig.translationUnit
        ExchangeFixtures.expectEveryField("examples/ros", rebuilt, rig, rotation: 7e-16, translation: 6e-15)
        let camchain = try String(contentsOfFile: path("kalibr-camchain.yaml"), encoding: .utf8)
        #expect(camchain == KalibrCamchain.text(for: rig, metersPerUnit: 1).text)
        // OpenCV's own files are the OpenCV sample calibration (readsFilesOpenCVWrote).
        #expect(try CalibrationFile.load(path("opencv-stereo.yml")).format == .openCVYAML)
    }

    @Test func readsFilesOpenCVWrote() throws {
        try #require(FileManager.default.fileExists(atPath: Self.examples.appendingPathComponent("opencv-stereo.yml").path),
                     "Calibration/examples/opencv-stereo.yml is missing from the package")
        let calibration = try Self.sample()
        // OpenCV writes 17 significant digits: every value comes back to the bit.
        let one = try OpenCVStereoFile.calibration(contentsOfFiles: [Self.examples.appendingPathComponent("opencv-stereo.yml").path])
        Self.expectEqual(one, calibration, tolerance: 0, "Calibration/examples/opencv-stereo.yml")
        // The stereo_calib sample's two files, with the size given separately.
        let two = try OpenCVStereoFile.calibration(
            contentsOfFiles: ["opencv-intrinsics.yml", "opencv-extrinsics.yml"].map { Self.examples.appendingPathComponent($0).path },
            size: ImageSize(width: 640, height: 480))
        Self.expectEqual(two, calibration, tolerance: 0, "Calibration/examples/opencv-intrinsics.yml + opencv-extrinsics.yml")
    }

    @Test func malformedOpenCVFileNamesTheLine() {
        let text = "%YAML:1.0\n---\nimage_width: 640\nimage_height: 480\nM1: !!opencv-matrix\n   rows: 3\n   cols: 3\n   dt: d\n   data: [ 1, 2, 3 ]\n"
        #expect {
            _ = try OpenCVStereoFile.calibration(from: [(text, "bad.yml")])
        } throws: { error in
            guard let e = error as? CalibrationFormatError else { return false }
            return e.file == "bad.yml" && e.line == 9 && e.message.contains("3×3")
        }
        let broken = "%YAML:1.0\n---\nM1: [1, 2\nD1: 3\n"
        #expect {
            _ = try OpenCVStereoFile.calibration(from: [(broken, "broken.yml")])
        } throws: { error in
            guard let e = error as? CalibrationFormatError else { return false }
            return e.file == "broken.yml" && e.line != nil && e.description.hasPrefix("broken.yml:")
        }
    }

    @Test func rosCameraInfoRoundTripsAndRebuildsTheRig() throws {
        let calibration = try Self.sample()
        let rectification = try calibration.rectification()
        let (left, right) = ROSCameraInfo.stereoPair(calibration, rectification: rectification)
        #expect(left.text.contains("distortion_model: rational_polynomial\n"))
        #expect(left.text.contains("camera_matrix:\n  rows: 3\n  cols: 3\n  data: ["))
        let leftBack = try ROSCameraInfo(text: left.text, file: "left.yaml")
        let rightBack = try ROSCameraInfo(text: right.text, file: "right.yaml")
        #expect(leftBack == left)
        #expect(rightBack == right)
        var rig = try ROSCameraInfo.stereoCalibration(left: leftBack, right: rightBack)
        // A unitless calibration is written in its own units, which the reader takes for ROS's metres.
        #expect(rig.translationUnit == .metre)
        rig.translationUnit = calibration.translationUnit
        // The cameras come back to the bit, R and T from R1, R2, P2 up to rounding in the rectification
        // (measured 2.2e-16 per entry of R, 1.9e-15 relative on T).
        ExchangeFixtures.expectEveryField("sample through ROS camera_info", rig, calibration, rotation: 7e-16, translation: 6e-15)
    }

    /// Found by `make fuzz` (target ros-camera-info): a quoted camera name with `: ` in it was
    /// written bare, so the file Parallax wrote was not YAML any more.
    @Test func rosCameraNamesWithYAMLSyntaxReadBack() throws {
        let input = "image_width: 4\nimage_height: 2\ncamera_name: \"cam: one\"\n"
            + "camera_matrix: {rows: 3, cols: 3, data: [2, 0, 2, 0, 2, 1, 0, 0, 1]}\n"
            + "distortion_model: equidistant\ndistortion_coefficients: {rows: 1, cols: 4, data: [0.1, 0, 0, 0]}\n"
        let info = try ROSCameraInfo(text: input, file: "fuzz.yaml")
        #expect(info.cameraName == "cam: one")
        #expect(info.text.contains("\ncamera_name: \"cam: one\"\n"))
        #expect(try ROSCameraInfo(text: info.text, file: "written.yaml") == info)
        // Every kind of character the quoting handles, and the plain names ROS writes.
        for name in ["left", "stereo/left_0.1", "", "-x", "# not a comment", "a\"b\\c", "line\nbreak\ttab\r",
                     "\u{7}bell", "\u{85}next\u{2028}\u{2029}", "caméra 🎥", "[1, 2]", "{a: b}", "&anchor *alias"] {
            var named = info
            named.cameraName = name
            let back = try ROSCameraInfo(text: named.text, file: "written.yaml")
            #expect(back.cameraName == name, "\(name.debugDescription) read back as \(back.cameraName.debugDescription)")
        }
        var plain = info
        plain.cameraName = "stereo/left_0.1"
        #expect(plain.text.contains("\ncamera_name: stereo/left_0.1\n"))
    }

    /// Found by probing the fuzz targets opencv-yaml and ros-camera-info by hand: a matrix
    /// whose rows × cols overflows Int trapped in the multiplication.
    @Test func matrixSizesBeyondIntAreErrorsNotATrap() {
        let rows = ["4611686018427387904", "9223372036854775807", "-3"]
        for r in rows {
            let ros = "image_width: 4\nimage_height: 2\ncamera_matrix:\n  rows: \(r)\n  cols: 4\n  data: [1]\n"
                + "distortion_model: plumb_bob\ndistortion_coefficients: {rows: 1, cols: 0, data: []}\n"
            #expect {
                _ = try ROSCameraInfo(text: ros, file: "cam.yaml")
            } throws: { error in
                (error as? CalibrationFormatError).map { $0.line != nil && $0.message.contains("'camera_matrix' declares \(r)×4") } ?? false
            }
            let opencv = "%YAML:1.0\n---\nimage_width: 4\nimage_height: 2\n"
                + "M1: !!opencv-matrix\n   rows: 4\n   cols: \(r)\n   dt: d\n   data: [ 1. ]\n"
            #expect {
                _ = try OpenCVStereoFile.calibration(from: [(opencv, "rig.yml")])
            } throws: { error in
                (error as? CalibrationFormatError).map { $0.line != nil && $0.message.contains("'M1' declares 4×\(r)") } ?? false
            }
        }
    }

    /// An image size out of range in a YAML file is refused where it is read, with its line,
    /// as in a calibration JSON file (not accepted up to Int.max to overflow in the maps).
    @Test(arguments: ["0", "-640", "1000000", "9223372036854775807"])
    func imageSizesOutOfRangeAreRefused(width: String) {
        let ros = "image_width: \(width)\nimage_height: 480\ncamera_matrix: {rows: 3, cols: 3, data: [500, 0, 320, 0, 500, 240, 0, 0, 1]}\n"
            + "distortion_model: plumb_bob\ndistortion_coefficients: {rows: 1, cols: 5, data: [0, 0, 0, 0, 0]}\n"
        #expect {
            _ = try ROSCameraInfo(text: ros, file: "cam.yaml")
        } throws: { error in
            (error as? CalibrationFormatError).map { $0.line == 1 && $0.message.contains("'image_width' must be from 1 to 999999") } ?? false
        }
        let opencv = "%YAML:1.0\n---\nimage_width: \(width)\nimage_height: 480\n"
        #expect {
            _ = try OpenCVStereoFile.calibration(from: [(opencv, "rig.yml")])
        } throws: { error in
            (error as? CalibrationFormatError).map { $0.line == 3 && $0.message.contains("'image_width' must be from 1 to 999999") } ?? false
        }
    }

    /// Found by probing the fuzz target opencv-yaml by hand: `a: ` and 4000 `[` (4 KB)
    /// overflowed the stack in Yams' recursive composer.
    @Test func deeplyNestedYAMLIsRefusedBeforeParsing() throws {
        let flow = "%YAML:1.0\n---\na: " + String(repeating: "[", count: 100_000)
        let block = "image_width: 4\n" + (0..<200).map { String(repeating: " ", count: $0) + "k\($0):\n" }.joined()
        let blockLine = 2 + 128  // the key indented 128 blanks: 2 × (128 + 1) passes 256
        for (text, line) in [(flow, 3), (block, blockLine)] {
            for read in [{ _ = try ROSCameraInfo(text: text, file: "deep.yaml") },
                         { _ = try OpenCVStereoFile.calibration(from: [(text, "deep.yaml")]) }] as [() throws -> Void] {
                #expect {
                    try read()
                } throws: { error in
                    (error as? CalibrationFormatError).map {
                        $0.line == line && $0.message == "nested more than 256 levels deep (a calibration file needs a few)"
                    } ?? false
                }
            }
        }
        // Brackets inside quotes count too, and closing ones do not cancel them: a quoted "]"
        // cannot hide an opening bracket.
        let hidden = "a: " + String(repeating: "[ \"]\", ", count: 300)
        #expect(throws: CalibrationFormatError.self) { try ROSCameraInfo(text: hidden, file: "deep.yaml") }
        #expect(YAMLReader.lineNestedTooDeeply(hidden) == 1)
        // The example files are far from the limit.
        for name in ["opencv-stereo.yml", "opencv-stereo-written-by-parallax.yml", "ros/left.yaml"] {
            let text = try String(contentsOf: Self.examples.appendingPathComponent(name), encoding: .utf8)
            #expect(YAMLReader.lineNestedTooDeeply(text) == nil, "\(name)")
        }
    }

    @Test func rosFileWithAnUnknownModelNamesItsLine() {
        let text = "image_width: 640\nimage_height: 480\ncamera_name: x\ncamera_matrix:\n  rows: 3\n  cols: 3\n  data: [500, 0, 320, 0, 500, 240, 0, 0, 1]\ndistortion_model: banana\ndistortion_coefficients:\n  rows: 1\n  cols: 5\n  data: [0, 0, 0, 0, 0]\n"
        #expect {
            _ = try ROSCameraInfo(text: text, file: "cam.yaml")
        } throws: { error in
            guard let e = error as? CalibrationFormatError else { return false }
            return e.line == 8 && e.message.contains("banana")
        }
    }

    @Test func kalibrCamchainCarriesTheTransformInMetres() throws {
        var calibration = try Self.sample()
        calibration.left.distortion = .brownConrady(BrownConrady(k1: -0.2, k2: 0.05, p1: 0.001, p2: -0.002))
        calibration.right.distortion = .brownConrady(BrownConrady(k1: -0.21, k2: 0.06, p1: 0.0, p2: 0.0))
        let (text, warnings) = KalibrCamchain.text(for: calibration, metersPerUnit: 0.001)
        #expect(warnings.isEmpty)
        #expect(text.hasPrefix("cam0:\n  camera_model: pinhole\n"))
        #expect(text.contains("cam1:\n  T_cn_cnm1:\n  - [ "))
        #expect(text.contains("  distortion_model: radtan\n  distortion_coeffs: [ -0.2, 0.05, 0.001, -0.002 ]\n"))
        #expect(text.contains("  resolution: [ 640, 480 ]\n"))
        // The first row of T_cn_cnm1 ends with T.x in metres.
        let tx = calibration.extrinsics.translation.x * 0.001
        #expect(text.contains(", \(tx) ]\n"))
        let lossy = KalibrCamchain.text(for: try Self.sample(), metersPerUnit: 1).warnings
        #expect(lossy.count == 2)
    }
}
