import Foundation

/// A printable chessboard or circle grid as SVG at true physical size.
///
/// The sheet is A4 or US Letter (portrait, or landscape when the board is wider
/// than tall); the board is centred with a white margin of at least 6 mm,
/// and a caption and a 50 mm check bar let the user verify the print scale (print
/// at 100 %, "actual size"). The top-left square is dark, so the square between the
/// first four inner corners is dark too — the colour rule the detector uses to
/// find the board's origin. A circle grid has dark circles one spacing in from its white
/// edge: radius 0.3 spacings for a symmetric grid, 0.45 for an asymmetric one (whose
/// nearest circles are √2 spacings apart), as the simulated rig renders them.
public enum TargetSheet {
    /// Paper sizes in millimetres (portrait).
    public enum Paper: String, Sendable, CaseIterable {
        /// ISO A4, 210 × 297 mm.
        case a4
        /// US Letter, 215.9 × 279.4 mm.
        case letter
        /// Width and height in millimetres, portrait.
        public var size: (width: Double, height: Double) {
            switch self {
            case .a4: return (210, 297)
            case .letter: return (215.9, 279.4)
            }
        }
    }

    /// Why no sheet could be drawn.
    public enum Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// The square size has no unit, so the board has no true size.
        case noUnit
        /// The board with its white border is larger than the paper (millimetres).
        case doesNotFit(boardWidth: Double, boardHeight: Double, paper: Paper)
        /// The squares (circle spacing) are smaller than ``smallestSquareMillimetres``.
        case squaresTooSmall(millimetres: Double)
        /// One line saying why no sheet was drawn (sizes in millimetres) and what to change.
        public var description: String {
            switch self {
            case .noUnit:
                return "the square size needs a unit to print at true size (e.g. 25mm, 2.5cm, 1in)"
            case .doesNotFit(let w, let h, let paper):
                // %g, not Int(): a size of 1e300 mm is reported, not a trap.
                return String(format: "a %.4g × %.4g mm board (with its white border) does not fit on %@ paper (%g × %g mm); "
                              + "use smaller squares or fewer corners", w, h, paper.rawValue, paper.size.width, paper.size.height)
            case .squaresTooSmall(let millimetres):
                return String(format: "squares of %.3g mm are too small to print sharply and for a camera to resolve; "
                              + "use %g mm or more (25 mm suits most rigs)", millimetres, TargetSheet.smallestSquareMillimetres)
            }
        }
    }

    /// The smallest square (circle spacing) drawn, in millimetres. At 600 dpi a 2 mm square
    /// is 47 dots, still sharp; the detector needs about 5 pixels a square, which a 640-pixel
    /// webcam with a 60° view gives a 2 mm square only within about 0.2 m.
    public static let smallestSquareMillimetres = 2.0

    /// The SVG text for `board` on `paper`.
    ///
    /// - Throws: ``Failure`` when the size has no unit, the squares are smaller than
    ///   ``smallestSquareMillimetres``, or the board does not fit on the paper.
    public static func svg(for board: CalibrationBoard, paper: Paper) throws(Failure) -> String {
        guard let perUnit = board.unit.millimetres else { throw .noUnit }
        let s = board.squareSize * perUnit
        guard s >= smallestSquareMillimetres else { throw .squaresTooSmall(millimetres: s) }
        let squaresX = board.pattern == .asymmetricCircles ? 2 * board.columns + 1 : board.columns + 1
        let squaresY = board.rows + 1
        let boardW = Double(squaresX) * s, boardH = Double(squaresY) * s
        // White border around the squares: the outer corners need light beyond them, and printers
        // leave about 5 mm unprinted at the paper's edge.
        let quiet = max(0.3 * s, 6.0)
        var (pw, ph) = paper.size
        if boardW > boardH { (pw, ph) = (ph, pw) }
        let captionSpace = 8.0
        guard boardW + 2 * quiet <= pw, boardH + 2 * quiet + captionSpace <= ph else {
            throw .doesNotFit(boardWidth: boardW + 2 * quiet, boardHeight: boardH + 2 * quiet, paper: paper)
        }
        let x0 = (pw - boardW) / 2, y0 = (ph - boardH - captionSpace) / 2
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(SVGDocument.f(pw))mm\" height=\"\(SVGDocument.f(ph))mm\" viewBox=\"0 0 \(SVGDocument.f(pw)) \(SVGDocument.f(ph))\">\n"
        out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        let caption: String
        if board.pattern == .chessboard {
            for j in 0..<squaresY {
                for i in 0..<squaresX where (i + j) % 2 == 0 {
                    out += "<rect x=\"\(SVGDocument.f(x0 + Double(i) * s))\" y=\"\(SVGDocument.f(y0 + Double(j) * s))\" width=\"\(SVGDocument.f(s))\" height=\"\(SVGDocument.f(s))\" fill=\"black\"/>\n"
                }
            }
            caption = "Parallax chessboard: \(board.columns)x\(board.rows) inner corners, square \(board.squareSize)\(board.unit.suffix). Print at 100 %; the bar is 50 mm."
        } else {
            let radius = (board.pattern == .asymmetricCircles ? 0.45 : 0.3) * s
            for point in board.objectPoints {
                let cx = x0 + s + point.x * perUnit, cy = y0 + s + point.y * perUnit
                out += "<circle cx=\"\(SVGDocument.f(cx))\" cy=\"\(SVGDocument.f(cy))\" r=\"\(SVGDocument.f(radius))\" fill=\"black\"/>\n"
            }
            let kind = board.pattern == .asymmetricCircles ? "asymmetric circle grid" : "circle grid"
            caption = "Parallax \(kind): \(board.columns)x\(board.rows) circles, spacing \(board.squareSize)\(board.unit.suffix). Print at 100 %; the bar is 50 mm."
        }
        let cy = y0 + boardH + 4.5
        out += "<text x=\"\(SVGDocument.f(x0))\" y=\"\(SVGDocument.f(cy))\" font-family=\"sans-serif\" font-size=\"3.2\" fill=\"#444\">\(SVGDocument.escape(caption))</text>\n"
        out += "<rect x=\"\(SVGDocument.f(x0))\" y=\"\(SVGDocument.f(cy + 2))\" width=\"50\" height=\"1.5\" fill=\"#444\"/>\n"
        out += "</svg>\n"
        return out
    }
}
