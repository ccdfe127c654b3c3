import CImageCodecs
import Foundation
import ParallaxGeometry
import Testing
@testable import ParallaxImage

@Suite("MJPEG decoding")
struct MJPEGDecoderTests {
    static let size = ImageSize(width: 64, height: 48)

    /// A textured colour image: a smooth base with a fine checker in luma and colour, so that
    /// every 8×8 block has AC coefficients and chroma differs from block to block.
    static func textured(width: Int = size.width, height: Int = size.height) throws -> ImageBuffer {
        let base = TestImages.smooth(.rgb8, width: width, height: height)
        var bytes = base.bytes
        for y in 0..<height {
            for x in 0..<width where (x / 3 + y / 5) % 2 == 0 {
                let i = (y * width + x) * 3
                bytes[i] = bytes[i] &+ 40
                bytes[i + 2] = bytes[i + 2] &- 30
            }
        }
        return try ImageBuffer(format: .rgb8, size: ImageSize(width: width, height: height), bytes: bytes)
    }

    static func decode(_ jpeg: [UInt8], _ output: MJPEGOutput = .ycbcr, scale: MJPEGScale = .full) throws -> ImageBuffer {
        let decoder = try MJPEGDecoder(output: output, scale: scale)
        return try jpeg.withUnsafeBytes { try decoder.decode($0) }
    }

    /// libjpeg-turbo's own RGB of a JPEG with nearest-neighbour chroma (`TJFLAG_FASTUPSAMPLE`):
    /// the chroma replication ``PixelConversion`` does for I420 and I422, so the two must agree.
    static func libjpegRGB(_ jpeg: [UInt8], size: ImageSize) -> [UInt8] {
        let handle = tjInitDecompress()!
        defer { tjDestroy(handle) }
        var rgb = [UInt8](repeating: 0, count: size.area * 3)
        let status = jpeg.withUnsafeBufferPointer { data in
            rgb.withUnsafeMutableBufferPointer { out in
                tjDecompress2(handle, data.baseAddress, UInt(data.count), out.baseAddress, Int32(size.width), 0,
                              Int32(size.height), Int32(TJPF_RGB.rawValue), Int32(TJFLAG_FASTUPSAMPLE))
            }
        }
        #expect(status == 0)
        return rgb
    }

    @Test("4:2:0 and 4:2:2 JPEGs decode to their own planes (I420, I422); their RGB is libjpeg-turbo's, bit for bit",
          arguments: [JPEGSubsampling.s420, .s422])
    func planesAreTheJPEGs(subsampling: JPEGSubsampling) throws {
        let jpeg = try JPEGEncoder.encode(Self.textured(), quality: 90, subsampling: subsampling)
        let decoded = try Self.decode(jpeg)
        #expect(decoded.format == (subsampling == .s420 ? .i420 : .i422) && decoded.size == Self.size)
        // Independent of the planes' route: libjpeg-turbo's colour conversion (merged
        // upsampling, the same JFIF fixed-point tables) against ours on the planes.
        #expect(try decoded.converted(to: .rgb8).bytes == Self.libjpegRGB(jpeg, size: Self.size))
        // Luma only gives the Y plane exactly.
        let gray = try Self.decode(jpeg, .gray8)
        #expect(gray.format == .gray8 && gray.bytes == Array(decoded.bytes[0..<Self.size.area]))
    }

    /// The planes through TurboJPEG's own YUV-planes call (another route into libjpeg-turbo),
    /// at `size` (the frame's scaled size).
    static func turboPlanes(_ jpeg: [UInt8], format: PixelFormat, size: ImageSize) throws -> [UInt8] {
        let handle = tjInitDecompress()!
        defer { tjDestroy(handle) }
        var image = try ImageBuffer(format: format, size: size)
        let status = image.withMutableView { view in
            jpeg.withUnsafeBufferPointer { data in
                var planes: [UnsafeMutablePointer<UInt8>?] = [view.plane0, view.plane1, view.plane2].map {
                    $0?.assumingMemoryBound(to: UInt8.self)
                }
                var strides: [Int32] = [Int32(view.bytesPerRow0), Int32(view.bytesPerRow1), Int32(view.bytesPerRow2)]
                return tjDecompressToYUVPlanes(handle, data.baseAddress, UInt(data.count), &planes, Int32(size.width),
                                               &strides, Int32(size.height), 0)
            }
        }
        #expect(status == 0)
        return image.bytes
    }

