/// A minimal SVG writer for report charts: elements are appended as text.
struct SVGDocument {
    let width: Double
    let height: Double
    private(set) var body = ""

    init(width: Double, height: Double) {
        self.width = width
        self.height = height
    }

    static func f(_ v: Double) -> String {
        guard v.isFinite else { return "0" }
        return "\((v * 100).rounded() / 100)"
    }

    static func escape(_ s: String) -> String {
        s.replacingAll("&", "&amp;").replacingAll("<", "&lt;").replacingAll(">", "&gt;").replacingAll("\"", "&quot;")
    }

    mutating func line(_ x1: Double, _ y1: Double, _ x2: Double, _ y2: Double, stroke: String = "#888", width: Double = 1, dash: Bool = false) {
        body += "<line x1=\"\(Self.f(x1))\" y1=\"\(Self.f(y1))\" x2=\"\(Self.f(x2))\" y2=\"\(Self.f(y2))\" stroke=\"\(stroke)\" stroke-width=\"\(Self.f(width))\"\(dash ? " stroke-dasharray=\"4 3\"" : "")/>\n"
    }

    mutating func rect(_ x: Double, _ y: Double, _ w: Double, _ h: Double, fill: String, stroke: String = "none", title: String? = nil) {
        body += "<rect x=\"\(Self.f(x))\" y=\"\(Self.f(y))\" width=\"\(Self.f(max(w, 0)))\" height=\"\(Self.f(max(h, 0)))\" fill=\"\(fill)\" stroke=\"\(stroke)\">"
        if let title { body += "<title>\(Self.escape(title))</title>" }
        body += "</rect>\n"
    }

    mutating func circle(_ x: Double, _ y: Double, _ r: Double, fill: String, opacity: Double = 1, stroke: String = "none") {
        body += "<circle cx=\"\(Self.f(x))\" cy=\"\(Self.f(y))\" r=\"\(Self.f(r))\" fill=\"\(fill)\" fill-opacity=\"\(Self.f(opacity))\" stroke=\"\(stroke)\"/>\n"
    }

    mutating func polygon(_ points: [SIMD2<Double>], stroke: String, fill: String = "none", opacity: Double = 1) {
        let list = points.map { "\(Self.f($0.x)),\(Self.f($0.y))" }.joined(separator: " ")
        body += "<polygon points=\"\(list)\" stroke=\"\(stroke)\" fill=\"\(fill)\" fill-opacity=\"\(Self.f(opacity))\" stroke-opacity=\"\(Self.f(opacity))\"/>\n"
    }

    mutating func text(_ x: Double, _ y: Double, _ s: String, size: Double = 12, anchor: String = "start", rotate: Bool = false, fill: String = "#222") {
        let transform = rotate ? " transform=\"rotate(-90 \(Self.f(x)) \(Self.f(y)))\"" : ""
        body += "<text x=\"\(Self.f(x))\" y=\"\(Self.f(y))\" font-family=\"sans-serif\" font-size=\"\(Self.f(size))\" text-anchor=\"\(anchor)\" fill=\"\(fill)\"\(transform)>\(Self.escape(s))</text>\n"
    }

    var text: String {
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Self.f(width))\" height=\"\(Self.f(height))\" viewBox=\"0 0 \(Self.f(width)) \(Self.f(height))\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
            + body + "</svg>\n"
    }
}

extension String {
    func replacingAll(_ target: String, _ replacement: String) -> String {
        split(separator: Character(target), omittingEmptySubsequences: false).joined(separator: replacement)
    }
}
