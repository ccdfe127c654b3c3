import ParallaxGeometry

/// Pictures for people checking a rectified pair by eye.
public enum StereoPreview {
    /// The two images next to each other (left | right) with guide lines
    /// across both every `guideSpacing` pixels, in RGB.
    ///
    /// After a good rectification a feature sits on the same row in both
    /// halves, so it touches the same guide line. For a vertical rig
    /// (`StereoLayout.vertical`) the images are stacked (left above right)
    /// and the guides are vertical, because epipolar lines are then columns.
    ///
    /// Guides are drawn half-transparent green so the pixels under them stay
    /// visible. Any pixel format is accepted (converted to RGB).
    ///
    /// - Throws: ``ImageError/sizeMismatch(what:expected:actual:)`` when the
    ///   images differ in size.
    public static func sideBySide(left: ImageBuffer, right: ImageBuffer, layout: StereoLayout = .horizontal,
                                  guideSpacing: Int = 32) throws(ImageError) -> ImageBuffer {
        guard left.size == right.size else {
            throw .sizeMismatch(what: "right image of the preview", expected: left.size, actual: right.size)
        }
        let l = try left.converted(to: .rgb8), r = try right.converted(to: .rgb8)
        let w = left.size.width, h = left.size.height
        let horizontal = layout == .horizontal
        let size = horizontal ? ImageSize(width: 2 * w, height: h) : ImageSize(width: w, height: 2 * h)
        var bytes = [UInt8](repeating: 0, count: size.area * 3)
        let rowBytes = size.width * 3
        for y in 0..<h {
            let source = y * w * 3
            let leftStart = y * rowBytes
            let rightStart = horizontal ? y * rowBytes + w * 3 : (y + h) * rowBytes
            bytes.replaceSubrange(leftStart..<(leftStart + w * 3), with: l.bytes[source..<(source + w * 3)])
            bytes.replaceSubrange(rightStart..<(rightStart + w * 3), with: r.bytes[source..<(source + w * 3)])
        }
        let spacing = max(2, guideSpacing)
        func tint(_ i: Int) {
            bytes[i] = bytes[i] / 2
            bytes[i + 1] = bytes[i + 1] / 2 + 128
            bytes[i + 2] = bytes[i + 2] / 2
        }
        if horizontal {
            for y in stride(from: spacing / 2, to: size.height, by: spacing) {
                for x in 0..<size.width { tint((y * size.width + x) * 3) }
            }
        } else {
            for x in stride(from: spacing / 2, to: size.width, by: spacing) {
                for y in 0..<size.height { tint((y * size.width + x) * 3) }
            }
        }
        return try ImageBuffer(format: .rgb8, size: size, bytes: bytes)
    }

    /// A red–cyan anaglyph: the left image's luma in red, the right's in
    /// green and blue, in RGB.
    ///
    /// Seen through red–cyan glasses it shows depth; without glasses,
    /// objects on the convergence (zero-parallax) plane are gray and sharp
    /// while nearer and farther ones show red and cyan fringes.
    ///
    /// - Throws: ``ImageError/sizeMismatch(what:expected:actual:)`` when the
    ///   images differ in size.
    public static func anaglyph(left: ImageBuffer, right: ImageBuffer) throws(ImageError) -> ImageBuffer {
        guard left.size == right.size else {
            throw .sizeMismatch(what: "right image of the anaglyph", expected: left.size, actual: right.size)
        }
        let l = try left.converted(to: .gray8), r = try right.converted(to: .gray8)
        var bytes = [UInt8](repeating: 0, count: left.size.area * 3)
        for i in 0..<left.size.area {
            bytes[3 * i] = l.bytes[i]
            bytes[3 * i + 1] = r.bytes[i]
            bytes[3 * i + 2] = r.bytes[i]
        }
        return try ImageBuffer(format: .rgb8, size: left.size, bytes: bytes)
    }
}
