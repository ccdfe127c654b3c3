import Foundation
import ParallaxCalibration
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

@Suite("parallax disparity and bench disparity")
struct DisparityCommandTests {
    /// The rendered scenes at 320×240 for 64 disparities, in a fresh folder.
    func scenes() throws -> URL {
        let dir = try ParallaxCLI.temporaryDirectory()
        let result = try ParallaxCLI.run(["bench", "disparity-scenes", "--output", dir.path, "--size", "320x240", "--disparities", "64"])
        try #require(result.status == 0, "\(result.stderr)")
        return dir
    }

    @Test("the PFM written is the library's map of the same pair, value for value; the JSON counts it; the wall within 0.1 px of its truth")
    func pfmIsTheLibrarysMap() throws {
        let dir = try scenes()
        defer { try? FileManager.default.removeItem(at: dir) }
        let wall = dir.appendingPathComponent("wall")
        let output = dir.appendingPathComponent("wall.pfm").path, colour = dir.appendingPathComponent("wall-colour.png").path
        let result = try ParallaxCLI.run(["disparity", "--left", wall.appendingPathComponent("left.png").path,
                                          "--right", wall.appendingPathComponent("right.png").path, "--disparities", "64",
                                          "--output", output, "--color", colour, "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        let written = try DisparityMap.pfmValues(Array(try Data(contentsOf: URL(fileURLWithPath: output))), source: output)
        // The same pair through the library, in this process.
        let left = try ImageBuffer(contentsOfFile: wall.appendingPathComponent("left.png").path)
        let right = try ImageBuffer(contentsOfFile: wall.appendingPathComponent("right.png").path)
        let matcher = try SemiGlobalMatcher(configuration: .init(disparityCount: 64), size: left.size)
        let map = try left.withView { l in try right.withView { r in try matcher.match(left: l, right: r) } }
        #expect(written.size == map.size)
        #expect(written.values.elementsEqual(map.values) { $0 == $1 }, "the file's values are the map's, bit for bit")
        let json = try JSONValue(parsing: result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).object ?? JSONObject([])
        #expect(json["valid"]?.number == Double(map.validCount))
        #expect(json["density"]?.number.map { abs($0 - map.density) < 1e-4 } == true)
        let invalid = json["invalid"]?.object
        #expect(invalid?["inconsistent"]?.number == Double(map.invalid.inconsistent) && invalid?["speckle"]?.number == Double(map.invalid.speckle))
        // The truth the scenes wrote: the wall's median disparity within 0.1 px of it (f·B/Z, one depth).
        let truthPath = wall.appendingPathComponent("truth.pfm").path
        let truth = try DisparityMap.pfmValues(Array(try Data(contentsOf: URL(fileURLWithPath: truthPath))), source: truthPath)
        let sortedTruth = truth.values.filter(\.isFinite).sorted(), sortedMap = map.values.filter(\.isFinite).sorted()
        let truthMedian = sortedTruth[sortedTruth.count / 2], median = sortedMap[sortedMap.count / 2]
        #expect(abs(median - truthMedian) <= 0.1, "median \(median), truth \(truthMedian)")
        // The picture: the map above a colour bar, invalid pixels black.
        let picture = try ImageBuffer(contentsOfFile: colour)
        #expect(picture.size.width == 320 && picture.size.height > 240 && picture.format == .rgb8)
    }

    @Test("the 16-bit PNG holds 256 × disparity (0 where invalid): its high bytes are the map's")
    func kittiPNGHoldsTheScale() throws {
        let dir = try scenes()
        defer { try? FileManager.default.removeItem(at: dir) }
        let tilted = dir.appendingPathComponent("tilted"), output = dir.appendingPathComponent("tilted.png").path
        let pfm = dir.appendingPathComponent("tilted.pfm").path
        for path in [output, pfm] {
            let result = try ParallaxCLI.run(["disparity", "--left", tilted.appendingPathComponent("left.png").path,
                                              "--right", tilted.appendingPathComponent("right.png").path, "--disparities", "64", "--output", path])
            try #require(result.status == 0, "\(result.stderr)")
        }
        let values = try DisparityMap.pfmValues(Array(try Data(contentsOf: URL(fileURLWithPath: pfm))), source: pfm).values
        // Parallax's PNG reader keeps a 16-bit sample's high byte: ⌊round(256 d) / 256⌋.
        let png = try ImageBuffer(contentsOfFile: output)
        let expected = values.map { $0.isFinite ? UInt8(UInt16(max(1, ($0 * 256).rounded())) >> 8) : 0 }
        #expect(png.format == .gray8 && png.bytes == expected)
        #expect(Set(expected).count > 10, "the tilted panel spans many disparities")
    }

    @Test("with --calibration the pair is rectified first: the map is the library's of the rectified gray pair, value for value")
    func calibrationRectifiesFirst() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path
        let data = "/usr/share/doc/opencv-doc/examples/data"
        let output = dir.appendingPathComponent("d.pfm").path
        let result = try ParallaxCLI.run(["disparity", "--left", "\(data)/left01.jpg", "--right", "\(data)/right01.jpg",
                                          "--calibration", sample, "--disparities", "64", "--output", output])
        try #require(result.status == 0, "\(result.stderr)")
        let written = try DisparityMap.pfmValues(Array(try Data(contentsOf: URL(fileURLWithPath: output))), source: output)
        // The same steps through the library: gray, rectified with the calibration, matched.
        let calibration = try CalibrationFile.load(sample).calibration
        let left = try ImageBuffer(contentsOfFile: "\(data)/left01.jpg").converted(to: .gray8)
        let right = try ImageBuffer(contentsOfFile: "\(data)/right01.jpg").converted(to: .gray8)
        let (l, r) = try Rectifier(calibration: calibration).rectify(left: left, right: right)
        let matcher = try SemiGlobalMatcher(configuration: .init(disparityCount: 64), size: l.size)
        let map = try l.withView { lv in try r.withView { rv in try matcher.match(left: lv, right: rv) } }
        #expect(written.size == l.size)
        #expect(written.values.elementsEqual(map.values) { $0 == $1 }, "the file's values are the rectified pair's map")
        // Not a comparison of two empty maps, nor one the CLI could pass without rectifying: the
        // unrectified pair's map is another.
        #expect(map.validCount > 0)
        let unrectified = try left.withView { lv in try right.withView { rv in try matcher.match(left: lv, right: rv) } }
        #expect(!unrectified.values.elementsEqual(written.values) { $0 == $1 })
    }

    @Test("refusals name the option or the file: a bad range, sizes that differ, a negative range as PNG, an input as output")
    func refusals() throws {
        let dir = try scenes()
        defer { try? FileManager.default.removeItem(at: dir) }
        let wall = dir.appendingPathComponent("wall")
        let left = wall.appendingPathComponent("left.png").path, right = wall.appendingPathComponent("right.png").path
        let out = dir.appendingPathComponent("out.pfm").path
        let badCount = try ParallaxCLI.run(["disparity", "--left", left, "--right", right, "--disparities", "24", "--output", out])
        #expect(badCount.status != 0 && badCount.stderr.contains("--disparities is 24") && badCount.stderr.contains("multiple of 16"), "\(badCount.stderr)")
        let wide = try ParallaxCLI.run(["disparity", "--left", left, "--right", right, "--disparities", "256", "--min-disparity", "100", "--output", out])
        #expect(wide.status != 0 && wide.stderr.contains("320 pixels wide"), "\(wide.stderr)")
        let other = try ParallaxCLI.run(["bench", "disparity-scenes", "--output", dir.appendingPathComponent("small").path, "--size", "160x120", "--disparities", "32"])
        try #require(other.status == 0)
        let sizes = try ParallaxCLI.run(["disparity", "--left", left, "--right", dir.appendingPathComponent("small/wall/right.png").path, "--output", out])
        #expect(sizes.status != 0 && sizes.stderr.contains("320x240") && sizes.stderr.contains("160x120"), "\(sizes.stderr)")
        let negative = try ParallaxCLI.run(["disparity", "--left", left, "--right", right, "--disparities", "64", "--min-disparity", "-16",
                                            "--output", dir.appendingPathComponent("n.png").path])
        #expect(negative.status != 0 && negative.stderr.contains("write a .pfm"), "\(negative.stderr)")
        let same = try ParallaxCLI.run(["disparity", "--left", left, "--right", right, "--disparities", "64", "--output", left])
        #expect(same.status != 0 && same.stderr.contains("--output"), "\(same.stderr)")
        let format = try ParallaxCLI.run(["disparity", "--left", left, "--right", right, "--output", dir.appendingPathComponent("x.tiff").path])
        #expect(format.status != 0 && format.stderr.contains(".pfm"), "\(format.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out), "nothing written by a refused run")
    }

    @Test("bench disparity --json: the timing fields, and the working memory the library reports for the same matcher")
    func benchReportsTheMatcher() throws {
        let result = try ParallaxCLI.run(["bench", "disparity", "--size", "160x120", "--disparities", "32", "--threads", "1",
                                          "--iterations", "3", "--json"])
        try #require(result.status == 0, "\(result.stderr)")
        let json = try JSONValue(parsing: result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)).object ?? JSONObject([])
        let matcher = try SemiGlobalMatcher(configuration: .init(disparityCount: 32, threads: 1), size: ImageSize(width: 160, height: 120))
        #expect(json["working_memory_bytes"]?.number == Double(matcher.workingMemoryBytes))
        #expect((json["ms_per_pair_median"]?.number ?? 0) > 0 && json["cpu"]?.string?.isEmpty == false)
        #expect(json["paths"]?.string == "five" && json["disparities"]?.number == 32 && (json["density"]?.number ?? 0) > 0.5)
    }
}
