import ParallaxGeometry

/// One plane of a borrowed image: where it starts and how far apart its rows are.
public struct ImagePlane: @unchecked Sendable {
    /// First byte of the first row.
    public var baseAddress: UnsafeRawPointer
    /// Distance in bytes from one row to the next (≥ the row's used bytes).
    public var bytesPerRow: Int

    /// A plane starting at `baseAddress` with rows `bytesPerRow` bytes apart. It borrows the
    /// memory: the caller keeps it alive, and nothing here checks the stride.
    @inlinable
    public init(baseAddress: UnsafeRawPointer, bytesPerRow: Int) {
        self.baseAddress = baseAddress
        self.bytesPerRow = bytesPerRow
    }
}

/// A read-only view of pixels owned by someone else: a camera driver's mapped
/// buffer, a session's pooled rectified image, an ``ImageBuffer``, or a caller's memory.
///
/// A view made by Parallax's capture layer holds a reference to what owns its pixels (a
/// `Frame`, whose driver buffer goes back to the driver only when the last view of it is
/// gone; a session's pooled pair buffer, reused only when no view of it is left), so a
/// view kept past its pair or frame still reads exactly the pixels it was given. Holding
/// one holds that buffer: the camera or the session runs short and reports drops, as when
/// holding the frame itself. Copying a view costs a reference count, never an allocation.
///
/// A view over memory someone else manages (``ImageBuffer/withView(_:)``, or one made
/// with an initializer here and no `owner`) keeps nothing alive: it is valid only inside
/// that scope. The plane pointers (``plane0`` …) are valid only while the view is alive.
/// It is `Sendable` so that kernels can hand bands of it to worker threads.
public struct ImageView: @unchecked Sendable {
    /// How the pixels are laid out.
    public let format: PixelFormat
    /// Width and height in pixels.
    public let size: ImageSize
    /// The luma / packed plane.
    public let plane0: ImagePlane
    /// The chroma plane of ``PixelFormat/nv12``, or the Cb plane of ``PixelFormat/i420`` and
    /// ``PixelFormat/i422``; `nil` for single-plane formats.
    public let plane1: ImagePlane?
    /// The Cr plane of ``PixelFormat/i420`` and ``PixelFormat/i422``; `nil` otherwise.
    public let plane2: ImagePlane?
    /// What keeps the pixels alive while this view exists (the `owner:` given at creation, or
    /// one Parallax's capture layer sets with its package-internal `keepingAlive(_:)`), or
    /// `nil` for a view over memory its maker manages.
    public let owner: (any AnyObject & Sendable)?

    /// A view over caller memory, checked for a consistent layout.
    ///
    /// - Throws: ``ImageError`` when the size does not suit the format, a
    ///   stride is too small, or a chroma plane the format needs is missing.
    public init(format: PixelFormat, size: ImageSize, plane0: ImagePlane, plane1: ImagePlane? = nil,
                plane2: ImagePlane? = nil, owner: (any AnyObject & Sendable)? = nil) throws(ImageError) {
        try format.validate(size)
        guard plane0.bytesPerRow >= format.minimumBytesPerRow(width: size.width) else {
            throw .invalidLayout("row stride \(plane0.bytesPerRow) < \(format.minimumBytesPerRow(width: size.width)) bytes for \(size) \(format.rawValue)")
        }
        for index in 1..<max(1, format.planeCount) {
            guard let plane = index == 1 ? plane1 : plane2 else {
                throw .invalidLayout("\(format.rawValue) needs chroma plane \(index)")
            }
            guard plane.bytesPerRow >= format.minimumBytesPerRow(width: size.width, plane: index) else {
                throw .invalidLayout("chroma plane \(index) stride \(plane.bytesPerRow) too small for width \(size.width)")
            }
        }
        self.init(unchecked: format, size: size, plane0: plane0, plane1: plane1, plane2: plane2, owner: owner)
    }

