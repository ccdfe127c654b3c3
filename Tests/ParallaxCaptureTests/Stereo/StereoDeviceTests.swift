import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxTestSupport
import Testing

/// Two virtual UVC webcams made into one stereo device: shared formats, the hardware cost
/// against the virtual USB bus, the frame-rate cap, one side off, calibration and controls.
@Suite("Stereo device: shared formats, hardware cost, cap, one side off, calibration, controls")
struct StereoDeviceTests {
    static func size(_ w: Int, _ h: Int) -> ImageSize { ImageSize(width: w, height: h) }
    static func fps(_ n: UInt32) -> FrameInterval { FrameInterval(numerator: 1, denominator: n) }
    static func format(_ text: String) -> CaptureFormat { CaptureFormat(parsing: text)! }

    /// A USB 2.0 webcam: YUYV up to 1280×720, MJPEG, GREY; on `bus` at `speed` Mbit/s.
    static func webcam(_ path: String, bus: Int, port: String, speed: Double = 480,
                       packets: [Int] = []) -> VirtualCameraSpec {
        var spec = VirtualCameraSpec(
            path: path, card: "Webcam \(port)", busInfo: "usb-0000:00:14.0-\(port)",
            formats: [
                .init(fourCC: .yuyv, sizes: [size(1280, 720), size(800, 600), size(640, 480), size(320, 240)],
                      intervals: [fps(30), fps(25), fps(15), fps(10), fps(5)]),
                .init(fourCC: .mjpeg, sizes: [size(1280, 720), size(640, 480)], intervals: [fps(30)]),
                .init(fourCC: .grey, sizes: [size(640, 480)], intervals: [fps(60), fps(30)]),
            ])
        spec.usb = USBLocation(bus: bus, portPath: port, speedMbps: speed, serial: "SN-\(port)", isochronousPacketSizes: packets)
        return spec
    }

    /// Two webcams on one bus (`shared`) or on buses 1 and 2, and the stereo device over them.
    static func pair(shared: Bool, speed: Double = 480, packets: [Int] = []) throws -> (VirtualUVCDriver, StereoDevice) {
        let driver = VirtualUVCDriver(cameras: [
            webcam("/dev/video0", bus: 1, port: "1", speed: speed, packets: packets),
            webcam("/dev/video2", bus: shared ? 1 : 2, port: "2", speed: speed, packets: packets),
        ])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2"))
        return (driver, device)
    }

    /// Collects a stereo device's outputs.
    final class Outputs: @unchecked Sendable {
        private let lock = NSLock()
        private var frames = PerSide<[Frame]>(repeating: [])
        private var events: [(CaptureEvent, StereoSide)] = []
        private var markers: [String] = []
        let keepFrames: Bool
        init(keepFrames: Bool = true) { self.keepFrames = keepFrames }

        var sequences = PerSide<[UInt64]>(repeating: [])
        var timestamps = PerSide<[Int64]>(repeating: [])
        var models = PerSide<[CameraModel?]>(repeating: [])

        var handler: @Sendable (StereoOutput) -> Void {
            { [self] output in
                lock.lock(); defer { lock.unlock() }
                switch output {
                case .frame(let frame, let side):
                    sequences[side].append(frame.sequence)
                    timestamps[side].append(frame.timestampNanoseconds)
                    models[side].append(frame.camera)
                    if keepFrames && frames[side].count < 4 { frames[side].append(frame) }
                case .event(let event, let side): events.append((event, side))
                case .disabled(let side): markers.append("disabled \(side)")
                case .enabled(let side): markers.append("enabled \(side)")
                case .reconnected(let side, let isEnabled): markers.append("reconnected \(side)\(isEnabled ? "" : " (off)")")
                }
            }
        }
        func count(_ side: StereoSide) -> Int { lock.lock(); defer { lock.unlock() }; return sequences[side].count }
        func snapshot() -> (PerSide<[UInt64]>, PerSide<[Int64]>, PerSide<[CameraModel?]>, [String]) {
            lock.lock(); defer { lock.unlock() }
            return (sequences, timestamps, models, markers)
        }
        func drops(_ reason: DropReason) -> Int {
            lock.lock(); defer { lock.unlock() }
            return events.reduce(0) { total, e in if case .dropped(let n, let r) = e.0, r == reason { return total + n }; return total }
        }
        /// Waits until both sides delivered `count` frames (or the side given), up to `seconds`.
        func wait(for count: Int, on sides: [StereoSide] = [.left, .right], seconds: Double = 5) -> Bool {
            let deadline = Date(timeIntervalSinceNow: seconds)
            while Date() < deadline {
                if sides.allSatisfy({ self.count($0) >= count }) { return true }
                usleep(2000)
            }
            return false
        }
    }

    // MARK: Formats

