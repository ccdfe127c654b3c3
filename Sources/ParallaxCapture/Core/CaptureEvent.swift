/// Why a camera lost a frame before it reached a synchronizer: the first of the three
/// stages of Parallax's frame account (see ``StereoSessionStatistics`` for the whole).
///
/// Each reason's raw value is its stable snake_case name, as reports and JSON print it
/// (`sequence_gap`, …). The names of all three stages are distinct: these
/// (``DropReason``, a camera's), ``FrameDropReason`` (the synchronizer's) and
/// ``SessionDropReason`` (the session's).
public enum DropReason: String, Hashable, Sendable, CaseIterable {
    /// The driver flagged the buffer as corrupt (`V4L2_BUF_FLAG_ERROR`), e.g. a USB transfer error.
    case corruptBuffer = "corrupt_buffer"
    /// The device's sequence counter skipped: it had no free buffer or lost frames on the bus.
    case sequenceGap = "sequence_gap"
    /// The frame's timestamp was not after the previous one; delivering it would break pairing.
    case timestampWentBackwards = "timestamp_went_backwards"
    /// Due while the driver's stream was restarted after a queue error (counted from the
    /// gap in timestamps: the driver's counter starts again at 0).
    case streamRestarted = "stream_restarted"
    /// A simulated loss (the simulated rig's drop probability).
    case simulated = "simulated"
    /// Held back by a stereo device to keep its frame-rate cap (the cameras could not be
    /// set to a rate at or below the cap).
    case frameRateCap = "frame_rate_cap"
    /// A compressed (MJPEG) frame that did not decode: truncated, damaged, empty, or of
    /// another layout than the stream's. Never handed on as an image.
    case corruptFrame = "corrupt_frame"
    /// A stereo device had no free buffer to decode an MJPEG frame into: the consumer
    /// held every decoded frame of that side (``MJPEGDecoding``'s pool is full).
    case noDecodeBuffer = "no_decode_buffer"
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
