import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry
import ParallaxImage

/// `parallax calibrate pairs` (the default subcommand): a stereo rig from pairs of board
/// images, paired by the numbers in their names.
struct CalibratePairsCommand: AsyncParsableCommand, StereoCalibrationCommand {
    static let configuration = CommandConfiguration(
        commandName: "pairs",
        abstract: "Calibrate a stereo rig from pairs of board images (the default: `parallax calibrate --left … --right …`).",
        discussion: """
            Files pair by the number in their names (left07.png with right07.png; --pair-by order pairs \
            them in sorted order instead). A file that cannot be paired (no number, a number used twice, \
            no partner) stops the command before any work, with the list, unless --skip-unpaired is given. \
            Pairs where an image cannot be read, the board is not found on both sides, or the size differs \
            are set aside with the reason; the command fails when fewer than 3 usable pairs remain.

            Quality gate: nothing is written, and the command fails with the figures and the reason, when \
            the stereo RMS reprojection error is above --max-rms (1 px by default) or the baseline is under \
            1 % of the median board distance (the same images on both sides, for example). Translations \
            are in the unit of --square, which the calibration records ("unit": "mm").

            Examples:
              parallax calibrate --left 'left*.jpg' --right 'right*.jpg' --board 9x6 --square 25mm --output rig.json
              parallax calibrate pairs --left 'left*.jpg' --right 'right*.jpg' --board 9x6 --square 25mm --output rig.json --opencv-yaml rig.yml --ros-dir ros --report report
            """)

    @Option(name: .long, parsing: .upToNextOption, help: "Left images: a quoted glob ('left*.png') or a list of files.")
    var left: [String] = []

    @Option(name: .long, parsing: .upToNextOption, help: "Right images: a quoted glob or a list of files.")
    var right: [String] = []

    @Option(name: .customLong("pair-by"), help: "Pair left and right files by the number in their names, or in sorted order.")
    var pairBy: ImagePairing.Rule = .number

    @Flag(name: .customLong("skip-unpaired"), help: "Go on without the files that cannot be paired (they are listed) instead of stopping.")
    var skipUnpaired = false

    @Option(name: .customLong("corners-in"),
            help: "Take each image's corners from this list instead of detecting them: the JSON --corners-out writes, or mrcal's corners.vnl (see Calibration/GUIDE.md).")
    var cornersIn: String?

    @OptionGroup(title: "Board") var boardOptions: CalibrationBoardOptions
    @OptionGroup(title: "Fit") var fit: CalibrationFitOptions
    @OptionGroup(title: "A rig's fit") var stereo: StereoFitOptions
    @OptionGroup(title: "Outputs") var outputs: CalibrationOutputOptions

    func validate() throws {
        if left.isEmpty || right.isEmpty {
            throw ValidationError("give --left and --right (a stereo rig), or `calibrate camera --images` (one camera)")
        }
        try boardOptions.requireBoard()
    }

    func run() async throws {
        let (start, target) = try beginCalibration()
        let leftFiles = try CalibrateCommand.expand(left, option: "--left")
        let rightFiles = try CalibrateCommand.expand(right, option: "--right")
        try OutputFiles.check(
            outputs: stereoOutputs,
            inputs: leftFiles.map { ("--left", $0) } + rightFiles.map { ("--right", $0) }
                + calibrationInputs + (cornersIn.map { [("--corners-in", $0)] } ?? []))
        let cornerList = try loadCornerList(target: target)
        // The calibration to compare with is read before any work.
        let reference = try stereo.against.map { try RectificationArguments.loadCalibration($0) }
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
        if let intrinsics = stereo.intrinsics { initial = try RectificationArguments.loadCalibration(intrinsics) }
        try checkHeldLenses(initial)
        try calibrateStereo(target: target, pairs: pairs, unpaired: unpaired, cornerList: cornerList, reference: reference,
                            initial: initial, start: start, live: nil)
    }
}
