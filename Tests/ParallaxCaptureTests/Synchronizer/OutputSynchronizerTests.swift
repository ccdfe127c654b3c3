import ParallaxGeometry
import Foundation
import Testing
@testable import ParallaxCapture

/// The thread-safe front: two camera threads push, a task consumes. Run under
/// `swift test --sanitize=thread --filter OutputSynchronizerTests` to check for races.
@Suite("OutputSynchronizer")
struct OutputSynchronizerTests {
    /// Pushes one camera's frames of `streams` from a thread of its own; both threads start
    /// together. Returns when both are done (or after 20 s, a failure).
    static func pushFromTwoThreads(_ synchronizer: OutputSynchronizer<Int>, _ frames: [GeneratedFrame]) -> Bool {
        let done = DispatchSemaphore(value: 0)
        let start = DispatchSemaphore(value: 0)
        for side in StereoSide.allCases {
            let mine = frames.filter { $0.side == side }
            Thread.detachNewThread {
                start.wait()
                for frame in mine {
                    synchronizer.push(
                        side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence,
                        payload: frame.moment)
                }
                done.signal()
            }
        }
        start.signal()
        start.signal()
        return done.wait(timeout: .now() + 20) == .success && done.wait(timeout: .now() + 20) == .success
    }

    static let streams = TimestampStreamGenerator(
        frameIntervalNanoseconds: ms(10), durationSeconds: 20, offsetNanoseconds: ms(1), jitterNanoseconds: ms(0.5),
        dropProbability: 0.05, seed: 21
    ).generate()

    static var configuration: SynchronizerConfiguration {
        var configuration = SynchronizerConfiguration(
            policy: .approximate, frameIntervalNanoseconds: ms(10), timestampJitterNanoseconds: ms(0.5),
            maximumLatencyNanoseconds: .max)
        // Two threads race, so one camera may run far ahead of the other: room to wait.
        configuration.queueCapacity = 4096
        return configuration
    }

    @Test("callbacks from two camera threads: every frame is paired correctly or dropped with a reason")
    func callbacksFromTwoThreads() {
        let pairs = Locked<[SynchronizedPair<Int>]>([])
        let drops = Locked<[FrameDrop]>([])
        let synchronizer = OutputSynchronizer<Int>(
            configuration: Self.configuration,
            pairHandler: { pair in pairs.withLock { $0.append(pair) } },
            dropHandler: { drop, _ in drops.withLock { $0.append(drop) } })
        #expect(Self.pushFromTwoThreads(synchronizer, Self.streams.frames))
        synchronizer.finish()
        let got = pairs.withLock { $0 }
        let dropped = drops.withLock { $0 }
        #expect(got.allSatisfy { $0.left.payload == $0.right.payload }, "no wrong pair")
        #expect(got.count * 2 + dropped.count == Self.streams.frames.count)
        // Pairs are delivered in time order even though two threads deliver them.
        #expect(zip(got, got.dropFirst()).allSatisfy { $0.left.timestampNanoseconds < $1.left.timestampNanoseconds })
        #expect(got.count == Self.streams.matchableMoments.count)
        let statistics = synchronizer.statistics
        #expect(statistics.pairsMade == got.count)
        #expect(statistics.dropped(.left) + statistics.dropped(.right) == dropped.count)
    }

    @Test("an AsyncSequence consumer reads pairs while two threads push; newest wins when it lags")
    func asyncConsumer() async {
        var configuration = Self.configuration
        configuration.outputCapacity = 4
        let synchronizer = OutputSynchronizer<Int>(configuration: configuration)
        let consumer = Task { () -> [SynchronizedPair<Int>] in
            var received: [SynchronizedPair<Int>] = []
            for await pair in synchronizer.pairs {
                received.append(pair)
                if received.count % 50 == 0 { try? await Task.sleep(for: .milliseconds(1)) }  // lag at times
            }
            return received
        }
        let frames = Self.streams.frames
        let pushed = await Task.detached { Self.pushFromTwoThreads(synchronizer, frames) }.value
        #expect(pushed)
        synchronizer.finish()
        let received = await consumer.value
        let statistics = synchronizer.statistics
        #expect(received.allSatisfy { $0.left.payload == $0.right.payload })
        // Pairs the consumer did not take in time were dropped as output overflow, both frames.
        let overflow = statistics.dropped(.left, reason: .queueOverflow)
        #expect(statistics.dropped(.right, reason: .queueOverflow) == overflow)
        #expect(received.count + overflow == statistics.pairsMade)
        #expect(zip(received, received.dropFirst()).allSatisfy { $0.left.timestampNanoseconds < $1.left.timestampNanoseconds })
    }

