import Foundation
@testable import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

/// MJPEG through a whole session: the simulated rig's views encoded at quality 90, decoded
/// on each camera's thread, paired and rectified, against the same scene rendered and
/// rectified without compression.
@Suite("Session with MJPEG cameras: decoded, rectified, paired, damaged frames dropped")
struct SessionMJPEGTests {
    static let size = ImageSize(width: 640, height: 480)

    /// A session over the simulated rig streaming MJPG, rectifying with the rig's calibration.
    static func session(_ rig: SimulatedRigDevice, decoding: MJPEGDecoding = MJPEGDecoding()) throws -> StereoSession {
        let device = StereoDevice(simulated: rig)
        try device.setMJPEGDecoding(decoding)
        try device.configure(StereoConfiguration(format: CaptureFormat(fourCC: .mjpeg, size: size,
                                                                      frameInterval: FrameInterval(numerator: 1, denominator: 30))))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        return try StereoSession(device: device, calibration: rig.rig.calibration, options: options)
    }

    /// PSNR in dB of two equal-length byte arrays.
    static func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
        let mse = zip(a, b).reduce(0.0) { $0 + (Double($1.0) - Double($1.1)) * (Double($1.0) - Double($1.1)) } / Double(a.count)
        return 10 * log10(255 * 255 / max(mse, 1e-12))
    }

    /// The vertical offset (pixels, sub-pixel) of the best match of the 15×15 block centred at
    /// (`x`, `y`) of `left` in `right`, searched over disparities 0…`maxDisparity` and rows
    /// ±2, refined by a parabola through the sums of squared differences at the best row and
    /// its neighbours; `nil` for blocks without texture.
    static func verticalOffset(_ left: [UInt8], _ right: [UInt8], width: Int, x: Int, y: Int, maxDisparity: Int) -> Double? {
        let r = 7
        func ssd(_ dx: Int, _ dy: Int) -> Double {
            var sum = 0.0
            for j in -r...r {
                for i in -r...r {
                    let d = Double(left[(y + j) * width + x + i]) - Double(right[(y + j + dy) * width + x + i - dx])
                    sum += d * d
                }
            }
            return sum
        }
        var mean = 0.0, square = 0.0
        for j in -r...r { for i in -r...r { let v = Double(left[(y + j) * width + x + i]); mean += v; square += v * v } }
        let n = Double((2 * r + 1) * (2 * r + 1))
        guard square / n - (mean / n) * (mean / n) > 100 else { return nil }  // σ > 10 levels: texture to match
        var best = (dx: 0, dy: 0, cost: Double.infinity)
        for dy in -2...2 {
            for dx in 0...maxDisparity where x - r - dx >= 0 {
                let cost = ssd(dx, dy)
                if cost < best.cost { best = (dx, dy, cost) }
            }
        }
        guard abs(best.dy) < 2 else { return nil }
        let below = ssd(best.dx, best.dy - 1), above = ssd(best.dx, best.dy + 1)
        let curvature = below - 2 * best.cost + above
        guard curvature > 0 else { return Double(best.dy) }
        return Double(best.dy) + 0.5 * (below - above) / curvature
    }

    @Test("rectified MJPEG pairs (quality 90) match the uncompressed rendering rectified: PSNR ≥ 40 dB; rows align within 0.1 px")
    func decodedPairsMatchTheUncompressedScene() async throws {
        let geometry = SimulatedStereoRig.example(size: Self.size)
        let rig = SimulatedRigDevice(rig: geometry, pixelFormat: .rgb8, pace: .asFastAsPossible)
        let session = try Self.session(rig)
        try session.start()
        var kept: (left: ImageBuffer, right: ImageBuffer)?
        for try await pair in session.pairs {
            if let left = pair.left.image, let right = pair.right.image, pair.isRectified {
                kept = (ImageBuffer(copying: left), ImageBuffer(copying: right))
            }
            if kept != nil || pair.number > 20 { break }
        }
        session.stop()
        let decoded = try #require(kept)
        #expect(decoded.left.format == .i420, "the simulated rig's JPEGs are 4:2:0")

        // The same views uncompressed, in the decoded pairs' YCbCr (full range, 4:2:0),
        // through a rectifier with the session's settings.
        let rectifier = try #require(session.rectifier)
        let reference = try rectifier.rectify(left: geometry.render(.left, format: .rgb8).converted(to: .i420),
                                              right: geometry.render(.right, format: .rgb8).converted(to: .i420))
        for (name, mine, truth) in [("left", decoded.left, reference.left), ("right", decoded.right, reference.right)] {
            let value = Self.psnr(mine.bytes, truth.bytes)
            print("MJPEG \(name): PSNR \(String(format: "%.2f", value)) dB against the uncompressed rendering (Y, Cb, Cr planes)")
            #expect(value >= 40, "\(name): \(value) dB")
        }

        // Rows align: block matching between the decoded, rectified left and right luma.
        let w = rectifier.outputSize.width, h = rectifier.outputSize.height
        let leftY = Array(decoded.left.bytes[0..<(w * h)]), rightY = Array(decoded.right.bytes[0..<(w * h)])
        var offsets: [Double] = []
        for y in stride(from: 24, to: h - 24, by: 24) {
            for x in stride(from: 96, to: w - 24, by: 24) {
                if let dy = Self.verticalOffset(leftY, rightY, width: w, x: x, y: y, maxDisparity: 80) { offsets.append(dy) }
            }
        }
        let sorted = offsets.map(abs).sorted()
        let median = sorted.isEmpty ? .infinity : sorted[sorted.count / 2]
        print("MJPEG vertical disparity: median |dy| \(String(format: "%.3f", median)) px over \(offsets.count) textured blocks")
        #expect(offsets.count >= 50 && median <= 0.1, "median |dy| \(median) px over \(offsets.count) blocks")
    }

    @Test("damaged MJPEG frames are dropped as corrupt_frame, counted, and never paired; the pairs around them are right")
    func damagedFramesAreDropped() async throws {
        let timing = SimulatedCameraTiming(corruptFrameProbability: 0.05)
        let rig = SimulatedRigDevice(rig: SimulatedStereoRig.example(size: Self.size), pixelFormat: .gray8,
                                     leftTiming: timing, rightTiming: SimulatedCameraTiming(corruptFrameProbability: 0.05),
                                     pace: .asFastAsPossible, seed: 7)
        let session = try Self.session(rig, decoding: MJPEGDecoding(output: .gray8))
        try session.start()
        var pairs = 0, wrong = 0
        for try await pair in session.pairs {
            pairs += 1
            if pair.left.sequence != pair.right.sequence { wrong += 1 }
            #expect(pair.left.image?.format == .gray8)
            if pairs >= 200 { break }
        }
        session.stop()
        let stats = session.statistics
        let corrupt = StereoSide.allCases.map { stats.lostByCamera[$0][.corruptFrame, default: 0] }
        print("MJPEG with 5 % damaged: \(pairs) pairs, corrupt_frame left \(corrupt[0]), right \(corrupt[1]), wrong pairs \(wrong)")
        // 5 % of about 210 frames a side: the binomial's mean 10.5, σ 3.2; at least one each.
        #expect(corrupt.allSatisfy { $0 >= 1 } && wrong == 0 && pairs == 200)
        #expect(stats.events.contains { $0.name == "device_error" })
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side)) }
    }
}

