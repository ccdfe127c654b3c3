import ParallaxGeometry

/// A printed chessboard calibration target, as OpenCV describes one: its
/// inner-corner grid, the side of a square and a white border.
///
/// The board frame has its origin on the first inner corner, x along a row of
/// corners, y down the columns and z into the board (OpenCV's object points:
/// corner (column i, row j) is at `(i·s, j·s, 0)`). The squares cover
/// `[−s, columns·s] × [−s, rows·s]`; the top-left square (and every square
/// diagonal to it, such as the one between the first four corners) is dark.
///
/// With a circle ``pattern`` the same type is a grid of dark circles on a light board
/// (OpenCV's circle grids): `columns` × `rows` counts circles, `squareSize` is their spacing,
/// and the points are the circles' centres in OpenCV's order.
public struct ChessboardTarget: Hashable, Sendable {
    /// What is printed on the board.
    public enum Pattern: String, Hashable, Sendable {
        /// Squares; the points are the inner corners.
        case chessboard
        /// A symmetric grid of circles, one spacing apart both ways.
        case circles
        /// OpenCV's asymmetric grid: circles two spacings apart along a row, odd rows shifted by one.
        case asymmetricCircles
    }

    /// Inner corners per row (along the board's x axis).
    public var columns: Int
    /// Inner corners per column (along the board's y axis).
    public var rows: Int
    /// Side of one square, in the scene's length unit.
    public var squareSize: Double
    /// Width of the white border around the squares, in squares.
    public var marginSquares: Double
    /// Level (0–255) of the dark squares.
    public var darkLevel: Double
    /// Level (0–255) of the light squares and the border.
    public var lightLevel: Double
    /// Chessboard or circle grid.
    public var pattern: Pattern
    /// Circle radius in spacings (circle grids only).
    public var circleRadius: Double

    /// A board with `columns` × `rows` inner corners.
    ///
    /// - Precondition: both counts ≥ 2 and a positive square size (programmer error otherwise).
    /// `pattern` picks squares or circles; `circleRadius` (in spacings) defaults to 0.3 for a
    /// symmetric grid and 0.45 for an asymmetric one, whose nearest circles are √2 spacings apart.
    public init(columns: Int, rows: Int, squareSize: Double, marginSquares: Double = 1,
                darkLevel: Double = 25, lightLevel: Double = 230, pattern: Pattern = .chessboard, circleRadius: Double? = nil) {
        precondition(columns >= 2 && rows >= 2, "a chessboard needs at least 2×2 inner corners")
        precondition(squareSize > 0 && squareSize.isFinite, "the square size must be positive")
        self.columns = columns
        self.rows = rows
        self.squareSize = squareSize
        self.marginSquares = max(0, marginSquares)
        self.darkLevel = darkLevel
        self.lightLevel = lightLevel
        self.pattern = pattern
        self.circleRadius = circleRadius ?? (pattern == .asymmetricCircles ? 0.45 : 0.3)
    }

    /// The inner corners in the board frame, row by row (index `row·columns + column`), OpenCV's order.
    public var cornerPoints: [SIMD3<Double>] {
        var points: [SIMD3<Double>] = []
        points.reserveCapacity(columns * rows)
        for j in 0..<rows {
            for i in 0..<columns {
                let x = pattern == .asymmetricCircles ? 2 * i + j % 2 : i
                points.append(SIMD3(Double(x) * squareSize, Double(j) * squareSize, 0))
            }
        }
        return points
    }

    /// The squares' extent in the board frame: minimum and maximum (x, y).
    /// (For circles: the grid with one spacing around it.)
    public var squaresExtent: (min: SIMD2<Double>, max: SIMD2<Double>) {
        let across = pattern == .asymmetricCircles ? 2 * columns : columns
        return (SIMD2(-squareSize, -squareSize), SIMD2(Double(across) * squareSize, Double(rows) * squareSize))
    }

    /// The whole board including its border: minimum and maximum (x, y).
    public var boardExtent: (min: SIMD2<Double>, max: SIMD2<Double>) {
        let m = marginSquares * squareSize
        let e = squaresExtent
        return (e.min - SIMD2(m, m), e.max + SIMD2(m, m))
    }

