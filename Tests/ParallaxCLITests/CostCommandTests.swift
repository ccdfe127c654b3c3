import Foundation
import ParallaxGeometry
import Testing

@Suite("parallax cost and devices --pairs")
struct CostCommandTests {
    /// The report of `cost … --json` (or `devices --pairs --json`); cost's exit status is
    /// checked against the report: 0 when the pair runs, 1 when it is refused (the report
    /// printed either way).
    static func json(_ arguments: [String]) throws -> JSONObject {
        let result = try ParallaxCLI.run(arguments, timeout: 60)
        let root = try #require(try JSONValue(parsing: result.stdout).object, "not a JSON object: \(result.stdout) \(result.stderr)")
        // (`devices --pairs` prints no verdict and exits 0.)
        let runs = root["runs"].map { $0 == .bool(true) } ?? true
        #expect(result.status == (runs ? 0 : 1), "runs \(runs), status \(result.status): \(result.stderr)")
        return root
    }

    @Test("Two YUYV 1280×720 at 30 fps on one USB 2.0 bus cost 13848/6000; every alternative is below 1.0")
    func overBudgetPair() throws {
        let root = try Self.json(["cost", "--left", "1280x720@30:YUYV", "--right", "1280x720@30:YUYV", "--json"])
        print("cost --left 1280x720@30:YUYV --right 1280x720@30:YUYV: \(root["cost"]?.number ?? .nan)")
        #expect(root["cost"]?.number == 2.308)  // 2 × 6924 bytes of 6000, rounded to 6 digits
        #expect(root["runs"] == .bool(false))
        let cameras = try #require(root["cameras"]?.array)
        #expect(cameras.count == 2)
        for camera in cameras {
            #expect(camera.object?["bytes_per_microframe"]?.number == 6924)  // 1280·720·2·30/8000 + 12
            #expect(camera.object?["packet_bytes"] == .null)  // no USB 2.0 packet holds it
            #expect(camera.object?["bus"]?.string == "usb bus 1")
        }
        let alternatives = try #require(root["alternatives"]?.array)
        #expect(alternatives.count >= 3)
        #expect(alternatives.allSatisfy { ($0.object?["cost"]?.number ?? 1) < 1 })
        #expect(alternatives.contains { $0.object?["left"]?.string == "640x480@30:YUYV" && $0.object?["cost"]?.number == 0.896 })
        #expect(alternatives.contains { $0.object?["left"]?.string == "1280x720@10:YUYV" })
    }

    @Test("A pair over budget only on a shared bus: 6120/6000 shared, 3060/6000 separate, 3968/6000 capped at 15 fps")
    func sharedSeparateAndCapped() throws {
        let shared = try Self.json(["cost", "--left", "800x600@25:YUYV", "--right", "800x600@25:YUYV", "--json"])
        #expect(shared["cost"]?.number == 1.02 && shared["runs"] == .bool(false))
        let alternatives = try #require(shared["alternatives"]?.array)
        #expect(alternatives.contains { $0.object?["bus"]?.string == "separate" && $0.object?["cost"]?.number == 0.51 })
        let separate = try Self.json(["cost", "--left", "800x600@25:YUYV", "--right", "800x600@25:YUYV", "--bus", "separate", "--json"])
        #expect(separate["cost"]?.number == 0.51 && separate["runs"] == .bool(true))
        #expect(separate["alternatives"]?.array?.isEmpty == true)
        let capped = try Self.json(["cost", "--left", "800x600@25:YUYV", "--right", "800x600@25:YUYV", "--max-fps", "15", "--json"])
        #expect(capped["cost"]?.number == 0.661333 && capped["runs"] == .bool(true))  // 2 × 1984 of 6000
        let superSpeed = try Self.json(["cost", "--left", "1280x720@30:YUYV", "--right", "1280x720@30:YUYV", "--usb", "3", "--json"])
        #expect(superSpeed["cost"]?.number == 0.254862 && superSpeed["runs"] == .bool(true))  // 2 × 7168 of 56250
        let mjpeg = try Self.json(["cost", "--left", "1280x720@30:MJPG", "--right", "640x480@30:YUYV", "--json"])
        #expect(mjpeg["cost"]?.number == 0.958)  // 3060 (largest packet) + 2688 of 6000
    }

    @Test("cost rejects a malformed format or cap before any work")
    func badArguments() throws {
        let bad = try ParallaxCLI.run(["cost", "--left", "1280x720", "--right", "1280x720@30:YUYV"], timeout: 60)
        #expect(bad.status != 0 && bad.stderr.contains("--left"))
        let cap = try ParallaxCLI.run(["cost", "--left", "640x480@30", "--right", "640x480@30", "--max-fps", "-3"], timeout: 60)
        #expect(cap.status != 0 && cap.stderr.contains("--max-fps"))
    }

