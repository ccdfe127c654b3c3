import Foundation
import ParallaxGeometry
import Testing
@testable import ParallaxImage

@Suite("Image codecs")
struct CodecTests {
    @Test("PNG round trip is lossless for gray, RGB and RGBA", arguments: [PixelFormat.gray8, .rgb8, .rgba8])
    func pngRoundTrip(format: PixelFormat) throws {
        let dir = TestImages.scratchDirectory()
        let path = dir + "/image.png"
        let image = TestImages.pattern(format, width: 33, height: 17)
        try image.write(toFile: path)
        let read = try ImageBuffer(contentsOfFile: path)
        #expect(read == image)
    }

    @Test("PNG of BGR and BGRA stores RGB order")
    func pngSwapsBGR() throws {
        let dir = TestImages.scratchDirectory()
        let bgra = TestImages.pattern(.bgra8, width: 8, height: 4)
        try bgra.write(toFile: dir + "/a.png")
        let read = try ImageBuffer(contentsOfFile: dir + "/a.png")
        #expect(read.format == .rgba8)
        #expect(read == (try bgra.converted(to: .rgba8)))
        #expect(read.bytes[0] == bgra.bytes[2] && read.bytes[2] == bgra.bytes[0])
    }

    @Test("PGM and PPM round trips are lossless")
    func netpbmRoundTrip() throws {
        let dir = TestImages.scratchDirectory()
        let gray = TestImages.pattern(.gray8, width: 13, height: 7)
        try gray.write(toFile: dir + "/g.pgm")
        #expect(try ImageBuffer(contentsOfFile: dir + "/g.pgm") == gray)
        let rgb = TestImages.pattern(.rgb8, width: 13, height: 7, seed: 3)
        try rgb.write(toFile: dir + "/c.ppm")
        #expect(try ImageBuffer(contentsOfFile: dir + "/c.ppm") == rgb)
    }

    @Test("reading chooses the decoder by content, not by the file name")
    func sniffsContent() throws {
        let dir = TestImages.scratchDirectory()
        let gray = TestImages.pattern(.gray8, width: 5, height: 5)
        try gray.write(toFile: dir + "/real.png")
        try FileManager.default.moveItem(atPath: dir + "/real.png", toPath: dir + "/lies.jpg")
        #expect(try ImageBuffer(contentsOfFile: dir + "/lies.jpg") == gray)
    }

    @Test("JPEG round trip stays close for gray and colour", arguments: [PixelFormat.gray8, .rgb8])
    func jpegRoundTrip(format: PixelFormat) throws {
        let dir = TestImages.scratchDirectory()
        let image = TestImages.smooth(format, width: 64, height: 48)
        try image.write(toFile: dir + "/i.jpg", quality: 95)
        let read = try ImageBuffer(contentsOfFile: dir + "/i.jpg")
        #expect(read.format == format && read.size == image.size)
        // Quality 95 quantises DCT coefficients by about 1–2 levels; on content
        // without edges the mean error stays below 2 levels.
        let diff = zip(read.bytes, image.bytes).map { abs(Int($0) - Int($1)) }
        #expect(Double(diff.reduce(0, +)) / Double(diff.count) < 2)
    }

    @Test("OpenCV's sample JPEG decodes as 640x480 gray")
    func opencvSample() throws {
        let image = try ImageBuffer(contentsOfFile: TestImages.opencvData + "/left01.jpg")
        #expect(image.format == .gray8)
        #expect(image.size == ImageSize(width: 640, height: 480))
        // A chessboard photo: both dark and bright squares are present.
        #expect(image.bytes.min()! < 60 && image.bytes.max()! > 180)
    }

