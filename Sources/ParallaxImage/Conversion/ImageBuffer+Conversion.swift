import ParallaxGeometry

extension PixelFormat {
    /// True for the luma/chroma formats (``yuyv``, ``uyvy``, ``nv12``, ``i420``, ``i422``).
    public var isYUV: Bool {
        switch self {
        case .yuyv, .uyvy, .nv12, .i420, .i422: return true
        case .gray8, .rgb8, .bgr8, .rgba8, .bgra8: return false
        }
    }
}

extension ImageBuffer {
    /// The image in another pixel format.
    ///
    /// - Gray ↔ luma copies Y unchanged (as `cv::COLOR_YUV2GRAY_*` does), so
    ///   gray → YUV → gray is lossless; chroma of gray is neutral (128).
    /// - RGB ↔ YUV uses ITU-R BT.601 with studio swing (Y 16…235, chroma
    ///   16…240), the encoding of UVC cameras.
    /// - RGB → gray is BT.601 luma, `0.299 R + 0.587 G + 0.114 B`, rounded.
    /// - 4:2:2 → 4:2:0 averages the two chroma rows; 4:2:0 → 4:2:2 repeats them.
    /// - Alpha becomes 255 when added and is dropped when removed.
    ///
    /// - Throws: ``ImageError/invalidSize(_:format:reason:)`` when the size
    ///   does not suit `target` (an odd width for YUYV, an odd height for NV12).
    public func converted(to target: PixelFormat) throws(ImageError) -> ImageBuffer {
        if target == format { return self }
        try target.validate(size)
        var out = try ImageBuffer(format: target, size: size)
        withView { source in
            out.withMutableView { destination in
                PixelConversion.convert(source, into: destination)
            }
        }
        return out
    }
}

/// Pixel-by-pixel conversions between every pair of ``PixelFormat``s.
///
/// These serve files, previews and tests, not the per-frame path (the
/// rectifier reads camera formats directly), so they favour clarity: every
/// conversion goes through one of two pivots, RGBA or YCbCr 4:4:4 rows. The one
/// exception is I420 or I422 (decoded MJPEG) to RGB or BGR orders, which consumers of
/// rectified webcam pairs ask for per pair: libjpeg-turbo's vectorised conversion, giving
/// the same values.
public enum PixelConversion {
    /// Converts `source` into `destination`, which must have the same size.
    ///
    /// - Precondition: equal sizes (a programmer error otherwise).
    public static func convert(_ source: ImageView, into destination: MutableImageView) {
        precondition(source.size == destination.size, "conversion needs equal sizes")
        // Decoded MJPEG to colour: libjpeg-turbo's vectorised conversion, the same values.
        if source.format.isPlanarYCbCr, PlanarYCbCrConversion.convert(source, into: destination) { return }
        convertPixelByPixel(source, into: destination)
    }

    /// ``convert(_:into:)`` one pixel at a time, through the pivots.
    static func convertPixelByPixel(_ source: ImageView, into destination: MutableImageView) {
        let width = source.size.width
        // Studio-swing (packed, NV12) and full-range (planar, JPEG's) YCbCr meet through RGB.
        let sameRange = source.format.isPlanarYCbCr == destination.format.isPlanarYCbCr
        if source.format.isYUV && destination.format.isYUV && sameRange || source.format == .gray8 && destination.format.isYUV
            || source.format.isYUV && destination.format == .gray8 {
            // Stay in YCbCr: no colour round trip.
            var y = [UInt8](repeating: 0, count: width), cb = y, cr = y
            for row in 0..<source.size.height {
                readYCbCr(source, row: row, y: &y, cb: &cb, cr: &cr)
                writeYCbCr(destination, row: row, y: y, cb: cb, cr: cr)
            }
            return
        }
        var rgba = [UInt8](repeating: 0, count: width * 4)
        for row in 0..<source.size.height {
            readRGBA(source, row: row, into: &rgba)
            writeRGBA(destination, row: row, rgba: rgba)
        }
    }

    // MARK: RGBA pivot

