/// A 4×4 matrix of `Double` (a homogeneous transform or the reprojection matrix `Q`), stored as rows.
public struct Matrix4x4: Hashable, Sendable {
    /// The rows, top to bottom.
    public var row0, row1, row2, row3: SIMD4<Double>

    /// A matrix from its four rows, top to bottom.
    @inlinable
    public init(rows row0: SIMD4<Double>, _ row1: SIMD4<Double>, _ row2: SIMD4<Double>, _ row3: SIMD4<Double>) {
        self.row0 = row0
        self.row1 = row1
        self.row2 = row2
        self.row3 = row3
    }

    /// A matrix from sixteen numbers in row-major order.
    ///
    /// - Precondition: `values.count == 16`.
    @inlinable
    public init(rowMajor v: [Double]) {
        precondition(v.count == 16, "Matrix4x4 needs 16 values, got \(v.count)")
        self.init(
            rows: SIMD4(v[0], v[1], v[2], v[3]), SIMD4(v[4], v[5], v[6], v[7]),
            SIMD4(v[8], v[9], v[10], v[11]), SIMD4(v[12], v[13], v[14], v[15]))
    }

    /// The homogeneous form of a rigid transform: `[R t; 0 0 0 1]`.
    @inlinable
    public init(_ transform: RigidTransform) {
        let r = transform.rotation
        let t = transform.translation
        self.init(rows: SIMD4(r.row0, t.x), SIMD4(r.row1, t.y), SIMD4(r.row2, t.z), SIMD4(0, 0, 0, 1))
    }

    /// The identity matrix.
    public static let identity = Matrix4x4(
        rows: SIMD4(1, 0, 0, 0), SIMD4(0, 1, 0, 0), SIMD4(0, 0, 1, 0), SIMD4(0, 0, 0, 1))

    /// The sixteen entries in row-major order.
    @inlinable
    public var rowMajor: [Double] {
        [row0, row1, row2, row3].flatMap { [$0.x, $0.y, $0.z, $0.w] }
    }

    /// The entry at `row`, `column` (both 0-based); an index out of range traps (a
    /// programmer error, never answered with another row).
    @inlinable
    public subscript(row: Int, column: Int) -> Double {
        get {
            switch row {
            case 0: return row0[column]
            case 1: return row1[column]
            case 2: return row2[column]
            case 3: return row3[column]
            default: preconditionFailure("row \(row) is out of range 0...3")
            }
        }
        set {
            switch row {
            case 0: row0[column] = newValue
            case 1: row1[column] = newValue
            case 2: row2[column] = newValue
            case 3: row3[column] = newValue
            default: preconditionFailure("row \(row) is out of range 0...3")
            }
        }
    }

    /// Column `index` as a vector.
    @inlinable
    public func column(_ index: Int) -> SIMD4<Double> {
        SIMD4(row0[index], row1[index], row2[index], row3[index])
    }

    /// The transpose.
    @inlinable
    public var transposed: Matrix4x4 {
        Matrix4x4(rows: column(0), column(1), column(2), column(3))
    }

    /// The determinant, by cofactor expansion over 2×2 minors.
    public var determinant: Double {
        let m = rowMajor
        let s0 = m[0] * m[5] - m[4] * m[1], s1 = m[0] * m[6] - m[4] * m[2]
        let s2 = m[0] * m[7] - m[4] * m[3], s3 = m[1] * m[6] - m[5] * m[2]
        let s4 = m[1] * m[7] - m[5] * m[3], s5 = m[2] * m[7] - m[6] * m[3]
        let c5 = m[10] * m[15] - m[14] * m[11], c4 = m[9] * m[15] - m[13] * m[11]
        let c3 = m[9] * m[14] - m[13] * m[10], c2 = m[8] * m[15] - m[12] * m[11]
        let c1 = m[8] * m[14] - m[12] * m[10], c0 = m[8] * m[13] - m[12] * m[9]
        return s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0
    }

