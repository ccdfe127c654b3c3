import ParallaxGeometry
import Testing

/// Maps against `cv2.initUndistortRectifyMap` / `cv2.fisheye.initUndistortRectifyMap`
/// (fixture made by Fixtures/make_fixtures.py: the float32 values OpenCV writes, bit for bit).
///
/// Parallax builds its maps the way OpenCV does (in double precision, rounded to float32
/// once), and the two agree bit for bit at every stored sample, so the test asks for that:
/// one ulp of difference (6e-5 px at x ≥ 512) is a change worth noticing.
@Suite struct RectificationMapTests {
    @Test func mapsMatchOpenCVInitUndistortRectifyMapAtEverySample() throws {
        let rectifyReference = try Fixtures.json("stereo-rectify-reference")
        let reference = try Fixtures.json("rectify-maps-reference")
        let values = try Fixtures.float32s("rectify-maps-reference")
        let sets = try #require(reference.object?["maps"]?.array)
        try #require(sets.count == 5)
        var worst = 0.0, worstUlps = 0.0, total = 0, exact = 0
        for set in sets {
            let o = try #require(set.object)
            let rigName = try #require(o["rig"]?.string)
            let calibration = try Fixtures.rig(rigName, in: rectifyReference)
            let alpha = try #require(o["alpha"]?.number ?? o["balance"]?.number)
            let rectification = try calibration.rectification(RectificationOptions(alpha: alpha < 0 ? nil : alpha))
            let maps = calibration.rectificationMaps(for: rectification)
            let xs = try Fixtures.numbers(o["xs"]).map { Int($0) }
            let ys = try Fixtures.numbers(o["ys"]).map { Int($0) }
            let w = rectification.size.width, h = rectification.size.height
            // The ring: rows 0 and h − 1, then columns 0 and w − 1 without their ends (make_fixtures.py).
            let ring = (0..<w).map { ($0, 0) } + (0..<w).map { ($0, h - 1) }
                + (1..<(h - 1)).map { (0, $0) } + (1..<(h - 1)).map { (w - 1, $0) }
            let grid = ys.flatMap { y in xs.map { x in (x, y) } }
            try #require(Int(try #require(o["ring_count"]?.number)) == ring.count)
            var offset = Int(try #require(o["offset"]?.number))
            for (side, map) in [("left", maps.left), ("right", maps.right)] {
                for (name, points) in [("grid", grid), ("ring", ring)] {
                    try #require(offset + 2 * points.count <= values.count, "\(rigName) \(side) \(name): fixture too short")
                    for (k, (x, y)) in points.enumerated() {
                        let expected = SIMD2(values[offset + k], values[offset + points.count + k])
                        total += 1
                        // OpenCV has a value at every sample; Parallax having none is a failure, not a skip.
                        guard let mine = map.source(x: x, y: y) else {
                            Issue.record("\(rigName) \(side) map at (\(x), \(y)): no source point, OpenCV has \(expected)")
                            continue
                        }
                        let dx = abs(Double(mine.x) - Double(expected.x)), dy = abs(Double(mine.y) - Double(expected.y))
                        let error = max(dx, dy)
                        let ulps = max(dx / Double(expected.x.ulp), dy / Double(expected.y.ulp))
                        worst = max(worst, error)
                        worstUlps = max(worstUlps, ulps)
                        if mine == expected { exact += 1 }
                        #expect(mine == expected, "\(rigName) \(side) map at (\(x), \(y)): \(mine) vs OpenCV \(expected) (\(ulps) ulp)")
                    }
                    offset += 2 * points.count
                }
            }
        }
        try #require(valueCount(readBy: sets) == values.count, "the fixture holds values no set read")
        #expect(total == 35_070)
        print("maps vs initUndistortRectifyMap: \(total) samples, \(exact) bit-identical, worst \(worst) px, \(worstUlps) ulp")
    }

    /// The number of values the map sets read (each side: grid and ring, x and y).
    private func valueCount(readBy sets: [JSONValue]) throws -> Int {
        let last = try #require(sets.last?.object)
        let xs = try Fixtures.numbers(last["xs"]).count, ys = try Fixtures.numbers(last["ys"]).count
        let ring = Int(try #require(last["ring_count"]?.number))
        return Int(try #require(last["offset"]?.number)) + 2 * 2 * (xs * ys + ring)
    }

    @Test func homographyShortcutAgreesWithTheMapForPinholeCameras() throws {
        let camera = CameraModel(size: ImageSize(width: 64, height: 48),
                                 intrinsics: CameraIntrinsics(fx: 60, fy: 61, cx: 31.5, cy: 23.2))
        let calibration = StereoCalibration(
            left: camera, right: camera,
            extrinsics: RigidTransform(rodrigues: SIMD3(0.01, -0.02, 0.015), translation: SIMD3(-10, 0.3, 0.2)))
        let r = try calibration.rectification()
        for orientation in [OutputOrientation.identity, OutputOrientation(rotation: .clockwise90, mirrored: true),
                            OutputOrientation(rotation: .rotate180), OutputOrientation(rotation: .clockwise270)] {
            let map = calibration.rectificationMaps(for: r, orientation: orientation).left
            let h = try #require(map.homography)
            for (x, y) in [(0, 0), (map.outputSize.width - 1, 3), (5, map.outputSize.height - 1), (20, 17)] {
                let viaH = try #require(h.apply(SIMD2(Double(x), Double(y))))
                let viaMap = try #require(map.source(x: x, y: y))
                #expect(abs(viaH.x - Double(viaMap.x)) < 1e-3 && abs(viaH.y - Double(viaMap.y)) < 1e-3,
                        "\(orientation) at (\(x), \(y))")
            }
        }
    }

    @Test func rotatedOutputShowsTheSamePixels() throws {
        let camera = CameraModel(size: ImageSize(width: 40, height: 30),
                                 intrinsics: CameraIntrinsics(fx: 50, fy: 50, cx: 19.5, cy: 14.5),
                                 distortion: .brownConrady(BrownConrady(k1: -0.1)))
        let plain = RectificationMap(camera: camera, rotation: .identity, newCamera: camera.intrinsics, size: camera.size)
        let turned = RectificationMap(camera: camera, rotation: .identity, newCamera: camera.intrinsics, size: camera.size,
                                      orientation: OutputOrientation(rotation: .clockwise90))
        #expect(turned.outputSize == ImageSize(width: 30, height: 40))
        // Clockwise: the displayed top-left pixel is the bottom-left pixel of the unrotated image.
        #expect(turned.source(x: 0, y: 0) == plain.source(x: 0, y: 29))
        #expect(turned.source(x: 29, y: 0) == plain.source(x: 0, y: 0))
        #expect(turned.source(x: 29, y: 39) == plain.source(x: 39, y: 0))
    }

    @Test func referenceRemapInterpolatesAndBlendsTheBorderValue() {
        // A 2×2 gray source and a border value of 20, all non-zero, so that a blend that
        // dropped, renormalised or misweighted the border taps would show.
        let map = RectificationMap(outputSize: ImageSize(width: 6, height: 1), sourceSize: ImageSize(width: 2, height: 2),
                                   sourceX: [0.5, .nan, -0.5, 1.25, -1, 2], sourceY: [0.5, 0, 0, 1.5, 0, 0])
        let out = ReferenceRemap.bilinear([80, 100, 200, 40], channels: 1, map: map, border: 20)
        #expect(out[0] == 105)  // (80 + 100 + 200 + 40) / 4
        #expect(out[1] == 20)  // undefined → border
        #expect(out[2] == 50)  // half border (20), half pixel (0, 0) (80)
        // Pixel (1, 1) = 40 weighted ¾ · ½, border 20 the rest: 15 + 12.5 = 27.5, rounded half up.
        #expect(out[3] == 28)
        #expect(out[4] == 20)  // x = −1: only the border column carries weight
        #expect(out[5] == 20)  // x = 2: past the last column
    }
}
