import Foundation
import ParallaxGeometry
import Testing
@testable import ParallaxImage

/// Maps and references for the rectifier tests.
enum RemapFixtures {
    /// A small rig (64 × 48) whose rectification the maps below are carried with.
    static let rectification: StereoRectification = {
        let camera = CameraModel(size: ImageSize(width: 64, height: 48),
                                 intrinsics: CameraIntrinsics(fx: 60, fy: 60, cx: 31.5, cy: 23.5))
        let calibration = StereoCalibration(left: camera, right: camera,
                                            extrinsics: RigidTransform(translation: SIMD3(-0.1, 0, 0)))
        return try! calibration.rectification()
    }()

    /// A map with rotation, scale, barrel distortion, positions off the
    /// source (border blending) and a few undefined entries, on a 1/8-pixel
    /// grid so that derived chroma maps land exactly on OpenCV's 1/32 grid.
    static func warpedMap(output: ImageSize, source: ImageSize, seed: Double = 0) -> RectificationMap {
        var xs = [Float](repeating: .nan, count: output.area), ys = xs
        let cx = Double(source.width) / 2, cy = Double(source.height) / 2
        for v in 0..<output.height {
            for u in 0..<output.width {
                let x = Double(u) - Double(output.width) / 2, y = Double(v) - Double(output.height) / 2
                let r2 = (x * x + y * y) / Double(output.width * output.width)
                let s = 1.08 + 0.25 * r2 + 0.02 * seed
                let a = 0.07 + 0.01 * seed
                let sx = (x * cos(a) - y * sin(a)) * s + cx + 0.37
                let sy = (x * sin(a) + y * cos(a)) * s + cy - 0.21
                // A small undefined patch, like rays a fisheye lens cannot see.
                if u < 3 && v < 2 { continue }
                xs[v * output.width + u] = Float((sx * 8).rounded() / 8)
                ys[v * output.width + u] = Float((sy * 8).rounded() / 8)
            }
        }
        return RectificationMap(outputSize: output, sourceSize: source, sourceX: xs, sourceY: ys)
    }

    static func maps(output: ImageSize = ImageSize(width: 64, height: 48),
                     source: ImageSize = ImageSize(width: 64, height: 48)) -> StereoRectificationMaps {
        StereoRectificationMaps(left: warpedMap(output: output, source: source),
                                right: warpedMap(output: output, source: source, seed: 1),
                                rectification: rectification)
    }

    /// Bilinear reference for one channel grid stored with a pixel step and channel offset.
    static func reference(_ bytes: [UInt8], width: Int, height: Int, step: Int, offset: Int, rowBytes: Int,
                          map: RectificationMap, border: UInt8) -> [UInt8] {
        var plane = [UInt8](repeating: 0, count: width * height)
        for y in 0..<height { for x in 0..<width { plane[y * width + x] = bytes[y * rowBytes + x * step + offset] } }
        return ReferenceRemap.bilinear(plane, channels: 1, map: map, border: border)
    }

    /// The chroma map our convention implies, written out independently of
    /// the engine: 4:2:2 chroma j sits at luma column 2j; 4:2:0 chroma (j, k)
    /// at luma (2j, 2k + ½).
    static func chromaMap(of map: RectificationMap, vertical420: Bool) -> RectificationMap {
        let w = map.outputSize.width / 2, h = vertical420 ? map.outputSize.height / 2 : map.outputSize.height
        var xs = [Float](repeating: .nan, count: w * h), ys = xs
        for k in 0..<h {
            for j in 0..<w {
                if vertical420 {
                    let a = 2 * k * map.outputSize.width + 2 * j, b = a + map.outputSize.width
                    xs[k * w + j] = (map.sourceX[a] + map.sourceX[b]) / 2 / 2
                    ys[k * w + j] = ((map.sourceY[a] + map.sourceY[b]) / 2 - 0.5) / 2
                } else {
                    xs[k * w + j] = map.sourceX[k * map.outputSize.width + 2 * j] / 2
                    ys[k * w + j] = map.sourceY[k * map.outputSize.width + 2 * j]
                }
            }
        }
        let source = ImageSize(width: map.sourceSize.width / 2,
                               height: vertical420 ? map.sourceSize.height / 2 : map.sourceSize.height)
        return RectificationMap(outputSize: ImageSize(width: w, height: h), sourceSize: source, sourceX: xs, sourceY: ys)
    }
}

