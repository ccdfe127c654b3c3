import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// A `calibrate` subcommand: its board, fit and output options, and the corners it may read
/// instead of detecting them.
protocol CalibrationCommand {
    /// `--board`, `--square`, `--time-budget`.
    var boardOptions: CalibrationBoardOptions { get }
    /// `--model`, `--loss`, `--keep-outliers`, `--max-rms`.
    var fit: CalibrationFitOptions { get }
    /// `--output`, `--opencv-yaml`, `--ros-dir`, `--report`, `--corners-out`, `--json`.
    var outputs: CalibrationOutputOptions { get }
    /// `--corners-in`, where the subcommand takes one.
    var cornersIn: String? { get }
}

/// A `calibrate` subcommand that calibrates a rig (`pairs`, `live`): one path from pairs to
/// the quality gate, the files and the figures.
protocol StereoCalibrationCommand: CalibrationCommand {
    /// `--fix`, `--intrinsics`, `--kalibr`, `--cross-validate`, `--against`.
    var stereo: StereoFitOptions { get }
}

extension CalibrationCommand {
    /// What every subcommand's run starts with: the clock for `seconds`, the board parsed and
    /// checked before any work, and a word on where the calibration goes without `--output`.
    func beginCalibration() throws -> (start: ContinuousClock.Instant, target: CalibrationBoard) {
        let start = ContinuousClock.now
        let target = try boardOptions.target()
        outputs.announceDefaultOutput()
        return (start, target)
    }

    /// The --corners-in list, read and checked against --board before any work.
    func loadCornerList(target: CalibrationBoard) throws -> CornerList? {
        guard let cornersIn else { return nil }
        let list: CornerList
        do {
            list = try CornerList(contentsOfFile: cornersIn)
        } catch {
            throw CLIError("--corners-in: \(error)")
        }
        if let declared = list.board, declared != (target.columns, target.rows) {
            throw CLIError("--corners-in \(cornersIn) is for a \(declared.columns)x\(declared.rows) board, "
                           + "but --board is \(target.columns)x\(target.rows)")
        }
        return list
    }

    /// The --corners-out JSON for `corners` found in images of `sizes`.
    func cornersJSON(_ corners: [String: [SIMD2<Double>]], sizes: [String: ImageSize], target: CalibrationBoard) -> [UInt8] {
        let images = corners.sorted { $0.key < $1.key }.map { (key, corners) in
            (key, JSONValue.array(corners.map { .array([.number(($0.x * 1e4).rounded() / 1e4), .number(($0.y * 1e4).rounded() / 1e4)]) }))
        }
        let sizeList = sizes.sorted { $0.key < $1.key }.map { key, size in
            (key, JSONValue.array([.number(Double(size.width)), .number(Double(size.height))]))
        }
        let object = JSONValue.object(JSONObject([
            ("tool", .string(cornersIn.map { "corners from \($0)" } ?? "Parallax ChessboardDetector")),
            ("board", .array([.number(Double(target.columns)), .number(Double(target.rows))])),
            ("images", .object(JSONObject(images))),
            ("image_sizes", .object(JSONObject(sizeList))),
        ]))
        return Array((object.serialized() + "\n").utf8)
    }

    func formatted(_ v: Double) -> String { CalibrateCommand.formatted(v) }
}

extension StereoCalibrationCommand {

    /// Refuses `--fix` on a camera whose lens `--model` cannot hold: held intrinsics must
    /// come out as given, not with coefficients dropped.
    func checkHeldLenses(_ initial: StereoCalibration?) throws {
        guard let initial, let file = stereo.intrinsics else { return }
        let held: [(String, CameraModel)] = [(stereo.fix == .left || stereo.fix == .both, ("left", initial.left)),
                                             (stereo.fix == .right || stereo.fix == .both, ("right", initial.right))]
            .filter(\.0).map(\.1)
        for (side, camera) in held {
            if let lens = fit.model.lensItCannotHold(camera) {
                let wider = camera.distortion.isFisheye ? "fisheye" : "brown8"
                throw CLIError("--intrinsics \(file): the \(side) camera has \(lens), which --model \(fit.model.rawValue) "
                               + "cannot hold fixed as given; use --model \(wider)")
            }
        }
    }

