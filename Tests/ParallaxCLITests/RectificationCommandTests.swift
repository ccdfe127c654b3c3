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
