import Foundation
import ArgumentParser
import Testing
@testable import parallax

/// What the CLI says: its version, and errors that name a path once, in a sentence.
@Suite("Messages")
struct MessagesTests {
    static let sample = ParallaxCLI.packageRoot.appendingPathComponent("Tests/Fixtures/opencv/opencv-sample-calibration.json").path
    static let data = "/usr/share/doc/opencv-doc/examples/data"

    @Test func versionIsPrinted() throws {
        let result = try ParallaxCLI.run(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("parallax 0.1.0"), "\(result.stdout)")
    }

    /// README: "`parallax --help` lists its commands": every subcommand the help texts below
    /// cover is named in the top-level help.
    @Test func theTopLevelHelpListsEveryCommand() throws {
        let result = try ParallaxCLI.run(["--help"])
        #expect(result.status == 0)
        // The commands written out (not read from the list the help is made from), and that
        // list checked against them: a command added or removed must be named here.
        let commands = ["demo", "devices", "cost", "capture", "stream", "view", "pair", "calibrate", "target", "rectification",
                        "rectify", "rectify-dataset", "disparity", "bench"]
        var registered: [String] = []
        for command in ParallaxCommand.configuration.subcommands {
            let configuration: CommandConfiguration = command.configuration
            if let name = configuration.commandName { registered.append(name) }
        }
        #expect(registered.sorted() == commands.sorted(), "registered \(registered)")
        for command in commands {
            #expect(result.stdout.contains("  \(command) "), "parallax --help does not list \(command): \(result.stdout)")
        }
    }

    /// Help texts are prose and one-line examples: no line ends in a backslash, which in a
    /// Swift string continues the line and printed means a stray `\\`.
    @Test("no help text shows a stray line-continuation backslash")
    func helpTextsHaveNoStrayBackslashes() throws {
        let commands = ["demo", "devices", "cost", "capture", "stream", "view", "pair", "calibrate", "calibrate pairs", "calibrate live",
                        "calibrate camera", "target", "rectification", "rectify", "rectify-dataset", "disparity", "bench", "bench maps",
                        "bench rectify", "bench detect", "bench uncertainty", "bench disparity", "bench disparity-scenes"]
        for command in commands {
            let result = try ParallaxCLI.run(command.split(separator: " ").map(String.init) + ["--help"])
            #expect(result.status == 0, "\(command): \(result.stderr)")
            for line in result.stdout.split(separator: "\n") where line.trimmingCharacters(in: .whitespaces).hasSuffix("\\") {
                Issue.record("parallax \(command) --help: \(line)")
            }
        }
    }

