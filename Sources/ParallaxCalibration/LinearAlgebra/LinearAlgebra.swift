import CLapack

/// Why a linear-algebra routine could not give an answer.
public enum LinearAlgebraError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The input holds NaN or an infinity.
    case nonFiniteInput(routine: String)
    /// The dimensions do not fit the routine (for example fewer rows than unknowns).
    case dimensionMismatch(routine: String, detail: String)
    /// The matrix is singular or so badly conditioned that the answer would be noise.
    /// `conditionEstimate` is the ratio of the largest to the smallest pivot or singular value.
    case illConditioned(routine: String, conditionEstimate: Double)
    /// A Cholesky factorization met a non-positive pivot at (1-based) `pivot`.
    case notPositiveDefinite(routine: String, pivot: Int)
    /// LAPACK returned an error code (`info`), or an iteration did not converge.
    case lapackFailure(routine: String, info: Int)

    /// One line starting with the routine's name and saying what went wrong.
    public var description: String {
        switch self {
        case .nonFiniteInput(let r): return "\(r): the input contains NaN or infinity"
        case .dimensionMismatch(let r, let d): return "\(r): \(d)"
        case .illConditioned(let r, let c): return "\(r): the matrix is singular or ill-conditioned (condition ≈ \(c))"
        case .notPositiveDefinite(let r, let p): return "\(r): the matrix is not positive definite (pivot \(p))"
        case .lapackFailure(let r, let info): return "\(r): LAPACK failed with info = \(info)"
        }
    }
}

/// A singular value decomposition `A = U · diag(S) · Vᵀ`.
public struct SingularValueDecomposition: Sendable {
    /// `rows × min(rows, columns)` left singular vectors (thin).
    public var u: Matrix
    /// Singular values, largest first.
    public var singularValues: [Double]
    /// `min(rows, columns) × columns`: the right singular vectors as rows.
    public var vt: Matrix

    /// The right singular vector of the smallest singular value: the unit
    /// vector `x` minimising `|A x|`, the null vector of a homogeneous system.
    public var smallestRightSingularVector: [Double] {
        let last = vt.rows - 1
        return (0..<vt.columns).map { vt[last, $0] }
    }

    /// Largest over smallest singular value (infinity when the smallest is zero).
    public var conditionNumber: Double {
        guard let first = singularValues.first, let last = singularValues.last else { return .infinity }
        return last == 0 ? .infinity : first / last
    }
}

/// Thin wrappers over LAPACKE (OpenBLAS) that the calibration solvers use.
///
/// Every routine copies its inputs (LAPACK overwrites them), passes the
/// column-major ``Matrix`` storage with `LAPACK_COL_MAJOR` and the leading
/// dimension equal to the row count, and turns LAPACK's `info` codes and
/// numerically useless inputs into ``LinearAlgebraError``.
public enum LinearAlgebra {
    /// Relative pivot below which a system counts as singular: a few hundred
    /// ulps of the largest pivot, where the solution has lost every digit.
    public static let singularityThreshold = 1e-13

    /// OpenBLAS on one thread, set before the first LAPACK call (a lazy global runs once).
    /// The matrices here are small, and after a threaded call OpenBLAS's workers spin for a
    /// fraction of a second waiting for the next: time taken from detection and map threads.
    private static let serialBLAS: Void = openblas_set_num_threads(1)

    /// The threads OpenBLAS's calls use now (1 once any routine here has run).
    static var blasThreadCount: Int { Int(openblas_get_num_threads()) }

