import CRemapKernels
import Foundation
import Testing
@testable import ParallaxCalibration

/// Detection's per-pixel passes in CRemapKernels, at every vector level this CPU runs,
/// against the plain scalar definitions: the same bits.
@Suite("Detection kernels")
struct DetectionKernelTests {
    static let levels: [parallax_simd_level] = [PARALLAX_SIMD_BASELINE, PARALLAX_SIMD_AVX2, PARALLAX_SIMD_AVX512]
        .filter { $0.rawValue <= parallax_map_simd_level().rawValue }

    /// Ends a test whose baseline checks ran but which had no wider level to check: reported as
    /// cancelled, with the reason, instead of passing as if every level had been checked.
    static func endUnlessWiderLevels() throws {
        if levels.count < 2 {
            try Test.cancel("only the portable kernels run here (no AVX2 on this CPU, or PARALLAX_SIMD=baseline): no other level was checked")
        }
    }

    /// Levels 0–255 with texture, on sizes that leave tails after 32 and 16 pixels.
    static func image(width: Int, height: Int, seed: UInt32) -> GrayImage {
        var state = 0x9E37_79B9 &+ seed
        let pixels = (0..<(width * height)).map { i -> Float in
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            return Float((i * 7 + Int(state % 97)) % 256)
        }
        return GrayImage(width: width, height: height, pixels: pixels)
    }

