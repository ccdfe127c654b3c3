import Foundation
import ParallaxCalibration
import ParallaxGeometry
import Testing

@Suite struct RectificationCommandTests {
    let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path

    /// `cv2.stereoRectify`'s figures for this sample (alpha 0, CALIB_ZERO_DISPARITY), from the
    /// geometry suite's fixture (Tests/ParallaxGeometryTests/Fixtures/make_fixtures.py).
    func openCVReference() throws -> (rig: StereoCalibration, figures: JSONObject) {
        let path = ParallaxCLI.packageRoot.appendingPathComponent("Tests/ParallaxGeometryTests/Fixtures/stereo-rectify-reference.json").path
        let reference = try JSONValue(parsing: try String(contentsOfFile: path, encoding: .utf8))
        let rig = try #require(reference.object?["rigs"]?.object?["opencv-sample"], "no rig 'opencv-sample' in \(path)")
        let figures = try #require(reference.object?["cases"]?.array?.compactMap(\.object).first {
            $0["rig"]?.string == "opencv-sample" && $0["alpha"]?.number == 0 && $0["zero_disparity"] == .bool(true)
                && $0["new_size"]?.array?.compactMap(\.number) == [0, 0]
        }, "no opencv-sample case at alpha 0 in \(path)")
        return (try StereoCalibration(jsonText: rig.serialized(), source: path), figures)
    }

    @Test func jsonOutputHasTheDocumentedKeysAndOpenCVsNumbers() throws {
        let result = try ParallaxCLI.run(["rectification", "--calibration", sample, "--alpha", "0", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONValue(parsing: result.stdout).object)
        // OpenCV's figures are for the same calibration as the file the command read.
        let (rig, opencv) = try openCVReference()
        let file = try StereoCalibration(contentsOfFile: sample)
        #expect(file.left == rig.left && file.right == rig.right && file.extrinsics == rig.extrinsics)
        // Every matrix within the bound StereoRectificationTests derives (both compute in double
        // precision along the same steps: a few dozen roundings, 2e-14 of the matrix's largest
        // entry), and OpenCV's exact zeros exactly zero.
        for (key, count) in [("R1", 9), ("R2", 9), ("P1", 12), ("P2", 12), ("Q", 16)] {
            let printed = object[key]?.array?.compactMap { $0.number }, reference = opencv[key]?.array?.compactMap { $0.number }
            let mine = try #require(printed, "missing \(key)"), theirs = try #require(reference, "OpenCV's \(key)")
            try #require(mine.count == count && theirs.count == count, "\(key): \(mine.count) entries, OpenCV \(theirs.count)")
            let scale = theirs.map(abs).max() ?? 0
            let worst = zip(mine, theirs).map { abs($0 - $1) }.max() ?? .infinity
            #expect(worst <= 2e-14 * scale, "\(key) differs from cv2.stereoRectify's by \(worst / scale) of its largest entry")
            #expect(zip(mine, theirs).allSatisfy { $1 != 0 || $0 == 0 }, "\(key): OpenCV's zeros")
        }
        for key in ["roi1", "roi2"] {
            #expect(object[key]?.array?.compactMap(\.number) == opencv[key]?.array?.compactMap(\.number), "\(key)")
        }
    }

    @Test func convergenceAndSizeChangeTheMatrices() throws {
        let plain = try ParallaxCLI.run(["rectification", "--calibration", sample, "--json"])
        let converged = try ParallaxCLI.run(["rectification", "--calibration", sample, "--json", "--convergence", "30", "--size", "800x600"])
        #expect(plain.status == 0 && converged.status == 0)
        let a = try #require(try JSONValue(parsing: plain.stdout).object?["P2"]?.array?.compactMap { $0.number })
        let b = try #require(try JSONValue(parsing: converged.stdout).object?["P2"]?.array?.compactMap { $0.number })
        #expect(a[0] != b[0] && a[2] != b[2])
        // The readable form mentions the plane.
        let readable = try ParallaxCLI.run(["rectification", "--calibration", sample, "--convergence", "30"])
        #expect(readable.stdout.contains("convergence plane at 30"))
    }

    /// The sample with a recorded unit (its translation read as `unit`).
    func sample(withUnit unit: String, in dir: URL) throws -> String {
        var text = try String(contentsOfFile: sample, encoding: .utf8)
        text = text.replacingOccurrences(of: "\"format\"", with: "\"unit\": \"\(unit)\", \"format\"")
        let path = dir.appendingPathComponent("rig-\(unit).json").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func convergenceUnitsConvertAgainstTheRecordedUnitOrAreRefused() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        func distance(_ calibration: String, _ convergence: String) throws -> Double? {
            let result = try ParallaxCLI.run(["rectification", "--calibration", calibration, "--json", "--convergence", convergence])
            guard result.status == 0 else { return nil }
            return try JSONValue(parsing: result.stdout).object?["convergence_distance"]?.number
        }
        // The sample's baseline is 3.33 units. Recorded in centimetres, 1.5 m is 150 (not 15 m).
        #expect(try distance(try sample(withUnit: "cm", in: dir), "1.5m") == 150)
        #expect(try distance(try sample(withUnit: "mm", in: dir), "1.5m") == 1500)
        #expect(try distance(try sample(withUnit: "mm", in: dir), "30") == 30)
        // A unit against a file that records none (the sample as OpenCV's tools wrote it) is refused.
        let unitless = try ParallaxCLI.run(["rectification", "--calibration", sample, "--convergence", "1.5m"])
        #expect(unitless.status != 0 && unitless.stderr.contains("records no unit"), "\(unitless.stderr)")
        // A bare 1.5 on a millimetre rig is nearer than its 3.3 mm baseline: refused with the shift.
        let near = try ParallaxCLI.run(["rectification", "--calibration", try sample(withUnit: "mm", in: dir), "--convergence", "1.5"])
        #expect(near.status != 0 && near.stderr.contains("nearer than the baseline") && near.stderr.contains("px"), "\(near.stderr)")
        // A telephoto rig (focal length × 10) at 4 units: beyond the baseline, but the images
        // would shift by about 4 400 px, more than their width: nothing in view.
        var telephoto = try StereoCalibration(contentsOfFile: sample)
        for side in [\StereoCalibration.left, \StereoCalibration.right] {
            telephoto[keyPath: side].intrinsics.fx *= 10
            telephoto[keyPath: side].intrinsics.fy *= 10
        }
        let telephotoPath = dir.appendingPathComponent("telephoto.json").path
        try telephoto.write(toFile: telephotoPath)
        let blind = try ParallaxCLI.run(["rectification", "--calibration", telephotoPath, "--convergence", "4"])
        #expect(blind.status != 0 && blind.stderr.contains("nothing would be in view"), "\(blind.stderr)")
        // rectify refuses it before writing anything.
        let out = dir.appendingPathComponent("l.png").path
        let rectify = try ParallaxCLI.run(["rectify", "--calibration", try sample(withUnit: "mm", in: dir),
                                           "--left", "/usr/share/doc/opencv-doc/examples/data/left01.jpg",
                                           "--right", "/usr/share/doc/opencv-doc/examples/data/right01.jpg",
                                           "--output-left", out, "--output-right", dir.appendingPathComponent("r.png").path,
                                           "--convergence", "1.5"])
        #expect(rectify.status != 0 && !FileManager.default.fileExists(atPath: out))
    }

    /// Every printed length carries its unit: the calibration's recorded one, or "board units"
    /// said as such (it used to print `baseline 3.3358` and `convergence plane at 1500.0`).
    @Test("the readable rectification prints the baseline and the convergence plane with their unit")
    func printedLengthsHaveTheirUnit() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let millimetres = try ParallaxCLI.run(["rectification", "--calibration", try sample(withUnit: "mm", in: dir),
                                               "--convergence", "1.5m"])
        #expect(millimetres.stdout.contains("baseline 3.3358 mm") && millimetres.stdout.contains("convergence plane at 1500 mm"),
                "\(millimetres.stdout)")
        let unitless = try ParallaxCLI.run(["rectification", "--calibration", sample, "--convergence", "30"])
        #expect(unitless.stdout.contains("baseline 3.3358 (board units: the calibration records no unit)")
                && unitless.stdout.contains("convergence plane at 30 (board units"), "\(unitless.stdout)")
    }

    @Test func badInputIsAClearError() throws {
        let missing = try ParallaxCLI.run(["rectification", "--calibration", "/nonexistent/rig.json"])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("/nonexistent/rig.json"))
        let badSize = try ParallaxCLI.run(["rectification", "--calibration", sample, "--size", "big"])
        #expect(badSize.status != 0 && badSize.stderr.contains("--size"))
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let broken = dir.appendingPathComponent("broken.json")
        try "{\"format\": \"parallax-stereo-calibration\", \"version\": 1, \"left\": 3}".write(to: broken, atomically: true, encoding: .utf8)
        let malformed = try ParallaxCLI.run(["rectification", "--calibration", broken.path])
        #expect(malformed.status != 0 && malformed.stderr.contains("\"left\""), "\(malformed.stderr)")
    }
}

