import ParallaxGeometry
import Testing

@testable import ParallaxCapture

/// The scenarios message_filters' ApproximateTime tests check, re-created for two cameras.
/// Times are milliseconds; frames arrive at their timestamps unless said otherwise. Each
/// expectation is derived in the comment from the guarantees (smallest spread among the
/// candidates contiguous to the previous pair) and, for release times, from the proof rule.
@Suite("Approximate policy: message_filters scenarios")
struct ApproximateScenarioTests {
    typealias P = ScenarioRun.PairRecord
    let unknownInterval = SynchronizerConfiguration(policy: .approximate, maximumSkewNanoseconds: ms(10))

    @Test("exact match: equal timestamps pair the moment the second frame arrives")
    func exactMatch() {
        let run = ScenarioRun.run(unknownInterval, frames: arrivingOnTime(left: [0, 3, 6], right: [0, 3, 6]), finishAt: nil)
        // A spread of 0 cannot be beaten, so no later frame is needed to prove it.
        #expect(run.pairs == [
            P(left: ms(0), right: ms(0), releasedAt: ms(0), onDeadline: false),
            P(left: ms(3), right: ms(3), releasedAt: ms(3), onDeadline: false),
            P(left: ms(6), right: ms(6), releasedAt: ms(6), onDeadline: false),
        ])
        #expect(run.drops.isEmpty)
    }

    @Test("perfect match: without a frame interval each pair waits for the partner camera's next frame")
    func perfectMatch() {
        let run = ScenarioRun.run(unknownInterval, frames: arrivingOnTime(left: [0, 3, 6], right: [1, 4, 7]), finishAt: ms(20))
        // (0,1) is proven when left 3 arrives (farther from 1 than left 0), and so on; the
        // last pair is only final when the streams end.
        #expect(run.pairs == [
            P(left: ms(0), right: ms(1), releasedAt: ms(3), onDeadline: false),
            P(left: ms(3), right: ms(4), releasedAt: ms(6), onDeadline: false),
            P(left: ms(6), right: ms(7), releasedAt: ms(20), onDeadline: false),
        ])
        #expect(run.drops.isEmpty)
    }

    @Test("imperfect match: the later head takes the closest frame of the other camera")
    func imperfectMatch() {
        // left 0 2 3 6, right 1 5 7. Heads 0/1: right 1 is later; left 0 and 2 are both 1 ms
        // away, the tie goes to the earlier: (0,1). Heads 2/5: left 6 is closest to 5, so
        // (6,5) and left 2, 3 (within 10 ms of 5) are superseded. Right 7 has no left frame
        // left: no match.
        let run = ScenarioRun.run(
            unknownInterval, frames: arrivingOnTime(left: [0, 2, 3, 6], right: [1, 5, 7]), finishAt: ms(20))
        #expect(run.pairs == [
            P(left: ms(0), right: ms(1), releasedAt: ms(2), onDeadline: false),
            P(left: ms(6), right: ms(5), releasedAt: ms(6), onDeadline: false),
        ])
        #expect(run.dropReasons(.left) == [ms(2): .superseded, ms(3): .superseded])
        #expect(run.dropReasons(.right) == [ms(7): .noMatchWithinSkew])
    }

    @Test("acceleration: frame spacing changes and pairs still have the smallest spread")
    func acceleration() {
        // left 0 12 17, right 7 15 18. Right 7 is the later head; left 12 (5 ms) beats left 0
        // (7 ms): (12,7), proven at 12 because the next left frame is at least 12 + 1 ns.
        // Then left 17 is the later head; right 18 (1 ms) beats right 15 (2 ms): (17,18).
        let run = ScenarioRun.run(
            unknownInterval, frames: arrivingOnTime(left: [0, 12, 17], right: [7, 15, 18]), finishAt: nil)
        #expect(run.pairs == [
            P(left: ms(12), right: ms(7), releasedAt: ms(12), onDeadline: false),
            P(left: ms(17), right: ms(18), releasedAt: ms(18), onDeadline: false),
        ])
        #expect(run.dropReasons(.left) == [ms(0): .superseded])
        #expect(run.dropReasons(.right) == [ms(15): .superseded])
    }

    @Test("dropped messages: a queue of one cannot hold a frame long enough to prove its pair; two can")
    func smallQueues() {
        let frames = arrivingOnTime(left: [0, 4, 8, 10, 13], right: [1, 3, 7, 11])
        var tiny = unknownInterval
        tiny.queueCapacity = 1
        // Every proof needs the partner camera's next frame, which pushes the waiting frame
        // out first. Only the end of the streams settles the last two heads: (13,11).
        let one = ScenarioRun.run(tiny, frames: frames, finishAt: ms(20))
        #expect(one.pairs == [P(left: ms(13), right: ms(11), releasedAt: ms(20), onDeadline: false)])
        #expect(one.drops.count == 7)
        #expect(one.drops.allSatisfy { $0.reason == .queueOverflow })

        var small = unknownInterval
        small.queueCapacity = 2
        // The guarantees give (0,1) (3,4)... : right 1 is later than left 0 and left 0 is
        // closest; then left 4 is later than right 3, closest right 3; (8,7); (10,11).
        let two = ScenarioRun.run(small, frames: frames, finishAt: ms(20))
        #expect(two.pairs == [
            P(left: ms(0), right: ms(1), releasedAt: ms(4), onDeadline: false),
            P(left: ms(4), right: ms(3), releasedAt: ms(7), onDeadline: false),
            P(left: ms(8), right: ms(7), releasedAt: ms(11), onDeadline: false),
            P(left: ms(10), right: ms(11), releasedAt: ms(13), onDeadline: false),
        ])
        #expect(two.dropReasons(.left) == [ms(13): .noMatchWithinSkew])
        #expect(two.dropReasons(.right).isEmpty)
    }

    @Test("long queue: many frames of one camera wait for the other and the closest wins")
    func longQueue() {
        // Left every 1 ms from 0 to 9, right at 4.4 and 8.6. Right 4.4 pairs with left 4
        // (0.4 ms, left 5 is 0.6 ms), proven when left 5 arrives; right 8.6 pairs with left 9
        // (0.4 ms vs 0.6 ms), proven at 9 since the next left frame is at least 9 ms + 1 ns,
        // 0.4 ms + 1 ns from 8.6. Everything skipped was within 10 ms: superseded.
        let run = ScenarioRun.run(
            unknownInterval, frames: arrivingOnTime(left: (0...9).map(Double.init), right: [4.4, 8.6]), finishAt: nil)
        #expect(run.pairs == [
            P(left: ms(4), right: ms(4.4), releasedAt: ms(5), onDeadline: false),
            P(left: ms(9), right: ms(8.6), releasedAt: ms(9), onDeadline: false),
        ])
        #expect(run.dropReasons(.left) == [
            ms(0): .superseded, ms(1): .superseded, ms(2): .superseded, ms(3): .superseded,
            ms(5): .superseded, ms(6): .superseded, ms(7): .superseded, ms(8): .superseded,
        ])
    }

    @Test("one arrival releases two pairs")
    func doubleRelease() {
        // Left 5 arrives late (at 9), after right 1, 4 and 8. It proves (0,1) (left 5 is
        // farther from 1 than left 0) and then (5,4) (right 8 is farther from 5 than right 4).
        let frames: [(StereoSide, Int64, Int64)] = [
            (.left, ms(0), ms(0)), (.right, ms(1), ms(1)), (.right, ms(4), ms(4)), (.right, ms(8), ms(8)),
            (.left, ms(5), ms(9)),
        ]
        let run = ScenarioRun.run(unknownInterval, frames: frames, finishAt: nil)
        #expect(run.pairs == [
            P(left: ms(0), right: ms(1), releasedAt: ms(9), onDeadline: false),
            P(left: ms(5), right: ms(4), releasedAt: ms(9), onDeadline: false),
        ])
    }

    @Test("rate bound: with the frame interval known a pair is released when its later frame arrives")
    func rateBound() {
        var configuration = unknownInterval
        configuration.frameIntervalNanoseconds = ms(10)
        let frames = arrivingOnTime(left: [0, 10, 20, 30], right: [3, 13, 23, 33])
        // At right 3 the next left frame cannot come before 10, 7 ms away, farther than
        // left 0 (3 ms): proven on arrival, including the last pair.
        let run = ScenarioRun.run(configuration, frames: frames, finishAt: nil)
        #expect(run.pairs == [
            P(left: ms(0), right: ms(3), releasedAt: ms(3), onDeadline: false),
            P(left: ms(10), right: ms(13), releasedAt: ms(13), onDeadline: false),
            P(left: ms(20), right: ms(23), releasedAt: ms(23), onDeadline: false),
            P(left: ms(30), right: ms(33), releasedAt: ms(33), onDeadline: false),
        ])
        // Without the bound the same streams wait a frame period for each proof.
        let slow = ScenarioRun.run(unknownInterval, frames: frames, finishAt: ms(40))
        #expect(slow.pairs.map(\.releasedAt) == [ms(10), ms(20), ms(30), ms(40)])
    }

    @Test("rate bound: a skew near half the interval waits for the next frame, which may win")
    func rateBoundNearHalfInterval() {
        var configuration = SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: ms(10))
        configuration.maximumSkewNanoseconds = ms(5)
        // Right 6: left 0 is 6 ms away and the next left frame could be 4 ms away: wait.
        // Left 10 is 4 ms away: (10,6); left 0 was beyond the 5 ms maximum skew.
        let run = ScenarioRun.run(configuration, frames: arrivingOnTime(left: [0, 10], right: [6]), finishAt: nil)
        #expect(run.pairs == [P(left: ms(10), right: ms(6), releasedAt: ms(10), onDeadline: false)])
        #expect(run.dropReasons(.left) == [ms(0): .noMatchWithinSkew])
    }

    @Test("maximum latency releases an unproven pair, flagged")
    func maximumLatency() {
        var configuration = unknownInterval
        configuration.maximumLatencyNanoseconds = ms(2)
        let core = SynchronizerCore<Int>(configuration: configuration)
        var run = ScenarioRun()
        core.push(.left, timestampNanoseconds: ms(0), sequence: 0, payload: 0, now: ms(0)) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(1), sequence: 0, payload: 0, now: ms(1)) { run.record($0) }
        core.advance(to: ms(2.9)) { run.record($0) }
        #expect(run.pairs.isEmpty)
        core.advance(to: ms(3)) { run.record($0) }
        #expect(run.pairs == [P(left: ms(0), right: ms(1), releasedAt: ms(3), onDeadline: true)])
        #expect(core.statistics.pairsReleasedOnDeadline == 1)
    }

    @Test("online pairing equals the brute-force guarantees on random streams, whatever the arrival order")
    func matchesBruteForce() {
        var rng = SeededGenerator(seed: 42)
        for trial in 0..<300 {
            let knownInterval = trial % 2 == 0
            let spacing = ms(4)
            func stream() -> [Int64] {
                var t = Int64.random(in: 0...ms(8), using: &rng)
                return (0..<Int.random(in: 0...14, using: &rng)).map { _ in
                    defer { t += (knownInterval ? spacing : 1) + Int64.random(in: 0...ms(9), using: &rng) }
                    return t
                }
            }
            let left = stream(), right = stream()
            let maxSkew = Int64.random(in: ms(1)...ms(12), using: &rng)
            // Arrival: each frame some random time after its timestamp, cameras interleaved
            // arbitrarily but each camera in order.
            var frames: [(StereoSide, Int64, Int64)] = []
            for (side, stamps) in [(StereoSide.left, left), (.right, right)] {
                var lastArrival = Int64.min
                for t in stamps {
                    lastArrival = max(lastArrival + 1, t + Int64.random(in: 0...ms(20), using: &rng))
                    frames.append((side, t, lastArrival))
                }
            }
            frames.sort { ($0.2, $0.0.rawValue) < ($1.2, $1.0.rawValue) }
            let configuration = SynchronizerConfiguration(
                policy: .approximate, frameIntervalNanoseconds: knownInterval ? spacing : nil,
                maximumSkewNanoseconds: maxSkew, maximumLatencyNanoseconds: .max, queueCapacity: 32)
            let run = ScenarioRun.run(configuration, frames: frames, finishAt: ms(1000))
            let expected = bruteForceApproximatePairs(left: left, right: right, maximumSkew: maxSkew)
            let got = run.pairs.map { p in (left.firstIndex(of: p.left) ?? -1, right.firstIndex(of: p.right) ?? -1) }
            #expect(got.map { [$0.0, $0.1] } == expected.map { [$0.left, $0.right] }, "trial \(trial) L \(left.map { Double($0) / 1e6 }) R \(right.map { Double($0) / 1e6 }) skew \(Double(maxSkew) / 1e6) interval \(knownInterval) arrivals \(frames.map { "\($0.0) \(Double($0.1) / 1e6)@\(Double($0.2) / 1e6)" }) drops \(run.drops)")
            #expect(run.pairs.allSatisfy { !$0.onDeadline })
            #expect(run.pairs.count * 2 + run.drops.count == left.count + right.count, "every frame accounted for")
        }
    }
}