    static func readRGBA(_ view: ImageView, row: Int, into rgba: inout [UInt8]) {
        let width = view.size.width
        let line = view.plane0.baseAddress + row * view.plane0.bytesPerRow
        switch view.format {
        case .gray8:
            for x in 0..<width {
                let g = line.load(fromByteOffset: x, as: UInt8.self)
                rgba[4 * x] = g; rgba[4 * x + 1] = g; rgba[4 * x + 2] = g; rgba[4 * x + 3] = 255
            }
        case .rgb8, .bgr8, .rgba8, .bgra8:
            let n = view.format.bytesPerPixel
            let swap = view.format == .bgr8 || view.format == .bgra8
            for x in 0..<width {
                let r = line.load(fromByteOffset: n * x + (swap ? 2 : 0), as: UInt8.self)
                let g = line.load(fromByteOffset: n * x + 1, as: UInt8.self)
                let b = line.load(fromByteOffset: n * x + (swap ? 0 : 2), as: UInt8.self)
                rgba[4 * x] = r; rgba[4 * x + 1] = g; rgba[4 * x + 2] = b
                rgba[4 * x + 3] = n == 4 ? line.load(fromByteOffset: n * x + 3, as: UInt8.self) : 255
            }
        case .yuyv, .uyvy, .nv12, .i420, .i422:
            var y = [UInt8](repeating: 0, count: width), cb = y, cr = y
            readYCbCr(view, row: row, y: &y, cb: &cb, cr: &cr)
            let fullRange = view.format.isPlanarYCbCr
            for x in 0..<width {
                let (r, g, b) = fullRange ? rgb(jpegY: y[x], cb: cb[x], cr: cr[x]) : rgb(y: y[x], cb: cb[x], cr: cr[x])
                rgba[4 * x] = r; rgba[4 * x + 1] = g; rgba[4 * x + 2] = b; rgba[4 * x + 3] = 255
            }
        }
    }

    static func writeRGBA(_ view: MutableImageView, row: Int, rgba: [UInt8]) {
        let width = view.size.width
        let line = view.plane0 + row * view.bytesPerRow0
        switch view.format {
        case .gray8:
            for x in 0..<width {
                line.storeBytes(of: luma(rgba[4 * x], rgba[4 * x + 1], rgba[4 * x + 2]), toByteOffset: x, as: UInt8.self)
            }
        case .rgb8, .bgr8, .rgba8, .bgra8:
            let n = view.format.bytesPerPixel
            let swap = view.format == .bgr8 || view.format == .bgra8
            for x in 0..<width {
                line.storeBytes(of: rgba[4 * x + (swap ? 2 : 0)], toByteOffset: n * x, as: UInt8.self)
                line.storeBytes(of: rgba[4 * x + 1], toByteOffset: n * x + 1, as: UInt8.self)
                line.storeBytes(of: rgba[4 * x + (swap ? 0 : 2)], toByteOffset: n * x + 2, as: UInt8.self)
                if n == 4 { line.storeBytes(of: rgba[4 * x + 3], toByteOffset: n * x + 3, as: UInt8.self) }
            }
        case .yuyv, .uyvy, .nv12, .i420, .i422:
            var y = [UInt8](repeating: 0, count: width), cb = y, cr = y
            let fullRange = view.format.isPlanarYCbCr
            for x in 0..<width {
                let (r, g, b) = (rgba[4 * x], rgba[4 * x + 1], rgba[4 * x + 2])
                (y[x], cb[x], cr[x]) = fullRange ? jpegYCbCr(r: r, g: g, b: b) : ycbcr(r: r, g: g, b: b)
            }
            writeYCbCr(view, row: row, y: y, cb: cb, cr: cr)
        }
    }

    // MARK: YCbCr pivot (full-resolution rows)

    static func readYCbCr(_ view: ImageView, row: Int, y: inout [UInt8], cb: inout [UInt8], cr: inout [UInt8]) {
        let width = view.size.width
        let line = view.plane0.baseAddress + row * view.plane0.bytesPerRow
        switch view.format {
        case .yuyv, .uyvy:
            let (yOffset, cbOffset, crOffset) = view.format == .yuyv ? (0, 1, 3) : (1, 0, 2)
            for x in 0..<width {
                let pair = (x / 2) * 4
                y[x] = line.load(fromByteOffset: 2 * x + yOffset, as: UInt8.self)
                cb[x] = line.load(fromByteOffset: pair + cbOffset, as: UInt8.self)
                cr[x] = line.load(fromByteOffset: pair + crOffset, as: UInt8.self)
            }
        case .nv12:
            guard let chroma = view.plane1 else { return }
            let chromaLine = chroma.baseAddress + (row / 2) * chroma.bytesPerRow
            for x in 0..<width {
                y[x] = line.load(fromByteOffset: x, as: UInt8.self)
                cb[x] = chromaLine.load(fromByteOffset: (x / 2) * 2, as: UInt8.self)
                cr[x] = chromaLine.load(fromByteOffset: (x / 2) * 2 + 1, as: UInt8.self)
            }
        case .i420, .i422:
            guard let cbPlane = view.plane1, let crPlane = view.plane2 else { return }
            let chromaRow = view.format == .i420 ? row / 2 : row
            let cbLine = cbPlane.baseAddress + chromaRow * cbPlane.bytesPerRow
            let crLine = crPlane.baseAddress + chromaRow * crPlane.bytesPerRow
            for x in 0..<width {
                y[x] = line.load(fromByteOffset: x, as: UInt8.self)
                cb[x] = cbLine.load(fromByteOffset: x / 2, as: UInt8.self)
                cr[x] = crLine.load(fromByteOffset: x / 2, as: UInt8.self)
            }
        case .gray8:
            for x in 0..<width { y[x] = line.load(fromByteOffset: x, as: UInt8.self); cb[x] = 128; cr[x] = 128 }
        case .rgb8, .bgr8, .rgba8, .bgra8:
            // Studio swing: ``convert(_:into:)`` sends RGB to the planar (full-range) formats
            // through the RGBA pivot, never here.
            var rgba = [UInt8](repeating: 0, count: width * 4)
            readRGBA(view, row: row, into: &rgba)
            for x in 0..<width { (y[x], cb[x], cr[x]) = ycbcr(r: rgba[4 * x], g: rgba[4 * x + 1], b: rgba[4 * x + 2]) }
        }
    }