/// `--calibration` reads every format Parallax writes, told apart by content.
@Suite("The CLI reads what it writes")
struct CalibrationFormatsTests {
    static let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path

    /// P1, P2 and Q from `rectification --json`.
    static func figures(_ calibration: String) throws -> [Double] {
        let result = try ParallaxCLI.run(["rectification", "--calibration", calibration, "--alpha", "0", "--json"])
        #expect(result.status == 0, "\(calibration): \(result.stderr)")
        let object = try #require(try JSONValue(parsing: result.stdout).object)
        return ["P1", "P2", "Q"].flatMap { key in (object[key]?.array ?? []).flatMap { $0.array?.compactMap(\.number) ?? [$0.number ?? .nan] } }
    }

    /// Issue: "OpenCV YAML written by `calibrate` loses the unit, so `--convergence 1.5m` is
    /// refused while the same calibration as JSON works". The YAML `calibrate --opencv-yaml`
    /// writes (`OpenCVStereoFile.text`) now carries `translation_unit`, and a distance with a
    /// unit converts against it exactly as against the JSON. Mutation: dropping the key from
    /// the writer makes the YAML run refuse the metres.
    @Test("the OpenCV YAML Parallax writes records its unit: --convergence 1.5m works on it as on the JSON")
    func openCVYAMLKeepsTheUnit() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        var calibration = try StereoCalibration(contentsOfFile: Self.sample)
        calibration.translationUnit = .millimetre
        let json = dir.appendingPathComponent("rig.json").path, yaml = dir.appendingPathComponent("rig.yml").path
        try calibration.write(toFile: json)
        try OpenCVStereoFile.text(for: calibration, rectification: nil).write(toFile: yaml, atomically: true, encoding: .utf8)
        var outputs: [String] = []
        for file in [json, yaml] {
            let result = try ParallaxCLI.run(["rectification", "--calibration", file, "--convergence", "1.5m", "--json"])
            #expect(result.status == 0, "\(file): \(result.stderr)")
            outputs.append(result.stdout)
        }
        #expect(outputs.count == 2 && outputs[0] == outputs[1] && outputs[0].contains("1500"), "\(outputs)")
    }

    @Test("OpenCV YAML (M1 or K1 names) and ROS camera_info pairs give the rectification the JSON gives")
    func everyFormatGivesTheSameRectification() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        let calibration = try StereoCalibration(contentsOfFile: Self.sample)
        let rectification = try calibration.rectification(RectificationOptions(alpha: 0))
        let yaml = dir.appendingPathComponent("rig.yml").path
        try OpenCVStereoFile.text(for: calibration, rectification: rectification).write(toFile: yaml, atomically: true, encoding: .utf8)
        let pythonNames = dir.appendingPathComponent("python.yaml").path
        try OpenCVStereoFile.text(for: calibration, rectification: rectification)
            .replacingOccurrences(of: "M1:", with: "K1:").replacingOccurrences(of: "M2:", with: "K2:")
            .write(toFile: pythonNames, atomically: true, encoding: .utf8)
        let ros = dir.appendingPathComponent("ros")
        try fm.createDirectory(at: ros, withIntermediateDirectories: true)
        let (left, right) = ROSCameraInfo.stereoPair(calibration, rectification: rectification)
        try left.text.write(to: ros.appendingPathComponent("left.yaml"), atomically: true, encoding: .utf8)
        try right.text.write(to: ros.appendingPathComponent("right.yaml"), atomically: true, encoding: .utf8)

        let expected = try Self.figures(Self.sample)
        #expect(expected.count == 12 + 12 + 16)
        for source in [yaml, pythonNames, ros.path, ros.path + "/left.yaml," + ros.path + "/right.yaml"] {
            let got = try Self.figures(source)
            #expect(got.count == expected.count, "\(source)")
            for (a, b) in zip(got, expected) {
                #expect(abs(a - b) <= 1e-6 * max(1, abs(b)), "\(source): \(got) vs \(expected)")
            }
        }
    }

    /// README: `--calibration` reads "`intrinsics.yml,extrinsics.yml` when one of them has
    /// `image_width` and `image_height`, which OpenCV's stereo_calib sample does not write".
    /// The exchange fixtures were written by `cv2.FileStorage` from one rig: the two files (the
    /// size added to the first) and the one-file stereo.yml hold the same decimal text for every
    /// matrix, so the rectification printed is the same to the last digit.
    @Test("stereo_calib's two files, intrinsics.yml,extrinsics.yml: read when one has the image size, else refused naming it")
    func openCVsTwoFiles() throws {
        let folder = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/exchange/opencv").path
        func rectification(_ calibration: String) throws -> ParallaxCLI.Result {
            try ParallaxCLI.run(["rectification", "--calibration", calibration, "--json"])
        }
        let pair = try rectification(folder + "/intrinsics-with-size.yml," + folder + "/extrinsics.yml")
        let one = try rectification(folder + "/stereo.yml")
        #expect(pair.status == 0 && one.status == 0, "\(pair.stderr) \(one.stderr)")
        #expect(!pair.stdout.isEmpty && pair.stdout == one.stdout)
        let withoutSize = try rectification(folder + "/intrinsics.yml," + folder + "/extrinsics.yml")
        #expect(withoutSize.status == 1 && withoutSize.stderr.contains("no image size"), "\(withoutSize.stderr)")
    }

    @Test("a file of the wrong kind says what it is")
    func wrongKindsAreNamed() throws {
        let fm = FileManager.default
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? fm.removeItem(at: dir) }
        let calibration = try StereoCalibration(contentsOfFile: Self.sample)
        let (left, _) = ROSCameraInfo.stereoPair(calibration, rectification: try calibration.rectification(RectificationOptions()))
        let one = dir.appendingPathComponent("left.yaml").path
        try left.text.write(toFile: one, atomically: true, encoding: .utf8)
        let kalibr = dir.appendingPathComponent("camchain.yaml").path
        try "cam0:\n  camera_model: pinhole\n  intrinsics: [1, 2, 3, 4]\ncam1:\n  T_cn_cnm1: []\n".write(toFile: kalibr, atomically: true, encoding: .utf8)
        let image = "/usr/share/doc/opencv-doc/examples/data/left01.jpg"
        let cases: [(String, String)] = [
            (one, "is one camera's ROS camera_info"),
            (kalibr, "is a Kalibr camchain, not a calibration Parallax reads"),
            (image, "is a JPEG image, not a calibration Parallax reads"),
            (dir.path, "is a folder without right.yaml"),
            (dir.appendingPathComponent("missing.json").path, "missing.json: no such file or directory"),
        ]
        for (source, message) in cases {
            let result = try ParallaxCLI.run(["rectification", "--calibration", source])
            #expect(result.status == 1, "\(source): \(result.stderr)")
            #expect(result.stderr.contains(message), "\(source): \(result.stderr)")
            // The path is named once, not twice.
            #expect(result.stderr.components(separatedBy: source).count == 2, "\(source): \(result.stderr)")
        }
    }
}

