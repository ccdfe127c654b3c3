import ParallaxGeometry
import ParallaxTestSupport
import Testing
@testable import ParallaxCapture

/// `OutputSynchronizer.push(_: StereoOutput)`: the one route from a stereo device into a
/// synchronizer, which a session takes too. Why a side is missing decides the drop's name.
@Suite("The device-to-synchronizer route")
struct DeviceRouteTests {
    static let camera = HandFedCamera(name: "route", format: CaptureFormat(
        fourCC: .grey, size: ImageSize(width: 1, height: 1), frameInterval: FrameInterval(numerator: 1, denominator: 30)))
    static let bytes = SharedBytes([0])

    /// A one-byte frame at `ms` milliseconds.
    static func frame(_ side: StereoSide, _ ms: Int64, _ sequence: UInt64) -> StereoOutput {
        .frame(camera.frame(bytes, timestampNanoseconds: ms * 1_000_000, sequence: sequence), side)
    }

    static func synchronizer() -> OutputSynchronizer<Frame> {
        OutputSynchronizer(configuration: SynchronizerConfiguration(policy: .approximate, frameIntervalNanoseconds: 33_333_333),
                           pairHandler: { _ in }, clock: .custom { 0 })
    }

    @Test("unplugged: the frames waiting and the other side's until it is back are dropped as disconnected; back, it pairs")
    func disconnectAndReconnect() {
        let sync = Self.synchronizer()
        sync.push(Self.frame(.left, 0, 0))
        sync.push(Self.frame(.right, 1, 0))
        sync.push(Self.frame(.left, 33, 1))
        sync.push(.event(.disconnected, .right))
        sync.push(Self.frame(.left, 67, 2))
        sync.push(Self.frame(.left, 100, 3))
        var stats = sync.statistics
        #expect(stats.pairsMade == 1)
        #expect(stats.dropped(.left, reason: .disconnected) == 3 && stats.dropped(.left) == 3)
        sync.push(.reconnected(.right, isEnabled: true))
        sync.push(Self.frame(.left, 133, 4))
        sync.push(Self.frame(.right, 134, 0))
        sync.push(Self.frame(.left, 167, 5))
        sync.push(Self.frame(.right, 168, 1))
        sync.finish()
        stats = sync.statistics
        #expect(stats.pairsMade == 3, "\(stats)")
        #expect(stats.dropped(.left, reason: .disconnected) == 3 && stats.dropped(.left, reason: .constituentDisabled) == 0)
    }

    @Test("switched off while unplugged: the drops say constituent_disabled from then on, and it stays off when it comes back")
    func disabledWhileUnplugged() {
        let sync = Self.synchronizer()
        sync.push(.event(.disconnected, .right))
        sync.push(Self.frame(.left, 0, 0))
        sync.push(.disabled(.right))
        sync.push(Self.frame(.left, 33, 1))
        sync.push(.reconnected(.right, isEnabled: false))
        sync.push(Self.frame(.left, 67, 2))
        let stats = sync.statistics
        #expect(stats.dropped(.left, reason: .disconnected) == 1)
        #expect(stats.dropped(.left, reason: .constituentDisabled) == 2)
        sync.push(.enabled(.right))
        sync.push(Self.frame(.left, 100, 3))
        sync.push(Self.frame(.right, 101, 0))
        sync.finish()
        #expect(sync.statistics.pairsMade == 1)
    }

    @Test("a camera's own losses are not frames of the synchronizer's account")
    func cameraLossesStayOutside() {
        let sync = Self.synchronizer()
        sync.push(.event(.dropped(count: 3, reason: .sequenceGap), .left))
        #expect(sync.statistics.frames(.left) == 0 && sync.statistics.dropped(.left) == 0)
    }
}