    static func writeYCbCr(_ view: MutableImageView, row: Int, y: [UInt8], cb: [UInt8], cr: [UInt8]) {
        let width = view.size.width
        let line = view.plane0 + row * view.bytesPerRow0
        switch view.format {
        case .yuyv, .uyvy:
            let (yOffset, cbOffset, crOffset) = view.format == .yuyv ? (0, 1, 3) : (1, 0, 2)
            for x in 0..<width { line.storeBytes(of: y[x], toByteOffset: 2 * x + yOffset, as: UInt8.self) }
            for pair in 0..<width / 2 {
                // Chroma of a pixel pair: the mean of the two pixels' chroma.
                let b = UInt8((Int(cb[2 * pair]) + Int(cb[2 * pair + 1]) + 1) / 2)
                let r = UInt8((Int(cr[2 * pair]) + Int(cr[2 * pair + 1]) + 1) / 2)
                line.storeBytes(of: b, toByteOffset: 4 * pair + cbOffset, as: UInt8.self)
                line.storeBytes(of: r, toByteOffset: 4 * pair + crOffset, as: UInt8.self)
            }
        case .nv12:
            for x in 0..<width { line.storeBytes(of: y[x], toByteOffset: x, as: UInt8.self) }
            guard let chroma = view.plane1 else { return }
            let chromaLine = chroma + (row / 2) * view.bytesPerRow1
            for pair in 0..<width / 2 {
                // Mean of the 2×2 block: the even row stores its mean, the odd row adds its own and halves.
                let b = (Int(cb[2 * pair]) + Int(cb[2 * pair + 1]) + 1) / 2
                let r = (Int(cr[2 * pair]) + Int(cr[2 * pair + 1]) + 1) / 2
                if row % 2 == 0 {
                    chromaLine.storeBytes(of: UInt8(b), toByteOffset: 2 * pair, as: UInt8.self)
                    chromaLine.storeBytes(of: UInt8(r), toByteOffset: 2 * pair + 1, as: UInt8.self)
                } else {
                    let b0 = Int(chromaLine.load(fromByteOffset: 2 * pair, as: UInt8.self))
                    let r0 = Int(chromaLine.load(fromByteOffset: 2 * pair + 1, as: UInt8.self))
                    chromaLine.storeBytes(of: UInt8((b0 + b + 1) / 2), toByteOffset: 2 * pair, as: UInt8.self)
                    chromaLine.storeBytes(of: UInt8((r0 + r + 1) / 2), toByteOffset: 2 * pair + 1, as: UInt8.self)
                }
            }
        case .i420, .i422:
            for x in 0..<width { line.storeBytes(of: y[x], toByteOffset: x, as: UInt8.self) }
            guard let cbPlane = view.plane1, let crPlane = view.plane2 else { return }
            let chromaRow = view.format == .i420 ? row / 2 : row
            let cbLine = cbPlane + chromaRow * view.bytesPerRow1, crLine = crPlane + chromaRow * view.bytesPerRow2
            // I422: the mean of each pixel pair; I420: of each 2×2 block (as for NV12).
            let secondRow = view.format == .i420 && row % 2 == 1
            for pair in 0..<width / 2 {
                var b = (Int(cb[2 * pair]) + Int(cb[2 * pair + 1]) + 1) / 2
                var r = (Int(cr[2 * pair]) + Int(cr[2 * pair + 1]) + 1) / 2
                if secondRow {
                    b = (Int(cbLine.load(fromByteOffset: pair, as: UInt8.self)) + b + 1) / 2
                    r = (Int(crLine.load(fromByteOffset: pair, as: UInt8.self)) + r + 1) / 2
                }
                cbLine.storeBytes(of: UInt8(b), toByteOffset: pair, as: UInt8.self)
                crLine.storeBytes(of: UInt8(r), toByteOffset: pair, as: UInt8.self)
            }
        case .gray8:
            for x in 0..<width { line.storeBytes(of: y[x], toByteOffset: x, as: UInt8.self) }
        case .rgb8, .bgr8, .rgba8, .bgra8:
            var rgba = [UInt8](repeating: 0, count: width * 4)
            for x in 0..<width {
                let (r, g, b) = rgb(y: y[x], cb: cb[x], cr: cr[x])
                rgba[4 * x] = r; rgba[4 * x + 1] = g; rgba[4 * x + 2] = b; rgba[4 * x + 3] = 255
            }
            writeRGBA(view, row: row, rgba: rgba)
        }
    }