    /// The calibrations read (`--intrinsics`, `--against`), each file of a ROS folder or a
    /// comma-separated pair on its own, for ``OutputFiles/check(outputs:inputs:)``.
    var calibrationInputs: [(option: String, path: String)] {
        [("--intrinsics", stereo.intrinsics), ("--against", stereo.against)].flatMap { option, source in
            source.map { CalibrationFile.files(of: $0).map { (option, $0) } } ?? []
        }
    }

    /// The outputs a stereo calibration writes, for ``OutputFiles/check(outputs:inputs:)``.
    var stereoOutputs: [(option: String, path: String)] {
        [("--output", outputs.output), ("--opencv-yaml", outputs.opencvYAML), ("--kalibr", stereo.kalibr), ("--corners-out", outputs.cornersOut)]
            .compactMap { option, path in path.map { (option, $0) } }
            + (outputs.rosDirectory.map { [("--ros-dir", $0 + "/left.yaml"), ("--ros-dir", $0 + "/right.yaml")] } ?? [])
    }

    /// The pipeline for this command's board, model, loss and outlier options, holding `--fix`.
    func stereoPipeline(target: CalibrationBoard) -> CalibrationPipeline {
        fit.pipeline(target: target, board: boardOptions, fixed: stereo.fix)
    }

