import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry

/// `parallax target`: draws a printable chessboard.
struct TargetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "target",
        abstract: "Draw a printable chessboard calibration target (SVG, true size on A4 or letter).",
        discussion: """
            Print the SVG at 100 % ("actual size") and check the 50 mm bar with a ruler; then measure one \
            square and pass that to `parallax calibrate --square`.
            """)

    @Option(name: .long, help: "Inner corners as COLUMNSxROWS, e.g. 9x6.")
    var board: String

    @Option(name: .long, help: "Square size with unit: mm, cm, m or in (e.g. 25mm).")
    var square: String

    @Option(name: .long, help: "Paper: a4 or letter.")
    var paper: TargetSheet.Paper = .a4

    @Option(name: .long, help: "Output SVG file (the name must end in .svg: that is what is written).")
    var output: String = "board.svg"

    func validate() throws {
        guard output.lowercased().hasSuffix(".svg") else {
            throw ValidationError("--output '\(output)' must end in .svg: the target is written as SVG (print it at 100 %)")
        }
    }

    func run() throws {
        let target: CalibrationBoard
        do { target = try CalibrationBoard(parsing: board, square: square) } catch { throw ValidationError(error.description) }
        let sheet = try TargetSheet.svg(for: target, paper: paper)
        try FileAccess.writeAtomically(sheet, toPath: output)
        FileHandle.standardError.write(Data("wrote \(output): \(target) on \(paper)\n".utf8))
    }
}

extension TargetSheet.Paper: ExpressibleByArgument {
    /// `a4` or `letter`, in any case.
    public init?(argument: String) { self.init(rawValue: argument.lowercased()) }
}
