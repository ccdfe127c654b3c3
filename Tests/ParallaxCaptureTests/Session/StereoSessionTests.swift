import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

/// The session end to end on the simulated rig and the virtual UVC driver: the account,
/// ground-truth pairing, rectification, live convergence, still pairs, pressure and
/// frame-rate adaptation, one side off, and a camera unplugged and plugged back.
@Suite("Stereo session: account, pairing, rectification, convergence, stills, pressure, hot-plug")
struct StereoSessionTests {
    /// Offline (waits for the consumer): 300 pairs through `for await`, with drift, jitter
    /// and 1 % drops on each side; every frame is a pair or a drop with a reason, no pair
    /// is wrong, and nothing is lost to the consumer.
    @Test func everyFrameEndsInAPairOrADropAndNoPairIsWrong() async throws {
        let (rig, device) = SessionFixtures.simulated()
        let session = try StereoSession(device: device)
        #expect(session.backPressure == .waitForConsumer)
        try session.start()
        var sequences: [(left: UInt64, right: UInt64)] = []
        for try await pair in session.pairs {
            sequences.append((pair.left.sequence, pair.right.sequence))
            #expect(pair.left.image != nil && pair.left.frame != nil && !pair.isRectified)
            if sequences.count == 300 { break }
        }
        session.stop()
        let stats = session.statistics
        print("session account: frames \(stats.frames(.left))/\(stats.frames(.right)), delivered \(stats.pairsDelivered), "
              + "drops left \(stats.droppedByName(.left)), right \(stats.droppedByName(.right)), in flight \(stats.pairsInFlight)")
        #expect(sequences.count == 300)
        #expect(stats.pairsDelivered == 300)
        #expect(stats.pairsInFlight == 0)
        for side in StereoSide.allCases {
            #expect(stats.accountsForEveryFrame(side))
            #expect(stats.frames(side) == stats.pairsDelivered + stats.dropped(side))
            #expect(stats.lostByCamera[side][.simulated, default: 0] > 0)
        }
        // Waiting for the consumer loses nothing to it.
        #expect(stats.sessionDrops[.consumerBehind, default: 0] == 0)
        #expect(stats.synchronizer.dropped(reason: .queueOverflow) == 0)
        #expect(SessionFixtures.mismatches(sequences, rig: rig) == 0)
        // A frame is left unpaired only when its partner was lost, or at the ends of the
        // streams (a camera that joins or stops a frame or two before the other).
        let unpaired = stats.synchronizer.dropped(reason: .noMatchWithinSkew) + stats.synchronizer.dropped(reason: .superseded)
        #expect(unpaired <= stats.lost(.left) + stats.lost(.right) + 4)
    }

