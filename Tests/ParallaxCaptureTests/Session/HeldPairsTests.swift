import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import ParallaxTestSupport
import Synchronization
import Testing

/// A program that keeps pairs, or views of their images, from `for try await`: the session's
/// pool of rectification buffers grows while they are held, so the loop runs to its end; a
/// program that keeps more than ``StereoSessionOptions/heldPairsLimitBytes`` allows is told so
/// by the loop's error instead of waiting for ever. (Mutation: a pool that never grows past its
/// steady five buffers, `limit: 0` in `StereoSession.takeStorage`, ends the first loop at the
/// limit with the error instead of its 300 pairs.)
@Suite("Held pairs: the pool grows while pairs are held, and past its limit the loop throws, never hangs")
struct HeldPairsTests {
    /// Reads up to `count` pairs from a simulated rig running as fast as it can (its pairs wait
    /// for the consumer), keeping the latest `keep` pairs, or only their left views: how many it
    /// read, the error that ended the loop, and the session's account after. A hang guard stops
    /// the session after 60 s, which ends the loop short.
    static func read(count: Int, keep: Int, viewsOnly: Bool, limitBytes: Int? = nil) async throws
        -> (read: Int, error: StereoSessionError?, stats: StereoSessionStatistics, lastPairToEnd: Double)
    {
        let (rig, device) = SessionFixtures.simulated(drops: 0)
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        if let limitBytes { options.heldPairsLimitBytes = limitBytes }
        let session = try StereoSession(device: device, calibration: rig.rig.calibration, options: options)
        let guardTask = Task { try await Task.sleep(for: .seconds(60)); session.stop() }
        defer { guardTask.cancel(); session.stop() }
        var pairs: [StereoPair] = [], views: [ImageView] = []
        var read = 0, failure: StereoSessionError?
        var lastPair = ContinuousClock.now
        do {
            for try await pair in session.pairs {
                read += 1
                lastPair = .now
                if viewsOnly {
                    views.append(try #require(pair.left.image))
                    if views.count > keep { views.removeFirst() }
                } else {
                    pairs.append(pair)
                    if pairs.count > keep { pairs.removeFirst() }
                }
                if read == count { break }
            }
        } catch let error as StereoSessionError {
            failure = error
        }
        let toEnd = ContinuousClock.now - lastPair
        session.stop()
        withExtendedLifetime((pairs, views)) {}
        let seconds = Double(toEnd.components.seconds) + Double(toEnd.components.attoseconds) / 1e18
        return (read, failure, session.statistics, seconds)
    }

    static func grew(_ stats: StereoSessionStatistics) -> [Int] {
        stats.events.compactMap { event in if case .poolGrew(let pairs, _) = event.kind { return pairs }; return nil }
    }

    @Test("a loop keeping 10, then 50, rectified pairs, or 50 pairs' views, reads its 300 pairs: the pool grows, nothing is dropped for want of a buffer",
          arguments: [(10, false), (50, false), (50, true)])
    func keepingPairsRunsToTheEnd(keep: Int, viewsOnly: Bool) async throws {
        let run = try await Self.read(count: 300, keep: keep, viewsOnly: viewsOnly)
        let grew = Self.grew(run.stats)
        print("keeping \(keep) \(viewsOnly ? "views" : "pairs"): \(run.read) read, pool \(run.stats.pooledBuffers), "
              + "grew to \(grew.last ?? 0) in \(grew.count) steps, drops \(run.stats.sessionDrops)")
        #expect(run.read == 300 && run.error == nil, "\(run.read) pairs read, \(run.error.map { "\($0)" } ?? "no error")")
        // What it holds (keep), the two queued, the one being rectified and the one handed
        // over: the pool grows past its steady five to about that, one buffer at a time.
        #expect(run.stats.pooledBuffers > keep && run.stats.pooledBuffers <= keep + 5, "pool \(run.stats.pooledBuffers)")
        #expect(grew == Array(stride(from: 6, through: run.stats.pooledBuffers, by: 1)), "\(grew)")
        #expect(run.stats.sessionDrops[.noFreeBuffer, default: 0] == 0)
    }

    @Test("the default limit is 512 MiB of held pairs, as the docs say")
    func defaultLimit() {
        #expect(StereoSessionOptions().heldPairsLimitBytes == 512 * 1_048_576)
    }

    /// The limit at 20 pairs' buffers and a loop that keeps 50: the pool grows to 20, the
    /// next pair finds none, the session ends, and once the loop has read every pair handed
    /// over it throws the error, naming the 20 held; the account closes. The time from the
    /// last pair to the error is printed (wall clock: the hang guard is what is asserted).
    @Test("a loop keeping more pairs than the limit allows ends with pairsHeld naming how many it holds, and the account closes")
    func pastTheLimitTheLoopThrows() async throws {
        let pairBytes = 2 * ImageBuffer.byteCount(format: .gray8, size: ImageSize(width: 160, height: 120))
        let run = try await Self.read(count: 300, keep: 50, viewsOnly: false, limitBytes: 20 * pairBytes)
        print("limit 20 pairs, keeping 50: \(run.read) read, then \(run.error.map { "\($0)" } ?? "no error") "
              + String(format: "%.1f ms after the last pair", run.lastPairToEnd * 1000))
        guard case .pairsHeld(let held, let bytes, let limit)? = run.error else {
            Issue.record("the loop ended with \(run.error.map { "\($0)" } ?? "no error") after \(run.read) pairs")
            return
        }
        #expect(held == 20 && bytes == pairBytes && limit == 20 * pairBytes)
        #expect(run.read >= 18 && run.read <= 20, "\(run.read) pairs read before the error")
        #expect(Self.grew(run.stats).last == 20)
        #expect(run.stats.accountDiscrepancy == nil, "\(run.stats.accountDiscrepancy ?? "")")
        #expect("\(run.error!)".contains("your code holds 20 rectified pairs"))
    }

    /// The same from a callback (``StereoSession/start(delivering:)``): a callback that keeps
    /// the latest 50 pairs gets its 300, the pool grown to hold them; one whose limit is 20
    /// pairs' buffers ends the session, and the `stopped` event says why, naming the 20 held.
    /// Either way no pair is dropped for want of a buffer without the account saying so.
    @Test("a callback keeping pairs: the pool grows and it gets every pair; past the limit the session stops saying why",
          arguments: [nil, 20])
    func callbackKeepingPairs(limitPairs: Int?) async throws {
        let (rig, device) = SessionFixtures.simulated(drops: 0)
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        let pairBytes = 2 * ImageBuffer.byteCount(format: .gray8, size: ImageSize(width: 160, height: 120))
        if let limitPairs { options.heldPairsLimitBytes = limitPairs * pairBytes }
        let session = try StereoSession(device: device, calibration: rig.rig.calibration, options: options)
        let kept = Locked<[StereoPair]>([]), delivered = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        try session.start { pair in
            kept.withLock { k in
                k.append(pair)
                if k.count > 50 { k.removeFirst() }
            }
            if delivered.add(1, ordering: .relaxed).newValue == 300 { done.signal() }
        }
        // Ends at 300 pairs, or when the session stops by itself (past the limit); 60 s guards a hang.
        let deadline = ContinuousClock.now + .seconds(60)
        while done.wait(timeout: .now() + 0.05) == .timedOut, session.isRunning, ContinuousClock.now < deadline {}
        session.stop()
        let stats = session.statistics
        let stopped = stats.events.compactMap { event -> String? in if case .stopped(let reason) = event.kind { return reason }; return nil }
        kept.withLock { $0.removeAll() }
        #expect(stats.accountDiscrepancy == nil, "\(stats.accountDiscrepancy ?? "")")
        if let limitPairs {
            #expect(delivered.load(ordering: .relaxed) < 300 && Self.grew(stats).last == limitPairs)
            #expect(stopped.contains { $0.contains("your code holds \(limitPairs) rectified pairs") }, "\(stopped)")
        } else {
            #expect(delivered.load(ordering: .relaxed) >= 300, "\(delivered.load(ordering: .relaxed)) pairs delivered")
            #expect(stats.pooledBuffers > 50 && stats.sessionDrops[.noFreeBuffer, default: 0] == 0, "pool \(stats.pooledBuffers)")
        }
    }
}
