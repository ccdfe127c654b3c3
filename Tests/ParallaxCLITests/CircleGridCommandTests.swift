import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing

/// `--target circles:…` and `acircles:…` through the CLI: printing the sheet and calibrating.
@Suite("parallax target and calibrate with circle grids")
struct CircleGridCommandTests {
    @Test("parallax target --target acircles:4x11 draws 44 circles; circles:7x6 draws 42")
    func printsCircleGrids() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        // Calibration/GUIDE.md: printed radius 0.45 spacings (asymmetric), 0.3 (symmetric); 15 mm here.
        for (spec, count, radius) in [("acircles:4x11", 44, "6.75"), ("circles:7x6", 42, "4.5")] {
            let path = dir.appendingPathComponent("\(count).svg").path
            let result = try ParallaxCLI.run(["target", "--target", spec, "--square", "15mm", "--output", path])
            #expect(result.status == 0, "stderr: \(result.stderr)")
            let svg = try String(contentsOfFile: path, encoding: .utf8)
            #expect(svg.components(separatedBy: "<circle ").count - 1 == count)
            #expect(svg.components(separatedBy: "r=\"\(radius)\"").count - 1 == count, "\(spec): every circle of radius \(radius) mm")
            #expect(svg.contains("circle grid"))
        }
        // Calibration/GUIDE.md's two commands as written: 42 circles of 0.3 × 25 mm = 7.5 mm radius, and
        // 44 of 0.45 × 20 mm = 9 mm radius (on portrait A4), each sheet fitting the default paper.
        for (spec, square, output, count, radius) in [("circles:7x6", "25mm", "circles.svg", 42, "7.5"),
                                                      ("acircles:4x11", "20mm", "acircles.svg", 44, "9.0")] {
            let guide = try ParallaxCLI.run(["target", "--target", spec, "--square", square, "--output", output], workingDirectory: dir)
            #expect(guide.status == 0, "\(spec) \(square): \(guide.stderr)")
            let svg = try String(contentsOf: dir.appendingPathComponent(output), encoding: .utf8)
            #expect(svg.components(separatedBy: "<circle ").count - 1 == count)
            #expect(svg.components(separatedBy: "r=\"\(radius)\"").count - 1 == count, "\(spec): every circle of radius \(radius) mm")
            if spec.hasPrefix("acircles") { #expect(svg.contains("width=\"210.0mm\" height=\"297.0mm\"")) }
        }
    }

    @Test("calibrate --images --target circles:7x6 uses every rendered grid and finds the camera")
    func calibratesFromCircleImages() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let camera = CameraModel(size: ImageSize(width: 320, height: 240), intrinsics: CameraIntrinsics(fx: 280, fy: 280, cx: 161, cy: 118),
                                 distortion: .brownConrady(BrownConrady(k1: -0.05, k2: 0.01)))
        let grid = ChessboardTarget(columns: 7, rows: 6, squareSize: 30, pattern: .circles)
        let centre = SIMD3(90.0, 75, 0)
        let turns: [SIMD3<Double>] = [SIMD3(0.4, 0.1, 0), SIMD3(-0.4, 0.2, 0.1), SIMD3(0.1, 0.45, -0.1), SIMD3(-0.2, -0.45, 0),
                                      SIMD3(0.35, -0.3, 0.2), SIMD3(-0.3, 0.35, -0.2), SIMD3(0, 0, 0.3), SIMD3(0.5, 0, 0)]
        for (index, turn) in turns.enumerated() {
            let rotation = Matrix3x3(rodrigues: turn)
            let pose = RigidTransform(rotation: rotation, translation: SIMD3(0, 0, 520) - rotation * centre)
            let scene = SimulatedScene(backgroundLevel: 120, target: PlacedTarget(target: grid, pose: pose))
            try SceneRenderer(samplesPerAxis: 2).render(scene, camera: camera)
                .write(toFile: dir.appendingPathComponent(String(format: "grid%02d.png", index)).path)
        }
        let result = try ParallaxCLI.run(["calibrate", "--images", dir.path + "/grid*.png", "--target", "circles:7x6", "--square", "30mm",
                                          "--output", dir.appendingPathComponent("camera.json").path, "--json"], timeout: 300)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let figures = try #require(try JSONValue(parsing: result.stdout).object)
        #expect(figures["images_used"]?.number == Double(turns.count))
        let focal = figures["focal"]?.array?.compactMap(\.number) ?? []
        #expect(focal.count == 2 && focal.allSatisfy { abs($0 / 280 - 1) < 0.01 })
        #expect((figures["rms"]?.number ?? 1) < 0.1)
    }
}
