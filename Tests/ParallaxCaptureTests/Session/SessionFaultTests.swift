import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxTestSupport
import Testing

/// The virtual driver's faults injected into a live stream that feeds the whole session
/// (device → synchronizer → consumer): each shows up as its drop reason or event, pairing
/// resumes, every frame is accounted for, and no pair is wrong (checked against the
/// driver's ground truth, not against the synchronizer's own view).
@Suite("Session under driver faults", .serialized)
struct SessionFaultTests {
    /// A fault and what the session must report for it.
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let fault: VirtualCameraFault?  // nil: unplug and replug
        /// True once the session's account shows the fault.
        let surfaced: @Sendable (StereoSessionStatistics) -> Bool
        var testDescription: String { name }
    }

    static func cameraDrops(_ reason: DropReason, atLeast n: Int) -> @Sendable (StereoSessionStatistics) -> Bool {
        { $0.lostByCamera[.left][reason, default: 0] >= n }
    }
    static func event(_ names: String...) -> @Sendable (StereoSessionStatistics) -> Bool {
        { stats in names.allSatisfy { name in stats.events.contains { $0.name == name && $0.side == .left } } }
    }

    static let cases: [Case] = [
        Case(name: "corrupt buffers", fault: .errorFlaggedBuffers(count: 3), surfaced: cameraDrops(.corruptBuffer, atLeast: 3)),
        Case(name: "sequence gap", fault: .sequenceGap(frames: 5), surfaced: cameraDrops(.sequenceGap, atLeast: 5)),
        Case(name: "time going backwards", fault: .timestampBackwards(nanoseconds: 50_000_000),
             surfaced: cameraDrops(.timestampWentBackwards, atLeast: 1)),
        Case(name: "queue error (EIO until STREAMOFF)", fault: .queueError, surfaced: event("device_error")),
        Case(name: "stall", fault: .stall(nanoseconds: 1_500_000_000), surfaced: event("stalled", "resumed")),
        Case(name: "sequence counter reset", fault: .sequenceStepsBack(by: 1_000), surfaced: event("device_error")),
        Case(name: "unplug and replug", fault: nil, surfaced: event("disconnected", "reconnected")),
    ]

    /// What the consumer saw of a pair: the driver's own timestamps of both frames.
    struct Seen: Sendable { let left: Int64; let right: Int64 }

    /// What one run saw, gathered on a thread of its own (the waits block) and asserted on
    /// the test's task.
    struct Outcome: Sendable {
        var pairsBefore = false, surfaced = false, resumed = false
        var statistics: StereoSessionStatistics?
        var delivered = 0, checked = 0, wrong = 0
    }

    @Test("a fault in one camera surfaces as its reason, pairing resumes, nothing is lost or mispaired", arguments: cases)
    func faultThroughTheSession(_ testCase: Case) async throws {
        let (driver, device) = try SessionFixtures.virtualPair()
        var options = StereoSessionOptions()
        options.reconnectIntervalSeconds = 0.02
        options.pressure.readsMachineState = false
        let session = try StereoSession(device: device, options: options)
        // The run blocks on waits: on a thread of its own, not one of the few cooperative
        // threads the async tests running beside it need.
        let outcome = try await onOwnThread { try Self.run(testCase, driver: driver, session: session) }
        let stats = try #require(outcome.statistics)
        #expect(outcome.pairsBefore, "pairs before the fault")
        #expect(outcome.surfaced, "never surfaced: events \(stats.events.map(\.description)), drops \(stats.droppedByName(.left))")
        #expect(outcome.resumed, "pairing resumes after \(testCase.name)")
        for side in StereoSide.allCases {
            #expect(stats.accountsForEveryFrame(side), "\(side): \(stats.frames(side)) frames, \(stats.droppedByName(side))")
        }
        #expect(stats.pairsInFlight == 0)
        #expect(stats.pairsDelivered == outcome.delivered)
        print("fault \(testCase.name): \(stats.pairsDelivered) pairs (\(outcome.checked) checked against the driver), "
              + "left drops \(stats.droppedByName(.left)), events \(Set(stats.events.map(\.name)).sorted())")
        #expect(outcome.wrong == 0)
        // Pairs formed before a replug or a driver restart name frames the driver's tables
        // may have renumbered; the rest must be checkable.
        #expect(outcome.checked >= 10)
    }

    static func run(_ testCase: Case, driver: VirtualUVCDriver, session: StereoSession) throws -> Outcome {
        let paths = PerSide(left: "/dev/video0", right: "/dev/video2")
        var outcome = Outcome()
        let seen = Locked<[Seen]>([])
        let log = PairLog()
        // The driver's timestamp is the end of the frame; the session's is mid-exposure.
        @Sendable func raw(_ side: StereoPairSide) -> Int64 { side.timestampNanoseconds + (side.exposureNanoseconds ?? 0) / 2 }
        try session.start(delivering: { pair in
            seen.withLock { $0.append(Seen(left: raw(pair.left), right: raw(pair.right))) }
            log.handler(pair)
        })
        defer { session.stop() }
        outcome.pairsBefore = log.wait(for: 10, seconds: 60)
        if let fault = testCase.fault {
            driver.inject(fault, into: paths.left)
        } else {
            driver.unplug(paths.left)
            _ = eventually(seconds: 60) { session.statistics.events.contains { $0.name == "disconnected" } }
            driver.replug(paths.left)
        }
        outcome.surfaced = eventually(seconds: 60) { testCase.surfaced(session.statistics) }
        outcome.resumed = log.wait(for: log.count + 10, seconds: 60)
        session.stop()
        outcome.statistics = session.statistics
        outcome.delivered = log.count

        // Ground truth: the left frame of every pair is the one due nearest the right one.
        // Both cameras run at 30 fps with no jitter, so a wrong pair is off by 33 ms.
        for pair in seen.withLock({ $0 }) {
            guard let l = driver.driverSequence(paths.left, timestamp: pair.left),
                  let r = driver.driverSequence(paths.right, timestamp: pair.right),
                  let leftDue = driver.dueTime(paths.left, sequence: l),
                  let rightDue = driver.dueTime(paths.right, sequence: r) else { continue }
            outcome.checked += 1
            let chosen = abs(leftDue - rightDue)
            let neighbours = [l &- 1, l &+ 1].compactMap { driver.dueTime(paths.left, sequence: $0) }
            if neighbours.contains(where: { abs($0 - rightDue) + 1_000_000 < chosen }) { outcome.wrong += 1 }
        }
        return outcome
    }
}
