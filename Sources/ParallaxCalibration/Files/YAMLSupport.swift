import ParallaxGeometry
import Yams

/// Reading the YAML dialects of calibration files with Yams, keeping line numbers for errors.
struct YAMLReader {
    let file: String
    let root: Node

    /// Parses `text`. OpenCV's FileStorage writes a `%YAML:1.0` directive that YAML 1.1 parsers
    /// reject (the colon), so it is blanked (keeping the line count) before parsing; its
    /// `!!opencv-matrix` tags are ordinary tags to Yams and are read as mappings.
    init(text: String, file: String) throws(CalibrationFormatError) {
        self.file = file
        if let line = Self.lineNestedTooDeeply(text) {
            throw CalibrationFormatError(
                file: file, line: line,
                message: "nested more than \(Self.nestingLimit) levels deep (a calibration file needs a few)")
        }
        if let line = Self.lineWithTooManyAliases(text) {
            throw CalibrationFormatError(
                file: file, line: line,
                message: "more than \(Self.aliasLimit) YAML aliases (*name); calibration files use none")
        }
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if let first = lines.first, first.hasPrefix("%YAML") { lines[0] = "# " + first }
        let cleaned = lines.joined(separator: "\n")
        let node: Node?
        do {
            node = try Yams.compose(yaml: cleaned)
        } catch let error as YamlError {
            throw Self.convert(error, file: file)
        } catch {
            throw CalibrationFormatError(file: file, line: nil, message: "\(error)")
        }
        guard let node, node.mapping != nil else {
            throw CalibrationFormatError(file: file, line: node?.mark?.line ?? 1, message: "expected a mapping of keys at the top level")
        }
        // YAML forbids a key twice in one mapping, but Yams keeps both and a lookup would
        // silently take one; refused here, as the JSON reader refuses it. The same walk bounds
        // what aliases can build: `*name` repeats a whole subtree without repeating its text,
        // so a few lines can stand for billions of nodes or nest deeper than the text shows.
        var budget = Self.nodeLimit
        switch Self.repeatedKey(in: node, depth: 0, budget: &budget) {
        case .none:
            break
        case .repeated(let key, let first, let again):
            throw CalibrationFormatError(
                file: file, line: again,
                message: "the key \"\(key)\" appears twice in one mapping (first on line \(first.map(String.init) ?? "?")); "
                    + "a calibration file names each key once")
        case .tooLarge(let line):
            throw CalibrationFormatError(
                file: file, line: line,
                message: "the document expands to more than \(Self.nodeLimit) values or nests deeper than \(Self.nestingLimit) levels "
                    + "through YAML aliases (*name); a calibration file needs a few hundred values and no aliases")
        }
        root = node
    }

    /// The most values (nodes, aliases expanded) a calibration document may hold: the largest
    /// Parallax reads (camera_info with rational distortion) has under 100.
    static let nodeLimit = 100_000

    /// What the walk over a document found.
    enum WalkProblem {
        case none
        /// A key twice in one mapping, with the lines of both.
        case repeated(key: String, first: Int?, again: Int?)
        /// Aliases expand the document past ``nodeLimit`` nodes or ``nestingLimit`` levels
        /// (at this line).
        case tooLarge(line: Int?)
    }

    /// The first key that appears twice in one mapping anywhere in `node`, with the lines of
    /// both; or where the document outgrows `budget` nodes or ``nestingLimit`` levels (aliases
    /// expanded: the text's own nesting was checked before parsing).
    static func repeatedKey(in node: Node, depth: Int, budget: inout Int) -> WalkProblem {
        budget -= 1
        guard budget >= 0, depth <= nestingLimit else { return .tooLarge(line: node.mark?.line) }
        switch node {
        case .mapping(let mapping):
            var seen: [String: Int?] = [:]
            for (key, value) in mapping {
                let name = key.string ?? "(a key that is not text)"
                if let first = seen[name] { return .repeated(key: name, first: first, again: key.mark?.line) }
                seen[name] = key.mark?.line
                let inner = repeatedKey(in: value, depth: depth + 1, budget: &budget)
                if case .none = inner { continue }
                return inner
            }
            return .none
        case .sequence(let sequence):
            for element in sequence {
                let inner = repeatedKey(in: element, depth: depth + 1, budget: &budget)
                if case .none = inner { continue }
                return inner
            }
            return .none
        default:
            return .none
        }
    }

