import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

@Suite("V4L2 camera options: conversion, timestamp sources, lifetime")
struct V4L2CameraOptionsTests {
    @Test("libv4l2's emulated formats appear only when asked for, flagged as emulated")
    func emulatedFormatsAreOptIn() throws {
        let driver = VirtualUVCDriver(cameras: [VirtualCameraSpec(path: "/dev/video0")])
        let native = try V4L2Camera(path: "/dev/video0", syscalls: driver)
        #expect(!native.formatDescriptions.contains { $0.isEmulated })
        #expect(!native.formatDescriptions.contains { $0.fourCC == .rgb24 })
        let converting = try V4L2Camera(path: "/dev/video0", syscalls: driver, options: .init(allowEmulatedFormats: true))
        let emulated = converting.formatDescriptions.filter(\.isEmulated).map(\.fourCC)
        #expect(emulated == [.rgb24, .bgr24])
        let rgb = CaptureFormat(fourCC: .rgb24, size: ImageSize(width: 320, height: 240), frameInterval: FrameInterval(numerator: 1, denominator: 30))
        let negotiated = try converting.negotiate(rgb)
        #expect(negotiated.actual == rgb)
        #expect(negotiated.bytesPerRow == 320 * 3)
    }

    @Test("Timestamps move to mid-exposure: start-of-exposure stamps gain half the exposure, end-of-frame stamps lose it")
    func timestampsNormalisedToMidExposure() throws {
        let interval = FrameInterval(numerator: 1, denominator: 1000)
        var formats = [VirtualCameraSpec.Format(fourCC: .grey, sizes: [ImageSize(width: 16, height: 8)], intervals: [interval])]
        formats += VirtualCameraSpec.webcamFormats
        var soe = VirtualCameraSpec(path: "/dev/video0", formats: formats, timestampJitterNanoseconds: 0)
        soe.timestampSource = .startOfExposure
        let eof = VirtualCameraSpec(path: "/dev/video1", formats: formats, timestampJitterNanoseconds: 0)
        let driver = VirtualUVCDriver(cameras: [soe, eof])
        for (path, source) in [("/dev/video0", TimestampSource.startOfExposure), ("/dev/video1", .endOfFrame)] {
            let camera = try V4L2Camera(path: path, syscalls: driver)
            try camera.configure(CaptureFormat(fourCC: .grey, size: ImageSize(width: 16, height: 8), frameInterval: interval))
            try camera.set(.exposureAuto, to: 1)  // manual, so the exposure time can be set
            try camera.set(.exposureAbsolute, to: 40)  // 40 × 100 µs = 4 ms
            let collector = FrameCollector()
            try camera.start(collector.handler)
            #expect(collector.waitForFrames(1, timeoutSeconds: 5))
            camera.stop()
            let frame = try #require(collector.frames.first)
            #expect(frame.timestampSource == source)
            #expect(frame.exposureNanoseconds == .some(Int64(4_000_000)))
            // The buffer carries the driver's stamp in whole microseconds.
            let raw = try #require(driver.driverTimestamp(path, sequence: frame.sequence)) / 1000 * 1000
            let expected = source == .startOfExposure ? raw + 2_000_000 : raw - 2_000_000
            #expect(frame.timestampNanoseconds == expected)
        }
    }

    @Test("Stepwise sizes and continuous intervals are enumerated as ranges and negotiated to the driver's step")
    func stepwiseAndContinuousRanges() throws {
        let sizes = V4L2Range.stepwise(min: ImageSize(width: 160, height: 120), max: ImageSize(width: 1280, height: 960),
                                       step: ImageSize(width: 16, height: 8))
        let intervals = V4L2Range.continuous(min: FrameInterval(numerator: 1, denominator: 120), max: FrameInterval(numerator: 1, denominator: 1))
        let spec = VirtualCameraSpec(path: "/dev/video0", driver: "unicam",
                                     formats: [.init(fourCC: .grey, sizeRange: sizes, intervalRange: intervals)])
        let camera = try V4L2Camera(path: "/dev/video0", syscalls: VirtualUVCDriver(cameras: [spec]))
        let description = try #require(camera.formatDescriptions.first)
        #expect(description.sizeRange == sizes)
        // The two ends, then the common sizes that lie on the 16 × 8 grid inside the range.
        let listed = [(160, 120), (1280, 960), (320, 240), (640, 360), (640, 480), (800, 600), (1024, 768), (1280, 720), (1280, 800)]
        #expect(description.sizes.map(\.size) == listed.map { ImageSize(width: $0.0, height: $0.1) })
        #expect(description.sizes.allSatisfy { $0.intervals == intervals })
        // Values inside the ranges that are not listed are still supported; off-grid ones are not.
        func grey(_ w: Int, _ h: Int, fps: UInt32) -> CaptureFormat {
            CaptureFormat(fourCC: .grey, size: ImageSize(width: w, height: h), frameInterval: FrameInterval(numerator: 1, denominator: fps))
        }
        #expect(try camera.supports(grey(1008, 704, fps: 25)))
        #expect(try camera.supports(grey(1280, 720, fps: 7)))
        #expect(try !camera.supports(grey(1001, 701, fps: 25)))
        #expect(try !camera.supports(grey(640, 480, fps: 200)))
        #expect(try camera.supportedFormats().contains(grey(1280, 720, fps: 30)))
        // 1001 × 701 rounds onto the 16 × 8 grid from 160 × 120: 160 + 53·16 = 1008, 120 + 73·8 = 704.
        let asked = CaptureFormat(fourCC: .grey, size: ImageSize(width: 1001, height: 701), frameInterval: FrameInterval(numerator: 1, denominator: 25))
        let result = try camera.negotiate(asked)
        #expect(result.actual.size == ImageSize(width: 1008, height: 704))
        #expect(result.actual.frameInterval == FrameInterval(numerator: 1, denominator: 25))  // inside the continuous range
        #expect(result.adjustments == ["size 1001x701 → 1008x704"])
    }