    /// A view whose layout the caller has already validated (package-internal: a view made
    /// outside is checked, by ``init(format:size:plane0:plane1:plane2:owner:)`` or against
    /// its memory's extent by ``init(packed:size:baseAddress:byteCount:owner:)``).
    @inlinable
    package init(unchecked format: PixelFormat, size: ImageSize, plane0: ImagePlane, plane1: ImagePlane?,
                plane2: ImagePlane? = nil, owner: (any AnyObject & Sendable)? = nil) {
        self.format = format
        self.size = size
        self.plane0 = plane0
        self.plane1 = plane1
        self.plane2 = plane2
        self.owner = owner
    }

    /// The same view, holding `owner` (what the pixels live in) for as long as it or any
    /// copy of it exists, in place of the owner it had: `owner` must keep that one alive
    /// (a frame holds the view it was made with). A pool that reuses memory only when
    /// nobody else references its owner (`isKnownUniquelyReferenced`) then never reuses
    /// memory a view still reads. Package-internal: a view made outside takes its owner at
    /// creation (`owner:` of the initializers).
    package func keepingAlive(_ owner: any AnyObject & Sendable) -> ImageView {
        ImageView(unchecked: format, size: size, plane0: plane0, plane1: plane1, plane2: plane2, owner: owner)
    }

    /// Plane `index` (0…2), or `nil` when the format has no such plane.
    @inlinable
    public func plane(_ index: Int) -> ImagePlane? {
        switch index {
        case 0: return plane0
        case 1: return plane1
        default: return plane2
        }
    }

    /// A view of a tightly packed image (``ImageBuffer``'s layout: rows without
    /// padding, each chroma plane right after the plane before it) in the `byteCount` bytes
    /// at `baseAddress`.
    ///
    /// - Precondition: `byteCount` is at least ``ImageBuffer/byteCount(format:size:)``
    ///   (checked: a shorter extent stops the process rather than let a kernel read past
    ///   it) and `size` suits `format` (see ``PixelFormat/validate(_:)``).
    @inlinable
    public init(packed format: PixelFormat, size: ImageSize, baseAddress base: UnsafeRawPointer, byteCount: Int,
                owner: (any AnyObject & Sendable)? = nil) {
        // No arrays here: views are made per frame, and the per-frame path allocates nothing.
        let stride0 = format.minimumBytesPerRow(width: size.width)
        let stride1 = format.minimumBytesPerRow(width: size.width, plane: 1)
        let chromaRows = format.rows(height: size.height, plane: 1)
        let start1 = stride0 * size.height
        let start2 = start1 + stride1 * chromaRows
        let end = format.planeCount > 2 ? start2 + stride1 * chromaRows : format.planeCount > 1 ? start2 : start1
        precondition(byteCount >= end, "a packed \(size) \(format.rawValue) image needs \(end) bytes, not \(byteCount)")
        self.init(unchecked: format, size: size, plane0: ImagePlane(baseAddress: base, bytesPerRow: stride0),
                  plane1: format.planeCount > 1 ? ImagePlane(baseAddress: base + start1, bytesPerRow: stride1) : nil,
                  plane2: format.planeCount > 2 ? ImagePlane(baseAddress: base + start2, bytesPerRow: stride1) : nil,
                  owner: owner)
    }

