/// Why frames did not reach the consumer.
public enum DropReason: String, Hashable, Sendable {
    /// The driver flagged the buffer as corrupt (`V4L2_BUF_FLAG_ERROR`), e.g. a USB transfer error.
    case corruptBuffer
    /// The device's sequence counter skipped: it had no free buffer or lost frames on the bus.
    case sequenceGap
    /// The frame's timestamp was not after the previous one; delivering it would break pairing.
    case timestampWentBackwards
    /// Due while the driver's stream was restarted after a queue error (counted from the
    /// gap in timestamps: the driver's counter starts again at 0).
    case streamRestarted
    /// A simulated loss (the simulated rig's drop probability).
    case simulated
    /// Held back by a stereo device to keep its frame-rate cap (the cameras could not be
    /// set to a rate at or below the cap).
    case frameRateCap
    /// A compressed (MJPEG) frame that did not decode: truncated, damaged, empty, or of
    /// another layout than the stream's. Never handed on as an image.
    case corruptFrame
    /// A stereo device had no free buffer to decode an MJPEG frame into: the consumer
    /// held every decoded frame of that side (``MJPEGDecoding``'s pool is full).
    case noDecodeBuffer
}

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
