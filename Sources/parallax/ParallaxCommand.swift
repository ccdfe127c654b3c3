import ArgumentParser
#if canImport(Glibc)
import Glibc
#endif
import ParallaxGeometry

@main
struct ParallaxCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "parallax",
        abstract: "Two cameras as one synchronized stereo device.",
        discussion: """
            Calibrate a stereo rig, pair and rectify its frames, and measure the pipeline. \
            Run `parallax demo` to see every stage on a simulated rig, no hardware needed.
            """,
        version: "parallax \(ParallaxVersion.string) (calibration files: format version \(StereoCalibration.fileFormatVersion))",
        subcommands: [
            DemoCommand.self,
            DevicesCommand.self,
            CostCommand.self,
            CaptureCommand.self,
            StreamCommand.self,
            ViewCommand.self,
            PairCommand.self,
            CalibrateCommand.self,
            TargetCommand.self,
            RectificationCommand.self,
            RectifyCommand.self,
            RectifyDatasetCommand.self,
            DisparityCommand.self,
            BenchCommand.self,
        ]
    )

    /// As swift-argument-parser's own entry point, with the signal handling every command
    /// shares installed first (``Signals``).
    static func main() async {
        Signals.install()
        do {
            // `calibrate --live` and `calibrate --images`, spellings from before `calibrate`
            // had subcommands, still work.
            var command = try parseAsRoot(CalibrateCommand.subcommandSpellings(Array(CommandLine.arguments.dropFirst())))
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            // A signal is ending the program: its handler exits (128 + the signal) once its
            // clean-ups are done; this failure is most likely theirs.
            while Signals.isEnding { usleep(100_000) }
            exit(withError: error)
        }
    }
}
