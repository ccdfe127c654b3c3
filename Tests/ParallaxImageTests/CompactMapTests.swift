import ParallaxGeometry
import Testing
@testable import ParallaxImage

/// Compact maps (``Rectifier/compactMaps``): entries compiled a chunk of rows at a time for
/// every pair give the same pixels as whole compiled maps.
@Suite("Compact maps")
struct CompactMapTests {
    @Test("compact maps give whole maps' pixels for every format, interpolation, thread count and a live convergence",
          arguments: PixelFormat.allCases)
    func compactEqualsWhole(format: PixelFormat) throws {
        // A width that leaves tails after vector groups, more rows than a band, and the
        // benchmark rig's distorted, turned views (whose corners fall outside the source).
        let size = ImageSize(width: 214, height: 90)
        let calibration = StereoCalibration.benchmarkRig(size: size)
        let left = TestImages.pattern(format, width: size.width, height: size.height, seed: 3)
        let right = TestImages.pattern(format, width: size.width, height: size.height, seed: 4)
        for interpolation in [Interpolation.bilinear, .nearest, .bicubic] {
            // Without a live convergence, and with one 0.5 m away (the sides move by several
            // pixels, so chunks read map rows and columns past the map's edges).
            var unshifted: ImageBuffer?
            for distance in [nil, 0.5] as [Double?] {
                let whole = try Rectifier(calibration: calibration, interpolation: interpolation, threads: 1)
                if let distance { whole.setConvergence(atDistance: distance) }
                let expected = try whole.rectify(left: left, right: right)
                #expect(Set(expected.left.bytes).count > 100)
                if let unshifted { #expect(expected.left != unshifted) } else { unshifted = expected.left }
                for threads in [1, 2] {
                    let compact = try Rectifier(calibration: calibration, interpolation: interpolation, threads: threads,
                                                compactMaps: true)
                    #expect(compact.compactMaps)
                    // On two threads the AVX2 kernels fetch taps the other way (gathers or scalar
                    // loads) from this CPU's choice, so the chunk path runs both.
                    if threads == 2 { compact.avx2TapsByLoads.toggle() }
                    if let distance { compact.setConvergence(atDistance: distance) }
                    // Twice: the chunk tables are refilled, not appended to.
                    for _ in 0..<2 {
                        let got = try compact.rectify(left: left, right: right)
                        let differing = zip(got.left.bytes + got.right.bytes, expected.left.bytes + expected.right.bytes)
                            .filter { $0 != $1 }.count
                        #expect(got.left.bytes.count == expected.left.bytes.count && differing == 0,
                                "\(format) \(interpolation), \(threads) threads, convergence \(distance.map { "\($0) m" } ?? "none"): \(differing) bytes differ")
                    }
                }
            }
        }
    }
}