    /// The separable blur as written in the kernels' contract: each output sums its taps from
    /// 0 in kernel order, edge pixels repeated.
    static func referenceBlur(_ image: GrayImage, sigma: Double, truncation: Double) -> GrayImage {
        let radius = max(1, Int((truncation * sigma).rounded(.up)))
        var kernel = (-radius...radius).map { Float(exp(-Double($0 * $0) / (2 * sigma * sigma))) }
        let total = kernel.reduce(0, +)
        kernel = kernel.map { $0 / total }
        let w = image.width, h = image.height
        var rows = [Float](repeating: 0, count: w * h), out = rows
        for y in 0..<h {
            for x in 0..<w {
                var sum: Float = 0
                for t in kernel.indices { sum += kernel[t] * image.pixels[y * w + min(max(x - radius + t, 0), w - 1)] }
                rows[y * w + x] = sum
            }
        }
        for y in 0..<h {
            for x in 0..<w {
                var sum: Float = 0
                for t in kernel.indices { sum += kernel[t] * rows[min(max(y - radius + t, 0), h - 1) * w + x] }
                out[y * w + x] = sum
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    @Test("the blur gives the scalar definition's bits at every level")
    func blurMatchesTheDefinition() throws {
        for (width, height, sigma, truncation) in [(83, 37, 1.5, 2.5), (35, 35, 0.8, 3.0), (640, 20, 1.5, 2.5), (5, 9, 2.0, 3.0)] {
            blurMatchesTheDefinition(width: width, height: height, sigma: sigma, truncation: truncation)
        }
        try Self.endUnlessWiderLevels()
    }

    func blurMatchesTheDefinition(width: Int, height: Int, sigma: Double, truncation: Double) {
        let image = Self.image(width: width, height: height, seed: UInt32(width))
        let expected = Self.referenceBlur(image, sigma: sigma, truncation: truncation)
        #expect(Set(expected.pixels).count > 20)
        for level in Self.levels {
            let blurred = image.gaussianBlurred(sigma: sigma, truncation: truncation, level: level)
            let differing = zip(blurred.pixels, expected.pixels).filter { $0.bitPattern != $1.bitPattern }.count
            #expect(blurred.pixels.count == expected.pixels.count && differing == 0,
                    "level \(level.rawValue): \(differing) pixels differ")
        }
    }

    @Test("the saddle response and its peaks give the scalar definitions at every level")
    func saddleResponseAndPeaksMatchTheDefinition() throws {
        let image = Self.image(width: 101, height: 43, seed: 9).gaussianBlurred(sigma: 1.5, truncation: 2.5)
        let (w, h, border) = (image.width, image.height, 4)
        var expected = [Float](repeating: -1, count: w * h)
        let p = image.pixels
        for y in border..<(h - border) {
            for x in border..<(w - border) {
                let i = y * w + x
                let dxx = p[i - 1] - 2 * p[i] + p[i + 1]
                let dyy = p[i - w] - 2 * p[i] + p[i + w]
                let dxy = (p[i + w + 1] - p[i + w - 1] - p[i - w + 1] + p[i - w - 1]) * 0.25
                let s = dxy * dxy - dxx * dyy
                expected[i] = s > 0 ? s : 0
            }
        }
        let threshold: Float = 2
        var expectedPeaks: [Int32] = []
        for y in (border + 1)..<(h - border - 1) {
            for x in (border + 1)..<(w - border - 1) {
                let i = y * w + x, v = expected[i]
                if v >= threshold, v >= expected[i - 1], v >= expected[i + 1], v >= expected[i - w], v >= expected[i + w] {
                    expectedPeaks.append(Int32(i))
                }
            }
        }
        #expect(expectedPeaks.count > 5)
        for level in Self.levels {
            var response = [Float](repeating: -1, count: w * h)
            parallax_saddle_response(p, &response, w, h, border, level)
            let differing = zip(response, expected).filter { $0.bitPattern != $1.bitPattern }.count
            #expect(differing == 0, "level \(level.rawValue): \(differing) responses differ")
            // Room for all, and room for two: the count is the same either way.
            var peaks = [Int32](repeating: 0, count: w * h)
            let count = parallax_response_peaks(response, w, h, border + 1, threshold, &peaks, peaks.count, level)
            #expect(Array(peaks.prefix(count)) == expectedPeaks, "level \(level.rawValue)")
            var two = [Int32](repeating: 0, count: 2)
            #expect(parallax_response_peaks(response, w, h, border + 1, threshold, &two, 2, level) == expectedPeaks.count)
            #expect(two == Array(expectedPeaks.prefix(2)))
        }
        try Self.endUnlessWiderLevels()
    }

    /// The ring test as the detector defined it in Swift: GrayImage.sample on two circles.
    static func referenceRing(_ image: GrayImage, _ p: SIMD2<Double>) -> Bool {
        for radius in [3.0, 5.0] {
            let values = (0..<16).map { k -> Float in
                let a = 2 * Double.pi * Double(k) / 16
                let d = SIMD2(cos(a), sin(a)) * radius
                return image.sample(p.x + d.x, p.y + d.y)
            }
            var mean: Float = 0
            for v in values { mean += v }
            mean /= 16
            let lo = values.min()!, hi = values.max()!
            if hi - lo < 12 { continue }
            var asymmetry: Float = 0, spread: Float = 0
            for k in 0..<8 { asymmetry += abs(values[k] - values[k + 8]) }
            for v in values { spread += abs(v - mean) }
            if asymmetry > 0.5 * spread { continue }
            let band = 0.15 * (hi - lo)
            let signs = values.compactMap { v -> Int? in v > mean + band ? 1 : (v < mean - band ? -1 : nil) }
            guard let first = signs.first else { continue }
            var changes = 0, previous = first
            for s in signs.dropFirst() where s != previous { changes += 1; previous = s }
            if previous != first { changes += 1 }
            if changes == 4 { return true }
        }
        return false
    }

    @Test("the ring test agrees with its Swift definition at every level, on corners and clutter, near edges too")
    func ringTestMatchesTheDefinition() throws {
        // A chessboard (corners pass) with noise, blurred; positions off the pixel grid.
        let (w, h) = (96, 72)
        var state: UInt32 = 7
        let pixels = (0..<(w * h)).map { i -> Float in
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            let x = i % w, y = i / w
            return ((x / 12 + y / 12) % 2 == 0 ? 40 : 200) + Float(state % 9)
        }
        let image = GrayImage(width: w, height: h, pixels: pixels).gaussianBlurred(sigma: 1.2)
        let ringX = (0..<16).map { cos(2 * Double.pi * Double($0) / 16) }
        let ringY = (0..<16).map { sin(2 * Double.pi * Double($0) / 16) }
        var passed = 0, total = 0
        for level in Self.levels {
            for y in stride(from: -2.0, to: Double(h) + 2, by: 0.73) {
                for x in stride(from: -2.0, to: Double(w) + 2, by: 0.91) {
                    let expected = Self.referenceRing(image, SIMD2(x, y))
                    let got = parallax_ring_test(image.pixels, w, h, x, y, ringX, ringY, 16, level) != 0
                    if got != expected {
                        Issue.record("level \(level.rawValue) at (\(x), \(y)): \(got), defined \(expected)")
                        return
                    }
                    total += 1
                    if expected { passed += 1 }
                }
            }
        }
        // Both outcomes occur: the comparison is not vacuous.
        #expect(passed > 20 && passed < total - 1000)
        try Self.endUnlessWiderLevels()
    }
}
