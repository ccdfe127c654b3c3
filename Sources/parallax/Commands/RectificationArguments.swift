import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxCapture
import ParallaxGeometry

/// The options every command that rectifies shares: the calibration file, OpenCV's
/// alpha and the distance of the zero-parallax plane, with one validation and one
/// way of loading the calibration so the commands cannot drift apart.
struct RectificationArguments: ParsableArguments {
    @Option(name: .long, help: "The calibration: Parallax JSON, OpenCV YAML, or ROS camera_info (the folder with left.yaml and right.yaml, or left.yaml,right.yaml); told apart by content.")
    var calibration: String

    @Option(name: .long, parsing: .unconditional, help: "Free scaling: 0 keeps only valid pixels, 1 keeps all source pixels; omit for OpenCV's -1 (no scaling). Fisheye rigs: the balance.")
    var alpha: Double?

    @Option(name: .long, help: "Distance of the zero-parallax plane: a bare number in the calibration's own units, or with a unit (1.5m, 150cm, 1500mm, 60in) converted to the unit the calibration file records. Default: infinity.")
    var convergence: String?

    func validate() throws {
        if let alpha, !alpha.isFinite || (alpha < 0 && alpha != -1) || alpha > 1 {
            throw ValidationError("--alpha must be between 0 and 1 (or -1 for no scaling), got \(alpha)")
        }
        if let convergence, Length(parsing: convergence) == nil {
            throw ValidationError(Self.distanceSyntax("--convergence", convergence))
        }
    }

    /// `--alpha` as ``RectificationOptions/alpha`` (−1 means no scaling, `nil`).
    var optionsAlpha: Double? { alpha.flatMap { $0 < 0 ? nil : $0 } }

    /// `--convergence` in `calibration`'s units (checked against `rectification`), or `nil`
    /// for infinity. See ``convergenceDistance(_:option:calibration:source:rectification:)``.
    func convergenceDistance(for calibration: StereoCalibration, rectification: StereoRectification) throws -> Double? {
        try convergence.map {
            try Self.convergenceDistance($0, option: "--convergence", calibration: calibration, source: self.calibration,
                                         rectification: rectification)
        }
    }

    /// The rectification of `calibration` under `options`, checked (see ``check(_:of:)``).
    /// When alpha scaling degenerates, the unscaled rectification is checked too, so that
    /// a broken rig is named for what it is rather than as a lens problem.
    func rectification(of calibration: StereoCalibration, _ options: RectificationOptions) throws -> StereoRectification {
        do {
            let rectification = try calibration.rectification(options)
            try check(rectification, of: calibration)
            return rectification
        } catch let error as RectificationError {
            if error == .degenerateValidArea, options.alpha != nil {
                var unscaled = options
                unscaled.alpha = nil
                if let plain = try? calibration.rectification(unscaled) { try check(plain, of: calibration) }
            }
            throw CLIError("\(self.calibration): \(error)")
        }
    }

    /// Prints the warnings ``StereoRectification/findings(for:)`` has for this
    /// rectification and refuses it (naming the calibration) when any is fatal.
    func check(_ rectification: StereoRectification, of calibration: StereoCalibration) throws {
        let findings = rectification.findings(for: calibration)
        let fatal = findings.filter { $0.severity == .fatal }
        guard fatal.isEmpty else {
            throw CLIError("\(self.calibration): " + fatal.map(\.message).joined(separator: "; "))
        }
        for finding in findings {
            FileHandle.standardError.write(Data("warning: \(self.calibration): \(finding)\n".utf8))
        }
    }

    /// The calibration file, or a one-line error naming it.
    func loadCalibration() throws -> StereoCalibration { try Self.loadCalibration(calibration) }

