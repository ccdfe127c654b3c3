import ParallaxGeometry
import Testing
@testable import ParallaxImage

@Suite("Pixel format conversion and previews")
struct ConversionTests {
    /// Colours whose BT.601 studio-swing round trip is known to be close.
    static let swatch: [UInt8] = [0, 0, 0, 255, 255, 255, 255, 0, 0, 0, 255, 0, 0, 0, 255, 200, 120, 40]

    /// ParallaxImage.md: "`ImageBuffer` … is copy-on-write"; its doc: writing into a buffer
    /// that is not shared does not allocate (the same storage, written in place).
    @Test("ImageBuffer is copy-on-write: a copy written leaves the original alone; a buffer held once is written in place")
    func imageBufferIsCopyOnWrite() throws {
        var original = try ImageBuffer(format: .gray8, size: ImageSize(width: 4, height: 2), bytes: Array(0..<8))
        let before = original.withMutableView { UInt(bitPattern: $0.plane0) }
        let again = original.withMutableView { UInt(bitPattern: $0.plane0) }
        #expect(before == again, "a buffer held once moved its storage when written")
        var copy = original
        let copied = copy.withMutableView { view -> UInt in
            view.plane0.storeBytes(of: 200, as: UInt8.self)
            return UInt(bitPattern: view.plane0)
        }
        #expect(original.bytes == Array(0..<8) && copy.bytes == [200] + Array(1..<8))
        #expect(copied != before, "the copy was written in the original's storage")
        #expect(original.withMutableView { UInt(bitPattern: $0.plane0) } == before)
    }

    @Test("every format converts to every other and back to RGB within the maths' rounding",
          arguments: PixelFormat.allCases)
    func roundTripThrough(format: PixelFormat) throws {
        // Pairs of equal pixels, so 4:2:2 / 4:2:0 chroma subsampling loses nothing.
        var rgb: [UInt8] = []
        for c in 0..<6 { for _ in 0..<2 { rgb += Self.swatch[(3 * c)..<(3 * c + 3)] } }
        rgb += rgb  // two identical rows for NV12
        let image = try ImageBuffer(format: .rgb8, size: ImageSize(width: 12, height: 2), bytes: rgb)
        let back = try image.converted(to: format).converted(to: .rgb8)
        let worst = zip(back.bytes, image.bytes).map { abs(Int($0) - Int($1)) }.max()!
        switch format {
        case .rgb8, .bgr8, .rgba8, .bgra8:
            #expect(worst == 0)
        case .gray8:
            // Gray keeps luma only: check luma survives.
            let luma = try back.converted(to: .gray8), original = try image.converted(to: .gray8)
            #expect(zip(luma.bytes, original.bytes).allSatisfy { abs(Int($0) - Int($1)) <= 1 })
        case .yuyv, .uyvy, .nv12:
            // 8-bit studio swing quantises each channel to ~1.16 levels; the
            // inverse matrix spreads a half-step error to at most ~3 levels.
            #expect(worst <= 3)
        case .i420, .i422:
            // Full range: Y, Cb, Cr each rounded by ≤ ½; back to RGB the largest row of the
            // inverse is B = Y + 1.772 (Cb − 128): ½ + 1.772 · ½ + ½ (its own rounding) = 1.89 < 2.
            #expect(worst <= 2)
        }
    }

    @Test("I420 and I422 to RGB, BGR, RGBA and BGRA: libjpeg-turbo's vectorised conversion gives the pixel-by-pixel values",
          arguments: [PixelFormat.i420, .i422])
    func planarToColourIsThePixelByPixelConversion(format: PixelFormat) throws {
        // Every byte of every plane varies, so any chroma misplaced or any rounding off shows.
        let source = TestImages.pattern(format, width: 98, height: 54, seed: 5)
        for target in [PixelFormat.rgb8, .bgr8, .rgba8, .bgra8] {
            var fast = try ImageBuffer(format: target, size: source.size), slow = fast
            var used = false
            source.withView { view in
                fast.withMutableView { used = PlanarYCbCrConversion.convert(view, into: $0) }
                slow.withMutableView { PixelConversion.convertPixelByPixel(view, into: $0) }
            }
            #expect(used, "\(format) → \(target) took the fast path")
            #expect(fast == slow, "\(format) → \(target)")
            #expect(try source.converted(to: target) == slow)
        }
    }

