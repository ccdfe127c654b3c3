/// Why a ``StereoSession`` cannot start or do what was asked.
public enum StereoSessionError: Error, Sendable, CustomStringConvertible {
    /// The stereo device refused (format, cost, streaming).
    case device(StereoDeviceError)
    /// The calibration cannot be used with the active format (the reason says why and
    /// what to do); found before the first pair.
    case calibrationDoesNotFit(String)
    /// `start` twice, a still pair from a stopped session, and other misuse.
    case invalidState(String)
    /// The session ended before the still pair was complete.
    case ended(String)

    /// A readable description.
    public var description: String {
        switch self {
        case .device(let error): return "\(error)"
        case .calibrationDoesNotFit(let reason): return "the calibration does not fit the stereo device: \(reason)"
        case .invalidState(let reason): return reason
        case .ended(let reason): return "the session ended: \(reason)"
        }
    }
}