    @Test("16-bit PNG keeps the high byte; gray + alpha drops alpha; palettes expand")
    func pngVariants() throws {
        let g16 = try ImageBuffer(contentsOfFile: TestImages.fixtures + "/images/gray16.png")
        #expect(g16.format == .gray8 && g16.size == ImageSize(width: 8, height: 4))
        for y in 0..<4 {
            for x in 0..<8 { #expect(g16.bytes[y * 8 + x] == UInt8((x * 4096 + y * 1000) >> 8)) }
        }
        let ga = try ImageBuffer(contentsOfFile: TestImages.fixtures + "/images/gray-alpha.png")
        #expect(ga.format == .gray8)
        var expectedGray: [UInt8] = []
        for y in 0..<3 { for x in 0..<6 { expectedGray.append(UInt8(10 * x + 40 * y)) } }
        #expect(ga.bytes == expectedGray)
        let palette = try ImageBuffer(contentsOfFile: TestImages.fixtures + "/images/palette.png")
        #expect(palette.format == .rgb8)
        let colours: [[UInt8]] = [[255, 0, 0], [0, 255, 0], [0, 0, 255], [255, 255, 255]]
        var expectedRGB: [UInt8] = []
        for y in 0..<2 { for x in 0..<4 { expectedRGB += colours[(x + y) % 4] } }
        #expect(palette.bytes == expectedRGB)
    }

    /// A CMYK JPEG is named for what it is (it used to be called corrupt), and libjpeg-turbo's
    /// own messages reach users without the library call that noticed (`tjDecompress2(): `).
    @Test("a CMYK JPEG is refused as CMYK, and JPEG errors carry no library function names")
    func cmykAndLibraryNames() throws {
        #expect {
            _ = try ImageBuffer(contentsOfFile: TestImages.fixtures + "/images/cmyk.jpg")
        } throws: { error in
            "\(error)".contains("a CMYK JPEG") && "\(error)".contains("save it as RGB") && !"\(error)".contains("corrupt")
        }
        var jpeg = try ImageBuffer(format: .gray8, size: ImageSize(width: 64, height: 64)).encoded(as: .jpeg)
        jpeg.removeLast(jpeg.count / 2)
        #expect {
            _ = try ImageBuffer(decoding: jpeg, source: "half.jpg")
        } throws: { error in
            "\(error)".contains("half.jpg") && !"\(error)".contains("(): ") && !"\(error)".contains("tj")
        }
    }

    @Test("16-bit PGM is rescaled to 8 bits")
    func pgm16() throws {
        let image = try ImageBuffer(contentsOfFile: TestImages.fixtures + "/images/gray16.pgm")
        #expect(image.size == ImageSize(width: 4, height: 2))
        let expected: [UInt8] = (0..<8).map { (i: Int) -> UInt8 in
            let scaled: Int = (7710 * i * 255 + 32767) / 65535
            return UInt8(scaled)
        }
        #expect(image.bytes == expected)
    }

    @Test("plain (ASCII) PGM and PPM are read: P2 and P3, with comments and any whitespace")
    func plainNetpbm() throws {
        let dir = TestImages.scratchDirectory()
        let gray = dir + "/plain.pgm", colour = dir + "/plain.ppm", short = dir + "/short.pgm"
        try FileAccess.writeAtomically("P2\n# made by hand\n3 2\n15\n0 5 15\n  15 10\n0\n", toPath: gray)
        try FileAccess.writeAtomically("P3 2 1 255 255 0 0   0 0 255\n", toPath: colour)
        try FileAccess.writeAtomically("P2 3 2 255 1 2 3\n", toPath: short)
        let g = try ImageBuffer(contentsOfFile: gray)
        #expect(g.format == .gray8 && g.size == ImageSize(width: 3, height: 2))
        #expect(g.bytes == [0, 85, 255, 255, 170, 0])
        let c = try ImageBuffer(contentsOfFile: colour)
        #expect(c.format == .rgb8 && c.bytes == [255, 0, 0, 0, 0, 255])
        expectCorrupt(short)
        #expect(throws: ImageError.self) { try ImageBuffer(contentsOfFile: short) }
    }

    // MARK: Damaged files

    /// Writes `image` as `name`, then rewrites it through `damage`.
    private func damagedFile(_ name: String, _ image: ImageBuffer, _ damage: ([UInt8]) -> [UInt8]) throws -> String {
        let dir = TestImages.scratchDirectory()
        let path = dir + "/" + name
        try image.write(toFile: path)
        let bytes = try FileAccess.readBytes(atPath: path)
        try FileAccess.writeAtomically(damage(bytes), toPath: path)
        return path
    }

    private func expectCorrupt(_ path: String, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            _ = try ImageBuffer(contentsOfFile: path)
            Issue.record("\(path) decoded although damaged", sourceLocation: sourceLocation)
        } catch {
            guard case .corruptFile(let named, _) = error else {
                Issue.record("expected corruptFile, got \(error)", sourceLocation: sourceLocation)
                return
            }
            #expect(named == path, sourceLocation: sourceLocation)
            #expect(error.description.hasPrefix(path), sourceLocation: sourceLocation)
        }
    }

    @Test("truncated files are corruptFile errors naming the file", arguments: ["png", "jpg", "pgm", "ppm"])
    func truncated(ext: String) throws {
        let image = TestImages.smooth(ext == "pgm" ? .gray8 : .rgb8, width: 48, height: 32)
        for keep in [0.3, 0.6, 0.95] {
            let path = try damagedFile("t.\(ext)", image) { Array($0.prefix(Int(Double($0.count) * keep))) }
            expectCorrupt(path)
        }
        // Cut inside the header too.
        expectCorrupt(try damagedFile("h.\(ext)", image) { Array($0.prefix(10)) })
    }

    @Test("corrupt bytes are corruptFile errors naming the file", arguments: ["png", "jpg", "pgm"])
    func corrupt(ext: String) throws {
        let image = TestImages.smooth(ext == "pgm" ? .gray8 : .rgb8, width: 48, height: 32)
        let path = try damagedFile("c.\(ext)", image) { bytes in
            var b = bytes
            switch ext {
            case "png":
                // Flip bits in the middle of the IDAT data: the chunk CRC no longer matches.
                for i in stride(from: b.count / 2, to: b.count / 2 + 16, by: 1) { b[i] ^= 0x5A }
            case "jpg":
                // Replace the start-of-frame marker area: no frame header remains.
                for i in 2..<min(b.count, 400) { b[i] = 0x00 }
            default:
                // A header whose maximum value is not a number.
                b = Array("P5\n48 32\nabc\n".utf8) + b.suffix(48 * 32)
            }
            return b
        }
        expectCorrupt(path)
    }

    /// The reason of the `corruptFile` error decoding `bytes` throws (nil, recorded as an
    /// issue, when it decodes or throws another error).
    private func corruptReason(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        do {
            let image = try ImageBuffer(decoding: bytes, source: "fuzz")
            Issue.record("decoded as \(image.format) \(image.size)", sourceLocation: sourceLocation)
        } catch {
            guard case .corruptFile("fuzz", let reason) = error else {
                Issue.record("expected corruptFile, got \(error)", sourceLocation: sourceLocation)
                return nil
            }
            return reason
        }
        return nil
    }

    /// Found by `make fuzz` (target images, an out-of-memory on `P3 27681 26555 2 ...`): a
    /// plain PGM/PPM header of a few bytes claiming up to 32768 × 32768 pixels set aside
    /// their memory (up to 3 GiB) before reading a sample.
    @Test("a plain PGM or PPM promising more samples than its bytes can hold is refused before allocating")
    func plainNetpbmTooShortForItsHeader() throws {
        for header in ["P3\n32768 32768\n255\n1 2 3", "P2 32768 32768 65535 7", "P2\n3 3\n255\n1 2 3"] {
            let reason = try #require(corruptReason(Array(header.utf8)))
            #expect(reason.contains("there is room for at most"), "\(header.debugDescription): \(reason)")
        }
        // Exactly as many samples as the bytes can hold still decodes: one digit, one space each.
        let image = try ImageBuffer(decoding: Array("P2\n3 1\n9\n1 2 9".utf8))
        #expect(image.bytes == [28, 57, 255])
    }

    /// The JPEG side of the plain PGM/PPM finding above, found by reading the decoder (the
    /// fuzzer had not forged such a header): a JPEG header claiming up to 32768 × 32768
    /// pixels set aside their memory (3 GiB) before the decoder found the data missing.
    @Test("a large JPEG is checked whole before its pixels are allocated; a valid one still decodes")
    func largeJPEGCheckedBeforeAllocating() throws {
        // 4097 × 4097 is just above the 2^24 pixels above which the check runs.
        let side = 4097
        #expect(side * side > JPEGCodec.largeImagePixels)
        let flat = try ImageBuffer(format: .gray8, size: ImageSize(width: side, height: side),
                                   bytes: [UInt8](repeating: 128, count: side * side))
        let jpeg = try flat.encoded(as: .jpeg, quality: 90)
        // A flat 128 is all-zero coefficients after the level shift: it decodes exactly.
        #expect(try ImageBuffer(decoding: jpeg) == flat)
        let truncated = try #require(corruptReason(Array(jpeg.prefix(jpeg.count / 2))))
        #expect(truncated.contains("found before decoding its 4097x4097 pixels"), "\(truncated)")

        // A small JPEG whose frame header is changed to 30000 × 30000: the data ends long before.
        var small = try TestImages.smooth(.rgb8, width: 16, height: 16).encoded(as: .jpeg)
        let frame = try #require((0..<small.count - 9).first { small[$0] == 0xFF && small[$0 + 1] == 0xC0 })
        for offset in [frame + 5, frame + 7] { small[offset] = 0x75; small[offset + 1] = 0x30 }
        let claimed = try #require(corruptReason(small))
        #expect(claimed.contains("found before decoding its 30000x30000 pixels"), "\(claimed)")
    }

    /// A PNG of `width` × `height` 8-bit RGBA whose IDAT chunk holds `data` (CRCs valid).
    private func png(width: UInt32, height: UInt32, data: [UInt8]) -> [UInt8] {
        func crc32(_ bytes: [UInt8]) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for b in bytes {
                crc ^= UInt32(b)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
            }
            return ~crc
        }
        func bigEndian(_ v: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> $0) } }
        func chunk(_ type: String, _ body: [UInt8]) -> [UInt8] {
            let typed = Array(type.utf8) + body
            return bigEndian(UInt32(body.count)) + typed + bigEndian(crc32(typed))
        }
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
            + chunk("IHDR", bigEndian(width) + bigEndian(height) + [8, 6, 0, 0, 0])
            + chunk("IDAT", data) + chunk("IEND", [])
    }

    /// The PNG side of the same finding, found by reading the decoder (libpng's CRCs keep a
    /// fuzzer from forging headers): a PNG of a few dozen bytes claiming 30000 × 30000 RGBA
    /// pixels made it allocate 3.6 GB before reading its data.
    @Test("a PNG whose header claims more pixels than deflate could carry in its bytes is refused before allocating")
    func pngTooShortForItsHeader() throws {
        let reason = try #require(corruptReason(png(width: 30000, height: 30000, data: [0x78, 0x9C, 0x03, 0x00])))
        #expect(reason.contains("file is too short for the image size in its header"), "\(reason)")
        // Below the bound the decoder reads on and finds the data missing.
        let small = try #require(corruptReason(png(width: 4, height: 4, data: [0x78, 0x9C, 0x03, 0x00])))
        #expect(!small.contains("too short for the image size"), "\(small)")
    }

    @Test("empty and unknown files are corruptFile; missing files are fileAccess")
    func unknownAndMissing() throws {
        let dir = TestImages.scratchDirectory()
        try FileAccess.writeAtomically([UInt8](), toPath: dir + "/empty.png")
        expectCorrupt(dir + "/empty.png")
        try FileAccess.writeAtomically(Array("hello, not an image".utf8), toPath: dir + "/text.png")
        expectCorrupt(dir + "/text.png")
        #expect(throws: ImageError.fileAccess(path: dir + "/missing.png", reason: "cannot open: No such file or directory")) {
            try ImageBuffer(contentsOfFile: dir + "/missing.png")
        }
    }

    /// Writes the encoder refuses fail before touching the disk. A write that fails midway is
    /// RectifyCommandTests.aWriteFailingMidwayLeavesTheOldFile (a file-size limit needs a
    /// process of its own).
    @Test("a write refused before it starts leaves the old file and no partial file")
    func refusedWriteTouchesNothing() throws {
        let dir = TestImages.scratchDirectory()
        let first = TestImages.pattern(.gray8, width: 4, height: 4)
        try first.write(toFile: dir + "/x.png")
        // PGM cannot hold colour; the encoder refuses before touching the disk.
        #expect(throws: ImageError.self) { try TestImages.pattern(.rgb8, width: 4, height: 4).write(toFile: dir + "/x.pgm") }
        #expect(throws: ImageError.self) { try first.write(toFile: dir + "/x.tiff") }
        #expect(throws: ImageError.self) { try first.write(toFile: dir + "/no-such-folder/x.png") }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(names == ["x.png"])
        #expect(try ImageBuffer(contentsOfFile: dir + "/x.png") == first)
    }
}
