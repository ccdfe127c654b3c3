import Foundation
@testable import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Testing

/// The session's own drops, each provoked on purpose with hand-fed frames, so that which pair
/// is dropped, and why, is decided by the test and not by the machine's speed: the oldest
/// waiting pair for a consumer that is behind (`consumer_behind`), every pair a consumer
/// leaves no buffer for (`no_free_buffer`), a pair the rectifier refuses
/// (`rectification_failed`); and through all of them the account balances.
@Suite("Session drops: consumer behind, no free buffer, rectification failed")
struct SessionAccountTests {
    static let interval = FrameInterval(numerator: 1, denominator: 30)

    /// Hands frame `k` of both cameras over (right 2 ms after left), showing `pixels`.
    static func feed(_ k: Int, to cameras: PerSide<HandFedCamera>, pixels: SharedPixels) {
        let t = 1_000_000_000 + Int64(k) * interval.nanoseconds
        for side in StereoSide.allCases {
            cameras[side].deliver(cameras[side].frame(pixels, timestampNanoseconds: t + (side == .right ? 2_000_000 : 0),
                                                      sequence: UInt64(k)))
        }
    }

    /// Pairs the session has delivered or dropped (every pair it decided).
    static func decided(_ stats: StereoSessionStatistics) -> Int {
        stats.pairsDelivered + stats.sessionDrops.values.reduce(0, +)
    }

    /// README: "`.newestWins(queuedPairs: 2)` for live cameras: when the consumer is behind,
    /// the oldest waiting pair is dropped and counted (`consumer_behind`)". Ten pairs are made
    /// while the consumer of `pairs` reads nothing; the two it then reads are the last two made
    /// (frames 8 and 9), and the eight before them are the drops. Also README "Events": the
    /// first event is `started`.
    @Test("newest wins: a consumer that is behind gets the newest pairs; the oldest waiting ones are dropped as consumer_behind")
    func theOldestWaitingPairIsDropped() async throws {
        let format = CaptureFormat(fourCC: .grey, size: ImageSize(width: 32, height: 24), frameInterval: Self.interval)
        let cameras = PerSide(left: HandFedCamera(name: "left", format: format), right: HandFedCamera(name: "right", format: format))
        let device = StereoDevice(left: cameras.left, right: cameras.right)
        try device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        // Pairs proven by their timestamps alone (no 100 ms latency deadline): which pairs exist
        // when the consumer reads does not depend on the machine's speed.
        options.synchronizer = SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: Self.interval.nanoseconds,
                                                         timestampJitterNanoseconds: 2_000_000, maximumLatencyNanoseconds: .max / 4)
        let session = try StereoSession(device: device, options: options)
        #expect(session.backPressure == .newestWins(queuedPairs: 2))
        try session.start()
        let pixels = SharedPixels(try TestPattern.image(.gray8, size: format.size, seed: 1))
        // Frames 0…9 make pairs 0…9, each proven as its later (right) frame arrives: the next
        // frames cannot come nearer than the interval less the jitter. Then the session thread
        // has taken each from its own queue and pushed it to the consumer's (hang guard 10 s).
        let settled = try await onOwnThread { () -> Bool in
            for k in 0..<10 { Self.feed(k, to: cameras, pixels: pixels) }
            return eventually {
                let stats = session.statistics
                return stats.synchronizer.pairsMade == 10 && session.state.withLock({ $0.incoming.isEmpty })
                    && session.pairQueue.count + stats.sessionDrops[.consumerBehind, default: 0] == 10
            }
        }
        #expect(settled, "the ten pairs did not settle: \(session.statistics.sessionDrops)")
        var reader = session.pairs.makeAsyncIterator()
        var read: [UInt64] = [], numbers: [Int] = []
        for _ in 0..<2 {
            if let pair = try await reader.next() { read.append(pair.left.sequence); numbers.append(pair.number) }
        }
        session.stop()
        let stats = session.statistics
        #expect(read == [8, 9], "the consumer read \(read)")
        // README and "First programs": `pair.number` counts every pair made, dropped ones too,
        // so the two pairs delivered are numbers 8 and 9, not 0 and 1.
        #expect(numbers == [8, 9], "pair numbers \(numbers)")
        #expect(stats.sessionDrops[.consumerBehind, default: 0] == 8 && stats.pairsDelivered == 2)
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side), "\(side): \(stats.droppedByName(side))") }
        var events = session.events.makeAsyncIterator()
        #expect(try await events.next()?.kind == .started)
        #expect(stats.events.first?.kind == .started && stats.events.last?.name == "stopped")
    }

    /// A session rectifies into a pool of queued pairs + 3 = 5 buffers (newest wins, two
    /// queued); a consumer that keeps every pair it is handed holds them, and the pool grows a
    /// pair's buffers at a time, each growth an event. With the limit set to 6 pairs' buffers
    /// the seventh pair finds none: it is the session's `no_free_buffer` drop and the session
    /// ends, naming how many pairs the consumer held; the account balances.
    @Test("a consumer that keeps every pair: the pool grows with an event each time, and past its limit the session ends naming the pairs held")
    func aConsumerHoldingEveryBufferGrowsThePoolToItsLimit() throws {
        let kept = Locked<[StereoPair]>([])
        let pairBytes = 2 * 160 * 120  // two gray8 images of 160 × 120
        let fixture = try HandFedSession(heldPairsLimitBytes: 6 * pairBytes, onPair: { pair in kept.withLock { $0.append(pair) } })
        let session = fixture.session
        defer { session.stop() }
        #expect(session.backPressure == .newestWins(queuedPairs: 2))
        // Seven pairs, each proven as its right frame arrives, and decided before the next is fed.
        for (k, frames) in fixture.frames(7).enumerated() {
            fixture.cameras.left.deliver(frames.left)
            fixture.cameras.right.deliver(frames.right)
            #expect(eventually { Self.decided(session.statistics) > k }, "pair \(k) was not decided")
        }
        #expect(eventually { !session.isRunning }, "the session did not end at its limit")
        let held = session.statistics
        print("holding every pair: \(held.pairsDelivered) delivered, drops \(held.sessionDrops), pool \(held.pooledBuffers); "
              + "events \(held.events.map(\.description))")
        #expect(held.synchronizer.pairsMade == 7 && held.pairsInFlight == 0)
        #expect(held.pairsDelivered == 6 && held.pooledBuffers == 6 && kept.withLock { $0.count } == 6)
        // The seventh pair found no buffer.
        #expect(held.sessionDrops == [.noFreeBuffer: 1], "\(held.sessionDrops)")
        let grew = held.events.compactMap { event -> Int? in if case .poolGrew(let pairs, _) = event.kind { return pairs }; return nil }
        #expect(grew == [6], "the pool grew past its five steady buffers once, to six")
        let reason = held.events.compactMap { event -> String? in if case .stopped(let reason) = event.kind { return reason }; return nil }
        #expect(reason.count == 1 && reason[0].contains("your code holds 6 rectified pairs") && reason[0].contains("heldPairsLimitBytes"),
                "\(reason)")
        for side in StereoSide.allCases { #expect(held.accountsForEveryFrame(side), "\(side): \(held.droppedByName(side))") }
    }

    /// README: the session's drop reasons include `rectification_failed`. A pair whose frames
    /// do not have the calibrated size (a 32×24 image from cameras calibrated and configured at
    /// 160×120) cannot be resampled: it is dropped with that reason and a device-error event
    /// naming the pair, the pairs around it are delivered, and the account balances.
    @Test("a pair the rectifier refuses is dropped as rectification_failed with an event; the pairs around it go through")
    func aPairThatCannotBeRectifiedIsDroppedWithTheReason() throws {
        let delivered = Locked<[UInt64]>([])
        let fixture = try HandFedSession(onPair: { pair in delivered.withLock { $0.append(pair.left.sequence) } })
        let session = fixture.session
        defer { session.stop() }
        let wrongSize = SharedPixels(try TestPattern.image(.gray8, size: ImageSize(width: 32, height: 24), seed: 2))
        var frames = fixture.frames(7)
        frames[3] = PerSide { side in
            fixture.cameras[side].frame(wrongSize, timestampNanoseconds: frames[3][side].timestampNanoseconds,
                                        sequence: frames[3][side].sequence)
        }
        for (k, pair) in frames.enumerated() {
            fixture.cameras.left.deliver(pair.left)
            fixture.cameras.right.deliver(pair.right)
            #expect(eventually { Self.decided(session.statistics) > k }, "pair \(k) was not decided")
        }
        session.stop()
        let stats = session.statistics
        #expect(stats.sessionDrops == [.rectificationFailed: 1], "\(stats.sessionDrops)")
        #expect(delivered.withLock { $0 } == [0, 1, 2, 4, 5, 6])
        let errors = stats.events.compactMap { if case .deviceError(let message) = $0.kind { return message }; return nil }
        #expect(errors.count == 1 && errors.first?.contains("pair 3 could not be rectified") == true, "\(errors)")
        for side in StereoSide.allCases { #expect(stats.accountsForEveryFrame(side), "\(side): \(stats.droppedByName(side))") }
    }
}

