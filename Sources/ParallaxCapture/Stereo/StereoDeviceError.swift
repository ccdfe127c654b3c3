import ParallaxGeometry

/// Why a stereo device cannot do what was asked. Each case names the cameras and values
/// involved and, where there is one, what to do instead.
public enum StereoDeviceError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The two cameras have no pixel format in common (or none at a common size and rate).
    case noSharedFormat(left: String, right: String, leftOffers: [String], rightOffers: [String])
    /// The requested pixel format is missing on one or both sides.
    case formatNotOffered(CaptureFormat, missingOn: [StereoSide], leftOffers: [String], rightOffers: [String])
    /// Both drivers were given the same request and set different formats.
    case driversDisagree(requested: CaptureFormat, left: CaptureFormat, right: CaptureFormat)
    /// The hardware cost is 1.0 or more: refused before STREAMON.
    case overBudget(StereoConfiguration, cost: HardwareCost, alternatives: [CostAlternative], separateBusesCost: HardwareCost?)
    /// The kernel refused STREAMON with ENOSPC although the estimate was below 1.0; this
    /// camera pair and format are remembered as not running.
    case refusedAtStreamOn(side: StereoSide, device: String, format: CaptureFormat, estimate: HardwareCost)
    /// The calibration was made for other cameras (attach with `force` to use it anyway).
    case calibrationForOtherCameras(calibrated: PerSide<String>, attached: PerSide<String>)
    /// `start` before `configure`, `configure` while streaming, and other misuse at run time.
    case invalidState(String)
    /// A constituent failed.
    case capture(CaptureError, side: StereoSide?)

    /// A readable description.
    public var description: String {
        switch self {
        case .noSharedFormat(let l, let r, let lo, let ro):
            return "the two cameras share no format; left (\(l)) offers \(Self.list(lo)); right (\(r)) offers \(Self.list(ro))"
        case .formatNotOffered(let f, let missing, let lo, let ro):
            let sides = missing.map(\.description).joined(separator: " and ")
            return "\(f.fourCC) is not offered by the \(sides) camera\(missing.count > 1 ? "s" : ""); "
                + "left offers \(Self.list(lo)); right offers \(Self.list(ro))"
        case .driversDisagree(let requested, let l, let r):
            return "the drivers set different formats for \(requested): left \(l), right \(r); "
                + "choose a format both list exactly (see sharedFormats() or `parallax devices --pairs`)"
        case .overBudget(let configuration, let cost, let alternatives, let separate):
            var text = "\(configuration) needs hardware cost \(cost.cost.formatted3) (\(cost.explanation)); it must stay below 1.0"
            if cost.refusedAtStreamOnBefore { text += "; this camera pair was refused at STREAMON with this format before" }
            if alternatives.isEmpty {
                text += "; no shared format fits"
            } else {
                text += "; formats that fit: " + alternatives.prefix(6).map(\.description).joined(separator: "; ")
            }
            if let separate, separate.runs {
                text += "; or put the cameras on separate USB buses (cost then \(separate.cost.formatted3))"
            }
            return text
        case .refusedAtStreamOn(let side, let device, let format, let estimate):
            return "\(device) (\(side)): the kernel refused \(format) for lack of USB bandwidth (ENOSPC) although the "
                + "estimate was \(estimate.cost.formatted3); remembered for this camera pair and format. "
                + "Use a compressed format, a lower resolution or rate, or separate USB controllers"
        case .calibrationForOtherCameras(let calibrated, let attached):
            return "the calibration was made for left \(calibrated.left), right \(calibrated.right); this device has "
                + "left \(attached.left), right \(attached.right) (attach with force to use it anyway)"
        case .invalidState(let reason): return reason
        case .capture(let error, let side):
            return side.map { "\($0) camera: \(error)" } ?? "\(error)"
        }
    }

    private static func list(_ items: [String]) -> String {
        items.isEmpty ? "nothing" : items.prefix(10).joined(separator: ", ") + (items.count > 10 ? ", …" : "")
    }
}