@Suite("Rectifier")
struct RectifierTests {
    /// The Done-when comparison: OpenCV's sample pair with OpenCV's own
    /// calibration, resampled through the same (fixed-point) maps by
    /// cv2.remap and by the rectifier. See Tests/Fixtures/opencv/remap/make_remap_reference.py.
    @Test("bilinear output matches cv2.remap on OpenCV's sample pair")
    func matchesOpenCV() throws {
        let folder = TestImages.fixtures + "/opencv/remap/"
        var sides: [(source: ImageBuffer, map: RectificationMap, expected: ImageBuffer)] = []
        for side in ["left", "right"] {
            let source = try ImageBuffer(contentsOfFile: folder + "\(side)-source.png")
            let packed = try ImageBuffer(contentsOfFile: folder + "\(side)-map.png")
            let expected = try ImageBuffer(contentsOfFile: folder + "\(side)-opencv.png")
            #expect(packed.format == .rgba8)
            var xs = [Float](repeating: .nan, count: packed.size.area), ys = xs
            let b = packed.bytes
            for i in 0..<packed.size.area {
                let qx = Int16(bitPattern: UInt16(b[4 * i]) | UInt16(b[4 * i + 1]) << 8)
                let qy = Int16(bitPattern: UInt16(b[4 * i + 2]) | UInt16(b[4 * i + 3]) << 8)
                if qx != .min && qy != .min {
                    xs[i] = Float(qx) / 32
                    ys[i] = Float(qy) / 32
                }
            }
            let map = RectificationMap(outputSize: packed.size, sourceSize: source.size, sourceX: xs, sourceY: ys)
            sides.append((source, map, expected))
        }
        let maps = StereoRectificationMaps(left: sides[0].map, right: sides[1].map, rectification: RemapFixtures.rectification)
        let rectifier = Rectifier(maps: maps, interpolation: .bilinear, threads: 2)
        let (left, right) = try rectifier.rectify(left: sides[0].source, right: sides[1].source)
        for (ours, theirs) in [(left, sides[0].expected), (right, sides[1].expected)] {
            let diffs = zip(ours.bytes, theirs.bytes).map { abs(Int($0) - Int($1)) }
            let withinOne = diffs.filter { $0 <= 1 }.count
            #expect(Double(withinOne) / Double(diffs.count) >= 0.999)
            #expect(diffs.max()! <= 2)
            // The arithmetic is OpenCV's, so in fact every level agrees.
            #expect(diffs.filter { $0 != 0 }.count == 0)
            print("rectifier vs cv2.remap: \(diffs.filter { $0 != 0 }.count) of \(diffs.count) levels differ, \(withinOne) within ±1, max difference \(diffs.max() ?? 0)")
        }
    }