    /// The session rectifies each pair once, exactly as a rectifier given the same frames
    /// does, into buffers it reuses (a handful, however many pairs).
    @Test func rectifiedPairsAreTheRectifiersOutputInReusedBuffers() async throws {
        let (rig, device) = SessionFixtures.simulated(drops: 0)
        var options = StereoSessionOptions()
        options.keepsRawFrames = true
        let session = try StereoSession(device: device, calibration: rig.rig.calibration, options: options)
        let reference = try Rectifier(calibration: try #require(session.activeCalibration))
        try session.start()
        var compared = 0
        for try await pair in session.pairs {
            let raw = PerSide(left: try #require(pair.left.frame?.image), right: try #require(pair.right.frame?.image))
            var expected = PerSide(left: try ImageBuffer(format: .gray8, size: reference.outputSize),
                                   right: try ImageBuffer(format: .gray8, size: reference.outputSize))
            try reference.rectify(left: raw.left, right: raw.right, into: &expected.left, &expected.right)
            let got = try #require(pair.copyImages())
            #expect(got.left == expected.left && got.right == expected.right)
            #expect(pair.isRectified && pair.rectification != nil && pair.rectifyNanoseconds > 0)
            compared += 1
            if compared == 40 { break }
        }
        session.stop()
        let stats = session.statistics
        #expect(compared == 40)
        #expect(stats.pooledBuffers <= 5)
        #expect(stats.rectification.count >= 40)
    }

    /// The calibration follows the active format before the first pair: scaled for the same
    /// aspect ratio, centre-cropped for another, refused for compressed frames other than MJPEG.
    @Test func theCalibrationIsAdaptedToTheActiveFormatOrRefused() throws {
        let calibration = SimulatedStereoRig.example(size: ImageSize(width: 640, height: 480)).calibration
        let (_, device) = SessionFixtures.simulated(size: ImageSize(width: 320, height: 240), drops: 0)
        let session = try StereoSession(device: device, calibration: calibration)
        let adapted = try #require(session.activeCalibration)
        #expect(adapted.left.size == ImageSize(width: 320, height: 240))
        #expect(abs(adapted.left.intrinsics.fx - calibration.left.intrinsics.fx / 2) < 1e-9)
        // 4:3 calibration, 16:9 frames: the middle 640×360 rows scaled to 320×180.
        let wide = SimulatedRigDevice(rig: .example(size: ImageSize(width: 320, height: 180)), pace: .asFastAsPossible)
        let cropped = try #require(try StereoSession(device: StereoDevice(simulated: wide), calibration: calibration).activeCalibration)
        #expect(cropped.left.size == ImageSize(width: 320, height: 180))
        #expect(abs(cropped.left.intrinsics.cy - (calibration.left.intrinsics.cy - 60) / 2) < 0.5)
        // MJPEG decodes, so it is adapted like any format; another compressed format cannot be
        // rectified: refused with the reason before streaming.
        let mjpeg = CaptureFormat(fourCC: .mjpeg, size: ImageSize(width: 320, height: 240), frameInterval: SessionFixtures.interval)
        #expect(try StereoSession.adapt(calibration, to: mjpeg).left.size == ImageSize(width: 320, height: 240))
        let h264 = CaptureFormat(fourCC: "H264", size: ImageSize(width: 320, height: 240), frameInterval: SessionFixtures.interval)
        #expect {
            _ = try StereoSession.adapt(calibration, to: h264)
        } throws: { error in "\(error)".contains("H264 frames are compressed in a way Parallax does not decode") }
        // A crop that would keep under half of the calibrated image is refused too.
        let sliver = CaptureFormat(fourCC: .grey, size: ImageSize(width: 640, height: 120), frameInterval: SessionFixtures.interval)
        #expect(throws: StereoSessionError.self) { _ = try StereoSession.adapt(calibration, to: sliver) }
    }

    /// Moving the convergence plane while streaming: the next pair has zero disparity at
    /// the new distance (within the whole-pixel step), measured by block matching on the
    /// rig's background plane 2.5 m away.
    @Test func aLiveConvergenceChangeMovesTheZeroDisparityPlane() async throws {
        let size = ImageSize(width: 320, height: 240)
        let (rig, device) = SessionFixtures.simulated(size: size, drops: 0)
        let session = try StereoSession(device: device, calibration: rig.rig.calibration)
        try session.start()
        // Background only: right of and below the board, away from the tilted plane.
        let region = (x: 236..<300, y: 176..<226)
        var measured: [(asked: Double?, applied: StereoRectification, disparity: Double)] = []
        var asked: Double? = nil
        var iterator = session.pairs.makeAsyncIterator()
        for target in [nil, 2.5, 1.25] as [Double?] {
            if target != asked { try session.setConvergence(atDistance: target) }
            asked = target
            // Skip pairs rectified before the change (at most the queue plus one in work).
            var pair = try #require(try await iterator.next())
            var skipped = 0
            while pair.rectification?.convergenceDistance.map({ abs($0 - (target ?? 0)) > 0.6 }) ?? (target != nil) {
                skipped += 1
                #expect(skipped <= 3)
                pair = try #require(try await iterator.next())
            }
            let images = try #require(pair.copyImages())
            let disparity = images.left.withView { l in
                images.right.withView { r in measuredDisparity(left: l, right: r, x: region.x, y: region.y, search: -14...14) }
            }
            measured.append((target, try #require(pair.rectification), disparity))
        }
        session.stop()
        for m in measured {
            // What the applied rectification predicts for a point 2.5 m away.
            let predicted = m.applied.disparity(atDistance: 2.5)
            print("convergence asked \(m.asked.map { "\($0)" } ?? "∞"): applied \(m.applied.convergenceDistance.map { "\($0)" } ?? "∞"), "
                  + "disparity at 2.5 m predicted \(predicted), measured \(m.disparity)")
            #expect(abs(m.disparity - predicted) < 0.35)
        }
        // Classic: f·B/Z ≈ 277 · 0.06 / 2.5 ≈ 6.7 px; at 2.5 m: 0 within the 1 px step;
        // at 1.25 m the background is behind the plane: −6.7 px within the step.
        #expect(abs(measured[0].disparity - 6.7) < 0.5)
        #expect(abs(measured[1].disparity) <= 1.0)
        #expect(abs(measured[2].disparity + 6.7) <= 1.2)
    }

    /// A still pair at `.quality` averages 8 pairs of the static scene: its noise against
    /// the clean rendering is √8 smaller than a `.speed` pair's (with the 8-bit rounding,
    /// the expected ratio is √((σ² + 1/12) / ((σ² + 1/12)/8 + 1/12)) ≈ 2.77 for σ = 4).
    @Test func aQualityStillPairHasTheNoiseOfEightAveragedPairs() async throws {
        let sigma = 4.0
        let (rig, device) = SessionFixtures.simulated(drops: 0, noise: sigma)
        let session = try StereoSession(device: device)
        try session.start()
        let drain = Task { for try await _ in session.pairs {} }
        let fast = try await session.captureStillPair(quality: .speed)
        let best = try await session.captureStillPair(quality: .quality)
        session.stop()
        _ = try await drain.value
        let clean = try rig.rig.render(.left)
        func rms(_ image: ImageBuffer) -> Double {
            let a = image.bytes, b = clean.bytes
            var sum = 0.0
            for i in a.indices { sum += pow(Double(a[i]) - Double(b[i]), 2) }
            return (sum / Double(a.count)).squareRoot()
        }
        let speedNoise = rms(fast.images.left), qualityNoise = rms(best.images.left)
        let q = 1.0 / 12
        let expected = ((sigma * sigma + q) / ((sigma * sigma + q) / 8 + q)).squareRoot()
        print("still noise: speed \(speedNoise), quality \(qualityNoise), ratio \(speedNoise / qualityNoise), expected \(expected)")
        #expect(fast.pairsAveraged == 1 && best.pairsAveraged == 8 && !best.motionDetected)
        #expect(abs(speedNoise - (sigma * sigma + q).squareRoot()) < 0.15)
        #expect(abs(speedNoise / qualityNoise - expected) < 0.12)
    }

    /// `captureStillPair`: "a pair that differs from the first by more than 6 levels on average
    /// over any tile of a 16 × 16 grid is motion: the average stops before it and
    /// `motionDetected` says so". Hand-fed 64 × 48 frames (a grid of 4 × 3 tiles of 16 × 16):
    /// flat pairs of 100, then the scene changes by 7 levels (just past the threshold); a second
    /// still with changes of 6 levels (not motion) averages all 8; a third where only an 8 × 8
    /// patch changes by 30 levels: 7.5 over its tile (motion), though only 0.6 over the whole
    /// image (what the measure was before it was local). The frames come from a thread of
    /// their own once the still is asked for, so nothing here waits on the cooperative pool.
    @Test func aStillPairStopsItsAverageAtMotion() async throws {
        let size = ImageSize(width: 64, height: 48)
        let format = CaptureFormat(fourCC: .grey, size: size, frameInterval: FrameInterval(numerator: 1, denominator: 30))
        let cameras = PerSide(left: HandFedCamera(name: "left", format: format), right: HandFedCamera(name: "right", format: format))
        let device = StereoDevice(left: cameras.left, right: cameras.right)
        try device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        let session = try StereoSession(device: device, options: options)
        let delivered = Locked(0), next = Locked(0)
        try session.start(delivering: { _ in delivered.withLock { $0 += 1 } })
        defer { session.stop() }
        /// Hands over one pair of flat images at `level`, then waits until the session has
        /// delivered the pair before it (a pair is released when the next frame proves it).
        /// A flat image at `level`; at 1000 + `patch`, flat 113 with an 8 × 8 patch at (20, 20) of `patch`.
        @Sendable func image(_ level: Int) -> [UInt8] {
            guard level >= 1000 else { return [UInt8](repeating: UInt8(level), count: size.width * size.height) }
            var bytes = [UInt8](repeating: 113, count: size.width * size.height)
            for y in 20..<28 { for x in 20..<28 { bytes[y * size.width + x] = UInt8(level - 1000) } }
            return bytes
        }
        @Sendable func feed(_ level: Int) {
            guard let image = try? ImageBuffer(format: .gray8, size: size, bytes: image(level)) else { return }
            let pixels = SharedPixels(image)
            let before = delivered.withLock { $0 }
            let k = next.withLock { n in defer { n += 1 }; return n }
            let t = 1_000_000_000 + Int64(k) * format.frameInterval.nanoseconds
            for side in StereoSide.allCases { cameras[side].deliver(cameras[side].frame(pixels, timestampNanoseconds: t, sequence: UInt64(k))) }
            if k > 0 { _ = eventually(seconds: 10) { delivered.withLock { $0 } > before } }
        }
        func still(_ levels: [Int]) async throws -> StillPair {
            let fed = Locked(false)
            let feeder = Thread {
                defer { fed.withLock { $0 = true } }
                guard eventually(seconds: 60, { session.pendingStillPairs == 1 }) else { return }
                // Frames until the still is answered (the last three release the pairs it waits for).
                for level in levels + Array(repeating: levels.last ?? 0, count: 3) where session.pendingStillPairs == 1 { feed(level) }
                // Hang guard: a still still waiting a minute after its last frame will get no
                // more; ending the session answers it with an error instead of a wait forever.
                // (Not a clock on the whole test: under a sanitizer the test's own task may
                // wait minutes for a thread of the cooperative pool, with the still long done.)
                if !eventually(seconds: 60, { session.pendingStillPairs == 0 }) { session.stop() }
            }
            feeder.start()
            let answer = try await session.captureStillPair(quality: .quality)
            // One feeding thread at a time, as a camera delivers from one: the next still
            // starts once this one's thread has stopped (it stops as soon as the still is answered).
            #expect(eventually(seconds: 60) { fed.withLock { $0 } })
            return answer
        }
        let moved = try await still([100, 100, 100, 107, 107, 107, 107, 107, 107])
        print("still with motion: \(moved.pairsAveraged) pairs averaged, motion \(moved.motionDetected)")
        #expect(moved.motionDetected && moved.pairsAveraged == 3 && moved.pairsRequested == 8)
        // Only pairs before the motion went into the average: it is the flat 100 they all show.
        #expect(moved.images.left.bytes.allSatisfy { $0 == 100 } && moved.images.right.bytes.allSatisfy { $0 == 100 })
        let calm = try await still([107, 107, 113, 107, 113, 107, 113, 107, 113, 113])
        print("still without motion: \(calm.pairsAveraged) pairs averaged, motion \(calm.motionDetected)")
        #expect(!calm.motionDetected && calm.pairsAveraged == 8)
        // Flat 113 as the calm still ended (a frame of it still in flight may open this one:
        // two to four flat pairs), then the patch of 143.
        let local = try await still([113, 113, 1143, 1143, 1143, 1143, 1143, 1143, 1143])
        print("still with a local change: \(local.pairsAveraged) pairs averaged, motion \(local.motionDetected)")
        #expect(local.motionDetected && (2...4).contains(local.pairsAveraged))
        #expect(local.images.left.bytes.allSatisfy { $0 == 113 } && local.images.right.bytes.allSatisfy { $0 == 113 })
    }

    /// A slow consumer raises the pressure level; with adaptation the frame rate falls
    /// until the consumer keeps up (50 ms per pair: below 20 fps), and rises back to the
    /// cameras' 30 fps once the consumer is fast again.
    @Test func aSlowConsumerRaisesPressureAndTheFrameRateAdapts() throws {
        let (_, device) = SessionFixtures.simulated(pace: .realTime, drops: 0)
        var options = StereoSessionOptions()
        options.pressure = PressurePolicy(windowSeconds: 0.25, coolDownWindows: 2, adaptsFrameRate: true,
                                          raiseAfterSeconds: 0.5, readsMachineState: false)
        let session = try StereoSession(device: device, options: options)
        #expect(session.backPressure == .newestWins(queuedPairs: 2))
        let slow = Locked(true)
        let log = PairLog()
        try session.start(delivering: { pair in
            if slow.withLock({ $0 }) { usleep(50_000) }
            log.handler(pair)
        })
        let lowered = eventually(seconds: 8) { (session.statistics.framesPerSecond ?? 30) < 20 }
        let pressed = session.statistics.events.contains { if case .pressureChanged(let l, _) = $0.kind { return l >= .serious }; return false }
        slow.withLock { $0 = false }
        let restored = eventually(seconds: 12) {
            abs((session.statistics.framesPerSecond ?? 0) - 30) < 0.01 && session.pressure == .nominal
        }
        session.stop()
        let stats = session.statistics
        let rates = stats.events.compactMap { if case .frameRateChanged(let fps) = $0.kind { return fps }; return nil }
        print("frame rates: \(rates.map { String(format: "%.2f", $0) }.joined(separator: " → "))")
        #expect(lowered && pressed && restored)
        #expect(rates.contains { $0 < 20 } && abs((rates.last ?? 0) - 30) < 0.01)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side) && stats.pairsInFlight == 0) }
        #expect(stats.sessionDrops[.adaptiveFrameRateCap, default: 0] > 0)
    }

    /// One side switched off and on while streaming: pairs stop, the other side's frames
    /// are dropped as `constituent_disabled`, and pairing resumes.
    @Test func oneSideOffAndOnAgainMidStream() throws {
        let (_, device) = SessionFixtures.simulated(pace: .realTime, drops: 0)
        let session = try StereoSession(device: device)
        let log = PairLog()
        try session.start(delivering: log.handler)
        #expect(log.wait(for: 10))
        try session.setEnabled(false, .right)
        let before = log.count
        // Ten left frames go by unpaired (dropped as constituent_disabled) while the right is off.
        let disabledDrops = { session.statistics.synchronizer.dropped(.left, reason: .constituentDisabled) }
        #expect(eventually { disabledDrops() >= 10 })
        #expect(log.count <= before + 2)
        try session.setEnabled(true, .right)
        #expect(log.wait(for: log.count + 10))
        session.stop()
        let stats = session.statistics
        let names = stats.events.map(\.name)
        #expect(names.contains("disabled") && names.contains("enabled"))
        #expect(stats.synchronizer.dropped(.left, reason: .constituentDisabled) >= 10)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side)) }
    }

    /// A camera unplugged and plugged back (virtual UVC driver): the session reports it,
    /// keeps the other side running, reopens the same camera and pairs again, without the
    /// consumer doing anything.
    @Test func anUnpluggedCameraComesBackAndPairingResumes() throws {
        let (driver, device) = try SessionFixtures.virtualPair()
        let session = try StereoSession(device: device)
        let log = PairLog()
        try session.start(delivering: log.handler)
        #expect(log.wait(for: 10))
        driver.unplug("/dev/video2")
        #expect(eventually { session.statistics.events.contains { $0.name == "disconnected" } })
        let during = log.count
        // Left frames keep coming and are dropped as disconnected (their partner is gone), unpaired.
        let disabledDrops = { session.statistics.synchronizer.dropped(.left, reason: .disconnected) }
        let dropsAtUnplug = disabledDrops()
        #expect(eventually { disabledDrops() >= dropsAtUnplug + 5 })
        #expect(log.count <= during + 1)
        driver.replug("/dev/video2")
        #expect(eventually { session.statistics.events.contains { $0.name == "reconnected" } })
        #expect(log.wait(for: log.count + 10))
        session.stop()
        let stats = session.statistics
        let events = stats.events.filter { $0.name == "disconnected" || $0.name == "reconnected" }
        print("hot-plug events: \(events.map(\.description))")
        #expect(events.map(\.side) == [.right, .right])
        #expect(events.allSatisfy { $0.stableID == device.identities.right.stableID })
        #expect(log.stableIDs.last?.right == device.identities.right.stableID)
        #expect(stats.synchronizer.dropped(.left, reason: .disconnected) > 0)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side) && stats.pairsInFlight == 0) }
    }

    /// A camera that cannot come back ends the session with the reason; a consumer never
    /// waits forever.
    @Test func aCameraThatDoesNotComeBackEndsTheSession() async throws {
        let (driver, device) = try SessionFixtures.virtualPair()
        var options = StereoSessionOptions()
        options.reconnectTimeoutSeconds = 0.5
        let session = try StereoSession(device: device, options: options)
        try session.start()
        var count = 0
        for try await _ in session.pairs {
            count += 1
            if count == 5 { driver.unplug("/dev/video0") }
        }
        let stopped = session.statistics.events.last
        #expect(stopped?.name == "stopped")
        if case .stopped(let reason) = stopped?.kind { #expect(reason.contains("did not come back")) }
        #expect(!session.isRunning)
    }

    /// The pressure levels, thresholds and hysteresis on made-up windows.
    @Test func pressureRisesAtOnceAndFallsOneStepAfterTheCoolDown() {
        var tracker = PressureTracker(policy: PressurePolicy(coolDownWindows: 2))
        #expect(tracker.update(PressureFactors(consumerLoad: 1.2)) == .critical)
        #expect(tracker.update(PressureFactors(consumerLoad: 0.1)) == nil)
        #expect(tracker.update(PressureFactors(consumerLoad: 0.1)) == .serious)
        #expect(tracker.update(PressureFactors(lossRate: 0.06)) == nil)  // serious again: no change
        #expect(tracker.update(PressureFactors(thermalHeadroomCelsius: 1.5)) == .shutdown)
    }

    /// A folder laid out like sysfs: thermal zones (temperature and trip points, millidegrees)
    /// and CPUs' frequency limits (kHz), with the neighbours the reader must pass over.
    static func fakeSysfs(zones: [(temperature: Int, trips: [(String, Int)])], cpus: [(allowed: Int, hardware: Int)]) throws -> String {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("parallax-sysfs-\(UUID().uuidString)").path
        func write(_ path: String, _ value: String) throws {
            let url = URL(fileURLWithPath: root + "/" + path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try (value + "\n").write(to: url, atomically: true, encoding: .utf8)
        }
        for (n, zone) in zones.enumerated() {
            try write("class/thermal/thermal_zone\(n)/temp", "\(zone.temperature)")
            for (t, trip) in zone.trips.enumerated() {
                try write("class/thermal/thermal_zone\(n)/trip_point_\(t)_type", trip.0)
                try write("class/thermal/thermal_zone\(n)/trip_point_\(t)_temp", "\(trip.1)")
            }
        }
        try write("class/thermal/cooling_device0/cur_state", "0")
        for (n, cpu) in cpus.enumerated() {
            try write("devices/system/cpu/cpu\(n)/cpufreq/scaling_max_freq", "\(cpu.allowed)")
            try write("devices/system/cpu/cpu\(n)/cpufreq/cpuinfo_max_freq", "\(cpu.hardware)")
        }
        try write("devices/system/cpu/cpufreq/boost", "1")
        try write("devices/system/cpu/cpuidle/current_driver", "none")
        return root
    }

    /// README: pressure "reads the machine (thermal zones' critical trip points and CPU
    /// frequency limits in sysfs, where they exist)".
    @Test("the machine state is read from sysfs: the nearest critical trip over all zones, the lowest CPU frequency limit")
    func machineStateReadsSysfs() throws {
        let root = try Self.fakeSysfs(
            zones: [(50_000, [("passive", 80_000), ("critical", 95_000)]),   // 45 °C to its critical trip
                    (70_000, [("hot", 90_000), ("critical", 100_000)]),      // 30 °C: the nearest
                    (99_000, [("passive", 100_000)])],                        // no critical trip: not counted
            cpus: [(2_000_000, 4_000_000), (4_000_000, 4_000_000)])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let machine = MachineState(sysRoot: root)
        #expect(machine.thermalHeadroomCelsius() == 30)
        #expect(machine.cpuFrequencyLimit() == 0.5)
        // A machine without them (this VM's /sys has neither): no factor, not a zero.
        let empty = MachineState(sysRoot: root + "/nothing")
        #expect(empty.thermalHeadroomCelsius() == nil && empty.cpuFrequencyLimit() == nil)
    }

    /// README: "at shutdown it stops and says why". A critical trip 1.5 °C away: shutdown.
    @Test("a session stops at the shutdown level and says why")
    func sessionStopsAtShutdown() throws {
        let root = try Self.fakeSysfs(zones: [(93_500, [("critical", 95_000)])], cpus: [])
        defer { try? FileManager.default.removeItem(atPath: root) }
        let (_, device) = SessionFixtures.simulated(pace: .realTime, drops: 0)
        var options = StereoSessionOptions()
        options.pressure = PressurePolicy(windowSeconds: 0.25)
        options.pressure.machineStateRoot = root
        let session = try StereoSession(device: device, options: options)
        try session.start(delivering: { _ in })
        func stopReason() -> String? {
            session.statistics.events.lazy.compactMap { if case .stopped(let reason) = $0.kind { return reason }; return nil }.first
        }
        let stopped = eventually(seconds: 20) { stopReason() != nil }
        session.stop()
        #expect(stopped, "the session ran on at shutdown pressure")
        #expect(stopReason()?.contains("thermal shutdown") == true, "\(stopReason() ?? "no reason")")
        #expect(session.statistics.events.contains { if case .pressureChanged(.shutdown, _) = $0.kind { return true }; return false })
        for side in StereoSide.allCases { #expect(session.statistics.accountsForEveryFrame(side)) }
    }

    /// Every threshold of the README's pressure table, at its edge, and the defaults it quotes.
    @Test func theDocumentedThresholdsAndDefaults() {
        let policy = PressurePolicy()
        func level(_ f: PressureFactors) -> PressureLevel { policy.level(of: f) }
        for (load, expected) in [(0.59, PressureLevel.nominal), (0.6, .fair), (0.84, .fair), (0.85, .serious), (0.99, .serious), (1.0, .critical)] {
            #expect(level(PressureFactors(processingLoad: load)) == expected)
            #expect(level(PressureFactors(consumerLoad: load)) == expected)
        }
        for (loss, expected) in [(0.009, PressureLevel.nominal), (0.01, .fair), (0.049, .fair), (0.05, .serious), (0.149, .serious), (0.15, .critical)] {
            #expect(level(PressureFactors(lossRate: loss)) == expected)
        }
        #expect(level(PressureFactors(queueFill: 0.49)) == .nominal && level(PressureFactors(queueFill: 0.5)) == .fair)
        #expect(level(PressureFactors(queueFill: 1)) == .fair)
        for (headroom, expected) in [(20.1, PressureLevel.nominal), (20, .fair), (10, .serious), (5, .critical), (2, .shutdown)] {
            #expect(level(PressureFactors(thermalHeadroomCelsius: headroom)) == expected)
        }
        for (limit, expected) in [(0.9, PressureLevel.nominal), (0.89, .fair), (0.6, .fair), (0.59, .serious)] {
            #expect(level(PressureFactors(cpuFrequencyLimit: limit)) == expected)
        }
        #expect(policy.windowSeconds == 0.5 && policy.coolDownWindows == 4 && policy.lossHorizonWindows == 8)
        #expect(policy.frameRateStep == 0.75 && policy.raiseAfterSeconds == 3 && !policy.adaptsFrameRate)
        let options = StereoSessionOptions()
        #expect(options.reconnectIntervalSeconds == 0.25 && options.reconnectTimeoutSeconds == 60 && options.reconnects)
        #expect(StillPair.motionThreshold == 6 && StillQuality.quality.pairCount == 8 && StillQuality.balanced.pairCount == 4)
    }
}
