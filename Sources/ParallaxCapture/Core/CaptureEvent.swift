/// Something that happened to a streaming device besides a frame.
public enum CaptureEvent: Hashable, Sendable, CustomStringConvertible {
    /// `count` frames were lost for `reason`.
    case dropped(count: Int, reason: DropReason)
    /// No frame arrived for `waitedNanoseconds` although the device is streaming.
    case stalled(waitedNanoseconds: Int64)
    /// Frames flow again after a stall.
    case resumed
    /// A recoverable error (for example EIO from one DQBUF); streaming continues.
    case recoverableError(CaptureError)
    /// The device went away (unplugged); it has been torn down and will deliver nothing more.
    case disconnected
    /// Streaming ended (``CaptureDevice/stop()``, end of a recording).
    case stopped

    /// A readable one-line description.
    public var description: String {
        switch self {
        case .dropped(let n, let r): return "dropped \(n) frame(s): \(r.rawValue)"
        case .stalled(let ns): return "stalled: no frame for \(ns / 1_000_000) ms"
        case .resumed: return "resumed"
        case .recoverableError(let e): return "error: \(e)"
        case .disconnected: return "disconnected"
        case .stopped: return "stopped"
        }
    }
}

/// What a streaming device hands its consumer: a frame or an event, in order.
public enum CaptureOutput: Sendable {
    /// A frame (release it promptly: it holds a driver buffer).
    case frame(Frame)
    /// Something else that happened.
    case event(CaptureEvent)
}
