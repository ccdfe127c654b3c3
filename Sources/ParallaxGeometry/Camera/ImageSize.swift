/// The size of an image in pixels.
public struct ImageSize: Hashable, Codable, Sendable, CustomStringConvertible {
    public var width: Int
    public var height: Int

    @inlinable
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// Parses `"1920x1080"` (also `X` or `×`). Returns `nil` for anything else
    /// or for a non-positive dimension.
    public init?(parsing text: String) {
        let parts = text.split(whereSeparator: { $0 == "x" || $0 == "X" || $0 == "×" })
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        self.init(width: w, height: h)
    }

    /// Number of pixels.
    @inlinable
    public var area: Int { width * height }

    /// True when both dimensions are positive.
    @inlinable
    public var isEmpty: Bool { width <= 0 || height <= 0 }

    /// `"WxH"`.
    public var description: String { "\(width)x\(height)" }
}

/// An axis-aligned rectangle of whole pixels: `x`, `y` of the top-left pixel, then the size.
public struct PixelRect: Hashable, Codable, Sendable, CustomStringConvertible {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int

    @inlinable
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    /// `[x, y, width, height]`, the order OpenCV's `Rect` prints in.
    public var array: [Int] { [x, y, width, height] }

    /// The overlap with `other`; an empty rectangle (all zero) when they do not overlap.
    public func intersection(_ other: PixelRect) -> PixelRect {
        let x0 = max(x, other.x), y0 = max(y, other.y)
        let x1 = min(x + width, other.x + other.width), y1 = min(y + height, other.y + other.height)
        guard x1 > x0, y1 > y0 else { return PixelRect(x: 0, y: 0, width: 0, height: 0) }
        return PixelRect(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
    }

    public var description: String { "(\(x), \(y), \(width)x\(height))" }
}
