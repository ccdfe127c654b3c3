import ParallaxGeometry
import ParallaxImage
import Testing

/// Moving the convergence plane on a running rectifier: a whole-sample shift of each
/// output, the same pixels as maps built with the shifted principal points.
@Suite("Live convergence: whole-sample output shifts without rebuilding the maps")
struct LiveConvergenceTests {
    static let size = ImageSize(width: 160, height: 120)
    static func calibration() throws -> StereoCalibration {
        try StereoCalibration(contentsOfFile: TestImages.fixtures + "/opencv/opencv-sample-calibration.json").resized(to: size)
    }

    /// Byte `x` (in samples of `stride` bytes, channel `c`) of row `y` of plane 0.
    static func sample(_ image: ImageBuffer, _ x: Int, _ y: Int, stride: Int, channel c: Int) -> UInt8 {
        image.bytes[y * image.bytesPerRow + x * stride + c]
    }

    @Test("a live shift is the unshifted output moved by whole samples, border where nothing moved in",
          arguments: [PixelFormat.gray8, .rgb8, .yuyv, .nv12])
    func shiftIsATranslation(format: PixelFormat) throws {
        let calibration = try Self.calibration()
        let rectifier = try Rectifier(calibration: calibration, threads: 2)
        let image = TestImages.smooth(format, width: Self.size.width, height: Self.size.height)
        let (plainLeft, plainRight) = try rectifier.rectify(left: image, right: image)
        // A distance whose disparity is several pixels at this size.
        rectifier.setConvergence(atDistance: 100)
        let applied = rectifier.rectification(for: format)
        let step = Double(rectifier.convergenceStep(for: format))
        let k = applied.convergenceShift
        #expect(k != 0 && k.truncatingRemainder(dividingBy: step) == 0)
        // P1 and P2 moved by ∓k, and zero disparity is where the applied shift puts it.
        let base = rectifier.maps.rectification
        #expect(applied.p1[0, 2] == base.p1[0, 2] - k && applied.p2[0, 2] == base.p2[0, 2] + k)
        #expect(abs(applied.disparity(atDistance: try #require(applied.convergenceDistance))) < 1e-9)
        // Within one step of disparity of the distance asked for.
        #expect(abs(applied.disparity(atDistance: 100)) <= step + 1e-9)
        let (left, right) = try rectifier.rectify(left: image, right: image)
        let shift = Int(k)
        // Luma (or the packed samples) of plane 0: stride and channels per format.
        let (stride, channels): (Int, Int) = switch format {
        case .rgb8: (3, 3)
        case .yuyv: (2, 1)
        default: (1, 1)
        }
        var checked = 0
        for y in 0..<Self.size.height {
            for x in 0..<Self.size.width {
                for c in 0..<channels {
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

    @Test("the shifted pixels equal maps built with the shifted principal points (to float rounding)")
    func shiftEqualsShiftedMaps() throws {
        let calibration = try Self.calibration()
        let rectifier = try Rectifier(calibration: calibration, threads: 2)
        rectifier.setConvergence(atDistance: 100)
        let applied = rectifier.rectification(for: .gray8)
        let exact = Rectifier(maps: calibration.rectificationMaps(for: applied), threads: 2)
        let image = TestImages.smooth(.gray8, width: Self.size.width, height: Self.size.height)
        let live = try rectifier.rectify(left: image, right: image)
        let built = try exact.rectify(left: image, right: image)
        let k = Int(applied.convergenceShift)
        var same = 0, total = 0, worst = 0
        for y in 0..<Self.size.height {
            for x in k..<(Self.size.width - k) {
                for (a, b) in [(live.left, built.left), (live.right, built.right)] {
                    let d = abs(Int(a.bytes[y * Self.size.width + x]) - Int(b.bytes[y * Self.size.width + x]))
                    worst = max(worst, d)
                    if d == 0 { same += 1 }
                    total += 1
                }
            }
        }
        print("live shift \(k) px vs rebuilt maps: \(same) of \(total) identical, worst \(worst)")
        #expect(worst <= 1)
        #expect(Double(same) / Double(total) > 0.999)
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
