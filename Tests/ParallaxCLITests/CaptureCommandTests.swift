import Foundation
import Testing

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
        let process = Process()
        process.executableURL = ParallaxCLI.executable
        process.arguments = ["capture", "--simulated", "--frames", "1000000", "--size", "160x120", "--output", output.path]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let images = output.appendingPathComponent("cam1/data").path
        // Interrupted mid-recording: once a dozen right images are on disk.
        let started = Date(timeIntervalSinceNow: 60)
        while ((try? FileManager.default.contentsOfDirectory(atPath: images))?.count ?? 0) < 12 && Date() < started && process.isRunning {
            usleep(20_000)
        }
        try #require(process.isRunning, "capture ended before it was interrupted (status \(process.terminationStatus))")
        kill(process.processIdentifier, SIGINT)
        let deadline = Date(timeIntervalSinceNow: 60)  // a hang guard
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate(); Issue.record("capture did not stop within 60 s of SIGINT") }
        process.waitUntilExit()
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