    @Test("BGR and RGB orders swap; alpha is 255 when added", arguments: [PixelFormat.bgr8, .bgra8, .rgba8])
    func channelOrder(format: PixelFormat) throws {
        let image = try ImageBuffer(format: .rgb8, size: ImageSize(width: 1, height: 1), bytes: [10, 20, 30])
        let converted = try image.converted(to: format)
        switch format {
        case .bgr8: #expect(converted.bytes == [30, 20, 10])
        case .bgra8: #expect(converted.bytes == [30, 20, 10, 255])
        default: #expect(converted.bytes == [10, 20, 30, 255])
        }
    }

    @Test("YUV to gray copies luma exactly; gray to YUV has neutral chroma",
          arguments: [PixelFormat.yuyv, .uyvy, .nv12, .i420, .i422])
    func lumaCopies(format: PixelFormat) throws {
        let gray = TestImages.pattern(.gray8, width: 8, height: 4)
        let yuv = try gray.converted(to: format)
        #expect(try yuv.converted(to: .gray8) == gray)
        let bytes = yuv.bytes
        switch format {
        case .yuyv: #expect(stride(from: 1, to: bytes.count, by: 2).allSatisfy { bytes[$0] == 128 })
        case .uyvy: #expect(stride(from: 0, to: bytes.count, by: 2).allSatisfy { bytes[$0] == 128 })
        default: #expect(bytes[32...].allSatisfy { $0 == 128 })
        }
    }

    @Test("studio-swing BT.601 reference colours")
    func bt601() {
        #expect(PixelConversion.ycbcr(r: 0, g: 0, b: 0) == (16, 128, 128))
        #expect(PixelConversion.ycbcr(r: 255, g: 255, b: 255) == (235, 128, 128))
        #expect(PixelConversion.rgb(y: 235, cb: 128, cr: 128) == (255, 255, 255))
        #expect(PixelConversion.rgb(y: 16, cb: 128, cr: 128) == (0, 0, 0))
        // Pure red: Y 81, Cb 90, Cr 240 in BT.601 tables.
        let (y, cb, cr) = PixelConversion.ycbcr(r: 255, g: 0, b: 0)
        #expect(abs(Int(y) - 81) <= 1 && abs(Int(cb) - 90) <= 1 && abs(Int(cr) - 240) <= 1)
    }

    @Test("4:2:2 to 4:2:0 averages the two chroma rows")
    func chromaRows() throws {
        // 2x2 YUYV: row 0 chroma (100, 200), row 1 chroma (110, 50).
        let yuyv = try ImageBuffer(format: .yuyv, size: ImageSize(width: 2, height: 2),
                                   bytes: [16, 100, 17, 200, 18, 110, 19, 50])
        let nv12 = try yuyv.converted(to: .nv12)
        #expect(nv12.bytes == [16, 17, 18, 19, 105, 125])
    }

    @Test("side-by-side preview places both images and draws row guides")
    func preview() throws {
        let left = try ImageBuffer(format: .gray8, size: ImageSize(width: 4, height: 8), bytes: [UInt8](repeating: 200, count: 32))
        let right = try ImageBuffer(format: .gray8, size: ImageSize(width: 4, height: 8), bytes: [UInt8](repeating: 40, count: 32))
        let preview = try StereoPreview.sideBySide(left: left, right: right, guideSpacing: 4)
        #expect(preview.size == ImageSize(width: 8, height: 8) && preview.format == .rgb8)
        func pixel(_ x: Int, _ y: Int) -> [UInt8] { Array(preview.bytes[((y * 8 + x) * 3)..<((y * 8 + x) * 3 + 3)]) }
        #expect(pixel(0, 0) == [200, 200, 200] && pixel(7, 0) == [40, 40, 40])
        // Guides at rows 2 and 6, across both halves: green tint.
        #expect(pixel(1, 2) == [100, 228, 100] && pixel(6, 6) == [20, 148, 20])
        let stacked = try StereoPreview.sideBySide(left: left, right: right, layout: .vertical, guideSpacing: 4)
        #expect(stacked.size == ImageSize(width: 4, height: 16))
        #expect(throws: ImageError.self) {
            try StereoPreview.sideBySide(left: left, right: TestImages.pattern(.gray8, width: 4, height: 6))
        }
    }

    @Test("anaglyph puts the left luma in red and the right luma in green and blue")
    func anaglyph() throws {
        let left = TestImages.pattern(.rgb8, width: 6, height: 4, seed: 1)
        let right = TestImages.pattern(.bgra8, width: 6, height: 4, seed: 2)
        let image = try StereoPreview.anaglyph(left: left, right: right)
        let l = try left.converted(to: .gray8), r = try right.converted(to: .gray8)
        for i in 0..<24 {
            #expect(image.bytes[3 * i] == l.bytes[i])
            #expect(image.bytes[3 * i + 1] == r.bytes[i] && image.bytes[3 * i + 2] == r.bytes[i])
        }
    }
}