    /// The singular value decomposition of `a` (LAPACK `dgesvd`, thin U and Vᵀ).
    public static func svd(_ a: Matrix) throws(LinearAlgebraError) -> SingularValueDecomposition {
        guard a.isFinite else { throw .nonFiniteInput(routine: "svd") }
        let m = a.rows, n = a.columns, k = min(m, n)
        guard k > 0 else { throw .dimensionMismatch(routine: "svd", detail: "empty matrix") }
        var work = a.storage
        var s = [Double](repeating: 0, count: k)
        var u = Matrix(rows: m, columns: k)
        var vt = Matrix(rows: k, columns: n)
        var superb = [Double](repeating: 0, count: max(1, k - 1))
        _ = serialBLAS
        let info = work.withUnsafeMutableBufferPointer { wp in
            s.withUnsafeMutableBufferPointer { sp in
                u.storage.withUnsafeMutableBufferPointer { up in
                    vt.storage.withUnsafeMutableBufferPointer { vp in
                        superb.withUnsafeMutableBufferPointer { bp in
                            // Bounds: work is m×n (lda = m), u is m×k (ldu = m), vt is k×n (ldvt = k).
                            LAPACKE_dgesvd(LAPACK_COL_MAJOR, CChar(UInt8(ascii: "S")), CChar(UInt8(ascii: "S")),
                                           Int32(m), Int32(n), wp.baseAddress, Int32(m), sp.baseAddress,
                                           up.baseAddress, Int32(m), vp.baseAddress, Int32(k), bp.baseAddress)
                        }
                    }
                }
            }
        }
        guard info == 0 else { throw .lapackFailure(routine: "svd (dgesvd)", info: Int(info)) }
        return SingularValueDecomposition(u: u, singularValues: s, vt: vt)
    }

    /// The unit vector `x` minimising `|A x|` (the homogeneous least-squares
    /// solution), from the SVD. Needs at least as many rows as columns − 1.
    public static func nullVector(_ a: Matrix) throws(LinearAlgebraError) -> [Double] {
        guard a.rows + 1 >= a.columns else {
            throw .dimensionMismatch(routine: "nullVector", detail: "\(a.rows) equations for \(a.columns) unknowns")
        }
        if a.rows < a.columns {
            // Pad with a zero row so the thin SVD still returns all right singular vectors.
            var padded = Matrix(rows: a.columns, columns: a.columns)
            for c in 0..<a.columns { for r in 0..<a.rows { padded[r, c] = a[r, c] } }
            return try svd(padded).smallestRightSingularVector
        }
        return try svd(a).smallestRightSingularVector
    }

    /// The least-squares solution of `A x ≈ b` by Householder QR (LAPACK `dgels`).
    ///
    /// - Throws: ``LinearAlgebraError/illConditioned(routine:conditionEstimate:)``
    ///   when R has a pivot below ``singularityThreshold`` of the largest, i.e.
    ///   the columns of A are (nearly) dependent.
    public static func leastSquares(_ a: Matrix, _ b: [Double]) throws(LinearAlgebraError) -> [Double] {
        guard a.isFinite, b.allSatisfy(\.isFinite) else { throw .nonFiniteInput(routine: "leastSquares") }
        let m = a.rows, n = a.columns
        guard b.count == m, m >= n, n > 0 else {
            throw .dimensionMismatch(routine: "leastSquares", detail: "A is \(m)×\(n), b has \(b.count) rows")
        }
        var qr = a.storage
        var rhs = b
        _ = serialBLAS
        let info = qr.withUnsafeMutableBufferPointer { qp in
            rhs.withUnsafeMutableBufferPointer { bp in
                // Bounds: qr is m×n (lda = m), rhs is m×1 (ldb = m ≥ n).
                LAPACKE_dgels(LAPACK_COL_MAJOR, CChar(UInt8(ascii: "N")), Int32(m), Int32(n), 1,
                              qp.baseAddress, Int32(m), bp.baseAddress, Int32(m))
            }
        }
        if info > 0 { throw .illConditioned(routine: "leastSquares (dgels)", conditionEstimate: .infinity) }
        guard info == 0 else { throw .lapackFailure(routine: "leastSquares (dgels)", info: Int(info)) }
        let pivots = (0..<n).map { abs(qr[$0 * m + $0]) }
        let largest = pivots.max() ?? 0, smallest = pivots.min() ?? 0
        if smallest <= singularityThreshold * largest {
            throw .illConditioned(routine: "leastSquares (dgels)", conditionEstimate: smallest == 0 ? .infinity : largest / smallest)
        }
        return Array(rhs.prefix(n))
    }

