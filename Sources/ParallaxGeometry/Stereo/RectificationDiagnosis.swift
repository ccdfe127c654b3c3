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
    ///   the left (its optical centre at negative x in the left camera's frame; OpenCV's
    ///   `T.x` is then positive), which makes
    ///   disparities negative.
    public func findings(for calibration: StereoCalibration) -> [RectificationFinding] {
        var fatal: [String] = [], warnings: [String] = []
        let t = calibration.extrinsics.translation
        let formattedT = "T = (\(short(t.x)), \(short(t.y)), \(short(t.z)))"
        // Where the right camera is, in the left camera's frame, against where the rig looks
        // (between the two optical axes): T itself is in the right camera's frame.
        let centre = calibration.rightCameraCentre
        let largest = max(abs(centre.x), abs(centre.y), abs(centre.z))
        let position = largest > 0 && largest.isFinite ? centre / largest : centre
        let rightAxis = calibration.extrinsics.rotation.transposed * SIMD3<Double>(0, 0, 1)
        let viewing = SIMD3<Double>(0, 0, 1) + rightAxis
        let axis = length(viewing) > 1e-9 ? viewing / length(viewing) : SIMD3<Double>(0, 0, 1)
        let along = dot(position, axis)
        let across = length(position - along * axis)
        if calibration.baseline > RectificationFinding.implausibleBaseline {
            fatal.append("the baseline is \(calibration.baseline) (\(formattedT)), implausible for a rig in any unit: the translation is corrupt")
        }
        if abs(along) > across {
            fatal.append("the right camera sits \(along > 0 ? "in front of" : "behind") the left one rather than beside it (\(formattedT)): "
                         + "the baseline runs along the viewing direction, which rectification cannot turn into a side-by-side pair")
        }
        let relative = degrees(calibration.extrinsics.rotation)
        for (side, roi) in [(StereoSide.left, roi1), (.right, roi2)] where roi.width <= 0 || roi.height <= 0 {
            // An empty valid rectangle has three causes: the views do not overlap at all
            // (fatal), cameras turned far apart, or a lens model that folds over near the
            // corners (a poor fit; the middle is usable).
            let region = "its region is \(roi.width)x\(roi.height)"
            if sampledValidFraction(side: side, of: calibration) == 0 {
                fatal.append("the rectified \(side) image has no valid pixel (\(region)): "
                             + "after rectification the cameras do not see the same scene; check the rotation and translation")
            } else if relative > RectificationFinding.rotationWarningDegrees {
                warnings.append("the rectified \(side) image has no rectangle of valid pixels (\(region)): "
                                + "the cameras are turned too far apart for the images to share one")
            } else {
                warnings.append("the rectified \(side) image has no rectangle of valid pixels (\(region)) "
                                + "although the camera sees where the rig looks: the lens model probably folds over near the image corners "
                                + "(too few views, or none near the corners?)")
            }
        }
        if relative > RectificationFinding.rotationWarningDegrees {
            warnings.append("the cameras are turned \(short(relative))° against each other; rectification will crop and stretch much of each image")
        }
        for (side, rotation) in [(StereoSide.left, r1), (.right, r2)] where relative <= RectificationFinding.rotationWarningDegrees {
            let angle = degrees(rotation)
            if angle > RectificationFinding.rotationWarningDegrees {
                warnings.append("rectifying turns the \(side) camera by \(short(angle))°; the baseline is far from the image rows (\(formattedT))")
            }
        }
        let area = Double(size.width * size.height)
        for (side, roi) in [(StereoSide.left, roi1), (.right, roi2)] where roi.width > 0 && roi.height > 0 && area > 0 {
            let fraction = Double(roi.width * roi.height) / area
            if fraction < RectificationFinding.smallValidAreaFraction {
                warnings.append("only \(short(fraction * 100)) % of the rectified \(side) image is valid (\(roi))")
            }
        }
        if layout == .horizontal && position.x < 0 {
            warnings.append("the right camera is to the left of the left one (\(formattedT)): were the cameras swapped? "
                            + "Disparities will be negative")
        }
        return fatal.map { RectificationFinding(severity: .fatal, message: $0) }
            + warnings.map { RectificationFinding(severity: .warning, message: $0) }
    }
}

extension StereoRectification {
    /// The fraction of a 5×5 fan of directions within 10° of the rectified optical axis
    /// that the left (or right) camera sees: 0 when, after rectification, the camera looks
    /// away from where the rig looks. Independent of the rectified focal length, which a
    /// poor lens model can blow up or shrink.
    func sampledValidFraction(side: StereoSide, of calibration: StereoCalibration) -> Double {
        let (rotation, camera) = (side == .left ? r1 : r2, calibration[side])
        let spread = 10 * Double.pi / 180
        var inside = 0, total = 0
        for i in -2...2 {
            for j in -2...2 {
                total += 1
                let direction = SIMD3(_tan(spread * Double(i) / 2), _tan(spread * Double(j) / 2), 1)
                let ray = rotation.transposed * direction
                guard ray.z > 0, let pixel = camera.project(ray) else { continue }
                if pixel.x >= 0, pixel.y >= 0, pixel.x < Double(camera.size.width), pixel.y < Double(camera.size.height) {
                    inside += 1
                }
            }
        }
        return Double(inside) / Double(total)
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
