import ArgumentParser
import Foundation
import ParallaxGeometry

/// The options every command that rectifies shares: the calibration file, OpenCV's
/// alpha and the distance of the zero-parallax plane, with one validation and one
/// way of loading the calibration so the commands cannot drift apart.
struct RectificationArguments: ParsableArguments {
    @Option(name: .long, help: "Calibration file (Parallax JSON).")
    var calibration: String

    @Option(name: .long, help: "Free scaling: 0 keeps only valid pixels, 1 keeps all source pixels; omit for OpenCV's -1 (no scaling). Fisheye rigs: the balance.")
    var alpha: Double?

    @Option(name: .long, help: "Distance of the zero-parallax plane, in the calibration's units (for example 1500 for 1.5 m with a millimetre target). Accepts a unit suffix, assuming millimetres: 1.5m, 150cm, 1500mm. Default: infinity.")
    var convergence: String?

    func validate() throws {
        if let alpha, !alpha.isFinite || (alpha < 0 && alpha != -1) || alpha > 1 {
            throw ValidationError("--alpha must be between 0 and 1 (or -1 for no scaling), got \(alpha)")
        }
        _ = try convergenceDistance()
    }

    /// `--alpha` as ``RectificationOptions/alpha`` (−1 means no scaling, `nil`).
    var optionsAlpha: Double? { alpha.flatMap { $0 < 0 ? nil : $0 } }

    /// `--convergence` in the calibration's units, or `nil` for infinity.
    func convergenceDistance() throws -> Double? {
        try convergence.map(Self.parseDistance)
    }

    /// The calibration file, or a one-line error naming it.
    func loadCalibration() throws -> StereoCalibration {
        do {
            return try StereoCalibration(contentsOfFile: calibration)
        } catch {
            throw CLIError(error.description)
        }
    }

    /// A distance in the calibration's units; `m`, `cm` and `mm` suffixes
    /// convert assuming the calibration is in millimetres, which is how
    /// `parallax calibrate` writes it for a square size given in mm.
    static func parseDistance(_ text: String) throws -> Double {
        let units: [(String, Double)] = [("mm", 1), ("cm", 10), ("m", 1000)]
        var value = text.trimmingCharacters(in: .whitespaces)
        var factor = 1.0
        for (suffix, f) in units where value.hasSuffix(suffix) {
            value = String(value.dropLast(suffix.count))
            factor = f
            break
        }
        guard let number = Double(value), number.isFinite, number > 0 else {
            throw ValidationError("--convergence must be a positive distance such as 1500, 1.5m or 150cm, got '\(text)'")
        }
        return number * factor
    }
}

/// A failure the CLI reports as one line on stderr, exiting with status 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}
