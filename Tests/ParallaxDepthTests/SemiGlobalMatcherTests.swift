import CDepthKernels
import ParallaxDepth
import ParallaxGeometry
import ParallaxImage
import Testing

/// Deterministic pseudo-random bytes (a 64-bit LCG's high byte): the same images on every run.
func noise(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed &* 6364136223846793005 &+ 1442695040888963407
    return (0..<count).map { _ in
        state = state &* 6364136223846793005 &+ 1442695040888963407
        return UInt8(truncatingIfNeeded: state >> 56)
    }
}

/// A textured pair: the right image is the left shifted by a per-pixel disparity (from
/// `disparity(x, y)`), sampled from a wider texture; pixels with nothing to show keep noise.
func shiftedPair(width: Int, height: Int, seed: UInt64, disparity: (Int, Int) -> Int) -> (left: [UInt8], right: [UInt8]) {
    let margin = 64, textureWidth = width + 2 * margin
    // Smoothed noise: a 3-tap box along x keeps neighbours related, as in a real image.
    let raw = noise(count: textureWidth * height, seed: seed)
    var texture = raw
    for y in 0..<height {
        for x in 1..<(textureWidth - 1) {
            let i = y * textureWidth + x
            texture[i] = UInt8((Int(raw[i - 1]) + 2 * Int(raw[i]) + Int(raw[i + 1])) / 4)
        }
    }
    var left = [UInt8](repeating: 0, count: width * height), right = left
    for y in 0..<height {
        for x in 0..<width {
            left[y * width + x] = texture[y * textureWidth + x + margin]
        }
    }
    // Right pixel xr shows the scene point left pixel xr + d shows: fill by scanning left pixels.
    right = noise(count: width * height, seed: seed ^ 0xFFFF)
    for y in 0..<height {
        for x in 0..<width {
            let xr = x - disparity(x, y)
            if xr >= 0 && xr < width { right[y * width + xr] = left[y * width + x] }
        }
    }
    return (left, right)
}

func gray(_ bytes: [UInt8], width: Int, height: Int) throws -> ImageBuffer {
    try ImageBuffer(format: .gray8, size: ImageSize(width: width, height: height), bytes: bytes)
}

/// The vector levels this CPU runs (every one the kernels have, up to ``SIMDLevel/supported``).
let levels = SIMDLevel.allCases.filter { $0 <= .supported }

@Suite("Semi-global matcher: each stage equals the scalar reference at every vector level")
struct SemiGlobalMatcherStageTests {
    @Test("census codes: each window's bits, rows clamped and columns replicated, from gray and YUYV luma",
          arguments: [(3, 3), (5, 5), (9, 7), (7, 9), (13, 5)])
    func censusEqualsTheReference(window: (Int, Int)) {
        let width = 37, height = 23
        let image = noise(count: width * height, seed: 7)
        let census = SemiGlobalMatcher.CensusWindow(width: window.0, height: window.1)
        let expected = ReferenceMatcher.census(image, width: width, height: height, window: census)
        // The same luma as YUYV: every other byte, chroma between.
        var yuyv = [UInt8](repeating: 0x80, count: 2 * width * height)
        for i in 0..<(width * height) { yuyv[2 * i] = image[i] }
        for level in levels {
            for (bytes, step) in [(image, 1), (yuyv, 2)] {
                var codes = [UInt64](repeating: 0, count: width)
                for y in 0..<height {
                    bytes.withUnsafeBufferPointer { pixels in
                        let luma = parallax_sgm_luma(base: pixels.baseAddress, row_bytes: width * step, step: Int32(step))
                        parallax_sgm_census_row(Int32(level.kernelLevelValue), luma, Int32(width), Int32(height),
                                                Int32(window.0), Int32(window.1), Int32(y), &codes)
                    }
                    #expect(codes == Array(expected[(y * width)..<((y + 1) * width)]), "\(census) row \(y) at \(level), step \(step)")
                }
            }
        }
        // Codes that differ (the comparison runs both ways): more than half of the pixels' count
        // or of the codes the window's bits allow (256 for 3 × 3).
        #expect(Set(expected).count > min(width * height, 1 << min(census.bits, 20)) / 2)
    }

