import Foundation
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage
import Testing

@Suite("Semi-global matcher: configurations and inputs it refuses, formats it reads")
struct MatcherInputTests {
    typealias Configuration = SemiGlobalMatcher.Configuration
    let size = ImageSize(width: 64, height: 32)

    /// ParallaxDepth.md: "the default five paths", the 9 × 7 census (62 bits), and "two threads
    /// (the default on a machine with more than one processor)".
    @Test("the documented defaults: five paths, a 9 × 7 census, two threads where there is more than one processor")
    func documentedDefaults() {
        let configuration = SemiGlobalMatcher.Configuration()
        #expect(configuration.paths == .five && configuration.census == .nineBySeven)
        #expect(configuration.threads == (ProcessInfo.processInfo.activeProcessorCount > 1 ? 2 : 1), "\(configuration.threads)")
    }

    @Test("each value out of range is refused, naming the field, the value and what is allowed")
    func outOfRangeValuesAreNamed() {
        let cases: [(Configuration, String, Int)] = [
            (Configuration(disparityCount: 24), "disparityCount", 24),
            (Configuration(disparityCount: 0), "disparityCount", 0),
            (Configuration(disparityCount: 272), "disparityCount", 272),
            (Configuration(minimumDisparity: -2000, disparityCount: 16), "minimumDisparity", -2000),
            (Configuration(disparityCount: 16, census: .init(width: 4, height: 5)), "census", 20),
            (Configuration(disparityCount: 16, census: .init(width: 9, height: 9)), "census", 81),
            (Configuration(disparityCount: 16, largePenalty: 200), "largePenalty", 200),
            (Configuration(disparityCount: 16, smallPenalty: 0), "smallPenalty", 0),
            (Configuration(disparityCount: 16, smallPenalty: 120, largePenalty: 96), "smallPenalty", 120),
            (Configuration(disparityCount: 16, penaltyAdaptation: 0), "penaltyAdaptation", 0),
            (Configuration(disparityCount: 16, uniquenessPercent: 101), "uniquenessPercent", 101),
            (Configuration(disparityCount: 16, leftRightMaxDifference: -1), "leftRightMaxDifference", -1),
            (Configuration(disparityCount: 16, speckle: .init(maximumRegionSize: 0)), "speckle.maximumRegionSize", 0),
            (Configuration(disparityCount: 16, threads: 3), "threads", 3),
        ]
        for (configuration, field, value) in cases {
            #expect {
                _ = try SemiGlobalMatcher(configuration: configuration, size: size)
            } throws: { error in
                guard case let .invalidConfiguration(f, v, allowed) = error as? DepthError else { return false }
                return f == field && v == value && !allowed.isEmpty && "\(error)".contains(field)
            }
        }
        // 9 × 7 has 62 bits: P2 up to 193 is accepted, 194 not.
        #expect(throws: Never.self) { _ = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 16, largePenalty: 193), size: size) }
        #expect(throws: DepthError.self) { _ = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 16, largePenalty: 194), size: size) }
    }

    @Test("a range wider than the image and an empty image are refused")
    func rangesAndSizes() {
        #expect(throws: DepthError.rangeWiderThanImage(minimumDisparity: 0, disparityCount: 128, width: 64)) {
            _ = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 128), size: size)
        }
        #expect(throws: DepthError.rangeWiderThanImage(minimumDisparity: -64, disparityCount: 16, width: 64)) {
            _ = try SemiGlobalMatcher(configuration: Configuration(minimumDisparity: -64, disparityCount: 16), size: size)
        }
        #expect(throws: DepthError.emptyImage(ImageSize(width: 0, height: 10))) {
            _ = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 16), size: ImageSize(width: 0, height: 10))
        }
        let message = "\(DepthError.rangeWiderThanImage(minimumDisparity: 0, disparityCount: 128, width: 64))"
        #expect(message.contains("0…127") && message.contains("64 pixels wide"))
    }

    @Test("pairs of different sizes, of another size than the matcher's, or in colour are refused")
    func pairsThatDoNotFit() throws {
        let matcher = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 16), size: size)
        let gray = try ImageBuffer(format: .gray8, size: size), small = try ImageBuffer(format: .gray8, size: ImageSize(width: 62, height: 32))
        let rgb = try ImageBuffer(format: .rgb8, size: size)
        gray.withView { g in
            small.withView { s in
                #expect(throws: DepthError.sizesDiffer(left: size, right: s.size)) { _ = try matcher.match(left: g, right: s) }
                #expect(throws: DepthError.sizeDiffersFromMatcher(image: s.size, matcher: size)) { _ = try matcher.match(left: s, right: s) }
            }
            _ = rgb.withView { c in
                #expect(throws: DepthError.unsupportedFormat(.rgb8, side: .right)) { _ = try matcher.match(left: g, right: c) }
            }
        }
    }

    @Test("luma straight from YUYV, UYVY, NV12, I420 and I422: the gray pair's disparities, bit for bit")
    func lumaFromEveryYUVFormat() throws {
        let width = 64, height = 32
        let pair = shiftedPair(width: width, height: height, seed: 21) { x, _ in x < 32 ? 5 : 9 }
        let matcher = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 16), size: size)
        let expected = try gray(pair.left, width: width, height: height).withView { l in
            try gray(pair.right, width: width, height: height).withView { r in try matcher.match(left: l, right: r) }
        }
        #expect(expected.validCount > width * height / 2)
        for format in [PixelFormat.yuyv, .uyvy, .nv12, .i420, .i422] {
            let images = try [pair.left, pair.right].map { luma in try Self.image(format, luma: luma, size: size) }
            let map = try images[0].withView { l in try images[1].withView { r in try matcher.match(left: l, right: r) } }
            #expect(map == expected, "\(format.rawValue)")
        }
    }

    /// An image of `format` whose luma is `luma` and whose chroma is a pattern the matcher must ignore.
    static func image(_ format: PixelFormat, luma: [UInt8], size: ImageSize) throws -> ImageBuffer {
        var bytes = [UInt8](repeating: 0, count: ImageBuffer.byteCount(format: format, size: size))
        let chroma = noise(count: bytes.count, seed: 99)
        switch format {
        case .yuyv, .uyvy:
            let lumaFirst = format == .yuyv
            for i in 0..<luma.count {
                bytes[2 * i + (lumaFirst ? 0 : 1)] = luma[i]
                bytes[2 * i + (lumaFirst ? 1 : 0)] = chroma[i]
            }
        default:
            for i in 0..<bytes.count { bytes[i] = i < luma.count ? luma[i] : chroma[i] }
        }
        return try ImageBuffer(format: format, size: size, bytes: bytes)
    }
}