    @Test("bilinear equals the plain reference for packed formats", arguments: [PixelFormat.gray8, .rgb8, .bgr8, .rgba8, .bgra8])
    func bilinearInterleaved(format: PixelFormat) throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, threads: 2)
        let left = TestImages.pattern(format, width: 64, height: 48, seed: 1)
        let right = TestImages.pattern(format, width: 64, height: 48, seed: 2)
        let (l, r) = try rectifier.rectify(left: left, right: right)
        let channels = format.interleavedChannels!
        #expect(l.bytes == ReferenceRemap.bilinear(left.bytes, channels: channels, map: maps.left))
        #expect(r.bytes == ReferenceRemap.bilinear(right.bytes, channels: channels, map: maps.right))
    }

    @Test("positions against the right and bottom edges match the reference", arguments: [PixelFormat.rgb8, .bgra8, .gray8])
    func edges(format: PixelFormat) throws {
        // Every output pixel reads near the bottom-right corner: x in the last
        // three columns, y in the last two rows (the 3-byte kernel needs a
        // spare column, so some of these must take the careful path).
        let size = ImageSize(width: 16, height: 8)
        var xs = [Float](), ys = [Float]()
        for v in 0..<8 {
            for u in 0..<16 {
                xs.append(Float(13) + Float(u % 8) * 0.375)
                ys.append(Float(6) + Float(v) * 0.125)
            }
        }
        let map = RectificationMap(outputSize: size, sourceSize: size, sourceX: xs, sourceY: ys)
        let maps = StereoRectificationMaps(left: map, right: map, rectification: RemapFixtures.rectification)
        let image = TestImages.pattern(format, width: 16, height: 8, seed: 11)
        let (l, _) = try Rectifier(maps: maps, threads: 1).rectify(left: image, right: image)
        #expect(l.bytes == ReferenceRemap.bilinear(image.bytes, channels: format.interleavedChannels!, map: map))
    }

    @Test("YUYV, UYVY and NV12 are resampled per plane, chroma on its own grid", arguments: [PixelFormat.yuyv, .uyvy, .nv12])
    func bilinearYUV(format: PixelFormat) throws {
        let size = ImageSize(width: 64, height: 48)
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, threads: 2)
        let left = TestImages.pattern(format, width: 64, height: 48, seed: 3)
        let right = TestImages.pattern(format, width: 64, height: 48, seed: 4)
        let (l, r) = try rectifier.rectify(left: left, right: right)
        for (input, output, map) in [(left, l, maps.left), (right, r, maps.right)] {
            let chroma = RemapFixtures.chromaMap(of: map, vertical420: format == .nv12)
            let w = size.width, h = size.height
            switch format {
            case .nv12:
                let luma = RemapFixtures.reference(input.bytes, width: w, height: h, step: 1, offset: 0, rowBytes: w, map: map, border: 0)
                #expect(Array(output.bytes[0..<w * h]) == luma)
                let chromaBytes = Array(input.bytes[(w * h)...])
                let outChroma = Array(output.bytes[(w * h)...])
                for c in 0..<2 {
                    let expected = RemapFixtures.reference(chromaBytes, width: w / 2, height: h / 2, step: 2, offset: c,
                                                           rowBytes: w, map: chroma, border: 128)
                    let actual = stride(from: c, to: outChroma.count, by: 2).map { outChroma[$0] }
                    #expect(actual == expected)
                }
            default:
                let yOffset = format == .yuyv ? 0 : 1
                let chromaOffsets = format == .yuyv ? [1, 3] : [0, 2]
                let luma = RemapFixtures.reference(input.bytes, width: w, height: h, step: 2, offset: yOffset,
                                                   rowBytes: 2 * w, map: map, border: 0)
                #expect(stride(from: yOffset, to: output.bytes.count, by: 2).map { output.bytes[$0] } == luma)
                for k in chromaOffsets {
                    let expected = RemapFixtures.reference(input.bytes, width: w / 2, height: h, step: 4, offset: k,
                                                           rowBytes: 2 * w, map: chroma, border: 128)
                    #expect(stride(from: k, to: output.bytes.count, by: 4).map { output.bytes[$0] } == expected)
                }
            }
        }
    }

    @Test("nearest picks the source pixel nearest each quantised position", arguments: [PixelFormat.gray8, .rgb8, .bgra8, .yuyv])
    func nearest(format: PixelFormat) throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, interpolation: .nearest, threads: 1)
        let image = TestImages.pattern(format, width: 64, height: 48, seed: 5)
        let (l, _) = try rectifier.rectify(left: image, right: image)
        let step = format.bytesPerPixel, rowBytes = image.bytesPerRow
        // Luma (or every channel of packed formats): compare pixel by pixel.
        let channels = format == .yuyv ? [0] : Array(0..<step)
        for v in 0..<48 {
            for u in 0..<64 {
                let i = v * 64 + u
                let sx = maps.left.sourceX[i], sy = maps.left.sourceY[i]
                for c in channels {
                    var expected: UInt8 = 0
                    if sx.isFinite && sy.isFinite {
                        let x = Int((sx + 0.5).rounded(.down)), y = Int((sy + 0.5).rounded(.down))
                        if x >= 0 && y >= 0 && x < 64 && y < 48 { expected = image.bytes[y * rowBytes + x * step + c] }
                    }
                    #expect(l.bytes[v * rowBytes + u * step + c] == expected)
                }
            }
        }
    }

    @Test("bicubic agrees with a double-precision cubic convolution within one level")
    func bicubic() throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, interpolation: .bicubic, threads: 2)
        let image = TestImages.smooth(.gray8, width: 64, height: 48)
        let (l, _) = try rectifier.rectify(left: image, right: image)
        func kernel(_ t: Double) -> Double {
            let a = -0.75, t = abs(t)
            if t <= 1 { return ((a + 2) * t - (a + 3)) * t * t + 1 }
            if t < 2 { return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a }
            return 0
        }
        var worst = 0
        for i in 0..<(64 * 48) {
            let sx = Double(maps.left.sourceX[i]), sy = Double(maps.left.sourceY[i])
            var expected = 0.0
            if sx.isFinite && sy.isFinite {
                let x0 = Int(sx.rounded(.down)), y0 = Int(sy.rounded(.down))
                for j in -1...2 {
                    for k in -1...2 {
                        let x = x0 + k, y = y0 + j
                        let p = (x >= 0 && y >= 0 && x < 64 && y < 48) ? Double(image.bytes[y * 64 + x]) : 0
                        expected += kernel(sx - Double(x)) * kernel(sy - Double(y)) * p
                    }
                }
            }
            let e = Int(min(max(expected.rounded(), 0), 255))
            worst = max(worst, abs(Int(l.bytes[i]) - e))
        }
        // Weights in 1/2048 (error ≤ 16 · ½/2048 · 255 < 1 level) plus rounding: at most 1 level.
        #expect(worst <= 1)
    }

    @Test("results do not depend on the thread count or on padded row strides")
    func threadsAndStrides() throws {
        let maps = RemapFixtures.maps()
        let image = TestImages.pattern(.bgra8, width: 64, height: 48, seed: 9)
        let (single, _) = try Rectifier(maps: maps, threads: 1).rectify(left: image, right: image)
        let (triple, _) = try Rectifier(maps: maps, threads: 3).rectify(left: image, right: image)
        #expect(single == triple)
        // The same pixels with 24 bytes of padding per row, in and out.
        let rowBytes = 64 * 4 + 24
        var padded = [UInt8](repeating: 0xEE, count: rowBytes * 48)
        for y in 0..<48 { for x in 0..<(64 * 4) { padded[y * rowBytes + x] = image.bytes[y * 256 + x] } }
        var outLeft = [UInt8](repeating: 0, count: rowBytes * 48), outRight = outLeft
        let rectifier = Rectifier(maps: maps, threads: 2)
        try padded.withUnsafeBytes { raw in
            let view = try ImageView(format: .bgra8, size: image.size, baseAddress: raw.baseAddress!, byteCount: raw.count, bytesPerRow: rowBytes)
            try outLeft.withUnsafeMutableBytes { l in
                try outRight.withUnsafeMutableBytes { r in
                    let lo = MutableImageView(unchecked: .bgra8, size: image.size, plane0: l.baseAddress!, bytesPerRow0: rowBytes, plane1: nil, bytesPerRow1: 0)
                    let ro = MutableImageView(unchecked: .bgra8, size: image.size, plane0: r.baseAddress!, bytesPerRow0: rowBytes, plane1: nil, bytesPerRow1: 0)
                    try rectifier.rectify(left: view, right: view, into: lo, ro)
                }
            }
        }
        var unpadded: [UInt8] = []
        for y in 0..<48 { unpadded += outLeft[(y * rowBytes)..<(y * rowBytes + 256)] }
        #expect(unpadded == single.bytes)
    }

    @Test("reused destination buffers are written in place")
    func reusesDestinations() throws {
        let maps = RemapFixtures.maps()
        let rectifier = Rectifier(maps: maps, threads: 2)
        let a = TestImages.pattern(.gray8, width: 64, height: 48, seed: 1)
        let b = TestImages.pattern(.gray8, width: 64, height: 48, seed: 2)
        var left = try ImageBuffer(format: .gray8, size: rectifier.outputSize), right = left
        try a.withView { av in try b.withView { bv in try rectifier.rectify(left: av, right: bv, into: &left, &right) } }
        let first = left.bytes.withUnsafeBufferPointer { $0.baseAddress }
        try b.withView { bv in try a.withView { av in try rectifier.rectify(left: bv, right: av, into: &left, &right) } }
        #expect(left.bytes.withUnsafeBufferPointer { $0.baseAddress } == first)
        #expect(left.bytes == ReferenceRemap.bilinear(b.bytes, channels: 1, map: maps.left))
    }

    @Test("mismatched sizes and formats are errors naming expected and actual")
    func mismatches() throws {
        let rectifier = Rectifier(maps: RemapFixtures.maps(), threads: 1)
        let good = TestImages.pattern(.gray8, width: 64, height: 48)
        let small = TestImages.pattern(.gray8, width: 32, height: 48)
        #expect(throws: ImageError.sizeMismatch(what: "right image", expected: ImageSize(width: 64, height: 48),
                                                actual: ImageSize(width: 32, height: 48))) {
            try rectifier.rectify(left: good, right: small)
        }
        do {
            _ = try rectifier.rectify(left: small, right: good)
            Issue.record("a 32x48 left image was accepted")
        } catch {
            #expect(error.description == "left image: expected 64x48, got 32x48")
        }
        #expect(throws: ImageError.self) {
            try rectifier.rectify(left: good, right: TestImages.pattern(.rgb8, width: 64, height: 48))
        }
    }

    @Test("a rectifier built from a calibration rectifies and converges")
    func fromCalibration() throws {
        let calibration = try StereoCalibration(contentsOfFile: TestImages.fixtures + "/opencv/opencv-sample-calibration.json")
            .resized(to: ImageSize(width: 160, height: 120))
        let plain = try Rectifier(calibration: calibration, threads: 2)
        let converged = try Rectifier(calibration: calibration, convergenceDistance: 0.5, threads: 2)
        #expect(plain.outputSize == ImageSize(width: 160, height: 120))
        // The convergence shift moves the left map along x by half the disparity at 0.5 units.
        let shift = converged.maps.rectification.convergenceShift
        #expect(abs(shift) > 1)
        let image = TestImages.smooth(.gray8, width: 160, height: 120)
        let (l, r) = try converged.rectify(left: image, right: image)
        #expect(l.size == plain.outputSize && r.size == plain.outputSize)
    }
}
