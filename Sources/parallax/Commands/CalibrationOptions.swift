import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry

/// The board shown to the cameras and how long detection may take on each image: every
/// `calibrate` subcommand's.
struct CalibrationBoardOptions: ParsableArguments {
    @Option(name: [.customLong("target"), .customLong("board")],
            help: "The target: chessboard:COLSxROWS (inner corners; 9x6 alone is a chessboard), circles:COLSxROWS or acircles:COLSxROWS (circles per row × rows, OpenCV's grids); --board is the same option (calibrate live with --simulated or --virtual: the rig's 9x6 by default).")
    var board: String?

    @Option(name: .long, parsing: .unconditional, help: "Square size (a circle grid's spacing), with an optional unit (25mm, 2.5cm, 0.025m, 1in); translations come out in this unit (calibrate live with --simulated or --virtual: 25mm by default).")
    var square: String?

    @Option(name: .customLong("time-budget"), help: "Detection time allowed per image (e.g. 2s, 500ms).", transform: DurationArgument.parse)
    var timeBudget = DurationArgument(nanoseconds: 2_000_000_000)

    func validate() throws {
        try timeBudget.check("--time-budget", atMost: DurationArgument(nanoseconds: 3_600_000_000_000))
    }

    /// Refuses a missing board or square where no rig supplies its own.
    func requireBoard(_ why: String = "") throws {
        if board == nil || square == nil {
            throw ValidationError("give --board COLUMNSxROWS and --square SIZE\(why) (e.g. --board 9x6 --square 25mm)")
        }
    }

    /// The board, parsed; without `--board`/`--square`, the simulated rig's own (9x6, 25 mm).
    /// A printed square is between a tenth of a millimetre and ten metres; a bare number
    /// (board units) is held to the same span, so the solver's scale stays sane.
    func target() throws -> CalibrationBoard {
        let target: CalibrationBoard
        do {
            target = try CalibrationBoard(parsing: board ?? "9x6", square: square ?? "25mm")
        } catch { throw ValidationError(error.description) }
        let millimetres = target.squareSize * (target.unit.millimetres ?? 1)
        guard millimetres >= 0.1 && millimetres <= 10_000 else {
            throw ValidationError("square size '\(square ?? "")' is outside 0.1mm to 10m (a bare number, in board units: 0.1 to 10000)")
        }
        return target
    }
}

/// The fit: lens model, loss, outliers and the quality gate; every `calibrate` subcommand's.
struct CalibrationFitOptions: ParsableArguments {
    @Option(name: .long, help: "Lens model: brown4, brown5, brown8 or fisheye.")
    var model: LensModelKind = .brown5

    @Option(name: .long, help: "The loss on each corner's error: huber (quadratic to 2 px, linear beyond; default) or squared (plain least squares, as OpenCV).")
    var loss: LossArgument = .huber

    @Flag(name: .customLong("keep-outliers"), help: "Solve every corner of every usable pair: set no pair or corner aside for fitting badly (OpenCV's behaviour).")
    var keepOutliers = false

    @Option(name: .customLong("max-rms"), parsing: .unconditional, help: "Refuse to write a calibration whose RMS reprojection error (a rig's stereo RMS) is above this many pixels (good rigs reach 0.1–0.3).")
    var maxRMS: Double = 1

    func validate() throws {
        guard maxRMS > 0, maxRMS.isFinite else { throw ValidationError("--max-rms must be a positive number of pixels, got \(maxRMS)") }
    }

    /// The pipeline for `target` with this model, loss and outlier rule, holding `fixed`.
    func pipeline(target: CalibrationBoard, board: CalibrationBoardOptions, fixed: FixedIntrinsics = .none) -> CalibrationPipeline {
        var pipeline = CalibrationPipeline(board: target, model: model, fixed: fixed)
        pipeline.timeBudgetSeconds = board.timeBudget.seconds
        if loss == .squared { pipeline.loss = .squared }  // else the pipeline's default, Huber
        pipeline.rejectOutliers = !keepOutliers
        return pipeline
    }
}

/// What a calibration writes, and how the figures are printed; every `calibrate` subcommand's.
struct CalibrationOutputOptions: ParsableArguments {
    @Option(name: .customLong("output"), help: "Parallax JSON calibration to write (default: calib.json in the current folder, said when it is used).")
    var outputOption: String?

    /// Where the calibration is written: `--output`, else `calib.json` here.
    var output: String { outputOption ?? "calib.json" }

    @Option(name: .customLong("opencv-yaml"), help: "Also write OpenCV FileStorage YAML (a rig's M1 D1 M2 D2 R T R1 R2 P1 P2 Q; one camera's camera_matrix and distortion_coefficients).")
    var opencvYAML: String?

    @Option(name: .customLong("ros-dir"), help: "Also write ROS camera_info into this folder: left.yaml and right.yaml for a rig, camera.yaml for one camera.")
    var rosDirectory: String?

    @Option(name: .long, help: "Write a report (charts, coverage map, rectified previews) into this folder.")
    var report: String?

    @Option(name: .customLong("corners-out"), help: "Write the detected corners of every image as JSON.")
    var cornersOut: String?

    @Flag(name: .long, help: "Print one JSON object with the figures on stdout.")
    var json = false

    /// Says where the calibration goes when `--output` was not given.
    func announceDefaultOutput() {
        if outputOption == nil {
            CalibrateCommand.log("note: no --output given: the calibration will be written to "
                                 + "\(FileManager.default.currentDirectoryPath)/calib.json")
        }
    }
}

/// A rig's own options: intrinsics to start from or hold, Kalibr output, and the comparisons;
/// `calibrate pairs` and `calibrate live`.
struct StereoFitOptions: ParsableArguments {
    @Option(name: .long, help: "Hold intrinsics fixed in the joint refinement: none, left, right or both (with --intrinsics).")
    var fix: FixedIntrinsics = .none

    @Option(name: .long, help: "A calibration (Parallax JSON, OpenCV YAML or ROS camera_info) whose cameras to start from (and hold, with --fix).")
    var intrinsics: String?

    @Option(name: .long, help: "Also write a Kalibr camchain YAML (translation in metres).")
    var kalibr: String?

    @Flag(name: .customLong("cross-validate"),
          help: "Also calibrate each half of the pairs (alternate pairs) on its own and report how far apart the two put each pixel.")
    var crossValidate = false

    @Option(name: .long, help: "Report how far this calibration and the one in FILE (any format Parallax reads) put each pixel apart.")
    var against: String?

    func validate() throws {
        if crossValidate && against != nil { throw ValidationError("give --cross-validate or --against FILE, not both") }
        if fix != .none && intrinsics == nil {
            throw ValidationError("--fix \(fix) needs --intrinsics FILE with the cameras to hold")
        }
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
