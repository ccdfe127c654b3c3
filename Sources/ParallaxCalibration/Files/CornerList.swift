import ParallaxGeometry

/// Board corners found by some detector, per image file, for `parallax calibrate --corners-in`:
/// another detector's corners solved by Parallax, or Parallax's own from an earlier run.
///
/// Two formats are read, told apart by content:
///
/// - **JSON**, as `--corners-out` writes it:
///
///       {"tool": "…", "board": [9, 6],
///        "images": {"left01.jpg": [[x, y], …], "right01.jpg": null, …},
///        "image_sizes": {"left01.jpg": [640, 480], …}}
///
///   `images` maps an image to its corners in the board's order (row by row, `columns`
///   corners per row, as OpenCV's `findChessboardCorners` orders them), or to `null` when the
///   board was not found. `board` and `image_sizes` are optional; without a size the image
///   file itself is read for it.
/// - **mrcal's `corners.vnl`** (mrgingham's output): a `# filename x y level` header, then one
///   line per corner, `filename x y level`, in the board's order; a line `filename - - -`
///   means no board in that image. A corner whose level is `-` or negative (mrcal's "skip
///   this corner") leaves its image without a full board, and the image is set aside.
///
/// Pixel coordinates follow the pixel-centre convention ((0, 0) is the centre of the
/// top-left pixel), as OpenCV and mrcal use. Images are matched by the path given on the
/// command line, or else by file name alone.
public struct CornerList: Sendable {
    /// One image's entry: its corners (`nil`: no board found) and, when the list says, its size.
    public struct Entry: Sendable, Hashable {
        /// The corners in the board's order (row by row), in pixels with (0, 0) at the centre of
        /// the top-left pixel; `nil` when the list says no full board was found in the image.
        public var corners: [SIMD2<Double>]?
        /// The image's size in pixels, or `nil` when the list does not give it (the image file is
        /// then read for it).
        public var size: ImageSize?

        /// An entry: `corners` (`nil`: no board found) and, when known, the image's `size`.
        public init(corners: [SIMD2<Double>]?, size: ImageSize?) {
            self.corners = corners
            self.size = size
        }
    }

    /// Entries by the image name the list uses.
    public var entries: [String: Entry]
    /// The board (columns × rows of inner corners) the list declares, if it does.
    public var board: (columns: Int, rows: Int)?
    /// The file the list was read from, for messages.
    public var source: String

    /// A list from its entries.
    public init(entries: [String: Entry], board: (columns: Int, rows: Int)? = nil, source: String) {
        self.entries = entries
        self.board = board
        self.source = source
    }

    /// The entry for image `path`: by the whole path, else by its file name.
    public func entry(for path: String) -> Entry? {
        if let e = entries[path] { return e }
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return entries[name]
    }

    /// Reads the list in `path` (JSON or mrcal vnl, by content).
    public init(contentsOfFile path: String) throws(CornerListError) {
        let text: String
        do { text = try FileAccess.readText(atPath: path, as: .calibration) } catch { throw .unreadable(error) }
        try self.init(text: text, source: path)
    }

    /// Parses `text` (JSON or mrcal vnl, by content); `source` names it in errors.
    public init(text: String, source: String) throws(CornerListError) {
        let first = text.first { !$0.isWhitespace }
        if first == "{" {
            try self.init(json: text, source: source)
        } else {
            try self.init(vnl: text, source: source)
        }
    }

