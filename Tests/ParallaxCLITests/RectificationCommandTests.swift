import Foundation
import ParallaxGeometry
import Testing

@Suite struct RectificationCommandTests {
    let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path

    @Test func jsonOutputHasTheDocumentedKeysAndOpenCVsNumbers() throws {
        let result = try ParallaxCLI.run(["rectification", "--calibration", sample, "--alpha", "0", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let object = try #require(try JSONValue(parsing: result.stdout).object)
        for key in ["R1", "R2", "P1", "P2", "Q", "roi1", "roi2"] { #expect(object[key] != nil, "missing \(key)") }
        #expect(object["R1"]?.array?.count == 9 && object["P2"]?.array?.count == 12 && object["Q"]?.array?.count == 16)
        #expect(object["roi1"]?.array?.count == 4)
        // P1[0] for alpha 0, from cv2.stereoRectify on the same file (stereo-rectify-reference.json).
        let p1 = try #require(object["P1"]?.array?.compactMap { $0.number })
        let library = try StereoCalibration(contentsOfFile: sample).rectification(RectificationOptions(alpha: 0))
        #expect(p1 == library.p1.rowMajor)
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
