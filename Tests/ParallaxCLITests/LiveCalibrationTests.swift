import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import Testing
@testable import parallax

/// `parallax calibrate --live`: guided capture from the simulated rig, whose board moves by
/// itself. A short capture here (a debug build renders and detects slowly); the full
/// `--live --simulated` run to its targets, with the accuracy figures, is `make check-live`.
@Suite("parallax calibrate --live (simulated rig, virtual webcams)")
struct LiveCalibrationTests {
    @Test("--live --simulated --pairs 3 takes three still pairs, saves them with their corners, calibrates, and reports the truth")
    func takesPairsAndCalibrates() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("rig.json").path
        let result = try ParallaxCLI.run(["calibrate", "--live", "--simulated", "--size", "256x192", "--pairs", "3",
                                          "--output", output, "--json"], timeout: 600)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let figures = try #require(try JSONValue(parsing: result.stdout).object)
        #expect(figures["pairs_taken"]?.number == 3)
        #expect(figures["pairs_used"]?.number == 3)
        #expect(figures["stop_reason"]?.string == "pair_limit")
        #expect((figures["pairs_streamed"]?.number ?? 0) > 3 * 8)  // each still averages 8 pairs
        let truth = try #require(figures["truth_errors"]?.object)
        let focalValues = truth["focal_percent"]?.array ?? []
        let focal = focalValues.compactMap(\.number)
        #expect(focal.count == 4)
        // Three views of a 256 × 192 rig: a rough fit, but no unit or scale mistake.
        #expect(focal.allSatisfy { abs($0) < 2 })
        #expect(abs(truth["baseline_percent"]?.number ?? .nan) < 2)
        #expect((truth["rotation_degrees"]?.number ?? .nan) < 0.5)
        // The pairs are kept beside the output, with a corner list that recalibrates them.
        let pairs = dir.appendingPathComponent("rig-pairs")
        let saved = try FileManager.default.contentsOfDirectory(atPath: pairs.path).sorted()
        #expect(saved == ["corners.json", "left000.png", "left001.png", "left002.png", "right000.png", "right001.png", "right002.png"])
        let list = try CornerList(contentsOfFile: pairs.appendingPathComponent("corners.json").path)
        #expect(list.entry(for: "left001.png")?.corners?.count == 54)
        #expect(try CalibrationFile.load(output).calibration.translationUnit == .millimetre)
        // Progress went to stderr, ending with the coverage bars (x, y, size, skew) and the pairs taken.
        #expect(result.stderr.contains("took pair 3"))
        // Each still pair is the average of 8 (StillQuality.quality), as the guide says.
        for k in 1...3 { #expect(result.stderr.contains("took pair \(k) (8 averaged)"), "\(result.stderr)") }
        #expect(result.stderr.contains("capture stopped (pair_limit)"))
        let bars = try Regex(#"pairs 3/3  x [█░]{8} +[0-9]+%  y [█░]{8} +[0-9]+%  size [█░]{8} +[0-9]+%  skew [█░]{8} +[0-9]+%"#)
        #expect(result.stderr.contains(bars), "\(result.stderr)")
        // The capture's own time, within the whole run's.
        let capture = figures["capture_seconds"]?.number ?? -1
        #expect(capture > 0 && capture <= (figures["seconds"]?.number ?? 0), "capture_seconds \(capture)")
        // The folder was written under a temporary name and renamed: nothing else is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted() == ["rig-pairs", "rig.json"])

        // Calibration/GUIDE.md's command for calibrating the same set again, run as shown (paths relative
        // to the folder holding rig-pairs/). The list keeps 4 decimals, each coordinate within 5e-5 px,
        // ‖δ‖ ≤ 5e-5 · √648 over the 3 pairs' 648 coordinates; every residual is below Huber's 2 px and 3
        // pairs leave none to set aside, so both fits are least squares, and a parameter moves by at most
        // its σ × ‖δ‖ / σ̂, σ̂ the noise per coordinate the σ are scaled by (≥ rms_stereo / √2).
        let again = try ParallaxCLI.run(["calibrate", "--left", "rig-pairs/left*.png", "--right", "rig-pairs/right*.png",
                                         "--corners-in", "rig-pairs/corners.json", "--board", "9x6", "--square", "25mm",
                                         "--output", "again.json"], workingDirectory: dir)
        #expect(again.status == 0, "\(again.stderr)")
        let first = try StereoCalibration(contentsOfFile: output)
        let second = try StereoCalibration(contentsOfFile: dir.appendingPathComponent("again.json").path)
        let sigma = try #require(figures["uncertainty"]?.object)
        let shift = 2.0.squareRoot() * 5e-5 * 648.0.squareRoot() / (figures["rms_stereo"]?.number ?? .nan)
        let compared = [(first.left.intrinsics.fx, second.left.intrinsics.fx, sigma["left"]?.object?["fx"]?.number),
                        (first.left.intrinsics.fy, second.left.intrinsics.fy, sigma["left"]?.object?["fy"]?.number),
                        (first.right.intrinsics.fx, second.right.intrinsics.fx, sigma["right"]?.object?["fx"]?.number),
                        (first.right.intrinsics.fy, second.right.intrinsics.fy, sigma["right"]?.object?["fy"]?.number),
                        (first.baseline, second.baseline, sigma["baseline"]?.number)]
        for (a, b, deviation) in compared {
            #expect(abs(a - b) <= (deviation ?? .nan) * shift, "\(a) and \(b), σ \(deviation ?? .nan), bound \(shift) σ")
        }
        #expect(second.translationUnit == .millimetre)
        // Calibration/GUIDE.md: "Calibrations from image files record no cameras and fit any":
        // again.json names no cameras, and streams on the virtual webcams without --force.
        #expect(second.extra["cameras"] == nil && first.extra["cameras"] != nil)
        let streamed = try ParallaxCLI.run(["stream", "--virtual", "--frames", "3", "--calibration", "again.json"], workingDirectory: dir)
        #expect(streamed.status == 0, "\(streamed.stderr)")
    }

    /// Calibration/GUIDE.md: the pairs folder is "kept even when the calibration afterwards fails its gate".
    @Test("a capture whose calibration fails its --max-rms gate keeps its pairs, and writes no calibration")
    func keepsThePairsWhenTheGateRefuses() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("rig.json").path
        let result = try ParallaxCLI.run(["calibrate", "--live", "--simulated", "--size", "256x192", "--pairs", "3",
                                          "--max-rms", "0.0001", "--output", output], timeout: 600)
        #expect(result.status == 1 && result.stderr.contains("--max-rms"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
        let saved = try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("rig-pairs").path).sorted()
        #expect(saved == ["corners.json", "left000.png", "left001.png", "left002.png", "right000.png", "right001.png", "right002.png"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.path) == ["rig-pairs"])
    }

    /// Calibration/GUIDE.md: the capture stops "on Ctrl-C, SIGTERM or SIGHUP (`user`)". A real
    /// signal once the capture has started, before it could take 3 pairs: it stops with that
    /// reason, keeps the (empty) pairs folder, and calibrates nothing: at least 3 pairs are needed.
    @Test("Ctrl-C, SIGTERM or SIGHUP during a live capture stops it with stop reason user", arguments: [SIGINT, SIGTERM, SIGHUP])
    func ctrlCStopsTheCapture(signal: Int32) throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let run = try ParallaxCLI.runInterrupted(
            ["calibrate", "--live", "--simulated", "--size", "160x120", "--output", dir.appendingPathComponent("out/rig.json").path],
            after: "live capture from", signal: signal)
        #expect(run.secondsToExit < 60, "the capture did not stop within 60 s of signal \(signal)")
        let stderr = run.stderr
        #expect(stderr.contains("capture stopped (user)"), "\(stderr)")
        #expect(run.status == 1 && stderr.contains("before it stopped (user); at least 3 are needed"), "\(stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.appendingPathComponent("out").path) == ["rig-pairs"])
        #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("out/rig-pairs/corners.json").path))
    }

    /// Calibration/GUIDE.md: `--virtual` is a live source, `--format` as for `stream`, and the
    /// capture stops "at `--time-limit` … (`time_limit`)". The virtual cameras hold the board at
    /// the sweep's first pose for its first 0.8 s, so a 1 s capture takes at most one pair: too
    /// few, and nothing is calibrated.
    @Test("--live --virtual --format 320x240@30:GREY stops at --time-limit with stop reason time_limit")
    func virtualCamerasStopAtTheTimeLimit() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("rig.json").path
        let result = try ParallaxCLI.run(["calibrate", "--live", "--virtual", "--format", "320x240@30:GREY", "--board", "9x6",
                                          "--square", "25mm", "--time-limit", "1s", "--output", output])
        #expect(result.stderr.contains("live capture from Virtual webcam 1 + Virtual webcam 2"), "\(result.stderr)")
        // The format asked for is the one configured: without --format the command names the one it
        // chose ("format: …"), and "drivers set …" when the drivers changed it.
        #expect(result.stdout.contains("hardware cost") && !result.stdout.contains("drivers set") && !result.stderr.contains("format:"),
                "\(result.stdout)\(result.stderr)")
        // Stopped by the limit, never before it. How long after it depends on the machine: the
        // pair being judged when the limit passes is finished first (3.3 s was seen under the
        // full suite on a loaded 2-vCPU machine), so no upper bound is asserted here.
        let stopped = result.stderr.firstMatch(of: try Regex(#"capture stopped \(time_limit\) after ([0-9.]+) s"#))
        let seconds = stopped.flatMap { $0.output[1].substring.flatMap { Double($0) } } ?? -1
        #expect(seconds >= 1.0, "\(result.stderr)")
        #expect(result.status == 1 && result.stderr.contains("pairs before it stopped (time_limit); at least 3 are needed"),
                "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output))
    }

    /// Issue: `calibrate --live` works with MJPEG. The virtual webcams send JPEGs (quality 90,
    /// 4:2:2) of the simulated rig, its board held at the sweep's poses in turn; the stereo
    /// device decodes them and the still pairs are averaged after decoding. Three pairs of a
    /// 640 × 480 rig give a rough fit, but no unit or scale mistake, as for the simulated rig.
    @Test("--live --virtual --format 640x480@30:MJPG --pairs 3 takes three still pairs of decoded frames and reports the truth")
    func virtualMJPEGCalibrates() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = dir.appendingPathComponent("rig.json").path
        let result = try ParallaxCLI.run(["calibrate", "--live", "--virtual", "--format", "640x480@30:MJPG", "--pairs", "3",
                                          "--output", output, "--json"], timeout: 600)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let figures = try #require(try JSONValue(parsing: result.stdout).object)
        #expect(figures["pairs_taken"]?.number == 3 && figures["stop_reason"]?.string == "pair_limit")
        let truth = try #require(figures["truth_errors"]?.object)
        let focal = (truth["focal_percent"]?.array ?? []).compactMap(\.number)
        #expect(focal.count == 4 && focal.allSatisfy { abs($0) < 2 },
                "\(focal); σ \(String(describing: figures["uncertainty"])); \(result.stderr)")
        #expect(abs(truth["baseline_percent"]?.number ?? .nan) < 2)
        #expect((truth["rotation_degrees"]?.number ?? .nan) < 0.5)
        for k in 1...3 { #expect(result.stderr.contains("took pair \(k) (8 averaged)"), "\(result.stderr)") }
        // The file records the cameras it was made for; stream takes it on them, refuses it on
        // others (the simulated rig) naming both, and takes it there with --force.
        let file = try #require(try JSONValue(parsing: String(contentsOfFile: output, encoding: .utf8)).object)
        let cameras = file["cameras"]?.object
        #expect(cameras?["left"]?.string == "usb-1d6b:0102-VIRTUAL1" && cameras?["right"]?.string == "usb-1d6b:0102-VIRTUAL2",
                "\(String(describing: cameras))")
        let (_, same) = try StreamCommandTests.stream(["--virtual", "--format", "640x480@30:MJPG", "--calibration", output,
                                                       "--frames", "5"])
        #expect(same.status == 0, "\(same.stderr)")
        let other = try ParallaxCLI.run(["stream", "--simulated", "--calibration", output, "--frames", "5"], timeout: 120)
        #expect(other.status != 0 && other.stderr.contains("was made for other cameras (left usb-1d6b:0102-VIRTUAL1, right "
                                                           + "usb-1d6b:0102-VIRTUAL2); these are left simulated-left"),
                "\(other.stderr)")
        #expect(other.stderr.contains("pass --force"), "\(other.stderr)")
        let (_, forced) = try StreamCommandTests.stream(["--simulated", "--calibration", output, "--frames", "5", "--force"])
        #expect(forced.status == 0, "\(forced.stderr)")
    }

    /// Issue: calibrate takes a bag's board images. The simulated rig with its board sweep is
    /// recorded as a bag, and `calibrate live --recording` takes still pairs from its playback
    /// (every pair, as fast as it decodes) and solves the rig the bag shows.
    @Test("calibrate live --recording BAG: still pairs from a bag of the board sweep, and the rig it shows")
    func calibratesFromABag() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bag = dir.appendingPathComponent("sweep.mcap").path
        let capture = try ParallaxCLI.run(["capture", "--simulated", "--board-sweep", "--size", "320x240", "--frames", "150", "--timeout", "10min",
                                           "--output", bag], timeout: 600)
        #expect(capture.status == 0, "\(capture.stderr)")
        let output = dir.appendingPathComponent("rig.json").path
        let result = try ParallaxCLI.run(["calibrate", "live", "--recording", bag, "--board", "9x6", "--square", "25mm",
                                          "--pairs", "3", "--output", output, "--json"], timeout: 600)
        #expect(result.status == 0, "\(result.stderr)")
        let figures = try #require(try JSONValue(parsing: result.stdout).object)
        #expect(figures["pairs_taken"]?.number == 3 && figures["stop_reason"]?.string == "pair_limit", "\(result.stdout)")
        // The rig the bag shows: three views give a rough fit, but no unit or scale mistake (as above).
        let truth = SimulatedStereoRig.example(size: ImageSize(width: 320, height: 240)).calibration
        let solved = try CalibrationFile.load(output).calibration
        for side in StereoSide.allCases {
            let error = abs(solved[side].intrinsics.fx / truth[side].intrinsics.fx - 1) * 100
            #expect(error < 2, "\(side) focal off by \(error) %")
        }
    }

    @Test("--live's defaults are the guide's: --time-budget 2 s (an eighth, 0.25 s, per streamed image), --uncertainty-target 1 px, --time-limit 5 min")
    func liveDefaults() throws {
        let defaults = try CalibrateLiveCommand.parse(["--simulated"])
        // Calibration/GUIDE.md: `--size` "640×480 unless `--format` gives one".
        #expect(try defaults.source.simulatedSize() == ImageSize(width: 640, height: 480))
        let formatted = try CalibrateLiveCommand.parse(["--simulated", "--format", "320x240@30:GREY"])
        #expect(try formatted.source.simulatedSize() == ImageSize(width: 320, height: 240))
        #expect(defaults.boardOptions.timeBudget.seconds == 2 && defaults.liveDetectionBudgetSeconds == 0.25)
        #expect(defaults.uncertaintyTarget == 1)
        #expect(defaults.timeLimit.seconds == 300)
        #expect(try CalibrateLiveCommand.parse(["--simulated", "--time-budget", "4s"]).liveDetectionBudgetSeconds == 0.5)
    }

    /// Calibration/GUIDE.md: "stderr shows the coverage as four bars — the spread of x, y, size and
    /// skew over the pairs taken against a target of 0.6, 0.6, 0.15 and 0.2 — with the pairs taken
    /// and … the RMS and worst projection uncertainty of a fit of what was taken".
    @Test("the live status line: four bars of eight against the coverage targets, the pairs taken, and the fit when there is one")
    func statusLine() {
        var coverage = CaptureCoverage()
        coverage.add(BoardViewMeasures(x: 0, y: 0, size: 0, skew: 0))
        // Spreads of half the x target, the whole y target, half the size target and a quarter of the skew target.
        coverage.add(BoardViewMeasures(x: 0.3, y: 0.6, size: 0.075, skew: 0.05))
        let line = LiveStatus.line(taken: 2, total: 12, coverage: coverage, fit: nil, seconds: 3.5)
        #expect(line == "  3.5 s  pairs 2/12  x ████░░░░  50%  y ████████ 100%  size ████░░░░  50%  skew ██░░░░░░  25%", "\(line)")
        let fitted = LiveStatus.line(taken: 12, total: nil, coverage: coverage, fit: (rms: 0.2, worstSigma: 0.8), seconds: 10)
        #expect(fitted.hasPrefix(" 10.0 s  pairs 12  x ") && fitted.hasSuffix("  rms 0.200 px  σ ≤ 0.80 px"), "\(fitted)")
    }

    @Test("--live refuses a --save-pairs folder that already holds files, before streaming")
    func refusesExistingPairsFolder() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let pairs = dir.appendingPathComponent("taken")
        try FileManager.default.createDirectory(at: pairs, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: pairs.appendingPathComponent("left000.png"))
        let result = try ParallaxCLI.run(["calibrate", "--live", "--simulated", "--save-pairs", pairs.path,
                                          "--output", dir.appendingPathComponent("rig.json").path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("already holds 1 files"))
        #expect(try String(contentsOf: pairs.appendingPathComponent("left000.png"), encoding: .utf8) == "keep me")
    }

    @Test("calibrate live (or --live) needs exactly one source, and a board for real cameras; its options are its own")
    func liveArguments() throws {
        let none = try ParallaxCLI.run(["calibrate", "--live"])
        #expect(none.status != 0 && none.stderr.contains("choose one source"), "\(none.stderr)")
        let two = try ParallaxCLI.run(["calibrate", "live", "--simulated", "--virtual"])
        #expect(two.status != 0 && two.stderr.contains("choose one source"), "\(two.stderr)")
        // Real cameras need the board named; the simulated rig and the virtual webcams show their own.
        let noBoard = try ParallaxCLI.run(["calibrate", "--live", "--left", "/dev/video0", "--right", "/dev/video2"])
        #expect(noBoard.status != 0 && noBoard.stderr.contains("give --board"))
        let stray = try ParallaxCLI.run(["calibrate", "--left", "a.png", "--right", "b.png", "--board", "9x6", "--square", "25mm",
                                         "--pairs", "5"])
        #expect(stray.status != 0 && stray.stderr.contains("Unknown option '--pairs'"), "\(stray.stderr)")
        // The spelling from before the subcommands: --live anywhere makes it calibrate live.
        let late = try ParallaxCLI.run(["calibrate", "--simulated", "--live", "--pairs", "2"])
        #expect(late.status != 0 && late.stderr.contains("--pairs must be at least 3"), "\(late.stderr)")
    }
}
