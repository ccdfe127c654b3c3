import ParallaxGeometry
import Testing

@testable import ParallaxCapture

@Suite("Synchronizer policies and drop reasons")
struct PolicyAndDropTests {
    @Test("exact by timestamp pairs equal timestamps only, at once")
    func exactTimestamp() {
        let configuration = SynchronizerConfiguration(policy: .exact(.timestamp), maximumSkewNanoseconds: ms(10))
        let run = ScenarioRun.run(configuration, frames: arrivingOnTime(left: [0, 10, 20, 30], right: [0, 11, 20, 30]), finishAt: nil)
        #expect(run.pairs.map { [$0.left, $0.right, $0.releasedAt] } == [[0, 0, 0], [ms(20), ms(20), ms(20)], [ms(30), ms(30), ms(30)]])
        // Left 10 is dropped when right 11 shows no right frame can equal it; right 11 when
        // left 20 arrives.
        #expect(run.dropReasons(.left) == [ms(10): .noMatchWithinSkew])
        #expect(run.dropReasons(.right) == [ms(11): .noMatchWithinSkew])
    }

    @Test("exact by sequence pairs equal sequence numbers within the skew")
    func exactSequence() {
        let core = SynchronizerCore<Int>(
            configuration: SynchronizerConfiguration(policy: .exact(.sequence), maximumSkewNanoseconds: ms(2)))
        var run = ScenarioRun()
        // (sequence, left time, right time); right 2 is lost, sequence 3 is 5 ms apart.
        core.push(.left, timestampNanoseconds: ms(0), sequence: 1, payload: 0, now: 0) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(1), sequence: 1, payload: 0, now: 0) { run.record($0) }
        core.push(.left, timestampNanoseconds: ms(10), sequence: 2, payload: 0, now: 0) { run.record($0) }
        core.push(.left, timestampNanoseconds: ms(20), sequence: 3, payload: 0, now: 0) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(25), sequence: 3, payload: 0, now: 0) { run.record($0) }
        core.push(.left, timestampNanoseconds: ms(30), sequence: 4, payload: 0, now: 0) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(30.5), sequence: 4, payload: 0, now: 0) { run.record($0) }
        #expect(run.pairs.map { [$0.left, $0.right] } == [[0, ms(1)], [ms(30), ms(30.5)]])
        #expect(run.dropReasons(.left) == [ms(10): .noMatchWithinSkew, ms(20): .noMatchWithinSkew])
        #expect(run.dropReasons(.right) == [ms(25): .noMatchWithinSkew])
    }

    @Test("epsilon pairs the oldest frames within the tolerance without waiting")
    func epsilon() {
        let configuration = SynchronizerConfiguration(policy: .epsilon(toleranceNanoseconds: ms(2)), maximumSkewNanoseconds: ms(10))
        // Right 1 pairs with left 0 at once although left 1.5 (closer) follows: no optimality.
        let run = ScenarioRun.run(configuration, frames: arrivingOnTime(left: [0, 1.5, 10], right: [1, 14]), finishAt: ms(20))
        #expect(run.pairs.map { [$0.left, $0.right, $0.releasedAt] } == [[0, ms(1), ms(1)]])
        #expect(run.dropReasons(.left) == [ms(1.5): .noMatchWithinSkew, ms(10): .noMatchWithinSkew])
        #expect(run.dropReasons(.right) == [ms(14): .noMatchWithinSkew])
    }

    @Test("a backward time jump flushes both queues with reason discontinuity and pairing resumes")
    func discontinuity() {
        let run = ScenarioRun.run(
            SynchronizerConfiguration(maximumSkewNanoseconds: ms(10)),
            frames: [
                (.left, ms(100), 1), (.right, ms(101), 2), (.left, ms(110), 3),  // (100,101) proven by left 110
                (.right, ms(111), 4),  // waits for left's next frame
                (.left, ms(5), 5),  // the left camera restarted
                (.right, ms(6), 6), (.left, ms(15), 7),
            ], finishAt: 100)
        #expect(run.pairs.map { [$0.left, $0.right] } == [[ms(100), ms(101)], [ms(5), ms(6)]])
        #expect(run.dropReasons(.left) == [ms(110): .discontinuity, ms(15): .noMatchWithinSkew])
        #expect(run.dropReasons(.right) == [ms(111): .discontinuity])
        #expect(run.statistics?.discontinuities == 1)
    }

    @Test("under exact(.sequence) a sequence reset is a discontinuity even while time goes on")
    func sequenceReset() {
        var configuration = SynchronizerConfiguration(policy: .exact(.sequence))
        configuration.maximumSkewNanoseconds = ms(10)
        let core = SynchronizerCore<Int>(configuration: configuration)
        var run = ScenarioRun()
        // Sequences 5 and 6, then the left camera restarts at 0 with its clock still rising:
        // only the sequence says the stream broke. Without that check left 6 and right 6
        // would pair across the restart.
        let frames: [(StereoSide, Int64, UInt64)] = [
            (.left, ms(100), 5), (.right, ms(101), 5), (.left, ms(133), 6),
            (.left, ms(166), 0), (.right, ms(134), 6),
        ]
        for (side, t, sequence) in frames {
            core.push(side, timestampNanoseconds: t, sequence: sequence, payload: 0, now: t) { run.record($0) }
        }
        core.finish(now: ms(1000)) { run.record($0) }
        #expect(run.pairs.map { [$0.left, $0.right] } == [[ms(100), ms(101)]])
        #expect(run.dropReasons(.left)[ms(133)] == .discontinuity)
        #expect(run.dropReasons(.left)[ms(166)] != nil && run.dropReasons(.right)[ms(134)] != nil)
        #expect(core.statistics.discontinuities == 1)
    }

    @Test("a disabled camera drops waiting and new frames with reason constituent disabled")
    func disabled() {
        let core = SynchronizerCore<Int>(configuration: SynchronizerConfiguration(maximumSkewNanoseconds: ms(10)))
        var run = ScenarioRun()
        core.push(.left, timestampNanoseconds: ms(0), sequence: 0, payload: 0, now: 0) { run.record($0) }
        core.setEnabled(false, for: .right) { run.record($0) }
        core.push(.left, timestampNanoseconds: ms(10), sequence: 1, payload: 0, now: 0) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(10), sequence: 1, payload: 0, now: 0) { run.record($0) }
        core.setEnabled(true, for: .right) { run.record($0) }
        core.push(.left, timestampNanoseconds: ms(20), sequence: 2, payload: 0, now: 0) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(20), sequence: 2, payload: 0, now: 0) { run.record($0) }
        #expect(run.drops.map(\.reason) == [.constituentDisabled, .constituentDisabled, .constituentDisabled])
        #expect(run.pairs.map { [$0.left, $0.right] } == [[ms(20), ms(20)]])
        let statistics = core.statistics
        #expect(statistics.dropped(.left, reason: .constituentDisabled) == 2)
        #expect(statistics.dropped(.right, reason: .constituentDisabled) == 1)
    }

    @Test("damaged frames and a silent camera's overflowing queue are counted per side and reason")
    func deviceErrorAndOverflow() {
        var configuration = SynchronizerConfiguration(maximumSkewNanoseconds: ms(10))
        configuration.queueCapacity = 3
        let core = SynchronizerCore<Int>(configuration: configuration)
        var run = ScenarioRun()
        core.pushDamaged(.right, timestampNanoseconds: ms(0), sequence: 0, payload: 0) { run.record($0) }
        // The right camera has never delivered, so nothing about left frames can be proven:
        // they wait until the queue of 3 overflows.
        for i in 0..<5 {
            core.push(.left, timestampNanoseconds: ms(Double(i) * 10), sequence: UInt64(i), payload: 0, now: 0) { run.record($0) }
        }
        #expect(run.drops.map(\.reason) == [.deviceError, .queueOverflow, .queueOverflow])
        #expect(run.drops.map(\.timestampNanoseconds) == [0, 0, ms(10)])
        let statistics = core.statistics
        #expect(statistics.dropped(.right, reason: .deviceError) == 1)
        #expect(statistics.dropped(.left, reason: .queueOverflow) == 2)
        #expect(statistics.frames(.left) == 5 && statistics.frames(.right) == 1)
        #expect(core.waitingFrameCount(.left) == 3)
    }

    @Test("timestamps move to mid-exposure before pairing")
    func midExposure() {
        let core = SynchronizerCore<Int>(configuration: SynchronizerConfiguration(maximumSkewNanoseconds: ms(1)))
        var run = ScenarioRun()
        var pairs: [SynchronizedPair<Int>] = []
        // Same mid-exposure (10 ms): left stamped at the end of a 4 ms exposure, right at the
        // start of a 2 ms one. Raw they are 3 ms apart, beyond the 1 ms skew.
        core.push(.left, timestampNanoseconds: ms(12), sequence: 0, exposureNanoseconds: ms(4), timestampSource: .endOfFrame, payload: 0, now: 0) { run.record($0) }
        core.push(.right, timestampNanoseconds: ms(9), sequence: 0, exposureNanoseconds: ms(2), timestampSource: .startOfExposure, payload: 0, now: 0) {
            if case .pair(let pair) = $0 { pairs.append(pair) }
            run.record($0)
        }
        #expect(run.drops.isEmpty)
        #expect(pairs.count == 1)
        #expect(pairs.first?.skewNanoseconds == 0)
        #expect(pairs.first?.rawSkewNanoseconds == -ms(3))
        #expect(TimestampSource.endOfFrame.midExposure(timestampNanoseconds: 100, exposureNanoseconds: nil) == 100)
    }

    @Test("clock correction waits for 8 frames per camera, then finds an offset of 0.47 frame despite jitter")
    func phaseAcquisitionWaitsForEightFrames() {
        // 10 ms frames, the right clock 4.7 ms ahead (0.47 of a frame) with ±0.6 ms jitter
        // alternating, so every other right frame lies 5.3 ms after its left partner and
        // 4.7 ms before the next one: raw pairing takes the wrong neighbour there.
        var configuration = SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: ms(10))
        configuration.clockCorrection = .apply
        configuration.maximumSkewNanoseconds = ms(4.9)
        let core = SynchronizerCore<Int>(configuration: configuration)
        var pairs: [[Int]] = []
        var drops = 0
        let emit: SynchronizerCore<Int>.Emit = { event in
            switch event {
            case .pair(let pair): pairs.append([pair.left.payload, pair.right.payload])
            case .drop: drops += 1
            }
        }
        func push(_ k: Int) {
            let t = ms(1000) + Int64(k) * ms(10)
            core.push(.left, timestampNanoseconds: t, sequence: UInt64(k), payload: k, now: t, emit: emit)
            let jitter = k % 2 == 0 ? ms(0.6) : -ms(0.6)
            core.push(.right, timestampNanoseconds: t + ms(4.7) + jitter, sequence: UInt64(k), payload: k, now: t, emit: emit)
        }
        for k in 0..<7 { push(k) }
        core.advance(to: ms(1500), emit: emit)
        #expect(pairs.isEmpty && drops == 0, "7 frames per camera: still measuring the phase")
        push(7)
        #expect(!pairs.isEmpty, "the 8th frame on each side ends the measurement")
        #expect(pairs.allSatisfy { $0[0] == $0[1] }, "\(pairs)")
        for k in 8..<12 { push(k) }
        core.finish(now: ms(2000), emit: emit)
        #expect(pairs == (0..<12).map { [$0, $0] })
        #expect(drops == 0)
    }

    @Test("clock correction measures the phase first, even when the streams end during it")
    func phaseAcquisition() {
        // 10 ms frames; the right clock is 4.6 ms ahead and its stamps alternate ±0.8 ms, so
        // every other right frame sits 5.4 ms after its left partner, nearer the next left
        // frame (4.6 ms): raw pairing would take the wrong neighbour there. The phase, the
        // circular mean of 5.4, 3.8, 5.4, 3.8 ms, is 4.6 ms.
        var configuration = SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: ms(10))
        configuration.clockCorrection = .apply
        configuration.maximumSkewNanoseconds = ms(4.9)
        let core = SynchronizerCore<Int>(configuration: configuration)
        var pairs: [[Int]] = []
        var drops = 0
        let emit: SynchronizerCore<Int>.Emit = { event in
            switch event {
            case .pair(let pair): pairs.append([pair.left.payload, pair.right.payload])
            case .drop: drops += 1
            }
        }
        for k in 0..<4 {
            let t = ms(1000) + Int64(k) * ms(10)
            core.push(.left, timestampNanoseconds: t, sequence: UInt64(k), payload: k, now: t, emit: emit)
            let jitter = k % 2 == 0 ? ms(0.8) : -ms(0.8)
            core.push(.right, timestampNanoseconds: t + ms(4.6) + jitter, sequence: UInt64(k), payload: k, now: t, emit: emit)
        }
        #expect(pairs.isEmpty, "nothing is decided before the phase is measured")
        core.finish(now: ms(2000), emit: emit)
        #expect(pairs == [[0, 0], [1, 1], [2, 2], [3, 3]])
        #expect(drops == 0)
        // Four pairs over 30 ms: no drift yet, the offset is their mean difference.
        #expect(core.clockEstimate?.offsetNanoseconds == ms(4.6))

        // The same streams without correction pair the far frames with the wrong neighbour.
        let raw = ScenarioRun.run(
            SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: ms(10), maximumSkewNanoseconds: ms(4.9)),
            frames: (0..<4).flatMap { k -> [(StereoSide, Int64, Int64)] in
                let t = ms(1000) + Int64(k) * ms(10)
                return [(.left, t, t), (.right, t + ms(4.6) + (k % 2 == 0 ? ms(0.8) : -ms(0.8)), t)]
            }, finishAt: ms(2000))
        // Right 0 (1005.4 ms) is 5.4 ms from left 0, beyond the 4.9 ms skew, and pairs with left 1.
        #expect(raw.pairs.contains { $0.left == ms(1010) && $0.right == ms(1005.4) })
    }

    @Test("the histogram's percentiles are within 1/128 of the exact ones")
    func histogram() {
        var histogram = DurationHistogram()
        var values: [Int64] = []
        var rng = SeededGenerator(seed: 3)
        for _ in 0..<10_000 {
            let v = Int64.random(in: 0...50_000_000, using: &rng)
            values.append(v)
            histogram.record(v)
        }
        values.sort()
        for fraction in [0.5, 0.99] {
            let exact = values[Int((fraction * Double(values.count)).rounded(.up)) - 1]
            let approx = histogram.percentile(fraction)
            #expect(abs(Double(approx - exact)) <= Double(exact) / 128 + 1, "\(fraction): \(approx) vs \(exact)")
        }
        #expect(histogram.summary.maxNanoseconds == values.last)
        var small = DurationHistogram()
        for v in [3, 1, 2] as [Int64] { small.record(v) }
        #expect(small.percentile(0.5) == 2)
        #expect(DurationHistogram().summary == DurationSummary(count: 0, p50Nanoseconds: 0, p99Nanoseconds: 0, maxNanoseconds: 0))
    }

    @Test("the clock estimator recovers offset and drift from noiseless pairs")
    func clockEstimator() throws {
        var estimator = ClockEstimator(window: 64, frameIntervalNanoseconds: ms(10))
        // right − left = 3 ms + 50 ppm · t, sampled every 100 ms for 5 s (50 samples, all
        // inside the window of 64).
        for i in 0..<50 {
            let left = Int64(i) * ms(100) + 1_000_000_000
            let right = left + ms(3) + Int64((50e-6 * Double(left - 1_000_000_000)).rounded())
            estimator.add(left: left, right: right)
        }
        let estimate = try #require(estimator.estimate)
        #expect(abs(try #require(estimate.driftPartsPerMillion) - 50) < 0.01)
        // At the last pair (4.9 s): 3 ms + 245 µs.
        #expect(abs(estimate.offsetNanoseconds - (ms(3) + 245_000)) <= 2)
        // A neighbour pair (one frame interval off) is unwrapped onto the line.
        estimator.add(left: 1_000_000_000 + ms(5000), right: 1_000_000_000 + ms(5000) + ms(3) + 250_000 - ms(10))
        #expect(abs(try #require(estimator.estimate?.driftPartsPerMillion) - 50) < 0.01)
    }
}
