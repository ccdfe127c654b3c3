import ParallaxGeometry
import ParallaxImage
import Testing

/// Moving the convergence plane on a running rectifier: a whole-sample shift of each
/// output, the same pixels as maps built with the shifted principal points.
@Suite("Live convergence: whole-sample output shifts without rebuilding the maps")
struct LiveConvergenceTests {
    static let size = ImageSize(width: 160, height: 120)
    static func calibration() throws -> StereoCalibration {
        try StereoCalibration(contentsOfFile: TestImages.fixtures + "/opencv/opencv-sample-calibration.json").adapted(to: size)
    }

    /// Half the disparity a point `distance` away has in the classic rectification:
    /// f·B/(2Z), B being the length of the calibration's translation (the rectifying
    /// rotation turns it onto the baseline axis). Each image moves by this, rounded to
    /// whole steps.
    static func halfDisparity(atDistance distance: Double, calibration: StereoCalibration, focalLength: Double) -> Double {
        let t = calibration.extrinsics.translation
        return focalLength * (t * t).sum().squareRoot() / (2 * distance)
    }

    /// Byte `x` (in samples of `stride` bytes, channel `c`) of row `y` of plane 0.
    static func sample(_ image: ImageBuffer, _ x: Int, _ y: Int, stride: Int, channel c: Int) -> UInt8 {
        image.bytes[y * image.bytesPerRow + x * stride + c]
    }

    @Test("a live shift is the unshifted output moved by whole samples, border where nothing moved in",
          arguments: [PixelFormat.gray8, .rgb8, .yuyv, .uyvy, .nv12])
    func shiftIsATranslation(format: PixelFormat) throws {
        let calibration = try Self.calibration()
        let rectifier = try Rectifier(calibration: calibration, threads: 2)
        let image = TestImages.smooth(format, width: Self.size.width, height: Self.size.height)
        let (plainLeft, plainRight) = try rectifier.rectify(left: image, right: image)
        // A distance whose disparity is several pixels at this size: half of it is 3.09 px,
        // so one-sample formats move by 3 and two-sample ones by 4.
        let distance = 70.0
        rectifier.setConvergence(atDistance: distance)
        let applied = rectifier.rectification(for: format)
        let step = Double(rectifier.convergenceStep(for: format))
        let k = applied.convergenceShift
        let half = Self.halfDisparity(atDistance: distance, calibration: calibration,
                                      focalLength: rectifier.maps.rectification.focalLength)
        #expect(k == (half / step).rounded() * step, "shift \(k), half the disparity \(half) in steps of \(step)")
        #expect(k == (step == 1 ? 3 : 4))
        // P1 and P2 moved by ∓k, and zero disparity is where the applied shift puts it.
        let base = rectifier.maps.rectification
        #expect(applied.p1[0, 2] == base.p1[0, 2] - k && applied.p2[0, 2] == base.p2[0, 2] + k)
        #expect(abs(applied.disparity(atDistance: try #require(applied.convergenceDistance))) < 1e-9)
        // Within one step of disparity of the distance asked for.
        #expect(abs(applied.disparity(atDistance: distance)) <= step + 1e-9)
        let (left, right) = try rectifier.rectify(left: image, right: image)
        let shift = Int(k)
        // Luma (or the packed samples) of plane 0: stride, channels and the luma's byte per format.
        let (stride, channels, lumaByte): (Int, Int, Int) = switch format {
        case .rgb8: (3, 3, 0)
        case .yuyv: (2, 1, 0)
        case .uyvy: (2, 1, 1)
        default: (1, 1, 0)
        }
        var checked = 0
        for y in 0..<Self.size.height {
            for x in 0..<Self.size.width {
                for c in lumaByte..<(lumaByte + channels) {
                    // Right moved by +k, left by −k; outside, the border (0 for luma and RGB).
                    let r = x - shift, l = x + shift
                    let expectedRight = r >= 0 && r < Self.size.width ? Self.sample(plainRight, r, y, stride: stride, channel: c) : 0
                    let expectedLeft = l >= 0 && l < Self.size.width ? Self.sample(plainLeft, l, y, stride: stride, channel: c) : 0
                    #expect(Self.sample(right, x, y, stride: stride, channel: c) == expectedRight)
                    #expect(Self.sample(left, x, y, stride: stride, channel: c) == expectedLeft)
                    checked += 1
                }
            }
        }
        #expect(checked == Self.size.area * channels)
    }

