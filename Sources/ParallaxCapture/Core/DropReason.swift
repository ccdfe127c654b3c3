/// Why a frame did not reach the consumer in a pair: the one vocabulary of Parallax's frame
/// account, from the camera to the session.
///
/// A frame can be given up at three stages, and every reason belongs to exactly one of them
/// (its ``stage``):
///
/// - ``Stage/camera``: the camera or the stereo device lost it before any synchronizer saw
///   it (``CaptureEvent/dropped(count:reason:)``, ``StereoSessionStatistics/lost(_:reason:)``);
/// - ``Stage/synchronizer``: the synchronizer could not pair it (``FrameDrop``,
///   ``SynchronizerStatistics/dropped(_:reason:)``);
/// - ``Stage/session``: the session dropped the pair the synchronizer made with it (both
///   frames count; ``StereoSessionStatistics/dropped(_:reason:)``).
///
/// Each reason's raw value is its stable snake_case name, as reports and JSON print it
/// (`sequence_gap`, `superseded`, `consumer_behind`, …); no name means two things.
public enum DropReason: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    // MARK: The camera's (lost before the synchronizer)

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
    /// A recorded message (a bag's image message) that does not decode: its bytes are not
    /// the CDR its schema names, its data is shorter or longer than height × step, its
    /// width or height is 0, or its chunk fails its check.
    case malformedMessage = "malformed_message"
    /// A recorded image in an encoding Parallax does not play (for example `mono16`).
    case unsupportedEncoding = "unsupported_encoding"
    /// A recorded image of another size or pixel format than the stream's first: a stream
    /// keeps one format, so it is not handed on.
    case formatChanged = "format_changed"
    /// A recording's image file that is missing or does not decode (a EuRoC folder's PNG).
    case unreadableImage = "unreadable_image"

    // MARK: The synchronizer's (not paired)

    /// No frame of the other camera can pair with it within the maximum skew (for the
    /// exact policy: no frame with an equal timestamp or sequence number; for the epsilon
    /// policy: none within epsilon).
    case noMatchWithinSkew = "no_match_within_skew"
    /// A frame of the same camera that is closer in time to the other camera's frame took
    /// its place (this frame was within the maximum skew of that frame, but farther).
    case superseded = "superseded"
    /// A bounded queue was full: a side's pending-frame queue (the other camera is silent
    /// and nothing can be proven), or the output queue (the consumer reads pairs more
    /// slowly than they are made; the oldest pair gives way to the newest).
    case queueOverflow = "queue_overflow"
    /// The frame arrived, or was waiting, while one of the two cameras was disabled.
    case constituentDisabled = "constituent_disabled"
    /// Time went backwards (or the stream was reset) on one camera: every waiting frame is
    /// flushed, because timestamps before and after a jump cannot be compared.
    case discontinuity = "discontinuity"
    /// The capture layer handed the synchronizer the frame as damaged
    /// (``OutputSynchronizer/pushDamaged(_:timestampNanoseconds:sequence:payload:)``).
    case deviceError = "device_error"
    /// The frame was waiting, or arrived, while one of the two cameras was disconnected
    /// (unplugged), until it came back.
    case disconnected = "disconnected"
    /// The frame arrived after the synchronizer finished (``OutputSynchronizer/finish()``; a
    /// session finishes its synchronizer when it is told to stop or ends): it is never
    /// offered for pairing, so that nothing is paired after the end. The camera was not
    /// switched off, so this is not ``constituentDisabled``.
    case afterStop = "after_stop"

    // MARK: The session's (a pair made, then dropped)

    /// The consumer was behind: the pair queue was full and the newest pair won.
    case consumerBehind = "consumer_behind"
    /// Every pooled rectification buffer was held by pairs the consumer kept, and the pool had
    /// reached ``StereoSessionOptions/heldPairsLimitBytes``: the session ends with
    /// ``StereoSessionError/pairsHeld(held:pairBytes:limitBytes:)``.
    case noFreeBuffer = "no_free_buffer"
    /// The pair could not be rectified (the error was reported as an event).
    case rectificationFailed = "rectification_failed"
    /// The session stopped before the consumer read the pair.
    case sessionStopped = "session_stopped"
    /// Held back by the session's own adaptive frame-rate cap (lowered under pressure, see
    /// ``PressurePolicy/adaptsFrameRate``): not a loss. A device's fixed cap holds frames
    /// back before they reach the session (``frameRateCap``).
    case adaptiveFrameRateCap = "adaptive_frame_rate_cap"

    /// Where along the way a frame is given up.
    public enum Stage: String, Hashable, Sendable, CaseIterable {
        /// Lost by the camera or the stereo device: never reached a synchronizer.
        case camera
        /// Reached the synchronizer, which could not pair it.
        case synchronizer
        /// Paired, then the pair was dropped by the session before the consumer read it.
        case session
    }

    /// The stage this reason belongs to.
    public var stage: Stage {
        switch index {
        case ..<Self.synchronizerStart: .camera
        case ..<Self.sessionStart: .synchronizer
        default: .session
        }
    }

    /// The reasons of one stage, in declaration order.
    public static func reasons(of stage: Stage) -> [DropReason] { allCases.filter { $0.stage == stage } }

    /// The snake_case name (the raw value).
    public var description: String { rawValue }

    /// Number of reasons (``allCases`` builds an array on every use; counters index with this).
    @usableFromInline static let caseCount = 25
    /// Where the synchronizer's and the session's reasons begin among ``allCases``.
    @usableFromInline static let synchronizerStart = 12, sessionStart = 20

    /// The reason's position among ``allCases``, for counters kept in flat arrays
    /// (``allCases`` builds an array on every use).
    @inlinable var index: Int {
        switch self {
        case .corruptBuffer: 0
        case .sequenceGap: 1
        case .timestampWentBackwards: 2
        case .streamRestarted: 3
        case .simulated: 4
        case .frameRateCap: 5
        case .corruptFrame: 6
        case .noDecodeBuffer: 7
        case .malformedMessage: 8
        case .unsupportedEncoding: 9
        case .formatChanged: 10
        case .unreadableImage: 11
        case .noMatchWithinSkew: 12
        case .superseded: 13
        case .queueOverflow: 14
        case .constituentDisabled: 15
        case .discontinuity: 16
        case .deviceError: 17
        case .disconnected: 18
        case .afterStop: 19
        case .consumerBehind: 20
        case .noFreeBuffer: 21
        case .rectificationFailed: 22
        case .sessionStopped: 23
        case .adaptiveFrameRateCap: 24
        }
    }
}

/// The synchronizer's reasons, now part of the one ``DropReason``.
@available(*, deprecated, renamed: "DropReason")
public typealias FrameDropReason = DropReason

/// The session's reasons, now part of the one ``DropReason``.
@available(*, deprecated, renamed: "DropReason")
public typealias SessionDropReason = DropReason
