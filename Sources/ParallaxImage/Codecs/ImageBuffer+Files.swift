import ParallaxGeometry

extension ImageBuffer {
    /// Reads an image file, choosing the decoder from the file's content.
    ///
    /// Gray files become ``PixelFormat/gray8``, colour files
    /// ``PixelFormat/rgb8`` (or ``PixelFormat/rgba8`` for PNG with alpha).
    ///
    /// - Throws: ``ImageError/fileAccess(path:reason:)`` when the file cannot
    ///   be read; ``ImageError/corruptFile(path:reason:)`` when it is empty,
    ///   of an unknown type, truncated or corrupt.
    public init(contentsOfFile path: String) throws(ImageError) {
        let bytes: [UInt8]
        do {
            bytes = try FileAccess.readBytes(atPath: path, as: .image)
        } catch {
            throw .fileAccess(path: path, reason: error.reason)
        }
        try self.init(decoding: bytes, source: path)
    }

    /// Decodes an encoded image held in memory; `source` names it in errors.
    ///
    /// - Throws: ``ImageError/corruptFile(path:reason:)``.
    public init(decoding bytes: [UInt8], source: String = "<memory>") throws(ImageError) {
        guard !bytes.isEmpty else { throw .corruptFile(path: source, reason: "file is empty") }
        guard let format = ImageFileFormat(sniffing: bytes) else {
            throw .corruptFile(path: source, reason: "not a PGM, PPM, PNG or JPEG file (unknown magic bytes)")
        }
        switch format {
        case .pgm, .ppm: self = try NetpbmCodec.decode(bytes, source: source)
        case .png: self = try PNGCodec.decode(bytes, source: source)
        case .jpeg: self = try JPEGCodec.decode(bytes, source: source)
        }
    }

    /// Writes the image atomically (temporary file, then rename), choosing
    /// the encoder from the path's extension.
    ///
    /// Pixels are converted to what the file format holds: PNG and PPM store
    /// gray or RGB(A) (BGR orders are swapped, YUV is converted with BT.601: studio
    /// swing, or JPEG's full range for I420 and I422),
    /// PGM stores gray (only gray and YUV images, whose luma is copied), JPEG
    /// stores gray or colour (alpha is dropped).
    ///
    /// - Parameters:
    ///   - path: the file to write; its extension (`.png`, `.jpg`/`.jpeg`, `.pgm`, `.ppm`/`.pnm`,
    ///     any case) chooses the file format. An existing file is replaced.
    ///   - quality: JPEG quality, 1…100 (values outside are clamped); ignored by the other formats.
    /// - Throws: ``ImageError/unsupportedFormat(_:operation:)`` for a pixel format the file
    ///   format cannot hold; ``ImageError/fileAccess(path:reason:)`` for an unknown extension
    ///   or when writing fails (no partial file remains).
    public func write(toFile path: String, quality: Int = 95) throws(ImageError) {
        guard let fileFormat = ImageFileFormat(pathExtensionOf: path) else {
            throw .fileAccess(path: path, reason: "unknown image file extension (use .png, .jpg, .jpeg, .pgm or .ppm)")
        }
        let encoded = try self.encoded(as: fileFormat, quality: quality, destination: path)
        do {
            try FileAccess.writeAtomically(encoded, toPath: path)
        } catch {
            throw .fileAccess(path: path, reason: error.reason)
        }
    }

    /// The image encoded as `fileFormat`; `destination` names it in errors.
    public func encoded(as fileFormat: ImageFileFormat, quality: Int = 95,
                        destination: String = "<memory>") throws(ImageError) -> [UInt8] {
        switch fileFormat {
        case .pgm:
            guard format == .gray8 || format.isYUV else {
                throw .unsupportedFormat(format, operation: "writing PGM \(destination) (gray only; write .ppm or .png for colour)")
            }
            return NetpbmCodec.encode(try converted(to: .gray8))
        case .ppm:
            return NetpbmCodec.encode(try converted(to: .rgb8))
        case .png:
            let target: PixelFormat
            switch format {
            case .gray8: target = .gray8
            case .rgba8, .bgra8: target = .rgba8
            default: target = .rgb8
            }
            return try PNGCodec.encode(try converted(to: target), destination: destination)
        case .jpeg:
            let target: PixelFormat = format == .gray8 ? .gray8 : .rgb8
            return try JPEGCodec.encode(try converted(to: target), quality: quality, destination: destination)
        }
    }
}
