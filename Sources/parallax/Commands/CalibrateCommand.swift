import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// `parallax calibrate`: a stereo rig from pairs of board images (`pairs`, the default), from a
/// running stereo device (`live`), or one camera from its images (`camera`). The three share
/// their option groups (``CalibrationBoardOptions``, ``CalibrationFitOptions``,
/// ``CalibrationOutputOptions``; a rig's also ``StereoFitOptions``) and, for a rig, one
/// solve-check-write path (``StereoCalibrationCommand``).
struct CalibrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calibrate",
        abstract: "Calibrate a stereo rig from pairs of board images or from live cameras, or one camera from its images.",
        discussion: """
            calibrate pairs (the default: `parallax calibrate --left … --right …` is the same): files pair by \
            the number in their names (left07.png with right07.png; --pair-by order pairs them in sorted \
            order instead). Pairs where an image cannot be read, the board is not found on both sides, or the \
            size differs are set aside with the reason; the command fails when fewer than 3 usable pairs remain.

            calibrate live (also spelled `calibrate --live`): the pairs come from a running stereo device \
            (--simulated, --virtual, or --left DEV --right DEV); still pairs are taken whenever the view adds \
            coverage, saved, and calibrated as files would be.

            calibrate camera (also spelled `calibrate --images …`): one camera alone, written as one-camera \
            files (Parallax JSON, OpenCV YAML, ros/camera.yaml).

            Quality gate: nothing is written, and the command fails with the figures and the reason, when \
            the RMS reprojection error is above --max-rms (1 px by default) or a rig's baseline is under \
            1 % of the median board distance. Translations are in the unit of --square, which the \
            calibration records ("unit": "mm"). Progress goes to stderr; every output is written only once \
            the calibration has succeeded, each file atomically. `parallax calibrate SUBCOMMAND --help` \
            lists each one's options; Calibration/GUIDE.md explains them all.

            Examples:
              parallax calibrate --left 'left*.jpg' --right 'right*.jpg' --board 9x6 --square 25mm --output rig.json
              parallax calibrate pairs --left 'left*.jpg' --right 'right*.jpg' --board 9x6 --square 25mm --output rig.json --opencv-yaml rig.yml --ros-dir ros --report report
              parallax calibrate camera --images 'cam*.png' --board 9x6 --square 25mm --output camera.json
              parallax calibrate live --simulated --output rig.json --json
              parallax calibrate live --virtual --format 1280x720@30:MJPG --output rig.json --json
              parallax calibrate live --left /dev/video0 --right /dev/video2 --board 9x6 --square 25mm
            """,
        subcommands: [CalibratePairsCommand.self, CalibrateLiveCommand.self, CalibrateCameraCommand.self],
        defaultSubcommand: CalibratePairsCommand.self)

    /// The arguments after `parallax`, with the flag spellings of the modes that became
    /// subcommands turned into them: `calibrate --live …` is `calibrate live …` and
    /// `calibrate --images …` is `calibrate camera --images …` (both documented before the
    /// subcommands, and still taught). Anything else is returned unchanged.
    static func subcommandSpellings(_ arguments: [String]) -> [String] {
        guard arguments.first == configuration.commandName, arguments.count > 1 else { return arguments }
        let names = Set(configuration.subcommands.compactMap { $0.configuration.commandName } + ["help"])
        var rest = Array(arguments.dropFirst())
        if names.contains(rest[0]) { return arguments }
        if rest.contains("--live") {
            rest.removeAll { $0 == "--live" }
            return [arguments[0], "live"] + rest
        }
        if rest.contains("--images") { return [arguments[0], "camera"] + rest }
        return arguments
    }

    static func formatted(_ v: Double) -> String { String(format: "%.4f", v) }

    /// The `--json` object.
    static func summary(_ outcome: CalibrationPipeline.Outcome, unit: LengthUnit, seconds: Double,
                        uncertainty: StereoUncertainty?, comparison: Comparison?) -> JSONValue {
        let r = outcome.result
        let c = r.calibration
        let rejected = outcome.rejected.map { v in
            JSONValue.object(JSONObject([
                ("left", v.left.map(JSONValue.string) ?? .null), ("right", v.right.map(JSONValue.string) ?? .null),
                ("reason", .string(v.reason)),
            ]))
        }
        let detection = outcome.detectionSeconds.isEmpty ? 0 : outcome.detectionSeconds.reduce(0, +) / Double(outcome.detectionSeconds.count)
        return .object(JSONObject([
            ("pairs_total", .number(Double(outcome.pairsTotal))),
            ("pairs_used", .number(Double(r.pairs.count))),
            ("rejected", .array(rejected)),
            ("rejected_corners", .array(r.rejectedCorners.map { c in
                .object(JSONObject([("image", .string(c.image)), ("corner", .number(Double(c.index))),
                                    ("residual_px", .number(c.residual)), ("limit_px", .number(c.limit))]))
            })),
            ("rms_left", .number(r.rmsLeft)),
            ("rms_right", .number(r.rmsRight)),
            ("rms_stereo", .number(r.rms)),
            ("baseline", .number(c.baseline)),
            ("unit", .string(unit.rawValue)),
            ("epipolar_error_mean", .number(r.epipolarErrorMean)),
            ("rectified_vertical_rms", .number(r.rectifiedVerticalRMS)),
            ("focal_left", .array([.number(c.left.intrinsics.fx), .number(c.left.intrinsics.fy)])),
            ("focal_right", .array([.number(c.right.intrinsics.fx), .number(c.right.intrinsics.fy)])),
            ("seconds", .number(seconds)),
            ("detection_seconds_per_image", .number(detection)),
            ("solve_seconds", .number(outcome.solveSeconds)),
            ("uncertainty", uncertainty?.parameterJSON ?? .null),
            ("projection_uncertainty_px", uncertainty?.projectionJSON ?? .null),
        ] + (comparison.map { c in
            [("cross_validation", JSONValue.object(JSONObject([
                ("between", .string(c.between)), ("left", c.left.json), ("right", c.right.json),
            ])))]
        } ?? [])))
    }

    /// The report's files (SVG charts, rectified previews, index.html).
    static func reportFiles(_ result: StereoCalibrationResult, board: CalibrationBoard, directory: String,
                            uncertainty: StereoUncertainty?) throws -> [(path: String, bytes: [UInt8])] {
        func path(_ name: String) -> String { (directory as NSString).appendingPathComponent(name) }
        var files: [(path: String, bytes: [UInt8])] = [
            (path("residuals-per-view.svg"), Array(CalibrationReport.residualsPerView(result).utf8)),
            (path("residual-scatter.svg"), Array(CalibrationReport.residualScatter(result).utf8)),
            (path("coverage.svg"), Array(CalibrationReport.coverage(result, columns: board.columns, rows: board.rows).utf8)),
        ]
        if let uncertainty {
            files.append((path("projection-uncertainty.svg"), Array(CalibrationReport.projectionUncertainty(uncertainty).utf8)))
        }
        let ranked = result.pairRectifiedVerticalRMS.enumerated().filter { $0.element.isFinite }.sorted { $0.element < $1.element }
        var bestName: String?, worstName: String?
        for (label, entry) in [("best", ranked.first), ("worst", ranked.last)] {
            guard let entry else { continue }
            let pair = result.pairs[entry.offset]
            let image = try CalibrationReport.rectifiedPreview(
                left: GrayImage(ImageBuffer(contentsOfFile: pair.left.name)), right: GrayImage(ImageBuffer(contentsOfFile: pair.right.name)),
                calibration: result.calibration, rectification: result.rectification)
            files.append((path("rectified-\(label).png"), try image.encoded(as: .png, destination: path("rectified-\(label).png"))))
            let name = "\(pair.name) (vertical rms \(String(format: "%.3f", entry.element)) px)"
            if label == "best" { bestName = name } else { worstName = name }
        }
        files.append((path("index.html"), Array(CalibrationReport.indexPage(result, best: bestName, worst: worstName,
                                                                              uncertainty: uncertainty).utf8)))
        return files
    }

    /// Expands quoted globs; plain file names pass through. An empty result is an error naming the pattern.
    static func expand(_ patterns: [String], option: String) throws -> [String] {
        var out: [String] = []
        for pattern in patterns {
            if pattern.contains(where: { "*?[".contains($0) }) {
                var g = glob_t()
                defer { globfree(&g) }
                if glob(pattern, 0, nil, &g) == 0 {
                    for i in 0..<Int(g.gl_pathc) {
                        if let p = g.gl_pathv[i] { out.append(String(cString: p)) }
                    }
                } else {
                    throw ValidationError("\(option) '\(pattern)' matches no files")
                }
            } else {
                out.append(pattern)
            }
        }
        guard !out.isEmpty else { throw ValidationError("\(option) names no files") }
        return out
    }

    /// Why a solved calibration is plainly wrong and must not be written, or `nil`: a stereo
    /// RMS above `maxRMS` (mismatched pairs, a wrong board size), or a baseline under 1 % of
    /// the median board distance (the same images on both sides, or one camera twice).
    static func qualityProblem(_ result: StereoCalibrationResult, maxRMS: Double) -> String? {
        if !(result.rms <= maxRMS) {
            return "the stereo RMS error is \(formatted(result.rms)) px, above --max-rms \(formatted(maxRMS)) px: "
                + "the pairs may not show the same moments (check the left/right file names pair up), or --board is wrong"
        }
        let distances = result.poses.map { length($0.translation) }.sorted()
        if let median = distances.isEmpty ? nil : distances[distances.count / 2], median > 0,
           !(result.calibration.baseline >= 0.01 * median) {
            return "the baseline (\(formatted(result.calibration.baseline))) is under 1 % of the board's distance "
                + "(\(formatted(median))): the two cameras are at the same place; are the same images given for both sides?"
        }
        return nil
    }

    /// The `truth_errors` of `--json` for a source that knows its calibration: focal errors in
    /// percent (left fx, fy, right fx, fy), the baseline error in percent, and the angle of
    /// the rotation between the estimated and true left → right rotations, in degrees.
    static func truthErrors(_ estimate: StereoCalibration, truth: StereoCalibration) -> JSONValue? {
        guard let estimateMM = estimate.translationUnit.millimetres, let truthMM = truth.translationUnit.millimetres else { return nil }
        func percent(_ a: Double, _ b: Double) -> JSONValue { .number(100 * (a - b) / b) }
        let e = estimate, t = truth
        let rotation = (e.extrinsics.rotation * t.extrinsics.rotation.transposed).rotationAngle * 180 / .pi
        return .object(JSONObject([
            ("focal_percent", .array([percent(e.left.intrinsics.fx, t.left.intrinsics.fx), percent(e.left.intrinsics.fy, t.left.intrinsics.fy),
                                      percent(e.right.intrinsics.fx, t.right.intrinsics.fx),
                                      percent(e.right.intrinsics.fy, t.right.intrinsics.fy)])),
            ("baseline_percent", percent(e.baseline * estimateMM, t.baseline * truthMM)),
            ("rotation_degrees", .number(rotation)),
        ]))
    }

    /// Writes `line` to stderr, where progress and errors go.
    static func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// What was compared (`between`) and, per camera, how far apart the two calibrations put each pixel.
    typealias Comparison = (between: String, left: ProjectionDifference, right: ProjectionDifference)
}
