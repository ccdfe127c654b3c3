import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Testing
@testable import parallax

/// `parallax calibrate --images`: one camera, from rendered boards with a known truth.
@Suite("parallax calibrate --images (one camera)")
struct OneCameraTests {
    /// Renders the demo rig's left camera looking at a 9×6 board (30 mm squares) in `count`
    /// poses into `dir` as PNG files, the way `parallax demo` renders its calibration views.
    static func renderBoards(into dir: URL, count: Int) throws -> CameraModel {
        let truth = GeometryDemoStep.rig
        let board = ChessboardTarget(columns: 9, rows: 6, squareSize: 30)
        let rig = SimulatedStereoRig(calibration: truth, scene: SimulatedScene(backgroundLevel: 110), samplesPerAxis: 3)
        for (index, pose) in CalibrationDemoStep.poses(board: board, camera: rig, count: count).enumerated() {
            var scene = rig
            scene.scene.target = PlacedTarget(target: board, pose: pose)
            try scene.render(.left).write(toFile: dir.appendingPathComponent(String(format: "cam%02d.png", index)).path)
        }
        return truth.left
    }

    @Test("rendered boards give the camera within 0.2 % in focal length and 0.5 px in principal point, in every file format")
    func calibratesOneCameraFromRenderedBoards() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let truth = try Self.renderBoards(into: dir, count: 15)
        let out = dir.appendingPathComponent("out")
        let result = try ParallaxCLI.run([
            "calibrate", "--images", dir.path + "/cam*.png", "--board", "9x6", "--square", "30mm", "--json",
            "--output", out.appendingPathComponent("camera.json").path, "--opencv-yaml", out.appendingPathComponent("camera.yml").path,
            "--ros-dir", out.appendingPathComponent("ros").path, "--report", out.appendingPathComponent("report").path,
            "--corners-out", out.appendingPathComponent("corners.json").path,
        ], timeout: 300)
        #expect(result.status == 0, "stderr: \(result.stderr)")
        let figures = try #require(try JSONValue(parsing: result.stdout).object)
        #expect(figures["images_total"]?.number == 15)
        let used = figures["images_used"]?.number ?? 0
        #expect(used >= 12)
        let written = try CameraCalibrationFile(contentsOfFile: out.appendingPathComponent("camera.json").path).camera
        let k = written.intrinsics, t = truth.intrinsics
        let focal = max(abs(k.fx / t.fx - 1), abs(k.fy / t.fy - 1)), principal = max(abs(k.cx - t.cx), abs(k.cy - t.cy))
        print("one camera from \(Int(used)) rendered boards: focal \(focal * 100) %, principal point \(principal) px, "
              + "rms \(figures["rms"]?.number ?? .nan) px")
        #expect(focal <= 0.002)
        #expect(principal <= 0.5)
        // σ for every parameter and the projection uncertainty at the centre and corners.
        let sigma = try #require(figures["uncertainty"]?.object)
        #expect(["fx", "fy", "cx", "cy"].allSatisfy { (sigma[$0]?.number ?? 0) > 0 })
        #expect(sigma["distortion"]?.array?.count == 5)
        let projection = try #require(figures["projection_uncertainty_px"]?.object)
        #expect((projection["center"]?.number ?? 0) > 0 && projection["corners"]?.array?.count == 4)
        // The camera's other figures, as the file has them, and the time split.
        #expect(figures["principal_point"]?.array?.compactMap(\.number) == [k.cx, k.cy])
        #expect(figures["distortion"]?.array?.compactMap(\.number) == written.distortion.coefficients && written.distortion.coefficients.count == 5)
        let seconds = figures["seconds"]?.number ?? 0, detection = figures["detection_seconds_per_image"]?.number ?? -1
        #expect(detection > 0 && 15 * detection <= seconds, "detection \(detection) s per image of \(seconds) s")
        // camera.json carries the model, the RMS and the standard deviations beside the camera.
        let file = try CameraCalibrationFile(contentsOfFile: out.appendingPathComponent("camera.json").path)
        #expect(file.extra["model"]?.string == "brown5" && file.extra["rms"]?.number == figures["rms"]?.number)
        #expect(file.extra["uncertainty"]?.object?["fx"]?.number == sigma["fx"]?.number && sigma["fx"]?.number != nil)
        // The other formats carry the same camera.
        let ros = try ROSCameraInfo(contentsOfFile: out.appendingPathComponent("ros/camera.yaml").path)
        #expect(abs(ros.camera.intrinsics.fx - k.fx) < 1e-9 * k.fx)
        let yaml = try String(contentsOf: out.appendingPathComponent("camera.yml"), encoding: .utf8)
        #expect(yaml.contains("camera_matrix: !!opencv-matrix") && yaml.contains("distortion_coefficients: !!opencv-matrix")
                && yaml.contains("avg_reprojection_error:"))
        #expect(yaml.contains("image_width: \(truth.size.width)\n") && yaml.contains("image_height: \(truth.size.height)\n"))
        for file in ["report/index.html", "report/projection-uncertainty.svg", "report/residuals-per-view.svg",
                     "report/residual-scatter.svg", "report/coverage.svg"] {
            #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent(file).path), "\(file)")
        }
        // The charts show this calibration: one bar per image used, every image's board outlined.
        let bars = try String(contentsOf: out.appendingPathComponent("report/residuals-per-view.svg"), encoding: .utf8)
        #expect(bars.components(separatedBy: "<rect").count - 1 >= Int(used))
        let coverage = try String(contentsOf: out.appendingPathComponent("report/coverage.svg"), encoding: .utf8)
        #expect(coverage.components(separatedBy: "<polygon").count - 1 == Int(used))
        // index.html: "every parameter with its σ", brown5's 9.
        let page = try String(contentsOf: out.appendingPathComponent("report/index.html"), encoding: .utf8)
        #expect(page.components(separatedBy: " ± ").count - 1 == 9, "\(page)")

        // The same corners again (from --corners-out, no detection): the quality gate refuses a fit
        // above --max-rms with status 1 and writes nothing.
        let gate = dir.appendingPathComponent("gate")
        let refused = try ParallaxCLI.run([
            "calibrate", "--images", dir.path + "/cam*.png", "--board", "9x6", "--square", "30mm",
            "--corners-in", out.appendingPathComponent("corners.json").path, "--max-rms", "0.0001",
            "--output", gate.appendingPathComponent("camera.json").path, "--opencv-yaml", gate.appendingPathComponent("camera.yml").path,
            "--ros-dir", gate.appendingPathComponent("ros").path, "--report", gate.appendingPathComponent("report").path,
        ])
        #expect(refused.status == 1 && refused.stderr.contains("above --max-rms"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: gate.path))
        // An image listed without a board is set aside: --json's `rejected` names it, with the reason.
        var list = try CornerList(contentsOfFile: out.appendingPathComponent("corners.json").path)
        let third = dir.appendingPathComponent("cam03.png").path
        try #require(list.entries[third]?.corners != nil)
        list.entries[third]?.corners = nil
        let partial = dir.appendingPathComponent("partial.json").path
        try CornersInTests.json(list).write(toFile: partial, atomically: true, encoding: .utf8)
        let less = try ParallaxCLI.run(["calibrate", "--images", dir.path + "/cam*.png", "--board", "9x6", "--square", "30mm",
                                        "--corners-in", partial, "--json", "--output", dir.appendingPathComponent("less.json").path])
        #expect(less.status == 0, "\(less.stderr)")
        let lessFigures = try #require(try JSONValue(parsing: less.stdout).object)
        let rejected = lessFigures["rejected"]?.array?.compactMap(\.object) ?? []
        #expect(rejected.count == Int((lessFigures["images_total"]?.number ?? 0) - (lessFigures["images_used"]?.number ?? 0)))
        #expect(rejected.contains { $0.keys.sorted() == ["image", "reason"] && $0["image"]?.string == third
                    && $0["reason"]?.string?.contains("no full board in the corner list") == true }, "\(rejected)")
    }

    @Test("the one-camera file round-trips, keeps unknown keys, and refuses a stereo file by its format")
    func oneCameraFileRoundTrips() throws {
        let file = CameraCalibrationFile(camera: GeometryDemoStep.rig.left, extra: ["rms": .number(0.25), "note": .string("x")])
        let again = try CameraCalibrationFile(jsonText: file.jsonText(), source: "camera.json")
        #expect(again.camera == file.camera && again.extra["rms"]?.number == 0.25 && again.extra["note"]?.string == "x")
        #expect(again.jsonText() == file.jsonText())
        #expect(throws: CalibrationFileError.self) {
            try CameraCalibrationFile(jsonText: GeometryDemoStep.rig.jsonText(), source: "rig.json")
        }
        do {
            _ = try CameraCalibrationFile(jsonText: GeometryDemoStep.rig.jsonText(), source: "rig.json")
        } catch {
            #expect(error.description.contains("rig.json") && error.description.contains("parallax-camera-calibration"))
        }
    }

    @Test("--images with --left, or with --kalibr, is refused before any work: calibrate camera has neither")
    func mixedModesAreRefused() throws {
        let both = try ParallaxCLI.run(["calibrate", "--images", "a.png", "--left", "l.png", "--board", "9x6", "--square", "1"])
        #expect(both.status != 0 && both.stderr.contains("Unknown option '--left'"), "\(both.stderr)")
        let kalibr = try ParallaxCLI.run(["calibrate", "camera", "--images", "a.png", "--kalibr", "k.yaml", "--board", "9x6", "--square", "1"])
        #expect(kalibr.status != 0 && kalibr.stderr.contains("Unknown option '--kalibr'"), "\(kalibr.stderr)")
        let neither = try ParallaxCLI.run(["calibrate", "--board", "9x6", "--square", "1"])
        #expect(neither.status != 0 && neither.stderr.contains("--images"), "\(neither.stderr)")
    }
}