    // MARK: Colour maths (BT.601)

    /// BT.601 luma of full-range RGB, rounded: `(77 R + 150 G + 29 B + 128) / 256`
    /// (the coefficients 0.299, 0.587, 0.114 in 8.8 fixed point).
    @inlinable
    public static func luma(_ r: UInt8, _ g: UInt8, _ b: UInt8) -> UInt8 {
        let r = Int(r), g = Int(g), b = Int(b)
        let sum: Int = 77 * r + 150 * g + 29 * b + 128
        return UInt8(truncatingIfNeeded: sum >> 8)
    }

    /// Studio-swing BT.601 YCbCr of full-range RGB.
    @inlinable
    public static func ycbcr(r: UInt8, g: UInt8, b: UInt8) -> (UInt8, UInt8, UInt8) {
        let r = Int(r), g = Int(g), b = Int(b)
        // Coefficients × 256 of Y = 16 + (65.738 R + 129.057 G + 25.064 B) / 256 and its chroma rows.
        let ySum: Int = 66 * r + 129 * g + 25 * b + 128
        let cbSum: Int = 112 * b - 38 * r - 74 * g + 128
        let crSum: Int = 112 * r - 94 * g - 18 * b + 128
        let y = (ySum >> 8) + 16, cb = (cbSum >> 8) + 128, cr = (crSum >> 8) + 128
        return (clamp(y), clamp(cb), clamp(cr))
    }

    /// Full-range RGB of studio-swing BT.601 YCbCr.
    @inlinable
    public static func rgb(y: UInt8, cb: UInt8, cr: UInt8) -> (UInt8, UInt8, UInt8) {
        // 1.164 (Y − 16) + 1.596 (Cr − 128) and its siblings, × 1024.
        let c: Int = 1192 * (Int(y) - 16) + 512
        let d: Int = Int(cb) - 128, e: Int = Int(cr) - 128
        let rSum: Int = c + 1634 * e
        let gSum: Int = c - 401 * d - 833 * e
        let bSum: Int = c + 2066 * d
        let r = rSum >> 10, g = gSum >> 10, b = bSum >> 10
        return (clamp(r), clamp(g), clamp(b))
    }

    /// Full-range RGB of JPEG's full-range BT.601 YCbCr (JFIF): `R = Y + 1.402 (Cr − 128)`,
    /// `G = Y − 0.344136 (Cb − 128) − 0.714136 (Cr − 128)`, `B = Y + 1.772 (Cb − 128)`, in
    /// 16.16 fixed point and rounded, as libjpeg's colour conversion computes them.
    @inlinable
    public static func rgb(jpegY y: UInt8, cb: UInt8, cr: UInt8) -> (UInt8, UInt8, UInt8) {
        let yy = Int(y), d = Int(cb) - 128, e = Int(cr) - 128
        let r = yy + ((91_881 * e + 32_768) >> 16)
        let g = yy + ((-22_554 * d - 46_802 * e + 32_768) >> 16)
        let b = yy + ((116_130 * d + 32_768) >> 16)
        return (clamp(r), clamp(g), clamp(b))
    }

    /// JPEG's full-range BT.601 YCbCr (JFIF) of full-range RGB, rounded:
    /// `Y = 0.299 R + 0.587 G + 0.114 B`, `Cb = 128 + 0.5 B − 0.168736 R − 0.331264 G`,
    /// `Cr = 128 + 0.5 R − 0.418688 G − 0.081312 B`, in 16.16 fixed point.
    @inlinable
    public static func jpegYCbCr(r: UInt8, g: UInt8, b: UInt8) -> (UInt8, UInt8, UInt8) {
        let r = Int(r), g = Int(g), b = Int(b)
        let y = (19_595 * r + 38_470 * g + 7_471 * b + 32_768) >> 16
        let cb = (-11_059 * r - 21_709 * g + 32_768 * b + (128 << 16) + 32_768) >> 16
        let cr = (32_768 * r - 27_439 * g - 5_329 * b + (128 << 16) + 32_768) >> 16
        return (clamp(y), clamp(cb), clamp(cr))
    }

    @inlinable
    static func clamp(_ v: Int) -> UInt8 { UInt8(min(max(v, 0), 255)) }
}
