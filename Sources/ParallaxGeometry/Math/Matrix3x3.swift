/// A 3×3 matrix of `Double`, stored as three row vectors.
///
/// Row-major storage matches how OpenCV prints and stores its matrices, so
/// `Matrix3x3(rowMajor:)` and ``rowMajor`` exchange numbers with OpenCV,
/// YAML and JSON files without transposing.
public struct Matrix3x3: Hashable, Sendable {
    /// The rows, top to bottom.
    public var row0, row1, row2: SIMD3<Double>

    /// A matrix from its three rows.
    @inlinable
    public init(rows row0: SIMD3<Double>, _ row1: SIMD3<Double>, _ row2: SIMD3<Double>) {
        self.row0 = row0
        self.row1 = row1
        self.row2 = row2
    }

    /// A matrix from its three columns.
    @inlinable
    public init(columns c0: SIMD3<Double>, _ c1: SIMD3<Double>, _ c2: SIMD3<Double>) {
        self.init(rows: SIMD3(c0.x, c1.x, c2.x), SIMD3(c0.y, c1.y, c2.y), SIMD3(c0.z, c1.z, c2.z))
    }

    /// A matrix from nine numbers in row-major order.
    ///
    /// - Precondition: `values.count == 9` (a programmer error otherwise; file
    ///   readers validate counts before calling this).
    @inlinable
    public init(rowMajor values: [Double]) {
        precondition(values.count == 9, "Matrix3x3 needs 9 values, got \(values.count)")
        self.init(
            rows: SIMD3(values[0], values[1], values[2]),
            SIMD3(values[3], values[4], values[5]),
            SIMD3(values[6], values[7], values[8]))
    }

    /// A diagonal matrix.
    @inlinable
    public init(diagonal d: SIMD3<Double>) {
        self.init(rows: SIMD3(d.x, 0, 0), SIMD3(0, d.y, 0), SIMD3(0, 0, d.z))
    }

    /// The identity matrix.
    public static let identity = Matrix3x3(diagonal: SIMD3(1, 1, 1))
    /// The zero matrix.
    public static let zero = Matrix3x3(diagonal: SIMD3(0, 0, 0))