/// The account's check itself can fail: a closed account from a real session, then each of
/// its terms moved as a defect would move it. FrameAccount.md: "a pair lost without a reason
/// breaks it"; `stream` and `view` end with ``StereoSessionStatistics/accountDiscrepancy`` as
/// an error, so each of these would fail them.
@Suite("The frame account's check")
struct FrameAccountCheckTests {
    @Test("a closed account balances; a pair lost without a reason, a pair still held, a frame the synchronizer lost each break it")
    func everyTermIsChecked() async throws {
        let rig = SimulatedRigDevice(rig: .example(size: ImageSize(width: 64, height: 48)), pace: .asFastAsPossible)
        let session = try StereoSession(device: StereoDevice(simulated: rig))
        try session.start()
        var delivered = 0
        for try await _ in session.pairs {
            delivered += 1
            if delivered == 30 { break }
        }
        session.stop()
        let closed = session.statistics
        #expect(closed.accountDiscrepancy == nil && closed.pairsDelivered == 30)
        #expect(StereoSide.allCases.allSatisfy(closed.accountsForEveryFrame))

        // A delivered pair that vanished, with no reason counted.
        var lost = closed
        lost.pairsDelivered -= 1
        #expect(!lost.accountsForEveryFrame(.left) && !lost.accountsForEveryFrame(.right))
        #expect(lost.accountDiscrepancy?.contains("delivered 29") == true, "\(lost.accountDiscrepancy ?? "")")
        // The same pair counted as still held: each side balances, but a closed account holds none.
        var held = lost
        held.pairsInFlight += 1
        #expect(StereoSide.allCases.allSatisfy(held.accountsForEveryFrame))
        #expect(held.accountDiscrepancy?.contains("holds 1") == true, "\(held.accountDiscrepancy ?? "")")
        // A pair the session received that the synchronizer never made.
        var extra = closed
        extra.pairsReceived += 1
        extra.pairsDelivered += 1
        #expect(!extra.accountsForEveryFrame(.left) && extra.accountDiscrepancy != nil)
    }
}