    @Test("errors name the path once, with the system's reason as a sentence, never a Foundation dump")
    func pathsOnceAndNoDumps() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let missing = dir.appendingPathComponent("missing.jpg").path
        let cases: [(arguments: [String], path: String, says: String)] = [
            (["rectify", "--calibration", Self.sample, "--left", missing, "--right", "\(Self.data)/right01.jpg",
              "--output-left", dir.path + "/l.png", "--output-right", dir.path + "/r.png"],
             missing, "\(missing): cannot open: No such file or directory"),
            (["rectify", "--calibration", Self.sample, "--left", "\(Self.data)/left01.jpg", "--right", "\(Self.data)/right01.jpg",
              "--output-left", "/proc/parallax-test/l.png", "--output-right", dir.path + "/r.png"],
             "/proc/parallax-test:", "/proc/parallax-test: cannot create the folder: No such file or directory"),
            (["capture", "--simulated", "--frames", "2", "--output", "/proc/parallax-test"],
             "/proc/parallax-test:", "/proc/parallax-test: cannot create the folder: No such file or directory"),
        ]
        for item in cases {
            let result = try ParallaxCLI.run(item.arguments)
            #expect(result.status == 1, "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.contains(item.says), "\(item.arguments): \(result.stderr)")
            #expect(result.stderr.components(separatedBy: item.path).count == 2, "named more than once: \(result.stderr)")
            #expect(!result.stderr.contains("NSCocoaErrorDomain") && !result.stderr.contains("Error Domain"), "\(result.stderr)")
        }
    }

    /// `target` with a square too small to print, or so large its error message used to trap
    /// converting the board's size to Int: both refused with the sizes, exit 1, no file.
    @Test("target refuses squares under 2 mm and boards larger than the paper, with the sizes, and writes nothing")
    func targetSizesThatCannotPrint() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for (square, says) in [("0.001mm", "squares of 0.001 mm are too small"), ("1e300mm", "does not fit on a4 paper"),
                               ("1.9mm", "squares of 1.9 mm are too small")] {
            let output = dir.appendingPathComponent("board.svg").path
            let result = try ParallaxCLI.run(["target", "--board", "9x6", "--square", square, "--output", output])
            #expect(result.status == 1 && result.stderr.contains(says), "\(square): \(result.status) \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: output), "\(square): a board was written")
        }
        let smallest = try ParallaxCLI.run(["target", "--board", "9x6", "--square", "2mm", "--output", dir.appendingPathComponent("ok.svg").path])
        #expect(smallest.status == 0, "\(smallest.stderr)")
    }

    /// An OpenCV YAML file with a key twice: JSON refuses duplicates, and YAML now does too
    /// (it used to take the last `M1` silently), naming both lines.
    @Test("a calibration YAML with a key twice is refused, naming the key and both lines")
    func duplicateYAMLKeys() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let matrix = { (rows: Int, cols: Int, data: String) in
            "!!opencv-matrix\n   rows: \(rows)\n   cols: \(cols)\n   dt: d\n   data: [ \(data) ]\n"
        }
        let k = matrix(3, 3, "500., 0., 320., 0., 500., 240., 0., 0., 1."), d = matrix(1, 5, "0., 0., 0., 0., 0.")
        let text = "%YAML:1.0\n---\nimage_width: 640\nimage_height: 480\nM1: " + k + "D1: " + d + "M2: " + k + "D2: " + d
            + "R: " + matrix(3, 3, "1., 0., 0., 0., 1., 0., 0., 0., 1.") + "T: " + matrix(3, 1, "-60., 0., 0.")
            + "M1: " + matrix(3, 3, "900., 0., 320., 0., 900., 240., 0., 0., 1.")
        let path = dir.appendingPathComponent("twice.yml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        let result = try ParallaxCLI.run(["rectification", "--calibration", path])
        #expect(result.status != 0 && result.stderr.contains("\(path):35: the key \"M1\" appears twice in one mapping (first on line 5)"),
                "\(result.status) \(result.stderr)")
    }

    /// Inputs that never end or are not files: `rectify --left /dev/zero` and `--calibration
    /// /dev/urandom` used to read until memory ran out (8.6 GB after 15 s). A device or a
    /// folder is refused before reading, a file larger than its kind's cap (16 MiB for a
    /// calibration) is refused naming the cap, each in well under the 60 s hang guard.
    @Test("devices, folders and oversized files are refused as inputs, naming what they are or the cap")
    func inputsWithASize() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let big = dir.appendingPathComponent("big.json").path
        #expect(FileManager.default.createFile(atPath: big, contents: Data(count: 17 << 20)))
        let out = ["--output-left", dir.path + "/l.png", "--output-right", dir.path + "/r.png"]
        let cases: [([String], String)] = [
            (["rectify", "--calibration", Self.sample, "--left", "/dev/zero", "--right", "\(Self.data)/right01.jpg"] + out,
             "/dev/zero: cannot read: it is a device, not a file; an image is expected"),
            (["rectify", "--calibration", Self.sample, "--left", "\(Self.data)/left01.jpg", "--right", dir.path] + out,
             "\(dir.path): cannot read: it is a folder; an image is expected"),
            (["rectification", "--calibration", "/dev/urandom"], "/dev/urandom: it is a device, not a file; a calibration file is expected"),
            (["rectification", "--calibration", big], "\(big): it holds more than 16 MiB, the most read as a calibration file"),
        ]
        // A named pipe is read as a file is (the calibration written into it by another process).
        let fifo = dir.appendingPathComponent("rig.fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = Thread {
            if let handle = FileHandle(forWritingAtPath: fifo) {
                handle.write((try? Data(contentsOf: URL(fileURLWithPath: Self.sample))) ?? Data())
                try? handle.close()
            }
        }
        writer.start()
        let piped = try ParallaxCLI.run(["rectification", "--calibration", fifo], timeout: 60)
        #expect(piped.status == 0 && piped.stdout.contains("baseline"), "\(piped.stderr)")
        for (arguments, says) in cases {
            let started = Date()
            let result = try ParallaxCLI.run(arguments, timeout: 60)
            let seconds = Date().timeIntervalSince(started)
            #expect(result.status == 1 && result.stderr.contains(says) && seconds < 10,
                    "\(arguments): \(result.status) after \(seconds) s: \(result.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.path + "/l.png"))
        }
    }

    /// Messages that misled (issue: "a relative path that exists reported as ENOENT", "a
    /// replug before the unplug", "a camera never plugged back", "a 50 MB log line echoed
    /// whole"): each now says what is wrong and what to do.
    @Test("camera names, replugs, cameras that never came back and long input lines are said plainly")
    func misleadingMessagesSayWhatIsWrong() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        #expect(FileManager.default.createFile(atPath: dir.appendingPathComponent("video0").path, contents: Data()))
        let file = try ParallaxCLI.run(["stream", "--left", "video0", "--right", "video1", "--frames", "3"], workingDirectory: dir)
        #expect(file.status == 1 && file.stderr.contains("video0: not a camera node (it is a file, not a device)"), "\(file.stderr)")
        #expect(!file.stderr.contains("libv4l2"), "\(file.stderr)")
        let unknown = try ParallaxCLI.run(["stream", "--left", "cam-nowhere", "--right", "video1", "--frames", "3"], workingDirectory: dir)
        #expect(unknown.status == 1 && unknown.stderr.contains("cam-nowhere: no camera with that identity is plugged in"),
                "\(unknown.stderr)")
        let early = try ParallaxCLI.run(["stream", "--virtual", "--frames", "10", "--replug", "right@1s"])
        #expect(early.status == 64 && early.stderr.contains("--replug right@1s comes before any --unplug right"), "\(early.stderr)")
        let gone = try ParallaxCLI.run(["stream", "--virtual", "--frames", "100", "--unplug", "right@1s", "--timeout", "3s"])
        // The message gives the moment the unplug happened: 1 s as scheduled, later by however
        // long a busy machine took to run the action (1.01 s was seen under the full suite).
        let unplugged = gone.stderr.firstMatch(
            of: try Regex(#"timed out after 3 s; the right camera was unplugged at ([0-9]+\.[0-9][0-9]) s and did not come back"#))
        let at = unplugged.flatMap { $0.output[1].substring.flatMap { Double($0) } } ?? -1
        #expect(gone.status == 1 && at >= 1.0 && at < 2.0, "\(gone.stderr)")
        // A malformed 5 MB line is quoted by its start and its length.
        let log = dir.appendingPathComponent("long.csv")
        try ("#timestamp [ns],filename\nzz" + String(repeating: "x", count: 5_000_000) + ",a.png\n").write(to: log, atomically: true, encoding: .utf8)
        let long = try ParallaxCLI.run(["pair", "--left", log.path, "--right", log.path])
        #expect(long.status == 1 && long.stderr.contains("… (5000002 bytes)` is not a non-negative integer"), "\(long.stderr.prefix(300))")
        #expect(long.stderr.utf8.count < 2_000, "\(long.stderr.utf8.count) bytes of stderr")
    }

    /// README: Calibration/GUIDE.md covers "every option of `parallax calibrate`": each option
    /// the help of each of its subcommands lists is named in the guide.
    @Test("every option of parallax calibrate (pairs, live, camera) is in Calibration/GUIDE.md")
    func theGuideNamesEveryCalibrateOption() throws {
        var options: Set<String> = []
        for subcommand in ["pairs", "live", "camera"] {
            let help = try ParallaxCLI.run(["calibrate", subcommand, "--help"])
            #expect(help.status == 0, "calibrate \(subcommand): \(help.stderr)")
            options.formUnion(help.stdout.matches(of: /(?m)^\s+(--[a-z][a-z-]*)/).map { String($0.1) })
        }
        options.subtract(["--help", "--version"])
        let guide = try String(contentsOf: ParallaxCLI.packageRoot.appendingPathComponent("Calibration/GUIDE.md"), encoding: .utf8)
        #expect(options.count > 30, "\(options.sorted())")
        for option in options.sorted() {
            #expect(guide.contains("`\(option)") || guide.contains(" \(option) ") || guide.contains("\(option)\n"),
                    "Calibration/GUIDE.md does not name \(option)")
        }
    }
}