    @Test("the shifted pixels equal maps built with the shifted principal points, pixel for pixel")
    func shiftEqualsShiftedMaps() throws {
        let calibration = try Self.calibration()
        let rectifier = try Rectifier(calibration: calibration, threads: 2)
        rectifier.setConvergence(atDistance: 100)
        let applied = rectifier.rectification(for: .gray8)
        let exact = Rectifier(maps: calibration.rectificationMaps(for: applied), threads: 2)
        let k = Int(applied.convergenceShift)
        try #require(k == 2)
        // The float maps themselves: the rebuilt left map at u is the unshifted one at u + k,
        // the right one at u − k. Along a row the ray is accumulated from the row's start, so
        // the two could differ in the last bits; they do not here, and the test keeps it so.
        let w = Self.size.width
        var floatsCompared = 0, floatsDiffering = 0, worstFloat = 0.0
        for (rebuilt, original, offset) in [(exact.maps.left, rectifier.maps.left, k), (exact.maps.right, rectifier.maps.right, -k)] {
            for y in 0..<Self.size.height {
                for x in max(0, -offset)..<min(w, w - offset) {
                    let a = try #require(rebuilt.source(x: x, y: y)), b = try #require(original.source(x: x + offset, y: y))
                    let d = max(abs(Double(a.x) - Double(b.x)), abs(Double(a.y) - Double(b.y)))
                    worstFloat = max(worstFloat, d)
                    if d != 0 { floatsDiffering += 1 }
                    floatsCompared += 1
                }
            }
        }
        // A textured image, so that any entry rounding the other way would change pixels.
        let image = TestImages.pattern(.gray8, width: Self.size.width, height: Self.size.height, seed: 7)
        let live = try rectifier.rectify(left: image, right: image)
        let built = try exact.rectify(left: image, right: image)
        var differing = 0, total = 0, worst = 0
        for y in 0..<Self.size.height {
            for x in k..<(w - k) {
                for (a, b) in [(live.left, built.left), (live.right, built.right)] {
                    let d = abs(Int(a.bytes[y * w + x]) - Int(b.bytes[y * w + x]))
                    worst = max(worst, d)
                    if d != 0 { differing += 1 }
                    total += 1
                }
            }
        }
        print("live shift \(k) px vs rebuilt maps: \(floatsDiffering) of \(floatsCompared) map positions differ "
              + "(worst \(worstFloat) px), \(differing) of \(total) pixels differ (worst \(worst))")
        #expect(total == 2 * Self.size.height * (w - 2 * k))
        #expect(floatsCompared == 2 * Self.size.height * (w - k) && floatsDiffering == 0)
        #expect(differing == 0)
    }

    @Test("with the output turned a quarter, the shift runs along the displayed rows' columns")
    func shiftFollowsTheOrientation() throws {
        let calibration = try Self.calibration()
        let turned = OutputOrientation(rotation: .clockwise90)
        let rectifier = try Rectifier(calibration: calibration, orientation: turned, threads: 2)
        let image = TestImages.smooth(.gray8, width: Self.size.width, height: Self.size.height)
        let (_, plainRight) = try rectifier.rectify(left: image, right: image)
        rectifier.setConvergence(atDistance: 400)
        let k = Int(rectifier.rectification(for: .gray8).convergenceShift)
        // Half the disparity at 400 units is 0.54 px: one whole pixel each side.
        let half = Self.halfDisparity(atDistance: 400, calibration: calibration, focalLength: rectifier.maps.rectification.focalLength)
        #expect(k == Int(half.rounded()) && k == 1, "shift \(k), half the disparity \(half)")
        let (_, right) = try rectifier.rectify(left: image, right: image)
        // Displayed (x, y) shows rectified (y, h − 1 − x): a rectified +x shift is a +y shift on screen.
        let displayed = turned.displayedSize(of: Self.size)
        for y in 0..<displayed.height {
            for x in 0..<displayed.width {
                let from = y - k
                let expected = from >= 0 && from < displayed.height ? plainRight.bytes[from * displayed.width + x] : 0
                #expect(right.bytes[y * displayed.width + x] == expected)
            }
        }
    }

    @Test("back to the maps' own plane, and infinity, restore the unshifted output")
    func backToTheStart() throws {
        let calibration = try Self.calibration()
        let rectifier = try Rectifier(calibration: calibration, convergenceDistance: 500, threads: 2)
        let image = TestImages.smooth(.gray8, width: Self.size.width, height: Self.size.height)
        let original = try rectifier.rectify(left: image, right: image)
        rectifier.setConvergence(atDistance: 250)
        #expect(rectifier.requestedConvergenceDistance == 250)
        rectifier.setConvergence(atDistance: 500)
        let back = try rectifier.rectify(left: image, right: image)
        #expect(back.left == original.left && back.right == original.right)
        rectifier.setConvergence(atDistance: nil)
        let infinity = rectifier.rectification(for: .gray8)
        #expect(abs(infinity.disparity(atDistance: 1e12)) <= 1)
        // However near, a distance gives a bounded shift (the image is all border), not a trap.
        rectifier.setConvergence(atDistance: 1e-300)
        let (nearLeft, _) = try rectifier.rectify(left: image, right: image)
        #expect(nearLeft.bytes.allSatisfy { $0 == 0 })
    }
}
