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

/// One value for each camera of a stereo pair: the left camera's and the right camera's.
///
/// Every per-camera quantity of every layer (rectification jobs, decoding failures, drop
/// counts, formats, enabled states, identities) is a `PerSide` or carries a ``StereoSide``,
/// so code reads `drops[.left]`, never `drops[0]` or `"left"`.
public struct PerSide<Value> {
    /// The left camera's value.
    public var left: Value
    /// The right camera's value.
    public var right: Value

    /// The two values.
    @inlinable
    public init(left: Value, right: Value) {
        self.left = left
        self.right = right
    }

    /// The same value for both cameras.
    @inlinable
    public init(repeating value: Value) {
        self.init(left: value, right: value)
    }

    /// A value computed for each side.
    @inlinable
    public init(_ make: (StereoSide) throws -> Value) rethrows {
        self.init(left: try make(.left), right: try make(.right))
    }

    /// The value of one side. Get and set, deliberately not `_read`/`_modify`: those
    /// coroutines heap-allocate their frames when not inlined (the synchronizer's hot path).
    @inlinable
    public subscript(side: StereoSide) -> Value {
        get { side == .left ? left : right }
        set { if side == .left { left = newValue } else { right = newValue } }
    }

    /// Both values transformed.
    @inlinable
    public func map<T>(_ transform: (Value) throws -> T) rethrows -> PerSide<T> {
        PerSide<T>(left: try transform(left), right: try transform(right))
    }

    /// Left then right.
    @inlinable
    public var both: [Value] { [left, right] }
}

extension PerSide: Sendable where Value: Sendable {}
extension PerSide: Equatable where Value: Equatable {}
extension PerSide: Hashable where Value: Hashable {}
extension PerSide: Codable where Value: Codable {}

extension PerSide: CustomStringConvertible {
    /// `left: …, right: …`.
    public var description: String { "left: \(left), right: \(right)" }
}
