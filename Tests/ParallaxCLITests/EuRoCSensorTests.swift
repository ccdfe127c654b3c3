import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry
import Testing
@testable import parallax

/// EuRoC's `sensor.yaml`: written by `capture` beside each camera's `data.csv` when the
/// calibration is known, read back as a calibration (`--calibration DIR`, and a recording's own).
@Suite("EuRoC sensor.yaml, written and read")
struct EuRoCSensorTests {
    /// Differences of a transform that went through `inverse` twice: each entry is a few
    /// products of unit-norm rotations and the translation, so a few ulps of the largest
    /// (|t| ≤ 0.2 m here): 1e-15 is far above them and far below any wrong sign or unit.
    static let roundTrip = 1e-15

    static func largest(_ v: SIMD3<Double>) -> Double { max(abs(v.x), abs(v.y), abs(v.z)) }

    @Test("the simulated rig's recording carries its calibration: sensor.yaml read back equals the rig's, in metres, at 30 Hz")
    func simulatedRecordingCarriesItsCalibration() throws {
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let rec = dir.appendingPathComponent("rec").path
        let run = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "2", "--output", rec])
        #expect(run.status == 0, "\(run.stderr)")
        let truth = SimulatedStereoRig.example(size: ImageSize(width: 160, height: 120)).calibration
        #expect(truth.translationUnit == .metre)
        let (loaded, format) = try CalibrationFile.load(rec)
        #expect(format == .eurocSensor && loaded.translationUnit == .metre)
        // The same cameras; the lens read from the file's four radial-tangential terms (the rig's k3 is 0).
        for side in StereoSide.allCases {
            #expect(loaded[side].size == truth[side].size && loaded[side].intrinsics == truth[side].intrinsics)
            #expect(loaded[side].distortion.coefficients == Array(truth[side].distortion.coefficients.prefix(4)),
                    "\(loaded[side].distortion) \(truth[side].distortion)")
        }
        let r = (loaded.extrinsics.rotation - truth.extrinsics.rotation).rowMajor.map(abs).max() ?? .infinity
        let t = Self.largest(loaded.extrinsics.translation - truth.extrinsics.translation)
        #expect(r <= Self.roundTrip && t <= Self.roundTrip, "rotation \(r), translation \(t)")
        let left = try String(contentsOfFile: rec + "/cam0/sensor.yaml", encoding: .utf8)
        for line in ["sensor_type: camera", "rate_hz: 30.0", "resolution: [160, 120]", "camera_model: pinhole",
                     "distortion_model: radial-tangential", "  data: [1.0, 0.0, 0.0, 0.0,"] {
            #expect(left.contains(line), "cam0/sensor.yaml has no \(line):\n\(left)")
        }
        // Played back, the recording knows its calibration, and says so.
        let played = try ParallaxCLI.run(["stream", "--recording", rec, "--raw"], timeout: 120)
        #expect(played.status == 0 && played.stderr.contains("(its cameras' sensor.yaml: a calibration)"), "\(played.stderr)")
    }

    @Test("rectified pairs are described as the rectified cameras: no distortion, P1's and P2's intrinsics, the baseline along x")
    func rectifiedRecordingDescribesTheRectifiedCameras() throws {
        let size = ImageSize(width: 160, height: 120)
        let calibration = SimulatedStereoRig.example(size: size).calibration
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rig.json").path
        try FileAccess.writeAtomically(calibration.jsonText(), toPath: file)
        let rec = dir.appendingPathComponent("rect").path
        let run = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "2", "--calibration", file,
                                       "--output", rec])
        #expect(run.status == 0, "\(run.stderr)")
        let rectification = try calibration.rectification()
        let (loaded, _) = try CalibrationFile.load(rec)
        #expect(loaded.left.intrinsics == rectification.leftIntrinsics && loaded.right.intrinsics == rectification.rightIntrinsics)
        #expect(loaded.left.distortion == .none && loaded.right.distortion == .none)
        #expect(loaded.extrinsics.rotation == .identity)
        let expected = rectification.r2 * calibration.extrinsics.translation
        #expect(Self.largest(loaded.extrinsics.translation - expected) <= Self.roundTrip, "\(loaded.extrinsics.translation) vs \(expected)")
        #expect(abs(loaded.extrinsics.translation.y) <= Self.roundTrip && abs(loaded.extrinsics.translation.z) <= Self.roundTrip)
    }

    @Test("what the format cannot hold is not written, and said: a calibration without a unit, a lens with k3 or rational terms, skew")
    func unrepresentableCalibrationsAreRefused() throws {
        let truth = SimulatedStereoRig.example(size: ImageSize(width: 160, height: 120)).calibration
        var unitless = truth
        unitless.translationUnit = .unitless
        #expect(throws: CaptureError.self) { try EuRoCSensorFile.texts(for: unitless, rateHz: 30) }
        var withK3 = truth
        withK3.left.distortion = .brownConrady(BrownConrady(k1: -0.1, k3: 0.01))
        do {
            _ = try EuRoCSensorFile.texts(for: withK3, rateHz: 30)
            Issue.record("a lens with k3 was written as radial-tangential")
        } catch {
            #expect("\(error)".contains("k1, k2, p1, p2"), "\(error)")
        }
        var rational = truth
        rational.right.distortion = .brownConrady(BrownConrady(k1: -0.1, k4: 0.02))
        #expect(throws: CaptureError.self) { try EuRoCSensorFile.texts(for: rational, rateHz: 30) }
        var skewed = truth
        skewed.left.intrinsics.skew = 0.5
        do {
            _ = try EuRoCSensorFile.texts(for: skewed, rateHz: 30)
            Issue.record("a camera with skew was written as a pinhole without it")
        } catch {
            #expect("\(error)".contains("skew (0.5)"), "\(error)")
        }
        // A fisheye lens is the format's equidistant model, read back as it was.
        var fisheye = truth
        fisheye.left.distortion = .kannalaBrandt(KannalaBrandt(k1: 0.1, k2: -0.02, k3: 0.003, k4: -0.0004))
        let texts = try EuRoCSensorFile.texts(for: fisheye, rateHz: 20)
        #expect(texts.left.contains("distortion_model: equidistant"))
        let back = try EuRoCSensorYAML(text: texts.left, file: "cam0/sensor.yaml")
        #expect(back.camera == fisheye.left && back.rateHz == 20 && back.bodyFromCamera == .identity)
    }

    @Test("capture with a calibration sensor.yaml cannot hold (OpenCV's YAML: no unit) keeps the pairs, writes no sensor.yaml, and says why")
    func captureSaysWhyNoSensorFile() throws {
        var calibration = SimulatedStereoRig.example(size: ImageSize(width: 160, height: 120)).calibration
        calibration.translationUnit = .unitless
        let dir = try ParallaxCLI.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("rig.yaml").path
        try OpenCVStereoFile.write(calibration, rectification: nil, toFile: file)
        let rec = dir.appendingPathComponent("rec").path
        let run = try ParallaxCLI.run(["capture", "--simulated", "--size", "160x120", "--frames", "2", "--calibration", file,
                                       "--output", rec])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("no sensor.yaml written: the calibration's translation has no unit"), "\(run.stderr)")
        for camera in ["cam0", "cam1"] {
            #expect(!FileManager.default.fileExists(atPath: "\(rec)/\(camera)/sensor.yaml"), "\(camera)/sensor.yaml was written")
            let rows = try String(contentsOfFile: "\(rec)/\(camera)/data.csv", encoding: .utf8).split(separator: "\n")
            #expect(rows.count == 3, "\(camera)/data.csv, a header and two frames: \(rows)")
        }
    }

    @Test("a malformed sensor.yaml is named with its field and line", arguments: [
        ("intrinsics: [458.6, 457.3, 367.2]", "intrinsics must be [fu, fv, cu, cv]"),
        ("camera_model: omni", "camera_model is omni"),
        ("distortion_model: fov", "fov"),
        ("resolution: [752.5, 480]", "resolution must be [width, height]"),
        ("  data: [2.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]", "T_BS is not a rigid motion"),
        ("sensor_type: imu", "sensor_type is imu"),
    ])
    func malformedFilesAreNamed(replacement: String, says: String) throws {
        let good = """
            sensor_type: camera
            T_BS:
              cols: 4
              rows: 4
              data: [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0]
            rate_hz: 20
            resolution: [752, 480]
            camera_model: pinhole
            intrinsics: [458.6, 457.3, 367.2, 248.4]
            distortion_model: radial-tangential
            distortion_coefficients: [-0.28, 0.07, 0.0002, 0.00002]
            """
        #expect(try EuRoCSensorYAML(text: good, file: "cam0/sensor.yaml").camera.size == ImageSize(width: 752, height: 480))
        let key = replacement.trimmingCharacters(in: .whitespaces).split(separator: ":")[0] + ":"
        let bad = good.split(separator: "\n").map { line in
            line.trimmingCharacters(in: .whitespaces).hasPrefix(key) ? replacement : String(line)
        }.joined(separator: "\n")
        do {
            _ = try EuRoCSensorYAML(text: bad, file: "cam0/sensor.yaml")
            Issue.record("accepted: \(replacement)")
        } catch {
            #expect(error.description.contains("cam0/sensor.yaml") && error.description.contains(says), "\(error)")
        }
    }
}
