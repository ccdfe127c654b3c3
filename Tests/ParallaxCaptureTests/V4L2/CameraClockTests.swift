import Foundation
@testable import ParallaxCapture
import ParallaxTestSupport
import Testing

/// The camera clock fit and uvcvideo's metadata layout, on synthetic readings (the real
/// driver's are in KernelUVCTests).
@Suite("Camera clock: uvcvideo metadata parsed, the camera's clock fitted to the host's")
struct CameraClockTests {
    @Test("metadata entries: host time, frame number, flags, PTS and SCR, sized by the flags; a cut entry ends the list")
    func entries() {
        func entry(ns: UInt64, flags: UInt8, pts: UInt32?, scr: UInt32?) -> [UInt8] {
            var bytes = (0..<8).map { UInt8(truncatingIfNeeded: ns >> (8 * $0)) } + [0x34, 0x12, 12, flags]
            if let pts { bytes += (0..<4).map { UInt8(truncatingIfNeeded: pts >> (8 * $0)) } }
            if let scr { bytes += (0..<4).map { UInt8(truncatingIfNeeded: scr >> (8 * $0)) } + [0x05, 0x00] }
            return bytes
        }
        let bytes = entry(ns: 123_456_789_000, flags: 0x8D, pts: 0xDEAD_BEEF, scr: 0x0102_0304)
            + entry(ns: 5, flags: 0x88, pts: nil, scr: 7) + Array(entry(ns: 9, flags: 0x8C, pts: 1, scr: 2).prefix(20))
        let parsed = bytes.withUnsafeBytes { UVCMetadataEntry.entries(in: $0) }
        #expect(parsed == [
            UVCMetadataEntry(hostNanoseconds: 123_456_789_000, usbFrame: 0x1234, flags: 0x8D, presentationTime: 0xDEAD_BEEF, sourceClock: 0x0102_0304),
            UVCMetadataEntry(hostNanoseconds: 5, usbFrame: 0x1234, flags: 0x88, presentationTime: nil, sourceClock: 7),
        ])
    }

    /// A 48 MHz camera clock 50 ppm fast, wrapping its 32 bits mid-run, read as a host
    /// reads it: 30 frames a second for 45 s (past the 30 s window the fit keeps), each frame's 24 payloads in 3 transfers of 8
    /// one microframe (125 µs) apart; uvcvideo stamps all of a transfer's readings when the
    /// transfer completes, after its last payload plus an interrupt latency of 50–300 µs
    /// (uniform), so a reading's delay is 50 µs to 1.2 ms. Every third frame's readings are
    /// lost. The frames' presentation times mapped through the fit land at their true host
    /// times plus the shortest delay (50 µs, which no fit can see: a constant shared by every
    /// frame of the camera).
    ///
    /// The bound, once the drift is fitted (from 2 s): the line lies under every reading, so
    /// at a frame it lies above the floor by at most the least excess of the readings around
    /// it. 20 frames a second keep their readings, 3 transfers each: 60 transfers a second,
    /// each a transfer's last payload 50 µs plus U(0, 250 µs) late. The least of n such
    /// excesses is above x with probability (1 − x / 250 µs)ⁿ: over one second's 60, above
    /// 10 µs with probability 0.96⁶⁰ ≈ 9 %, above 20 µs with 0.92⁶⁰ ≈ 0.7 %. The hull edge the
    /// slope comes from joins two such least readings some seconds apart, so its tilt is at
    /// most 20 µs over those seconds, and carried to the newest frame it adds no more than
    /// the same again: under 20 µs at every frame in all but a fraction of a percent of runs
    /// (this one is seeded: the same readings every run). Before 2 s, the offset alone from
    /// the last second: 50 ppm over it (50 µs) plus one second's least excess (under 10 µs
    /// nine times in ten): 60 µs. The drift then follows from the line: off by e ppm, the
    /// line moves e µs a second against the truth, so a line within 20 µs of it at both ends
    /// of the 30 s window is within 40 µs / 30 s ≈ 1.3 ppm; the 5 ppm asserted allows the
    /// edge a span of 8 s (40 µs / 8 s).
    @Test("a drifting, wrapping clock read with transfer latencies and lost frames is mapped to host time within 20 µs of truth plus the shortest delay")
    func fitsDriftAndOffset() {
        let frequency = 48_000_000.0, drift = 50e-6
        let startTicks = Double(UInt32.max) - 5 * frequency           // wraps 5 s in
        func deviceTicks(_ hostSeconds: Double) -> UInt32 {
            UInt32(truncatingIfNeeded: Int64((startTicks + hostSeconds * (1 + drift) * frequency).rounded(.down)))
        }
        var fit = CameraClockFit(frequencyHz: frequency)
        var random = SeededRandomGenerator(seed: 7)
        let hostStart: Int64 = 1_000_000_000_000
        var errors: [Double] = [], early: [Double] = []
        for frame in 0..<1350 {
            let exposureStart = Double(frame) / 30
            if frame % 3 != 2 {
                var readings: [(deviceClock: UInt32, hostNanoseconds: Int64)] = []
                for transfer in 0..<3 {
                    let first = exposureStart + 0.012 + Double(transfer * 8) * 0.000125
                    let completed = first + 7 * 0.000125 + 0.00005 + Double(random.next() % 250_000) * 1e-9
                    for k in 0..<8 {
                        readings.append((deviceTicks(first + Double(k) * 0.000125), hostStart + Int64((completed * 1e9).rounded())))
                    }
                }
                fit.add(readings: readings)
            }
            guard let mapped = fit.hostNanoseconds(ofDeviceClock: deviceTicks(exposureStart)) else { continue }
            let error = Double(mapped - hostStart) - exposureStart * 1e9 - 50_000
            if exposureStart >= 2 { errors.append(error) } else if exposureStart >= 0.5 { early.append(error) }
        }
        let worst = errors.map(abs).max() ?? .infinity, worstEarly = early.map(abs).max() ?? .infinity
        print("camera clock fit: \(errors.count) frames, drift \(fit.driftPPM ?? .nan) ppm, worst error beyond the 50 µs delay "
              + "\(worst / 1000) µs (before 2 s: \(worstEarly / 1000) µs)")
        #expect(errors.count > 800)
        #expect(worst < 20_000)
        #expect(worstEarly < 60_000)
        #expect(abs((fit.driftPPM ?? 0) - 50) < 5)
        #expect(fit.rejected == 0)
    }

    @Test("a reading far under the fitted line (a corrupt header) is set aside, not fitted")
    func rejectsImpossibleReadings() {
        var fit = CameraClockFit(frequencyHz: 1_000_000)
        for i in 0..<10 { fit.add(deviceClock: UInt32(i * 1000), hostNanoseconds: 5_000_000 + Int64(i) * 1_000_000 + 100_000) }
        fit.add(deviceClock: 10_000, hostNanoseconds: 1_000)
        #expect(fit.rejected == 1)
        #expect(fit.hostNanoseconds(ofDeviceClock: 20_000) == 25_100_000)
    }

    @Test("a camera clock that steps (or a fit anchored on a corrupt first reading) is fitted again from the new readings")
    func startsAgainAfterAStep() {
        var fit = CameraClockFit(frequencyHz: 1_000_000)
        // A corrupt first reading: a device time far ahead of the others.
        fit.add(deviceClock: 900_000_000, hostNanoseconds: 1_000_000)
        var mapped: [Int64?] = []
        for i in 1...40 {
            // 1 MHz: one tick a microsecond, read 100 µs late; every reading 10 ms apart.
            let host = Int64(i) * 10_000_000
            fit.add(readings: [(UInt32(host / 1000), host + 100_000)])
            mapped.append(fit.hostNanoseconds(ofDeviceClock: UInt32(host / 1000)))
        }
        #expect(fit.restarts == 1)
        // From the restart on (after 8 refused readings), device time maps to host time plus the 100 µs.
        #expect(mapped.suffix(30).allSatisfy { value in value.map { abs($0 % 10_000_000 - 100_000) <= 1 } ?? false }, "\(mapped)")
    }

    /// A 48 MHz clock read once a frame (30 a second), `delay` late (50 µs plus U(0, 250 µs)
    /// unless given), its ticks at host time t (seconds) `ticks(t)`; each frame's exposure
    /// start mapped through the fit and its error against the truth plus the 50 µs floor, by
    /// host time.
    static func run(seconds: Double, skipping skip: (Double) -> Bool = { _ in false }, ticks: (Double) -> Double,
                    delay: (inout SeededRandomGenerator) -> Double = { 0.00005 + Double($0.next() % 250_000) * 1e-9 },
                    into fit: inout CameraClockFit) -> [(time: Double, error: Double?)] {
        var random = SeededRandomGenerator(seed: 11)
        let hostStart: Int64 = 1_000_000_000_000
        var errors: [(Double, Double?)] = []
        func raw(_ t: Double) -> UInt32 { UInt32(truncatingIfNeeded: Int64(ticks(t).rounded(.down))) }
        for frame in 0..<Int(seconds * 30) {
            let t = Double(frame) / 30
            if skip(t) { continue }
            let sent = t + 0.012
            let received = sent + delay(&random)
            fit.add(readings: [(raw(sent), hostStart + Int64((received * 1e9).rounded()))])
            errors.append((t, fit.hostNanoseconds(ofDeviceClock: raw(t)).map { Double($0 - hostStart) - t * 1e9 - 50_000 }))
        }
        return errors
    }

    /// A busy host: one reading in ten waits 1 to 250 ms more (log-uniform, a heavy tail: a
    /// loaded robot computer, a starved emulated guest). The line lies under every reading,
    /// so a late one only lies further above it; the others, 27 a second, carry the fit.
    @Test("heavy-tailed delays (one reading in ten up to 250 ms late) leave the fit within 60 µs of truth plus the shortest delay")
    func heavyTailedDelays() {
        let frequency = 48_000_000.0
        var fit = CameraClockFit(frequencyHz: frequency)
        let errors = Self.run(seconds: 45, ticks: { t in frequency * (7 + t * (1 - 40e-6)) }, delay: { random in
            let usual = 0.00005 + Double(random.next() % 250_000) * 1e-9
            guard random.next() % 10 == 0 else { return usual }
            return usual + 0.001 * pow(250, Double(random.next() % 1_000_000) / 1_000_000)
        }, into: &fit)
        let settled = errors.filter { $0.time >= 2 }.compactMap(\.error)
        let worst = settled.map(abs).max() ?? .infinity
        print("camera clock, heavy-tailed delays: drift \(fit.driftPPM ?? .nan) ppm, worst error beyond the 50 µs delay \(worst / 1000) µs")
        // As in windowForgetsAnOldRate with 27 usable readings a second instead of 30: the
        // least excess of a second's is above 60 µs with probability 0.76²⁷ ≈ 6e-4.
        #expect(settled.count == 1290 && worst < 60_000)
        #expect(abs((fit.driftPPM ?? 0) + 40) < 5)
        #expect(fit.rejected == 0)
    }

    /// The fit keeps 30 s of readings: a clock whose rate changes (a crystal warming, 0 then
    /// 100 ppm fast from 40 s) is fitted on the new rate alone once the window has passed the
    /// change. Kept for ever, the readings before the change would hold the line under their
    /// chord to the newest ones (the residual bends down at the change): a slope between the
    /// two rates, (40 s × 0 + 35 s × 100 ppm) / 75 s ≈ 47 ppm.
    @Test("readings older than the 30 s window are let go: a clock that changed its rate is fitted on the new rate alone")
    func windowForgetsAnOldRate() {
        let frequency = 48_000_000.0
        var fit = CameraClockFit(frequencyHz: frequency)
        let errors = Self.run(seconds: 75, ticks: { t in frequency * (100 + t + 100e-6 * max(0, t - 40)) }, into: &fit)
        let last = errors.filter { $0.time >= 70 }.compactMap(\.error)
        let worst = last.map(abs).max() ?? .infinity
        print("camera clock window: drift \(fit.driftPPM ?? .nan) ppm after the change, worst error over the last 5 s \(worst / 1000) µs")
        // One reading a frame, 30 a second: the least excess of a second's readings is above
        // 60 µs with probability (1 − 60/250)³⁰ ≈ 3e-4, so the line lies within 60 µs of the
        // floor at each frame and its tilt over the window's seconds adds no more; the drift
        // from a line within 60 µs at both ends of an edge 24 s long or more (the window's
        // least readings): 120 µs / 24 s = 5 ppm.
        #expect(last.count == 150 && worst < 60_000)
        #expect(abs((fit.driftPPM ?? 0) - 100) < 5)
    }

    /// A camera that stopped for longer than half its counter's wrap (2³⁰ ticks: 22 s at
    /// 48 MHz) cannot be unwrapped across the gap: the fit starts again from the readings
    /// after it instead of placing them a wrap off (a 60 s gap is 2.9e9 ticks; read as the
    /// signed 32-bit difference it lies 29 s behind the history).
    @Test("a gap of more than half the counter's wrap starts the fit again; frames after it map right from the first")
    func startsAgainAfterALongGap() {
        let frequency = 48_000_000.0
        var fit = CameraClockFit(frequencyHz: frequency)
        let errors = Self.run(seconds: 75, skipping: { $0 >= 5 && $0 < 65 }, ticks: { t in frequency * (3 + t * (1 + 30e-6)) }, into: &fit)
        #expect(fit.restarts == 1)
        // The first second after the gap: the offset alone, from the least of the readings
        // since (each at most 250 µs late beyond the floor), 30 ppm over 12 ms and the second
        // adding under 31 µs: 281 µs.
        let first = errors.filter { $0.time >= 65 && $0.time < 66 }
        #expect(first.count == 30 && first.allSatisfy { $0.error.map { abs($0) < 281_000 } ?? false },
                "\(first.map { $0.error.map { $0 / 1000 } ?? .nan })")
        // Then: 30 ppm over the last second (30 µs) plus that second's least excess among 30
        // readings (above 70 µs with probability (1 − 70/250)³⁰ ≈ 5e-5): 100 µs.
        let after = errors.filter { $0.time >= 66 }
        #expect(after.count == 270 && after.allSatisfy { $0.error.map { abs($0) < 100_000 } ?? false },
                "\(after.compactMap { $0.error.map { abs($0) / 1000 } }.max() ?? .nan) µs")
    }

    /// A frame whose metadata was lost (uvcvideo's metadata queue is 8 buffers deep, and a
    /// busy machine overruns it) is stamped by its driver stamp less the median lag, driver
    /// stamp minus fitted start, of the last 31 frames that had theirs. The lags here are
    /// exact (each frame's driver stamp is its fitted start plus the lag), so the fallback
    /// must give the lost frame's true start exactly.
    @Test("a frame whose metadata was lost: its driver stamp less the median lag of the last 31 frames (an outlier ignored, an old lag forgotten); nothing before any lag")
    func lostMetadataFallsBackOnTheDriverStamp() throws {
        let frequency = 48_000_000.0
        var fit = CameraClockFit(frequencyHz: frequency)
        var stamps = ExposureStamps()
        func ticks(_ host: Int64) -> UInt32 { UInt32(truncatingIfNeeded: Int64((3 + Double(host) / 1e9) * frequency)) }
        func exposure(_ k: Int) -> Int64 { 1_000_000_000 + Int64(k) * 33_333_333 }
        #expect(stamps.exposureStart(sequence: 0, driverStamp: 12_000_000, fit: fit) == nil, "a start from nothing")
        for k in 1...73 {
            fit.add(readings: [(ticks(exposure(k)), exposure(k))])
            if k == 41 || k == 73 {
                // Lost: 12 ms late after forty frames 12 ms late (one of them 30 ms, which the
                // median ignores); 20 ms late after 31 frames 20 ms late (the 12 ms ones forgotten).
                let lag: Int64 = k == 41 ? 12_000_000 : 20_000_000
                #expect(stamps.exposureStart(sequence: UInt32(k), driverStamp: exposure(k) + lag, fit: fit) == exposure(k), "frame \(k)")
                continue
            }
            let lag: Int64 = k < 41 ? (k == 20 ? 30_000_000 : 12_000_000) : 20_000_000
            stamps.presentationTimes[UInt32(k)] = ticks(exposure(k))
            let fitted = try #require(fit.hostNanoseconds(ofDeviceClock: ticks(exposure(k))), "frame \(k): the fit maps nothing")
            #expect(stamps.exposureStart(sequence: UInt32(k), driverStamp: fitted + lag, fit: fit) == fitted, "frame \(k)")
        }
        #expect(stamps.lags.count == ExposureStamps.lagCount && stamps.lags.allSatisfy { $0 == 20_000_000 })
    }

    /// A hull edge steeper than any crystal (here readings 5000 ppm apart: a clock frequency
    /// the camera states wrongly) is not believed: the fit keeps the offset alone, from the
    /// last second's least reading, as over a short span.
    @Test("a fitted drift beyond 1000 ppm is not believed: the offset alone, from the last second's readings")
    func refusesAnImpossibleDrift() {
        let frequency = 48_000_000.0
        var fit = CameraClockFit(frequencyHz: frequency)
        let errors = Self.run(seconds: 10, ticks: { t in frequency * (3 + t * (1 + 5000e-6)) }, into: &fit)
        #expect(fit.driftPPM == 0)
        // The residual falls 5000 ppm of device time, 167 µs a frame, so the last second's
        // least reading is the newest (off by −5000 ppm × 12 ms = −60 µs at the frame, plus
        // its excess under 250 µs) or, if the newest came more than 167 µs later, the one
        // before (+106 µs, plus its excess, and less than the newest would give): between
        // −61 and 190 µs.
        let last = errors.suffix(30).compactMap(\.error)
        #expect(last.count == 30 && last.allSatisfy { $0 > -61_000 && $0 < 190_000 }, "\(last.map { $0 / 1000 })")
    }
}

