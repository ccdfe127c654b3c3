import ParallaxGeometry

/// Sub-pixel corner refinement for chessboard corners.
///
/// Two stages, each a closed-form least-squares fit, iterated:
///
/// 1. **Saddle-point fit.** On a lightly blurred copy, the levels in a small
///    window are fitted with a quadric `f = a x² + b xy + c y² + d x + e y + g`;
///    its stationary point (where ∇f = 0) is the saddle. This pulls a
///    corner from anywhere within a pixel or two to within a few tenths.
/// 2. **Gradient orthogonality.** At a true corner `q`, every image gradient
///    `g` at a point `p` near the corner is perpendicular to `p − q` (`p` lies
///    on an edge through `q` or in a flat area where `g = 0`). Minimising
///    `Σ w (gᵀ (q − p))²` over a window gives `q = (Σ w g gᵀ)⁻¹ Σ w g gᵀ p`.
///    The window scales with the corner spacing so it sees the four edges
///    but not the next corners.
public enum SubpixelRefinement {
    /// Refines each corner in place; a corner whose refinement would move it
    /// by more than a third of `spacing` (a sign of a wrong basin) keeps its start.
    ///
    /// - Parameters:
    ///   - corners: the corners' starting positions in pixels of `image` (within a pixel or two
    ///     of the true corner); with `columns`, in board order, row by row.
    ///   - image: the image the corners were detected in.
    ///   - spacing: the distance between neighbouring corners in pixels: it sizes each corner's
    ///     window and bounds its move (a third of it), unless `columns` gives the corner its own.
    ///   - columns: corners per board row, so each corner's window can be sized from its own
    ///     nearest neighbours (a foreshortened board has short spacings along one axis only).
    public static func refine(_ corners: [SIMD2<Double>], in image: GrayImage, spacing: Double, columns: Int? = nil) -> [SIMD2<Double>] {
        // Nearest neighbouring corner distance per corner.
        var local = [Double](repeating: spacing, count: corners.count)
        if let columns, columns > 0 {
            for k in corners.indices {
                var nearest = Double.infinity
                for n in [k - 1, k + 1, k - columns, k + columns] where n >= 0 && n < corners.count {
                    if (n == k - 1 || n == k + 1) && n / columns != k / columns { continue }
                    nearest = min(nearest, length(corners[n] - corners[k]))
                }
                if nearest.isFinite { local[k] = nearest }
            }
        }
        return corners.indices.map { k in
            let start = corners[k]
            let spacing = local[k]
            // A window of ±0.3 spacing sees the four edges well away from the next corners; larger
            // windows average more edge pixels (blurred or upscaled images need that), capped so a
            // coarse board in a big image stays cheap.
            let half = max(2, min(12, Int((spacing * 0.3).rounded())))
            var q = start
            // Work on a small patch around the corner: blur and gradients only where they are used.
            for attempt in 0..<3 {
                let margin = half + 5
                let ox = Int(q.x.rounded()) - margin, oy = Int(q.y.rounded()) - margin
                let size = 2 * margin + 1
                let patch = image.region(x: ox, y: oy, width: size, height: size).gaussianBlurred(sigma: 0.8)
                var gx = [Float](repeating: 0, count: size * size), gy = gx
                patch.pixels.withUnsafeBufferPointer { p in
                    gx.withUnsafeMutableBufferPointer { gx in
                        gy.withUnsafeMutableBufferPointer { gy in
                            // Central differences inside the patch (its one-pixel frame stays 0).
                            for y in 1..<(size - 1) {
                                for x in 1..<(size - 1) {
                                    let i = y * size + x
                                    gx[i] = (p[i + 1] - p[i - 1]) * 0.5
                                    gy[i] = (p[i + size] - p[i - size]) * 0.5
                                }
                            }
                        }
                    }
                }
                let offset = SIMD2(Double(ox), Double(oy))
                var local = q - offset
                if attempt == 0, let s = saddle(local, patch, half: 2), length(s - local) <= spacing / 3 { local = s }
                var leftPatch = false
                for _ in 0..<20 {
                    let step = gx.withUnsafeBufferPointer { gx in
                        gy.withUnsafeBufferPointer { gy in
                            gradientStep(local, gx: gx, gy: gy, width: size, height: size, half: half)
                        }
                    }
                    guard let next = step else {
                        leftPatch = true
                        break
                    }
                    let moved = length(next - local)
                    local = next
                    if moved < 1e-3 { break }
                }
                q = local + offset
                if !leftPatch || length(q - start) > spacing / 3 { break }
            }
            return length(q - start) > spacing / 3 ? start : q
        }
    }