    @Test("Timestamps not on CLOCK_MONOTONIC are reported once; frames flow, stamped when dequeued")
    func nonMonotonicClockReported() throws {
        var spec = V4L2CameraTests.fastSpec()
        spec.monotonicTimestamps = false
        let driver = VirtualUVCDriver(cameras: [spec])
        let camera = try V4L2CameraTests.openFast(driver)
        let collector = FrameCollector(keepFrames: false)
        try camera.start(collector.handler)
        defer { camera.stop() }
        #expect(collector.waitForFrames(20, timeoutSeconds: 5))
        let warnings = collector.events.filter {
            if case .recoverableError(.invalidState(_, let reason)) = $0 { return reason.contains("CLOCK_MONOTONIC") }
            return false
        }
        #expect(warnings.count == 1)
    }

    /// Where the virtual driver's stamps are off CLOCK_MONOTONIC.
    enum OffClock: String, CaseIterable, Sendable { case flag, ahead, beforeTheStart }

    @Test("Timestamps off CLOCK_MONOTONIC (by the flag, far ahead, or before the stream started, as under vivid's Wrap Timestamp) become dequeue times, said once",
          arguments: OffClock.allCases)
    func timestampsOffTheClockBecomeArrivalTimes(off: OffClock) throws {
        var spec = V4L2CameraTests.fastSpec()
        spec.monotonicTimestamps = off != .flag
        let driver = VirtualUVCDriver(cameras: [spec])
        let camera = try V4L2CameraTests.openFast(driver)
        let sources = Locked<[TimestampSource]>([])
        let collector = FrameCollector(keepFrames: false) { frame in sources.withLock { $0.append(frame.timestampSource) } }
        let offset: Int64 = 1_000_000 * 1_000_000_000
        if off == .ahead { driver.inject(.timestampsAhead(nanoseconds: offset), into: V4L2CameraTests.path) }
        if off == .beforeTheStart { driver.inject(.timestampsAhead(nanoseconds: -offset), into: V4L2CameraTests.path) }
        try camera.set(.exposureAuto, to: 1)  // manual, so the exposure time can be set
        #expect(try camera.set(.exposureAbsolute, to: 100) == 100)  // 100 µs units: 10 ms
        let before = monotonicNanoseconds()
        try camera.start(collector.handler)
        #expect(collector.waitForFrames(20, timeoutSeconds: 5))
        camera.stop()
        let after = monotonicNanoseconds()
        #expect(sources.withLock { $0 }.allSatisfy { $0 == .arrival })
        // Dequeue times moved back by half the exposure (10 ms, set below), not the driver's stamps.
        let halfExposure: Int64 = 5_000_000
        #expect(collector.records.allSatisfy { $0.timestampNanoseconds > before - halfExposure && $0.timestampNanoseconds <= after - halfExposure },
                "\(before) \(after) \(collector.records.prefix(3).map(\.timestampNanoseconds))")
        let stamps = collector.records.map(\.timestampNanoseconds)
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        let warnings = collector.events.filter {
            if case .recoverableError(.invalidState(_, let reason)) = $0 { return reason.contains("CLOCK_MONOTONIC") }
            return false
        }
        #expect(warnings.count == 1)
        let said = "\(warnings)"
        switch off {
        case .flag: #expect(said.contains("are not on CLOCK_MONOTONIC"), "\(said)")
        case .ahead: #expect(said.contains("s ahead of CLOCK_MONOTONIC") && said.contains(" 99999"), "\(said)")
        case .beforeTheStart: #expect(said.contains("s before the stream started"), "\(said)")
        }
    }

    @Test("A camera released while streaming stops and closes its node")
    func releasedWhileStreaming() throws {
        let spec = VirtualCameraSpec(path: "/dev/video0", formats: [
            .init(fourCC: .grey, sizes: [ImageSize(width: 16, height: 8)], intervals: [FrameInterval(numerator: 1, denominator: 500)]),
        ])
        let driver = VirtualUVCDriver(cameras: [spec])
        let collector = FrameCollector(keepFrames: false)
        do {
            let camera = try V4L2Camera(path: "/dev/video0", syscalls: driver)
            try camera.configure(CaptureFormat(fourCC: .grey, size: ImageSize(width: 16, height: 8),
                                               frameInterval: FrameInterval(numerator: 1, denominator: 500)))
            try camera.start(collector.handler)
            #expect(collector.waitForFrames(3, timeoutSeconds: 5))
        }
        let deadline = Date(timeIntervalSinceNow: 5)
        while (driver.isStreaming("/dev/video0") || driver.openDescriptors("/dev/video0") > 0) && Date() < deadline { usleep(1000) }
        #expect(!driver.isStreaming("/dev/video0"))
        #expect(driver.openDescriptors("/dev/video0") == 0)
    }
}
