import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxTestSupport
import Testing

@Suite("CaptureDevice.outputs as an AsyncSequence")
struct CaptureOutputsTests {
    /// `withDeadline`'s limit in these tests: a guard against hangs, not a timing assertion.
    /// Generous because the async tests share the cooperative pool (one thread per core) with
    /// tests that block on waits, which under the thread sanitizer can hold it for seconds.
    static let hangGuardSeconds = 60.0

    /// Runs `body` but fails instead of hanging when it takes longer than `seconds`.
    static func withDeadline<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            guard let first = try await group.next(), let value = first else {
                group.cancelAll()
                throw DeadlineExceeded()
            }
            group.cancelAll()
            return value
        }
    }
    struct DeadlineExceeded: Error {}

    @Test("Frames arrive in order; a slow consumer sees the newest ones and the dropped ones free their buffers")
    func newestWins() async throws {
        // A V4L2 camera (virtual driver, 1 kHz) with its four mapped buffers: had the dropped
        // frames kept theirs, the stream would starve after four and the consumer hang.
        let driver = VirtualUVCDriver(cameras: [V4L2CameraTests.fastSpec()])
        let camera = try V4L2CameraTests.openFast(driver)
        let buffers = V4L2Camera.Options().bufferCount
        let outputs = try camera.outputs(bufferingNewest: 2)
        let sequences = try await Self.withDeadline(Self.hangGuardSeconds) { () -> [UInt64] in
            var seen: [UInt64] = []
            for await output in outputs {
                if case .frame(let frame) = output {
                    seen.append(frame.sequence)
                    // A consumer slower than the camera: 5 ms per frame at 1 kHz.
                    try? await Task.sleep(nanoseconds: 5_000_000)
                    if seen.count == 3 * buffers { break }
                }
            }
            return seen
        }
        // At most the two buffered frames (and one being handed over) hold buffers; every other
        // frame gave its back.
        #expect(camera.buffersHeldByFrames <= 3)
        camera.stop()
        #expect(sequences.count == 3 * buffers)
        #expect(zip(sequences, sequences.dropFirst()).allSatisfy { $0 < $1 })
        // With two waiting at most, the consumer skips frames rather than falling behind.
        #expect(sequences[sequences.count - 1] - sequences[0] > 2 * UInt64(sequences.count))
    }

    @Test("The sequence ends after stop, with the stopped event")
    func endsAfterStop() async throws {
        let rig = SimulatedStereoRig.example(size: ImageSize(width: 16, height: 8))
        let camera = SimulatedRigDevice(rig: rig, frameInterval: FrameInterval(numerator: 1, denominator: 200),
                                        pace: .realTime).left
        let outputs = try camera.outputs()
        let last = try await Self.withDeadline(Self.hangGuardSeconds) { () -> CaptureEvent? in
            var frames = 0
            var lastEvent: CaptureEvent?
            for await output in outputs {
                switch output {
                case .frame:
                    frames += 1
                    if frames == 3 { camera.stop() }
                case .event(let event):
                    lastEvent = event
                }
            }
            return lastEvent
        }
        #expect(last == .stopped)
    }
}
