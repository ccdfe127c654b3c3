import ParallaxGeometry
import Testing

/// Maps against `cv2.initUndistortRectifyMap` float maps (fixture made by make_fixtures.py).
@Suite struct RectificationMapTests {
    @Test func mapsMatchOpenCVWithinOneHundredthOfAPixel() throws {
        let rectifyReference = try Fixtures.json("stereo-rectify-reference")
        let reference = try Fixtures.json("rectify-maps-reference")
        let sets = try #require(reference.object?["maps"]?.array)
        #expect(sets.count == 5)
        for set in sets {
            let o = try #require(set.object)
            let rigName = try #require(o["rig"]?.string)
            let calibration = try Fixtures.rig(rigName, in: rectifyReference)
            let alpha = o["alpha"]?.number ?? o["balance"]?.number ?? -1
            let rectification = try calibration.rectification(RectificationOptions(alpha: alpha < 0 ? nil : alpha))
            let maps = calibration.rectificationMaps(for: rectification)
            let xs = try Fixtures.numbers(o["xs"]).map { Int($0) }
            let ys = try Fixtures.numbers(o["ys"]).map { Int($0) }
            var compared = 0
            var worst = 0.0
            for (side, map) in [("left", maps.left), ("right", maps.right)] {
                let ex = try Fixtures.numbers(o["\(side)_x"]), ey = try Fixtures.numbers(o["\(side)_y"])
                var k = 0
                for y in ys {
                    for x in xs {
                        defer { k += 1 }
                        // OpenCV writes garbage-free finite values everywhere; "both defined" means
                        // our map has a source point and OpenCV's lies within a generous frame.
                        guard let mine = map.source(x: x, y: y), abs(ex[k]) < 1e5, abs(ey[k]) < 1e5 else { continue }
                        let error = max(abs(Double(mine.x) - ex[k]), abs(Double(mine.y) - ey[k]))
                        worst = max(worst, error)
                        compared += 1
                        #expect(error <= 0.01, "\(rigName) \(side) map at (\(x), \(y)): (\(mine.x), \(mine.y)) vs OpenCV (\(ex[k]), \(ey[k]))")
                    }
                }
            }
            #expect(compared > 2 * xs.count * ys.count * 9 / 10, "\(rigName): most samples must be comparable (\(compared))")
            print("maps vs initUndistortRectifyMap, \(rigName): \(compared) samples, worst \(worst) px")
        }
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

    @Test func referenceRemapInterpolatesAndUsesTheBorder() {
        // A 2×2 gray source, one output pixel halfway between all four.
        let map = RectificationMap(outputSize: ImageSize(width: 3, height: 1), sourceSize: ImageSize(width: 2, height: 2),
                                   sourceX: [0.5, .nan, -0.5], sourceY: [0.5, 0, 0])
        let out = ReferenceRemap.bilinear([0, 100, 200, 40], channels: 1, map: map, border: 0)
        #expect(out[0] == 85)  // (0 + 100 + 200 + 40) / 4
        #expect(out[1] == 0)  // undefined → border
        #expect(out[2] == 0)  // half border (0), half pixel 0 (value 0): 0
    }
}
