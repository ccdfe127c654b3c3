/// A rigid motion `x' = R x + t`: a rotation followed by a translation.
///
/// For stereo extrinsics (OpenCV's R, T) the transform takes a point from the
/// left camera's frame into the right camera's frame. The translation is in
/// whatever length unit the calibration used (the target's square size unit).
public struct RigidTransform: Hashable, Sendable {
    /// The rotation `R` (orthonormal, determinant +1).
    public var rotation: Matrix3x3
    /// The translation `t`, applied after the rotation.
    public var translation: SIMD3<Double>

    /// The motion `x' = rotation · x + translation`; the defaults give ``identity``. The rotation
    /// is stored as given, not checked or re-orthonormalized.
    @inlinable
    public init(rotation: Matrix3x3 = .identity, translation: SIMD3<Double> = .zero) {
        self.rotation = rotation
        self.translation = translation
    }

    /// A transform from a Rodrigues rotation vector and a translation.
    @inlinable
    public init(rodrigues: SIMD3<Double>, translation: SIMD3<Double>) {
        self.init(rotation: Matrix3x3(rodrigues: rodrigues), translation: translation)
    }

    /// The transform that changes nothing.
    public static let identity = RigidTransform()

    /// `R x + t`.
    @inlinable
    public func apply(_ point: SIMD3<Double>) -> SIMD3<Double> {
        rotation * point + translation
    }

    /// The inverse motion `x = Rᵀ (x' − t)`.
    @inlinable
    public var inverse: RigidTransform {
        let rt = rotation.transposed
        return RigidTransform(rotation: rt, translation: -(rt * translation))
    }

    /// `self` after `other`: `self.apply(other.apply(x))`.
    @inlinable
    public func composed(after other: RigidTransform) -> RigidTransform {
        RigidTransform(rotation: rotation * other.rotation, translation: rotation * other.translation + translation)
    }

    /// The position of the source frame's origin seen from the destination
    /// frame is `t`; the destination origin in the source frame is `−Rᵀ t`.
    @inlinable
    public var inverseOrigin: SIMD3<Double> { -(rotation.transposed * translation) }
}

extension RigidTransform: Codable {
    private enum CodingKeys: String, CodingKey { case rotation, translation }

    /// Reads a keyed container with `rotation` (nine row-major numbers) and `translation`
    /// (three numbers); throws a `DecodingError` when either has the wrong count.
    public init(from decoder: Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        rotation = try c.decode(Matrix3x3.self, forKey: .rotation)
        let t = try c.decode([Double].self, forKey: .translation)
        guard t.count == 3 else {
            throw DecodingError.dataCorruptedError(
                forKey: .translation, in: c, debugDescription: "translation needs 3 numbers, found \(t.count)")
        }
        translation = SIMD3(t[0], t[1], t[2])
    }

    /// Writes `rotation` (nine row-major numbers) and `translation` (three numbers), the form
    /// ``init(from:)`` reads.
    public func encode(to encoder: Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(rotation, forKey: .rotation)
        try c.encode([translation.x, translation.y, translation.z], forKey: .translation)
    }
}