    /// A recorded minute at 30 fps (2 % lost per camera, 3 ms offset, 1 ms jitter), frames in
    /// timestamp order across both cameras (left first on a tie), as a replay pushes them.
    static let recording: [GeneratedFrame] = TimestampStreamGenerator(
        frameIntervalNanoseconds: 33_333_333, durationSeconds: 60, offsetNanoseconds: ms(3), jitterNanoseconds: ms(1),
        dropProbability: 0.02, seed: 17
    ).generate().frames.sorted {
        ($0.timestampNanoseconds, $0.side.rawValue) < ($1.timestampNanoseconds, $1.side.rawValue)
    }

    static let recordingConfiguration = SynchronizerConfiguration(
        policy: .approximate, frameIntervalNanoseconds: 33_333_333, timestampJitterNanoseconds: ms(1))

    /// The pairs ``RecordedStreamPairing`` makes of ``recording``: what a replay must deliver.
    static var recordingPairs: Int {
        var pairs = 0
        var next = PerSide(left: 0, right: 0)
        let frames = PerSide(left: recording.filter { $0.side == .left }.map(\.timestampNanoseconds),
                             right: recording.filter { $0.side == .right }.map(\.timestampNanoseconds))
        func pull(_ side: StereoSide) -> Int64? {
            guard next[side] < frames[side].count else { return nil }
            defer { next[side] += 1 }
            return frames[side][next[side]]
        }
        _ = RecordedStreamPairing.replay(configuration: recordingConfiguration, left: { pull(.left) }, right: { pull(.right) },
                                         emit: { if case .pair = $0 { pairs += 1 } })
        return pairs
    }

    /// The replay a user writes: a consumer task started first, then every frame pushed from
    /// the caller's own task as fast as it goes. Waiting for the consumer, on the frames' own
    /// clock, it delivers every pair the offline pairing makes (it used to deliver 2 of 1,766:
    /// a queue of two, newest wins, and deadlines read from the wall clock), and the
    /// statistics say made and delivered apart.
    @Test func aReplayThroughPairsDeliversEveryPair() async {
        let synchronizer = OutputSynchronizer<Int>(configuration: Self.recordingConfiguration,
                                                   backPressure: .waitForConsumer, clock: .frameTimestamps)
        let consumer = Task { () -> [SynchronizedPair<Int>] in
            var received: [SynchronizedPair<Int>] = []
            for await pair in synchronizer.pairs { received.append(pair) }
            return received
        }
        for frame in Self.recording {
            synchronizer.push(frame.side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence,
                              payload: frame.moment)
        }
        synchronizer.finish()
        let received = await consumer.value
        let statistics = synchronizer.statistics
        let expected = Self.recordingPairs
        print("replay: \(received.count) pairs delivered, \(statistics.pairsMade) made, offline pairing \(expected)")
        #expect(expected == 1735, "the recording (seed 17) holds 1,735 pairs")
        #expect(received.count == expected && statistics.pairsMade == expected && statistics.pairsDelivered == expected)
        #expect(statistics.pairsWaiting == 0 && statistics.dropped(reason: .queueOverflow) == 0)
        #expect(received.allSatisfy { $0.left.payload == $0.right.payload }, "no wrong pair")
    }

    /// The live default (newest wins, two queued) with the same replay pushed before the
    /// consumer can read: pairs are lost at the output, and the account says so: made =
    /// delivered + waiting + dropped as queue_overflow, never counted twice.
    @Test func newestWinsCountsMadeAndDeliveredApart() async {
        let synchronizer = OutputSynchronizer<Int>(configuration: Self.recordingConfiguration, clock: .frameTimestamps)
        for frame in Self.recording {
            synchronizer.push(frame.side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence,
                              payload: frame.moment)
        }
        synchronizer.finish()
        var read = 0
        for await _ in synchronizer.pairs { read += 1 }
        let statistics = synchronizer.statistics
        let overflow = statistics.dropped(.left, reason: .queueOverflow)
        #expect(read == 2 && statistics.pairsDelivered == 2 && statistics.pairsWaiting == 0)
        #expect(statistics.pairsMade == Self.recordingPairs)
        #expect(statistics.pairsMade == statistics.pairsDelivered + statistics.pairsWaiting + statistics.pairsDroppedAtOutput)
        #expect(statistics.pairsDroppedAtOutput == overflow && statistics.dropped(.right, reason: .queueOverflow) == overflow)
        // Every frame is a delivered pair's or a drop with a reason.
        for side in StereoSide.allCases {
            #expect(statistics.frames(side) == statistics.pairsDelivered + statistics.dropped(side))
        }
    }

