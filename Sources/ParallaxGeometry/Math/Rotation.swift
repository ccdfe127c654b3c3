/// Rotations as matrices, Rodrigues (axis–angle) vectors and unit quaternions.
///
/// A rotation is a ``Matrix3x3`` with orthonormal rows and determinant +1. The
/// conversions here follow OpenCV's `Rodrigues`: the vector's direction is the
/// axis and its length the angle in radians.
extension Matrix3x3 {
    /// The rotation about `rodrigues`'s direction by its length in radians.
    ///
    /// A zero (or sub-`1e-300`) vector gives the identity. Uses the
    /// Rodrigues formula `R = cos θ I + (1 − cos θ) k kᵀ + sin θ [k]×`.
    public init(rodrigues r: SIMD3<Double>) {
        let theta = length(r)
        guard theta > 1e-300, theta.isFinite else {
            self = .identity
            return
        }
        let k = r / theta
        let c = _cos(theta), s = _sin(theta)
        self = Matrix3x3.identity * c + Matrix3x3.outer(k, k) * (1 - c) + Matrix3x3.crossProductMatrix(k) * s
    }

    /// The Rodrigues vector of this rotation: axis times angle, angle in [0, π].
    ///
    /// The matrix is assumed to be a rotation; a matrix that is not is first
    /// replaced by the nearest rotation in the sense that only its
    /// antisymmetric part and trace are used. Near θ = π, where the
    /// antisymmetric part vanishes, the axis is taken from the symmetric part.
    public var rodriguesVector: SIMD3<Double> {
        let antisymmetric = SIMD3(row2.y - row1.z, row0.z - row2.x, row1.x - row0.y) * 0.5
        let s = length(antisymmetric)
        let c = min(max((trace - 1) * 0.5, -1), 1)
        if s > 1e-5 {
            let theta = _atan2(s, c)
            return antisymmetric * (theta / s)
        }
        if c > 0 {
            // θ ≈ 0: sin θ ≈ θ, so the antisymmetric part already is the vector.
            return antisymmetric
        }
        // θ near π: the antisymmetric part vanishes, so take the axis from the
        // symmetric part, R + Rᵀ = 2c I + 2(1 − c) k kᵀ. The largest diagonal
        // term gives one component precisely; the off-diagonal terms give the
        // others without a square root's loss of precision.
        let theta = _atan2(s, c)
        let scale = 1 - c
        let diagonal = SIMD3(row0.x - c, row1.y - c, row2.z - c) / scale
        let j = diagonal.x >= diagonal.y && diagonal.x >= diagonal.z ? 0 : (diagonal.y >= diagonal.z ? 1 : 2)
        var axis = SIMD3<Double>.zero
        axis[j] = max(diagonal[j], 0).squareRoot()
        for i in 0..<3 where i != j {
            axis[i] = (self[i, j] + self[j, i]) * 0.5 / (scale * axis[j])
        }
        axis = normalize(axis)
        // The sign of the axis is fixed by the (small) antisymmetric part.
        if dot(axis, antisymmetric) < 0 { axis = -axis }
        return axis * theta
    }

    /// The rotation of `angle` radians about the x axis (right-handed).
    public static func rotationX(_ angle: Double) -> Matrix3x3 { Matrix3x3(rodrigues: SIMD3(angle, 0, 0)) }
    /// The rotation of `angle` radians about the y axis (right-handed).
    public static func rotationY(_ angle: Double) -> Matrix3x3 { Matrix3x3(rodrigues: SIMD3(0, angle, 0)) }
    /// The rotation of `angle` radians about the z axis (right-handed).
    public static func rotationZ(_ angle: Double) -> Matrix3x3 { Matrix3x3(rodrigues: SIMD3(0, 0, angle)) }

    /// The angle of this rotation in radians, in [0, π].
    public var rotationAngle: Double {
        _acos(min(max((trace - 1) * 0.5, -1), 1))
    }

    /// The nearest rotation matrix, by repeated polar averaging `R ← (R + R⁻ᵀ)/2`.
    ///
    /// Converges quadratically for matrices close to a rotation (the case that
    /// matters: rotations read from files with few digits). Returns `nil` when
    /// the matrix is singular or has a negative determinant.
    public var orthonormalized: Matrix3x3? {
        guard determinant > 0 else { return nil }
        var r = self
        for _ in 0..<30 {
            guard let inv = r.inverse else { return nil }
            let next = (r + inv.transposed) * 0.5
            if (next - r).frobeniusNorm < 1e-15 { return next }
            r = next
        }
        return r
    }
}

/// A unit quaternion `w + xi + yj + zk` representing a rotation.
public struct Quaternion: Hashable, Codable, Sendable {
    /// The real (scalar) part: cos(θ/2) for a rotation by θ.
    public var w: Double
    /// The i component: the rotation axis's x times sin(θ/2).
    public var x: Double
    /// The j component: the rotation axis's y times sin(θ/2).
    public var y: Double
    /// The k component: the rotation axis's z times sin(θ/2).
    public var z: Double

    /// A quaternion from its four components, stored as given (not normalized).
    @inlinable
    public init(w: Double, x: Double, y: Double, z: Double) {
        self.w = w
        self.x = x
        self.y = y
        self.z = z
    }

    /// The quaternion of `matrix` (Shepperd's method: pivots on the largest
    /// diagonal term for accuracy). The result has `w ≥ 0`.
    public init(_ m: Matrix3x3) {
        let tr = m.trace
        var q: SIMD4<Double>  // (w, x, y, z)
        if tr > 0 {
            let s = (tr + 1).squareRoot() * 2
            q = SIMD4(0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
        } else if m[0, 0] > m[1, 1] && m[0, 0] > m[2, 2] {
            let s = (1 + m[0, 0] - m[1, 1] - m[2, 2]).squareRoot() * 2
            q = SIMD4((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
        } else if m[1, 1] > m[2, 2] {
            let s = (1 + m[1, 1] - m[0, 0] - m[2, 2]).squareRoot() * 2
            q = SIMD4((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
        } else {
            let s = (1 + m[2, 2] - m[0, 0] - m[1, 1]).squareRoot() * 2
            q = SIMD4((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
        }
        if q.x < 0 { q = -q }
        q = normalize(q)
        self.init(w: q.x, x: q.y, y: q.z, z: q.w)
    }

    /// The rotation matrix of this quaternion, normalized first.
    public var rotationMatrix: Matrix3x3 {
        let q = normalize(SIMD4(w, x, y, z))
        let (w, x, y, z) = (q.x, q.y, q.z, q.w)
        return Matrix3x3(
            rows: SIMD3(1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)),
            SIMD3(2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)),
            SIMD3(2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)))
    }

    /// The Hamilton product: the rotation `rhs` followed by `lhs`.
    public static func * (lhs: Quaternion, rhs: Quaternion) -> Quaternion {
        Quaternion(
            w: lhs.w * rhs.w - lhs.x * rhs.x - lhs.y * rhs.y - lhs.z * rhs.z,
            x: lhs.w * rhs.x + lhs.x * rhs.w + lhs.y * rhs.z - lhs.z * rhs.y,
            y: lhs.w * rhs.y - lhs.x * rhs.z + lhs.y * rhs.w + lhs.z * rhs.x,
            z: lhs.w * rhs.z + lhs.x * rhs.y - lhs.y * rhs.x + lhs.z * rhs.w)
    }

    /// The inverse rotation (the conjugate of a unit quaternion).
    public var conjugate: Quaternion { Quaternion(w: w, x: -x, y: -y, z: -z) }
}
