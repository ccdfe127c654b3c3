/// A rotation of the output image by a multiple of 90°, clockwise as seen on screen.
public enum ImageRotation: Int, Hashable, Codable, Sendable, CaseIterable {
    /// As the camera sees it.
    case none = 0
    /// Turned a quarter clockwise: the output is as wide as the input is tall.
    case clockwise90 = 90
    /// Turned half-way round (upside down).
    case rotate180 = 180
    /// Turned three quarters clockwise (a quarter counter-clockwise).
    case clockwise270 = 270
}

/// How the rectified image is turned and flipped for display, folded into the
/// rectification map so the pixels are still resampled only once.
public struct OutputOrientation: Hashable, Codable, Sendable {
    /// Applied first.
    public var rotation: ImageRotation
    /// A left–right flip applied after the rotation (a mirror view).
    public var mirrored: Bool

    /// An orientation; the defaults leave the image as it is (``identity``).
    public init(rotation: ImageRotation = .none, mirrored: Bool = false) {
        self.rotation = rotation
        self.mirrored = mirrored
    }

    /// No rotation, no mirroring.
    public static let identity = OutputOrientation()

    /// The displayed size of an image of `size`.
    public func displayedSize(of size: ImageSize) -> ImageSize {
        switch rotation {
        case .none, .rotate180: return size
        case .clockwise90, .clockwise270: return ImageSize(width: size.height, height: size.width)
        }
    }

    /// The pixel of the unrotated image (of `size`) shown at displayed pixel `p`.
    @inlinable
    public func sourcePixel(ofDisplayed p: SIMD2<Double>, imageSize size: ImageSize) -> SIMD2<Double> {
        let w = Double(size.width), h = Double(size.height)
        let displayedWidth = (rotation == .clockwise90 || rotation == .clockwise270) ? h : w
        let a = mirrored ? displayedWidth - 1 - p.x : p.x
        let b = p.y
        switch rotation {
        case .none: return SIMD2(a, b)
        case .clockwise90: return SIMD2(b, h - 1 - a)
        case .rotate180: return SIMD2(w - 1 - a, h - 1 - b)
        case .clockwise270: return SIMD2(w - 1 - b, a)
        }
    }
}