    /// Calibrates `pairs`, applies the quality gate, writes every output and prints the figures.
    func calibrateStereo(target: CalibrationBoard, pairs: [ImagePairing.Pair], unpaired: [RejectedView], cornerList: CornerList?,
                         reference: StereoCalibration?, initial: StereoCalibration?, start: ContinuousClock.Instant,
                         live: LiveCapture?) throws {
        let clock = ContinuousClock()
        let lensModel = fit.model
        let pipeline = stereoPipeline(target: target)
        CalibrateCommand.log("calibrating \(target), model \(lensModel.rawValue): \(pairs.count) pairs")
        for u in unpaired { CalibrateCommand.log("skipped \(u.name): \(u.reason)") }
        let outcome: CalibrationPipeline.Outcome
        do {
            outcome = try pipeline.run(pairs: pairs, unpaired: unpaired, leftCamera: initial?.left, rightCamera: initial?.right,
                                       cornerList: cornerList) {
                CalibrateCommand.log($0)
            }
        } catch {
            CalibrateCommand.log("error: calibration failed: \(error)")
            throw ExitCode.failure
        }
        let result = outcome.result
        if let reason = CalibrateCommand.qualityProblem(result, maxRMS: fit.maxRMS) {
            CalibrateCommand.log("rms stereo \(formatted(result.rms)) px (left \(formatted(result.rmsLeft)), right \(formatted(result.rmsRight))), "
                     + "baseline \(formatted(result.calibration.baseline))"
                     + (target.unit == .unitless ? " board units" : " \(target.unit.suffix)") + ", \(result.pairs.count) pairs")
            CalibrateCommand.log("error: the calibration is not written: \(reason)")
            throw ExitCode.failure
        }
        let seconds = (clock.now - start).seconds

        // The translation is in the square size's unit: recorded, so distances convert later.
        var calibration = result.calibration
        calibration.translationUnit = target.unit
        if calibration.translationUnit == .unitless {
            CalibrateCommand.log("note: --square has no unit, so the calibration's translations are in board units (\"unit\": \"unitless\"); "
                     + "give the square as 25mm, 2.5cm or 0.025m to record one")
        }
        let comparison = try compare(result, outcome: outcome, reference: reference, pipeline: pipeline)
        // A live calibration knows its cameras: `stream` and `capture` refuse it on others.
        if let live { calibration.calibratedCameras = live.cameras }
        // The fit's own error bars go into the file beside the numbers they qualify.
        let uncertainty = result.uncertainty
        if let uncertainty { calibration.extra["uncertainty"] = uncertainty.parameterJSON }
        // Everything to write, prepared before anything touches the disk.
        var files: [(path: String, bytes: [UInt8])] = []
        files.append((outputs.output, Array(calibration.jsonText().utf8)))
        if let opencvYAML = outputs.opencvYAML {
            files.append((opencvYAML, Array(OpenCVStereoFile.text(for: result.calibration, rectification: result.rectification).utf8)))
        }
        if let rosDirectory = outputs.rosDirectory {
            if target.unit == .unitless {
                CalibrateCommand.log("warning: no unit on --square; ROS camera_info's baseline is written in board units, which ROS reads as metres")
            }
            let (l, r) = ROSCameraInfo.stereoPair(result.calibration, rectification: result.rectification)
            files.append(((rosDirectory as NSString).appendingPathComponent("left.yaml"), Array(l.text.utf8)))
            files.append(((rosDirectory as NSString).appendingPathComponent("right.yaml"), Array(r.text.utf8)))
        }
        if let kalibr = stereo.kalibr {
            let perUnit = target.unit.millimetres.map { $0 / 1000 }
            if perUnit == nil { CalibrateCommand.log("warning: no unit on --square; Kalibr's translation is written in board units, not metres") }
            let (text, warnings) = KalibrCamchain.text(for: result.calibration, metersPerUnit: perUnit ?? 1)
            for w in warnings { CalibrateCommand.log("warning: \(w)") }
            files.append((kalibr, Array(text.utf8)))
        }
        if let cornersOut = outputs.cornersOut {
            files.append((cornersOut, cornersJSON(outcome.corners, sizes: outcome.imageSizes, target: target)))
        }
        if let report = outputs.report {
            do {
                var reported = result
                reported.calibration.translationUnit = calibration.translationUnit
                files += try CalibrateCommand.reportFiles(reported, board: target, directory: report, uncertainty: uncertainty)
                if let comparison {
                    files.append(((report as NSString).appendingPathComponent("cross-validation.svg"),
                                  Array(CalibrationReport.crossValidation([("left", comparison.left), ("right", comparison.right)],
                                                                          between: comparison.between).utf8)))
                }
            } catch {
                CalibrateCommand.log("error: the report could not be drawn: \(error)")
                throw ExitCode.failure
            }
        }
        try OutputFiles.writeAll(files)

        var truthErrors: JSONValue?
        if let live, let truth = live.truth { truthErrors = CalibrateCommand.truthErrors(calibration, truth: truth) }
        if outputs.json {
            var summary = CalibrateCommand.summary(outcome, unit: calibration.translationUnit, seconds: seconds, uncertainty: uncertainty,
                                       comparison: comparison)
            if let live, case .object(var object) = summary {
                object["pairs_taken"] = .number(Double(live.pairs.count))
                object["pairs_streamed"] = .number(Double(live.pairsSeen))
                object["stop_reason"] = .string(live.stopReason.rawValue)
                object["capture_seconds"] = .number(live.seconds)
                if let truthErrors { object["truth_errors"] = truthErrors }
                summary = .object(object)
            }
            print(summary.serialized())
        } else {
            if let live {
                print("live capture: \(live.pairs.count) pairs taken of \(live.pairsSeen) streamed in "
                      + "\(String(format: "%.1f", live.seconds)) s, stopped: \(live.stopReason.rawValue)")
            }
            if let truthErrors { print("against the simulated rig's truth: \(truthErrors.serialized())") }
            let c = result.calibration
            print("pairs used: \(result.pairs.count) of \(outcome.pairsTotal)")
            for r in outcome.rejected { print("  rejected \(r.name): \(r.reason)") }
            if !result.rejectedCorners.isEmpty {
                print("corners left out of the fit: \(result.rejectedCorners.count)")
                for c in result.rejectedCorners { print("  \(c)") }
            }
            print("rms stereo \(formatted(result.rms)) px (left \(formatted(result.rmsLeft)), right \(formatted(result.rmsRight)))")
            print("epipolar error mean \(formatted(result.epipolarErrorMean)) px, rectified vertical rms \(formatted(result.rectifiedVerticalRMS)) px")
            // Each value with its standard deviation from the fit (± σ) where the fit gave one.
            func value(_ v: Double, _ sigma: Double?) -> String {
                formatted(v) + (sigma.map { " ± " + String(format: "%.3g", $0) } ?? "")
            }
            for (name, camera, sigma) in [("left ", c.left, uncertainty?.left), ("right", c.right, uncertainty?.right)] {
                let k = camera.intrinsics
                print("\(name) fx \(value(k.fx, sigma?.fx)) fy \(value(k.fy, sigma?.fy)) "
                      + "cx \(value(k.cx, sigma?.cx)) cy \(value(k.cy, sigma?.cy))")
            }
            print("baseline \(value(c.baseline, uncertainty?.baseline))"
                  + (target.unit == .unitless ? " (board units: --square had no unit)" : " \(target.unit.suffix)"))
            if let comparison {
                func figures(_ d: ProjectionDifference) -> String {
                    "median \(String(format: "%.3g", d.median)), corners up to \(String(format: "%.3g", d.corners.filter(\.isFinite).max() ?? .nan))"
                }
                print("projection difference (px) between \(comparison.between): left \(figures(comparison.left)); "
                      + "right \(figures(comparison.right))")
            }
            if let uncertainty {
                print("projection uncertainty (px, worst direction): left centre \(String(format: "%.3g", uncertainty.leftProjection.center)), "
                      + "corners up to \(String(format: "%.3g", uncertainty.leftProjection.corners.max() ?? .nan)); "
                      + "right centre \(String(format: "%.3g", uncertainty.rightProjection.center)), "
                      + "corners up to \(String(format: "%.3g", uncertainty.rightProjection.corners.max() ?? .nan))")
            }
            print("wrote " + files.map(\.path).filter { !$0.hasSuffix(".svg") && !$0.hasSuffix(".png") && !$0.hasSuffix(".html") }.joined(separator: ", ")
                  + (outputs.report.map { " and the report in \($0)/" } ?? ""))
        }
    }

