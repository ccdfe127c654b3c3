import Foundation
import ParallaxGeometry
import Testing

@Suite("parallax cost and devices --pairs")
struct CostCommandTests {
    static func json(_ arguments: [String]) throws -> JSONObject {
        let result = try ParallaxCLI.run(arguments, timeout: 60)
        #expect(result.status == 0, "\(result.stderr)")
        return try #require(try JSONValue(parsing: result.stdout).object, "not a JSON object: \(result.stdout)")
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
