/// What looks wrong with a rig's geometry once it is rectified, in words a user can act
/// on: the checks `parallax rectification` and `parallax rectify` run before they print
/// or write anything, so that a broken calibration is named instead of showing up as
/// empty regions or black images.
public struct RectificationFinding: Hashable, Sendable, CustomStringConvertible {
    /// How bad it is.
    public enum Severity: Sendable, Hashable {
        /// Usable, but probably not what was meant.
        case warning
        /// The rectified images would be empty or meaningless.
        case fatal
    }

    /// How bad it is.
    public var severity: Severity
    /// What is wrong and why it matters.
    public var message: String

    /// The message.
    public var description: String { message }

    /// Relative rotations above this many degrees draw a warning.
    public static let rotationWarningDegrees = 20.0
    /// A baseline above this is fatal: 10⁹ is a thousand kilometres in millimetres.
    public static let implausibleBaseline = 1e9
    /// A valid region under this fraction of the image draws a warning.
    public static let smallValidAreaFraction = 0.1
}

extension StereoRectification {
    /// The findings for this rectification of `calibration`, fatal ones first.
    ///
    /// - Fatal: a baseline above ``RectificationFinding/implausibleBaseline``, a valid region with no pixel (the views do not overlap after
    ///   rectification), or a baseline that runs mostly along the viewing direction (the
    ///   right camera in front of or behind the left one), which no rectification can turn
    ///   into a side-by-side pair.
    /// - Warning: cameras turned against each other, or turned to rectify, by more than
    ///   ``RectificationFinding/rotationWarningDegrees``; a valid region under
    ///   ``RectificationFinding/smallValidAreaFraction`` of the image; a right camera on
    ///   the left (OpenCV's `T.x` is negative for a left-to-right rig), which makes
    ///   disparities negative.
    public func findings(for calibration: StereoCalibration) -> [RectificationFinding] {
        var fatal: [String] = [], warnings: [String] = []
        let t = calibration.extrinsics.translation
        let largest = max(abs(t.x), abs(t.y), abs(t.z))
        let direction = largest > 0 ? t / largest : t
        let formattedT = "T = (\(short(t.x)), \(short(t.y)), \(short(t.z)))"
        if calibration.baseline > RectificationFinding.implausibleBaseline {
            fatal.append("the baseline is \(calibration.baseline) (\(formattedT)), implausible for a rig in any unit: the translation is corrupt")
        }
        if abs(direction.z) > max(abs(direction.x), abs(direction.y)) {
            fatal.append("the right camera sits \(t.z < 0 ? "in front of" : "behind") the left one rather than beside it (\(formattedT)): "
                         + "the baseline runs along the viewing direction, which rectification cannot turn into a side-by-side pair")
        }
        for (side, roi) in [("left", roi1), ("right", roi2)] where roi.width <= 0 || roi.height <= 0 {
            fatal.append("the rectified \(side) image has no valid pixel (its region is \(roi.width)x\(roi.height)): "
                         + "after rectification the cameras do not see the same scene; check the rotation and translation")
        }
        let relative = degrees(calibration.extrinsics.rotation)
        if relative > RectificationFinding.rotationWarningDegrees {
            warnings.append("the cameras are turned \(short(relative))° against each other; rectification will crop and stretch much of each image")
        }
        for (side, rotation) in [("left", r1), ("right", r2)] where relative <= RectificationFinding.rotationWarningDegrees {
            let angle = degrees(rotation)
            if angle > RectificationFinding.rotationWarningDegrees {
                warnings.append("rectifying turns the \(side) camera by \(short(angle))°; the baseline is far from the image rows (\(formattedT))")
            }
        }
        let area = Double(size.width * size.height)
        for (side, roi) in [("left", roi1), ("right", roi2)] where roi.width > 0 && roi.height > 0 && area > 0 {
            let fraction = Double(roi.width * roi.height) / area
            if fraction < RectificationFinding.smallValidAreaFraction {
                warnings.append("only \(short(fraction * 100)) % of the rectified \(side) image is valid (\(roi))")
            }
        }
        if layout == .horizontal && direction.x > 0 {
            warnings.append("the right camera is to the left of the left one (T.x > 0 in \(formattedT)): were the cameras swapped? "
                            + "Disparities will be negative")
        }
        return fatal.map { RectificationFinding(severity: .fatal, message: $0) }
            + warnings.map { RectificationFinding(severity: .warning, message: $0) }
    }
}

/// The angle of a rotation matrix, in degrees.
private func degrees(_ rotation: Matrix3x3) -> Double {
    _acos(min(1, max(-1, (rotation.trace - 1) / 2))) * 180 / .pi
}

/// A figure for a message: at most three decimals.
private func short(_ value: Double) -> String {
    guard value.isFinite, abs(value) < 1e15 else { return "\(value)" }
    let rounded = (value * 1000).rounded() / 1000
    return rounded == rounded.rounded() ? "\(Int(rounded))" : "\(rounded)"
}
