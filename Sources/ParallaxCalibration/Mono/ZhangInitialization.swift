import ParallaxGeometry

/// Zhang's closed-form start for camera calibration ("A flexible new technique
/// for camera calibration", 2000): one plane-to-image homography per view,
/// intrinsics from the constraints the homographies put on the image of the
/// absolute conic, then each view's pose from its homography.
public enum ZhangInitialization {
    /// Why no starting estimate could be made.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Fewer than 4 corners, or the corners are collinear.
        case degenerateView(String)
        /// The views do not constrain the focal length (for example every view is fronto-parallel).
        case degenerateViews(String)

        /// The message the case carries, saying what made the view (or the set of views) degenerate.
        public var description: String {
            switch self {
            case .degenerateView(let s): return s
            case .degenerateViews(let s): return s
            }
        }
    }

    /// The homography H with `pixel ~ H (X, Y, 1)` for board points (X, Y), by the
    /// direct linear transform on Hartley-normalised coordinates (both point sets
    /// moved to their centroid and scaled to mean distance √2, which keeps the
    /// 2N × 9 system well conditioned).
    public static func homography(board: [SIMD2<Double>], image: [SIMD2<Double>]) throws(Failure) -> Matrix3x3 {
        guard board.count == image.count, board.count >= 4 else {
            throw .degenerateView("a homography needs at least 4 corners, got \(board.count)")
        }
        func normalizer(_ pts: [SIMD2<Double>]) -> Matrix3x3? {
            let n = Double(pts.count)
            let centre = pts.reduce(SIMD2<Double>.zero, +) / n
            let meanDistance = pts.reduce(0.0) { $0 + length($1 - centre) } / n
            guard meanDistance > 1e-12 else { return nil }
            let s = 2.0.squareRoot() / meanDistance
            return Matrix3x3(rows: SIMD3(s, 0, -s * centre.x), SIMD3(0, s, -s * centre.y), SIMD3(0, 0, 1))
        }
        guard let tb = normalizer(board), let ti = normalizer(image), let tiInverse = ti.inverse else {
            throw .degenerateView("the corners all lie on one point")
        }
        var a = Matrix(rows: 2 * board.count, columns: 9)
        for k in board.indices {
            let p = tb * board[k].homogeneous
            let q = ti * image[k].homogeneous
            let (x, y, u, v) = (p.x, p.y, q.x, q.y)
            let r0 = 2 * k, r1 = 2 * k + 1
            a[r0, 0] = x; a[r0, 1] = y; a[r0, 2] = 1
            a[r0, 6] = -u * x; a[r0, 7] = -u * y; a[r0, 8] = -u
            a[r1, 3] = x; a[r1, 4] = y; a[r1, 5] = 1
            a[r1, 6] = -v * x; a[r1, 7] = -v * y; a[r1, 8] = -v
        }
        guard let decomposition = try? LinearAlgebra.svd(a) else { throw .degenerateView("the homography system has no solution") }
        let s = decomposition.singularValues
        // Collinear points leave a second null direction: the next-to-smallest singular value vanishes too.
        if s.count >= 2, s[s.count - 2] < 1e-9 * s[0] { throw .degenerateView("the corners are collinear") }
        // Exactly four points give 8 equations for 9 unknowns: the thin SVD holds no null
        // vector then, which nullVector pads for.
        var h = decomposition.smallestRightSingularVector
        if a.rows < a.columns {
            guard let null = try? LinearAlgebra.nullVector(a) else { throw .degenerateView("the homography system has no solution") }
            h = null
        }
        let normalizedH = Matrix3x3(rowMajor: h)
        let result = tiInverse * normalizedH * tb
        let scale = result[2, 2]
        guard abs(scale) > 1e-300 else { throw .degenerateView("the homography sends the board origin to infinity") }
        return result * (1 / scale)
    }

    /// Intrinsics (zero skew) from Zhang's constraints `h₁ᵀ ω h₂ = 0` and
    /// `h₁ᵀ ω h₁ = h₂ᵀ ω h₂` on ω = K⁻ᵀ K⁻¹. Homographies are first expressed in
    /// image coordinates centred and scaled by the image size so the 6-unknown
    /// system is well conditioned. Needs 3 or more views in general position.
    ///
    /// Falls back to the principal point at the image centre with two focal
    /// lengths (two unknowns, fine for 2+ views) when the full solution is not
    /// a valid camera, as few or similar views often give.
    public static func intrinsics(homographies: [Matrix3x3], size: ImageSize) throws(Failure) -> CameraIntrinsics {
        let scale = Double(max(size.width, size.height))
        let centre = SIMD2(Double(size.width - 1) / 2, Double(size.height - 1) / 2)
        // Pixel → centred, scaled coordinates.
        let t = Matrix3x3(rows: SIMD3(1 / scale, 0, -centre.x / scale), SIMD3(0, 1 / scale, -centre.y / scale), SIMD3(0, 0, 1))
        let hs = homographies.map { t * $0 }
        if hs.count >= 3, let full = fullZhang(hs) {
            let k = CameraIntrinsics(fx: full.fx * scale, fy: full.fy * scale,
                                     cx: full.cx * scale + centre.x, cy: full.cy * scale + centre.y)
            let plausible = k.fx > 0 && k.fy > 0 && k.fx.isFinite && k.fy.isFinite
                && k.fx / k.fy < 3 && k.fy / k.fx < 3
                && k.cx > 0.15 * Double(size.width) && k.cx < 0.85 * Double(size.width)
                && k.cy > 0.15 * Double(size.height) && k.cy < 0.85 * Double(size.height)
            if plausible { return k }
        }
        // Principal point at the centre: ω = diag(1/fx², 1/fy², 1) in centred coordinates.
        var a = Matrix(rows: 2 * hs.count, columns: 2)
        var b = [Double](repeating: 0, count: 2 * hs.count)
        for (i, h) in hs.enumerated() {
            let h1 = h.column(0), h2 = h.column(1)
            // Scale each view's equations to unit size so no view dominates.
            let n = max(length(h1) * length(h2), 1e-300)
            a[2 * i, 0] = h1.x * h2.x / n; a[2 * i, 1] = h1.y * h2.y / n; b[2 * i] = -h1.z * h2.z / n
            a[2 * i + 1, 0] = (h1.x * h1.x - h2.x * h2.x) / n; a[2 * i + 1, 1] = (h1.y * h1.y - h2.y * h2.y) / n
            b[2 * i + 1] = -(h1.z * h1.z - h2.z * h2.z) / n
        }
        guard let w = try? LinearAlgebra.leastSquares(a, b), w[0] > 0, w[1] > 0 else {
            throw .degenerateViews("the views do not determine the focal length; tilt the board (by 20–45°) in different directions")
        }
        return CameraIntrinsics(fx: scale / w[0].squareRoot(), fy: scale / w[1].squareRoot(), cx: centre.x, cy: centre.y)
    }

    private static func fullZhang(_ hs: [Matrix3x3]) -> (fx: Double, fy: Double, cx: Double, cy: Double)? {
        func v(_ h: Matrix3x3, _ i: Int, _ j: Int) -> [Double] {
            let a = h.column(i), b = h.column(j)
            return [a.x * b.x, a.x * b.y + a.y * b.x, a.y * b.y, a.z * b.x + a.x * b.z, a.z * b.y + a.y * b.z, a.z * b.z]
        }
        var m = Matrix(rows: 2 * hs.count + 1, columns: 6)
        for (k, h) in hs.enumerated() {
            let v12 = v(h, 0, 1), v11 = v(h, 0, 0), v22 = v(h, 1, 1)
            for c in 0..<6 {
                m[2 * k, c] = v12[c]
                m[2 * k + 1, c] = v11[c] - v22[c]
            }
        }
        m[2 * hs.count, 1] = 1  // zero skew: B12 = 0
        guard let b = try? LinearAlgebra.nullVector(m) else { return nil }
        var (b11, b12, b22, b13, b23, b33) = (b[0], b[1], b[2], b[3], b[4], b[5])
        if b11 < 0 { (b11, b12, b22, b13, b23, b33) = (-b11, -b12, -b22, -b13, -b23, -b33) }
        let d = b11 * b22 - b12 * b12
        guard d > 0, b11 > 0 else { return nil }
        let v0 = (b12 * b13 - b11 * b23) / d
        let lambda = b33 - (b13 * b13 + v0 * (b12 * b13 - b11 * b23)) / b11
        guard lambda / b11 > 0 else { return nil }
        let alpha = (lambda / b11).squareRoot()
        let beta = (lambda * b11 / d).squareRoot()
        let u0 = -b13 * alpha * alpha / lambda
        guard alpha.isFinite, beta.isFinite, u0.isFinite, v0.isFinite else { return nil }
        return (alpha, beta, u0, v0)
    }

    /// The board pose (board frame → camera frame) that homography `h` implies for intrinsics `k`.
    ///
    /// `K⁻¹ H = λ [r₁ r₂ t]`; the rotation is the nearest orthonormal matrix to
    /// `[r₁ r₂ r₁×r₂]` (by SVD) and the sign is chosen so the board is in front of the camera.
    public static func pose(homography h: Matrix3x3, intrinsics k: CameraIntrinsics) -> RigidTransform? {
        let m = k.inverseMatrix * h
        var c1 = m.column(0), c2 = m.column(1), c3 = m.column(2)
        let lambda = 2 / (length(c1) + length(c2))
        guard lambda.isFinite, lambda > 0 else { return nil }
        c1 *= lambda; c2 *= lambda; c3 *= lambda
        if c3.z < 0 { c1 = -c1; c2 = -c2; c3 = -c3 }
        let r = Matrix3x3(columns: c1, c2, cross(c1, c2))
        var a = Matrix(rows: 3, columns: 3)
        for i in 0..<3 { for j in 0..<3 { a[i, j] = r[i, j] } }
        guard let svd = try? LinearAlgebra.svd(a) else { return nil }
        let rotationM = svd.u * svd.vt
        var rotation = Matrix3x3(rowMajor: rotationM.rowMajor)
        if rotation.determinant < 0 { return nil }
        rotation = Matrix3x3(rodrigues: rotation.rodriguesVector)
        return RigidTransform(rotation: rotation, translation: c3)
    }
}
