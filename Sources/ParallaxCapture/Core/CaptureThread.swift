import ParallaxGeometry
import Foundation
import Synchronization

/// A dedicated device thread (every device streams from one: V4L2 cameras, the simulated
/// rig, recordings) and a way to wait for its end with a deadline.
final class CaptureThread: Sendable {
    let stopRequested = Atomic<Bool>(false)
    private let finished = Locked<Bool>(false)
    private let condition = NSCondition()

    /// The thread's pthread id, so a stop requested from the thread itself does not wait for itself.
    private let runner = Locked<pthread_t?>(nil)

    /// The work, taken (and released) by the thread so that nothing it captured,
    /// such as a stream's mapped buffers, outlives the join.
    private let body: Locked<(@Sendable (CaptureThread) -> Void)?>

    init(name: String, body: @escaping @Sendable (CaptureThread) -> Void) {
        self.body = Locked(body)
        let thread = Thread { [self] in
            runner.withLock { $0 = pthread_self() }
            if let work = self.body.withLock({ b -> (@Sendable (CaptureThread) -> Void)? in defer { b = nil }; return b }) {
                work(self)
            }
            condition.lock()
            finished.withLock { $0 = true }
            condition.broadcast()
            condition.unlock()
        }
        thread.name = name
        thread.start()
    }

    /// Asks the thread to finish and waits up to `timeoutSeconds`; true when it did.
    @discardableResult
    func stopAndJoin(timeoutSeconds: Double = 2) -> Bool {
        stopRequested.store(true, ordering: .releasing)
        if let runner = runner.withLock({ $0 }), pthread_equal(runner, pthread_self()) != 0 { return false }
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        condition.lock()
        defer { condition.unlock() }
        while !finished.withLock({ $0 }) {
            if !condition.wait(until: deadline) { return finished.withLock { $0 } }
        }
        return true
    }

    var shouldStop: Bool { stopRequested.load(ordering: .acquiring) }

    /// Sleeps until `deadline` (nanoseconds on CLOCK_MONOTONIC) in slices of at most 20 ms,
    /// so a stop request is honoured promptly. False when asked to stop before the deadline.
    func sleep(untilMonotonicNanoseconds deadline: Int64) -> Bool {
        while !shouldStop {
            let remaining = deadline - monotonicNanoseconds()
            if remaining <= 0 { return true }
            usleep(UInt32(min(remaining / 1000, 20_000)))
        }
        return false
    }
}