    /// The nine entries in row-major order.
    @inlinable
    public var rowMajor: [Double] {
        [row0.x, row0.y, row0.z, row1.x, row1.y, row1.z, row2.x, row2.y, row2.z]
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
            default: preconditionFailure("row \(row) is out of range 0...2")
            }
        }
        set {
            switch row {
            case 0: row0[column] = newValue
            case 1: row1[column] = newValue
            case 2: row2[column] = newValue
            default: preconditionFailure("row \(row) is out of range 0...2")
            }
        }
    }

    /// Column `index` as a vector.
    @inlinable
    public func column(_ index: Int) -> SIMD3<Double> {
        SIMD3(row0[index], row1[index], row2[index])
    }

    /// The transpose.
    @inlinable
    public var transposed: Matrix3x3 {
        Matrix3x3(rows: column(0), column(1), column(2))
    }

    /// The determinant.
    @inlinable
    public var determinant: Double {
        (row0 * cross(row1, row2)).sum()
    }

    /// The trace (sum of the diagonal).
    @inlinable
    public var trace: Double { row0.x + row1.y + row2.z }

    /// The inverse, or `nil` when the matrix is singular or not finite.
    ///
    /// Computed from the adjugate. "Singular" means the determinant is zero or
    /// smaller than `1e-300` relative to the product of the row norms, below
    /// which the result would carry no correct digits.
    public var inverse: Matrix3x3? {
        let c0 = cross(row1, row2)
        let c1 = cross(row2, row0)
        let c2 = cross(row0, row1)
        let det = (row0 * c0).sum()
        let scale = length(row0) * length(row1) * length(row2)
        guard det.isFinite, scale.isFinite, scale > 0, abs(det) > 1e-300 * scale else { return nil }
        return Matrix3x3(columns: c0, c1, c2) * (1 / det)
    }

    /// The Frobenius norm.
    @inlinable
    public var frobeniusNorm: Double {
        ((row0 * row0).sum() + (row1 * row1).sum() + (row2 * row2).sum()).squareRoot()
    }

    /// True when every entry is finite.
    @inlinable
    public var isFinite: Bool {
        rowMajor.allSatisfy(\.isFinite)
    }

    /// The skew-symmetric matrix `[v]×` with `[v]× w == cross(v, w)`.
    @inlinable
    public static func crossProductMatrix(_ v: SIMD3<Double>) -> Matrix3x3 {
        Matrix3x3(rows: SIMD3(0, -v.z, v.y), SIMD3(v.z, 0, -v.x), SIMD3(-v.y, v.x, 0))
    }

    /// The outer product `a bᵀ`.
    @inlinable
    public static func outer(_ a: SIMD3<Double>, _ b: SIMD3<Double>) -> Matrix3x3 {
        Matrix3x3(rows: a.x * b, a.y * b, a.z * b)
    }

    /// The matrix product `lhs · rhs` (apply `rhs` first, then `lhs`).
    @inlinable
    public static func * (lhs: Matrix3x3, rhs: Matrix3x3) -> Matrix3x3 {
        let t = rhs.transposed
        return Matrix3x3(
            rows: SIMD3((lhs.row0 * t.row0).sum(), (lhs.row0 * t.row1).sum(), (lhs.row0 * t.row2).sum()),
            SIMD3((lhs.row1 * t.row0).sum(), (lhs.row1 * t.row1).sum(), (lhs.row1 * t.row2).sum()),
            SIMD3((lhs.row2 * t.row0).sum(), (lhs.row2 * t.row1).sum(), (lhs.row2 * t.row2).sum()))
    }

    /// The matrix applied to the column vector `rhs`.
    @inlinable
    public static func * (lhs: Matrix3x3, rhs: SIMD3<Double>) -> SIMD3<Double> {
        SIMD3((lhs.row0 * rhs).sum(), (lhs.row1 * rhs).sum(), (lhs.row2 * rhs).sum())
    }

    /// Every entry multiplied by `rhs`.
    @inlinable
    public static func * (lhs: Matrix3x3, rhs: Double) -> Matrix3x3 {
        Matrix3x3(rows: lhs.row0 * rhs, lhs.row1 * rhs, lhs.row2 * rhs)
    }

    /// The entry-by-entry sum.
    @inlinable
    public static func + (lhs: Matrix3x3, rhs: Matrix3x3) -> Matrix3x3 {
        Matrix3x3(rows: lhs.row0 + rhs.row0, lhs.row1 + rhs.row1, lhs.row2 + rhs.row2)
    }

    /// The entry-by-entry difference.
    @inlinable
    public static func - (lhs: Matrix3x3, rhs: Matrix3x3) -> Matrix3x3 {
        Matrix3x3(rows: lhs.row0 - rhs.row0, lhs.row1 - rhs.row1, lhs.row2 - rhs.row2)
    }
}

extension Matrix3x3: Codable {
    /// Encoded as nine numbers in row-major order.
    public init(from decoder: Decoder) throws {
        self.init(rowMajor: try decodeRowMajor(from: decoder, count: 9, shape: "3x3"))
    }

    /// Writes the nine entries as one flat array in row-major order, the form
    /// ``init(from:)`` reads.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(contentsOf: rowMajor)
    }
}

extension Matrix3x3: CustomStringConvertible {
    /// The entries in row-major order, rows separated by semicolons: `[a, b, c; d, e, f; g, h, i]`.
    public var description: String {
        "[\(row0.x), \(row0.y), \(row0.z); \(row1.x), \(row1.y), \(row1.z); \(row2.x), \(row2.y), \(row2.z)]"
    }
}