    /// The mean level over the box `[x ± halfX] × [y ± halfY]` of the board
    /// (board-frame coordinates); exact for a box inside the squares, point-sampled where the
    /// box reaches the border.
    @inlinable
    public func level(x: Double, y: Double, halfX: Double, halfY: Double) -> Double {
        if pattern != .chessboard {
            let dark = circleCoverage(x: x, y: y, halfX: halfX, halfY: halfY)
            return lightLevel + (darkLevel - lightLevel) * dark
        }
        let e = squaresExtent
        if x - halfX >= e.min.x && x + halfX <= e.max.x && y - halfY >= e.min.y && y + halfY <= e.max.y {
            return SceneTexture.checkerboard(period: squareSize, dark: darkLevel, light: lightLevel)
                .level(u: x, v: y, halfU: halfX, halfV: halfY)
        }
        guard x >= e.min.x && x < e.max.x && y >= e.min.y && y < e.max.y else { return lightLevel }
        return SceneTexture.checkerboard(period: squareSize, dark: darkLevel, light: lightLevel).level(u: x, v: y)
    }

    /// The centres (board frame) of the circles that can reach the point (x, y) from within
    /// one spacing: the nearest grid positions around it.
    @usableFromInline
    func nearbyCircles(x: Double, y: Double) -> [SIMD2<Double>] {
        let s = squareSize
        var centres: [SIMD2<Double>] = []
        let j0 = Int((y / s).rounded(.down))
        for j in (j0 - 1)...(j0 + 2) where j >= 0 && j < rows {
            let shift = pattern == .asymmetricCircles ? Double(j % 2) : 0
            let step = pattern == .asymmetricCircles ? 2.0 : 1.0
            let i0 = Int(((x / s - shift) / step).rounded(.down))
            for i in (i0 - 1)...(i0 + 2) where i >= 0 && i < columns {
                centres.append(SIMD2((Double(i) * step + shift) * s, Double(j) * s))
            }
        }
        return centres
    }

    /// The fraction of the box `[x ± halfX] × [y ± halfY]` that the dark circles cover: exact
    /// 0 or 1 when no circle's edge crosses the box, otherwise sampled on a 10 × 10 grid.
    @inlinable
    public func circleCoverage(x: Double, y: Double, halfX: Double, halfY: Double) -> Double {
        let r = circleRadius * squareSize
        let centres = nearbyCircles(x: x, y: y)
        var crossing = false
        for c in centres {
            // Nearest and farthest points of the box from the centre.
            let near = SIMD2(max(abs(x - c.x) - halfX, 0), max(abs(y - c.y) - halfY, 0))
            let far = SIMD2(abs(x - c.x) + halfX, abs(y - c.y) + halfY)
            if (far * far).sum() <= r * r { return 1 }
            if (near * near).sum() < r * r { crossing = true }
        }
        guard crossing else { return 0 }
        let n = 10
        var inside = 0
        for b in 0..<n {
            let py = y - halfY + (Double(b) + 0.5) * 2 * halfY / Double(n)
            for a in 0..<n {
                let px = x - halfX + (Double(a) + 0.5) * 2 * halfX / Double(n)
                if centres.contains(where: { ($0.x - px) * ($0.x - px) + ($0.y - py) * ($0.y - py) <= r * r }) { inside += 1 }
            }
        }
        return Double(inside) / Double(n * n)
    }

    /// Whether a circle's edge crosses the box `[x ± halfX] × [y ± halfY]` (circle grids).
    @inlinable
    public func circleEdgeCrosses(x: Double, y: Double, halfX: Double, halfY: Double) -> Bool {
        let r = circleRadius * squareSize
        return nearbyCircles(x: x, y: y).contains { c in
            let near = SIMD2(max(abs(x - c.x) - halfX, 0), max(abs(y - c.y) - halfY, 0))
            let far = SIMD2(abs(x - c.x) + halfX, abs(y - c.y) + halfY)
            return (near * near).sum() < r * r && (far * far).sum() > r * r
        }
    }
}
