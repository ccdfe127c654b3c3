import ParallaxGeometry
import ParallaxImage

/// Measures a chessboard corner in a gray image as the intersection of its
/// two edges, each located to sub-pixel precision by an area argument that
/// is exact for a box-filtered straight edge: the test's measuring instrument.
///
/// For a pixel row crossing one edge, pixel k covers x ∈ [k − ½, k + ½]; the
/// fraction of it on the far side of an edge at x = e is clamp(k + ½ − e, 0, 1).
/// Summed over a window [a, b] holding the whole transition, those fractions
/// add up to b + ½ − e for any e, so e follows from the pixel levels with no
/// interpolation and no model of the blur. A slanted edge makes the row's
/// strip a trapezoid, whose area is still that of its middle line, so e is
/// the edge's x at the row centre. The same holds for columns.
///
/// Rows 3–6 px on either side of the corner give points on the near-vertical
/// edge, columns likewise on the near-horizontal one; a quadratic through
/// each set (lens distortion bends the edges slightly) and their intersection
/// give the corner. Rough edge directions come from the caller; only which
/// rows and columns to read depends on them.
enum CornerFromEdges {
    static func locate(_ image: ImageBuffer, near c: SIMD2<Double>,
                       directions: (SIMD2<Double>, SIMD2<Double>)) -> SIMD2<Double>? {
        precondition(image.format == .gray8)
        let (d1, d2) = directions
        // The edge closer to vertical is read along rows.
        let (vertical, horizontal) = abs(d1.x / d1.y) < abs(d2.x / d2.y) ? (d1, d2) : (d2, d1)
        guard let xOfY = fit(image, corner: c, direction: vertical, transposed: false),
              let yOfX = fit(image, corner: c, direction: horizontal, transposed: true) else { return nil }
        var p = c
        for _ in 0..<50 {
            let next = SIMD2(xOfY(p.y), yOfX(p.x))
            if length(next - p) < 1e-9 { return next }
            p = next
        }
        return nil
    }

    /// Edge points along rows (or columns when `transposed`), fitted by
    /// `x = α + β t + γ t²` with t the offset from the corner's row.
    private static func fit(_ image: ImageBuffer, corner c: SIMD2<Double>, direction: SIMD2<Double>,
                            transposed: Bool) -> ((Double) -> Double)? {
        let width = image.size.width, height = image.size.height
        let bytes = image.bytes
        func level(along: Int, across: Int) -> Double? {
            let (x, y) = transposed ? (across, along) : (along, across)
            guard x >= 0, y >= 0, x < width, y < height else { return nil }
            return Double(bytes[y * width + x])
        }
        let slope = transposed ? direction.y / direction.x : direction.x / direction.y
        let (cAlong, cAcross) = transposed ? (c.y, c.x) : (c.x, c.y)
        var ts: [Double] = [], es: [Double] = []
        let halfWindow = 3
        for offset in [-6, -5, -4, -3, 3, 4, 5, 6] {
            let row = Int(cAcross.rounded()) + offset
            let predicted = cAlong + slope * (Double(row) - cAcross)
            let a = Int(predicted.rounded()) - halfWindow, b = Int(predicted.rounded()) + halfWindow
            var values: [Double] = []
            for k in a...b {
                guard let v = level(along: k, across: row) else { break }
                values.append(v)
            }
            guard values.count == b - a + 1 else { continue }
            // Both ends must sit on flat squares, one on each side.
            let near = values[0], far = values[values.count - 1]
            guard abs(values[1] - near) <= 1, abs(values[values.count - 2] - far) <= 1, abs(far - near) > 100 else { continue }
            let covered = values.reduce(0) { $0 + ($1 - near) / (far - near) }
            ts.append(Double(row) - cAcross)
            es.append(Double(b) + 0.5 - covered)
        }
        guard ts.count >= 5 else { return nil }
        guard let (alpha, beta, gamma) = leastSquaresQuadratic(ts, es) else { return nil }
        return { across in
            let t = across - cAcross
            return alpha + beta * t + gamma * t * t
        }
    }

    private static func leastSquaresQuadratic(_ t: [Double], _ y: [Double]) -> (Double, Double, Double)? {
        // Normal equations of [1 t t²] for a handful of points, by Cramer's rule.
        var s = [Double](repeating: 0, count: 5), r = [Double](repeating: 0, count: 3)
        for (ti, yi) in zip(t, y) {
            var p = 1.0
            for k in 0..<5 {
                s[k] += p
                if k < 3 { r[k] += p * yi }
                p *= ti
            }
        }
        let m = Matrix3x3(rows: SIMD3(s[0], s[1], s[2]), SIMD3(s[1], s[2], s[3]), SIMD3(s[2], s[3], s[4]))
        guard let inverse = m.inverse else { return nil }
        let solution = inverse * SIMD3(r[0], r[1], r[2])
        return (solution.x, solution.y, solution.z)
    }
}