    /// An unknown or mistyped FOURCC used to be costed as MJPEG ("separate buses fit" for a
    /// typo of YUYV that costs 2.31): now a usage error listing the known codes as V4L2 spells
    /// them, with a hint for a near miss.
    @Test("an unknown or mistyped FOURCC is refused with the known ones, and a hint for a near miss")
    func unknownFourCCs() throws {
        for (code, hint) in [("ZZZZ", nil), ("yuyv", "YUYV"), ("YUVY", "YUYV"), ("MJPEG", nil), ("mjpg", "MJPG")] as [(String, String?)] {
            let result = try ParallaxCLI.run(["cost", "--left", "1280x720@30:\(code)", "--right", "1280x720@30:YUYV"], timeout: 60)
            #expect(result.status == 64, "\(code): status \(result.status)")
            #expect(result.stderr.contains("unknown FOURCC '\(code)'") && result.stderr.contains("YUYV, YV12"), "\(code): \(result.stderr)")
            if let hint { #expect(result.stderr.contains("did you mean \(hint)?"), "\(code): \(result.stderr)") }
            else { #expect(!result.stderr.contains("did you mean"), "\(code): \(result.stderr)") }
            #expect(result.stdout.isEmpty, "\(code): nothing is costed")
        }
    }

    /// Numbers that used to trap or be changed silently: a size whose pixel count overflows
    /// (`HardwareCost` multiplied in Int), a cap below 0.001 fps (raised to 0.001 without a
    /// word). Each is a usage error naming the range; no run ends by a signal.
    @Test("sizes beyond 65535, rates and caps outside 0.001…1000 fps are refused, never trapped or raised")
    func absurdNumbers() throws {
        let cases: [([String], String)] = [
            (["--left", "9223372036854775807x9223372036854775807@30", "--right", "640x480@30"], "from 1 to 65535 pixels"),
            (["--left", "65536x480@30", "--right", "640x480@30"], "from 1 to 65535 pixels"),
            (["--left", "640x480@0.0001", "--right", "640x480@30"], "from 0.001 to 1000 fps"),
            (["--left", "640x480@30", "--right", "640x480@30", "--max-fps", "0.0001"], "outside 0.001 to 1000"),
            (["--left", "640x480@30", "--right", "640x480@30", "--max-fps", "inf"], "outside 0.001 to 1000"),
        ]
        for (arguments, says) in cases {
            let result = try ParallaxCLI.run(["cost"] + arguments, timeout: 60)
            #expect(result.status == 64 && result.stderr.contains(says), "\(arguments): \(result.status) \(result.stderr)")
        }
        // The library's arithmetic holds too: the largest size UVC describes, uncompressed, is
        // refused by cost (no packet holds it), not trapped.
        let largest = try Self.json(["cost", "--left", "65535x65535@1000:AR24", "--right", "640x480@30", "--json"])
        #expect(largest["runs"] == .bool(false))
    }

    /// A refused pair exits 1 (it used to exit 0, so scripts could not tell), with the report
    /// and the alternatives printed as for a pair that runs.
    @Test("cost exits 1 when the pair is refused, 0 when it runs, and prints the report either way")
    func exitStatusSaysWhetherItRuns() throws {
        let refused = try ParallaxCLI.run(["cost", "--left", "1280x720@30:YUYV", "--right", "1280x720@30:YUYV"], timeout: 60)
        #expect(refused.status == 1 && refused.stdout.contains("refused (must stay below 1.0)")
                && refused.stdout.contains("alternatives that fit"), "\(refused.status) \(refused.stdout)")
        let runs = try ParallaxCLI.run(["cost", "--left", "640x480@30:YUYV", "--right", "640x480@30:MJPG"], timeout: 60)
        #expect(runs.status == 0 && runs.stdout.contains("runs"), "\(runs.status) \(runs.stdout)")
    }

    @Test("devices --pairs --json prints valid JSON with an empty list on a machine without cameras")
    func pairsWithoutCameras() throws {
        let empty = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("parallax-nocams-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: empty.appendingPathComponent("dev"), withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: empty) }
        let root = try Self.json(["devices", "--pairs", "--json", "--sysfs", empty.appendingPathComponent("sys").path,
                                  "--dev", empty.appendingPathComponent("dev").path])
        #expect(root["pairs"] == .array([]))
        #expect(root["hint"]?.string?.contains("no V4L2 support") == true)
    }
}
