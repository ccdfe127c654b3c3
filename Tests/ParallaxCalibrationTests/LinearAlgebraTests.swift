import Testing
@testable import ParallaxCalibration

@Suite("LAPACK wrappers")
struct LinearAlgebraTests {
    /// The README says the calibration code sets OpenBLAS to one thread before its first
    /// LAPACK call. (On a one-core machine OpenBLAS starts with one thread, and this holds
    /// without the setting.)
    @Test func openBLASRunsOnOneThreadOnceCalled() throws {
        _ = try LinearAlgebra.svd(Matrix(rows: 2, columns: 2, rowMajor: [2, 1, 1, 3]))
        #expect(LinearAlgebra.blasThreadCount == 1)
    }

    @Test func svdReconstructsTheMatrix() throws {
        let a = Matrix(rows: 3, columns: 2, rowMajor: [1, 2, 3, 4, 5, 6])
        let s = try LinearAlgebra.svd(a)
        var sigma = Matrix(rows: 2, columns: 2)
        sigma[0, 0] = s.singularValues[0]; sigma[1, 1] = s.singularValues[1]
        let back = s.u * sigma * s.vt
        for i in 0..<6 { #expect(abs(back.storage[i] - a.storage[i]) < 1e-12) }
        // Known singular values of this matrix: 9.5080, 0.7729.
        #expect(abs(s.singularValues[0] - 9.525518091565107) < 1e-9)
        #expect(abs(s.singularValues[1] - 0.514300580658644) < 1e-9)
    }

    @Test func leastSquaresFitsALine() throws {
        // y = 2x + 1 exactly at four points.
        let a = Matrix(rows: 4, columns: 2, rowMajor: [0, 1, 1, 1, 2, 1, 3, 1])
        let x = try LinearAlgebra.leastSquares(a, [1, 3, 5, 7])
        #expect(abs(x[0] - 2) < 1e-12 && abs(x[1] - 1) < 1e-12)
    }

    @Test func leastSquaresRejectsDependentColumns() {
        let a = Matrix(rows: 3, columns: 2, rowMajor: [1, 2, 2, 4, 3, 6])
        #expect(throws: LinearAlgebraError.self) { try LinearAlgebra.leastSquares(a, [1, 2, 3]) }
    }

    @Test func choleskySolvesAndRejectsIndefinite() throws {
        let a = Matrix(rows: 2, columns: 2, rowMajor: [4, 2, 2, 3])
        let x = try LinearAlgebra.choleskySolve(a, [2, 1])
        // [4 2; 2 3] x = [2; 1] → x = (0.5, 0).
        #expect(abs(x[0] - 0.5) < 1e-14 && abs(x[1]) < 1e-14)
        let indefinite = Matrix(rows: 2, columns: 2, rowMajor: [1, 2, 2, 1])
        #expect {
            _ = try LinearAlgebra.cholesky(indefinite)
        } throws: { error in
            if case LinearAlgebraError.notPositiveDefinite = error { return true }
            return false
        }
        let inverse = try LinearAlgebra.inverseSymmetricPositiveDefinite(a)
        let identity = a * inverse
        #expect(abs(identity[0, 0] - 1) < 1e-14 && abs(identity[0, 1]) < 1e-14)
    }

    @Test func nullVectorOfARankDeficientSystem() throws {
        let a = Matrix(rows: 2, columns: 3, rowMajor: [1, 0, -1, 0, 1, -1])
        let v = try LinearAlgebra.nullVector(a)
        // Null space is (1, 1, 1)/√3 up to sign.
        let s = 1 / 3.0.squareRoot()
        #expect(abs(abs(v[0]) - s) < 1e-12 && abs(v[0] - v[1]) < 1e-12 && abs(v[1] - v[2]) < 1e-12)
    }

    @Test func nonFiniteInputIsAnError() {
        let a = Matrix(rows: 2, columns: 2, rowMajor: [1, .nan, 0, 1])
        #expect(throws: LinearAlgebraError.nonFiniteInput(routine: "svd")) { try LinearAlgebra.svd(a) }
    }
}
