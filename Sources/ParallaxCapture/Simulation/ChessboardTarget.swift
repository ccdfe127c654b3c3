import ParallaxGeometry

/// A printed chessboard calibration target, as OpenCV describes one: its
/// inner-corner grid, the side of a square and a white border.
///
/// The board frame has its origin on the first inner corner, x along a row of
/// corners, y down the columns and z into the board (OpenCV's object points:
/// corner (column i, row j) is at `(i·s, j·s, 0)`). The squares cover
/// `[−s, columns·s] × [−s, rows·s]`; the top-left square (and every square
/// diagonal to it, such as the one between the first four corners) is dark.
public struct ChessboardTarget: Hashable, Sendable {
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

    /// A board with `columns` × `rows` inner corners.
    ///
    /// - Precondition: both counts ≥ 2 and a positive square size (programmer error otherwise).
    public init(columns: Int, rows: Int, squareSize: Double, marginSquares: Double = 1,
                darkLevel: Double = 25, lightLevel: Double = 230) {
        precondition(columns >= 2 && rows >= 2, "a chessboard needs at least 2×2 inner corners")
        precondition(squareSize > 0 && squareSize.isFinite, "the square size must be positive")
        self.columns = columns
        self.rows = rows
        self.squareSize = squareSize
        self.marginSquares = max(0, marginSquares)
        self.darkLevel = darkLevel
        self.lightLevel = lightLevel
    }

    /// The inner corners in the board frame, row by row (index `row·columns + column`), OpenCV's order.
    public var cornerPoints: [SIMD3<Double>] {
        var points: [SIMD3<Double>] = []
        points.reserveCapacity(columns * rows)
        for j in 0..<rows {
            for i in 0..<columns {
                points.append(SIMD3(Double(i) * squareSize, Double(j) * squareSize, 0))
            }
        }
        return points
    }

    /// The squares' extent in the board frame: minimum and maximum (x, y).
    public var squaresExtent: (min: SIMD2<Double>, max: SIMD2<Double>) {
        (SIMD2(-squareSize, -squareSize), SIMD2(Double(columns) * squareSize, Double(rows) * squareSize))
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
        let e = squaresExtent
        if x - halfX >= e.min.x && x + halfX <= e.max.x && y - halfY >= e.min.y && y + halfY <= e.max.y {
            return SceneTexture.checkerboard(period: squareSize, dark: darkLevel, light: lightLevel)
                .level(u: x, v: y, halfU: halfX, halfV: halfY)
        }
        guard x >= e.min.x && x < e.max.x && y >= e.min.y && y < e.max.y else { return lightLevel }
        return SceneTexture.checkerboard(period: squareSize, dark: darkLevel, light: lightLevel).level(u: x, v: y)
    }
}
