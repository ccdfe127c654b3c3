import ParallaxGeometry

/// An image that owns its pixels, tightly packed (NV12: chroma plane after luma).
///
/// A value type with copy-on-write storage. Writing through
/// ``withMutableView(_:)`` into a buffer that is not shared does not allocate,
/// so destination buffers can be reused frame after frame.
public struct ImageBuffer: Sendable, Equatable {
    /// How the pixels are laid out.
    public let format: PixelFormat
    /// Width and height in pixels.
    public let size: ImageSize
    /// All planes, back to back.
    @usableFromInline internal var _bytes: [UInt8]
    /// All planes, back to back (read-only; write through ``withMutableView(_:)``).
    public var bytes: [UInt8] { _bytes }

    /// A zero-filled (black for RGB and gray; Y = 0 for YUV) image.
    public init(format: PixelFormat, size: ImageSize) throws(ImageError) {
        try format.validate(size)
        self.format = format
        self.size = size
        self._bytes = [UInt8](repeating: 0, count: Self.byteCount(format: format, size: size))
    }

    /// An image from existing tightly packed bytes.
    ///
    /// - Throws: ``ImageError/invalidLayout(_:)`` when `bytes` has the wrong length.
    public init(format: PixelFormat, size: ImageSize, bytes: [UInt8]) throws(ImageError) {
        try format.validate(size)
        let expected = Self.byteCount(format: format, size: size)
        guard bytes.count == expected else {
            throw .invalidLayout("\(bytes.count) bytes for a \(size) \(format.rawValue) image that needs \(expected)")
        }
        self.format = format
        self.size = size
        self._bytes = bytes
    }

    /// Bytes needed for a tightly packed image.
    public static func byteCount(format: PixelFormat, size: ImageSize) -> Int {
        var total = format.minimumBytesPerRow(width: size.width) * size.height
        if format.planeCount == 2 {
            total += format.minimumBytesPerRow(width: size.width, plane: 1) * format.rows(height: size.height, plane: 1)
        }
        return total
    }

    /// Bytes per row of plane 0.
    public var bytesPerRow: Int { format.minimumBytesPerRow(width: size.width) }

    /// Calls `body` with a read-only view valid for the duration of the call.
    @inlinable
    public func withView<R>(_ body: (ImageView) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { raw in
            try body(ImageView(packed: format, size: size, baseAddress: raw.baseAddress!))
        }
    }

    /// Calls `body` with a writable view valid for the duration of the call.
    @inlinable
    public mutating func withMutableView<R>(_ body: (MutableImageView) throws -> R) rethrows -> R {
        let format = self.format, size = self.size
        return try _bytes.withUnsafeMutableBytes { raw in
            let stride0 = format.minimumBytesPerRow(width: size.width)
            let base = raw.baseAddress!
            let stride1 = format.minimumBytesPerRow(width: size.width, plane: 1)
            return try body(MutableImageView(
                unchecked: format, size: size, plane0: base, bytesPerRow0: stride0,
                plane1: format.planeCount == 2 ? base + stride0 * size.height : nil, bytesPerRow1: stride1))
        }
    }

    /// A packed copy of any view (strides removed).
    public init(copying view: ImageView) {
        self.format = view.format
        self.size = view.size
        var bytes = [UInt8](repeating: 0, count: Self.byteCount(format: view.format, size: view.size))
        let row0 = view.format.minimumBytesPerRow(width: view.size.width)
        bytes.withUnsafeMutableBytes { dst in
            for y in 0..<view.size.height {
                (dst.baseAddress! + y * row0).copyMemory(from: view.plane0.baseAddress + y * view.plane0.bytesPerRow, byteCount: row0)
            }
            if let chroma = view.plane1 {
                let row1 = view.format.minimumBytesPerRow(width: view.size.width, plane: 1)
                let start = row0 * view.size.height
                for y in 0..<view.format.rows(height: view.size.height, plane: 1) {
                    (dst.baseAddress! + start + y * row1).copyMemory(from: chroma.baseAddress + y * chroma.bytesPerRow, byteCount: row1)
                }
            }
        }
        self._bytes = bytes
    }
}
