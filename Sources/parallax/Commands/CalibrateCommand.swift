import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// `parallax calibrate`: stereo calibration from chessboard image pairs, from a running
/// stereo device (`--live`, CalibrateCommand+Live.swift), or one camera's calibration from
/// its images (`--images`, CalibrateCommand+OneCamera.swift).
struct CalibrateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "calibrate",
        abstract: "Calibrate a stereo rig from pairs of chessboard images, or one camera from --images.",
        discussion: """
            Files pair by the number in their names (left07.png with right07.png; --pair-by order pairs \
            them in sorted order instead). A file that cannot be paired (no number, a number used twice, \
            no partner) stops the command before any work, with the list, unless --skip-unpaired is given. \
            Pairs where an image cannot be read, the board is not found on both sides, or the size differs \
            are set aside with the reason; the command fails when fewer than 3 usable pairs remain.

            Quality gate: nothing is written, and the command fails with the figures and the reason, when \
            the stereo RMS reprojection error is above --max-rms (1 px by default) or the baseline is under \
            1 % of the median board distance (the same images on both sides, for example). Translations \
            are in the unit of --square, which the calibration records ("unit": "mm"). Progress goes to \
            stderr; every output is written only once the calibration has succeeded, each file atomically.

            With --images instead of --left and --right, one camera is calibrated alone and written as \
            one-camera files (Parallax JSON, OpenCV YAML, ros/camera.yaml).

            With --live, the pairs come from a running stereo device (--simulated, --virtual, or --left DEV \
            --right DEV): hold the board still in different places, distances and angles; a still pair \
            (8 frames averaged) is taken whenever the view adds coverage. Progress (coverage of position, size \
            and skew, pairs taken, the current RMS and projection uncertainty) goes to stderr. The capture \
            stops when coverage, at least 12 pairs and --uncertainty-target are reached, after --pairs N \
            pairs, at --time-limit, or on Enter / Ctrl-C; the pairs are saved (--save-pairs, with their \
            corners) and calibrated as files would be. The simulated rig's board moves through a sweep by \
            itself (the virtual webcams show the same rig, the board held at the sweep's poses in turn, in \
            any format they offer, MJPG included), and --json then compares the result with the rig's truth \
            (truth_errors).

            Examples:
              parallax calibrate --left 'left*.jpg' --right 'right*.jpg' --board 9x6 --square 25mm --output rig.json
              parallax calibrate --left 'left*.jpg' --right 'right*.jpg' --board 9x6 --square 25mm --output rig.json --opencv-yaml rig.yml --ros-dir ros --report report
              parallax calibrate --images 'cam*.png' --board 9x6 --square 25mm --output camera.json
              parallax calibrate --live --simulated --output rig.json --json
              parallax calibrate --live --virtual --format 1280x720@30:MJPG --output rig.json --json
              parallax calibrate --live --left /dev/video0 --right /dev/video2 --board 9x6 --square 25mm
            """)

    @Option(name: .long, parsing: .upToNextOption, help: "Left images: a quoted glob ('left*.png') or a list of files.")
    var left: [String] = []

    @Option(name: .long, parsing: .upToNextOption, help: "Right images: a quoted glob or a list of files.")
    var right: [String] = []

    @Option(name: .long, parsing: .upToNextOption,
            help: "One camera's images (instead of --left and --right): calibrate that camera alone and write a one-camera file.")
    var images: [String] = []

    @Option(name: .customLong("pair-by"), help: "Pair left and right files by the number in their names, or in sorted order.")
    var pairBy: ImagePairing.Rule = .number

    @Flag(name: .customLong("skip-unpaired"), help: "Go on without the files that cannot be paired (they are listed) instead of stopping.")
    var skipUnpaired = false

    @Option(name: [.customLong("target"), .customLong("board")],
            help: "The target: chessboard:COLSxROWS (inner corners; 9x6 alone is a chessboard), circles:COLSxROWS or acircles:COLSxROWS (circles per row × rows, OpenCV's grids); --board is the same option (with --live --simulated or --virtual: the rig's 9x6 by default).")
    var board: String?

    @Option(name: .long, parsing: .unconditional, help: "Square size (a circle grid's spacing), with an optional unit (25mm, 2.5cm, 0.025m, 1in); translations come out in this unit (with --live --simulated or --virtual: 25mm by default).")
    var square: String?

    @Flag(name: .long, help: "Capture the pairs from a running stereo device (--simulated, --virtual, or --left DEV --right DEV) instead of files.")
    var live = false

    @Flag(name: .long, help: "With --live: the simulated rig, whose board moves through a calibration sweep by itself (no hardware).")
    var simulated = false

    @Flag(name: .long, help: "With --live: two virtual UVC cameras behind the V4L2 code (no hardware).")
    var virtual = false

    @Option(name: .customLong("format"), help: "With --live: the format WxH@FPS:FOURCC (default: the largest shared format at 25 fps or more).")
    var liveFormat: String?

    @Option(name: .long, help: "With --live --simulated: the image size WxH (default: the --format's, else 640x480).")
    var size: String?

    @Flag(name: .customLong("real-time"), help: "With --live --simulated: frames at their real times instead of as fast as they are used.")
    var realTime = false

    @Option(name: .customLong("pairs"), parsing: .unconditional, help: "With --live: stop after taking this many pairs.")
    var pairLimit: Int?

    @Option(name: .customLong("uncertainty-target"), parsing: .unconditional,
            help: "With --live: stop once the projection uncertainty (worst direction, image centre and corners, both cameras) is at most this many pixels, with coverage reached and at least 12 pairs.")
    var uncertaintyTarget: Double = 1

    @Option(name: .customLong("time-limit"), help: "With --live: stop capturing after this long and calibrate what was taken (e.g. 5min).",
            transform: DurationArgument.parse)
    var timeLimit = DurationArgument(nanoseconds: 300_000_000_000)

    @Option(name: .customLong("save-pairs"), help: "With --live: the new folder for the pairs taken and their corners (default: beside --output, named after it with -pairs).")
    var savePairs: String?

    @Option(name: .long, help: "Lens model: brown4, brown5, brown8 or fisheye.")
    var model: LensModelKind = .brown5

    @Option(name: .long, help: "Hold intrinsics fixed in the joint refinement: none, left, right or both (with --intrinsics).")
    var fix: FixedIntrinsics = .none

    @Option(name: .long, help: "A calibration (Parallax JSON, OpenCV YAML or ROS camera_info) whose cameras to start from (and hold, with --fix).")
    var intrinsics: String?

    @Option(name: .customLong("output"), help: "Parallax JSON calibration to write (default: calib.json in the current folder, said when it is used).")
    var outputOption: String?

    /// Where the calibration is written: `--output`, else `calib.json` here.
    var output: String { outputOption ?? "calib.json" }

    @Option(name: .customLong("opencv-yaml"), help: "Also write OpenCV FileStorage YAML (M1 D1 M2 D2 R T R1 R2 P1 P2 Q).")
    var opencvYAML: String?

    @Option(name: .customLong("ros-dir"), help: "Also write ROS camera_info files left.yaml and right.yaml into this folder.")
    var rosDirectory: String?

    @Option(name: .long, help: "Also write a Kalibr camchain YAML (translation in metres).")
    var kalibr: String?

    @Option(name: .long, help: "Write a report (charts, coverage map, rectified previews) into this folder.")
    var report: String?

    @Option(name: .customLong("corners-out"), help: "Write the detected corners of every image as JSON.")
    var cornersOut: String?

    @Option(name: .long, help: "The loss on each corner's error: huber (quadratic to 2 px, linear beyond; default) or squared (plain least squares, as OpenCV).")
    var loss: LossArgument = .huber

    @Flag(name: .customLong("keep-outliers"), help: "Solve every corner of every usable pair: set no pair or corner aside for fitting badly (OpenCV's behaviour).")
    var keepOutliers = false

    @Flag(name: .customLong("cross-validate"),
          help: "Also calibrate each half of the pairs (alternate pairs) on its own and report how far apart the two put each pixel.")
    var crossValidate = false

    @Option(name: .long, help: "Report how far this calibration and the one in FILE (any format Parallax reads) put each pixel apart.")
    var against: String?

    @Option(name: .customLong("corners-in"),
            help: "Take each image's corners from this list instead of detecting them: the JSON --corners-out writes, or mrcal's corners.vnl (see Calibration/GUIDE.md).")
    var cornersIn: String?

    @Option(name: .customLong("time-budget"), help: "Detection time allowed per image (e.g. 2s, 500ms).", transform: DurationArgument.parse)
    var timeBudget = DurationArgument(nanoseconds: 2_000_000_000)

    @Flag(name: .long, help: "Print one JSON object with the figures on stdout.")
    var json = false

    @Option(name: .customLong("max-rms"), parsing: .unconditional, help: "Refuse to write a calibration whose stereo RMS reprojection error is above this many pixels (good rigs reach 0.1–0.3).")
    var maxRMS: Double = 1

    func validate() throws {
        if live { return try validateLive() }
        if simulated || virtual || liveFormat != nil || pairLimit != nil || savePairs != nil || realTime || size != nil {
            throw ValidationError("--simulated, --virtual, --format, --size, --pairs, --save-pairs and --real-time are for --live")
        }
        if board == nil || square == nil { throw ValidationError("give --board COLUMNSxROWS and --square SIZE (e.g. --board 9x6 --square 25mm)") }
        if images.isEmpty && (left.isEmpty || right.isEmpty) {
            throw ValidationError("give --left and --right (a stereo rig), or --images (one camera)")
        }
        if !images.isEmpty && !(left.isEmpty && right.isEmpty) {
            throw ValidationError("--images calibrates one camera: give it without --left and --right")
        }
        if !images.isEmpty && (fix != .none || intrinsics != nil || kalibr != nil || crossValidate || against != nil) {
            throw ValidationError("--fix, --intrinsics, --kalibr, --cross-validate and --against are for stereo rigs, not with --images")
        }
        if crossValidate && against != nil {
            throw ValidationError("give --cross-validate or --against FILE, not both")
        }
        if fix != .none && intrinsics == nil {
            throw ValidationError("--fix \(fix) needs --intrinsics FILE with the cameras to hold")
        }
        guard maxRMS > 0, maxRMS.isFinite else { throw ValidationError("--max-rms must be a positive number of pixels, got \(maxRMS)") }
        try timeBudget.check("--time-budget", atMost: DurationArgument(nanoseconds: 3_600_000_000_000))
    }

    /// The checks for `--live`.
    func validateLive() throws {
        let sources = [simulated, virtual, !left.isEmpty || !right.isEmpty].filter { $0 }.count
        guard sources == 1 else {
            throw ValidationError("--live needs one source: --simulated, --virtual, or --left DEVICE --right DEVICE")
        }
        if !left.isEmpty || !right.isEmpty {
            guard left.count == 1, right.count == 1 else {
                throw ValidationError("with --live, --left and --right each name one camera (a device node or a stable identity)")
            }
        }
        if size != nil && !simulated {
            throw ValidationError("--size is for --live --simulated; other sources take their size from --format")
        }
        // The simulated rig and the virtual webcams show the rig's own board.
        if !simulated && !virtual && (board == nil || square == nil) {
            throw ValidationError("give --board COLUMNSxROWS and --square SIZE for the board you will show the cameras")
        }
        if !images.isEmpty || cornersIn != nil {
            throw ValidationError("--live takes its pairs from the cameras: give it without --images or --corners-in")
        }
        if fix != .none && intrinsics == nil {
            throw ValidationError("--fix \(fix) needs --intrinsics FILE with the cameras to hold")
        }
        if crossValidate && against != nil { throw ValidationError("give --cross-validate or --against FILE, not both") }
        if let pairLimit, pairLimit < 3 { throw ValidationError("--pairs must be at least 3, got \(pairLimit)") }
        guard uncertaintyTarget > 0, uncertaintyTarget.isFinite else {
            throw ValidationError("--uncertainty-target must be a positive number of pixels, got \(uncertaintyTarget)")
        }
        guard maxRMS > 0, maxRMS.isFinite else { throw ValidationError("--max-rms must be a positive number of pixels, got \(maxRMS)") }
        try timeLimit.check("--time-limit", atMost: DurationArgument(nanoseconds: 86_400_000_000_000))
        try timeBudget.check("--time-budget", atMost: DurationArgument(nanoseconds: 3_600_000_000_000))
        _ = try liveSource()
    }

    func run() async throws {
        let clock = ContinuousClock()
        let start = clock.now
        let target: CalibrationBoard
        do {
            // The simulated rig's own board, unless another is named.
            target = try CalibrationBoard(parsing: board ?? "9x6", square: square ?? "25mm")
        } catch { throw ValidationError(error.description) }
        // A printed square is between a tenth of a millimetre and ten metres; a bare number (board
        // units) is held to the same span, so the solver's scale stays sane. Checked before any work.
        let millimetres = target.squareSize * (target.unit.millimetres ?? 1)
        guard millimetres >= 0.1 && millimetres <= 10_000 else {
            throw ValidationError("square size '\(square ?? "")' is outside 0.1mm to 10m (a bare number, in board units: 0.1 to 10000)")
        }
        if outputOption == nil {
            Self.log("note: no --output given: the calibration will be written to \(FileManager.default.currentDirectoryPath)/calib.json")
        }
        if !images.isEmpty { return try runOneCamera(target: target, start: start) }
        if live { return try await runLive(target: target, start: start) }

        let leftFiles = try Self.expand(left, option: "--left")
        let rightFiles = try Self.expand(right, option: "--right")
        try OutputFiles.check(
            outputs: stereoOutputs,
            inputs: leftFiles.map { ("--left", $0) } + rightFiles.map { ("--right", $0) }
                + calibrationInputs + (cornersIn.map { [("--corners-in", $0)] } ?? []))
        let cornerList = try loadCornerList(target: target)
        // The calibration to compare with is read before any work.
        let reference = try against.map { try RectificationArguments.loadCalibration($0) }
        let (pairs, unpaired) = ImagePairing.pair(left: leftFiles, right: rightFiles, by: pairBy)
        if !unpaired.isEmpty && !skipUnpaired {
            let shown = unpaired.prefix(20).map { "  \($0.name): \($0.reason)" }
            let more = unpaired.count > 20 ? ["  ... and \(unpaired.count - 20) more"] : []
            throw CLIError((["\(unpaired.count) of \(leftFiles.count + rightFiles.count) files cannot be paired "
                             + "(\(pairs.count) pairs line up by \(pairBy == .number ? "number" : "sorted order")):"] + shown + more
                            + ["Give --left and --right only the files that belong together, --pair-by order to pair in sorted "
                               + "order, or --skip-unpaired to go on without these."]).joined(separator: "\n"))
        }
        var initial: StereoCalibration?
        if let intrinsics { initial = try RectificationArguments.loadCalibration(intrinsics) }
        try checkHeldLenses(initial)
        try calibrateStereo(target: target, pairs: pairs, unpaired: unpaired, cornerList: cornerList, reference: reference,
                            initial: initial, start: start, live: nil)
    }

    /// Refuses `--fix` on a camera whose lens `--model` cannot hold: held intrinsics must
    /// come out as given, not with coefficients dropped.
    func checkHeldLenses(_ initial: StereoCalibration?) throws {
        guard let initial, let file = intrinsics else { return }
        let held: [(String, CameraModel)] = [(fix == .left || fix == .both, ("left", initial.left)),
                                             (fix == .right || fix == .both, ("right", initial.right))]
            .filter(\.0).map(\.1)
        for (side, camera) in held {
            if let lens = model.lensItCannotHold(camera) {
                let wider = camera.distortion.isFisheye ? "fisheye" : "brown8"
                throw CLIError("--intrinsics \(file): the \(side) camera has \(lens), which --model \(model.rawValue) "
                               + "cannot hold fixed as given; use --model \(wider)")
            }
        }
    }

    /// The calibrations read (`--intrinsics`, `--against`), each file of a ROS folder or a
    /// comma-separated pair on its own, for ``OutputFiles/check(outputs:inputs:)``.
    var calibrationInputs: [(option: String, path: String)] {
        [("--intrinsics", intrinsics), ("--against", against)].flatMap { option, source in
            source.map { CalibrationFile.files(of: $0).map { (option, $0) } } ?? []
        }
    }

    /// The outputs a stereo calibration writes, for ``OutputFiles/check(outputs:inputs:)``.
    var stereoOutputs: [(option: String, path: String)] {
        [("--output", output), ("--opencv-yaml", opencvYAML), ("--kalibr", kalibr), ("--corners-out", cornersOut)]
            .compactMap { option, path in path.map { (option, $0) } }
            + (rosDirectory.map { [("--ros-dir", $0 + "/left.yaml"), ("--ros-dir", $0 + "/right.yaml")] } ?? [])
    }

    /// The pipeline for this command's board, model, loss and outlier options.
    func stereoPipeline(target: CalibrationBoard) -> CalibrationPipeline {
        var pipeline = CalibrationPipeline(board: target, model: model, fixed: fix)
        pipeline.timeBudgetSeconds = timeBudget.seconds
        if loss == .squared { pipeline.loss = .squared }  // else the pipeline's default, Huber
        pipeline.rejectOutliers = !keepOutliers
        return pipeline
    }

    /// `--live`: checks the outputs, captures, saves the pairs, then calibrates them as files.
    func runLive(target: CalibrationBoard, start: ContinuousClock.Instant) async throws {
        let directory = savePairs ?? ((output as NSString).deletingPathExtension + "-pairs")
        try OutputFiles.check(outputs: stereoOutputs + [("--save-pairs", directory + "/corners.json")],
                              inputs: calibrationInputs)
        if let existing = try? FileManager.default.contentsOfDirectory(atPath: directory), !existing.isEmpty {
            throw CLIError("--save-pairs \(directory) already holds \(existing.count) files; choose a new folder (nothing is overwritten)")
        }
        let reference = try against.map { try RectificationArguments.loadCalibration($0) }
        let initial = try intrinsics.map { try RectificationArguments.loadCalibration($0) }
        try checkHeldLenses(initial)
        let targets = LiveTargets(pairLimit: pairLimit, uncertaintyPixels: uncertaintyTarget, timeLimitSeconds: timeLimit.seconds)
        let capture = try await captureLive(target: target, directory: directory, targets: targets,
                                            calibrator: stereoPipeline(target: target).stereoCalibrator(fixed: .none))
        Self.log("capture stopped (\(capture.stopReason.rawValue)) after \(String(format: "%.1f", capture.seconds)) s: "
                 + "\(capture.pairs.count) pairs taken of \(capture.pairsSeen) streamed")
        guard capture.pairs.count >= 3 else {
            throw CLIError("the capture took \(capture.pairs.count) pairs before it stopped (\(capture.stopReason.rawValue)); "
                           + "at least 3 are needed. Hold the board still for about a second in each place, whole on both "
                           + "cameras, and move it between places")
        }
        try calibrateStereo(target: target, pairs: capture.pairs, unpaired: [], cornerList: capture.cornerList,
                            reference: reference, initial: initial, start: start, live: capture)
    }

    /// Calibrates `pairs`, applies the quality gate, writes every output and prints the figures.
    func calibrateStereo(target: CalibrationBoard, pairs: [ImagePairing.Pair], unpaired: [RejectedView], cornerList: CornerList?,
                         reference: StereoCalibration?, initial: StereoCalibration?, start: ContinuousClock.Instant,
                         live: LiveCapture?) throws {
        let clock = ContinuousClock()
        let lensModel = model
        let pipeline = stereoPipeline(target: target)
        Self.log("calibrating \(target), model \(lensModel.rawValue): \(pairs.count) pairs")
        for u in unpaired { Self.log("skipped \(u.name): \(u.reason)") }
        let outcome: CalibrationPipeline.Outcome
        do {
            outcome = try pipeline.run(pairs: pairs, unpaired: unpaired, leftCamera: initial?.left, rightCamera: initial?.right,
                                       cornerList: cornerList) {
                Self.log($0)
            }
        } catch {
            Self.log("error: calibration failed: \(error)")
            throw ExitCode.failure
        }
        let result = outcome.result
        if let reason = Self.qualityProblem(result, maxRMS: maxRMS) {
            Self.log("rms stereo \(formatted(result.rms)) px (left \(formatted(result.rmsLeft)), right \(formatted(result.rmsRight))), "
                     + "baseline \(formatted(result.calibration.baseline))"
                     + (target.unit == .unitless ? " board units" : " \(target.unit.suffix)") + ", \(result.pairs.count) pairs")
            Self.log("error: the calibration is not written: \(reason)")
            throw ExitCode.failure
        }
        let elapsed = (clock.now - start).components
        let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18

        // The translation is in the square size's unit: recorded, so distances convert later.
        var calibration = result.calibration
        calibration.translationUnit = target.unit
        if calibration.translationUnit == .unitless {
            Self.log("note: --square has no unit, so the calibration's translations are in board units (\"unit\": \"unitless\"); "
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
        files.append((output, Array(calibration.jsonText().utf8)))
        if let opencvYAML {
            files.append((opencvYAML, Array(OpenCVStereoFile.text(for: result.calibration, rectification: result.rectification).utf8)))
        }
        if let rosDirectory {
            if target.unit == .unitless {
                Self.log("warning: no unit on --square; ROS camera_info's baseline is written in board units, which ROS reads as metres")
            }
            let (l, r) = ROSCameraInfo.stereoPair(result.calibration, rectification: result.rectification)
            files.append(((rosDirectory as NSString).appendingPathComponent("left.yaml"), Array(l.text.utf8)))
            files.append(((rosDirectory as NSString).appendingPathComponent("right.yaml"), Array(r.text.utf8)))
        }
        if let kalibr {
            let perUnit = target.unit.millimetres.map { $0 / 1000 }
            if perUnit == nil { Self.log("warning: no unit on --square; Kalibr's translation is written in board units, not metres") }
            let (text, warnings) = KalibrCamchain.text(for: result.calibration, metersPerUnit: perUnit ?? 1)
            for w in warnings { Self.log("warning: \(w)") }
            files.append((kalibr, Array(text.utf8)))
        }
        if let cornersOut {
            files.append((cornersOut, cornersJSON(outcome.corners, sizes: outcome.imageSizes, target: target)))
        }
        if let report {
            do {
                var reported = result
                reported.calibration.translationUnit = calibration.translationUnit
                files += try Self.reportFiles(reported, board: target, directory: report, uncertainty: uncertainty)
                if let comparison {
                    files.append(((report as NSString).appendingPathComponent("cross-validation.svg"),
                                  Array(CalibrationReport.crossValidation([("left", comparison.left), ("right", comparison.right)],
                                                                          between: comparison.between).utf8)))
                }
            } catch {
                Self.log("error: the report could not be drawn: \(error)")
                throw ExitCode.failure
            }
        }
        try OutputFiles.writeAll(files)

        var truthErrors: JSONValue?
        if let live, let truth = live.truth { truthErrors = Self.truthErrors(calibration, truth: truth) }
        if json {
            var summary = Self.summary(outcome, unit: calibration.translationUnit, seconds: seconds, uncertainty: uncertainty,
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
                  + (report.map { " and the report in \($0)/" } ?? ""))
        }
    }

    /// What was compared (`between`) and, per camera, how far apart the two calibrations put each pixel.
    typealias Comparison = (between: String, left: ProjectionDifference, right: ProjectionDifference)

    /// The --cross-validate or --against comparison, or `nil` when neither was asked for.
    func compare(_ result: StereoCalibrationResult, outcome: CalibrationPipeline.Outcome, reference: StereoCalibration?,
                 pipeline: CalibrationPipeline) throws -> Comparison? {
        if let reference, let against {
            let c = result.calibration
            guard reference.left.size == c.left.size, reference.right.size == c.right.size else {
                throw CLIError("--against \(against) is for \(reference.left.size) images, these are \(c.left.size)")
            }
            return ("this calibration and \(against)", ProjectionDifference(c.left, reference.left),
                    ProjectionDifference(c.right, reference.right))
        }
        guard crossValidate else { return nil }
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
            Self.log("cross-validation: calibrating half \(index + 1) of 2 (\(half.count) pairs)")
            do {
                solved.append(try calibrator.calibrate(pairs: half, size: outcome.size).calibration)
            } catch {
                throw CLIError("--cross-validate: half \(index + 1) (\(half.count) pairs) cannot be calibrated: \(error)")
            }
        }
        return ("two halves of the pairs (\(halves[0].count) and \(halves[1].count))",
                ProjectionDifference(solved[0].left, solved[1].left), ProjectionDifference(solved[0].right, solved[1].right))
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

    private func formatted(_ v: Double) -> String { Self.formatted(v) }
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

    static func log(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }
}

/// `--loss`: the solver's loss on each corner's error.
enum LossArgument: String, ExpressibleByArgument, CaseIterable {
    case huber, squared
}

extension ImagePairing.Rule: ExpressibleByArgument {}

extension LensModelKind: ExpressibleByArgument {
    /// `brown4`, `brown5`, `brown8` or `fisheye`, in any case.
    public init?(argument: String) { self.init(commandLineName: argument) }
}

extension FixedIntrinsics: ExpressibleByArgument {
    /// `none`, `left`, `right` or `both`, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}
