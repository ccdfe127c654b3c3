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

    @Test("a bulk webcam streams through uvcvideo too (payloads across 16 KiB transfers)")
    func bulkStreams() throws {
        let (webcam, node) = try Self.plugged("PLX-BULK") { $0.transfer = .bulk }
        defer { webcam.detach() }
        #expect(node.usb?.isochronousPacketSizes == [])
        let camera = try V4L2Camera(path: node.devicePath)
        let marks = Locked<[(UInt64, Int)]>([])
        let collector = FrameCollector(keepFrames: false) { frame in
            let bytes = frame.payload.bytes.bindMemory(to: UInt8.self)
            marks.withLock { $0.append((frame.sequence, FrameMark.read { x, y in bytes[(y * Self.vga.width + x) * 2] })) }
        }
        try camera.configure(CaptureFormat(fourCC: .yuyv, size: Self.vga, frameInterval: FrameInterval(numerator: 1, denominator: 30)))
        try camera.start(collector.handler)
        _ = collector.waitForFrames(10, timeoutSeconds: 60)
        camera.stop()
        let seen = marks.withLock { $0 }
        print("kernel/uvc: bulk: \(seen.count) frames, (sequence, mark) \(seen.prefix(4))")
        #expect(seen.count >= 10 && seen.allSatisfy { Int($0.0) == $0.1 })
    }

    /// A stereo session over two plugged webcams streaming `format`.
    static func session(_ left: DiscoveredCamera, _ right: DiscoveredCamera, format: CaptureFormat,
                        calibration: StereoCalibration? = nil, cameraOptions: V4L2Camera.Options = V4L2Camera.Options(),
                        configure: (inout StereoSessionOptions) -> Void = { _ in }) throws -> StereoSession {
        let device = StereoDevice(left: try V4L2Camera(path: left.devicePath, options: cameraOptions),
                                  right: try V4L2Camera(path: right.devicePath, options: cameraOptions))
        try device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        configure(&options)
        return try StereoSession(device: device, calibration: calibration, options: options)
    }

    /// The pairs whose right frame is not the one exposed nearest the left frame (by the
    /// cameras' own record of when each exposure started), as (left, right) sequence numbers.
    static func wrongPairs(_ pairs: [(left: UInt64, right: UInt64)], left: [EmulatedWebcam.FrameTruth],
                           right: [EmulatedWebcam.FrameTruth]) -> [(UInt64, UInt64)] {
        pairs.filter { pair in
            guard Int(pair.left) < left.count else { return true }
            let t = left[Int(pair.left)].exposureStartNanoseconds
            let nearest = right.min { abs($0.exposureStartNanoseconds - t) < abs($1.exposureStartNanoseconds - t) }
            return nearest?.number != Int(pair.right)
        }
    }

    @Test("MJPEG 1280×720 from two webcams through uvcvideo: decoded, rectified pairs, none wrong against the cameras' truth; damaged frames are drops")
    func mjpegStereoSession() async throws {
        // Both on vhci's one bus: MJPEG asks for the largest packet, so the largest is
        // 2×1024 (two at 3×1024 would not fit, and Parallax refuses them: cost 1.024).
        let packets = EmulatedWebcamSpec.Transfer.isochronous(packetSizes: [128, 512, 1024, 2048])
        let (left, leftNode) = try Self.plugged("PLX-LEFT") { $0.transfer = packets }
        // The right sensor exposes 4 ms after the left, on a clock 3 s ahead.
        let (right, rightNode) = try Self.plugged("PLX-RIGHT") {
            $0.transfer = packets
            $0.exposurePhaseNanoseconds = 4_000_000
            $0.clockOffsetNanoseconds = 3_000_000_000
        }
        defer { left.detach(); right.detach() }
        // 5 fps: the emulated guest decodes and rectifies two 1280×720 streams far slower than a machine would.
        let format = CaptureFormat(fourCC: .mjpeg, size: Self.hd, frameInterval: FrameInterval(numerator: 1, denominator: 5))
        let session = try Self.session(leftNode, rightNode, format: format,
                                       calibration: SimulatedStereoRig.example(size: Self.hd).calibration)
        try session.start()
        var pairs: [(left: UInt64, right: UInt64)] = []
        var rectified = 0
        for try await pair in session.pairs {
            pairs.append((pair.left.sequence, pair.right.sequence))
            // Not `pair.left.image?.size == …` in the condition: Swift 6.3.1's optimizer crashes on
            // that (CopyPropagation, "Found outside of lifetime use", in `make allocations`' -O build).
            let sizes = (pair.left.image.map(\.size), pair.right.image.map(\.size))
            if pair.isRectified && sizes.0 == Self.hd && sizes.1 == Self.hd { rectified += 1 }
            // Two damaged frames a side, once pairs flow: cut in half (the JPEG's end is lost).
            // uvcvideo passes a short compressed frame on as it came (it checks the size of
            // uncompressed frames only); Parallax's decoder drops it as corrupt_frame.
            if pairs.count == 2 || pairs.count == 4 {
                left.inject(.shortFrame(fraction: 0.5))
                right.inject(.shortFrame(fraction: 0.5))
            }
            if pairs.count == 8 { break }
        }
        session.stop()
        let stats = session.statistics
        let wrong = Self.wrongPairs(pairs, left: left.latestStreamTruth, right: right.latestStreamTruth)
        print("kernel/uvc: MJPEG 1280x720 session: \(pairs.count) pairs (\(rectified) rectified), \(wrong.count) wrong, "
              + "frames \(stats.frames(.left))/\(stats.frames(.right)), drops \(stats.droppedByName(.left))/\(stats.droppedByName(.right)), "
              + "lost by the cameras \(stats.lostByName(.left))/\(stats.lostByName(.right))")
        #expect(pairs.count == 8 && rectified == 8)
        #expect(wrong.isEmpty, "wrong pairs (left, right sequence): \(wrong)")
        for side in StereoSide.allCases {
            #expect(stats.lostByCamera[side][.corruptFrame, default: 0] == 2, "\(side): \(stats.lostByCamera[side])")
        }
        #expect(stats.accountDiscrepancy == nil, "\(stats.accountDiscrepancy ?? "")")
    }

    @Test("controls through uvcvideo: set on the left webcam, copied to the right, which then holds them")
    func controlsCopied() throws {
        let (left, leftNode) = try Self.plugged("PLX-CTL-L")
        let (right, rightNode) = try Self.plugged("PLX-CTL-R")
        defer { left.detach(); right.detach() }
        let leftCamera = try V4L2Camera(path: leftNode.devicePath), rightCamera = try V4L2Camera(path: rightNode.devicePath)
        _ = try leftCamera.set(.exposureAuto, to: 1)          // manual
        _ = try leftCamera.set(.exposureAbsolute, to: 250)
        _ = try leftCamera.set(.gain, to: 77)
        _ = try leftCamera.set(.autoWhiteBalance, to: 0)
        _ = try leftCamera.set(.whiteBalanceTemperature, to: 5200)
        // Focus is governed by autofocus, on by default: uvcvideo refuses it (EACCES).
        #expect(throws: CaptureError.self) { try leftCamera.set(.focusAbsolute, to: 100) }
        let device = StereoDevice(left: leftCamera, right: rightCamera)
        let report = try device.matchControls(from: .left)
        print("kernel/uvc: \(report)")
        #expect(report.isComplete && report.governedByAutomaticModes == [.focusAbsolute])
        // What the right camera was sent over USB, by uvcvideo (UVC's manual mode is bit 0).
        #expect(right.controlValue(.exposureAuto) == 1)
        #expect(right.controlValue(.exposureAbsolute) == 250)
        #expect(right.controlValue(.gain) == 77)
        #expect(right.controlValue(.autoWhiteBalance) == 0)
        #expect(right.controlValue(.whiteBalanceTemperature) == 5200)
        #expect(left.controlValue(.gain) == 77)
    }

    @Test("replugged while streaming: the session finds the webcam by identity under its new node; pairs resume")
    func replugWhileStreaming() async throws {
        let monitor = HotplugMonitor()
        let (left, leftNode) = try Self.plugged("PLX-HP-L")
        let (right, rightNode) = try Self.plugged("PLX-HP-R")
        defer { left.detach(); right.detach() }
        // 15 fps: two YUYV VGA streams at 30 would need 3×1024 each on vhci's one bus.
        let format = CaptureFormat(fourCC: .yuyv, size: Self.vga, frameInterval: FrameInterval(numerator: 1, denominator: 15))
        let session = try Self.session(leftNode, rightNode, format: format) {
            // Only the kernel's announcement can bring the camera back within the test.
            $0.reconnectIntervalSeconds = 600
            $0.watchedReconnectIntervalSeconds = 600
        }
        let pairTimes = Locked<[Int64]>([])
        try session.start { _ in pairTimes.withLock { $0.append(monotonicNanoseconds()) } }
        func events(_ name: String) -> [SessionEvent] { session.statistics.events.filter { $0.name == name } }
        #expect(Self.wait(30) { pairTimes.withLock { $0.count } >= 10 })
        right.detach()
        #expect(Self.wait(10) { events("disconnected").count == 1 })
        let attached = monotonicNanoseconds()
        try right.attach()
        let newNode = try right.waitForNode()
        #expect(Self.wait(30) { pairTimes.withLock { $0.last ?? 0 } > attached })
        let reconnected = try #require(events("reconnected").first)
        let firstPair = pairTimes.withLock { $0.first { $0 > attached } } ?? 0
        session.stop()
        _ = monitor
        print("kernel/uvc: replug: \(rightNode.devicePath) → \(newNode.devicePath) (\(reconnected)); "
              + "attach to first pair \(Double(firstPair - attached) / 1e6) ms")
        #expect(newNode.devicePath != rightNode.devicePath)
        #expect(newNode.identity.stableID == rightNode.identity.stableID)
        #expect(reconnected.side == .right && reconnected.node == newNode.devicePath && reconnected.stableID == rightNode.identity.stableID)
        let stats = session.statistics
        #expect(stats.pairsInFlight == 0)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side)) }
    }

    @Test("faults through uvcvideo: what the ERR bit, a short, an oversized and a stalled frame become, and a camera that dies mid-stream")
    func faults() throws {
        let (webcam, node) = try Self.plugged("PLX-FAULT")
        let camera = try V4L2Camera(path: node.devicePath)
        try camera.configure(CaptureFormat(fourCC: .yuyv, size: Self.vga, frameInterval: FrameInterval(numerator: 1, denominator: 30)))
        let events = Locked<[String]>([])
        let collector = FrameCollector(keepFrames: false)
        try camera.start { output in
            if case .event(let event) = output { events.withLock { $0.append("\(event)") } }
            collector.handler(output)
        }
        #expect(collector.waitForFrames(5, timeoutSeconds: 30))
        for fault in [EmulatedWebcamSpec.Fault.errorBit, .shortFrame(fraction: 0.5), .oversizedFrame(extraBytes: 1000)] {
            webcam.inject(fault)
            let count = collector.records.count
            #expect(collector.waitForFrames(count + 5, timeoutSeconds: 30))
        }
        let beforeStall = events.withLock { $0.filter { $0.hasPrefix("stalled") }.count }
        webcam.inject(.stall(nanoseconds: 1_500_000_000))
        #expect(collector.waitForFrames(collector.records.count + 5, timeoutSeconds: 30))
        // 1.5 s without frames is a stall (more than 500 ms), then frames resume.
        #expect(events.withLock { $0.filter { $0.hasPrefix("stalled") }.count } == beforeStall + 1)
        let sequences = collector.records.map(\.sequence)
        let faulty = webcam.latestStreamTruth.filter { $0.fault != nil }.map(\.number)
        print("kernel/uvc: faults at frames \(faulty); delivered \(sequences); events \(events.withLock { $0 })")
        // uvcvideo (nodrop off, 6.1's default) gives a flagged buffer back to the camera's queue:
        // the frame is a gap in the sequence numbers, which Parallax reports as dropped frames.
        #expect(faulty.count == 3)
        for number in faulty { #expect(!sequences.contains(UInt64(number)), "frame \(number) was delivered") }
        // And each gap is reported: the frames the events say were dropped as sequence gaps are
        // the frames missing between those delivered (the three faults; more only if the bus
        // lost one too, which then is missing as well).
        let missing = zip(sequences, sequences.dropFirst()).map { Int($1) - Int($0) - 1 }.reduce(0, +)
        let reported = events.withLock { $0 }.filter { $0.hasPrefix("dropped ") && $0.hasSuffix("sequence_gap") }
            .compactMap { Int($0.split(separator: " ")[1]) }.reduce(0, +)
        #expect(missing >= 3 && reported == missing, "missing \(missing) frames, \(reported) reported dropped")
        webcam.disconnect()
        #expect(Self.wait(10) { events.withLock { $0 }.contains { $0.contains("disconnect") } }, "\(events.withLock { $0 })")
        camera.stop()
    }

    /// The pairs' skew errors (measured skew minus the true difference of the exposures'
    /// starts, from the cameras' own record), the same less the true difference of when the
    /// webcams sent the frames (the host's delivery, for stamps taken at arrival), in one
    /// session of `count` pairs, and the frames' timestamp sources. Each frame is matched to
    /// the webcam's record by the number written into its pixels, not by uvcvideo's sequence
    /// number: a frame lost on the bus also costs the next one of the same frame ID (uvcvideo
    /// drops it as out of sync), and the sequence then runs two behind the webcam's count.
    static func skewErrors(_ left: (EmulatedWebcam, DiscoveredCamera), _ right: (EmulatedWebcam, DiscoveredCamera),
                           cameraClock: Bool, count: Int) async throws -> (errors: [Int64], delivery: [Int64], sources: Set<String>) {
        let format = CaptureFormat(fourCC: .grey, size: Self.vga, frameInterval: FrameInterval(numerator: 1, denominator: 30))
        let session = try Self.session(left.1, right.1, format: format,
                                       cameraOptions: V4L2Camera.Options(cameraClockTimestamps: cameraClock))
        try session.start()
        var measured: [(left: Int, right: Int, skew: Int64)] = []
        var sources: Set<String> = []
        func mark(_ frame: Frame?) -> Int {
            guard let payload = frame?.payload, payload.bytes.count >= Self.vga.width * FrameMark.block else { return -1 }
            return withExtendedLifetime(payload) { FrameMark.read { x, y in payload.bytes[y * Self.vga.width + x] } }
        }
        for try await pair in session.pairs {
            measured.append((mark(pair.left.frame), mark(pair.right.frame), pair.right.timestampNanoseconds - pair.left.timestampNanoseconds))
            for frame in [pair.left.frame, pair.right.frame].compactMap({ $0 }) { sources.insert("\(frame.timestampSource)") }
            if measured.count == count { break }
        }
        session.stop()
        let leftTruth = left.0.latestStreamTruth, rightTruth = right.0.latestStreamTruth
        let known = measured.filter { $0.left >= 0 && $0.left < leftTruth.count && $0.right >= 0 && $0.right < rightTruth.count }
        let errors = known.map { pair in
            pair.skew - (rightTruth[pair.right].exposureStartNanoseconds - leftTruth[pair.left].exposureStartNanoseconds)
        }
        let delivery = known.map { pair in
            pair.skew - (rightTruth[pair.right].transferStartNanoseconds - leftTruth[pair.left].transferStartNanoseconds)
        }
        return (errors, delivery, sources)
    }

    @Test("timestamps from the cameras' own clocks: two webcams 50 ppm apart with 2 ms of transfer jitter pair with a p99 skew error under 1 ms from the first pair, where the same rig stamped at arrival keeps the jitter")
    func cameraClockTimestamps() async throws {
        let left = try Self.plugged("PLX-CLK-L") {
            $0.clockDriftPPM = 25
            $0.clockOffsetNanoseconds = 1_000_000_000
            $0.transferJitterNanoseconds = 2_000_000
        }
        let right = try Self.plugged("PLX-CLK-R") {
            $0.clockDriftPPM = -25
            $0.clockOffsetNanoseconds = 7_000_000_000
            $0.clockFrequencyHz = 30_000_000
            $0.exposurePhaseNanoseconds = 3_000_000
            $0.transferJitterNanoseconds = 2_000_000
            $0.seed = 2
        }
        defer { left.0.detach(); right.0.detach() }
        func percentile(_ values: [Int64], _ p: Double) -> Double {
            let sorted = values.map { Double(abs($0)) }.sorted()
            return sorted.isEmpty ? .infinity : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
        // 15 s on the camera clocks: the first 5 while the fit settles, then 10 settled.
        let clock = try await Self.skewErrors(left, right, cameraClock: true, count: 450)
        let arrival = try await Self.skewErrors(left, right, cameraClock: false, count: 300)
        func summary(_ errors: [Int64]) -> String {
            String(format: "p50 %.1f µs, p99 %.1f µs, max %.1f µs over %d pairs", percentile(errors, 0.5) / 1000,
                   percentile(errors, 0.99) / 1000, percentile(errors, 1) / 1000, errors.count)
        }
        let settled = Array(clock.errors.dropFirst(150))
        // The guest's own delivery delays, as the difference between the sides (each pair's
        // arrival skew less the difference of when the webcams sent the frames, centred on its
        // median): what the camera clocks take out besides the transfer jitter.
        let delivery = arrival.delivery.map { $0 - arrival.delivery.sorted()[arrival.delivery.count / 2] }
        // Each second's signed errors (median, least and most): how the fits' lines move as
        // they find lower delays, which is what the settled figure depends on here.
        let bySecond = stride(from: 0, to: clock.errors.count, by: 30).map { start -> String in
            let second = clock.errors[start..<min(clock.errors.count, start + 30)].sorted()
            return "\(second[second.count / 2] / 1000) [\(second.first! / 1000), \(second.last! / 1000)]"
        }
        print("kernel/uvc: pair skew error, camera clocks (\(clock.sources.sorted())): \(summary(clock.errors)); from the 6th second \(summary(settled)); signed by second, µs: \(bySecond.joined(separator: " "))")
        print("kernel/uvc: pair skew error, stamped at arrival (\(arrival.sources.sorted())): \(summary(arrival.errors)); the guest's delivery delays alone \(summary(delivery))")
        #expect(clock.sources == ["cameraClock"] && !arrival.sources.contains("cameraClock"))
        #expect(clock.errors.count >= 400 && arrival.errors.count >= 250)
        // At arrival each side is late by its own uniform 0–2 ms: the difference of two such
        // exceeds x with probability (1 − x / 2 ms)², so its p99 is 1.8 ms (more with the
        // guest's own delays). 1 ms separates the two: stamps that kept the jitter would lie
        // above it, the camera clocks' lie below it from the first pair.
        //
        // How far under it they lie is the guest's, not the fit's: a fit's line lies under
        // every reading and touches the lowest, so its error follows how far the least delay
        // from the webcam's send to uvcvideo's stamp wanders. In the emulated guest that
        // wanders by tens of µs quiet and by over 100 µs with builds beside it (settled p99
        // measured 30–60 µs alone, 156 µs in a loaded CI run; the seconds' medians ramp by a
        // few µs a second between the lowest readings). The fit's own accuracy under a steady
        // least delay, 20 µs of the truth plus that delay, is CameraClockTests'.
        #expect(percentile(clock.errors, 0.99) < 1_000_000)
        #expect(percentile(arrival.errors, 0.99) > 1_000_000)
    }

    /// The cost model against uvcvideo's own request: the payload size each webcam asks for
    /// (3×1024 bytes for MJPEG, its largest packet) is what sysfs's descriptors and the cost
    /// model say, and two of them on vhci's one high-speed bus are 6144 bytes of the 6000 a
    /// microframe allows: refused before streaming, with the formats that fit.
    @Test("two webcams asking for 3×1024 bytes a microframe each on one bus are refused before streaming (cost 1.024)")
    func overBudgetPairRefused() throws {
        let (left, leftNode) = try Self.plugged("PLX-BUS-L")
        let (right, rightNode) = try Self.plugged("PLX-BUS-R")
        defer { left.detach(); right.detach() }
        let device = StereoDevice(left: try V4L2Camera(path: leftNode.devicePath), right: try V4L2Camera(path: rightNode.devicePath))
        let format = CaptureFormat(fourCC: .mjpeg, size: Self.hd, frameInterval: FrameInterval(numerator: 1, denominator: 30))
        do {
            try device.configure(StereoConfiguration(format: format))
            Issue.record("configured over budget")
        } catch StereoDeviceError.overBudget(_, let cost, let alternatives, _) {
            print("kernel/uvc: refused: \(cost.explanation); \(alternatives.count) alternatives")
            #expect(abs(cost.cost - 6144.0 / 6000) < 1e-9)
            #expect(!alternatives.isEmpty)
        }
    }
}

