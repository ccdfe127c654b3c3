import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// `parallax calibrate camera`: one camera alone, with the same detection, gates and outputs
/// as a stereo rig, written as one-camera files.
struct CalibrateCameraCommand: AsyncParsableCommand, CalibrationCommand {
    static let configuration = CommandConfiguration(
        commandName: "camera",
        abstract: "Calibrate one camera from its images (also spelled `parallax calibrate --images …`).",
        discussion: """
            Writes one-camera files: Parallax JSON (--output), OpenCV YAML (--opencv-yaml) and ROS \
            camera_info (camera.yaml in --ros-dir). The quality gate refuses a fit whose RMS \
            reprojection error is above --max-rms.

            Example:
              parallax calibrate camera --images 'cam*.png' --board 9x6 --square 25mm --output camera.json
            """)

    @Option(name: .long, parsing: .upToNextOption, help: "The camera's images: a quoted glob ('cam*.png') or a list of files.")
    var images: [String] = []

    @Option(name: .customLong("corners-in"),
            help: "Take each image's corners from this list instead of detecting them: the JSON --corners-out writes, or mrcal's corners.vnl (see Calibration/GUIDE.md).")
    var cornersIn: String?

    @OptionGroup(title: "Board") var boardOptions: CalibrationBoardOptions
    @OptionGroup(title: "Fit") var fit: CalibrationFitOptions
    @OptionGroup(title: "Outputs") var outputs: CalibrationOutputOptions

    func validate() throws {
        if images.isEmpty { throw ValidationError("give --images: the camera's images (a quoted glob or a list of files)") }
        try boardOptions.requireBoard()
    }