    @Test("costs: Hamming distances to x − dmin − d, the window's bits where the right pixel is outside",
          arguments: [(0, 16), (-5, 32), (7, 16), (-40, 48)])
    func costsEqualTheReference(range: (Int, Int)) {
        let width = 53
        let left = noise(count: width, seed: 3).map { UInt64($0) &* 0x9E37_79B9_7F4A_7C15 }
        let right = noise(count: width, seed: 4).map { UInt64($0) &* 0xC2B2_AE3D_27D4_EB4F }
        let expected = ReferenceMatcher.costs(left: left, right: right, width: width, height: 1, minimumDisparity: range.0,
                                              disparityCount: range.1, noMatch: 62)
        for level in levels {
            var costs = [UInt8](repeating: 0, count: width * range.1)
            parallax_sgm_cost_row(Int32(level.kernelLevelValue), left, right, Int32(width), Int32(range.0), Int32(range.1), 62, &costs)
            #expect(costs.map(Int.init) == expected, "range \(range) at \(level)")
        }
        #expect(expected.contains(62) && expected.contains { $0 < 40 })
    }

    @Test("a path step: the recurrence in bytes equals it in whole integers, up to values of 255")
    func pathStepEqualsTheRecurrence() {
        let D = 48
        for trial in 0..<200 {
            let bytes = noise(count: 2 * D + 4, seed: UInt64(trial))
            let p1 = UInt8(1 + Int(bytes[0]) % 20)
            let p2 = UInt8(Int(p1) + Int(bytes[1]) % 60)
            // Costs up to 255 − P2 (the plan's bound), previous values anywhere in 0…255 above their least.
            let costs = (0..<D).map { UInt8(Int(bytes[2 + $0]) % (256 - Int(p2))) }
            var previous = [UInt8](repeating: 255, count: D + 2)
            for d in 0..<D { previous[d + 1] = trial % 3 == 0 ? UInt8(200 + Int(bytes[2 + D + d]) % 56) : bytes[2 + D + d] }
            let least = previous[1...D].min()!
            var expected = [Int](), expectedSum = [Int]()
            for d in 0..<D {
                var best = Int(previous[d + 1])
                if d > 0 { best = min(best, Int(previous[d]) + Int(p1)) }
                if d < D - 1 { best = min(best, Int(previous[d + 2]) + Int(p1)) }
                best = min(best, Int(least) + Int(p2))
                expected.append(Int(costs[d]) + best - Int(least))
                expectedSum.append(1000 + expected.last!)
            }
            for level in levels {
                var out = [UInt8](repeating: 0, count: D), sum = [UInt16](repeating: 1000, count: D)
                let returned = previous.withUnsafeBufferPointer { prev in
                    parallax_sgm_path_step(Int32(level.kernelLevelValue), costs, prev.baseAddress! + 1, least, p1, p2, Int32(D), &out, &sum)
                }
                #expect(out.map(Int.init) == expected, "trial \(trial) at \(level)")
                #expect(sum.map(Int.init) == expectedSum)
                #expect(Int(returned) == expected.min()!)
            }
        }
    }
}


@Suite("Semi-global matcher: the speckle filter against a walk over each region")
struct SpeckleFilterTests {
    @Test("random maps of plateaus, steps and holes: the same pixels removed, rows top down or bottom up")
    func speckleFilterEqualsTheWalk() {
        let width = 37, height = 23
        for trial in 0..<300 {
            let bytes = noise(count: width * height, seed: UInt64(1000 + trial))
            // Values 0, 16, 32 or 48 sixteenths and holes, in patches of a few pixels, so that
            // regions wind (a run under two runs of one region, a run joining two regions).
            let patch = 1 + trial % 4
            var map = [Int16](repeating: 0, count: width * height)
            for y in 0..<height {
                for x in 0..<width {
                    let b = bytes[(y / patch * patch) * width + x / patch * patch] ^ bytes[y * width + x] & 0x40
                    map[y * width + x] = b % 7 == 0 ? DisparityMap.invalidFixedPoint : Int16(16 * (Int(b) % 4))
                }
            }
            let maximumSize = [1, 5, 20, 60][trial % 4], difference = 16 * (trial % 2)
            var expected = map, values = [Float](repeating: 0, count: map.count)
            let removed = ReferenceMatcher.removeSpeckles(&expected, &values, width: width, height: height,
                                                          maximumSize: maximumSize, maximumDifference: difference)
            for bottomUp: Int32 in [0, 1] {
                var filtered = map
                let count = parallax_sgm_speckle_filter(&filtered, Int32(width), Int32(height), Int32(maximumSize),
                                                        Int32(difference), bottomUp)
                #expect(filtered == expected, "trial \(trial), bottom up \(bottomUp)")
                #expect(Int(count) == removed)
            }
            if trial == 0 { #expect(removed > 0 && removed < width * height / 2, "the filter has work: \(removed)") }
        }
    }
}

@Suite("Semi-global matcher: whole matches against the reference, and what they must find")
struct SemiGlobalMatcherTests {
    typealias Configuration = SemiGlobalMatcher.Configuration

