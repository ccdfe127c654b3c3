import ArgumentParser
import ParallaxCapture
import ParallaxGeometry

/// How a live session rectifies, as `stream` and `view` take it: a calibration file (or the
/// source's own), `--raw`, `--force` and a starting convergence distance.
struct SessionRectificationOptions: ParsableArguments {
    @Option(name: .long, help: "Rectify with this calibration (Parallax JSON, OpenCV YAML or ROS camera_info, see `rectify --help`).")
    var calibration: String?

    @Flag(name: .long, help: "Simulated rig: do not rectify with its own calibration.")
    var raw = false

    @Flag(name: .long, help: "Use --calibration even when it records other cameras than these.")
    var force = false

    @Option(name: .long, parsing: .unconditional, help: "Distance of the zero-parallax plane: a bare number in the calibration's own units, or with a unit (1.5m, 150cm, 1500mm) converted to the unit the calibration records (the simulated rig's is the metre). Default: infinity.")
    var convergence: String?

    func validate() throws {
        if let convergence, Length(parsing: convergence) == nil {
            throw ValidationError(RectificationArguments.distanceSyntax("--convergence", convergence))
        }
    }

    /// What the calibration is called in messages: its file, or the simulated rig.
    var calibrationSource: String { calibration ?? "the simulated rig" }

    /// The session over `source`, rectifying with `--calibration`, else the source's own
    /// calibration unless `--raw`, its plane at `--convergence` (checked against the
    /// calibration as the session uses it: at the active format).
    func session(over source: StereoSourceArguments.Source, options given: StereoSessionOptions) throws -> StereoSession {
        var options = given
        var rectifyWith: StereoCalibration?
        if let calibration {
            rectifyWith = try RectificationArguments.loadCalibration(calibration)
        } else if !raw, let known = source.knownCalibration {
            rectifyWith = known
        }
        if let convergence {
            guard let rig = rectifyWith else { throw ValidationError("--convergence needs a calibration (--calibration)") }
            let format = source.device.activeFormats?.left ?? CaptureFormat(fourCC: .grey, size: rig.left.size,
                                                                              frameInterval: FrameInterval(numerator: 1, denominator: 30))
            let adapted = try StereoSession.adapt(rig, to: format)
            let classic: StereoRectification
            do { classic = try adapted.rectification(options.rectification.options) } catch { throw CLIError("\(error)") }
            options.rectification.convergenceDistance = try RectificationArguments.convergenceDistance(
                convergence, option: "--convergence", calibration: adapted, source: calibrationSource, rectification: classic)
        }
        return try RectificationArguments.session(device: source.device, calibration: rectifyWith, file: calibration,
                                                  force: force, options: options)
    }
}
