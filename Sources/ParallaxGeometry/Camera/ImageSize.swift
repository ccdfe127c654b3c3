/// The size of an image in pixels.
public struct ImageSize: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The width in pixels (the number of columns).
    public var width: Int
    /// The height in pixels (the number of rows).
    public var height: Int

    /// A size of `width` × `height` pixels, stored as given (not checked to be positive).
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

    /// Number of pixels, as a `Double`: exact up to 2⁵³, and without overflow for any size
    /// (a size parsed from text may be far past `Int.max` pixels), for comparing sizes.
    @inlinable
    public var pixelCount: Double { Double(width) * Double(height) }

    /// True when either dimension is zero or negative (no pixels).
    @inlinable
    public var isEmpty: Bool { width <= 0 || height <= 0 }

    /// `"WxH"`.
    public var description: String { "\(width)x\(height)" }
}

/// An axis-aligned rectangle of whole pixels: `x`, `y` of the top-left pixel, then the size.
public struct PixelRect: Hashable, Codable, Sendable, CustomStringConvertible {
    /// The column of the top-left pixel, 0 at the image's left edge.
    public var x: Int
    /// The row of the top-left pixel, 0 at the image's top edge.
    public var y: Int
    /// The width in pixels; 0 for an empty rectangle.
    public var width: Int
    /// The height in pixels; 0 for an empty rectangle.
    public var height: Int

    /// A rectangle from its top-left pixel and size in pixels, stored as given.
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

    /// `(x, y, WxH)`, such as `(8, 12, 1904x1060)`.
    public var description: String { "(\(x), \(y), \(width)x\(height))" }
}
