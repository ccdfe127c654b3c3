import CImageCodecs
import ParallaxGeometry

/// JPEG through the TurboJPEG API of libjpeg-turbo (which contains its own
/// libjpeg longjmps and reports errors by return value).
enum JPEGCodec {
    /// Images above this many pixels (48 MiB of RGB) are checked whole before their
    /// memory is allocated.
    static let largeImagePixels = 1 << 24

    static func decode(_ bytes: [UInt8], source: String) throws(ImageError) -> ImageBuffer {
        guard let handle = tjInitDecompress() else {
            throw .corruptFile(path: source, reason: "cannot initialise the JPEG decoder")
        }
        defer { tjDestroy(handle) }
        var width: Int32 = 0, height: Int32 = 0, subsampling: Int32 = 0, colorspace: Int32 = 0
        let headerStatus = bytes.withUnsafeBufferPointer { data in
            tjDecompressHeader3(handle, data.baseAddress, UInt(data.count), &width, &height, &subsampling, &colorspace)
        }
        guard headerStatus == 0 else {
            throw .corruptFile(path: source, reason: "corrupt or truncated JPEG: \(Self.message(handle))")
        }
        guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15 else {
            throw .corruptFile(path: source, reason: "JPEG size \(width)x\(height) is not supported")
        }
        if colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue) {
            throw .corruptFile(path: source, reason: "a CMYK JPEG (as print workflows write them), not a camera image; "
                               + "Parallax reads gray and colour (YCbCr) JPEGs: save it as RGB")
        }
        let isGray = colorspace == Int32(TJCS_GRAY.rawValue)
        let format: PixelFormat = isGray ? .gray8 : .rgb8
        let size = ImageSize(width: Int(width), height: Int(height))
        let pixelFormat = isGray ? TJPF_GRAY : TJPF_RGB
        // Warnings (notably "premature end of data") become errors: a truncated file is not an image.
        let flags = TJFLAG_STOPONWARNING
        if size.area > Self.largeImagePixels {
            // A header of a few bytes can claim 32768 × 32768 pixels (3 GiB). Before setting
            // that much aside, the whole file is decoded at 1/8 scale (every coefficient is
            // still read, into 1/64 of the memory): truncated or corrupt data fails here.
            let small = ImageSize(width: (size.width + 7) / 8, height: (size.height + 7) / 8)
            let channels = isGray ? 1 : 3
            var scratch = [UInt8](repeating: 0, count: small.area * channels)
            let status = bytes.withUnsafeBufferPointer { data in
                scratch.withUnsafeMutableBufferPointer { out in
                    tjDecompress2(handle, data.baseAddress, UInt(data.count), out.baseAddress, Int32(small.width),
                                  Int32(small.width * channels), Int32(small.height), Int32(pixelFormat.rawValue), flags)
                }
            }
            guard status == 0 else {
                throw .corruptFile(path: source, reason: "corrupt or truncated JPEG: \(Self.message(handle)) "
                                   + "(found before decoding its \(size) pixels)")
            }
        }
        var image = try ImageBuffer(format: format, size: size)
        let status = image.withMutableView { view in
            bytes.withUnsafeBufferPointer { data in
                tjDecompress2(handle, data.baseAddress, UInt(data.count),
                              view.plane0.assumingMemoryBound(to: UInt8.self), width, Int32(view.bytesPerRow0), height,
                              Int32(pixelFormat.rawValue), flags)
            }
        }
        guard status == 0 else {
            throw .corruptFile(path: source, reason: "corrupt or truncated JPEG: \(Self.message(handle))")
        }
        return image
    }

    /// Encodes gray8 or rgb8 (the caller converts first), 4:2:0 for colour.
    static func encode(_ image: ImageBuffer, quality: Int, destination: String) throws(ImageError) -> [UInt8] {
        guard image.format == .gray8 || image.format == .rgb8 else {
            throw .unsupportedFormat(image.format, operation: "JPEG encoding")
        }
        guard let handle = tjInitCompress() else {
            throw .fileAccess(path: destination, reason: "cannot initialise the JPEG encoder")
        }
        defer { tjDestroy(handle) }
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let isGray = image.format == .gray8
        let status = image.withView { view in
            tjCompress2(handle, view.plane0.baseAddress.assumingMemoryBound(to: UInt8.self),
                        Int32(image.size.width), Int32(view.plane0.bytesPerRow), Int32(image.size.height),
                        Int32((isGray ? TJPF_GRAY : TJPF_RGB).rawValue), &jpeg, &size,
                        Int32((isGray ? TJSAMP_GRAY : TJSAMP_420).rawValue), Int32(min(max(quality, 1), 100)), 0)
        }
        defer { if let jpeg { tjFree(jpeg) } }
        guard status == 0, let jpeg else {
            throw .fileAccess(path: destination, reason: "JPEG encoding failed: \(Self.message(handle))")
        }
        return Array(UnsafeBufferPointer(start: jpeg, count: Int(size)))
    }

    /// libjpeg-turbo's reason, without the library function it names (`tjDecompress2(): `):
    /// users read what is wrong with their file, not which call noticed.
    private static func message(_ handle: tjhandle) -> String {
        guard let text = tjGetErrorStr2(handle) else { return "unknown error" }
        var reason = Substring(String(cString: text))
        if let call = reason.firstRange(of: "(): "), reason[..<call.lowerBound].allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) {
            reason = reason[call.upperBound...]
        }
        return reason.prefix(1).lowercased() + reason.dropFirst()
    }
}