    /// Yams builds nodes recursively, so a file nested thousands of levels deep (`[[[[…`, a
    /// few kilobytes) would overflow the stack. Calibration files nest a few levels; deeper
    /// than this is refused before parsing.
    static let nestingLimit = 256

    /// The first line (1-based) at which an upper bound on the nesting depth passes
    /// ``nestingLimit``, or `nil`. The bound: a block collection is indented deeper than its
    /// parent, or starts after an indicator (`- `, `? `, `: `), except a sequence under a
    /// mapping key, which may share its column; so block nesting is at most two levels per
    /// leading column of blanks and indicators. Flow nesting is at most one level per `[` or
    /// `{` so far in the text: closing brackets are not subtracted, since one inside quotes
    /// closes nothing and could otherwise hide an opening one.
    /// The most YAML aliases (`*name`) a calibration document may use. Parallax's formats use
    /// none; a document with thousands can nest far deeper than its text shows (a chain of
    /// aliases each wrapping the last), which neither parsing nor freeing the tree survives.
    static let aliasLimit = 64

    /// The line (1-based) of the alias past ``aliasLimit``: a `*` that starts a node (after
    /// the line's start, a space, `[`, `{` or `,`) outside quotes and comments.
    static func lineWithTooManyAliases(_ text: String) -> Int? {
        var line = 1, aliases = 0
        var quote: UInt8? = nil, comment = false, previous: UInt8 = UInt8(ascii: "\n")
        for byte in text.utf8 {
            defer { previous = byte }
            if byte == UInt8(ascii: "\n") {
                line += 1
                quote = nil
                comment = false
                continue
            }
            if comment { continue }
            if let open = quote {
                if byte == open { quote = nil }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = byte
            case UInt8(ascii: "#") where previous == UInt8(ascii: " ") || previous == UInt8(ascii: "\n"): comment = true
            case UInt8(ascii: "*") where [UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "["),
                                          UInt8(ascii: "{"), UInt8(ascii: ",")].contains(previous):
                aliases += 1
                if aliases > aliasLimit { return line }
            default: break
            }
        }
        return nil
    }

    static func lineNestedTooDeeply(_ text: String) -> Int? {
        var line = 1, flowOpenings = 0, leading = 0, atLineStart = true
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\n"):
                line += 1
                leading = 0
                atLineStart = true
                continue
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "-"), UInt8(ascii: "?"), UInt8(ascii: ":"):
                if atLineStart { leading += 1 }
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                flowOpenings += 1
                atLineStart = false
            default:
                atLineStart = false
            }
            if flowOpenings + 2 * (leading + 1) > nestingLimit { return line }
        }
        return nil
    }

    static func convert(_ error: YamlError, file: String) -> CalibrationFormatError {
        switch error {
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let detail = context.map { "\(problem) \($0.text)" } ?? problem
            return CalibrationFormatError(file: file, line: mark.line, message: "not valid YAML: \(detail)")
        default:
            return CalibrationFormatError(file: file, line: nil, message: "not valid YAML: \(error)")
        }
    }

    func error(_ node: Node?, _ message: String) -> CalibrationFormatError {
        CalibrationFormatError(file: file, line: (node ?? root).mark?.line, message: message)
    }

    func node(_ key: String, in parent: Node? = nil) -> Node? { (parent ?? root)[key] }

    func required(_ key: String, in parent: Node? = nil) throws(CalibrationFormatError) -> Node {
        guard let n = node(key, in: parent) else { throw error(parent, "missing key '\(key)'") }
        return n
    }

    func number(_ node: Node) throws(CalibrationFormatError) -> Double {
        guard let text = node.scalar?.string else { throw error(node, "expected a number") }
        let lowered = text.lowercased()
        if let v = Double(text) { return v }
        if lowered == ".nan" { return .nan }
        if lowered == ".inf" || lowered == "+.inf" { return .infinity }
        if lowered == "-.inf" { return -.infinity }
        throw error(node, "'\(excerpt(text))' is not a number")
    }

    func integer(_ key: String, in parent: Node? = nil) throws(CalibrationFormatError) -> Int {
        let n = try required(key, in: parent)
        guard let text = n.scalar?.string, let v = Int(text) else { throw error(n, "'\(key)' must be an integer") }
        return v
    }

    /// An image width or height: a whole number from 1 to 999 999, the range a calibration
    /// JSON file accepts (a size near Int.max would only overflow later, in the maps).
    func imageDimension(_ key: String, in parent: Node? = nil) throws(CalibrationFormatError) -> Int {
        let v = try integer(key, in: parent)
        guard v >= 1 && v < 1_000_000 else {
            throw error(node(key, in: parent), "'\(key)' must be from 1 to 999999 pixels, got \(v)")
        }
        return v
    }

    func string(_ key: String, in parent: Node? = nil) throws(CalibrationFormatError) -> String {
        let n = try required(key, in: parent)
        guard let s = n.scalar?.string else { throw error(n, "'\(key)' must be a string") }
        return s
    }

    func numbers(_ node: Node) throws(CalibrationFormatError) -> [Double] {
        guard let seq = node.sequence else { throw error(node, "expected a list of numbers") }
        var out: [Double] = []
        for item in seq {
            if item.sequence != nil { out += try numbers(item) } else { out.append(try number(item)) }
        }
        return out
    }

    /// A matrix written as a mapping with rows, cols and data (OpenCV's `!!opencv-matrix` and ROS's layout).
    /// - Returns: row-major values, checked against rows × cols and, when given, the expected shape(s).
    func matrix(_ key: String, in parent: Node? = nil, shapes: [(Int, Int)]? = nil) throws(CalibrationFormatError) -> (rows: Int, cols: Int, data: [Double]) {
        let n = try required(key, in: parent)
        guard n.mapping != nil else { throw error(n, "'\(key)' must be a matrix (rows, cols, data)") }
        let rows = try integer("rows", in: n), cols = try integer("cols", in: n)
        guard rows >= 0, cols >= 0 else { throw error(n, "'\(key)' declares \(rows)×\(cols), a negative size") }
        let dataNode = try required("data", in: n)
        let data = try numbers(dataNode)
        // Multiplied with overflow reported: rows and cols come from the file, and their
        // product can exceed Int (which would trap).
        let (count, overflow) = rows.multipliedReportingOverflow(by: cols)
        guard !overflow, data.count == count else {
            throw error(dataNode, "'\(key)' declares \(rows)×\(cols) but has \(data.count) values")
        }
        if let shapes, !shapes.contains(where: { $0.0 == rows && $0.1 == cols }) {
            let allowed = shapes.map { "\($0.0)×\($0.1)" }.joined(separator: " or ")
            throw error(n, "'\(key)' is \(rows)×\(cols), expected \(allowed)")
        }
        guard data.allSatisfy(\.isFinite) else { throw error(dataNode, "'\(key)' contains a value that is not finite") }
        return (rows, cols, data)
    }
}

/// A string as a YAML scalar that reads back as the same text: plain when it is made of
/// letters, digits and `_ . / -` (as ROS writes camera names), double-quoted otherwise, with
/// `\\`, `\"` and every character YAML does not allow printed raw (controls, and its line
/// breaks U+0085, U+2028 and U+2029) escaped. (YAML readers drop a byte-order mark wherever
/// it is, so a name with one reads back without it.)
func yamlString(_ text: String) -> String {
    let plain = text.unicodeScalars.allSatisfy { c in
        c.isASCII && (("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || "_./-".unicodeScalars.contains(c))
    }
    // A leading `-` could start a list item, and an empty value reads as null: quote those.
    if plain, let first = text.unicodeScalars.first, first != "-" { return text }
    // YAML must also escape DEL, the C1 controls, its line breaks and the non-characters.
    return doubleQuoted(text, uppercaseHex: true) { c in
        let v = c.value
        return v < 0x20 || (0x7F...0x9F).contains(v) || v == 0x2028 || v == 0x2029 || v == 0xFFFE || v == 0xFFFF
    }
}

func yamlList(_ values: [Double]) -> String {
    "[ " + values.map(yamlNumber).joined(separator: ", ") + " ]"
}