@Suite("Degenerate geometry at the command line")
struct DegenerateGeometryCommandTests {
    static let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path

    /// The sample calibration with another translation.
    static func calibration(translation: [Double], in dir: URL) throws -> String {
        var text = try String(contentsOfFile: sample, encoding: .utf8)
        let path = dir.appendingPathComponent("rig.json").path
        let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        var extrinsics = try #require(json["extrinsics"] as? [String: Any])
        extrinsics["translation"] = translation
        var changed = json
        changed["extrinsics"] = extrinsics
        text = String(decoding: try JSONSerialization.data(withJSONObject: changed), as: UTF8.self)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("a right camera in front of the left is refused by rectification and rectify, and nothing is written")
    func cameraInFront() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let rig = try Self.calibration(translation: [0.5, 0.2, -30], in: dir)
        let listing = try ParallaxCLI.run(["rectification", "--calibration", rig])
        #expect(listing.status == 1 && listing.stderr.contains("in front of the left one"), "\(listing.stderr)")
        #expect(!listing.stdout.contains("roi1"))
        let data = "/usr/share/doc/opencv-doc/examples/data"
        let outLeft = dir.appendingPathComponent("l.png").path, outRight = dir.appendingPathComponent("r.png").path
        let rectify = try ParallaxCLI.run(["rectify", "--calibration", rig, "--left", "\(data)/left01.jpg", "--right", "\(data)/right01.jpg",
                                           "--output-left", outLeft, "--output-right", outRight])
        #expect(rectify.status == 1 && rectify.stderr.contains("in front of the left one"), "\(rectify.stderr)")
        #expect(!FileManager.default.fileExists(atPath: outLeft) && !FileManager.default.fileExists(atPath: outRight))
    }

    @Test("a huge translation is named, not called zero")
    func hugeTranslation() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let rig = try Self.calibration(translation: [-1e200, 0, 0], in: dir)
        let result = try ParallaxCLI.run(["rectification", "--calibration", rig])
        #expect(result.status == 1 && result.stderr.contains("implausible") && !result.stderr.contains("translation is zero"), "\(result.stderr)")
    }
}
