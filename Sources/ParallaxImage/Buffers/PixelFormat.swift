import ParallaxGeometry

/// How the pixels of an uncompressed image are laid out in memory.
///
/// Packed formats have one plane; ``nv12`` has a full-resolution luma plane
/// followed by a half-resolution plane of interleaved Cb, Cr pairs; ``i420``
/// and ``i422`` have three planes (Y, Cb, Cr), as a JPEG carries them. The
/// 4:2:2 formats (``yuyv``, ``uyvy``, ``i422``) store one chroma pair per two
/// pixels, so their width must be even.
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
    /// Planar 4:2:0: a Y plane, then Cb and Cr planes at half width and half height. This
    /// is what a 4:2:0 JPEG (most MJPEG webcams) decodes to without colour conversion; its
    /// YCbCr is JPEG's full-range BT.601 (JFIF), not the studio swing of the packed formats.
    case i420
    /// Planar 4:2:2: a Y plane, then Cb and Cr planes at half width and full height (a
    /// 4:2:2 JPEG's own planes; full-range BT.601 as ``i420``).
    case i422

    /// Bytes per pixel of the first plane (for 4:2:2, per pixel on average: 2).
    public var bytesPerPixel: Int {
        switch self {
        case .gray8, .nv12, .i420, .i422: return 1
        case .yuyv, .uyvy: return 2
        case .rgb8, .bgr8: return 3
        case .rgba8, .bgra8: return 4
        }
    }

    /// Number of planes.
    public var planeCount: Int {
        switch self {
        case .nv12: return 2
        case .i420, .i422: return 3
        default: return 1
        }
    }

    /// True for the three-plane formats (``i420``, ``i422``), whose YCbCr is full range.
    public var isPlanarYCbCr: Bool { self == .i420 || self == .i422 }

    /// Interleaved 8-bit channels per pixel in the first plane, for the
    /// packed RGB-like and gray formats; `nil` for the YUV formats.
    public var interleavedChannels: Int? {
        switch self {
        case .gray8: return 1
        case .rgb8, .bgr8: return 3
        case .rgba8, .bgra8: return 4
        case .yuyv, .uyvy, .nv12, .i420, .i422: return nil
        }
    }

    /// True when the width must be even (4:2:2 and 4:2:0).
    public var requiresEvenWidth: Bool { isYUV }
    /// True when the height must be even (4:2:0).
    public var requiresEvenHeight: Bool { self == .nv12 || self == .i420 }

    /// The minimum bytes per row of plane `plane` for an image `width` pixels wide.
    public func minimumBytesPerRow(width: Int, plane: Int = 0) -> Int {
        if plane > 0 {
            if self == .nv12 { return (width + 1) / 2 * 2 }
            if isPlanarYCbCr { return (width + 1) / 2 }
        }
        return width * bytesPerPixel
    }

    /// The number of rows of plane `plane` for an image `height` pixels tall.
    public func rows(height: Int, plane: Int = 0) -> Int {
        plane > 0 && (self == .nv12 || self == .i420) ? (height + 1) / 2 : height
    }

    /// Checks that `size` is allowed for this format.
    public func validate(_ size: ImageSize) throws(ImageError) {
        guard size.width > 0, size.height > 0 else { throw .invalidSize(size, format: self, reason: "dimensions must be positive") }
        if requiresEvenWidth && size.width % 2 != 0 { throw .invalidSize(size, format: self, reason: "width must be even") }
        if requiresEvenHeight && size.height % 2 != 0 { throw .invalidSize(size, format: self, reason: "height must be even") }
    }
}
