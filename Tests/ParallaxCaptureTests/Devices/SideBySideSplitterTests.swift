import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

@Suite("Side-by-side splitter")
struct SideBySideSplitterTests {
    @Test("2560×720 YUYV from a V4L2 camera splits into two 1280×720 halves with identical timestamps, zero-copy")
    func splitsV4L2Frames() throws {
        let interval = FrameInterval(numerator: 1, denominator: 200)
        let spec = VirtualCameraSpec(path: "/dev/video4", card: "Stereo Cam", formats: [
            .init(fourCC: .yuyv, sizes: [ImageSize(width: 2560, height: 720)], intervals: [interval]),
        ])
        let driver = VirtualUVCDriver(cameras: [spec])
        let camera = try V4L2Camera(path: "/dev/video4", syscalls: driver)
        let splitter = SideBySideSplitter(source: camera)
        let half = try splitter.left.configure(CaptureFormat(fourCC: .yuyv, size: ImageSize(width: 1280, height: 720), frameInterval: interval))
        #expect(half.size == ImageSize(width: 1280, height: 720))
        #expect(splitter.right.activeFormat?.size == ImageSize(width: 1280, height: 720))
        let left = FrameCollector(), right = FrameCollector()
        try splitter.left.start(left.handler)
        try splitter.right.start(right.handler)
        #expect(left.waitForFrames(3, timeoutSeconds: 10) && right.waitForFrames(3, timeoutSeconds: 10))
        splitter.left.stop()
        splitter.right.stop()
        let l = left.frames, r = right.frames
        let pairs = zip(l, r).filter { $0.sequence == $1.sequence }
        #expect(!pairs.isEmpty)
        for (a, b) in pairs {
            #expect(a.timestampNanoseconds == b.timestampNanoseconds)
            #expect(a.image?.size == ImageSize(width: 1280, height: 720))
            #expect(a.image?.plane0.bytesPerRow == 2560 * 2)
            // The right half starts 1280 YUYV pixels (2560 bytes) into the same driver buffer.
            let leftBase = try #require(a.image?.plane0.baseAddress), rightBase = try #require(b.image?.plane0.baseAddress)
            #expect(rightBase == leftBase + 2560)
            #expect(driver.mappedAddresses("/dev/video4").contains(leftBase))
        }
        #expect(l.first?.source.stableID.hasSuffix("#left") == true)
        left.releaseFrames()
        right.releaseFrames()
    }

    @Test("The halves hold exactly the left and right pixels of the source image")
    func halvesHoldTheRightPixels() throws {
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 48, height: 16))
        let source = SimulatedRigDevice(rig: rig, pace: .asFastAsPossible).left
        let splitter = SideBySideSplitter(source: source)
        let left = FrameCollector(), right = FrameCollector()
        try splitter.left.start(left.handler)
        try splitter.right.start(right.handler)
        #expect(left.waitForFrames(1, timeoutSeconds: 10) && right.waitForFrames(1, timeoutSeconds: 10))
        splitter.left.stop()
        splitter.right.stop()
        let full = try rig.render(.left)
        let a = try #require(left.frames.first?.copyImage()), b = try #require(right.frames.first?.copyImage())
        for y in 0..<16 {
            for x in 0..<24 {
                #expect(a.bytes[y * 24 + x] == full.bytes[y * 48 + x])
                #expect(b.bytes[y * 24 + x] == full.bytes[y * 48 + 24 + x])
            }
        }
    }

    @Test("Compressed or odd-width formats are not splittable")
    func unsplittable() {
        let mjpeg = CaptureFormat(fourCC: .mjpeg, size: ImageSize(width: 2560, height: 720), frameInterval: FrameInterval(numerator: 1, denominator: 30))
        #expect(SideBySideView.halfSize(of: mjpeg) == nil)
        let yuyv = CaptureFormat(fourCC: .yuyv, size: ImageSize(width: 2562, height: 720), frameInterval: FrameInterval(numerator: 1, denominator: 30))
        #expect(SideBySideView.halfSize(of: yuyv) == nil)  // 1281 is odd: YUYV needs pairs
    }
}
