import CImageCodecs
import ParallaxGeometry

/// PNG through libpng, whose longjmp-based errors are contained in the C shim.
enum PNGCodec {
    static func decode(_ bytes: [UInt8], source: String) throws(ImageError) -> ImageBuffer {
        var pixels: UnsafeMutablePointer<UInt8>?
        var width: Int32 = 0, height: Int32 = 0, channels: Int32 = 0
        var message = [CChar](repeating: 0, count: Int(PARALLAX_PNG_MESSAGE_CAPACITY))
        let status = bytes.withUnsafeBufferPointer { data in
            parallax_png_decode(data.baseAddress, data.count, &pixels, &width, &height, &channels, &message)
        }
        guard status == 0, let pixels else {
            let reason = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .corruptFile(path: source, reason: "corrupt or truncated PNG: \(reason)")
        }
        defer { parallax_png_free(pixels) }
        let format: PixelFormat
        switch channels {
        case 1: format = .gray8
        case 3: format = .rgb8
        case 4: format = .rgba8
        default: throw .corruptFile(path: source, reason: "PNG decoded to \(channels) channels")
        }
        let count = Int(width) * Int(height) * Int(channels)
        let copy = Array(UnsafeBufferPointer(start: pixels, count: count))
        return try ImageBuffer(format: format, size: ImageSize(width: Int(width), height: Int(height)), bytes: copy)
    }

    /// Encodes gray8, rgb8 or rgba8 (the caller converts first).
    static func encode(_ image: ImageBuffer, destination: String) throws(ImageError) -> [UInt8] {
        guard let channels = image.format.interleavedChannels, image.format == .gray8 || image.format == .rgb8 || image.format == .rgba8 else {
            throw .unsupportedFormat(image.format, operation: "PNG encoding")
        }
        var png: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: Int(PARALLAX_PNG_MESSAGE_CAPACITY))
        // Level 3 of zlib: nearly the size of the default at a fraction of the time.
        let status = image.bytes.withUnsafeBufferPointer { pixels in
            parallax_png_encode(pixels.baseAddress, Int32(image.size.width), Int32(image.size.height), Int32(channels), 3,
                                &png, &size, &message)
        }
        guard status == 0, let png else {
            let reason = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .fileAccess(path: destination, reason: "PNG encoding failed: \(reason)")
        }
        defer { parallax_png_free(png) }
        return Array(UnsafeBufferPointer(start: png, count: size))
    }
}

/// 16-bit gray PNG files, for values beyond 8 bits (disparity maps at KITTI's scale, depth in
/// millimetres).
public enum Gray16PNG {
    /// `samples` (width × height, row by row) encoded as a 16-bit gray PNG.
    ///
    /// - Throws: ``ImageError/invalidLayout(_:)`` when the count is not the size's, and
    ///   ``ImageError/fileAccess(path:reason:)`` naming `destination` when libpng fails.
    public static func encode(_ samples: [UInt16], size: ImageSize, destination: String) throws(ImageError) -> [UInt8] {
        guard size.width > 0, size.height > 0, samples.count == size.width * size.height else {
            throw .invalidLayout("\(samples.count) samples for a \(size) 16-bit image")
        }
        var png: UnsafeMutablePointer<UInt8>?
        var count = 0
        var message = [CChar](repeating: 0, count: Int(PARALLAX_PNG_MESSAGE_CAPACITY))
        let status = samples.withUnsafeBufferPointer { values in
            parallax_png_encode_gray16(values.baseAddress, Int32(size.width), Int32(size.height), 3, &png, &count, &message)
        }
        guard status == 0, let png else {
            let reason = String(decoding: message.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .fileAccess(path: destination, reason: "PNG encoding failed: \(reason)")
        }
        defer { parallax_png_free(png) }
        return Array(UnsafeBufferPointer(start: png, count: count))
    }
}