    @Test("The preferred format is the largest both run at 25 fps or more, not the largest listed (vivid lists 2160p at 2 fps)")
    func preferredFormatRunsAt30() throws {
        // Like vivid: the biggest size only at a few frames per second.
        func camera(_ path: String, port: String) -> VirtualCameraSpec {
            var spec = VirtualCameraSpec(
                path: path, card: "Test pattern \(port)", busInfo: "platform-vivid.\(port)",
                formats: [
                    .init(fourCC: .yuyv, sizes: [Self.size(3840, 2160)], intervals: [Self.fps(2), Self.fps(1)]),
                    .init(fourCC: .grey, sizes: [Self.size(1280, 720), Self.size(640, 480)], intervals: [Self.fps(25), Self.fps(15)]),
                ])
            spec.usb = nil
            return spec
        }
        let driver = VirtualUVCDriver(cameras: [camera("/dev/video0", port: "0"), camera("/dev/video1", port: "1")])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video1"))
        let preferred = try #require(try device.preferredFormat())
        #expect(preferred.format == Self.format("1280x720@25:GREY"), "\(preferred)")
        // With nothing at 30 fps, the fastest wins, then the largest.
        let slow = VirtualUVCDriver(cameras: ["/dev/video0", "/dev/video1"].map { path in
            VirtualCameraSpec(path: path, card: "Slow", busInfo: "platform-slow.\(path.last!)",
                              formats: [.init(fourCC: .yuyv, sizes: [Self.size(1920, 1080), Self.size(640, 480)],
                                              intervals: [Self.fps(15), Self.fps(5)])])
        })
        let slowDevice = StereoDevice(left: try slow.camera(at: "/dev/video0"), right: try slow.camera(at: "/dev/video1"))
        #expect(try slowDevice.preferredFormat()?.format == Self.format("1920x1080@15:YUYV"))
    }

    /// README: the format defaults to the largest shared one both cameras run at 25 fps or more
    /// within the USB bandwidth (`capture` and `stream` without --format take
    /// ``StereoDevice/preferredFormat()``; preferredFormatRunsAt30 holds the 25 fps rule).
    @Test("Two webcams on one USB 2.0 bus default to the largest shared format that fits it, not the largest listed")
    func preferredFormatFitsTheBus() throws {
        let (_, device) = try Self.pair(shared: true)
        let preferred = try #require(try device.preferredFormat())
        print("preferred on one USB 2.0 bus: \(preferred)")
        #expect(preferred.cost.runs && preferred.format.pixelFormat != nil)
        func area(_ f: CaptureFormat) -> Int { f.size.width * f.size.height }
        // Larger uncompressed formats at 25 fps or more exist (800x600@25 and 1280x720@30 YUYV)
        // and none of them fits: the choice was the bus's, not the list's.
        let larger = try device.sharedFormats().filter {
            area($0.format) > area(preferred.format) && $0.format.frameInterval.framesPerSecond >= 24.9 && $0.format.pixelFormat != nil
        }
        #expect(!larger.isEmpty && larger.allSatisfy { !$0.cost.runs }, "\(larger)")
        #expect(try device.configure(StereoConfiguration(format: preferred.format)).format == preferred.format)
    }

    @Test("Two cameras with no common format: the error names what each offers")
    func noCommonFormat() throws {
        var greyOnly = Self.webcam("/dev/video0", bus: 1, port: "1")
        greyOnly.formats = [.init(fourCC: .grey, sizes: [Self.size(640, 480)], intervals: [Self.fps(30)])]
        var colour = Self.webcam("/dev/video2", bus: 2, port: "2")
        colour.formats = Array(colour.formats.prefix(2))
        let driver = VirtualUVCDriver(cameras: [greyOnly, colour])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2"))
        let error = #expect(throws: StereoDeviceError.self) { try device.sharedFormats() }
        let text = error?.description ?? ""
        print("no common format: \(text)")
        #expect(text.contains("share no format"))
        #expect(text.contains("left (Webcam 1) offers GREY 640x480@30"))
        #expect(text.contains("right (Webcam 2) offers YUYV 1280x720@30") && text.contains("MJPG 1280x720@30"))
        #expect(throws: StereoDeviceError.self) { try device.configure(StereoConfiguration(format: Self.format("640x480@30:GREY"))) }
        #expect(!driver.isStreaming("/dev/video0") && !driver.isStreaming("/dev/video2"))
    }

