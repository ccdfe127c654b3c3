import ParallaxGeometry

/// A planar chessboard calibration target, described by its **inner** corners
/// (the points where four squares meet), as OpenCV counts them.
///
/// The board frame has its origin at the first inner corner, x along a row of
/// `columns` corners, y along the `rows` direction and z = 0 on the board, so
/// corner `index = row * columns + column` sits at
/// `(column · squareSize, row · squareSize, 0)`, OpenCV's object-point order.
public struct CalibrationBoard: Hashable, Sendable, CustomStringConvertible {
    /// Inner corners along a row (OpenCV's `patternSize.width`).
    public var columns: Int
    /// Inner corners along a column (OpenCV's `patternSize.height`).
    public var rows: Int
    /// Edge length of one square, in the unit every translation will come out in.
    public var squareSize: Double
    /// The unit of `squareSize` as the user wrote it (for reports): "mm", "cm", "m", "in" or "".
    public var unit: String

    /// A board of `columns` × `rows` inner corners with squares of `squareSize`.
    /// - Precondition: at least 2 × 2 inner corners and a positive square size (programmer error otherwise;
    ///   ``init(parsing:square:)`` validates user input).
    public init(columns: Int, rows: Int, squareSize: Double, unit: String = "") {
        precondition(columns >= 2 && rows >= 2 && squareSize > 0, "a chessboard needs ≥ 2×2 inner corners and a positive square size")
        self.columns = columns
        self.rows = rows
        self.squareSize = squareSize
        self.unit = unit
    }

    /// Parses a board `"9x6"` and a square size such as `"25mm"`, `"2.5cm"`, `"0.025m"`, `"1in"` or `"1.0"`.
    ///
    /// - Throws: ``TargetSpecificationError`` naming the bad text.
    public init(parsing board: String, square: String) throws(TargetSpecificationError) {
        let parts = board.lowercased().split(separator: "x")
        guard parts.count == 2, let c = Int(parts[0]), let r = Int(parts[1]), c >= 2, r >= 2, c <= 200, r <= 200 else {
            throw .badBoard(board)
        }
        // The one length syntax of the CLI (``Length``), as --convergence takes it.
        guard let size = Length(parsing: square) else { throw .badSquare(square) }
        self.init(columns: c, rows: r, squareSize: size.value, unit: size.unit?.rawValue ?? "")
    }

    /// Number of inner corners.
    public var cornerCount: Int { columns * rows }

    /// The board-frame position of every inner corner, in detection order.
    public var objectPoints: [SIMD3<Double>] {
        (0..<cornerCount).map { i in
            SIMD3(Double(i % columns) * squareSize, Double(i / columns) * squareSize, 0)
        }
    }

    /// True when turning the board by 180° maps dark squares onto light ones,
    /// so a detector can tell the board's origin from the opposite corner by colour.
    /// That holds when the squares per side, `columns + 1` and `rows + 1`, add up to an odd number.
    public var isColourAsymmetric: Bool { (columns + rows) % 2 == 1 }

    public var description: String { "\(columns)x\(rows) inner corners, square \(squareSize)\(unit)" }
}

/// A board or square size that could not be read.
public enum TargetSpecificationError: Error, Hashable, Sendable, CustomStringConvertible {
    case badBoard(String)
    case badSquare(String)

    public var description: String {
        switch self {
        case .badBoard(let s): return "board '\(s)' is not COLUMNSxROWS of inner corners (e.g. 9x6, each at least 2)"
        case .badSquare(let s): return "square size '\(s)' is not a positive number with an optional unit mm, cm, m or in (e.g. 25mm)"
        }
    }
}