    func run() async throws {
        let (start, target) = try beginCalibration()
        let files = try CalibrateCommand.expand(images, option: "--images")
        try OutputFiles.check(
            outputs: [("--output", outputs.output), ("--opencv-yaml", outputs.opencvYAML), ("--corners-out", outputs.cornersOut)]
                .compactMap { option, path in path.map { (option, $0) } }
                + (outputs.rosDirectory.map { [("--ros-dir", $0 + "/camera.yaml")] } ?? []),
            inputs: files.map { ("--images", $0) } + (cornersIn.map { [("--corners-in", $0)] } ?? []))
        let cornerList = try loadCornerList(target: target)

        let pipeline = fit.pipeline(target: target, board: boardOptions)
        CalibrateCommand.log("calibrating one camera, \(target), model \(fit.model.rawValue): \(files.count) images")
        let outcome: CalibrationPipeline.MonoOutcome
        do {
            outcome = try pipeline.runMono(images: files, cornerList: cornerList) { CalibrateCommand.log($0) }
        } catch {
            CalibrateCommand.log("error: calibration failed: \(error)")
            throw ExitCode.failure
        }
        let result = outcome.result
        // The quality gate: a plainly wrong fit is not written.
        if !(result.rms <= fit.maxRMS) {
            CalibrateCommand.log("rms \(CalibrateCommand.formatted(result.rms)) px, \(result.viewNames.count) images")
            CalibrateCommand.log("error: the calibration is not written: the RMS error is \(CalibrateCommand.formatted(result.rms)) px, "
                                 + "above --max-rms \(CalibrateCommand.formatted(fit.maxRMS)) px: --board may be wrong, or the images not of one camera")
            throw ExitCode.failure
        }
        let seconds = (ContinuousClock.now - start).seconds
        let uncertainty = result.uncertainty
        let camera = result.camera

        var extra: [String: JSONValue] = ["rms": .number(result.rms), "model": .string(fit.model.rawValue)]
        if let uncertainty { extra["uncertainty"] = uncertainty.parameters.json }
        var written: [(path: String, bytes: [UInt8])] = [
            (outputs.output, Array(CameraCalibrationFile(camera: camera, extra: extra).jsonText().utf8)),
        ]
        if let opencvYAML = outputs.opencvYAML { written.append((opencvYAML, Array(OpenCVCameraFile.text(for: camera, rms: result.rms).utf8))) }
        if let rosDirectory = outputs.rosDirectory {
            let info = ROSCameraInfo(cameraName: "camera", camera: camera)
            written.append(((rosDirectory as NSString).appendingPathComponent("camera.yaml"), Array(info.text.utf8)))
        }
        if let cornersOut = outputs.cornersOut { written.append((cornersOut, cornersJSON(outcome.corners, sizes: outcome.imageSizes, target: target))) }
        if let report = outputs.report {
            func path(_ name: String) -> String { (report as NSString).appendingPathComponent(name) }
            written.append((path("residuals-per-view.svg"), Array(CalibrationReport.residualsPerView(result).utf8)))
            written.append((path("residual-scatter.svg"), Array(CalibrationReport.residualScatter(result).utf8)))
            written.append((path("coverage.svg"), Array(CalibrationReport.coverage(result, corners: outcome.corners, columns: target.columns,
                                                                                   rows: target.rows).utf8)))
            if let uncertainty {
                written.append((path("projection-uncertainty.svg"),
                                Array(CalibrationReport.projectionUncertainty([("camera", uncertainty.projection)]).utf8)))
            }
            written.append((path("index.html"), Array(CalibrationReport.cameraPage(result, uncertainty: uncertainty).utf8)))
        }
        try OutputFiles.writeAll(written)

        if outputs.json {
            let rejected = outcome.rejected.map { v in
                JSONValue.object(JSONObject([("image", .string(v.name)), ("reason", .string(v.reason))]))
            }
            let detection = outcome.detectionSeconds.isEmpty
                ? 0 : outcome.detectionSeconds.reduce(0, +) / Double(outcome.detectionSeconds.count)
            print(JSONValue.object(JSONObject([
                ("images_total", .number(Double(outcome.imagesTotal))),
                ("images_used", .number(Double(result.viewNames.count))),
                ("rejected", .array(rejected)),
                ("rms", .number(result.rms)),
                ("focal", .array([.number(camera.intrinsics.fx), .number(camera.intrinsics.fy)])),
                ("principal_point", .array([.number(camera.intrinsics.cx), .number(camera.intrinsics.cy)])),
                ("distortion", .array(camera.distortion.coefficients.map(JSONValue.number))),
                ("uncertainty", uncertainty?.parameters.json ?? .null),
                ("projection_uncertainty_px", uncertainty?.projection.json ?? .null),
                ("seconds", .number(seconds)),
                ("detection_seconds_per_image", .number(detection)),
            ])).serialized())
        } else {
            print("images used: \(result.viewNames.count) of \(outcome.imagesTotal)")
            for r in outcome.rejected { print("  rejected \(r.name): \(r.reason)") }
            print("rms \(CalibrateCommand.formatted(result.rms)) px")
            func value(_ v: Double, _ sigma: Double?) -> String {
                CalibrateCommand.formatted(v) + (sigma.map { " ± " + String(format: "%.3g", $0) } ?? "")
            }
            let k = camera.intrinsics, sigma = uncertainty?.parameters
            print("fx \(value(k.fx, sigma?.fx)) fy \(value(k.fy, sigma?.fy)) cx \(value(k.cx, sigma?.cx)) cy \(value(k.cy, sigma?.cy))")
            if let p = uncertainty?.projection {
                print("projection uncertainty (px, worst direction): centre \(String(format: "%.3g", p.center)), "
                      + "corners up to \(String(format: "%.3g", p.corners.filter(\.isFinite).max() ?? .nan))")
            }
            print("wrote " + written.map(\.path).filter { !$0.hasSuffix(".svg") && !$0.hasSuffix(".html") }.joined(separator: ", ")
                  + (outputs.report.map { " and the report in \($0)/" } ?? ""))
        }
    }
}
