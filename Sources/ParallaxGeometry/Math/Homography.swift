/// A plane projective transform of pixels, `x' ~ H x`.
public struct Homography: Hashable, Codable, Sendable {
    /// The 3×3 matrix, defined up to scale.
    public var matrix: Matrix3x3

    /// The homography with `matrix` (any nonzero scale of it describes the same transform).
    @inlinable
    public init(_ matrix: Matrix3x3) { self.matrix = matrix }

    /// The identity.
    public static let identity = Homography(.identity)

    /// The image of `point`, or `nil` when it maps to infinity (w = 0).
    @inlinable
    public func apply(_ point: SIMD2<Double>) -> SIMD2<Double>? {
        let q = matrix * point.homogeneous
        guard q.z != 0 else { return nil }
        return SIMD2(q.x / q.z, q.y / q.z)
    }

    /// `self` after `other`: maps x to `self(other(x))`.
    @inlinable
    public func composed(after other: Homography) -> Homography {
        Homography(matrix * other.matrix)
    }

    /// The inverse transform, or `nil` for a singular matrix.
    public var inverse: Homography? {
        matrix.inverse.map(Homography.init)
    }

    /// The same transform scaled so that `H[2][2] = 1`, or so its Frobenius
    /// norm is 1 when `H[2][2]` is (near) zero. The sign makes the largest
    /// entry positive in the second case.
    public var normalized: Homography {
        let h22 = matrix[2, 2]
        if abs(h22) > 1e-12 * matrix.frobeniusNorm { return Homography(matrix * (1 / h22)) }
        let n = matrix.frobeniusNorm
        guard n > 0 else { return self }
        let largest = matrix.rowMajor.max(by: { abs($0) < abs($1) }) ?? 1
        return Homography(matrix * ((largest < 0 ? -1 : 1) / n))
    }

    /// The homography induced by a plane between two pinhole views.
    ///
    /// For points X on the plane `nᵀ X = d` in the first camera's frame, with
    /// the second camera at `X₂ = R X + t`, the pixels satisfy
    /// `x₂ ~ K₂ (R + t nᵀ / d) K₁⁻¹ x₁`. (Written with the plane as `nᵀX + d' = 0`,
    /// d' = −d, this is the textbook `K₂ (R − t nᵀ/d') K₁⁻¹`.)
    ///
    /// - Parameters:
    ///   - first: the intrinsics `K₁` of the first view (the pixels `x₁` the homography maps from).
    ///   - second: the intrinsics `K₂` of the second view (the pixels `x₂` it maps to).
    ///   - motion: the second camera's pose relative to the first, `X₂ = R X + t`
    ///     (for a stereo pair, left to right: OpenCV's R, T).
    ///   - normal: the plane's unit normal in the first camera's frame.
    ///   - distance: the plane's signed distance from the first camera's centre along `normal` (> 0 in front),
    ///     in the unit of `motion`'s translation; it must not be zero (the plane would pass through the centre).
    public static func planeInduced(
        from first: CameraIntrinsics, to second: CameraIntrinsics,
        motion: RigidTransform, planeNormal normal: SIMD3<Double>, planeDistance distance: Double
    ) -> Homography {
        let h = second.matrix * (motion.rotation + Matrix3x3.outer(motion.translation, normal) * (1 / distance))
            * first.inverseMatrix
        return Homography(h)
    }
}
