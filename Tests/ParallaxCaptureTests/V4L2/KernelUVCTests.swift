import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

/// Parallax against the kernel's real uvcvideo driver: emulated webcams (``EmulatedWebcam``)
/// plugged into the USB/IP virtual host controller (`vhci-hcd`) in the qemu guest of
/// `make test-kernel`, so enumeration, sysfs identity, probe/commit, isochronous payload
/// assembly, error handling and replugging are the kernel's own. Off everywhere else.
@Suite("V4L2 against uvcvideo, with emulated USB webcams", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["PARALLAX_KERNEL"] == "1" && VHCIHost().isAvailable))
struct KernelUVCTests {
    static let vga = ImageSize(width: 640, height: 480), hd = ImageSize(width: 1280, height: 720)

    /// A webcam with serial `serial`, attached, and its video node.
    static func plugged(_ serial: String, spec configure: (inout EmulatedWebcamSpec) -> Void = { _ in }) throws
        -> (EmulatedWebcam, DiscoveredCamera) {
        var spec = EmulatedWebcamSpec(serial: serial)
        configure(&spec)
        let webcam = EmulatedWebcam(spec)
        try webcam.attach()
        return (webcam, try webcam.waitForNode())
    }

    static func wait(_ seconds: Double, until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() && Date() < deadline { usleep(20_000) }
        return condition()
    }

    @Test("discovery reads the webcam from real sysfs: identity by serial, high speed, the packet sizes the cost model uses, a metadata node")
    func discovery() throws {
        let (webcam, node) = try Self.plugged("PLX-DISC")
        defer { webcam.detach() }
        let usb = try #require(node.usb)
        print("kernel/uvc: \(node.devicePath) \(node.identity.stableID) \(node.name), bus \(usb.bus) port \(usb.portPath), "
              + "\(usb.speedMbps ?? 0) Mbit/s, packets \(usb.isochronousPacketSizes)")
        #expect(node.identity.stableID == "usb-1209:0001-PLX-DISC")
        #expect(usb.vendorID == "1209" && usb.productID == "0001" && usb.serial == "PLX-DISC")
        #expect(usb.manufacturer == "Parallax" && usb.product == "Emulated Webcam")
        #expect(usb.speedMbps == 480)
        #expect(usb.isochronousPacketSizes == [128, 512, 1024, 2048, 3072])
        // uvcvideo's metadata node sits beside the video node, on the same USB device.
        let metadata = V4L2Discovery().allNodes().filter { $0.usb?.serial == "PLX-DISC" && $0.nodeIndex == 1 }
        #expect(metadata.count == 1, "metadata node: \(metadata.map(\.devicePath))")
    }

    @Test("every format the webcam offers is listed and streams through uvcvideo; each frame holds the number uvcvideo's sequence says")
    func everyFormatStreams() throws {
        let (webcam, node) = try Self.plugged("PLX-FMT")
        defer { webcam.detach() }
        let camera = try V4L2Camera(path: node.devicePath)
        let listed = Set(try camera.supportedFormats().map { "\($0.fourCC) \($0.size.width)x\($0.size.height)" })
        print("kernel/uvc: formats \(listed.sorted())")
        for format in webcam.spec.formats {
            for size in format.sizes { #expect(listed.contains("\(format.fourCC) \(size.width)x\(size.height)")) }
        }
        for fourCC in [FourCC.yuyv, .grey, .mjpeg] {
            let marks = Locked<[(UInt64, Int)]>([])
            let collector = FrameCollector(keepFrames: false) { frame in
                let bytes = frame.payload.bytes.bindMemory(to: UInt8.self)
                let mark: Int? = {
                    switch fourCC {
                    case .yuyv: return FrameMark.read { x, y in bytes[(y * Self.vga.width + x) * 2] }
                    case .grey: return FrameMark.read { x, y in bytes[y * Self.vga.width + x] }
                    default:
                        guard let decoder = try? MJPEGDecoder(), let image = try? decoder.decode(UnsafeRawBufferPointer(bytes)), let luma = try? image.converted(to: .gray8) else { return nil }
                        return FrameMark.read { x, y in luma.bytes[y * Self.vga.width + x] }
                    }
                }()
                marks.withLock { $0.append((frame.sequence, mark ?? -1)) }
            }
            let configured = try camera.configure(CaptureFormat(fourCC: fourCC, size: Self.vga,
                                                                frameInterval: FrameInterval(numerator: 1, denominator: 30)))
            try camera.start(collector.handler)
            _ = collector.waitForFrames(10, timeoutSeconds: 60)
            camera.stop()
            let seen = marks.withLock { $0 }
            print("kernel/uvc: \(configured): \(seen.count) frames, (sequence, mark) \(seen.prefix(4))")
            #expect(seen.count >= 10)
            // MJPEG frames carry their number mod 16 (16 encodings are made).
            let cycle = fourCC == .mjpeg ? 16 : 1 << FrameMark.bits
            #expect(seen.allSatisfy { Int($0.0) % cycle == $0.1 }, "\(fourCC): \(seen)")
        }
    }
}