    @Test("planes equal TurboJPEG's at sizes that are not whole blocks (1080 rows: half an MCU row left over); scaled, luma is the scaled gray decode and chroma the full chroma averaged down",
          arguments: [ImageSize(width: 64, height: 48), ImageSize(width: 90, height: 38), ImageSize(width: 200, height: 108),
                      ImageSize(width: 1920, height: 1080)])
    func awkwardSizes(size: ImageSize) throws {
        let image = try Self.textured(width: size.width, height: size.height)
        for subsampling in [JPEGSubsampling.s420, .s422] {
            let jpeg = try JPEGEncoder.encode(image, quality: 85, subsampling: subsampling)
            let full = try Self.decode(jpeg)
            #expect(full.bytes == (try Self.turboPlanes(jpeg, format: full.format, size: size)), "\(size) \(subsampling.rawValue)")
            // A second frame through the same decoder (its arena reused) gives the same planes.
            let decoder = try MJPEGDecoder()
            #expect(try jpeg.withUnsafeBytes { try decoder.decode($0) } == full && (try jpeg.withUnsafeBytes { try decoder.decode($0) }) == full)
            for scale in [MJPEGScale.half, .quarter] {
                let scaledDecoder = try MJPEGDecoder(scale: scale)
                guard let (format, scaled) = try? scaledDecoder.layout(for: try jpeg.withUnsafeBytes { try scaledDecoder.header(of: $0) })
                else { continue }  // an odd scaled size has no planar format
                let mine = try jpeg.withUnsafeBytes { try scaledDecoder.decode($0) }
                #expect(mine.size == scaled && mine.format == format)
                let luma = scaled.area
                #expect(Array(mine.bytes[0..<luma]) == (try Self.decode(jpeg, .gray8, scale: scale)).bytes,
                        "\(size) \(subsampling.rawValue) at 1/\(scale.rawValue): luma")
                // Chroma: libjpeg scales it by half as much (its IDCT at twice the size) and the
                // decoder averages it down; against the full-size chroma box-averaged by the
                // scale, both keep each block's low frequencies: close on average.
                let n = scale.rawValue, chromaRows = format == .i420 ? scaled.height / 2 : scaled.height
                let chromaWidth = scaled.width / 2, fullRows = format == .i420 ? size.height / 2 : size.height
                var total = 0.0, count = 0
                for plane in 0..<2 {
                    for y in 0..<chromaRows {
                        for x in 0..<chromaWidth {
                            var sum = 0
                            for j in 0..<n { for i in 0..<n { sum += Int(full.bytes[size.area + plane * (size.width / 2) * fullRows + (y * n + j) * (size.width / 2) + x * n + i]) } }
                            let value = Int(mine.bytes[luma + plane * chromaWidth * chromaRows + y * chromaWidth + x])
                            total += abs(Double(sum) / Double(n * n) - Double(value))
                            count += 1
                        }
                    }
                }
                #expect(total / Double(count) < 3, "\(size) \(subsampling.rawValue) at 1/\(n): chroma mean difference \(total / Double(count))")
            }
        }
    }

    @Test("a frame without Huffman tables decodes with the standard ones (Annex K), as webcams' MJPEG implies")
    func huffmanlessFrames() throws {
        let jpeg = try JPEGEncoder.encode(Self.textured(), quality: 80)
        // libjpeg-turbo writes the standard tables (no optimisation), so taking every DHT
        // segment out leaves a frame that means the same.
        let stripped = Self.withoutHuffmanTables(jpeg)
        let removed = (0..<(jpeg.count - 1)).filter { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC4 }.count
        #expect(removed > 0 && stripped.count < jpeg.count)
        #expect(try Self.decode(stripped) == Self.decode(jpeg))
    }

    @Test("a gray JPEG asked for in BGR gives three equal channels, the gray decode")
    func grayJPEGToColour() throws {
        let gray = try Self.textured().converted(to: .gray8)
        let jpeg = try JPEGEncoder.encode(gray, quality: 90)
        let luma = try Self.decode(jpeg, .gray8), bgr = try Self.decode(jpeg, .bgr8)
        #expect(bgr.format == .bgr8 && bgr.bytes == luma.bytes.flatMap { [$0, $0, $0] })
    }

    /// libjpeg keeps a decoder's Huffman tables from frame to frame; a frame without tables
    /// must still be read with the standard ones, not with those an earlier frame carried (a
    /// progressive JPEG's optimised tables here).
    @Test("a frame without Huffman tables after one with its own tables is read with the standard tables")
    func standardTablesAfterCustomOnes() throws {
        let image = try Self.textured()
        let baseline = try JPEGEncoder.encode(image, quality: 80)
        let progressive = try Self.progressive(image, quality: 80)
        let stripped = Self.withoutHuffmanTables(baseline)
        let decoder = try MJPEGDecoder()
        let first = try progressive.withUnsafeBytes { try decoder.decode($0) }
        #expect(first.bytes == (try Self.turboPlanes(progressive, format: .i420, size: Self.size)), "the progressive frame")
        let second = try stripped.withUnsafeBytes { try decoder.decode($0) }
        #expect(second == (try Self.decode(baseline)))
    }

    /// A progressive JPEG (TurboJPEG writes optimised Huffman tables for it).
    static func progressive(_ image: ImageBuffer, quality: Int) throws -> [UInt8] {
        let handle = tjInitCompress()!
        defer { tjDestroy(handle) }
        var jpeg: UnsafeMutablePointer<UInt8>?
        var size: UInt = 0
        let status = image.withView { view in
            tjCompress2(handle, view.plane0.baseAddress.assumingMemoryBound(to: UInt8.self), Int32(image.size.width), 0,
                        Int32(image.size.height), Int32(TJPF_RGB.rawValue), &jpeg, &size, Int32(TJSAMP_420.rawValue),
                        Int32(quality), Int32(TJFLAG_PROGRESSIVE))
        }
        defer { tjFree(jpeg) }
        #expect(status == 0)
        return Array(UnsafeBufferPointer(start: jpeg, count: Int(size)))
    }

    /// `jpeg` with every DHT segment taken out (the standard tables it was written with are
    /// then implied).
    static func withoutHuffmanTables(_ jpeg: [UInt8]) -> [UInt8] {
        var stripped: [UInt8] = [], i = 0
        while i < jpeg.count {
            if jpeg[i] == 0xFF, i + 3 < jpeg.count, jpeg[i + 1] == 0xC4 {
                i += 2 + (Int(jpeg[i + 2]) << 8 | Int(jpeg[i + 3]))
                continue
            }
            if jpeg[i] == 0xFF, i + 1 < jpeg.count, jpeg[i + 1] == 0xDA {
                stripped += jpeg[i...]
                break
            }
            stripped.append(jpeg[i])
            i += 1
        }
        return stripped
    }

    @Test("a destination without a plane the format has is refused, never written through")
    func missingPlaneIsRefused() throws {
        let jpeg = try JPEGEncoder.encode(Self.textured(), quality: 90)
        var image = try ImageBuffer(format: .i420, size: Self.size)
        let decoder = try MJPEGDecoder()
        let error = image.withMutableView { full -> MJPEGDecodingError? in
            let noCr = MutableImageView(unchecked: .i420, size: full.size, plane0: full.plane0, bytesPerRow0: full.bytesPerRow0,
                                        plane1: full.plane1, bytesPerRow1: full.bytesPerRow1)
            return jpeg.withUnsafeBytes { bytes -> MJPEGDecodingError? in
                do throws(MJPEGDecodingError) { try decoder.decode(bytes, into: noCr) } catch { return error }
                return nil
            }
        }
        #expect(error?.kind == .unexpectedLayout && error?.reason.contains("plane 2") == true, "\(String(describing: error))")
    }

    @Test("truncated, unterminated, zeroed, empty and damaged frames are errors, never images")
    func badFrames() throws {
        let jpeg = try JPEGEncoder.encode(Self.textured(), quality: 90)
        func kind(_ bytes: [UInt8]) -> MJPEGDecodingError.Kind? {
            do { _ = try Self.decode(bytes); return nil } catch let error as MJPEGDecodingError { return error.kind } catch { return nil }
        }
        #expect(kind(Array(jpeg.prefix(jpeg.count * 6 / 10))) == .corrupt)  // a USB error mid-frame
        #expect(kind(Array(jpeg.dropLast(2))) == .corrupt)  // no EOI marker
        #expect(kind([UInt8](repeating: 0, count: jpeg.count)) == .badHeader)  // a frame of zeros
        #expect(kind([]) == .empty)
        #expect(kind(Array(jpeg.prefix(20))) == .badHeader)  // cut inside the headers
        // A restart marker in the middle of the entropy data, where none belongs.
        var damaged = jpeg
        let scan = try #require((0..<(jpeg.count - 1)).first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xDA })
        let middle = (scan + jpeg.count) / 2
        damaged[middle] = 0xFF
        damaged[middle + 1] = 0xD3
        #expect(kind(damaged) == .corrupt)
        #expect(kind(jpeg) == nil)
    }

    @Test("DCT scaling decodes at 1/2 and 1/4 straight to the smaller size, close to the full image averaged down",
          arguments: [MJPEGScale.half, .quarter])
    func scaling(scale: MJPEGScale) throws {
        let jpeg = try JPEGEncoder.encode(Self.textured(width: 128, height: 96), quality: 95)
        let full = try Self.decode(jpeg, .gray8), small = try Self.decode(jpeg, .gray8, scale: scale)
        let n = scale.rawValue
        #expect(small.size == ImageSize(width: 128 / n, height: 96 / n))
        // The scaled IDCT keeps each block's low frequencies: within a few levels of the
        // box average of the full decode (its own ringing aside), on average.
        var total = 0.0
        for y in 0..<small.size.height {
            for x in 0..<small.size.width {
                var sum = 0
                for j in 0..<n { for i in 0..<n { sum += Int(full.bytes[(y * n + j) * 128 + x * n + i]) } }
                total += abs(Double(sum) / Double(n * n) - Double(small.bytes[y * small.size.width + x]))
            }
        }
        #expect(total / Double(small.size.area) < 4, "mean difference \(total / Double(small.size.area))")
        #expect(MJPEGScale.largestReduction(from: ImageSize(width: 1920, height: 1080),
                                            covering: ImageSize(width: 640, height: 360)) == .half)
        #expect(MJPEGScale.largestReduction(from: ImageSize(width: 1920, height: 1080),
                                            covering: ImageSize(width: 480, height: 270)) == .quarter)
        #expect(MJPEGScale.largestReduction(from: ImageSize(width: 1280, height: 720),
                                            covering: ImageSize(width: 1280, height: 720)) == .full)
        // 1366 / 2 = 683: odd, which no 4:2:0 plane set can be.
        #expect(MJPEGScale.largestReduction(from: ImageSize(width: 1366, height: 768),
                                            covering: ImageSize(width: 640, height: 360)) == .full)
    }

    @Test("a frame of another size than the stream's, or a subsampling with no planar format, is refused by name")
    func unexpectedLayouts() throws {
        let jpeg = try JPEGEncoder.encode(Self.textured(), quality: 90)
        let decoder = try MJPEGDecoder()
        var wrong = try ImageBuffer(format: .i420, size: ImageSize(width: 32, height: 24))
        let error = wrong.withMutableView { view -> MJPEGDecodingError? in
            jpeg.withUnsafeBytes { bytes -> MJPEGDecodingError? in
                do throws(MJPEGDecodingError) { try decoder.decode(bytes, into: view) } catch { return error }
                return nil
            }
        }
        #expect(error?.kind == .unexpectedLayout && error?.reason.contains("not the stream's 32x24 i420") == true, "\(String(describing: error))")
        let full = try JPEGEncoder.encode(Self.textured(), quality: 90, subsampling: .s444)
        #expect(throws: MJPEGDecodingError.self) { try Self.decode(full) }
        #expect(try Self.decode(full, .bgr8).format == .bgr8)
    }
}