    /// A session over `device` rectifying with `calibration` (read from `file`): a
    /// calibration that records other cameras than the device's is refused naming both,
    /// unless `force` (`--force`).
    static func session(device: StereoDevice, calibration: StereoCalibration?, file: String?, force: Bool,
                        options: StereoSessionOptions = StereoSessionOptions()) throws -> StereoSession {
        var options = options
        options.forcesCalibration = force
        let made: Result<StereoSession, StereoSessionError>
        do { made = .success(try StereoSession(device: device, calibration: calibration, options: options)) } catch {
            made = .failure(error)
        }
        if case .failure(.device(.calibrationForOtherCameras(let calibrated, let attached))) = made {
            throw CLIError("--calibration \(file ?? "") was made for other cameras (left \(calibrated.left), right "
                           + "\(calibrated.right)); these are left \(attached.left), right \(attached.right). Calibrate "
                           + "these cameras, or pass --force to use it anyway")
        }
        return try made.get()
    }

    /// Reads a calibration in any format Parallax writes (see ``CalibrationFile``), or fails
    /// with a one-line error naming the file.
    static func loadCalibration(_ source: String) throws -> StereoCalibration {
        do {
            return try CalibrationFile.load(source).calibration
        } catch {
            throw CLIError(error.description)
        }
    }

    /// A convergence distance typed as `text`, in the calibration's units.
    ///
    /// The rule: a bare number is in the calibration's own units; a number with a unit is
    /// converted to the unit the calibration records, and refused when it records none
    /// (`unitless`: made with a bare square size, or an older or OpenCV file). A distance
    /// nearer than the baseline, or one that would shift the images by their whole width or
    /// more (nothing left in view), is refused with the shift it would cause.
    static func convergenceDistance(_ text: String, option: String, calibration: StereoCalibration, source: String,
                                    rectification: StereoRectification) throws -> Double {
        guard let length = Length(parsing: text) else { throw ValidationError(distanceSyntax(option, text)) }
        let unit = calibration.translationUnit
        guard let distance = length.value(in: unit) else {
            throw CLIError("\(option) \(text) has a unit, but \(source) records no unit for its translations (it was made "
                           + "with a bare square size, or by another tool); give the distance as a bare number in the "
                           + "calibration's own units (its baseline is \(calibration.baseline.formattedLength))")
        }
        let inUnits = unit == .unitless ? "" : " \(unit.rawValue)"
        let shift = abs(rectification.unconverged.disparity(atDistance: distance))
        let span = Double(rectification.layout == .horizontal ? rectification.size.width : rectification.size.height)
        if distance < calibration.baseline {
            throw CLIError("\(option) \(text) is \(distance.formattedLength)\(inUnits), nearer than the baseline "
                           + "(\(calibration.baseline.formattedLength)\(inUnits)): the images would shift by "
                           + "\(shift.formattedLength) px in total. Distances are in the calibration's units\(unit == .unitless ? "" : " (\(unit.rawValue))")")
        }
        if shift >= span {
            throw CLIError("\(option) \(text) (\(distance.formattedLength)\(inUnits)) would shift the images by "
                           + "\(shift.formattedLength) px in total, more than their \(Int(span)) px: nothing would be in view. "
                           + "Distances are in the calibration's units\(unit == .unitless ? "" : " (\(unit.rawValue))")")
        }
        return distance
    }

    static func distanceSyntax(_ option: String, _ text: String) -> String {
        "\(option) must be a positive distance such as 1500, 1.5m, 150cm or 1500mm, got '\(text)'"
    }
}

extension Double {
    /// Four significant digits, without trailing zeros (`60`, `0.06`, `1500`, `1.731e+302`).
    var formattedLength: String {
        guard isFinite else { return "\(self)" }
        return String(format: "%.4g", self)
    }
}

/// A failure the CLI reports as one line on stderr, exiting with status 1.
struct CLIError: Error, CustomStringConvertible {
    let description: String
    init(_ message: String) { description = message }
}

extension RectificationArguments {
    /// A length with its unit (`1500 mm`); a calibration that records no unit gets its
    /// lengths in board units, said so, never a bare number.
    static func length(_ value: Double, _ unit: LengthUnit, format: String = "%g") -> String {
        let number = String(format: format, value)
        return unit == .unitless ? "\(number) (board units: the calibration records no unit)" : "\(number) \(unit.suffix)"
    }
}
