import ParallaxGeometry

/// One plane of a borrowed image: where it starts and how far apart its rows are.
public struct ImagePlane: @unchecked Sendable {
    /// First byte of the first row.
    public var baseAddress: UnsafeRawPointer
    /// Distance in bytes from one row to the next (≥ the row's used bytes).
    public var bytesPerRow: Int

    @inlinable
    public init(baseAddress: UnsafeRawPointer, bytesPerRow: Int) {
        self.baseAddress = baseAddress
        self.bytesPerRow = bytesPerRow
    }
}

/// A read-only view of pixels owned by someone else: a camera driver's mapped
/// buffer, an ``ImageBuffer``, or a caller's memory.
///
/// A view does not keep its memory alive. It is valid only as long as its
/// owner says so (for a capture `Frame`, while the frame is alive; for an
/// ``ImageBuffer``, inside `withView`). It is `Sendable` so that kernels can
/// hand bands of it to worker threads within that lifetime.
public struct ImageView: @unchecked Sendable {
    /// How the pixels are laid out.
    public let format: PixelFormat
    /// Width and height in pixels.
    public let size: ImageSize
    /// The luma / packed plane.
    public let plane0: ImagePlane
    /// The chroma plane of ``PixelFormat/nv12``; `nil` for single-plane formats.
    public let plane1: ImagePlane?

    /// A view over caller memory, checked for a consistent layout.
    ///
    /// - Throws: ``ImageError`` when the size does not suit the format, a
    ///   stride is too small, or the second plane is missing for NV12.
    public init(format: PixelFormat, size: ImageSize, plane0: ImagePlane, plane1: ImagePlane? = nil) throws(ImageError) {
        try format.validate(size)
        guard plane0.bytesPerRow >= format.minimumBytesPerRow(width: size.width) else {
            throw .invalidLayout("row stride \(plane0.bytesPerRow) < \(format.minimumBytesPerRow(width: size.width)) bytes for \(size) \(format.rawValue)")
        }
        if format.planeCount == 2 {
            guard let plane1 else { throw .invalidLayout("\(format.rawValue) needs a chroma plane") }
            guard plane1.bytesPerRow >= format.minimumBytesPerRow(width: size.width, plane: 1) else {
                throw .invalidLayout("chroma stride \(plane1.bytesPerRow) too small for width \(size.width)")
            }
        }
        self.init(unchecked: format, size: size, plane0: plane0, plane1: plane1)
    }

    /// A view whose layout the caller has already validated.
    @inlinable
    public init(unchecked format: PixelFormat, size: ImageSize, plane0: ImagePlane, plane1: ImagePlane?) {
        self.format = format
        self.size = size
        self.plane0 = plane0
        self.plane1 = plane1
    }

    /// A view of a tightly packed image (``ImageBuffer``'s layout: rows without
    /// padding, the NV12 chroma plane right after the luma rows) at `baseAddress`.
    ///
    /// - Precondition: the memory holds
    ///   ``ImageBuffer/byteCount(format:size:)`` bytes and `size` suits `format`
    ///   (the caller owns such a buffer; nothing is checked).
    @inlinable
    public init(packed format: PixelFormat, size: ImageSize, baseAddress base: UnsafeRawPointer) {
        let stride0 = format.minimumBytesPerRow(width: size.width)
        let chroma = format.planeCount == 2
            ? ImagePlane(baseAddress: base + stride0 * size.height,
                         bytesPerRow: format.minimumBytesPerRow(width: size.width, plane: 1))
            : nil
        self.init(unchecked: format, size: size, plane0: ImagePlane(baseAddress: base, bytesPerRow: stride0), plane1: chroma)
    }

    /// A view over one contiguous block laid out with the given strides (NV12:
    /// chroma right after `rows × bytesPerRow` of luma), checked against `byteCount`.
    public init(format: PixelFormat, size: ImageSize, baseAddress: UnsafeRawPointer, byteCount: Int,
                bytesPerRow: Int? = nil) throws(ImageError) {
        try format.validate(size)
        let stride = bytesPerRow ?? format.minimumBytesPerRow(width: size.width)
        var needed = stride * size.height
        var chroma: ImagePlane?
        if format == .nv12 {
            chroma = ImagePlane(baseAddress: baseAddress + needed, bytesPerRow: stride)
            needed += stride * format.rows(height: size.height, plane: 1)
        }
        guard byteCount >= needed else {
            throw .invalidLayout("\(byteCount) bytes cannot hold a \(size) \(format.rawValue) image (needs \(needed))")
        }
        try self.init(format: format, size: size, plane0: ImagePlane(baseAddress: baseAddress, bytesPerRow: stride), plane1: chroma)
    }

    /// The byte at `x` (a byte offset within the row), row `y` of plane 0.
    @inlinable
    public func byte(x: Int, y: Int) -> UInt8 {
        precondition(x >= 0 && y >= 0 && y < size.height && x < plane0.bytesPerRow, "byte(x:y:) out of bounds")
        return plane0.baseAddress.load(fromByteOffset: y * plane0.bytesPerRow + x, as: UInt8.self)
    }
}

/// A writable view of pixels owned by someone else (see ``ImageView``).
public struct MutableImageView: @unchecked Sendable {
    /// How the pixels are laid out.
    public let format: PixelFormat
    /// Width and height in pixels.
    public let size: ImageSize
    /// First byte of the luma / packed plane.
    public let plane0: UnsafeMutableRawPointer
    /// Distance in bytes between rows of plane 0.
    public let bytesPerRow0: Int
    /// First byte of the NV12 chroma plane; `nil` for single-plane formats.
    public let plane1: UnsafeMutableRawPointer?
    /// Distance in bytes between rows of plane 1 (unused without one).
    public let bytesPerRow1: Int

    @inlinable
    public init(unchecked format: PixelFormat, size: ImageSize, plane0: UnsafeMutableRawPointer, bytesPerRow0: Int,
                plane1: UnsafeMutableRawPointer?, bytesPerRow1: Int) {
        self.format = format
        self.size = size
        self.plane0 = plane0
        self.bytesPerRow0 = bytesPerRow0
        self.plane1 = plane1
        self.bytesPerRow1 = bytesPerRow1
    }

    /// The same memory, read-only.
    @inlinable
    public var readOnly: ImageView {
        ImageView(unchecked: format, size: size,
                  plane0: ImagePlane(baseAddress: UnsafeRawPointer(plane0), bytesPerRow: bytesPerRow0),
                  plane1: plane1.map { ImagePlane(baseAddress: UnsafeRawPointer($0), bytesPerRow: bytesPerRow1) })
    }
}