extension SessionMJPEGTests {
    /// More frames than a side's decode pool holds (32): each decoded frame gives its buffer
    /// back when it is freed, so the pool never runs dry while frames are let go of.
    @Test("hand-fed MJPEG frames are decoded by the stereo device and paired, rectified, as I420, past the pool's size")
    func handFedMJPEG() throws {
        let formats = Locked<[PixelFormat]>([])
        let fixture = try HandFedSession(mjpeg: true, onPair: { pair in
            if let image = pair.left.image { formats.withLock { $0.append(image.format) } }
        })
        defer { fixture.session.stop() }
        fixture.run(fixture.batch(100), timeoutSeconds: 2)
        print("hand-fed MJPEG: \(fixture.delivered) pairs, \(fixture.session.statistics.events.map(\.description))")
        #expect(fixture.delivered >= 99 && formats.withLock { $0 }.allSatisfy { $0 == .i420 })
    }
}

extension SessionMJPEGTests {
    /// A consumer (here the test, holding every frame it made) that keeps every decoded frame
    /// holds every buffer of its side's pool (32): the frames after are dropped as
    /// no_decode_buffer, counted, never a hang or a pair of stale pixels.
    @Test("frames held past the decode pool's 32 buffers are dropped as no_decode_buffer, and the account balances")
    func heldFramesExhaustThePool() throws {
        let fixture = try HandFedSession(mjpeg: true)
        defer { fixture.session.stop() }
        let held = fixture.frames(40)  // all alive until the test ends
        fixture.run(held, timeoutSeconds: 0.2)
        let stats = fixture.session.statistics
        let dropped = StereoSide.allCases.map { stats.lostByCamera[$0][.noDecodeBuffer, default: 0] }
        print("held MJPEG frames: \(fixture.delivered) pairs, no_decode_buffer \(dropped)")
        #expect(fixture.delivered == 32 && dropped == [8, 8], "\(fixture.delivered) pairs, \(dropped)")
        fixture.session.stop()
        for side in StereoSide.allCases { #expect(fixture.session.statistics.accountsForEveryFrame(side)) }
    }
}

extension SessionMJPEGTests {
    /// A damaged header can claim any size (up to 32768²); a frame whose header disagrees with
    /// the stream's format is dropped before any buffer is set aside for it, and said so once.
    @Test("a frame whose header claims another size than the stream's is a corrupt_frame drop, reported, with nothing allocated for it")
    func aFrameOfAnotherSizeIsDropped() throws {
        let decoder = try MJPEGFrameDecoder(decoding: MJPEGDecoding(), device: "left", frameSize: Self.size)
        let other = try JPEGEncoder.encode(SimulatedStereoRig.example(size: ImageSize(width: 320, height: 240)).render(.left, format: .rgb8),
                                           quality: 90)
        let camera = HandFedCamera(name: "left", format: CaptureFormat(fourCC: .mjpeg, size: Self.size,
                                                                          frameInterval: FrameInterval(numerator: 1, denominator: 30)))
        let frame = camera.frame(SharedBytes(other), timestampNanoseconds: 1, sequence: 7)
        guard case .dropped(let reason, let report) = decoder.decode(frame, model: nil) else {
            Issue.record("the 320x240 frame was decoded in a 640x480 stream")
            return
        }
        #expect(reason == .corruptFrame)
        #expect("\(report.map { "\($0)" } ?? "")".contains("frame 7 did not decode (unexpectedLayout: its header says 320x240 in a 640x480 stream)"),
                "\(String(describing: report))")
        #expect(frame.image == nil)
    }
}