    /// A frame pushed after ``OutputSynchronizer/finish()`` is never paired and is counted
    /// as `after_stop`: its camera was not switched off, so `constituent_disabled` (what
    /// such frames were counted as before) would say something untrue.
    @Test func framesAfterFinishAreAfterStop() async {
        let synchronizer = OutputSynchronizer<Int>(configuration: Self.recordingConfiguration, clock: .frameTimestamps)
        let before = Self.recording.prefix(40), after = Self.recording.dropFirst(40).prefix(10)
        for frame in before {
            synchronizer.push(frame.side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence, payload: frame.moment)
        }
        synchronizer.finish()
        let decided = synchronizer.statistics
        for frame in after {
            synchronizer.push(frame.side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence, payload: frame.moment)
        }
        let statistics = synchronizer.statistics
        #expect(statistics.pairsMade == decided.pairsMade, "nothing paired after the end")
        for side in StereoSide.allCases {
            let late = after.filter { $0.side == side }.count
            #expect(late > 0)
            #expect(statistics.dropped(side, reason: .afterStop) == late, "\(side): each frame after finish() is after_stop")
            #expect(statistics.dropped(side, reason: .constituentDisabled) == 0)
            #expect(statistics.frames(side) == decided.frames(side) + late)
        }
    }

    /// Frames the input queue drops alone (one camera's frames pushed far ahead of the
    /// other's, a queue of 4) are
    /// `queue_overflow` too, but never pairs: the made/delivered identity counts pairs the
    /// output dropped apart, so it holds with both kinds of overflow in one run.
    @Test func theIdentityHoldsWithInputAndOutputOverflow() {
        var configuration = Self.recordingConfiguration
        configuration.queueCapacity = 4
        let synchronizer = OutputSynchronizer<Int>(configuration: configuration, clock: .frameTimestamps)
        // The left camera's first 20 frames arrive before any right frame: the input queue overflows.
        let ordered = Self.recording.filter { $0.side == .left }.prefix(20) + Self.recording.filter { $0.side == .right }
            + Self.recording.filter { $0.side == .left }.dropFirst(20)
        for frame in ordered {
            synchronizer.push(frame.side, timestampNanoseconds: frame.timestampNanoseconds, sequence: frame.sequence,
                              payload: frame.moment)
        }
        synchronizer.finish()
        let statistics = synchronizer.statistics
        // Input overflow drops single frames: one side's queue_overflow count exceeds the pairs
        // the output dropped, so the old identity (made = delivered + waiting + left overflow) breaks.
        let overflow = PerSide(left: statistics.dropped(.left, reason: .queueOverflow),
                               right: statistics.dropped(.right, reason: .queueOverflow))
        print("input and output overflow: queue_overflow left \(overflow.left), right \(overflow.right); "
              + "pairs dropped at the output \(statistics.pairsDroppedAtOutput), made \(statistics.pairsMade)")
        #expect(max(overflow.left, overflow.right) > statistics.pairsDroppedAtOutput, "the input queue overflowed too")
        #expect(statistics.pairsDroppedAtOutput > 0 && statistics.pairsDelivered == 0)
        #expect(statistics.pairsMade == statistics.pairsDelivered + statistics.pairsWaiting + statistics.pairsDroppedAtOutput)
    }

    /// Waits (by yielding, up to a 60 s hang guard) until the synchronizer's consumer waits.
    static func untilWaiting(_ synchronizer: OutputSynchronizer<Int>) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(60)
        while !synchronizer.hasWaitingConsumer {
            guard ContinuousClock.now < deadline else { return false }
            await Task.yield()
        }
        return true
    }

    @Test("a waiting consumer gets a pair as soon as it is released, and nil after finish", .timeLimit(.minutes(1)))
    func handover() async {
        let synchronizer = OutputSynchronizer<Int>(
            configuration: SynchronizerConfiguration(frameIntervalNanoseconds: ms(10)), clock: .custom { 0 })
        let (received, receivedContinuation) = AsyncStream<Int>.makeStream()
        let consumer = Task { () -> [Int] in
            var got: [Int] = []
            for await pair in synchronizer.pairs {
                got.append(pair.left.payload)
                receivedContinuation.yield(pair.left.payload)
            }
            receivedContinuation.finish()
            return got
        }
        #expect(await Self.untilWaiting(synchronizer))
        synchronizer.push(.left, timestampNanoseconds: ms(0), sequence: 0, payload: 7)
        synchronizer.push(.right, timestampNanoseconds: ms(1), sequence: 0, payload: 7)
        // The pair is provably right once both frames are in: the waiting consumer has it
        // before anything else happens (no finish, no later frame).
        var iterator = received.makeAsyncIterator()
        #expect(await iterator.next() == 7)
        #expect(synchronizer.statistics.pairsMade == 1)
        synchronizer.finish()
        #expect(await consumer.value == [7])
        synchronizer.push(.left, timestampNanoseconds: ms(10), sequence: 1, payload: 8)
        #expect(synchronizer.statistics.dropped(.left, reason: .afterStop) == 1, "a frame after finish() is after_stop")
    }

    @Test("cancelling the consumer ends its wait", .timeLimit(.minutes(1)))
    func cancellation() async {
        let synchronizer = OutputSynchronizer<Int>(configuration: SynchronizerConfiguration())
        let consumer = Task { () -> Int in
            var count = 0
            for await _ in synchronizer.pairs { count += 1 }
            return count
        }
        #expect(await Self.untilWaiting(synchronizer))
        consumer.cancel()
        #expect(await consumer.value == 0)
    }
}
