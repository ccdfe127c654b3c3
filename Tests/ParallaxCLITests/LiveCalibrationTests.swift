import Foundation
import ParallaxCalibration
import ParallaxGeometry
import Testing

/// `parallax calibrate --live`: guided capture from the simulated rig, whose board moves by
/// itself. A short capture here (a debug build renders and detects slowly); the full
/// `--live --simulated` run to its targets, with the accuracy figures, is `make check-live`.
@Suite("parallax calibrate --live (simulated rig)")
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
        // Progress went to stderr.
        #expect(result.stderr.contains("took pair 3"))
        #expect(result.stderr.contains("capture stopped (pair_limit)"))
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

    @Test("--live needs exactly one source, and a board for real cameras")
    func liveArguments() throws {
        let none = try ParallaxCLI.run(["calibrate", "--live"])
        #expect(none.status != 0 && none.stderr.contains("--live needs one source"))
        let two = try ParallaxCLI.run(["calibrate", "--live", "--simulated", "--virtual"])
        #expect(two.status != 0 && two.stderr.contains("--live needs one source"))
        let noBoard = try ParallaxCLI.run(["calibrate", "--live", "--virtual"])
        #expect(noBoard.status != 0 && noBoard.stderr.contains("give --board"))
        let stray = try ParallaxCLI.run(["calibrate", "--left", "a.png", "--right", "b.png", "--board", "9x6", "--square", "25mm",
                                         "--pairs", "5"])
        #expect(stray.status != 0 && stray.stderr.contains("are for --live"))
    }
}
