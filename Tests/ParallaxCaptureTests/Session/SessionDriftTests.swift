import Foundation
import ParallaxCapture
import ParallaxGeometry
import Testing

/// The simulated rig time-compressed (as fast as the session takes pairs) with its right
/// clock drifting: pairs keep coming however far the two clocks have drifted apart.
///
/// The rig's two cameras are kept together by their frames' times. Kept together by frame
/// numbers (as they were), a drift of `d` moves one camera a whole frame past the other in
/// time every `1/d` frames, and once that exceeds what the synchronizer can queue (five frames)
/// both cameras wait on each other until the session's 30 s stall rule pushes a frame through:
/// at 40 ppm from pair 138 332 on (the measurement), at 2000 ppm from about 2 500.
/// Mutation: the frame-number lockstep (as before) had not made 6 000 pairs at 2000 ppm after
/// 200 s (20 000 take 2.3 s here); the suite's time limit turns that into a failure.
@Suite("Session through clock drift", .timeLimit(.minutes(2)))
struct SessionDriftTests {
    /// 2000 ppm for 20 000 frames passes the stall point eight times; 40 ppm for 150 000
    /// frames passes the first stall (138 332). No second of simulated time (30 frames)
    /// may pass without a pair, and the pairs are all but the few frames a drifting clock
    /// cannot pair: one camera gains a frame on the other every `1/d` frames (2000 ppm: 8
    /// frames in 20 000; 40 ppm: 6 in 150 000), whose partner never comes.
    @Test("lockstep pairs through any drift: 2000 ppm over 20 000 frames, 40 ppm past the 138 332nd pair; never a simulated second without a pair",
          arguments: [(2000.0, 20_000), (40.0, 150_000)])
    func pairsThroughDrift(driftPPM: Double, pairs: Int) async throws {
        let rig = SimulatedRigDevice(rig: .example(size: ImageSize(width: 64, height: 48)),
                                     rightTiming: SimulatedCameraTiming(offsetNanoseconds: 3_000_000, driftPPM: driftPPM),
                                     pace: .asFastAsPossible)
        let session = try StereoSession(device: StereoDevice(simulated: rig))
        try session.start()
        var stamps: [Int64] = []
        stamps.reserveCapacity(pairs)
        let started = ContinuousClock.now
        var lastPair = started, longestWait = Duration.zero
        for try await pair in session.pairs {
            let now = ContinuousClock.now
            longestWait = max(longestWait, now - lastPair)
            lastPair = now
            stamps.append(pair.left.timestampNanoseconds)
            if stamps.count == pairs { break }
        }
        session.stop()
        let gaps = zip(stamps, stamps.dropFirst()).map { $1 - $0 }
        let longest = gaps.max() ?? 0
        let synchronizer = session.statistics.synchronizer
        let frames = (left: synchronizer.framesLeft, right: synchronizer.framesRight)
        print("drift \(driftPPM) ppm: \(stamps.count) pairs in \(ContinuousClock.now - started), longest gap between pairs "
              + "\(Double(longest) / 1e6) ms of simulated time, \(longestWait) of wall time; \(frames.left) left and "
              + "\(frames.right) right frames")
        #expect(stamps.count == pairs)
        #expect(longest < 1_000_000_000, "\(Double(longest) / 1e9) s of simulated time without a pair")
        // Frames that found no partner: at most one per 1/d frames the clock gained, and a few at the ends.
        let unpaired = frames.left + frames.right - 2 * stamps.count
        let gained = Int((Double(pairs) * driftPPM * 1e-6).rounded(.up))
        #expect(unpaired <= 2 * gained + 16, "\(unpaired) frames unpaired for \(gained) gained by the drift")
        // The frame-number lockstep's stall ends when the session's 30 s rule lets the side that
        // is ahead push anyway, into a full queue: queue_overflow drops. None here.
        let overflows = StereoSide.allCases.map { synchronizer.dropped($0, reason: .queueOverflow) }
        #expect(overflows == [0, 0], "queue_overflow drops \(overflows): the cameras stalled waiting on each other")
        #expect(session.statistics.accountDiscrepancy == nil)
    }
}
