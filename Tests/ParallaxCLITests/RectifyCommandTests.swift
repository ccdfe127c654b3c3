import Foundation
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

@Suite struct RectifyCommandTests {
    let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path
    let data = "/usr/share/doc/opencv-doc/examples/data"

    @Test func aFailedWriteLeavesNoOutputsBehind() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let left = dir.appendingPathComponent("l.png").path
        // A regular file where a folder should be: the right image cannot be written.
        let blocker = dir.appendingPathComponent("blocker")
        try Data("not a folder".utf8).write(to: blocker)
        let result = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", "\(data)/left01.jpg", "--right", "\(data)/right01.jpg",
            "--output-left", left, "--output-right", blocker.appendingPathComponent("r.png").path,
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains("blocker/r.png"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: left), "the left image must not be left behind")
    }

    /// A write that fails after it has started (the file-size limit reached midway: EFBIG, the
    /// signal ignored as a shell's `trap` does) leaves the file the user had, byte for byte, and no
    /// partial file: outputs go to a temporary file renamed only once complete. A writer that
    /// truncated the target first would leave 8 KiB of a PNG where the old file was.
    @Test func aWriteFailingMidwayLeavesTheOldFile() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let left = dir.appendingPathComponent("l.png").path
        let old = Data("the user's own file".utf8)
        try old.write(to: URL(fileURLWithPath: left))
        let command = [ParallaxCLI.executable.path, "rectify", "--calibration", sample, "--left", "\(data)/left01.jpg",
                       "--right", "\(data)/right01.jpg", "--output-left", left,
                       "--output-right", dir.appendingPathComponent("r.png").path]
        // 8 blocks of 1 KiB: a 640×480 PNG is many times that.
        let result = try ParallaxCLI.run(["-c", "trap '' XFSZ; ulimit -f 8; exec \"$@\"", "limited"] + command,
                                         executable: URL(fileURLWithPath: "/bin/bash"))
        #expect(result.status == 1 && result.stderr.contains("l.png") && result.stderr.contains("File too large"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: left)) == old)
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["l.png"])
    }

    @Test func anOutputThatIsAnInputOrRepeatedIsRefusedBeforeAnyWork() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let input = dir.appendingPathComponent("in.jpg").path
        try FileManager.default.copyItem(atPath: "\(data)/left01.jpg", toPath: input)
        let before = try Data(contentsOf: URL(fileURLWithPath: input))
        // The reproduction: the left input as the left output, and an output that cannot be written.
        let clobber = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", input, "--right", "\(data)/right01.jpg",
            "--output-left", dir.path + "/./in.jpg", "--output-right", "/proc/x.png",
        ])
        #expect(clobber.status != 0 && clobber.stderr.contains("is also the input --left"), "\(clobber.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: input)) == before)
        let twice = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", input, "--right", "\(data)/right01.jpg",
            "--output-left", dir.appendingPathComponent("o.png").path, "--output-right", dir.appendingPathComponent("o.png").path,
        ])
        #expect(twice.status != 0 && twice.stderr.contains("both name"), "\(twice.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("o.png").path))
    }

    @Test func aFailedWriteLeavesEarlierOutputsAsTheyWere() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Outputs from an earlier run; this run's right output cannot be written.
        let left = dir.appendingPathComponent("l.png").path
        try Data("earlier left output".utf8).write(to: URL(fileURLWithPath: left))
        let result = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", "\(data)/left01.jpg", "--right", "\(data)/right01.jpg",
            "--output-left", left, "--output-right", "/proc/x.png",
        ])
        #expect(result.status != 0 && result.stderr.contains("/proc/x.png"), "\(result.stderr)")
        #expect(try String(contentsOfFile: left, encoding: .utf8) == "earlier left output")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["l.png"])
    }

    /// The command's pixels against OpenCV's whole chain on the same decoded images
    /// (`stereoRectify` → `initUndistortRectifyMap` → `convertMaps` → `remap`, INTER_LINEAR;
    /// Tests/Fixtures/opencv/remap/make_remap_reference.py): identical, as the rectifier's own
    /// test finds in-process (RectifierTests), so the command adds nothing of its own.
    @Test func rectifiesTheSamplePairToOpenCVsPixels() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let fixtures = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/remap").path
        let result = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", "\(fixtures)/left-source.png", "--right", "\(fixtures)/right-source.png",
            "--output-left", dir.appendingPathComponent("l.png").path, "--output-right", dir.appendingPathComponent("r.png").path,
        ])
        #expect(result.status == 0, "\(result.stderr)")
        for side in ["l", "r"] {
            let mine = try ImageBuffer(contentsOfFile: dir.appendingPathComponent("\(side).png").path)
            let opencv = try ImageBuffer(contentsOfFile: "\(fixtures)/\(side == "l" ? "left" : "right")-opencv.png")
            try #require(mine.size == opencv.size && mine.format == opencv.format, "\(side): \(mine.size) \(mine.format)")
            let differing = zip(mine.bytes, opencv.bytes).filter { $0 != $1 }.count
            #expect(differing == 0, "\(side): \(differing) of \(opencv.bytes.count) pixels differ from cv2.remap's")
        }
    }

    @Test func rectifiesTheSamplePairWithPreviewAndAnaglyph() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = { (name: String) in dir.appendingPathComponent(name).path }
        let result = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", "\(data)/left01.jpg", "--right", "\(data)/right01.jpg",
            "--output-left", out("l.png"), "--output-right", out("r.pgm"), "--convergence", "30",
            "--preview", out("preview.png"), "--anaglyph", out("anaglyph.png"), "--threads", "2",
        ])
        #expect(result.status == 0, "\(result.stderr)")
        let left = try ImageBuffer(contentsOfFile: out("l.png"))
        let right = try ImageBuffer(contentsOfFile: out("r.pgm"))
        #expect(left.size == ImageSize(width: 640, height: 480) && left.format == .gray8 && right.format == .gray8)
        // The plane moved as the library moves it (ConvergenceTests prove the library's shift;
        // rectifiesTheSamplePairToOpenCVsPixels the pixels without one).
        let rectifier = try Rectifier(calibration: try StereoCalibration(contentsOfFile: sample), convergenceDistance: 30)
        let expected = try rectifier.rectify(left: try ImageBuffer(contentsOfFile: "\(data)/left01.jpg"),
                                             right: try ImageBuffer(contentsOfFile: "\(data)/right01.jpg"))
        #expect(left == expected.left && right == expected.right)
        let preview = try ImageBuffer(contentsOfFile: out("preview.png"))
        #expect(preview.size == ImageSize(width: 1280, height: 480) && preview.format == .rgb8)
        let anaglyph = try ImageBuffer(contentsOfFile: out("anaglyph.png"))
        #expect(anaglyph.size == ImageSize(width: 640, height: 480))
        // Red is the left image, green the right.
        #expect(anaglyph.bytes[3 * 1000] == left.bytes[1000] && anaglyph.bytes[3 * 1000 + 1] == right.bytes[1000])
    }

    @Test func imageOfTheWrongSizeNamesFileAndSizes() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let small = dir.appendingPathComponent("small.png").path
        try ImageBuffer(format: .gray8, size: ImageSize(width: 320, height: 240)).write(toFile: small)
        let result = try ParallaxCLI.run([
            "rectify", "--calibration", sample, "--left", "\(data)/left01.jpg", "--right", small,
            "--output-left", dir.appendingPathComponent("l.png").path, "--output-right", dir.appendingPathComponent("r.png").path,
        ])
        #expect(result.status != 0)
        #expect(result.stderr.contains(small) && result.stderr.contains("320x240") && result.stderr.contains("640x480"))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("l.png").path))
    }

    @Test func corruptInputAndBadOptionsAreClearErrors() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let broken = dir.appendingPathComponent("broken.jpg").path
        let jpeg = try FileAccess.readBytes(atPath: "\(data)/left01.jpg")
        try FileAccess.writeAtomically(Array(jpeg.prefix(jpeg.count / 3)), toPath: broken)
        let outputs = ["--output-left", dir.appendingPathComponent("l.png").path,
                       "--output-right", dir.appendingPathComponent("r.png").path]
        let corrupt = try ParallaxCLI.run(["rectify", "--calibration", sample, "--left", broken, "--right", "\(data)/right01.jpg"] + outputs)
        #expect(corrupt.status != 0 && corrupt.stderr.contains(broken))
        let badInterpolation = try ParallaxCLI.run(["rectify", "--calibration", sample, "--left", "\(data)/left01.jpg",
                                                    "--right", "\(data)/right01.jpg", "--interpolation", "lanczos"] + outputs)
        #expect(badInterpolation.status != 0 && badInterpolation.stderr.contains("--interpolation"))
    }

    @Test func benchPrintsTheDocumentedJSON() throws {
        let rectify = try ParallaxCLI.run(["bench", "rectify", "--size", "64x48", "--format", "nv12", "--threads", "2",
                                           "--iterations", "3", "--json"])
        #expect(rectify.status == 0, "\(rectify.stderr)")
        let object = try #require(try JSONValue(parsing: rectify.stdout).object)
        #expect(object["operation"]?.string == "rectify-pair" && object["size"]?.string == "64x48")
        #expect(object["format"]?.string == "nv12" && object["threads"]?.number == 2 && object["iterations"]?.number == 3)
        let median = try #require(object["ms_per_pair_median"]?.number), minimum = try #require(object["ms_per_pair_min"]?.number)
        #expect(minimum > 0 && minimum <= median)
        let rate = try #require(object["megapixels_per_second"]?.number)
        // 2 × 64 × 48 pixels per pair at the median time.
        #expect(abs(rate - 2 * 64 * 48 / 1e6 / (median / 1000)) < 0.01 * rate + 0.001)

        // The live convergence change is timed too (its figure is the benchmark's to judge).
        #expect((object["convergence_change_ms_median"]?.number ?? -1) >= 0)
        #expect((object["ms_per_converged_pair_median"]?.number ?? 0) > 0)

        // README: the text output "prints a pair's time and the CPU".
        let text = try ParallaxCLI.run(["bench", "rectify", "--size", "64x48", "--iterations", "2"])
        #expect(text.status == 0 && text.stdout.contains(" on \(CPUModel.name): median ") && text.stdout.contains(" ms per pair"),
                "\(text.stdout)")

        let maps = try ParallaxCLI.run(["bench", "maps", "--size", "64x48", "--iterations", "2", "--json"])
        #expect(maps.status == 0, "\(maps.stderr)")
        #expect(try JSONValue(parsing: maps.stdout).object?["operation"]?.string == "build-maps")

        let bad = try ParallaxCLI.run(["bench", "rectify", "--size", "63x48", "--format", "yuyv"])
        #expect(bad.status != 0 && bad.stderr.contains("even"))
    }

    /// `bench detect` times detection per image on OpenCV's sample (installed by `make test`)
    /// and says how many boards it found; a board of another size is found in none.
    @Test func benchDetectTimesEachImage() throws {
        let data = CalibrateCommandTests.data
        let images = ["left01.jpg", "right01.jpg"].map { "\(data)/\($0)" }
        let run = try ParallaxCLI.run(["bench", "detect"] + images + ["--iterations", "1", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONValue(parsing: run.stdout).object)
        #expect(object["operation"]?.string == "detect" && object["found"]?.number == 2)
        let times = (object["ms_per_image"]?.array ?? []).compactMap { $0.number }
        try #require(times.count == 2)
        #expect(times.allSatisfy { $0 > 0 })
        // Two images: the median is their mean (each figure rounded to 1e-4 ms).
        #expect(abs((object["ms_median"]?.number ?? 0) - (times[0] + times[1]) / 2) < 2e-4)
        let wrong = try ParallaxCLI.run(["bench", "detect", images[0], "--board", "7x5", "--iterations", "1", "--json"])
        #expect(try JSONValue(parsing: wrong.stdout).object?["found"]?.number == 0)
        let missing = try ParallaxCLI.run(["bench", "detect", "/nonexistent/board.png"])
        #expect(missing.status != 0 && missing.stderr.contains("/nonexistent/board.png"))
    }

    /// `--calibration` times a user's calibration at its image size; `--simd` picks the
    /// kernels' level, and both say so in the JSON.
    @Test func benchTimesAGivenCalibrationAtAChosenLevel() throws {
        let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path
        let run = try ParallaxCLI.run(["bench", "rectify", "--calibration", sample, "--format", "gray8", "--iterations", "2",
                                       "--simd", "baseline", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let object = try #require(try JSONValue(parsing: run.stdout).object)
        #expect(object["size"]?.string == "640x480" && object["simd"]?.string == "baseline")
        #expect(object["calibration"]?.string == sample && object["cpu"]?.string?.isEmpty == false)
        let maps = try ParallaxCLI.run(["bench", "maps", "--calibration", sample, "--iterations", "1", "--json"])
        let mapsSize = try JSONValue(parsing: maps.stdout).object?["size"]?.string
        #expect(maps.status == 0 && mapsSize == "640x480")
        let both = try ParallaxCLI.run(["bench", "rectify", "--calibration", sample, "--size", "64x48"])
        #expect(both.status != 0 && both.stderr.contains("exclude each other"))
        let missing = try ParallaxCLI.run(["bench", "rectify", "--calibration", "/nonexistent/rig.json"])
        #expect(missing.status != 0 && missing.stderr.contains("/nonexistent/rig.json"))
    }
}

@Suite struct RectifyDemoStepTests {
    /// The demo's rectification step puts the zero-parallax plane on the
    /// ringed panel at 1.5 m: there the anaglyph's red (left) and green
    /// (right) agree, while the wall at 3 m is shifted by
    /// f·B·(1/1.5 m − 1/3 m) ≈ 10 px and its checker edges disagree.
    @Test func demoAnaglyphHasNoParallaxOnTheConvergencePanel() async throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Only this step (the whole demo calibrates and captures too, which is slow in debug builds).
        try await RectifyDemoStep().run(DemoContext(outputDirectory: dir.path))
        for name in ["rectified-left.png", "rectified-right.png", "rectified-preview.png"] {
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent(name).path), "missing \(name)")
        }
        let anaglyph = try ImageBuffer(contentsOfFile: dir.appendingPathComponent("rectified-anaglyph.png").path)
        #expect(anaglyph.size == ImageSize(width: 640, height: 480))
        func meanRedGreenDifference(x: Range<Int>, y: Range<Int>) -> Double {
            var total = 0
            for row in y { for column in x {
                let i = (row * 640 + column) * 3
                total += abs(Int(anaglyph.bytes[i]) - Int(anaglyph.bytes[i + 1]))
            } }
            return Double(total) / Double(x.count * y.count)
        }
        // The panel's centre (80, −20) mm at 1.5 m lands near pixel (347, 233).
        let panel = meanRedGreenDifference(x: 327..<367, y: 213..<253)
        let wall = meanRedGreenDifference(x: 20..<60, y: 20..<60)
        // Measured 0.4 vs 26 levels: on the plane only interpolation differences remain.
        #expect(panel < 3)
        #expect(wall > 10)
    }
}