    private init(json text: String, source: String) throws(CornerListError) {
        let root: JSONObject
        do {
            guard let object = try JSONValue(parsing: text).object else {
                throw CornerListError.invalid(file: source, location: "the top level", message: "not a JSON object")
            }
            root = object
        } catch let error as JSONSyntaxError {
            throw .syntax(file: source, line: error.line, message: "\(error.message) (column \(error.column))")
        } catch let error as CornerListError {
            throw error
        } catch {
            throw .invalid(file: source, location: "the top level", message: "\(error)")
        }
        guard let images = root["images"]?.object else {
            throw .invalid(file: source, location: "\"images\"", message: "missing, or not an object of image names")
        }
        var board: (Int, Int)?
        if let b = root["board"] {
            guard let values = b.array?.compactMap(\.number), values.count == 2,
                  values.allSatisfy({ $0 >= 2 && $0 <= 1000 && $0 == $0.rounded() }) else {
                throw .invalid(file: source, location: "\"board\"", message: "must be [columns, rows] of inner corners, 2…1000 each")
            }
            board = (Int(values[0]), Int(values[1]))
        }
        let sizes = root["image_sizes"]?.object
        var entries: [String: Entry] = [:]
        for name in images.keys {
            let value = images[name] ?? .null
            var corners: [SIMD2<Double>]?
            if case .null = value {
                corners = nil
            } else {
                guard let list = value.array else {
                    throw .invalid(file: source, location: "\"images\".\"\(name)\"", message: "must be a list of [x, y] or null")
                }
                corners = []
                for (index, point) in list.enumerated() {
                    guard let xy = point.array?.compactMap(\.number), xy.count == 2,
                          xy.allSatisfy({ $0.isFinite && abs($0) < 1e6 }) else {
                        throw .invalid(file: source, location: "\"images\".\"\(name)\"[\(index)]",
                                       message: "must be [x, y] with finite pixel coordinates")
                    }
                    corners?.append(SIMD2(xy[0], xy[1]))
                }
            }
            var size: ImageSize?
            if let s = sizes?[name] {
                guard let wh = s.array?.compactMap(\.number), wh.count == 2,
                      wh.allSatisfy({ $0 >= 1 && $0 <= 65536 && $0 == $0.rounded() }) else {
                    throw .invalid(file: source, location: "\"image_sizes\".\"\(name)\"", message: "must be [width, height] in pixels")
                }
                size = ImageSize(width: Int(wh[0]), height: Int(wh[1]))
            }
            entries[name] = Entry(corners: corners, size: size)
        }
        self.init(entries: entries, board: board, source: source)
    }

    private init(vnl text: String, source: String) throws(CornerListError) {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var skipped: Set<String> = []
        for (offset, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = String(raw.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" || $0 == "\r" }.reversed())
            if line.isEmpty || line.hasPrefix("#") { continue }
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
            guard fields.count >= 3 else {
                throw .syntax(file: source, line: offset + 1, message: "expected `filename x y [level]`, got \"\(line)\"")
            }
            let name = fields[0]
            if entries[name] == nil { order.append(name) }
            if fields[1] == "-" && fields[2] == "-" {
                // No board in this image.
                if let existing = entries[name], existing.corners?.isEmpty == false {
                    throw .syntax(file: source, line: offset + 1, message: "\(name) has corners and also a `- -` line")
                }
                entries[name] = Entry(corners: nil, size: nil)
                continue
            }
            guard let x = Double(fields[1]), let y = Double(fields[2]), x.isFinite, y.isFinite, abs(x) < 1e6, abs(y) < 1e6 else {
                throw .syntax(file: source, line: offset + 1, message: "x and y must be finite numbers, got \"\(fields[1]) \(fields[2])\"")
            }
            if fields.count >= 4, fields[3] == "-" || (Double(fields[3]).map { $0 < 0 } ?? false) {
                skipped.insert(name)
            }
            if entries[name] == nil { entries[name] = Entry(corners: [], size: nil) }
            guard entries[name]?.corners != nil else {
                throw .syntax(file: source, line: offset + 1, message: "\(name) has a `- -` line and also corners")
            }
            entries[name]?.corners?.append(SIMD2(x, y))
        }
        guard !entries.isEmpty else { throw .invalid(file: source, location: "the file", message: "no corner lines") }
        // An image with skipped corners has no full board: it is treated as not found.
        for name in skipped { entries[name]?.corners = nil }
        self.init(entries: entries, source: source)
    }
}

/// A corner list that cannot be used, naming the file and where in it.
public enum CornerListError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file could not be read (the system's reason).
    case unreadable(FileAccessError)
    /// Not valid JSON or `corners.vnl` text at `line` (from 1).
    case syntax(file: String, line: Int, message: String)
    /// Well-formed, but a value at `location` (an image, a key, a line) cannot be used.
    case invalid(file: String, location: String, message: String)

    /// One line starting with the file (and line or location in it) and saying what is wrong;
    /// an unreadable file gives the file-access error's own message.
    public var description: String {
        switch self {
        case .unreadable(let e): return e.description
        case .syntax(let f, let l, let m): return "\(f):\(l): \(m)"
        case .invalid(let f, let where_, let m): return "\(f): \(where_): \(m)"
        }
    }
}