    /// A view over one contiguous block laid out as V4L2 lays out a single-buffer image:
    /// plane 0 with `bytesPerRow`, then NV12's chroma with the same stride, or the Cb and
    /// Cr planes of I420 and I422 with half of it; checked against `byteCount`.
    public init(format: PixelFormat, size: ImageSize, baseAddress: UnsafeRawPointer, byteCount: Int,
                bytesPerRow: Int? = nil, owner: (any AnyObject & Sendable)? = nil) throws(ImageError) {
        try format.validate(size)
        let stride = bytesPerRow ?? format.minimumBytesPerRow(width: size.width)
        var needed = stride * size.height
        var cb: ImagePlane?, cr: ImagePlane?
        if format == .nv12 {
            cb = ImagePlane(baseAddress: baseAddress + needed, bytesPerRow: stride)
            needed += stride * format.rows(height: size.height, plane: 1)
        } else if format.isPlanarYCbCr {
            let chromaStride = (stride + 1) / 2, chromaRows = format.rows(height: size.height, plane: 1)
            cb = ImagePlane(baseAddress: baseAddress + needed, bytesPerRow: chromaStride)
            cr = ImagePlane(baseAddress: baseAddress + needed + chromaStride * chromaRows, bytesPerRow: chromaStride)
            needed += 2 * chromaStride * chromaRows
        }
        guard byteCount >= needed else {
            throw .invalidLayout("\(byteCount) bytes cannot hold a \(size) \(format.rawValue) image (needs \(needed))")
        }
        try self.init(format: format, size: size, plane0: ImagePlane(baseAddress: baseAddress, bytesPerRow: stride),
                      plane1: cb, plane2: cr, owner: owner)
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
    /// First byte of the NV12 chroma plane, or of the Cb plane of I420 and I422; `nil` for
    /// single-plane formats.
    public let plane1: UnsafeMutableRawPointer?
    /// Distance in bytes between rows of plane 1 (unused without one).
    public let bytesPerRow1: Int
    /// First byte of the Cr plane of I420 and I422; `nil` otherwise.
    public let plane2: UnsafeMutableRawPointer?
    /// Distance in bytes between rows of plane 2 (unused without one).
    public let bytesPerRow2: Int

    /// A writable view whose layout the caller has already validated (package-internal: a
    /// view made outside is checked against its memory's extent by
    /// ``init(packed:size:baseAddress:byteCount:)``).
    @inlinable
    package init(unchecked format: PixelFormat, size: ImageSize, plane0: UnsafeMutableRawPointer, bytesPerRow0: Int,
                plane1: UnsafeMutableRawPointer?, bytesPerRow1: Int,
                plane2: UnsafeMutableRawPointer? = nil, bytesPerRow2: Int = 0) {
        self.format = format
        self.size = size
        self.plane0 = plane0
        self.bytesPerRow0 = bytesPerRow0
        self.plane1 = plane1
        self.bytesPerRow1 = bytesPerRow1
        self.plane2 = plane2
        self.bytesPerRow2 = bytesPerRow2
    }

    /// A writable view of a tightly packed image in the `byteCount` bytes at `base` (see
    /// ``ImageView/init(packed:size:baseAddress:byteCount:owner:)``, which checks the extent).
    @inlinable
    public init(packed format: PixelFormat, size: ImageSize, baseAddress base: UnsafeMutableRawPointer, byteCount: Int) {
        let view = ImageView(packed: format, size: size, baseAddress: UnsafeRawPointer(base), byteCount: byteCount)
        self.init(unchecked: format, size: size, plane0: base, bytesPerRow0: view.plane0.bytesPerRow,
                  plane1: view.plane1.map { UnsafeMutableRawPointer(mutating: $0.baseAddress) },
                  bytesPerRow1: view.plane1?.bytesPerRow ?? 0,
                  plane2: view.plane2.map { UnsafeMutableRawPointer(mutating: $0.baseAddress) },
                  bytesPerRow2: view.plane2?.bytesPerRow ?? 0)
    }

    /// Plane `index` (0…2) and its row stride, or `nil` when the format has no such plane.
    @inlinable
    public func plane(_ index: Int) -> (base: UnsafeMutableRawPointer, bytesPerRow: Int)? {
        switch index {
        case 0: return (plane0, bytesPerRow0)
        case 1: return plane1.map { ($0, bytesPerRow1) }
        default: return plane2.map { ($0, bytesPerRow2) }
        }
    }

    /// The same memory, read-only.
    @inlinable
    public var readOnly: ImageView {
        ImageView(unchecked: format, size: size,
                  plane0: ImagePlane(baseAddress: UnsafeRawPointer(plane0), bytesPerRow: bytesPerRow0),
                  plane1: plane1.map { ImagePlane(baseAddress: UnsafeRawPointer($0), bytesPerRow: bytesPerRow1) },
                  plane2: plane2.map { ImagePlane(baseAddress: UnsafeRawPointer($0), bytesPerRow: bytesPerRow2) })
    }
}
