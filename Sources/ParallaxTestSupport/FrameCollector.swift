import Foundation
import ParallaxCapture

/// Collects a device's outputs for a test, with waits that always end.
///
/// Pass ``handler`` to `start(_:)`. Frames are kept (so their buffers stay
/// with the test) unless `keepFrames` is false, in which case only their
/// metadata is recorded and the frame is released at once.
public final class FrameCollector: @unchecked Sendable {
    /// What is remembered of every frame, even when the frame itself is released.
    public struct Record: Sendable {
        public var sequence: UInt64
        public var timestampNanoseconds: Int64
        /// The payload address, as an integer (compare with the driver's mapped addresses).
        public var baseAddress: UInt
        public var firstByte: UInt8
    }

    private let condition = NSCondition()
    private let keepFrames: Bool
    private var _frames: [Frame] = []
    private var _records: [Record] = []
    private var _events: [CaptureEvent] = []
    /// Called on the device's thread for every frame, after recording it (for example to release it).
    private let onFrame: (@Sendable (Frame) -> Void)?

    public init(keepFrames: Bool = true, onFrame: (@Sendable (Frame) -> Void)? = nil) {
        self.keepFrames = keepFrames
        self.onFrame = onFrame
    }

    /// The handler to give the device.
    public var handler: @Sendable (CaptureOutput) -> Void {
        { [self] output in
            condition.lock()
            switch output {
            case .frame(let frame):
                _records.append(Record(sequence: frame.sequence, timestampNanoseconds: frame.timestampNanoseconds,
                                       baseAddress: UInt(bitPattern: frame.payload.baseAddress),
                                       firstByte: frame.payload.count > 0 ? frame.payload.bytes[0] : 0))
                if keepFrames { _frames.append(frame) }
            case .event(let event):
                _events.append(event)
            }
            condition.broadcast()
            condition.unlock()
            if case .frame(let frame) = output { onFrame?(frame) }
        }
    }

    /// Frames kept so far.
    public var frames: [Frame] { condition.lock(); defer { condition.unlock() }; return _frames }
    /// Every frame's record so far.
    public var records: [Record] { condition.lock(); defer { condition.unlock() }; return _records }
    /// Events so far.
    public var events: [CaptureEvent] { condition.lock(); defer { condition.unlock() }; return _events }

    /// Drops the kept frames (returning their buffers to the driver).
    public func releaseFrames() {
        condition.lock()
        let released = _frames
        _frames = []
        condition.unlock()
        _ = released  // released here, outside the lock
    }

    /// Waits until `count` frames have arrived or `timeoutSeconds` pass; true when they arrived.
    @discardableResult
    public func waitForFrames(_ count: Int, timeoutSeconds: Double) -> Bool {
        wait(timeoutSeconds: timeoutSeconds) { $0._records.count >= count }
    }

    /// Waits until an event matching `predicate` has arrived or `timeoutSeconds` pass; returns it.
    public func waitForEvent(timeoutSeconds: Double, where predicate: @escaping (CaptureEvent) -> Bool) -> CaptureEvent? {
        var found: CaptureEvent?
        _ = wait(timeoutSeconds: timeoutSeconds) { collector in
            found = collector._events.first(where: predicate)
            return found != nil
        }
        return found
    }

    private func wait(timeoutSeconds: Double, until done: (FrameCollector) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        condition.lock()
        defer { condition.unlock() }
        while !done(self) {
            if !condition.wait(until: deadline) { return done(self) }
        }
        return true
    }
}
