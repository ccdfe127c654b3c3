import ArgumentParser
import Foundation
import ParallaxCalibration
import ParallaxGeometry

/// `parallax target`: draws a printable chessboard or circle grid.
struct TargetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "target",
        abstract: "Draw a printable calibration target, a chessboard or a circle grid (SVG, true size on A4 or letter).",
        discussion: """
            Print the SVG at 100 % ("actual size") and check the 50 mm bar with a ruler; then measure one \
            square and pass that to `parallax calibrate --square`.
            """)

    @Option(name: [.customLong("target"), .customLong("board")],
            help: "The target: chessboard:COLSxROWS (inner corners; 9x6 alone is a chessboard), circles:COLSxROWS or acircles:COLSxROWS (circles per row × rows, OpenCV's grids). --board is the same option.")
    var board: String

    @Option(name: .long, parsing: .unconditional, help: "Square size (the circles' spacing for a grid) with unit: mm, cm, m or in (e.g. 25mm).")
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
