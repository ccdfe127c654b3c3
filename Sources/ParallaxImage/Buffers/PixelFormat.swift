import ParallaxGeometry

/// How the pixels of an uncompressed image are laid out in memory.
///
/// Packed formats have one plane; ``nv12`` has a full-resolution luma plane
/// followed by a half-resolution plane of interleaved Cb, Cr pairs. The
/// 4:2:2 formats (``yuyv``, ``uyvy``) store two pixels in four bytes, so
/// their width must be even.
public enum PixelFormat: String, CaseIterable, Hashable, Codable, Sendable {
    /// 8-bit luma (V4L2 `GREY`).
    case gray8
    /// 8-bit red, green, blue (V4L2 `RGB3`).
    case rgb8
    /// 8-bit blue, green, red: OpenCV's default order (V4L2 `BGR3`).
    case bgr8
    /// 8-bit red, green, blue, alpha.
    case rgba8
    /// 8-bit blue, green, red, alpha.
    case bgra8
    /// 4:2:2 packed Y0 Cb Y1 Cr (V4L2 `YUYV`), the common UVC webcam format.
    case yuyv
    /// 4:2:2 packed Cb Y0 Cr Y1 (V4L2 `UYVY`).
    case uyvy
    /// 4:2:0 with a Y plane and an interleaved CbCr plane at half size (V4L2 `NV12`).
    case nv12

    /// Bytes per pixel of the first plane (for 4:2:2, per pixel on average: 2).
    public var bytesPerPixel: Int {
        switch self {
        case .gray8, .nv12: return 1
        case .yuyv, .uyvy: return 2
        case .rgb8, .bgr8: return 3
        case .rgba8, .bgra8: return 4
        }
    }

    /// Number of planes.
    public var planeCount: Int { self == .nv12 ? 2 : 1 }

    /// Interleaved 8-bit channels per pixel in the first plane, for the
    /// packed RGB-like and gray formats; `nil` for the YUV formats.
    public var interleavedChannels: Int? {
        switch self {
        case .gray8: return 1
        case .rgb8, .bgr8: return 3
        case .rgba8, .bgra8: return 4
        case .yuyv, .uyvy, .nv12: return nil
        }
    }

    /// True when the width must be even (4:2:2 and 4:2:0).
    public var requiresEvenWidth: Bool { self == .yuyv || self == .uyvy || self == .nv12 }
    /// True when the height must be even (4:2:0).
    public var requiresEvenHeight: Bool { self == .nv12 }

    /// The minimum bytes per row of plane `plane` for an image `width` pixels wide.
    public func minimumBytesPerRow(width: Int, plane: Int = 0) -> Int {
        if self == .nv12 { return plane == 0 ? width : (width + 1) / 2 * 2 }
        return width * bytesPerPixel
    }

    /// The number of rows of plane `plane` for an image `height` pixels tall.
    public func rows(height: Int, plane: Int = 0) -> Int {
        self == .nv12 && plane == 1 ? (height + 1) / 2 : height
    }

    /// Checks that `size` is allowed for this format.
    public func validate(_ size: ImageSize) throws(ImageError) {
        guard size.width > 0, size.height > 0 else { throw .invalidSize(size, format: self, reason: "dimensions must be positive") }
        if requiresEvenWidth && size.width % 2 != 0 { throw .invalidSize(size, format: self, reason: "width must be even") }
        if requiresEvenHeight && size.height % 2 != 0 { throw .invalidSize(size, format: self, reason: "height must be even") }
    }
}
