/// A 3×4 matrix of `Double` (a projection matrix `P = K [R | t]`), stored as rows.
public struct Matrix3x4: Hashable, Sendable {
    /// The rows, top to bottom.
    public var row0, row1, row2: SIMD4<Double>

    /// A matrix from its three rows, top to bottom.
    @inlinable
    public init(rows row0: SIMD4<Double>, _ row1: SIMD4<Double>, _ row2: SIMD4<Double>) {
        self.row0 = row0
        self.row1 = row1
        self.row2 = row2
    }

    /// `[m | t]`: a 3×3 block and a last column.
    @inlinable
    public init(_ m: Matrix3x3, _ t: SIMD3<Double>) {
        self.init(
            rows: SIMD4(m.row0, t.x), SIMD4(m.row1, t.y), SIMD4(m.row2, t.z))
    }

    /// A matrix from twelve numbers in row-major order.
    ///
    /// - Precondition: `values.count == 12`.
    @inlinable
    public init(rowMajor values: [Double]) {
        precondition(values.count == 12, "Matrix3x4 needs 12 values, got \(values.count)")
        self.init(
            rows: SIMD4(values[0], values[1], values[2], values[3]),
            SIMD4(values[4], values[5], values[6], values[7]),
            SIMD4(values[8], values[9], values[10], values[11]))
    }

    /// The twelve entries in row-major order.
    @inlinable
    public var rowMajor: [Double] {
        [row0.x, row0.y, row0.z, row0.w, row1.x, row1.y, row1.z, row1.w, row2.x, row2.y, row2.z, row2.w]
    }

    /// The left 3×3 block.
    @inlinable
    public var leftBlock: Matrix3x3 {
        Matrix3x3(rows: SIMD3(row0.x, row0.y, row0.z), SIMD3(row1.x, row1.y, row1.z), SIMD3(row2.x, row2.y, row2.z))
    }

    /// The last column.
    @inlinable
    public var lastColumn: SIMD3<Double> { SIMD3(row0.w, row1.w, row2.w) }

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

    /// `P X` for a homogeneous point.
    @inlinable
    public static func * (lhs: Matrix3x4, rhs: SIMD4<Double>) -> SIMD3<Double> {
        SIMD3((lhs.row0 * rhs).sum(), (lhs.row1 * rhs).sum(), (lhs.row2 * rhs).sum())
    }
}

extension Matrix3x4: Codable {
    /// Encoded as twelve numbers in row-major order.
    public init(from decoder: Decoder) throws {
        self.init(rowMajor: try decodeRowMajor(from: decoder, count: 12, shape: "3x4"))
    }

    /// Writes the twelve entries as one flat array in row-major order, the form
    /// ``init(from:)`` reads.
    public func encode(to encoder: Encoder) throws {
        var container = encoder.unkeyedContainer()
        try container.encode(contentsOf: rowMajor)
    }
}
