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
    /// Your code held so many rectified pairs, or views of their images, that their buffers
    /// (`pairBytes` a pair) reached ``StereoSessionOptions/heldPairsLimitBytes``: the session
    /// ended rather than stop pairing, and `held` pairs were still held.
    case pairsHeld(held: Int, pairBytes: Int, limitBytes: Int)

    /// A readable description.
    public var description: String {
        switch self {
        case .device(let error): return "\(error)"
        case .calibrationDoesNotFit(let reason): return "the calibration does not fit the stereo device: \(reason)"
        case .invalidState(let reason): return reason
        case .ended(let reason): return "the session ended: \(reason)"
        case .pairsHeld(let held, let pairBytes, let limit):
            func mib(_ bytes: Int) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
            return "your code holds \(held) rectified pairs or views of their images (\(mib(held * pairBytes)), "
                + "\(mib(pairBytes)) a pair; StereoSessionOptions.heldPairsLimitBytes allows \(mib(limit))): the session ended "
                + "rather than stop pairing. Let go of pairs you are done with, keep copies (StereoPair.copyImages()), "
                + "or raise the limit"
        }
    }
}
