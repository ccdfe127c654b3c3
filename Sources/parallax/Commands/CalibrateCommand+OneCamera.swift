import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// `parallax calibrate --images`: one camera alone, with the same detection, gates and
/// outputs as a stereo rig, written as one-camera files.
extension CalibrateCommand {
    func runOneCamera(target: CalibrationBoard, start: ContinuousClock.Instant) throws {
        let files = try Self.expand(images, option: "--images")
        try OutputFiles.check(
            outputs: [("--output", output), ("--opencv-yaml", opencvYAML), ("--corners-out", cornersOut)]
                .compactMap { option, path in path.map { (option, $0) } }
                + (rosDirectory.map { [("--ros-dir", $0 + "/camera.yaml")] } ?? []),
            inputs: files.map { ("--images", $0) } + (cornersIn.map { [("--corners-in", $0)] } ?? []))
        let cornerList = try loadCornerList(target: target)

        var pipeline = CalibrationPipeline(board: target, model: model)
        pipeline.timeBudgetSeconds = timeBudget.seconds
        if loss == .squared { pipeline.loss = .squared }  // else the pipeline's default, Huber
        pipeline.rejectOutliers = !keepOutliers
        Self.log("calibrating one camera, \(target), model \(model.rawValue): \(files.count) images")
        let outcome: CalibrationPipeline.MonoOutcome
        do {
            outcome = try pipeline.runMono(images: files, cornerList: cornerList) { Self.log($0) }
        } catch {
            Self.log("error: calibration failed: \(error)")
            throw ExitCode.failure
        }
        let result = outcome.result
        // The quality gate: a plainly wrong fit is not written.
        if !(result.rms <= maxRMS) {
            Self.log("rms \(Self.formatted(result.rms)) px, \(result.viewNames.count) images")
            Self.log("error: the calibration is not written: the RMS error is \(Self.formatted(result.rms)) px, above --max-rms "
                     + "\(Self.formatted(maxRMS)) px: --board may be wrong, or the images not of one camera")
            throw ExitCode.failure
        }
        let elapsed = (ContinuousClock.now - start).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
        let uncertainty = result.uncertainty
        let camera = result.camera

        var extra: [String: JSONValue] = ["rms": .number(result.rms), "model": .string(model.rawValue)]
        if let uncertainty { extra["uncertainty"] = uncertainty.parameters.json }
        var written: [(path: String, bytes: [UInt8])] = [
            (output, Array(CameraCalibrationFile(camera: camera, extra: extra).jsonText().utf8)),
        ]
        if let opencvYAML { written.append((opencvYAML, Array(OpenCVCameraFile.text(for: camera, rms: result.rms).utf8))) }
        if let rosDirectory {
            let info = ROSCameraInfo(cameraName: "camera", camera: camera)
            written.append(((rosDirectory as NSString).appendingPathComponent("camera.yaml"), Array(info.text.utf8)))
        }
        if let cornersOut { written.append((cornersOut, cornersJSON(outcome.corners, sizes: outcome.imageSizes, target: target))) }
        if let report {
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

        if json {
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
            print("rms \(Self.formatted(result.rms)) px")
            func value(_ v: Double, _ sigma: Double?) -> String {
                Self.formatted(v) + (sigma.map { " ± " + String(format: "%.3g", $0) } ?? "")
            }
            let k = camera.intrinsics, sigma = uncertainty?.parameters
            print("fx \(value(k.fx, sigma?.fx)) fy \(value(k.fy, sigma?.fy)) cx \(value(k.cx, sigma?.cx)) cy \(value(k.cy, sigma?.cy))")
            if let p = uncertainty?.projection {
                print("projection uncertainty (px, worst direction): centre \(String(format: "%.3g", p.center)), "
                      + "corners up to \(String(format: "%.3g", p.corners.filter(\.isFinite).max() ?? .nan))")
            }
            print("wrote " + written.map(\.path).filter { !$0.hasSuffix(".svg") && !$0.hasSuffix(".html") }.joined(separator: ", ")
                  + (report.map { " and the report in \($0)/" } ?? ""))
        }
    }
}