    /// A scene: the image's width (the range must fit in it), each pixel's disparity, and
    /// disparities the map must find.
    struct Scene {
        var width: Int
        var disparity: @Sendable (Int, Int) -> Int
        var found: [Int]
    }

    /// A foreground square at disparity 9 over a background at 4: occlusions, edges, ambiguity.
    static let square = Scene(width: 61, disparity: { x, y in (20..<40).contains(x) && (8..<22).contains(y) ? 9 : 4 },
                              found: [4, 9])

    /// A ramp rising a disparity every `run` columns from `start`, across the search's vector
    /// boundaries (`crossing`: a disparity at a boundary's index), so that the paths' one-step
    /// transitions run between vectors.
    static func ramp(width: Int, start: Int, run: Int, crossing: Int) -> Scene {
        Scene(width: width, disparity: { x, y in y < 20 ? start + x / run : start }, found: [crossing - 1, crossing])
    }

    /// Configurations that between them turn every stage on and off, and run the kernels at
    /// each vector width: 16 disparities a vector (16, 48), 32 (32, 96) and 64 (128), one to
    /// three vectors a pixel.
    static let configurations: [(String, Configuration, Scene)] = [
        ("default five paths", Configuration(disparityCount: 16, threads: 1), square),
        ("four paths, negative range, fixed P2", Configuration(minimumDisparity: -6, disparityCount: 16, paths: .four,
                                                               penaltyAdaptation: nil, threads: 1), square),
        ("eight paths, 5×5, no checks", Configuration(minimumDisparity: 2, disparityCount: 32, census: .fiveByFive, paths: .eight,
                                                      uniquenessPercent: 0, leftRightMaxDifference: nil, speckle: nil, threads: 1), square),
        ("strict checks", Configuration(disparityCount: 16, smallPenalty: 3, largePenalty: 40, penaltyAdaptation: 4,
                                        uniquenessPercent: 30, leftRightMaxDifference: 0,
                                        speckle: .init(maximumRegionSize: 12, maximumDifference: 1), threads: 1), square),
        // Index 64 (the second vector of 64) is disparity 44; 40…47 across the row.
        ("128 disparities from −20, five paths", Configuration(minimumDisparity: -20, disparityCount: 128, threads: 1),
         ramp(width: 150, start: 40, run: 19, crossing: 44)),
        // Index 32 is disparity 32: 28…35.
        ("96 disparities, eight paths", Configuration(disparityCount: 96, paths: .eight, threads: 1),
         ramp(width: 110, start: 28, run: 14, crossing: 32)),
        // Index 16 is disparity 13: 10…15.
        ("48 disparities from −3, four paths, strict uniqueness", Configuration(minimumDisparity: -3, disparityCount: 48, paths: .four,
                                                                             uniquenessPercent: 40, threads: 1),
         ramp(width: 70, start: 10, run: 12, crossing: 13)),
    ]

