import ParallaxGeometry

/// One frame as the synchronizer saw it: what the capture layer pushed, plus the
/// timestamp the synchronizer paired it on.
public struct SynchronizedFrame<Payload>: CustomStringConvertible {
    /// The camera that produced the frame.
    public var side: StereoSide
    /// The timestamp as pushed (nanoseconds on the capture clock, for V4L2 CLOCK_MONOTONIC).
    public var timestampNanoseconds: Int64
    /// The timestamp moved to the middle of the exposure (nanoseconds, the capture clock);
    /// equal to ``timestampNanoseconds`` when the exposure is unknown.
    public var midExposureTimestampNanoseconds: Int64
    /// The timestamp the synchronizer compared (nanoseconds): moved to mid-exposure when
    /// the exposure is known and, for the right camera when clock correction is applied,
    /// mapped onto the left camera's clock.
    public var pairingTimestampNanoseconds: Int64
    /// The frame's sequence number as pushed (V4L2 counts every frame the driver
    /// produced, so gaps are frames lost before they reached us).
    public var sequence: UInt64
    /// The exposure time (nanoseconds), when the capture layer knows it.
    public var exposureNanoseconds: Int64?
    /// When the frame reached the synchronizer (nanoseconds on the synchronizer's clock:
    /// the monotonic clock for ``OutputSynchronizer``, the caller's clock for
    /// ``SynchronizerCore``).
    public var arrivalNanoseconds: Int64
    /// The pixels, or whatever the caller attached to the timestamp.
    public var payload: Payload

    /// Creates a frame record.
    public init(
        side: StereoSide, timestampNanoseconds: Int64, midExposureTimestampNanoseconds: Int64,
        pairingTimestampNanoseconds: Int64, sequence: UInt64,
        exposureNanoseconds: Int64?, arrivalNanoseconds: Int64, payload: Payload
    ) {
        self.side = side
        self.timestampNanoseconds = timestampNanoseconds
        self.midExposureTimestampNanoseconds = midExposureTimestampNanoseconds
        self.pairingTimestampNanoseconds = pairingTimestampNanoseconds
        self.sequence = sequence
        self.exposureNanoseconds = exposureNanoseconds
        self.arrivalNanoseconds = arrivalNanoseconds
        self.payload = payload
    }

    /// For example `left frame 7 at 233333333 ns`.
    public var description: String { "\(side) frame \(sequence) at \(timestampNanoseconds) ns" }
}

extension SynchronizedFrame: Sendable where Payload: Sendable {}

/// A left and a right frame that belong to the same moment.
public struct SynchronizedPair<Payload>: CustomStringConvertible {
    /// The left camera's frame.
    public var left: SynchronizedFrame<Payload>
    /// The right camera's frame.
    public var right: SynchronizedFrame<Payload>
    /// When the synchronizer released the pair (nanoseconds, same clock as
    /// ``SynchronizedFrame/arrivalNanoseconds``).
    public var releaseNanoseconds: Int64
    /// `true` when the pair was released because ``SynchronizerConfiguration/maximumLatencyNanoseconds``
    /// ran out or the stream ended before its optimality was proven by later frames
    /// (it is still the best pair among the frames seen).
    public var releasedOnDeadline: Bool

    /// Creates a pair.
    public init(
        left: SynchronizedFrame<Payload>, right: SynchronizedFrame<Payload>, releaseNanoseconds: Int64,
        releasedOnDeadline: Bool
    ) {
        self.left = left
        self.right = right
        self.releaseNanoseconds = releaseNanoseconds
        self.releasedOnDeadline = releasedOnDeadline
    }

    /// Right minus left pairing timestamp (nanoseconds): what the synchronizer judged the
    /// pair by. Positive when the right frame is later.
    @inlinable
    public var skewNanoseconds: Int64 { right.pairingTimestampNanoseconds &- left.pairingTimestampNanoseconds }

    /// Right minus left timestamp as pushed (nanoseconds), before any correction.
    @inlinable
    public var rawSkewNanoseconds: Int64 { right.timestampNanoseconds &- left.timestampNanoseconds }

    /// Nanoseconds from the arrival of the pair's later frame to its release: the time the
    /// pair waited for its optimality to be proven.
    @inlinable
    public var latencyNanoseconds: Int64 {
        releaseNanoseconds &- max(left.arrivalNanoseconds, right.arrivalNanoseconds)
    }

    /// For example `pair left 7 @ 233333333 / right 7 @ 233400000 (skew 66667 ns)`.
    public var description: String {
        "pair left \(left.sequence) @ \(left.timestampNanoseconds) / right \(right.sequence) @ \(right.timestampNanoseconds) (skew \(skewNanoseconds) ns)"
    }
}

extension SynchronizedPair: Sendable where Payload: Sendable {}

/// What a synchronizer reports: a pair, or a dropped frame.
public enum SynchronizerEvent<Payload> {
    /// A left and a right frame that belong together.
    case pair(SynchronizedPair<Payload>)
    /// A frame that will never be in a pair, and why.
    case drop(FrameDrop, payload: Payload)
}

extension SynchronizerEvent: Sendable where Payload: Sendable {}
