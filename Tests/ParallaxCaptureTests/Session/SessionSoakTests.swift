import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxTestSupport
import Testing

/// Simulated time through the whole session, time-compressed: an hour in `make soak`
/// (release build), four minutes in `make test` (`make short-soak`), each in a process of its own so that its
/// memory figures are its own (`PARALLAX_SOAK=1` enables the suite). Two virtual UVC
/// cameras at 60 fps with drift, jitter and 1 % of frames lost on the bus, rectified at
/// 160×120, with the virtual driver's faults injected at random: unplug and replug, vb2's
/// queue error, error-flagged buffers, sequence gaps, timestamps jumping back.
@Suite("Session soak (make soak; a short one in make test)", .enabled(if: ProcessInfo.processInfo.environment["PARALLAX_SOAK"] != nil))
struct SessionSoakTests {
    static let environment = ProcessInfo.processInfo.environment
    /// Simulated seconds (default one hour) and how much faster than real time they run.
    static let simulatedSeconds = Double(environment["PARALLAX_SOAK_SECONDS"] ?? "") ?? 3600
    static let timeScale = Double(environment["PARALLAX_SOAK_SCALE"] ?? "") ?? 40
    /// Memory is sampled from the end of a simulated minute's warm-up, every `sampleSeconds`:
    /// five minutes in the hour, less in a short soak, so that it gets several samples too.
    static let warmUpSeconds = 60.0
    static let sampleSeconds = min(300, max(10, (simulatedSeconds - warmUpSeconds) / 4))

    /// Resident memory of this process in kilobytes (`VmRSS`).
    static func residentKilobytes() -> Int {
        let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") } ?? ""
        return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
    }