    @Test("every stage together equals the reference, at every vector level and on one or two threads",
          arguments: 0..<7)
    func matchEqualsTheReference(index: Int) throws {
        let (name, configuration, scene) = Self.configurations[index]
        let width = scene.width, height = 29
        let pair = shiftedPair(width: width, height: height, seed: 11, disparity: scene.disparity)
        let reference = ReferenceMatcher(width: width, height: height, configuration: configuration)
            .match(left: pair.left, right: pair.right)
        let left = try gray(pair.left, width: width, height: height), right = try gray(pair.right, width: width, height: height)
        for level in levels {
            for threads in [1, 2] {
                var c = configuration
                c.threads = threads
                let matcher = try SemiGlobalMatcher(configuration: c, size: left.size, simdLevel: level)
                var map = DisparityMap()
                try left.withView { l in try right.withView { r in try matcher.match(left: l, right: r, into: &map) } }
                #expect(map.fixedPoint == reference.fixedPoint, "\(name) at \(level), \(threads) thread(s)")
                #expect(map.values.elementsEqual(reference.values) { $0 == $1 }, "\(name): Float values at \(level)")
                #expect(map.invalid == reference.invalid, "\(name): invalid \(map.invalid), reference \(reference.invalid)")
            }
        }
        // The maps say something: most pixels valid, with the scene's disparities.
        let valid = reference.fixedPoint.filter { $0 != DisparityMap.invalidFixedPoint }
        #expect(valid.count > width * height / 2, "\(name): \(valid.count) valid")
        for d in scene.found {
            #expect(valid.contains { abs(Int($0) - 16 * d) <= 8 }, "\(name): no pixel at \(d)")
        }
    }

    @Test("the working memory is the sum ParallaxDepth's DocC gives, and no cost volume without bottom-up paths",
          arguments: [(1280, 720, 128, SemiGlobalMatcher.AggregationPaths.five, true), (640, 480, 64, .eight, true),
                      (333, 200, 48, .four, false)])
    func workingMemoryIsTheDocumentedSum(width: Int, height: Int, disparities: Int, paths: SemiGlobalMatcher.AggregationPaths,
                                         speckle: Bool) throws {
        var configuration = Configuration(disparityCount: disparities, paths: paths, threads: 1)
        if !speckle { configuration.speckle = nil }
        let matcher = try SemiGlobalMatcher(configuration: configuration, size: ImageSize(width: width, height: height))
        let W = width, H = height, D = disparities, rounded = (D + 63) / 64 * 64
        // Paths from the row before: straight only with four, straight and both diagonals otherwise.
        let rowPaths = paths == .four ? 1 : 3
        let bottomUp = paths != .five
        let sum = 8 * (3 * W * D + W) + rowPaths * 2 * (64 + W * (rounded + 64)) + (speckle ? 4 * W * H : 0)
            + (bottomUp ? 2 * W * H * D : 0)
        #expect(matcher.workingMemoryBytes >= sum && matcher.workingMemoryBytes <= sum + 64 * W,
                "\(W)×\(H), \(D), \(paths): \(matcher.workingMemoryBytes) bytes against the sum \(sum)")
        if !bottomUp { #expect(matcher.workingMemoryBytes < W * H * D / 4, "no volume of costs or sums") }
    }

    @Test("a pair shifted by whole pixels: exactly that disparity away from the edges, at 2 × 128 disparities")
    func wholePixelShiftIsFoundExactly() throws {
        let width = 200, height = 40
        for shift in [0, 7, 100] {
            let pair = shiftedPair(width: width, height: height, seed: UInt64(shift)) { _, _ in shift }
            let left = try gray(pair.left, width: width, height: height), right = try gray(pair.right, width: width, height: height)
            let matcher = try SemiGlobalMatcher(configuration: Configuration(disparityCount: 128), size: left.size)
            let map = try left.withView { l in try right.withView { r in try matcher.match(left: l, right: r) } }
            // Columns x ≥ shift + 4 and x < width − 4, rows 4…height − 5: both census windows lie
            // inside the shared texture, so the true disparity costs 0 at each such pixel and, the
            // path values at it staying each path's least, wins with every other sum above it (a
            // wrong disparity disagrees on about half of 62 bits): every one is valid and, the
            // parabola's vertex lying within half a disparity of the winner, within 8 sixteenths.
            var checked = 0, off: [String] = []
            for y in 4..<(height - 4) {
                for x in (shift + 4)..<(width - 4) {
                    checked += 1
                    let value = map.fixedPoint[y * width + x]
                    if value == DisparityMap.invalidFixedPoint || abs(Int(value) - 16 * shift) > 8 { off.append("(\(x), \(y)): \(value)") }
                }
            }
            #expect(off.isEmpty, "shift \(shift): \(off.count) of \(checked) pixels off: \(off.prefix(8))")
            #expect(map.minimumDisparity == 0 && map.disparityCount == 128)
        }
    }
}
