import CImageCodecs
import ParallaxGeometry

/// I420 and I422 (decoded MJPEG) to packed RGB orders through libjpeg-turbo's SIMD colour
/// conversion: JPEG's full-range equations with each chroma sample repeated over its two
/// or four pixels (`TJFLAG_FASTUPSAMPLE`), the same values ``PixelConversion`` computes one
/// pixel at a time, for consumers who want colour pixels of a rectified MJPEG pair.
enum PlanarYCbCrConversion {
    /// Converts `source` (I420 or I422) into `destination` (RGB, BGR, RGBA or BGRA, alpha
    /// 255) of the same size; false when the formats are not those or libjpeg-turbo fails
    /// (the caller then converts pixel by pixel).
    static func convert(_ source: ImageView, into destination: MutableImageView) -> Bool {
        guard source.size == destination.size, let cb = source.plane1, let cr = source.plane2 else { return false }
        let subsampling: TJSAMP
        switch source.format {
        case .i420: subsampling = TJSAMP_420
        case .i422: subsampling = TJSAMP_422
        default: return false
        }
        let pixel: TJPF
        switch destination.format {
        case .rgb8: pixel = TJPF_RGB
        case .bgr8: pixel = TJPF_BGR
        case .rgba8: pixel = TJPF_RGBA
        case .bgra8: pixel = TJPF_BGRA
        default: return false
        }
        guard let handle = tjInitDecompress() else { return false }
        defer { tjDestroy(handle) }
        var planes: [UnsafePointer<UInt8>?] = [source.plane0.baseAddress, cb.baseAddress, cr.baseAddress].map {
            $0.assumingMemoryBound(to: UInt8.self)
        }
        var strides: [Int32] = [Int32(source.plane0.bytesPerRow), Int32(cb.bytesPerRow), Int32(cr.bytesPerRow)]
        let status = tjDecodeYUVPlanes(handle, &planes, &strides, Int32(subsampling.rawValue),
                                       destination.plane0.assumingMemoryBound(to: UInt8.self), Int32(source.size.width),
                                       Int32(destination.bytesPerRow0), Int32(source.size.height), Int32(pixel.rawValue),
                                       Int32(TJFLAG_FASTUPSAMPLE))
        return status == 0
    }
}
