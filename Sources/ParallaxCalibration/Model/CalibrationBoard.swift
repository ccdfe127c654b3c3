import ParallaxGeometry

/// The kind of calibration target.
public enum BoardPattern: String, Hashable, Sendable, CaseIterable {
    /// A chessboard, counted by its inner corners.
    case chessboard
    /// A symmetric grid of dark circles, `columns` per row, one spacing apart both ways.
    case circles
    /// OpenCV's asymmetric circle grid: `columns` circles per row, two spacings apart along
    /// a row, each row shifted by one spacing from the row before (odd rows to the right).
    case asymmetricCircles = "acircles"
}

/// A planar calibration target: a chessboard described by its **inner** corners
/// (the points where four squares meet), or a grid of circles described by their
/// centres, as OpenCV counts them.
///
/// The board frame has its origin at the first point, x along a row of
/// `columns` points, y along the `rows` direction and z = 0 on the board, so
/// point `index = row * columns + column` sits at
/// `(column · squareSize, row · squareSize, 0)` (chessboard, circles), or at
/// `((2 · column + row mod 2) · squareSize, row · squareSize, 0)` for the asymmetric
/// grid — OpenCV's object-point order.
public struct CalibrationBoard: Hashable, Sendable, CustomStringConvertible {
    /// Inner corners along a row (OpenCV's `patternSize.width`).
    public var columns: Int
    /// Inner corners along a column (OpenCV's `patternSize.height`).
    public var rows: Int
    /// Edge length of one square, in the unit every translation will come out in.
    public var squareSize: Double
    /// The unit of `squareSize`: what every translation of a calibration with this board
    /// is in (`LengthUnit.unitless` when the size was given as a bare number).
    public var unit: LengthUnit
    /// Chessboard or circle grid.
    public var pattern: BoardPattern

    /// A board of `columns` × `rows` points (inner corners, or circles) `squareSize` apart.
    /// - Precondition: at least 2 × 2 points and a positive square size (programmer error otherwise;
    ///   ``init(parsing:square:)`` validates user input).
    public init(columns: Int, rows: Int, squareSize: Double, unit: LengthUnit = .unitless,
                pattern: BoardPattern = .chessboard) {
        precondition(columns >= 2 && rows >= 2 && squareSize > 0, "a board needs ≥ 2×2 points and a positive square size")
        self.columns = columns
        self.rows = rows
        self.squareSize = squareSize
        self.unit = unit
        self.pattern = pattern
    }

    /// Parses a target — `"9x6"` or `"chessboard:9x6"` (inner corners), `"circles:7x6"` or
    /// `"acircles:4x11"` (circles per row × rows) — and a spacing such as `"25mm"`, `"2.5cm"`,
    /// `"0.025m"`, `"1in"` or `"1.0"`.
    ///
    /// - Throws: ``TargetSpecificationError`` naming the bad text.
    public init(parsing board: String, square: String) throws(TargetSpecificationError) {
        var grid = Substring(board.lowercased())
        var pattern = BoardPattern.chessboard
        if let colon = grid.firstIndex(of: ":") {
            guard let kind = BoardPattern(rawValue: String(grid[..<colon])) else { throw .badBoard(board) }
            pattern = kind
            grid = grid[grid.index(after: colon)...]
        }
        let parts = grid.split(separator: "x")
        guard parts.count == 2, let c = Int(parts[0]), let r = Int(parts[1]) else { throw .badBoard(board) }
        guard c >= 2, r >= 2, c <= 200, r <= 200 else {
            throw .boardOutOfRange(board)
        }
        // An asymmetric grid needs a shifted row to tell its rows apart.
        if pattern == .asymmetricCircles && r < 3 { throw .badBoard(board) }
        // The one length syntax of the CLI (``Length``), as --convergence takes it.
        guard let size = Length(parsing: square) else { throw .badSquare(square) }
        self.init(columns: c, rows: r, squareSize: size.value, unit: size.unit ?? .unitless, pattern: pattern)
    }

    /// Number of points (inner corners or circles).
    public var cornerCount: Int { columns * rows }

    /// The board-frame position of every point, in detection order.
    public var objectPoints: [SIMD3<Double>] {
        (0..<cornerCount).map { i in
            let column = i % columns, row = i / columns
            let x = pattern == .asymmetricCircles ? 2 * column + row % 2 : column
            return SIMD3(Double(x) * squareSize, Double(row) * squareSize, 0)
        }
    }

    /// The mean image distance between neighbouring points along a row, for `points` in
    /// this board's order (``cornerCount`` of them).
    func meanRowStep(_ points: [SIMD2<Double>]) -> Double {
        var total = 0.0
        for r in 0..<rows {
            for c in 0..<(columns - 1) { total += length(points[r * columns + c + 1] - points[r * columns + c]) }
        }
        return total / Double(rows * (columns - 1))
    }

    /// True when turning the board by 180° maps dark squares onto light ones,
    /// so a detector can tell the board's origin from the opposite corner by colour.
    /// That holds when the squares per side, `columns + 1` and `rows + 1`, add up to an odd number.
    public var isColourAsymmetric: Bool { (columns + rows) % 2 == 1 }

    /// The board's pattern, grid size and square size or spacing with its unit, such as
    /// `9x6 inner corners, square 25.0mm`; no unit is written for a unitless size.
    public var description: String {
        switch pattern {
        case .chessboard: "\(columns)x\(rows) inner corners, square \(squareSize)\(unit.suffix)"
        case .circles: "\(columns)x\(rows) circle grid, spacing \(squareSize)\(unit.suffix)"
        case .asymmetricCircles: "\(columns)x\(rows) asymmetric circle grid, spacing \(squareSize)\(unit.suffix)"
        }
    }
}

/// A board or square size that could not be read.
public enum TargetSpecificationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The board text could not be read (what was given, and what is expected).
    case badBoard(String)
    /// The square size could not be read (what was given, and what is expected).
    case badSquare(String)
    /// A board with a side of fewer than 2 or more than 200 points (the text given).
    case boardOutOfRange(String)

    /// One line quoting the text that was given and saying what form is accepted.
    public var description: String {
        switch self {
        case .badBoard(let s):
            return "target '\(s)' is not COLUMNSxROWS of inner corners (e.g. 9x6, each at least 2), chessboard:COLSxROWS, "
                + "circles:COLSxROWS or acircles:COLSxROWS (circles per row × rows; an asymmetric grid needs 3 rows or more)"
        case .badSquare(let s): return "square size '\(s)' is not a positive number with an optional unit mm, cm, m or in (e.g. 25mm)"
        case .boardOutOfRange(let s): return "target '\(s)' has a side outside 2 to 200 points"
        }
    }
}