    @Test("simulated time at 60 fps with every fault: every frame accounted for, no wrong pair, memory flat")
    func soak() async throws {
        let size = ImageSize(width: 160, height: 120)
        let interval = FrameInterval(numerator: 1, denominator: 60)
        let jitter: Int64 = 200_000
        func spec(_ path: String, port: String, drift: Double, seed: UInt64) -> VirtualCameraSpec {
            var spec = VirtualCameraSpec(
                path: path, card: "Soak \(port)", busInfo: "usb-0000:00:14.0-\(port)",
                formats: [.init(fourCC: .grey, sizes: [size], intervals: [interval])],
                timestampJitterNanoseconds: jitter, seed: seed)
            spec.driftPPM = drift
            spec.dropProbability = 0.01
            spec.usb = USBLocation(bus: Int(port) ?? 1, portPath: port, speedMbps: 480, serial: "SOAK\(port)")
            return spec
        }
        let paths = PerSide(left: "/dev/video0", right: "/dev/video2")
        let driver = VirtualUVCDriver(cameras: [spec(paths.left, port: "1", drift: 0, seed: 7),
                                                spec(paths.right, port: "2", drift: 40, seed: 9)],
                                      timeScale: Self.timeScale)
        let device = StereoDevice(left: try driver.camera(at: paths.left), right: try driver.camera(at: paths.right))
        try device.configure(StereoConfiguration(format: CaptureFormat(fourCC: .grey, size: size, frameInterval: interval)))
        var options = StereoSessionOptions()
        options.reconnectIntervalSeconds = 0.01
        options.pressure.readsMachineState = false
        let session = try StereoSession(device: device, calibration: SimulatedStereoRig.example(size: size).calibration,
                                        options: options)
        let start = driver.clock.now()
        func simulated() -> Double { Double(driver.clock.now() - start) / 1e9 }

        // Faults at random, about one every 20 simulated seconds.
        let injector = Task.detached {
            var random = SeededRandomGenerator(seed: 2026)
            var counts: [String: Int] = [:]
            var injected = 0
            // None in the last 30 s, so every camera unplugged has come back by the end.
            while !Task.isCancelled && simulated() < Self.simulatedSeconds - 30 {
                try? await Task.sleep(nanoseconds: UInt64((10 + random.nextUnit() * 20) / Self.timeScale * 1e9))
                let side: StereoSide = random.nextUnit() < 0.5 ? .left : .right
                let path = paths[side]
                // The five kinds in turn first, so that a short soak has every one; then at random.
                let kind = injected < 5 ? injected : Int(random.nextUnit() * 5)
                injected += 1
                switch kind {
                case 0:
                    driver.unplug(path)
                    try? await Task.sleep(nanoseconds: UInt64((0.5 + random.nextUnit() * 2.5) / Self.timeScale * 1e9))
                    driver.replug(path)
                    counts["unplug", default: 0] += 1
                case 1:
                    driver.inject(.queueError, into: path)
                    counts["queue_error", default: 0] += 1
                case 2:
                    driver.inject(.errorFlaggedBuffers(count: 1 + Int(random.nextUnit() * 3)), into: path)
                    counts["error_flag", default: 0] += 1
                case 3:
                    driver.inject(.sequenceGap(frames: 1 + Int(random.nextUnit() * 5)), into: path)
                    counts["sequence_gap", default: 0] += 1
                default:
                    driver.inject(.timestampBackwards(nanoseconds: 5_000_000), into: path)
                    counts["time_jump", default: 0] += 1
                }
            }
            return counts
        }

        try session.start()
        var pairs = 0, mismatched = 0, unverifiable = 0
        var memory: [(seconds: Double, kilobytes: Int)] = []
        var nextSample = Self.warmUpSeconds
        // The longest stretch of simulated time without a pair, and when it ended.
        var lastPairAt = 0.0, longestGap = (seconds: 0.0, endedAt: 0.0)
        for try await pair in session.pairs {
            pairs += 1
            let at = simulated()
            if at - lastPairAt > longestGap.seconds { longestGap = (at - lastPairAt, at) }
            lastPairAt = at
            // Ground truth: the left frame must be the one due nearest the right frame's due
            // time, beyond what the jitter can confuse. The synchronizer sees jittered
            // timestamps (±0.2 ms each): when the two cameras are half a frame out of phase
            // both neighbours are ~8.3 ms away and either is right; the choice may then be
            // off by up to 4 × the jitter. A wrong pair is off by a whole frame (16.7 ms). A
            // pair formed before a replug whose sequence numbers now name other frames cannot
            // be looked up: counted apart.
            // The driver's timestamps (end of frame, whole microseconds) are the frames' own
            // before the capture code moved them to mid-exposure.
            // Looked up by timestamp: after a stream restart the frames' sequences are numbered
            // on while the driver counts from 0 again.
            func raw(_ side: StereoPairSide) -> Int64 { side.timestampNanoseconds + (side.exposureNanoseconds ?? 0) / 2 }
            if let r = driver.driverSequence(paths.right, timestamp: raw(pair.right)),
               let l = driver.driverSequence(paths.left, timestamp: raw(pair.left)),
               let rightDue = driver.dueTime(paths.right, sequence: r), let leftDue = driver.dueTime(paths.left, sequence: l),
               abs(rightDue - raw(pair.right)) <= jitter + 1000, abs(leftDue - raw(pair.left)) <= jitter + 1000 {
                let chosen = abs(leftDue - rightDue)
                let neighbours = [l &- 1, l &+ 1].compactMap { driver.dueTime(paths.left, sequence: $0) }
                if neighbours.contains(where: { abs($0 - rightDue) + 4 * jitter + 100_000 < chosen }) {
                    mismatched += 1
                    if mismatched <= 5 {
                        let around = [l &- 1, l, l &+ 1].map { driver.dueTime(paths.left, sequence: $0).map { $0 - rightDue } }
                        print("soak: mismatch at \(simulated()) s: left \(l) right \(r), left due − right due for l−1, l, l+1: "
                              + "\(around), skew \(pair.skewNanoseconds), events \(session.statistics.events.suffix(3).map(\.description))")
                    }
                }
            } else {
                unverifiable += 1
            }
            let now = simulated()
            if now >= nextSample {
                memory.append((now, Self.residentKilobytes()))
                nextSample += Self.sampleSeconds
            }
            if now >= Self.simulatedSeconds { break }
        }
        injector.cancel()
        let faults = await injector.value
        session.stop()
        memory.append((simulated(), Self.residentKilobytes()))
        let stats = session.statistics
        let events = Dictionary(grouping: stats.events, by: \.name).mapValues(\.count)
        print(String(format: "soak: %.0f simulated s at %.0f× real time; %d pairs delivered (%d unverifiable after a replug)",
                     simulated(), Self.timeScale, pairs, unverifiable))
        print("soak: frames left \(stats.frames(.left)), right \(stats.frames(.right)); dropped left \(stats.droppedByName(.left)); right \(stats.droppedByName(.right))")
        print("soak: faults injected \(faults); session events \(events)")
        print("soak: resident memory " + memory.map { String(format: "%.0f s %d kB", $0.seconds, $0.kilobytes) }.joined(separator: ", "))
        print("soak: mismatched pairs \(mismatched)")
        print(String(format: "soak: the longest stretch without a pair %.2f simulated s, ending at %.0f s", longestGap.seconds, longestGap.endedAt))
        #expect(mismatched == 0)
        #expect(stats.pairsInFlight == 0)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side)) }
        #expect(simulated() >= Self.simulatedSeconds)
        #expect(Double(unverifiable) <= Double(pairs) * 0.001)
        #expect(events["reconnected", default: 0] == faults["unplug", default: 0])
        // Pairs stop only while a camera is unplugged: at most 3 s (the injector's longest),
        // then the reconnect poll (0.01 s of real time) and as much again for the sleeps'
        // overshoot and reopening the camera, both real time and so times the scale, and 0.1 s
        // (six frames) for the first frames after it to pair. A stall through drift lasts for ever.
        #expect(longestGap.seconds < 3 + 0.02 * Self.timeScale + 0.1, "pairs stopped for \(longestGap.seconds) simulated s")
        for kind in ["unplug", "queue_error", "error_flag", "sequence_gap", "time_jump"] {
            #expect(faults[kind, default: 0] > 0, "no \(kind) injected: the soak was too short for every fault")
        }
        // Flat: the end within 8 MB of the first sample (after the warm-up). Two samples a
        // simulated minute apart at least, or the check would compare a sample with itself.
        let first = try #require(memory.first), last = try #require(memory.last)
        try #require(memory.count >= 3 && last.seconds - first.seconds >= 60,
                     "a soak of \(Self.simulatedSeconds) s gives no memory samples to compare: run at least two simulated minutes")
        #expect(last.kilobytes - first.kilobytes < 8 * 1024)
    }
}
