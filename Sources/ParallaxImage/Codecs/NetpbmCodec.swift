import ParallaxGeometry

/// PGM and PPM, as netpbm specifies them: a text header (magic, width, height, maxval,
/// separated by whitespace, `#` comments to the end of the line), then the raster: after
/// one whitespace byte, binary samples (P5, P6), or decimal samples separated by
/// whitespace (the plain formats P2, P3, read only).
enum NetpbmCodec {
    static func decode(_ bytes: [UInt8], source: String) throws(ImageError) -> ImageBuffer {
        var cursor = 2
        let channels = bytes[1] == UInt8(ascii: "5") || bytes[1] == UInt8(ascii: "2") ? 1 : 3
        let plain = bytes[1] == UInt8(ascii: "2") || bytes[1] == UInt8(ascii: "3")
        func corrupt(_ reason: String) -> ImageError { .corruptFile(path: source, reason: reason) }
        func nextNumber(_ name: String) throws(ImageError) -> Int {
            // Skip whitespace and comments.
            while cursor < bytes.count {
                let b = bytes[cursor]
                if b == UInt8(ascii: "#") {
                    while cursor < bytes.count, bytes[cursor] != 10, bytes[cursor] != 13 { cursor += 1 }
                } else if b == 32 || (9...13).contains(b) {
                    cursor += 1
                } else {
                    break
                }
            }
            var value = 0, digits = 0
            while cursor < bytes.count, (48...57).contains(bytes[cursor]) {
                value = value * 10 + Int(bytes[cursor] - 48)
                digits += 1
                cursor += 1
                if value > 1 << 24 { throw corrupt("header \(name) is too large") }
            }
            guard digits > 0 else {
                throw corrupt(cursor >= bytes.count ? "file is truncated in the header" : "header has no valid \(name)")
            }
            return value
        }
        let width = try nextNumber("width")
        let height = try nextNumber("height")
        let maxval = try nextNumber("maximum value")
        guard width > 0, height > 0, width <= 1 << 15, height <= 1 << 15 else {
            throw corrupt("image size \(width)x\(height) is not supported")
        }
        guard maxval > 0, maxval < 65536 else { throw corrupt("maximum value \(maxval) is outside 1…65535") }
        if plain {
            let samples = width * height * channels
            // Each sample is at least one digit and one separator (but the last): a header
            // that promises more than the bytes left can hold is refused before any memory
            // is set aside for it (a few bytes could otherwise ask for gigabytes).
            let room = (bytes.count - cursor) / 2 + 1
            guard samples <= room else {
                throw corrupt("file is truncated: the raster needs \(samples) samples, there is room for at most \(room)")
            }
            var pixels = [UInt8](repeating: 0, count: samples)
            for i in 0..<samples {
                let raw: Int
                do {
                    raw = try nextNumber("sample")
                } catch {
                    throw corrupt(cursor >= bytes.count ? "file is truncated: raster has \(i) of \(samples) samples"
                                  : "sample \(i + 1) is not a number")
                }
                guard raw <= maxval else { throw corrupt("sample \(raw) exceeds the maximum value \(maxval)") }
                pixels[i] = UInt8((raw * 255 + maxval / 2) / maxval)
            }
            return try ImageBuffer(format: channels == 1 ? .gray8 : .rgb8, size: ImageSize(width: width, height: height), bytes: pixels)
        }
        guard cursor < bytes.count, bytes[cursor] == 32 || (9...13).contains(bytes[cursor]) else {
            throw corrupt("file is truncated after the header")
        }
        cursor += 1
        let sampleBytes = maxval > 255 ? 2 : 1
        let samples = width * height * channels
        let available = bytes.count - cursor
        guard available >= samples * sampleBytes else {
            throw corrupt("file is truncated: raster has \(available) of \(samples * sampleBytes) bytes")
        }
        var pixels = [UInt8](repeating: 0, count: samples)
        if sampleBytes == 1 && maxval == 255 {
            pixels.withUnsafeMutableBufferPointer { dst in
                bytes.withUnsafeBufferPointer { src in
                    for i in 0..<samples { dst[i] = src[cursor + i] }
                }
            }
        } else {
            // Rescale to 0…255 with rounding (maxval < 255, or 16-bit big-endian samples).
            for i in 0..<samples {
                let raw = sampleBytes == 1 ? Int(bytes[cursor + i])
                    : Int(bytes[cursor + 2 * i]) << 8 | Int(bytes[cursor + 2 * i + 1])
                guard raw <= maxval else { throw corrupt("sample \(raw) exceeds the maximum value \(maxval)") }
                pixels[i] = UInt8((raw * 255 + maxval / 2) / maxval)
            }
        }
        let size = ImageSize(width: width, height: height)
        return try ImageBuffer(format: channels == 1 ? .gray8 : .rgb8, size: size, bytes: pixels)
    }

    /// P5 for gray8, P6 for rgb8 (the caller converts first).
    static func encode(_ image: ImageBuffer) -> [UInt8] {
        let magic = image.format == .gray8 ? "P5" : "P6"
        var out = Array("\(magic)\n\(image.size.width) \(image.size.height)\n255\n".utf8)
        out.append(contentsOf: image.bytes)
        return out
    }
}
