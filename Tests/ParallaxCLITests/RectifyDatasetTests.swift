import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

/// `parallax rectify-dataset`: a whole recording rectified, in shards that add up to one
/// run byte for byte, resumable after a kill. (The 2-minute 1280×720 run and its throughput:
/// `Benchmarks/rectify-dataset`.)
@Suite("parallax rectify-dataset: whole, sharded, resumed")
struct RectifyDatasetTests {
    /// Every file under `folder` (relative path → bytes).
    static func files(_ folder: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        let base = folder.path + "/"
        for case let url as URL in FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil) ?? .init() {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            result[String(url.path.dropFirst(base.count))] = try Data(contentsOf: url)
        }
        return result
    }

    /// A recording of the simulated rig (160 × 120, `frames` pairs) and its calibration file.
    static func recording(in dir: URL, frames: Int) throws -> (recording: String, calibration: String) {
        let recording = dir.appendingPathComponent("rec").path
        let run = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "\(frames)", "--output", recording])
        try #require(run.status == 0, "\(run.stderr)")
        return (recording, try calibration(in: dir))
    }

    /// The simulated rig's calibration at 160×120, as `rig.json` in `dir`.
    static func calibration(in dir: URL) throws -> String {
        let calibration = dir.appendingPathComponent("rig.json").path
        try FileAccess.writeAtomically(SimulatedStereoRig.example(size: ImageSize(width: 160, height: 120)).calibration.jsonText(),
                                       toPath: calibration)
        return calibration
    }

    @Test("shards 1/3, 2/3 and 3/3 write exactly the files and bytes of one unsharded run; the images are the rectifier's")
    func shardsAddUpToOneRun() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 10)
        let whole = dir.appendingPathComponent("whole")
        let run = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--output", whole.path])
        #expect(run.status == 0 && run.stdout.contains("rectified 10 pairs (10 pairs; 0 already done)"), "\(run.stdout) \(run.stderr)")
        let sharded = dir.appendingPathComponent("sharded")
        // Pair k's left image in the whole run, by name (the stamps have the same number of digits).
        let wholeImages = try FileManager.default.contentsOfDirectory(atPath: whole.path + "/cam0/data").sorted()
        #expect(wholeImages.count == 10)
        var owned = Set<String>()
        // In an order of their own, as a scheduler may run them; the second through the environment.
        for shard in ["3/3", "@SHARD_INDEX/3", "1/3"] {
            let process = Process()
            process.executableURL = ParallaxCLI.executable
            process.arguments = ["rectify-dataset", "--input", recording, "--calibration", calibration, "--output", sharded.path,
                                 "--shard", shard, "--json"]
            process.environment = ParallaxCLI.environment(adding: ["SHARD_INDEX": "1"])
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "--shard \(shard): \(text)")
            let summary = try #require(try JSONValue(parsing: text.trimmingCharacters(in: .whitespacesAndNewlines)).object)
            // 10 pairs in 3 shards: pair k in shard ⌊3k/10⌋ + 1, so pairs 0–3, 4–6, 7–9.
            let expected: [String: (Double, Double)] = ["3/3": (7, 10), "@SHARD_INDEX/3": (4, 7), "1/3": (0, 4)]
            #expect(summary["first_pair"]?.number == expected[shard]?.0 && summary["end_pair"]?.number == expected[shard]?.1,
                    "\(shard): \(text)")
            #expect(summary["shard"]?.string == (shard.hasPrefix("@") ? "2/3" : shard))
            // Each shard rectifies exactly its own pairs: the images there now are those of the
            // shards run so far, no more (a shard that did every pair would leave the rest too).
            let (first, end) = try #require(expected[shard])
            #expect(summary["rectified"]?.number == end - first, "\(shard): \(text)")
            owned.formUnion(wholeImages[Int(first)..<Int(end)])
            let present = Set(try FileManager.default.contentsOfDirectory(atPath: sharded.path + "/cam0/data"))
            let extra = present.subtracting(owned).sorted(), missing = owned.subtracting(present).sorted()
            #expect(present == owned, "after --shard \(shard): \(extra) no shard so far owns, \(missing) missing")
        }
        let a = try Self.files(whole), b = try Self.files(sharded)
        #expect(a.count == 2 * 10 + 2 * 2 + 1, "\(a.keys.sorted())")  // images, data.csv and sensor.yaml per camera, the manifest
        #expect(a.keys.sorted() == b.keys.sorted())
        for (name, bytes) in a { #expect(b[name] == bytes, "\(name) differs between the whole run and the shards") }

        // The images are the rectifier's own output for the recorded frames.
        let rig = try CalibrationFile.load(calibration).calibration
        let rectifier = try Rectifier(calibration: rig, threads: 1)
        let csv = try String(contentsOfFile: recording + "/cam0/data.csv", encoding: .utf8).split(separator: "\n").dropFirst()
        let firstLeft = try #require(csv.first?.split(separator: ",").last.map(String.init))
        let csvRight = try String(contentsOfFile: recording + "/cam1/data.csv", encoding: .utf8).split(separator: "\n").dropFirst()
        let firstRight = try #require(csvRight.first?.split(separator: ",").last.map(String.init))
        let (l, r) = try rectifier.rectify(left: ImageBuffer(contentsOfFile: recording + "/cam0/data/" + firstLeft),
                                           right: ImageBuffer(contentsOfFile: recording + "/cam1/data/" + firstRight))
        #expect(try ImageBuffer(contentsOfFile: whole.path + "/cam0/data/" + firstLeft).bytes == l.bytes)
        #expect(try ImageBuffer(contentsOfFile: whole.path + "/cam1/data/" + firstRight).bytes == r.bytes)
        // data.csv lists every pair, row k of both being pair k; sensor.yaml the rectified cameras.
        let list = try String(contentsOfFile: whole.path + "/cam0/data.csv", encoding: .utf8)
        #expect(list.split(separator: "\n").count == 11 && list.hasPrefix("#timestamp [ns],filename\n\(firstLeft.dropLast(4)),\(firstLeft)\n"))
        let (loaded, _) = try CalibrationFile.load(whole.path)
        #expect(loaded.left.distortion == .none && loaded.extrinsics.rotation == .identity)
    }

    /// Started at the same moment into one new output, as a scheduler starts them: three shards
    /// all succeed and together make every pair; two runs with different settings cannot both
    /// succeed (one claims the manifest, the other finds it differs). Repeated five times, so
    /// that the start order varies. Mutation: writing the manifest by rename (over whatever is
    /// there, as before) lets both conflicting runs through.
    @Test("started together: shards into one new output all succeed; runs with different settings cannot both succeed")
    func startedTogether() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 6)
        func start(_ arguments: [String]) throws -> Process {
            let process = Process()
            process.executableURL = ParallaxCLI.executable
            process.arguments = ["rectify-dataset", "--input", recording, "--calibration", calibration] + arguments
            process.environment = ParallaxCLI.environment(adding: [:])
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        func finish(_ processes: [Process]) -> [Int32] {
            processes.map { process in
                let deadline = Date(timeIntervalSinceNow: 120)
                while process.isRunning && Date() < deadline { usleep(10_000) }
                if process.isRunning { process.terminate() }
                process.waitUntilExit()
                return process.terminationStatus
            }
        }
        for round in 0..<5 {
            let shared = dir.appendingPathComponent("shards-\(round)").path
            let shards = try ["1/3", "2/3", "3/3"].map { try start(["--output", shared, "--shard", $0]) }
            #expect(finish(shards) == [0, 0, 0], "round \(round)")
            for camera in ["cam0", "cam1"] {
                let images = try FileManager.default.contentsOfDirectory(atPath: shared + "/\(camera)/data").filter { $0.hasSuffix(".png") }
                #expect(images.count == 6, "round \(round) \(camera): \(images.count) images")
            }
            let contested = dir.appendingPathComponent("contested-\(round)").path
            let runs = try [start(["--output", contested]), start(["--output", contested, "--alpha", "0"])]
            let statuses = finish(runs)
            #expect(statuses.filter { $0 == 0 }.count == 1, "round \(round): statuses \(statuses)")
        }
    }

    /// Stamps the output cannot hold are refused before any work, naming the frame: after
    /// January 2038 for a bag (ROS 2's 32-bit seconds); negative ones an EuRoC input cannot
    /// even list (its reader refuses the lines), and the bag and EuRoC writers refuse them too.
    /// Mutation: without the check, ROS 2's stamp clamps to 2038 and the log time to 0: a bag of
    /// wrong times, exit 0.
    @Test("stamps an output cannot hold are refused before any work: past 2038 for a bag; negative ones are no EuRoC input")
    func stampsTheOutputCannotHold() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 3)
        // The same recording with its stamps moved by `shift` (the images keep their names).
        func moved(by shift: Int64, name: String) throws -> String {
            let copy = dir.appendingPathComponent(name)
            try FileManager.default.copyItem(atPath: recording, toPath: copy.path)
            for camera in ["cam0", "cam1"] {
                let csv = copy.appendingPathComponent("\(camera)/data.csv")
                let lines = try String(contentsOf: csv, encoding: .utf8).split(separator: "\n").map { line -> String in
                    guard !line.hasPrefix("#"), let comma = line.firstIndex(of: ","), let stamp = Int64(line[..<comma]) else { return String(line) }
                    return "\(stamp + shift)" + line[comma...]
                }
                try FileAccess.writeAtomically(lines.joined(separator: "\n") + "\n", toPath: csv.path)
            }
            return copy.path
        }
        let early = try moved(by: -2_000_000_000_000_000_000, name: "early"), late = try moved(by: 2_200_000_000_000_000_000, name: "late")
        // An EuRoC folder cannot list a negative stamp at all: its reader refuses the lines.
        for (input, output, expected) in [(early, "e-out", "data.csv: 3 malformed lines"), (early, "e.mcap", "data.csv: 3 malformed lines"),
                                          (late, "l.mcap", "which the output cannot hold: a ROS 2 stamp holds seconds in 32 bits")] {
            let run = try ParallaxCLI.run(["rectify-dataset", "--input", input, "--calibration", calibration, "--output",
                                           dir.appendingPathComponent(output).path])
            #expect(run.status != 0 && run.stderr.contains(expected), "\(output): \(run.stderr)")
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent(output).path), "\(output) was made")
        }
    }

    @Test("a rerun does only what is missing: a killed run's whole files stay, its temporaries go, images not whole are made again, the result is the same bytes")
    func resumesWithoutRedoingFinishedPairs() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 12)
        let whole = dir.appendingPathComponent("whole"), resumed = dir.appendingPathComponent("resumed")
        let common = ["rectify-dataset", "--input", recording, "--calibration", calibration, "--output"]
        #expect(try ParallaxCLI.run(common + [whole.path]).status == 0)
        #expect(try ParallaxCLI.run(common + [resumed.path]).status == 0)
        // As a kill leaves it: some pairs missing, one with only its left image, temporaries of two.
        let data = resumed.appendingPathComponent("cam1/data")
        let rights = try FileManager.default.contentsOfDirectory(atPath: data.path).sorted()
        for name in rights.suffix(5) { try FileManager.default.removeItem(at: data.appendingPathComponent(name)) }
        let lefts = try FileManager.default.contentsOfDirectory(atPath: resumed.appendingPathComponent("cam0/data").path).sorted()
        for name in lefts.suffix(4) { try FileManager.default.removeItem(at: resumed.appendingPathComponent("cam0/data/" + name)) }
        try FileAccess.writeAtomically("half an image", toPath: data.appendingPathComponent(rights.last! + ".partial-99999").path)
        try FileAccess.writeAtomically("half a list", toPath: resumed.appendingPathComponent("cam0/data.csv.partial-99998").path)
        // Two images there but not whole: one damaged, one of another size (made again, and said).
        try FileAccess.writeAtomically("not a PNG", toPath: resumed.appendingPathComponent("cam0/data/" + lefts[0]).path)
        try ImageBuffer(format: .gray8, size: ImageSize(width: 8, height: 6))
            .write(toFile: resumed.appendingPathComponent("cam1/data/" + rights[1]).path)
        let again = try ParallaxCLI.run(common + [resumed.path])
        #expect(again.status == 0 && again.stdout.contains("rectified 7 pairs (12 pairs; 5 already done)"), "\(again.stdout) \(again.stderr)")
        #expect(again.stderr.contains("making again 2 image(s) that were there but not whole") && again.stderr.contains("not a PNG")
                && again.stderr.contains("8x6"), "\(again.stderr)")
        let a = try Self.files(whole), b = try Self.files(resumed)
        #expect(a.keys.sorted() == b.keys.sorted(), "\(Set(a.keys).symmetricDifference(b.keys))")
        for (name, bytes) in a { #expect(b[name] == bytes, "\(name) differs after the resumed run") }
        // Done already: nothing to do, nothing rewritten.
        let done = try ParallaxCLI.run(common + [resumed.path])
        #expect(done.status == 0 && done.stdout.contains("rectified 0 pairs (12 pairs; 12 already done)"), "\(done.stdout)")
    }

    @Test("killed outright while it works, then run again: complete, no partial file, the bytes of an uninterrupted run")
    func killedAndRunAgain() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 40)
        let whole = dir.appendingPathComponent("whole"), killed = dir.appendingPathComponent("killed")
        let common = ["rectify-dataset", "--input", recording, "--calibration", calibration, "--threads", "1", "--output"]
        #expect(try ParallaxCLI.run(common + [whole.path]).status == 0)
        let process = try ParallaxCLI.launch(common + [killed.path])
        let data = killed.appendingPathComponent("cam1/data")
        let deadline = Date(timeIntervalSinceNow: 60)
        while process.isRunning && Date() < deadline && ((try? FileManager.default.contentsOfDirectory(atPath: data.path).count) ?? 0) < 5 {
            usleep(2_000)
        }
        let wasRunning = process.isRunning
        kill(process.processIdentifier, SIGKILL)
        #expect(wasRunning, "the run ended before it could be killed: nothing here was interrupted")
        process.waitUntilExit()
        let written = (try? FileManager.default.contentsOfDirectory(atPath: data.path).filter { !$0.contains(".partial-") }.count) ?? 0
        print("rectify-dataset killed with \(written) of 40 right images written (still running when killed: \(wasRunning))")
        let again = try ParallaxCLI.run(common + [killed.path])
        #expect(again.status == 0 && again.stdout.contains("already done)"), "\(again.stdout) \(again.stderr)")
        let a = try Self.files(whole), b = try Self.files(killed)
        #expect(!b.keys.contains { $0.contains(".partial-") }, "\(b.keys.filter { $0.contains(".partial-") })")
        #expect(a.keys.sorted() == b.keys.sorted())
        for (name, bytes) in a { #expect(b[name] == bytes, "\(name) differs after the kill and the rerun") }
    }

    @Test("refused before any work: another calibration into the same output, a folder that is not an output, bad shards, a sharded bag")
    func refusals() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 4)
        let out = dir.appendingPathComponent("out").path
        #expect(try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--output", out]).status == 0)
        let other = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--alpha", "0",
                                         "--output", out])
        #expect(other.status != 0 && other.stderr.contains("holds a rectification made with another calibration"), "\(other.stderr)")
        // DatasetsAtScale.md: "another calibration, other options or another recording is
        // refused … rather than mixed in": each of the three, and the output as it was.
        let before = try Self.files(URL(fileURLWithPath: out))
        var wider = try StereoCalibration(contentsOfFile: calibration)
        wider.left.intrinsics.fx *= 1.01
        let widerFile = dir.appendingPathComponent("wider.json").path
        try FileAccess.writeAtomically(wider.jsonText(), toPath: widerFile)
        let longer = dir.appendingPathComponent("longer").path
        try #require(try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "6", "--output", longer]).status == 0)
        for (input, file, what) in [(recording, widerFile, "another calibration"), (longer, calibration, "another recording")] {
            let refused = try ParallaxCLI.run(["rectify-dataset", "--input", input, "--calibration", file, "--output", out])
            #expect(refused.status != 0 && refused.stderr.contains("holds a rectification made with another calibration, options or recording"),
                    "\(what): \(refused.stderr)")
        }
        #expect(try Self.files(URL(fileURLWithPath: out)) == before, "a refused run changed the output")
        let notOurs = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--output", recording])
        #expect(notOurs.status != 0, "\(notOurs.stderr)")
        let mine = dir.appendingPathComponent("mine")
        try FileManager.default.createDirectory(at: mine, withIntermediateDirectories: true)
        try FileAccess.writeAtomically("notes\n", toPath: mine.appendingPathComponent("notes.txt").path)
        let foreign = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--output", mine.path])
        #expect(foreign.status != 0 && foreign.stderr.contains("is not a rectify-dataset output"), "\(foreign.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: mine.path) == ["notes.txt"])
        for (shard, says) in [("0/3", "outside 1...3"), ("4/3", "outside 1...3"), ("2", "--shard takes I/N"), ("a/3", "--shard takes I/N"),
                              ("@PARALLAX_UNSET_VARIABLE/3", "is not set")] {
            let run = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--output",
                                           dir.appendingPathComponent("s").path, "--shard", shard])
            #expect(run.status == 64 && run.stderr.contains(says), "\(shard): \(run.stderr)")
        }
        let bag = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--output",
                                       dir.appendingPathComponent("out.mcap").path, "--shard", "1/2"])
        #expect(bag.status == 64 && bag.stderr.contains("a bag is one file written in order"), "\(bag.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("out.mcap").path))
        #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("s").path))
    }

    @Test("a bag as input: every pair of its two image topics, rectified")
    func bagInput() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let calibration = try Self.calibration(in: dir)
        let bag = dir.appendingPathComponent("rec.mcap").path
        #expect(try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "6", "--output", bag]).status == 0)
        let out = dir.appendingPathComponent("out")
        let run = try ParallaxCLI.run(["rectify-dataset", "--input", bag, "--calibration", calibration, "--output", out.path])
        #expect(run.status == 0 && run.stdout.contains("rectified 6 pairs"), "\(run.stdout) \(run.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("cam1/data").path).count == 6)
    }

    @Test("a bag as output: image_rect and camera_info for every pair, in order, the pixels of the EuRoC output; a folder with --bag")
    func bagOutput() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 5)
        let common = ["rectify-dataset", "--input", recording, "--calibration", calibration, "--output"]
        let folder = dir.appendingPathComponent("out")
        #expect(try ParallaxCLI.run(common + [folder.path]).status == 0)
        let bag = dir.appendingPathComponent("out.mcap").path
        // The temporary a killed run left (its process gone): removed and said, as the bag is
        // made again from the input; another process's temporary (this one's) is left alone.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let stale = bag + ".partial-\(gone.processIdentifier)", live = bag + ".partial-\(getpid())"
        try Data("half a bag".utf8).write(to: URL(fileURLWithPath: stale))
        try Data("another run's".utf8).write(to: URL(fileURLWithPath: live))
        let run = try ParallaxCLI.run(common + [bag])
        #expect(run.status == 0 && run.stdout.contains("rectified 5 pairs") && run.stdout.contains("(a ROS 2 bag)"), "\(run.stdout) \(run.stderr)")
        #expect(run.stderr.contains("removed out.mcap.partial-\(gone.processIdentifier), the unfinished output of a run that was killed"),
                "\(run.stderr)")
        #expect(!FileManager.default.fileExists(atPath: stale) && FileManager.default.fileExists(atPath: live))
        try FileManager.default.removeItem(atPath: live)
        let (file, images, info, _) = try BagCaptureTests.read(bag)
        #expect(file.isComplete && Set(images.keys) == ["/stereo/left/image_rect", "/stereo/right/image_rect"])
        #expect(info.values.map(\.count) == [5, 5])
        // camera_info: the same for every pair, K and D the calibration's, R and P the ones
        // `parallax rectification --json` prints for it (the simulated rig's calibration is in
        // metres, ROS's unit, so P's baseline column is the same number).
        let printed = try ParallaxCLI.run(["rectification", "--calibration", calibration, "--json"])
        let rectification = try #require(try JSONValue(parsing: printed.stdout).object, "\(printed.stderr)")
        func numbers(_ key: String) -> [Double] { rectification[key]?.array?.compactMap(\.number) ?? [] }
        let rig = try StereoCalibration(contentsOfFile: calibration)
        #expect(rig.translationUnit == .metre)
        for (side, r, p) in [(StereoSide.left, "R1", "P1"), (.right, "R2", "P2")] {
            let infos = try #require(info["/stereo/\(side)/camera_info"])
            #expect(numbers(r).count == 9 && numbers(p).count == 12)
            for message in infos {
                #expect(message.k == rig[side].intrinsics.matrix.rowMajor && message.width == 160 && message.height == 120)
                #expect(Array(message.d.prefix(rig[side].distortion.coefficients.count)) == rig[side].distortion.coefficients)
                #expect(message.r == numbers(r) && message.p == numbers(p), "\(side): R \(message.r), P \(message.p); printed \(numbers(r)), \(numbers(p))")
            }
        }
        for (topic, camera) in [("/stereo/left/image_rect", "cam0"), ("/stereo/right/image_rect", "cam1")] {
            let messages = try #require(images[topic])
            let stamps = messages.map(\.header.stamp.nanoseconds)
            #expect(stamps == stamps.sorted() && messages.count == 5)
            for message in messages {
                let png = try ImageBuffer(contentsOfFile: folder.path + "/\(camera)/data/\(message.header.stamp.nanoseconds).png")
                #expect(png.bytes == message.data, "\(topic) at \(message.header.stamp.nanoseconds): not the EuRoC output's pixels")
            }
        }
        // An existing bag is not replaced; --bag writes a rosbag2 folder.
        let again = try ParallaxCLI.run(common + [bag])
        #expect(again.status != 0 && again.stderr.contains("already exists"), "\(again.stderr)")
        let rosbag = dir.appendingPathComponent("rosbag").path
        #expect(try ParallaxCLI.run(common + [rosbag, "--bag"]).status == 0)
        #expect(try FileManager.default.contentsOfDirectory(atPath: rosbag).sorted() == ["metadata.yaml", "rosbag_0.mcap"])
    }

    /// DatasetsAtScale.md: the pairs are the synchronizer's, "skew at most half the
    /// recording's frame interval", from the timestamps. The simulated right camera runs 3 ms
    /// (0.09 of an interval) behind the left. One right frame's stamp moved 0.3 of an interval
    /// later (0.39 from its left frame) still pairs; moved 0.6 later (0.69 from its own left
    /// frame; the next left frame has its own partner 0.09 away) it pairs with nothing, and
    /// neither does its left frame: one pair fewer.
    @Test("pairs within half a frame interval: a right frame 0.3 of an interval late is paired, 0.6 late is not")
    func pairsWithinHalfAnInterval() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 8)
        for (fraction, pairs) in [(0.3, 8), (0.6, 7)] {
            let moved = dir.appendingPathComponent("moved-\(fraction)").path
            try FileManager.default.copyItem(atPath: recording, toPath: moved)
            let csv = moved + "/cam1/data.csv"
            var lines = try String(contentsOfFile: csv, encoding: .utf8).split(separator: "\n").map(String.init)
            let stamps = lines.dropFirst().map { Int64($0.split(separator: ",")[0])! }
            let interval = Double(stamps.last! - stamps.first!) / Double(stamps.count - 1)
            let fields = lines[4].split(separator: ",")
            lines[4] = "\(Int64(fields[0])! + Int64(fraction * interval)),\(fields[1])"
            try FileAccess.writeAtomically(lines.joined(separator: "\n") + "\n", toPath: csv)
            let run = try ParallaxCLI.run(["rectify-dataset", "--input", moved, "--calibration", calibration,
                                           "--output", dir.appendingPathComponent("out-\(fraction)").path])
            #expect(run.status == 0 && run.stdout.contains("rectified \(pairs) pairs"), "\(fraction): \(run.stdout) \(run.stderr)")
        }
    }

    /// DatasetsAtScale.md: the input may be "an MCAP file, or a rosbag2 folder". The EuRoC
    /// recording played into a rosbag2 folder and an MCAP file (`capture --recording …`) and
    /// rectified from there gives the very files rectifying the recording itself gives.
    @Test("a rosbag2 folder and an MCAP file as input: the same pairs, file names and bytes as the EuRoC recording they were played from")
    func rosbag2FolderInput() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (_, calibration) = try Self.recording(in: dir, frames: 1)
        // The board sweep holds a pose 0.8 s, then moves: over 40 frames (1.3 s) its views differ,
        // so another frame's pixels fail.
        let recording = dir.appendingPathComponent("sweep").path
        let made = try ParallaxCLI.run(["capture", "--simulated", "--board-sweep", "--size", "160x120", "--frames", "40",
                                        "--output", recording])
        try #require(made.status == 0, "\(made.stderr)")
        let rosbag = dir.appendingPathComponent("rawbag").path, file = dir.appendingPathComponent("raw.mcap").path
        for (output, flags) in [(rosbag, ["--bag"]), (file, [])] {
            let played = try ParallaxCLI.run(["capture", "--recording", recording, "--output", output] + flags)
            try #require(played.status == 0, "\(played.stderr)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: rosbag).sorted() == ["metadata.yaml", "rawbag_0.mcap"])
        var outputs: [String] = []
        for (input, name) in [(recording, "from-folder"), (rosbag, "from-rosbag2"), (file, "from-mcap")] {
            let output = dir.appendingPathComponent(name).path
            let run = try ParallaxCLI.run(["rectify-dataset", "--input", input, "--calibration", calibration, "--output", output])
            #expect(run.status == 0 && run.stdout.contains("rectified 40 pairs"), "\(input): \(run.stdout) \(run.stderr)")
            outputs.append(output)
        }
        // Every image, by name and bytes.
        let images = try Self.files(URL(fileURLWithPath: outputs[0])).filter { $0.key.contains("/data/") }
        #expect(images.count == 80)
        for camera in ["cam0", "cam1"] {
            let names = images.keys.filter { $0.hasPrefix(camera + "/") }.sorted()
            #expect(images[names[0]] != images[names[39]], "\(camera): the sweep's first and last pairs are alike")
        }
        for output in outputs.dropFirst() {
            let other = try Self.files(URL(fileURLWithPath: output)).filter { $0.key.contains("/data/") }
            #expect(other.keys.sorted() == images.keys.sorted(), "\(output): \(Set(other.keys).symmetricDifference(images.keys))")
            for (name, bytes) in images { #expect(other[name] == bytes, "\(name) differs between the folder's output and \(output)") }
        }
    }

    @Test("with --convergence, sensor.yaml describes the images as written: the rectifier's principal points, shift included")
    func convergenceInSensorFiles() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (recording, calibration) = try Self.recording(in: dir, frames: 2)
        let out = dir.appendingPathComponent("out").path
        let run = try ParallaxCLI.run(["rectify-dataset", "--input", recording, "--calibration", calibration, "--convergence", "0.6m",
                                       "--output", out])
        #expect(run.status == 0, "\(run.stderr)")
        let rig = try CalibrationFile.load(calibration).calibration
        let written = try Rectifier(calibration: rig, convergenceDistance: 0.6, threads: 1).rectification(for: .gray8)
        let (loaded, _) = try CalibrationFile.load(out)
        #expect(loaded.left.intrinsics == written.leftIntrinsics && loaded.right.intrinsics == written.rightIntrinsics,
                "\(loaded.left.intrinsics) \(loaded.right.intrinsics) vs \(written.leftIntrinsics) \(written.rightIntrinsics)")
        // The plane moved the images: the principal points differ from the unconverged rectification's.
        #expect(written.leftIntrinsics.cx != (try rig.rectification()).leftIntrinsics.cx)
    }

    @Test("--shard's stretches: consecutive, every pair once, sizes within one, for any count of pairs and shards")
    func shardRanges() throws {
        for total in [0, 1, 2, 7, 10, 100, 1001] {
            for count in [1, 2, 3, 7, 16, 1500] {
                let ranges = (1...count).map { ShardArgument(index: $0, count: count).range(of: total) }
                #expect(ranges.first?.lowerBound == 0 && ranges.last?.upperBound == total)
                #expect(zip(ranges, ranges.dropFirst()).allSatisfy { $0.upperBound == $1.lowerBound })
                let sizes = ranges.map(\.count)
                #expect((sizes.max() ?? 0) - (sizes.min() ?? 0) <= 1, "\(total) pairs in \(count): \(sizes)")
                // Pair k belongs to shard ⌊k·N/P⌋ + 1, as the help says.
                for (shard, range) in ranges.enumerated() { for k in range { #expect(k * count / total == shard) } }
            }
        }
        #expect(try ShardArgument.parse("2/3") == ShardArgument(index: 2, count: 3))
    }
}
