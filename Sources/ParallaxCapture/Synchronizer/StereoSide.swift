/// One of the two constituent cameras of a stereo device.
///
/// Left and right follow the stereo calibration: the extrinsics map points from the
/// left camera frame into the right camera frame.
public enum StereoSide: Int, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The reference camera of the pair.
    case left = 0
    /// The second camera of the pair.
    case right = 1

    /// The other camera.
    @inlinable
    public var opposite: StereoSide { self == .left ? .right : .left }

    /// `"left"` or `"right"`.
    public var description: String { self == .left ? "left" : "right" }
}
