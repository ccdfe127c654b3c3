/// A calibration file that could not be read, with the file and, where known, the line.
public struct CalibrationFormatError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file (or "<text>").
    public var file: String
    /// 1-based line of the problem, when the parser knows it.
    public var line: Int?
    /// What is wrong.
    public var message: String

    /// An error in `file` at `line` (1-based, when known).
    public init(file: String, line: Int?, message: String) {
        self.file = file
        self.line = line
        self.message = message
    }

    /// `file:line: message`, or `file: message` when the line is not known.
    public var description: String {
        if let line { return "\(file):\(line): \(message)" }
        return "\(file): \(message)"
    }
}