    @Test("Drivers that round the same request differently are refused with both values named")
    func driversDisagree() throws {
        func stepwise(_ path: String, step: ImageSize) -> VirtualCameraSpec {
            let sizes = V4L2Range.stepwise(min: Self.size(160, 120), max: Self.size(1920, 1080), step: step)
            let rates = V4L2Range.continuous(min: Self.fps(60), max: Self.fps(1))
            return VirtualCameraSpec(path: path, driver: "unicam", formats: [.init(fourCC: .grey, sizeRange: sizes, intervalRange: rates)])
        }
        let driver = VirtualUVCDriver(cameras: [stepwise("/dev/video0", step: Self.size(16, 8)), stepwise("/dev/video2", step: Self.size(32, 16))])
        let device = StereoDevice(left: try V4L2Camera(path: "/dev/video0", syscalls: driver),
                                  right: try V4L2Camera(path: "/dev/video2", syscalls: driver))
        // Inside both ranges, the common sizes on both grids are shared (800×600 lies on both,
        // 1280×720 only on the 16×8 one).
        let shared = try device.sharedFormats().map(\.format)
        #expect(shared.contains(Self.format("800x600@30:GREY")) && shared.contains(Self.format("640x360@24:GREY")))
        #expect(!shared.contains(Self.format("1280x720@30:GREY")))
        // 1001×701: the 16×8 grid gives 1008×704, the 32×16 grid 992×696.
        let error = #expect(throws: StereoDeviceError.self) {
            try device.configure(StereoConfiguration(format: Self.format("1001x701@30:GREY")))
        }
        let text = error?.description ?? ""
        print("drivers disagree: \(text)")
        #expect(text.contains("left 1008x704@30:GREY") && text.contains("right 992x696@30:GREY"))
        // A size both grids hold exactly is accepted.
        #expect(try device.configure(StereoConfiguration(format: Self.format("800x600@30:GREY"))).format == Self.format("800x600@30:GREY"))
    }

    // MARK: Hardware cost against the virtual bus

    /// README: the simulated rig and recordings cost nothing (`HardwareCost`: devices without a
    /// USB bus are no resource of a bus).
    @Test("The simulated rig costs nothing")
    func simulatedRigCostsNothing() throws {
        let rig = SimulatedRigDevice(rig: .example(size: Self.size(160, 120)), pace: .asFastAsPossible)
        let device = StereoDevice(simulated: rig)
        let format = try #require(try device.preferredFormat())
        #expect(format.cost.cost == 0 && format.cost.runs && device.cost(of: StereoConfiguration(format: format.format)).cost == 0)
    }

    /// The formats README.md has two webcams stream: both fit one USB 2.0 bus, so the examples
    /// run as written (the device refuses a cost of 1.0 or more before streaming).
    @Test("The README's webcam formats fit two USB 2.0 cameras on one bus, at the costs it quotes")
    func readmeFormatsFitOneUSB2Bus() throws {
        let readme = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../../../README.md").standardized, encoding: .utf8)
        let (_, device) = try Self.pair(shared: true)
        for (configuration, quoted) in [
            (StereoConfiguration(format: Self.format("640x480@30:YUYV")), "CaptureFormat(parsing: \"640x480@30:YUYV\")"),
            (StereoConfiguration(format: Self.format("800x600@25:YUYV"), maximumFramesPerSecond: 15), "0.661 capped"),
        ] {
            let cost = device.cost(of: configuration)
            print("README: \(configuration) on one USB 2.0 bus: \(cost.cost)")
            #expect(cost.runs, "\(configuration): \(cost)")
            #expect(readme.contains(quoted), "README.md no longer shows \(quoted)")
            #expect(try device.configure(configuration).format.size == configuration.format.size)
        }
        // Uncapped, the same format is the README's "1.02 at 25 fps": 2 × 3060 of 6000, refused.
        let uncapped = device.cost(of: StereoConfiguration(format: Self.format("800x600@25:YUYV")))
        #expect(!uncapped.runs && abs(uncapped.cost - 6120.0 / 6000) < 1e-12 && readme.contains("1.02 at 25 fps"))
    }

    /// HardwareCostModel.md: "Cameras are grouped by `busnum` from sysfs, so the USB 2
    /// companion of a SuperSpeed port counts as a bus of its own". A USB 3 port is two buses
    /// to Linux: a USB 2 camera in it is on the companion (bus 1 here), a USB 3 camera in the
    /// port beside it on the SuperSpeed bus (2); each is costed against its own budget.
    @Test("a USB 2 camera on a SuperSpeed port's companion bus is costed on a bus of its own, against the USB 2 budget")
    func companionBusIsABusOfItsOwn() throws {
        let driver = VirtualUVCDriver(cameras: [
            Self.webcam("/dev/video0", bus: 1, port: "1", speed: 480),
            Self.webcam("/dev/video2", bus: 2, port: "1", speed: 5000),
        ])
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0"), right: try driver.camera(at: "/dev/video2"))
        // 640·480·2·30 / 8000 + 12 = 2316 bytes per microframe: the 2688-byte alternate
        // setting on the USB 2 bus, three 1024-byte packets (3072) on the SuperSpeed one.
        let cost = device.cost(of: StereoConfiguration(format: Self.format("640x480@30:YUYV")))
        #expect(cost.buses.count == 2, "\(cost.buses)")
        let usb2 = try #require(cost.buses.first { $0.speed == .high })
        let superSpeed = try #require(cost.buses.first { $0.speed == .superSpeed(megabitsPerSecond: 5000) })
        #expect(usb2.reservedBytes == 2688 && superSpeed.reservedBytes == 3072, "\(cost.buses)")
        #expect(abs(usb2.cost - 2688.0 / 6000) < 1e-12 && abs(superSpeed.cost - 3072.0 / 56_250) < 1e-12, "\(cost.buses)")
        // On one bus, the two would be 2 × 2688 of 6000.
        #expect(abs(cost.cost - 2688.0 / 6000) < 1e-12 && cost.runs)
    }

    /// HardwareCostModel.md: configure "refuses 1.0 or more". Cameras whose only alternate
    /// setting is 3000 bytes put two 640×480 YUYV streams (2316 bytes each) at exactly
    /// 6000 of 6000: refused; at 2999 bytes, 5998 of 6000: they run.
    @Test("a cost of exactly 1.0 is refused before STREAMON; just under it runs")
    func exactlyOneIsRefused() throws {
        let wanted = StereoConfiguration(format: Self.format("640x480@30:YUYV"))
        let (_, full) = try Self.pair(shared: true, packets: [3000])
        let cost = full.cost(of: wanted)
        #expect(cost.cost == 1.0 && !cost.runs, "\(cost)")
        #expect(throws: StereoDeviceError.self) { try full.configure(wanted) }
        let (_, under) = try Self.pair(shared: true, packets: [2999])
        #expect(under.cost(of: wanted).cost == 5998.0 / 6000 && under.cost(of: wanted).runs)
        #expect(try under.configure(wanted).format.size == wanted.format.size)
    }

    @Test("A format far larger than any camera's (as text can say) is costed and offered alternatives, without overflow")
    func hugeFormatIsPlannedWithoutOverflow() throws {
        // The values fuzz target's input: width × height is past Int.max (the planner trapped).
        let huge = try #require(CaptureFormat(parsing: "1280x72923372038580721@31:YUYV"))
        let planned = PlannedRig(formats: PerSide(repeating: huge), sharedBus: true, speed: .high)
        #expect(!planned.cost.runs)
        let alternatives = planned.alternatives(limit: 3)
        #expect(!alternatives.isEmpty && alternatives.allSatisfy { $0.cost.runs }, "\(alternatives)")
    }

    @Test("Two YUYV 1280×720 at 30 fps on one USB 2.0 bus: refused before STREAMON, and every alternative streams")
    func overBudgetRefusedWithAlternatives() throws {
        let (driver, device) = try Self.pair(shared: true)
        let wanted = StereoConfiguration(format: Self.format("1280x720@30:YUYV"))
        let cost = device.cost(of: wanted)
        print("2 × YUYV 1280x720@30 on one USB 2.0 bus: \(cost)")
        // 1280·720·2·30 / 8000 + 12 = 6924 bytes per microframe; the largest packet is 3060.
        #expect(cost.streams.allSatisfy { $0.bytesPerInterval == 6924 && $0.packetBytes == nil })
        #expect(abs(cost.cost - 13848.0 / 6000) < 1e-12)
        let error = #expect(throws: StereoDeviceError.self) { try device.configure(wanted) }
        guard case .overBudget(_, _, let alternatives, _)? = error else {
            Issue.record("expected overBudget, got \(String(describing: error))")
            return
        }
        print("alternatives: " + alternatives.map(\.description).joined(separator: "; "))
        #expect(driver.framesProduced("/dev/video0") == 0 && !driver.isStreaming("/dev/video0") && !driver.isStreaming("/dev/video2"))
        #expect(alternatives.count >= 3)
        #expect(alternatives.allSatisfy { $0.cost.cost < 1 })
        #expect(alternatives.map(\.penalty) == alternatives.map(\.penalty).sorted())
        // No alternative is listed twice (a cap the cameras can be set to is that lower-rate format).
        let delivered = alternatives.map { alternative -> String in
            let streaming = device.streamingFormat(for: alternative.configuration)
            let rate = min(streaming.frameInterval.framesPerSecond, alternative.configuration.maximumFramesPerSecond ?? .infinity)
            return "\(streaming.fourCC) \(streaming.size) \(rate)"
        }
        #expect(Set(delivered).count == delivered.count, "\(delivered)")
        for alternative in alternatives {
            try device.configure(alternative.configuration)
            let outputs = Outputs(keepFrames: false)
            try device.start(outputs.handler)
            let streamed = outputs.wait(for: 1, seconds: 3)
            device.stop()
            #expect(streamed, "\(alternative) should stream on the shared bus")
        }
        // Cheapest by preference: keeping the resolution lowers the rate; keeping the rate lowers the size.
        let keepSize = try #require(device.reducingCost(of: wanted, preferring: .resolution))
        let keepRate = try #require(device.reducingCost(of: wanted, preferring: .frameRate))
        print("reducing cost, keeping resolution: \(keepSize); keeping frame rate: \(keepRate)")
        #expect(keepSize.format.size == Self.size(1280, 720) || keepSize.format.fourCC == .mjpeg)
        #expect(device.streamingFormat(for: keepRate).frameInterval == Self.fps(30))
    }

    @Test("Separate buses: a pair over budget only because it shares a bus runs on two buses; 720p30 YUYV needs SuperSpeed")
    func separateBuses() throws {
        // 800·600·2·25 / 8000 + 12 = 3012 → the 3060-byte setting; two of them exceed 6000.
        let format = StereoConfiguration(format: Self.format("800x600@25:YUYV"))
        let (sharedDriver, shared) = try Self.pair(shared: true)
        #expect(abs(shared.cost(of: format).cost - 6120.0 / 6000) < 1e-12)
        #expect(throws: StereoDeviceError.self) { try shared.configure(format) }
        #expect(!sharedDriver.isStreaming("/dev/video0"))
        let (driver, separate) = try Self.pair(shared: false)
        #expect(abs(separate.cost(of: format).cost - 3060.0 / 6000) < 1e-12)
        try separate.configure(format)
        let outputs = Outputs(keepFrames: false)
        try separate.start(outputs.handler)
        #expect(outputs.wait(for: 2))
        #expect(driver.reservedBandwidth(onBus: 1) == 3060 && driver.reservedBandwidth(onBus: 2) == 3060)
        separate.stop()
        // 720p30 YUYV cannot fit any USB 2.0 packet, separate bus or not ...
        let hd = StereoConfiguration(format: Self.format("1280x720@30:YUYV"))
        #expect(separate.cost(of: hd).cost > 2)
        // ... but two SuperSpeed cameras (bursts of 1024-byte packets) run it, even on one bus.
        let superSpeedPackets = (1...48).map { $0 * 1024 }
        let (fastDriver, fast) = try Self.pair(shared: true, speed: 5000, packets: superSpeedPackets)
        let fastCost = fast.cost(of: hd)
        print("2 × YUYV 1280x720@30 on one SuperSpeed bus: \(fastCost)")
        #expect(abs(fastCost.cost - 2.0 * 7168 / 56250) < 1e-12)
        try fast.configure(hd)
        let hdOutputs = Outputs(keepFrames: false)
        try fast.start(hdOutputs.handler)
        #expect(hdOutputs.wait(for: 2))
        #expect(fastDriver.reservedBandwidth(onBus: 1) == 2 * 7168)
        fast.stop()
    }

    @Test("For every shared format on one bus, cost < 1.0 and STREAMON succeeding agree")
    func costAgreesWithStreamOn() throws {
        let (driver, device) = try Self.pair(shared: true)
        let formats = try device.sharedFormats()
        var fits = 0, refused = 0
        for shared in formats {
            try device.configure(StereoConfiguration(format: shared.format), allowingOverBudget: true)
            var started = true
            do { try device.start { _ in } } catch { started = false }
            let bothStreaming = driver.isStreaming("/dev/video0") && driver.isStreaming("/dev/video2")
            device.stop()
            #expect(started == shared.cost.runs, "\(shared): estimate \(shared.cost), STREAMON \(started ? "succeeded" : "failed")")
            #expect(started == bothStreaming)
            if started { fits += 1 } else { refused += 1 }
        }
        print("cost vs STREAMON sweep on one USB 2.0 bus: \(formats.count) formats, \(fits) run, \(refused) refused, all agree")
        // The README quotes these: YUYV 4 sizes × 5 rates, MJPG 2 sizes, GREY 2 rates.
        #expect(formats.count == 24 && fits == 17 && refused == 7)
    }

    @Test("An ENOSPC despite the estimate is reported and remembered for the pair and format")
    func streamOnRefusalRemembered() throws {
        let (driver, device) = try Self.pair(shared: false)
        let format = StereoConfiguration(format: Self.format("640x480@15:YUYV"))
        try device.configure(format)
        #expect(device.cost(of: format).runs)
        driver.inject(.noSpaceAtStreamOn, into: "/dev/video2")
        let error = #expect(throws: StereoDeviceError.self) { try device.start { _ in } }
        guard case .refusedAtStreamOn(let side, _, _, _)? = error else {
            Issue.record("expected refusedAtStreamOn, got \(String(describing: error))")
            return
        }
        #expect(side == .right)
        #expect(!driver.isStreaming("/dev/video0"))
        let after = device.cost(of: format)
        #expect(after.refusedAtStreamOnBefore && !after.runs)
        #expect(throws: StereoDeviceError.self) { try device.start { _ in } }
    }

    // MARK: Cap, one side off

    @Test("A frame-rate cap lowers the cost and the rate; a cap the cameras cannot be set to is kept by decimation")
    func frameRateCap() throws {
        let (_, device) = try Self.pair(shared: true)
        let uncapped = StereoConfiguration(format: Self.format("800x600@25:YUYV"))
        let capped = StereoConfiguration(format: Self.format("800x600@25:YUYV"), maximumFramesPerSecond: 15)
        #expect(device.cost(of: uncapped).cost >= 1)
        // 800·600·2·15 / 8000 + 12 = 1812 → 1984-byte packets, 3968 of 6000.
        #expect(abs(device.cost(of: capped).cost - 3968.0 / 6000) < 1e-12)
        let set = try device.configure(capped)
        #expect(set.format.frameInterval == Self.fps(15))
        // GREY 640×480 is offered at 60 and 30 fps only: a 12 fps cap must decimate.
        let (_, grey) = try Self.pair(shared: false)
        try grey.configure(StereoConfiguration(format: Self.format("640x480@30:GREY"), maximumFramesPerSecond: 12))
        #expect(grey.activeFormats?.left.frameInterval == Self.fps(30))
        let outputs = Outputs(keepFrames: false)
        try grey.start(outputs.handler)
        _ = outputs.wait(for: 13, seconds: 4)
        grey.stop()
        let (_, timestamps, _, _) = outputs.snapshot()
        for side in StereoSide.allCases {
            let t = timestamps[side]
            try #require(t.count >= 8)
            // Over n delivered frames the span is at least (n − 1) cap intervals, less half a camera interval.
            let span = Double(t.last! - t.first!), minimum = Double(t.count - 1) * 1e9 / 12 - 1e9 / 60
            print("cap 12 fps on 30 fps cameras, \(side): \(t.count) frames over \(span / 1e6) ms (at least \(minimum / 1e6) ms)")
            #expect(span >= minimum)
        }
        #expect(outputs.drops(.frameRateCap) > 0)
    }

    @Test("One side off and on mid-stream: the other's sequence never breaks, the cost drops, the gap is constituent_disabled")
    func disableAndEnable() throws {
        let (driver, device) = try Self.pair(shared: true)
        try device.configure(StereoConfiguration(format: Self.format("640x480@30:YUYV")))
        let full = try #require(device.hardwareCost)
        // Pairs go to a handler that lets them go at once: a side's frames must all be
        // released before it can start again (its driver buffers are reallocated).
        let synchronizer = OutputSynchronizer<Frame>(
            configuration: SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: 33_333_333, queueCapacity: 4),
            pairHandler: { _ in })
        let outputs = Outputs(keepFrames: false)
        let forward = outputs.handler
        try device.start { output in
            forward(output)
            synchronizer.push(output)
        }
        defer { device.stop() }
        #expect(outputs.wait(for: 6))
        try device.setEnabled(false, .right)
        #expect(!driver.isStreaming("/dev/video2") && driver.isStreaming("/dev/video0"))
        let single = try #require(device.hardwareCost)
        print("cost with both sides: \(full.cost), with the right side off: \(single.cost)")
        #expect(single.cost < full.cost && abs(single.cost - full.cost / 2) < 1e-12)
        let leftBefore = outputs.count(.left)
        #expect(outputs.wait(for: leftBefore + 8, on: [.left]))
        try device.setEnabled(true, .right)
        let rightBefore = outputs.count(.right)
        #expect(outputs.wait(for: rightBefore + 6, on: [.right]))
        device.stop()
        synchronizer.finish()
        let (sequences, _, _, markers) = outputs.snapshot()
        #expect(markers == ["disabled right", "enabled right"])
        let left = sequences.left
        #expect(zip(left, left.dropFirst()).allSatisfy { $1 == $0 + 1 }, "left sequence broke: \(left)")
        let statistics = synchronizer.statistics
        print("left frames \(left.count), pairs \(statistics.pairsMade), left dropped as constituent_disabled: \(statistics.dropped(.left, reason: .constituentDisabled))")
        #expect(statistics.dropped(.left, reason: .constituentDisabled) >= 8)
        #expect(statistics.pairsMade >= 10)
    }

    // MARK: Side by side, simulated, calibration, controls

    @Test("A side-by-side camera yields pairs with zero skew, and costs one stream of the full width")
    func sideBySideZeroSkew() throws {
        var spec = Self.webcam("/dev/video0", bus: 1, port: "1")
        spec.formats = [.init(fourCC: .yuyv, sizes: [Self.size(1280, 480), Self.size(640, 240)], intervals: [Self.fps(30), Self.fps(15)])]
        let driver = VirtualUVCDriver(cameras: [spec])
        let device = StereoDevice(sideBySide: try driver.camera(at: "/dev/video0"))
        let format = StereoConfiguration(format: Self.format("640x480@15:YUYV"))
        let cost = device.cost(of: format)
        // One stream of 1280×480 at 15 fps: 1280·480·2·15 / 8000 + 12 = 2316 → 2688.
        #expect(cost.streams.count == 1 && cost.streams[0].packetBytes == 2688)
        try device.configure(format)
        // Keep only the numbers: a pair held keeps two driver buffers from the camera.
        let collected = Locked<[(Int64, Int64, UInt64, UInt64)]>([])
        let synchronizer = OutputSynchronizer<Frame>(
            configuration: SynchronizerConfiguration(policy: .exact(.sequence), frameIntervalNanoseconds: 66_666_666, queueCapacity: 4),
            pairHandler: { pair in
                collected.withLock {
                    $0.append((pair.left.timestampNanoseconds, pair.right.timestampNanoseconds, pair.left.sequence, pair.right.sequence))
                }
            })
        try device.start { synchronizer.push($0) }
        let deadline = Date(timeIntervalSinceNow: 5)
        while collected.withLock({ $0.count }) < 5 && Date() < deadline { usleep(20_000) }
        device.stop()
        synchronizer.finish()
        let pairs = collected.withLock { $0 }
        print("side-by-side: \(pairs.count) pairs, skews \(pairs.map { $0.1 - $0.0 })")
        #expect(pairs.count >= 5)
        #expect(pairs.allSatisfy { $0.0 == $0.1 && $0.2 == $0.3 })
    }

    @Test("Every frame of a calibrated device carries the camera model of the active format")
    func perFrameIntrinsics() throws {
        let rig = SimulatedStereoRig.example(size: Self.size(640, 480))
        let simulated = SimulatedRigDevice(rig: rig, pace: .asFastAsPossible)
        let device = StereoDevice(simulated: simulated)
        var calibration = rig.calibration
        try device.attach(calibration)
        try device.configure(StereoConfiguration(format: Self.format("320x240@30:GREY")))
        let outputs = Outputs(keepFrames: false)
        try device.start(outputs.handler)
        #expect(outputs.wait(for: 10))
        device.stop()
        let (_, _, models, _) = outputs.snapshot()
        for side in StereoSide.allCases {
            let expected = calibration[side].resized(to: Self.size(320, 240))
            #expect(models[side].count >= 10)
            #expect(models[side].allSatisfy { $0 == expected })
            #expect(abs((models[side].first??.intrinsics.fx ?? 0) - (side == .left ? calibration.left : calibration.right).intrinsics.fx / 2) < 1e-12)
        }
        // A 16:9 mode of the 4:3 calibration: centre crop of 640×360, then scaled.
        let wide = calibration.left.adapted(to: Self.size(1280, 720))
        #expect(abs(wide.intrinsics.fx - calibration.left.intrinsics.fx * 2) < 1e-9)
        #expect(abs(wide.intrinsics.cy - ((calibration.left.intrinsics.cy - 60 + 0.5) * 2 - 0.5)) < 1e-9)
        // A calibration that records other cameras is refused unless forced.
        calibration.calibratedCameras = PerSide(left: "usb-1-1", right: "usb-1-2")
        let error = #expect(throws: StereoDeviceError.self) { try device.attach(calibration) }
        #expect(error?.description.contains("usb-1-1") == true)
        try device.attach(calibration, force: true)
        let text = calibration.jsonText()
        #expect(try StereoCalibration(jsonText: text).calibratedCameras == PerSide(left: "usb-1-1", right: "usb-1-2"))
        calibration.calibratedCameras = device.identities.map(\.stableID)
        try device.attach(calibration)
    }

    @Test("Controls are copied from one side to the other; a control one side lacks is reported")
    func matchedControls() throws {
        var left = Self.webcam("/dev/video0", bus: 1, port: "1")
        left.controls.append(.init(id: .focusAbsolute, name: "Focus", minimum: 0, maximum: 250, step: 5, defaultValue: 0))
        let driver = VirtualUVCDriver(cameras: [left, Self.webcam("/dev/video2", bus: 2, port: "2")])
        let l = try driver.camera(at: "/dev/video0"), r = try driver.camera(at: "/dev/video2")
        try l.set(.exposureAuto, to: 1)
        try l.set(.exposureAbsolute, to: 250)
        try l.set(.gain, to: 77)
        try l.set(.autoWhiteBalance, to: 0)
        try l.set(.whiteBalanceTemperature, to: 5000)
        let device = StereoDevice(left: l, right: r)
        let report = try device.matchControls(from: .left)
        print("control match:\n\(report)")
        #expect(report.isComplete)
        #expect(report.missing.right == [.focusAbsolute] && report.missing.left.isEmpty)
        #expect(report.automaticModesOn.isEmpty)
        for id in [CameraControlID.exposureAuto, .exposureAbsolute, .gain, .autoWhiteBalance, .whiteBalanceTemperature] {
            #expect(try r.value(of: id) == l.value(of: id))
        }
        #expect(report.copied.first?.control == .exposureAuto)
    }

    /// README: matchControls "copies exposure, gain, white balance and focus (auto switches
    /// first) to the other side and reports … automatic modes still on". Both webcams here have
    /// focus (its auto switch and an absolute value). The left camera is left in its automatic
    /// modes (aperture-priority exposure, automatic white balance and focus): they are copied and
    /// reported; the values those modes govern are not copied (uvcvideo refuses to set them,
    /// EACCES, while the mode is on; KernelUVCTests shows it on the real driver). Then a right camera whose exposure menu has no manual mode (3, aperture priority,
    /// only, as many UVC webcams): asked for manual exposure it keeps 3, and the report shows it
    /// as a copy the right camera did not keep (`automaticModesOn` reads the source side only).
    @Test("matchControls copies focus and reports automatic modes still on, and a right camera that keeps its auto exposure")
    func matchedControlsReportAutomaticModes() throws {
        func withFocus(_ spec: VirtualCameraSpec) -> VirtualCameraSpec {
            var spec = spec
            spec.controls += [.init(id: .autoFocus, name: "Focus, Automatic Continuous", minimum: 0, maximum: 1, defaultValue: 1, isBoolean: true),
                              .init(id: .focusAbsolute, name: "Focus (absolute)", minimum: 0, maximum: 250, step: 5, defaultValue: 0)]
            return spec
        }
        let driver = VirtualUVCDriver(cameras: [withFocus(Self.webcam("/dev/video0", bus: 1, port: "1")),
                                                withFocus(Self.webcam("/dev/video2", bus: 2, port: "2"))])
        let l = try driver.camera(at: "/dev/video0"), r = try driver.camera(at: "/dev/video2")
        try r.set(.autoFocus, to: 0)
        try r.set(.focusAbsolute, to: 125)
        // Governed by autofocus, which is on: the driver refuses it, as uvcvideo does.
        #expect(throws: CaptureError.self) { try l.set(.focusAbsolute, to: 50) }
        try l.set(.gain, to: 77)
        let report = try StereoDevice(left: l, right: r).matchControls(from: .left)
        print("control match, left in its automatic modes:\n\(report)")
        #expect(report.isComplete && report.missing.left.isEmpty && report.missing.right.isEmpty)
        for id in [CameraControlID.autoFocus, .gain, .exposureAuto, .autoWhiteBalance] {
            #expect(report.copied.contains { $0.control == id }, "\(id) not copied")
            #expect(try r.value(of: id) == l.value(of: id), "\(id)")
        }
        for id in [CameraControlID.focusAbsolute, .exposureAbsolute, .whiteBalanceTemperature] {
            #expect(!report.copied.contains { $0.control == id }, "\(id) copied while its auto mode is on")
            #expect(report.governedByAutomaticModes.contains(id), "\(id) not reported as governed")
        }
        #expect(try r.value(of: .focusAbsolute) == 125 && r.value(of: .autoFocus) == 1)
        #expect(Set(report.automaticModesOn) == [.exposureAuto, .autoWhiteBalance, .autoFocus], "\(report.automaticModesOn)")
        #expect(report.description.contains("automatic modes on (set them to manual for stereo): "))

        // The right camera's exposure menu offers aperture priority only.
        var stubborn = Self.webcam("/dev/video2", bus: 2, port: "2")
        stubborn.controls = stubborn.controls.map { control in
            guard control.id == .exposureAuto else { return control }
            var only = control
            only.minimum = 3
            return only
        }
        let second = VirtualUVCDriver(cameras: [Self.webcam("/dev/video0", bus: 1, port: "1"), stubborn])
        let manual = try second.camera(at: "/dev/video0"), automatic = try second.camera(at: "/dev/video2")
        try manual.set(.exposureAuto, to: 1)
        try manual.set(.autoWhiteBalance, to: 0)
        let refused = try StereoDevice(left: manual, right: automatic).matchControls(from: .left)
        print("control match, right camera without manual exposure:\n\(refused)")
        #expect(!refused.isComplete)
        #expect(refused.copied.first { $0.control == .exposureAuto }.map { $0.value == 1 && $0.kept == 3 } == true)
        #expect(refused.description.contains("exposureAuto = 1 (the right camera kept 3)"), "\(refused.description)")
        #expect(try automatic.value(of: .exposureAuto) == 3)
    }

    /// README's hardware-cost table: without the camera's descriptors, a high-speed camera's
    /// packets are a typical UVC webcam's.
    @Test("Without descriptors a USB 2.0 camera's packet sizes are the typical webcam's the README lists")
    func typicalWebcamPacketSizes() {
        #expect(USBSpeed.high.typicalPacketSizes == [192, 384, 512, 640, 800, 944, 1280, 1600, 1984, 2688, 3060])
    }

    /// README: `sharedFormats()` lists native formats before emulated ones, cheapest first.
    @Test("Shared formats: native before emulated, and cheapest first within each")
    func sharedFormatsOrder() throws {
        let driver = VirtualUVCDriver(cameras: [Self.webcam("/dev/video0", bus: 1, port: "1"),
                                                Self.webcam("/dev/video2", bus: 1, port: "2")])
        let options = V4L2Camera.Options(allowEmulatedFormats: true)
        let device = StereoDevice(left: try driver.camera(at: "/dev/video0", options: options),
                                  right: try driver.camera(at: "/dev/video2", options: options))
        let shared = try device.sharedFormats()
        let native = shared.prefix { !$0.isEmulated }
        let emulated = shared.dropFirst(native.count)
        #expect(!native.isEmpty && !emulated.isEmpty, "\(shared.map(\.format))")
        #expect(emulated.allSatisfy { $0.isEmulated }, "an emulated format before a native one")
        for group in [Array(native), Array(emulated)] {
            let costs = group.map(\.cost.cost)
            #expect(costs == costs.sorted(), "costs not rising: \(costs)")
        }
    }

    @Test("The USB descriptors in sysfs give the video endpoint's packet sizes")
    func descriptorPacketSizes() throws {
        let sys = try FakeSysfs()
        defer { sys.remove() }
        try sys.addCamera(port: "1", serial: "A", videoNodes: [0, 1])
        // Device descriptor, a video control interface, then a video streaming interface with
        // alternate settings 0 (no endpoint), 1 (1×192) and 2 (3×1020 = 0x13FC).
        var bytes: [UInt8] = [18, 1] + Array(repeating: 0, count: 16)
        bytes += [9, 4, 0, 0, 1, 0x0E, 0x01, 0, 0]
        bytes += [7, 5, 0x83, 0x03, 16, 0, 6]  // interrupt endpoint: ignored
        bytes += [9, 4, 1, 0, 0, 0x0E, 0x02, 0, 0]
        bytes += [9, 4, 1, 1, 1, 0x0E, 0x02, 0, 0, 7, 5, 0x81, 0x05, 0xC0, 0x00, 1]
        bytes += [9, 4, 1, 2, 1, 0x0E, 0x02, 0, 0, 7, 5, 0x81, 0x05, 0xFC, 0x13, 1]
        let usbDevice = sys.sys + "/devices/pci0000:00/0000:00:14.0/usb1/1-1"
        try Data(bytes).write(to: URL(fileURLWithPath: usbDevice + "/descriptors"))
        let camera = try #require(V4L2Discovery(sysfsRoot: sys.sys, devRoot: sys.dev).cameras().first)
        #expect(camera.usb?.isochronousPacketSizes == [192, 3060])
        #expect(camera.identity.usb?.bus == 1 && camera.identity.usb?.speedMbps == 480)
    }
}