    /// The --cross-validate or --against comparison, or `nil` when neither was asked for.
    func compare(_ result: StereoCalibrationResult, outcome: CalibrationPipeline.Outcome, reference: StereoCalibration?,
                 pipeline: CalibrationPipeline) throws -> CalibrateCommand.Comparison? {
        if let reference, let against = stereo.against {
            let c = result.calibration
            guard reference.left.size == c.left.size, reference.right.size == c.right.size else {
                throw CLIError("--against \(against) is for \(reference.left.size) images, these are \(c.left.size)")
            }
            return ("this calibration and \(against)", ProjectionDifference(c.left, reference.left),
                    ProjectionDifference(c.right, reference.right))
        }
        guard stereo.crossValidate else { return nil }
        // Alternate pairs, so both halves span the whole session.
        let halves = [stride(from: 0, to: result.pairs.count, by: 2), stride(from: 1, to: result.pairs.count, by: 2)]
            .map { $0.map { result.pairs[$0] } }
        let calibrator = pipeline.stereoCalibrator(fixed: .none)
        guard halves.allSatisfy({ $0.count >= calibrator.minimumPairs }) else {
            throw CLIError("--cross-validate needs at least \(2 * calibrator.minimumPairs) usable pairs (two halves of "
                           + "\(calibrator.minimumPairs)); \(result.pairs.count) were used")
        }
        var solved: [StereoCalibration] = []
        for (index, half) in halves.enumerated() {
            CalibrateCommand.log("cross-validation: calibrating half \(index + 1) of 2 (\(half.count) pairs)")
            do {
                solved.append(try calibrator.calibrate(pairs: half, size: outcome.size).calibration)
            } catch {
                throw CLIError("--cross-validate: half \(index + 1) (\(half.count) pairs) cannot be calibrated: \(error)")
            }
        }
        return ("two halves of the pairs (\(halves[0].count) and \(halves[1].count))",
                ProjectionDifference(solved[0].left, solved[1].left), ProjectionDifference(solved[0].right, solved[1].right))
    }
}
