/// A dense matrix of doubles stored **column-major**, the layout LAPACK works in.
///
/// `storage[column * rows + row]` is the entry at (`row`, `column`). The
/// calibration solvers build Jacobians and normal equations in this type and
/// hand it to ``LinearAlgebra`` without any transposition.
public struct Matrix: Hashable, Sendable, CustomStringConvertible {
    /// Number of rows.
    public let rows: Int
    /// Number of columns.
    public let columns: Int
    /// Entries, column after column.
    public var storage: [Double]

    /// A `rows` × `columns` matrix filled with `value`.
    public init(rows: Int, columns: Int, repeating value: Double = 0) {
        precondition(rows >= 0 && columns >= 0, "matrix dimensions must not be negative")
        self.rows = rows
        self.columns = columns
        self.storage = Array(repeating: value, count: rows * columns)
    }

    /// A matrix from row-major values (the way matrices are written on paper).
    public init(rows: Int, columns: Int, rowMajor values: [Double]) {
        precondition(values.count == rows * columns, "rowMajor needs rows × columns values")
        self.init(rows: rows, columns: columns)
        for r in 0..<rows {
            for c in 0..<columns { storage[c * rows + r] = values[r * columns + c] }
        }
    }

    /// The `n` × `n` identity.
    public static func identity(_ n: Int) -> Matrix {
        var m = Matrix(rows: n, columns: n)
        for i in 0..<n { m.storage[i * n + i] = 1 }
        return m
    }

    /// The entry at (`row`, `column`).
    @inlinable
    public subscript(row: Int, column: Int) -> Double {
        get { storage[column * rows + row] }
        set { storage[column * rows + row] = newValue }
    }

    /// The transpose.
    public var transposed: Matrix {
        var t = Matrix(rows: columns, columns: rows)
        for c in 0..<columns {
            for r in 0..<rows { t.storage[r * columns + c] = storage[c * rows + r] }
        }
        return t
    }

    /// The entries row after row.
    public var rowMajor: [Double] { transposed.storage }

    /// The matrix product.
    public static func * (lhs: Matrix, rhs: Matrix) -> Matrix {
        precondition(lhs.columns == rhs.rows, "matrix product needs matching inner dimensions")
        var out = Matrix(rows: lhs.rows, columns: rhs.columns)
        for j in 0..<rhs.columns {
            for k in 0..<lhs.columns {
                let b = rhs.storage[j * rhs.rows + k]
                if b == 0 { continue }
                for i in 0..<lhs.rows { out.storage[j * lhs.rows + i] += lhs.storage[k * lhs.rows + i] * b }
            }
        }
        return out
    }

    /// The matrix–vector product.
    public static func * (lhs: Matrix, rhs: [Double]) -> [Double] {
        precondition(lhs.columns == rhs.count, "matrix–vector product needs matching dimensions")
        var out = [Double](repeating: 0, count: lhs.rows)
        for k in 0..<lhs.columns {
            let b = rhs[k]
            for i in 0..<lhs.rows { out[i] += lhs.storage[k * lhs.rows + i] * b }
        }
        return out
    }

    /// True when every entry is finite.
    public var isFinite: Bool { storage.allSatisfy(\.isFinite) }

    /// The entries, one line per row with the values separated by spaces; an empty string
    /// for a matrix without rows.
    public var description: String {
        (0..<rows).map { r in (0..<columns).map { c in "\(self[r, c])" }.joined(separator: " ") }.joined(separator: "\n")
    }
}
