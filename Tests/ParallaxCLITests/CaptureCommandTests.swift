import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

@Suite("parallax capture and devices")
struct CaptureCommandTests {
    static func temporaryDirectory() -> URL {
        URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("parallax-capture-\(UUID().uuidString)")
    }

    @Test("capture --simulated --frames 60 writes 60 synchronized pairs: 60 left and 60 right PNGs with their CSVs")
    func simulatedCapture() throws {
        let output = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        // A small image keeps the debug build's renderer quick; the layout is what is tested.
        let result = try ParallaxCLI.run(["capture", "--simulated", "--frames", "60", "--size", "160x120",
                                          "--output", output.path], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        for camera in ["cam0", "cam1"] {
            let folder = output.appendingPathComponent(camera)
            let images = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("data").path)
            #expect(images.count == 60)
            #expect(images.allSatisfy { $0.hasSuffix(".png") })
            let csv = try String(contentsOf: folder.appendingPathComponent("data.csv"), encoding: .utf8)
            let lines = csv.split(separator: "\n")
            #expect(lines.first == "#timestamp [ns],filename")
            #expect(lines.count == 61)
            // Every row names an image that exists, under its timestamp.
            for line in lines.dropFirst() {
                let fields = line.split(separator: ",")
                #expect(fields.count == 2 && fields[1] == "\(fields[0]).png" && images.contains(String(fields[1])))
            }
            // A real PNG.
            let first = try Data(contentsOf: folder.appendingPathComponent("data").appendingPathComponent(images[0]))
            #expect(Array(first.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        }
        #expect(result.stdout.contains("60 pairs written"))
        // Row k of both CSVs is one moment: the simulated right camera is 3 ms late, each
        // timestamp ±0.5 ms of jitter.
        let left = try String(contentsOf: output.appendingPathComponent("cam0/data.csv"), encoding: .utf8)
        let right = try String(contentsOf: output.appendingPathComponent("cam1/data.csv"), encoding: .utf8)
        let leftStamps = left.split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",")[0]) }
        let rightStamps = right.split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",")[0]) }
        #expect(leftStamps.count == 60 && rightStamps.count == 60)
        #expect(zip(leftStamps, rightStamps).allSatisfy { abs($1 - $0 - 3_000_000) <= 1_000_000 })
        // Successive pairs are whole frame intervals apart (one, or more where a frame was lost).
        #expect(zip(leftStamps, leftStamps.dropFirst()).allSatisfy { pair in
            let steps = (Double(pair.1 - pair.0) / 33_333_333).rounded()
            return steps >= 1 && abs(Double(pair.1 - pair.0) - steps * 33_333_333) <= 1_000_000
        })
    }

    /// README: "Ctrl-C ends a recording cleanly: the CSVs list exactly the images written".
    /// A real SIGINT to a recording in progress: the command stops (exit 0, as after its own
    /// end), both CSVs have the same number of rows, one moment per row, and list exactly the
    /// images in their folders.
    @Test("Ctrl-C (SIGINT) during capture ends the recording cleanly: the CSVs list exactly the images written")
    func interruptedCaptureIsConsistent() throws {
        let output = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let process = try ParallaxCLI.launch(["capture", "--simulated", "--frames", "1000000", "--size", "160x120", "--output", output.path])
        let images = output.appendingPathComponent("cam1/data").path
        // Interrupted mid-recording: once a dozen right images are on disk.
        let started = Date(timeIntervalSinceNow: 60)
        while ((try? FileManager.default.contentsOfDirectory(atPath: images))?.count ?? 0) < 12 && Date() < started && process.isRunning {
            usleep(20_000)
        }
        try #require(process.isRunning, "capture ended before it was interrupted (status \(process.terminationStatus))")
        ParallaxCLI.interrupt(process)
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "status \(process.terminationStatus)")
        var rows: [Int] = []
        for camera in ["cam0", "cam1"] {
            let folder = output.appendingPathComponent(camera)
            let written = Set(try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("data").path))
            let csv = try String(contentsOf: folder.appendingPathComponent("data.csv"), encoding: .utf8)
            let listed = csv.split(separator: "\n").dropFirst().compactMap { $0.split(separator: ",").last.map(String.init) }
            #expect(Set(listed) == written && listed.count == written.count, "\(camera): \(listed.count) rows, \(written.count) images")
            rows.append(listed.count)
        }
        #expect(rows.count == 2 && rows[0] == rows[1] && rows[0] >= 12, "rows \(rows)")
    }

    @Test("capture refuses a folder holding an older recording unless --overwrite, which replaces it")
    func neverMixesRecordings() throws {
        let output = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let arguments = ["capture", "--simulated", "--frames", "3", "--size", "32x24", "--output", output.path]
        #expect(try ParallaxCLI.run(arguments).status == 0)
        let again = try ParallaxCLI.run(arguments)
        #expect(again.status != 0 && again.stderr.contains("not empty"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent("cam0/data").path).count == 3)
        let replaced = try ParallaxCLI.run(arguments + ["--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent("cam0/data").path).count == 3)
    }

    @Test("--timeout bounds the whole run, rendering included, and a short recording is an error (exit 1), not a usage error")
    func timeoutIncludesRendering() throws {
        for extra in [[], ["--independent"]] {
            let output = Self.temporaryDirectory()
            defer { try? FileManager.default.removeItem(at: output) }
            // A full-HD view takes the debug build about a minute to render.
            let started = Date()
            let result = try ParallaxCLI.run(["capture", "--simulated", "--size", "1920x1080", "--frames", "1000",
                                              "--timeout", "1s", "--output", output.path] + extra, timeout: 120)
            let elapsed = Date().timeIntervalSince(started)
            #expect(result.status == 1, "\(extra): \(result.stderr)")
            #expect(elapsed < 15, "\(extra): --timeout 1s took \(elapsed) s")
            #expect(result.stderr.contains("1000"), "\(extra): \(result.stderr)")
            // The recording is consistent: each CSV lists exactly the images on disk.
            for camera in ["cam0", "cam1"] {
                let folder = output.appendingPathComponent(camera)
                let images = (try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("data").path)) ?? []
                let csv = try String(contentsOf: folder.appendingPathComponent("data.csv"), encoding: .utf8)
                let listed = csv.split(separator: "\n").dropFirst().map { String($0.split(separator: ",")[1]) }
                #expect(Set(listed) == Set(images) && listed.count == images.count, "\(extra) \(camera)")
            }
        }
    }

    @Test("capture --independent records each camera on its own")
    func independentCapture() throws {
        let output = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try ParallaxCLI.run(["capture", "--simulated", "--independent", "--frames", "5", "--size", "64x48",
                                          "--output", output.path], timeout: 120)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("cam0 (left") && result.stdout.contains("cam1 (right"))
        for camera in ["cam0", "cam1"] {
            let images = try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent(camera + "/data").path)
            #expect(images.count == 5)
        }
    }

    /// The left timestamps of a recording (`cam0/data.csv`), in order.
    static func leftStamps(_ output: URL) throws -> [Int64] {
        try String(contentsOf: output.appendingPathComponent("cam0/data.csv"), encoding: .utf8)
            .split(separator: "\n").dropFirst().compactMap { Int64($0.split(separator: ",")[0]) }
    }

    /// README: "`--max-fps` caps the rate", as the frame-rate cap is defined there: the cameras
    /// are set to the fastest rate at or below the cap that both offer, and when they offer none
    /// the device holds frames back (`frame_rate_cap`) so that the mean spacing never falls below
    /// the cap. The simulated cameras take any rate: they run at the cap. The virtual webcams offer
    /// YUYV at 30 and 15 fps only, both above a 10 fps cap: their frames are decimated.
    @Test("capture --max-fps 10: pairs 100 ms apart, at the cameras' own rate or by holding frames back")
    func frameRateCap() throws {
        let cap: Int64 = 100_000_000  // 10 fps
        let simulated = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: simulated) }
        let direct = try ParallaxCLI.run(["capture", "--simulated", "--max-fps", "10", "--frames", "5", "--size", "64x48",
                                          "--output", simulated.path])
        #expect(direct.status == 0, "\(direct.stderr)")
        let stamps = try Self.leftStamps(simulated)
        #expect(stamps.count == 5)
        // Set to the cap, each left frame is a whole number of 100 ms intervals after the one
        // before (more than one where the simulated camera lost a frame), give or take its
        // ±0.5 ms of jitter on each of the two stamps; without the cap they would be 33.3 ms apart.
        for (a, b) in zip(stamps, stamps.dropFirst()) {
            let steps = (Double(b - a) / Double(cap)).rounded()
            #expect(steps >= 1 && abs(Double(b - a) - steps * Double(cap)) <= 1_000_000, "\(b - a) ns apart")
        }
        #expect(!direct.stdout.contains("frame_rate_cap"), "\(direct.stdout)")

        let virtual = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: virtual) }
        let decimated = try ParallaxCLI.run(["capture", "--virtual", "--format", "320x240@30:YUYV", "--max-fps", "10",
                                             "--frames", "6", "--output", virtual.path])
        #expect(decimated.status == 0, "\(decimated.stderr)")
        #expect(decimated.stdout.contains("frame_rate_cap"), "frames held back for the cap are reported: \(decimated.stdout)")
        let passed = try Self.leftStamps(virtual)
        #expect(passed.count == 6)
        // The grid of due times: the first frame passes and sets the next due time one cap
        // later; a frame passes when at most half a camera interval (16.7 ms) before its due
        // time, and the due time then advances by exactly one cap. So t_n ≥ t_1 + (n − 1)·cap −
        // 16.7 ms: the mean spacing is the cap less at most 16.7 ms / (n − 1), however the
        // stamps jitter (the 30 fps stream itself is 33.3 ms apart).
        let tolerance = FrameInterval(numerator: 1, denominator: 30).nanoseconds / 2
        if let first = passed.first, let last = passed.last, passed.count > 1 {
            let mean = Double(last - first) / Double(passed.count - 1)
            #expect(mean >= Double(cap) - Double(tolerance) / Double(passed.count - 1), "mean spacing \(mean) ns")
        }
    }

    /// README: "an over-budget `--format` is refused before streaming with the alternatives".
    /// `--virtual`'s webcams are each on a USB 2.0 bus of their own, where every format they
    /// offer fits (the dearest, MJPEG 1280×720 at 30 fps, asks 3060 of a bus's 6000 bytes per
    /// microframe; the command runs it, below). The same command over the same two webcams on
    /// one bus (the command's own cameras, swapped in through `StereoSourceArguments.virtualCameras`)
    /// asks 6120 of 6000: it is refused with the formats that fit, before the recording's
    /// folder is made.
    @Test("capture refuses an over-budget --format before streaming, listing the formats that fit, and writes nothing")
    func overBudgetFormatIsRefusedBeforeStreaming() async throws {
        let output = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let arguments = ["--virtual", "--format", "1280x720@30:MJPG", "--frames", "2", "--output", output.path]
        // Ports of their own: the process remembers a STREAMON refusal per camera pair and
        // format, and other tests in this process refuse formats on webcams at ports 1 and 2.
        var right = StereoSourceArguments.virtualCamera("/dev/video2", port: "8", seed: 5)
        right.usb?.bus = 7  // the left camera's (its port, 7, is its bus)
        let oneBus = [StereoSourceArguments.virtualCamera("/dev/video0", port: "7", seed: 3), right]
        let command = try CaptureCommand.parse(arguments)
        let error = await #expect(throws: StereoDeviceError.self) {
            try await StereoSourceArguments.$virtualCameras.withValue(oneBus) { try await command.run() }
        }
        guard case .overBudget(_, let cost, let alternatives, let separate)? = error else {
            Issue.record("expected overBudget, got \(String(describing: error))")
            return
        }
        #expect(abs(cost.cost - 6120.0 / 6000) < 1e-12)  // 2 × 3060, MJPEG's largest packet
        #expect(!alternatives.isEmpty && alternatives.allSatisfy { $0.cost.cost < 1 })
        #expect(separate?.runs == true)
        let message = "\(error.map { "\($0)" } ?? "")"
        #expect(message.contains("formats that fit: " + (alternatives.first.map { "\($0)" } ?? "-")), "\(message)")
        #expect(message.contains("separate USB buses"), "\(message)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "the refused capture made its output folder")
        // The command's own cameras, a bus each, run that format.
        let separateBuses = try ParallaxCLI.run(["capture"] + arguments)
        #expect(separateBuses.status == 0, "\(separateBuses.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: output.appendingPathComponent("cam0/data").path).count == 2)
    }

    /// README: "`--calibration` rectifies the pairs before they are written". The simulated rig
    /// renders the same views at every frame (no noise), so an unrectified capture's images are
    /// the frames the rectified capture resampled: its images must be exactly what a `Rectifier`
    /// of the same calibration (the rig's own, written to a file) makes of them.
    @Test("capture --calibration writes each pair as the Rectifier of that calibration resamples it")
    func calibrationRectifiesBeforeWriting() throws {
        let size = ImageSize(width: 160, height: 120)
        let calibration = SimulatedStereoRig.example(size: size).calibration
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rig.json").path
        try FileAccess.writeAtomically(calibration.jsonText(), toPath: file)
        let common = ["capture", "--simulated", "--size", "160x120", "--frames", "2"]
        let raw = try ParallaxCLI.run(common + ["--output", dir.appendingPathComponent("raw").path])
        let rectified = try ParallaxCLI.run(common + ["--calibration", file, "--output", dir.appendingPathComponent("rectified").path])
        #expect(raw.status == 0 && rectified.status == 0, "\(raw.stderr) \(rectified.stderr)")
        func firstImage(_ recording: String, _ camera: String) throws -> ImageBuffer {
            let folder = dir.appendingPathComponent("\(recording)/\(camera)/data")
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().first)
            return try ImageBuffer(contentsOfFile: folder.appendingPathComponent(name).path)
        }
        let frames = (left: try firstImage("raw", "cam0"), right: try firstImage("raw", "cam1"))
        let written = (left: try firstImage("rectified", "cam0"), right: try firstImage("rectified", "cam1"))
        let expected = try Rectifier(calibration: calibration).rectify(left: frames.left, right: frames.right)
        #expect(written.left == expected.left && written.right == expected.right)
        #expect(written.left != frames.left && written.right != frames.right, "rectification left the images as they were")
        // A calibration that records other cameras is refused before the folder is touched,
        // naming both; --force takes it.
        var foreign = calibration
        foreign.calibratedCameras = PerSide(left: "usb-046d:0825-A", right: "usb-046d:0825-B")
        try FileAccess.writeAtomically(foreign.jsonText(), toPath: file)
        let target = dir.appendingPathComponent("foreign").path
        let refused = try ParallaxCLI.run(common + ["--calibration", file, "--output", target])
        #expect(refused.status != 0 && refused.stderr.contains("was made for other cameras (left usb-046d:0825-A, right "
                                                               + "usb-046d:0825-B); these are left simulated-left, right simulated-right"),
                "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: target))
        let forced = try ParallaxCLI.run(common + ["--calibration", file, "--force", "--output", target])
        #expect(forced.status == 0, "\(forced.stderr)")
    }

    /// MJPEG: an unrectified capture keeps each frame's JPEG exactly as the camera sent it
    /// (the simulated rig encodes its view at quality 90 with libjpeg-turbo, so the bytes are
    /// known); with --calibration the decoded, rectified pair is written instead.
    @Test("capture of MJPG keeps the JPEG bytes as they came; with --calibration it writes the decoded pair rectified")
    func mjpegCaptureKeepsTheBytes() throws {
        let size = ImageSize(width: 160, height: 120)
        let rig = SimulatedStereoRig.example(size: size)
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rig.json").path
        try FileAccess.writeAtomically(rig.calibration.jsonText(), toPath: file)
        let common = ["capture", "--simulated", "--format", "160x120@30:MJPG", "--frames", "2"]
        let raw = try ParallaxCLI.run(common + ["--output", dir.appendingPathComponent("raw").path])
        let rectified = try ParallaxCLI.run(common + ["--calibration", file, "--output", dir.appendingPathComponent("rectified").path])
        #expect(raw.status == 0 && rectified.status == 0, "\(raw.stderr) \(rectified.stderr)")
        func first(_ recording: String, _ camera: String) throws -> String {
            let folder = dir.appendingPathComponent("\(recording)/\(camera)/data")
            let name = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted().first)
            return folder.appendingPathComponent(name).path
        }
        var decoded: [ImageBuffer] = []
        for (camera, side) in [("cam0", StereoSide.left), ("cam1", StereoSide.right)] {
            let path = try first("raw", camera)
            #expect(path.hasSuffix(".jpg"))
            let sent = try JPEGEncoder.encode(try rig.render(side, format: .rgb8), quality: 90)
            let kept = try #require(FileManager.default.contents(atPath: path))
            #expect([UInt8](kept) == sent, "\(camera): the recorded JPEG is not the one the camera sent")
            decoded.append(try sent.withUnsafeBytes { try MJPEGDecoder().decode($0) })
        }
        let expected = try Rectifier(calibration: rig.calibration).rectify(left: decoded[0], right: decoded[1])
        for (index, camera) in ["cam0", "cam1"].enumerated() {
            let path = try first("rectified", camera)
            #expect(path.hasSuffix(".png"))
            let written = try ImageBuffer(contentsOfFile: path)
            let truth = index == 0 ? expected.left : expected.right
            #expect(written == (try truth.converted(to: .rgb8)), "\(camera): not the decoded pair rectified")
        }
    }

    @Test("capture without cameras or --simulated explains what to give")
    func captureNeedsCameras() throws {
        let result = try ParallaxCLI.run(["capture", "--frames", "5", "--output", Self.temporaryDirectory().path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("--left") && result.stderr.contains("--simulated"))
    }

    @Test("capture of a missing device names it")
    func captureMissingDevice() throws {
        let output = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: output) }
        let result = try ParallaxCLI.run(["capture", "--left", "/dev/video98", "--right", "/dev/video99",
                                          "--format", "640x480@30:YUYV", "--frames", "5", "--output", output.path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("/dev/video98"))
    }

    @Test("devices on a machine without V4L2 says so and hints why, also as JSON")
    func devicesWithoutV4L2() throws {
        let empty = Self.temporaryDirectory()
        try FileManager.default.createDirectory(at: empty, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let text = try ParallaxCLI.run(["devices", "--sysfs", empty.path, "--dev", empty.path])
        #expect(text.status == 0)
        #expect(text.stdout.contains("No V4L2 cameras found"))
        #expect(text.stdout.contains("no V4L2 support"))
        let json = try ParallaxCLI.run(["devices", "--json", "--sysfs", empty.path, "--dev", empty.path])
        #expect(json.status == 0)
        let object = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
        #expect((object?["cameras"] as? [Any])?.isEmpty == true)
        #expect((object?["hint"] as? String)?.contains("no V4L2 support") == true)
    }
}
