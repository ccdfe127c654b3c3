import ArgumentParser
import ParallaxGeometry

/// `parallax rectification`: prints R1, R2, P1, P2, Q and the valid-pixel ROIs.
struct RectificationCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rectification",
        abstract: "Compute the stereo rectification (R1, R2, P1, P2, Q, ROIs) of a calibration.")

    @Option(name: .long, help: "Calibration file (Parallax JSON).")
    var calibration: String

    func run() throws {
        let calibration = try StereoCalibration(contentsOfFile: calibration)
        print(calibration.baseline)
    }
}
