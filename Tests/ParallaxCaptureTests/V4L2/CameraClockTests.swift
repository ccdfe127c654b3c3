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
    /// The bound, once the drift is fitted (from 2 s): the hull rests on the transfers with
    /// the shortest latency; among the ~40 transfers a second, the shortest of 250 µs of
    /// spread lies within about 250 µs / 40 ≈ 6 µs of the floor, and the slope's error over
    /// the window moves the line by no more than twice that: 20 µs. Before that, the offset
    /// alone from the last second: 50 ppm over it (50 µs) plus the same 6 µs: 60 µs.
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
}

