import ParallaxGeometry
import ParallaxImage

/// How the viewer shows a pair: the page's modes and `GET /api/pair.png?mode=`.
enum ViewerMode: String, CaseIterable, Sendable {
    /// Left | right with horizontal guide lines (a feature touches the same line in both
    /// halves when the pair is rectified).
    case sideBySide = "side-by-side"
    /// Red–cyan: the left image's luma in red, the right's in green and blue. On the
    /// convergence plane the two coincide (gray); nearer or farther, red and cyan fringes.
    case anaglyph
    /// The two images half and half.
    case blend
    /// The left image alone.
    case left
    /// The right image alone.
    case right

    /// The names, for messages.
    static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }

    /// `images` composed in this mode, in RGB (gray for a lone gray image).
    func picture(of images: PerSide<ImageBuffer>, layout: StereoLayout) throws -> ImageBuffer {
        switch self {
        case .sideBySide: return try StereoPreview.sideBySide(left: images.left, right: images.right, layout: layout)
        case .anaglyph: return try StereoPreview.anaglyph(left: images.left, right: images.right)
        case .blend: return try Self.blend(images.left, images.right)
        case .left: return images.left
        case .right: return images.right
        }
    }

    /// The per-channel mean of two images of one size, in RGB.
    private static func blend(_ a: ImageBuffer, _ b: ImageBuffer) throws -> ImageBuffer {
        guard a.size == b.size else { throw ImageError.sizeMismatch(what: "right image of the blend", expected: a.size, actual: b.size) }
        let x = try a.converted(to: .rgb8).bytes, y = try b.converted(to: .rgb8).bytes
        var bytes = [UInt8](repeating: 0, count: x.count)
        for i in bytes.indices { bytes[i] = UInt8((UInt16(x[i]) + UInt16(y[i]) + 1) / 2) }
        return try ImageBuffer(format: .rgb8, size: a.size, bytes: bytes)
    }
}
