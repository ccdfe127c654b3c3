import ParallaxGeometry

/// An image that owns its pixels, tightly packed (NV12, I420, I422: each chroma plane
/// right after the plane before it).
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
        var total = 0
        for plane in 0..<format.planeCount {
            total += format.minimumBytesPerRow(width: size.width, plane: plane) * format.rows(height: size.height, plane: plane)
        }
        return total
    }

    /// Bytes per row of plane 0.
    public var bytesPerRow: Int { format.minimumBytesPerRow(width: size.width) }

    /// Calls `body` with a read-only view valid for the duration of the call.
    @inlinable
    public func withView<R>(_ body: (ImageView) throws -> R) rethrows -> R {
        try bytes.withUnsafeBytes { raw in
            try body(ImageView(packed: format, size: size, baseAddress: raw.baseAddress!, byteCount: raw.count))
        }
    }

    /// Calls `body` with a writable view valid for the duration of the call.
    @inlinable
    public mutating func withMutableView<R>(_ body: (MutableImageView) throws -> R) rethrows -> R {
        let format = self.format, size = self.size
        return try _bytes.withUnsafeMutableBytes { raw in
            try body(MutableImageView(packed: format, size: size, baseAddress: raw.baseAddress!, byteCount: raw.count))
        }
    }

    /// A packed copy of any view (strides removed).
    public init(copying view: ImageView) {
        self.format = view.format
        self.size = view.size
        var bytes = [UInt8](repeating: 0, count: Self.byteCount(format: view.format, size: view.size))
        bytes.withUnsafeMutableBytes { dst in
            let packed = MutableImageView(packed: view.format, size: view.size, baseAddress: dst.baseAddress!, byteCount: dst.count)
            ImageBuffer.copyPlanes(of: view, into: packed)
        }
        self._bytes = bytes
    }

    /// Copies every plane of `source` into `destination` (same format and size; rows of
    /// each plane's used bytes, strides may differ).
    ///
    /// - Precondition: equal formats and sizes (a programmer error otherwise).
    public static func copyPlanes(of source: ImageView, into destination: MutableImageView) {
        precondition(source.format == destination.format && source.size == destination.size,
                     "copyPlanes needs equal formats and sizes")
        let format = source.format
        for index in 0..<format.planeCount {
            guard let from = source.plane(index), let to = destination.plane(index) else { continue }
            let rowBytes = format.minimumBytesPerRow(width: source.size.width, plane: index)
            for y in 0..<format.rows(height: source.size.height, plane: index) {
                (to.base + y * to.bytesPerRow).copyMemory(from: from.baseAddress + y * from.bytesPerRow, byteCount: rowBytes)
            }
        }
    }
}