    /// Stationary point of a quadric fitted to the (2·half+1)² window around `p`.
    static func saddle(_ p: SIMD2<Double>, _ image: GrayImage, half: Int) -> SIMD2<Double>? {
        var q = p
        for _ in 0..<3 {
            let cx = Int(q.x.rounded()), cy = Int(q.y.rounded())
            guard cx - half >= 0, cy - half >= 0, cx + half < image.width, cy + half < image.height else { return nil }
            // Normal equations for 6 unknowns.
            var ata = [Double](repeating: 0, count: 36), atb = [Double](repeating: 0, count: 6)
            for dy in -half...half {
                for dx in -half...half {
                    let x = Double(dx), y = Double(dy)
                    // The six monomials in a register, not an array per pixel.
                    let row = SIMD8<Double>(x * x, x * y, y * y, x, y, 1, 0, 0)
                    let v = Double(image[cx + dx, cy + dy])
                    for r in 0..<6 {
                        atb[r] += row[r] * v
                        for c in 0..<6 { ata[r * 6 + c] += row[r] * row[c] }
                    }
                }
            }
            guard let coefficients = try? LinearAlgebra.choleskySolve(Matrix(rows: 6, columns: 6, rowMajor: ata), atb) else { return nil }
            let (a, b, c, d, e) = (coefficients[0], coefficients[1], coefficients[2], coefficients[3], coefficients[4])
            // ∇f = 0: [2a b; b 2c] (x, y) = −(d, e); a saddle has a negative determinant.
            let det = 4 * a * c - b * b
            guard det < 0 else { return nil }
            let x = (-d * 2 * c + b * e) / det
            let y = (-2 * a * e + b * d) / det
            guard abs(x) <= Double(half), abs(y) <= Double(half) else { return nil }
            let next = SIMD2(Double(cx) + x, Double(cy) + y)
            if length(next - q) < 0.01 { return next }
            q = next
        }
        return q
    }

    /// One step of the gradient-orthogonality fit from `q`, over gradients of a `width` × `height` patch.
    static func gradientStep(_ q: SIMD2<Double>, gx: UnsafeBufferPointer<Float>, gy: UnsafeBufferPointer<Float>,
                             width: Int, height: Int, half: Int) -> SIMD2<Double>? {
        let cx = Int(q.x.rounded()), cy = Int(q.y.rounded())
        guard cx - half >= 1, cy - half >= 1, cx + half < width - 1, cy + half < height - 1 else { return nil }
        var a11 = 0.0, a12 = 0.0, a22 = 0.0, b1 = 0.0, b2 = 0.0
        let sigma2 = Double(half * half) * 0.5
        for dy in -half...half {
            for dx in -half...half {
                let x = cx + dx, y = cy + dy
                let px = Double(x) - q.x, py = Double(y) - q.y
                let weight = _gaussianWeight((px * px + py * py) / sigma2)
                let i = y * width + x
                let u = Double(gx[i]), v = Double(gy[i])
                let guu = u * u * weight, guv = u * v * weight, gvv = v * v * weight
                a11 += guu; a12 += guv; a22 += gvv
                b1 += guu * Double(x) + guv * Double(y)
                b2 += guv * Double(x) + gvv * Double(y)
            }
        }
        let det = a11 * a22 - a12 * a12
        guard det > 1e-9 * (a11 + a22) * (a11 + a22) else { return nil }
        return SIMD2((a22 * b1 - a12 * b2) / det, (a11 * b2 - a12 * b1) / det)
    }
}

/// exp(−t/2)-like bell for window weights, cheap and smooth: 1 / (1 + t/2 + t²/8 + t³/48).
@inline(__always)
func _gaussianWeight(_ t: Double) -> Double {
    1 / (1 + t * (0.5 + t * (0.125 + t / 48)))
}