    /// The Cholesky factor L (lower triangular, `A = L Lᵀ`) of a symmetric
    /// positive definite matrix (LAPACK `dpotrf`). Only the lower triangle of `a` is read.
    public static func cholesky(_ a: Matrix) throws(LinearAlgebraError) -> Matrix {
        guard a.rows == a.columns, a.rows > 0 else {
            throw .dimensionMismatch(routine: "cholesky", detail: "matrix is \(a.rows)×\(a.columns), not square")
        }
        guard a.isFinite else { throw .nonFiniteInput(routine: "cholesky") }
        let n = a.rows
        var l = a
        _ = serialBLAS
        let info = l.storage.withUnsafeMutableBufferPointer { lp in
            // Bounds: n×n, lda = n.
            LAPACKE_dpotrf(LAPACK_COL_MAJOR, CChar(UInt8(ascii: "L")), Int32(n), lp.baseAddress, Int32(n))
        }
        if info > 0 { throw .notPositiveDefinite(routine: "cholesky (dpotrf)", pivot: Int(info)) }
        guard info == 0 else { throw .lapackFailure(routine: "cholesky (dpotrf)", info: Int(info)) }
        for c in 0..<n { for r in 0..<c { l[r, c] = 0 } }
        // Pivots of L squared are the pivots of A; a tiny one means A is numerically singular.
        let diagonal = (0..<n).map { l[$0, $0] * l[$0, $0] }
        let largest = diagonal.max() ?? 0, smallest = diagonal.min() ?? 0
        if smallest <= singularityThreshold * largest {
            throw .illConditioned(routine: "cholesky (dpotrf)", conditionEstimate: smallest == 0 ? .infinity : largest / smallest)
        }
        return l
    }

    /// Solves `A x = b` for symmetric positive definite `A` with a Cholesky factorization.
    public static func choleskySolve(_ a: Matrix, _ b: [Double]) throws(LinearAlgebraError) -> [Double] {
        try choleskySolve(factor: cholesky(a), b)
    }

    /// Solves `L Lᵀ x = b` given the factor from ``cholesky(_:)``.
    public static func choleskySolve(factor l: Matrix, _ b: [Double]) throws(LinearAlgebraError) -> [Double] {
        let n = l.rows
        guard b.count == n else {
            throw .dimensionMismatch(routine: "choleskySolve", detail: "factor is \(n)×\(n), b has \(b.count) rows")
        }
        var factor = l.storage
        var x = b
        _ = serialBLAS
        let info = factor.withUnsafeMutableBufferPointer { lp in
            x.withUnsafeMutableBufferPointer { xp in
                // Bounds: factor n×n (lda = n), x n×1 (ldb = n).
                LAPACKE_dpotrs(LAPACK_COL_MAJOR, CChar(UInt8(ascii: "L")), Int32(n), 1,
                               lp.baseAddress, Int32(n), xp.baseAddress, Int32(n))
            }
        }
        guard info == 0 else { throw .lapackFailure(routine: "choleskySolve (dpotrs)", info: Int(info)) }
        return x
    }

    /// The inverse of a symmetric positive definite matrix (LAPACK `dpotrf` + `dpotri`),
    /// e.g. a covariance from normal equations.
    public static func inverseSymmetricPositiveDefinite(_ a: Matrix) throws(LinearAlgebraError) -> Matrix {
        var l = try cholesky(a)
        let n = a.rows
        _ = serialBLAS
        let info = l.storage.withUnsafeMutableBufferPointer { lp in
            LAPACKE_dpotri(LAPACK_COL_MAJOR, CChar(UInt8(ascii: "L")), Int32(n), lp.baseAddress, Int32(n))
        }
        guard info == 0 else { throw .lapackFailure(routine: "inverse (dpotri)", info: Int(info)) }
        for c in 0..<n { for r in 0..<c { l[r, c] = l[c, r] } }
        return l
    }
}