    /// The inverse, or `nil` when the matrix is singular or not finite.
    public var inverse: Matrix4x4? {
        let m = rowMajor
        let s0 = m[0] * m[5] - m[4] * m[1], s1 = m[0] * m[6] - m[4] * m[2]
        let s2 = m[0] * m[7] - m[4] * m[3], s3 = m[1] * m[6] - m[5] * m[2]
        let s4 = m[1] * m[7] - m[5] * m[3], s5 = m[2] * m[7] - m[6] * m[3]
        let c5 = m[10] * m[15] - m[14] * m[11], c4 = m[9] * m[15] - m[13] * m[11]
        let c3 = m[9] * m[14] - m[13] * m[10], c2 = m[8] * m[15] - m[12] * m[11]
        let c1 = m[8] * m[14] - m[12] * m[10], c0 = m[8] * m[13] - m[12] * m[9]
        let det = s0 * c5 - s1 * c4 + s2 * c3 + s3 * c2 - s4 * c1 + s5 * c0
        let scale = m.reduce(0) { max($0, abs($1)) }
        guard det.isFinite, scale > 0, abs(det) > 1e-300 * scale * scale * scale * scale else { return nil }
        let inv = 1 / det
        let r: [Double] = [
            (m[5] * c5 - m[6] * c4 + m[7] * c3), (-m[1] * c5 + m[2] * c4 - m[3] * c3),
            (m[13] * s5 - m[14] * s4 + m[15] * s3), (-m[9] * s5 + m[10] * s4 - m[11] * s3),
            (-m[4] * c5 + m[6] * c2 - m[7] * c1), (m[0] * c5 - m[2] * c2 + m[3] * c1),
            (-m[12] * s5 + m[14] * s2 - m[15] * s1), (m[8] * s5 - m[10] * s2 + m[11] * s1),
            (m[4] * c4 - m[5] * c2 + m[7] * c0), (-m[0] * c4 + m[1] * c2 - m[3] * c0),
            (m[12] * s4 - m[13] * s2 + m[15] * s0), (-m[8] * s4 + m[9] * s2 - m[11] * s0),
            (-m[4] * c3 + m[5] * c1 - m[6] * c0), (m[0] * c3 - m[1] * c1 + m[2] * c0),
            (-m[12] * s3 + m[13] * s1 - m[14] * s0), (m[8] * s3 - m[9] * s1 + m[10] * s0),
        ]
        return Matrix4x4(rowMajor: r.map { $0 * inv })
    }

    /// The matrix product `lhs · rhs` (apply `rhs` first, then `lhs`).
    @inlinable
    public static func * (lhs: Matrix4x4, rhs: Matrix4x4) -> Matrix4x4 {
        let t = rhs.transposed
        func row(_ r: SIMD4<Double>) -> SIMD4<Double> {
            SIMD4((r * t.row0).sum(), (r * t.row1).sum(), (r * t.row2).sum(), (r * t.row3).sum())
        }
        return Matrix4x4(rows: row(lhs.row0), row(lhs.row1), row(lhs.row2), row(lhs.row3))
    }

    /// The matrix applied to the homogeneous column vector `rhs`.
    @inlinable
    public static func * (lhs: Matrix4x4, rhs: SIMD4<Double>) -> SIMD4<Double> {
        SIMD4((lhs.row0 * rhs).sum(), (lhs.row1 * rhs).sum(), (lhs.row2 * rhs).sum(), (lhs.row3 * rhs).sum())
    }
}

extension Matrix4x4: Codable {
    /// Encoded as sixteen numbers in row-major order.
    public init(from decoder: Decoder) throws {
        self.init(rowMajor: try decodeRowMajor(from: decoder, count: 16, shape: "4x4"))
    }

    /// Writes the sixteen entries as one flat array in row-major order, the form
    /// ``init(from:)`` reads.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(contentsOf: rowMajor)
    }
}
