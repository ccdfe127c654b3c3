import ParallaxGeometry

/// A source of frames: a V4L2 camera, one view of a side-by-side camera,
/// a simulated camera or a recorded folder.
///
/// The life cycle is `supportedFormats()` → `configure(_:)` → `start(_:)` →
/// `stop()`, and `start` may follow `stop` again. Outputs (frames and
/// events) reach the handler in order, on the device's own thread; the
/// handler must return quickly (hand the frame on, do not process it there).
/// ``outputs(bufferingNewest:)`` reads the same outputs as an `AsyncSequence` instead.
public protocol CaptureDevice: AnyObject, Sendable {
    /// Who this device is.
    var identity: DeviceIdentity { get }
    /// Every format the device lists. Inside a stepwise or continuous range only the ends
    /// and the common values are listed; ``supports(_:)`` answers for any other value.
    func supportedFormats() throws(CaptureError) -> [CaptureFormat]
    /// True when the device can stream `format` exactly (pixel format, size and frame
    /// interval), including sizes and intervals inside ranges that ``supportedFormats()``
    /// does not list. The default implementation looks `format` up in ``supportedFormats()``.
    func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool
    /// The format in use, once configured.
    var activeFormat: CaptureFormat? { get }
    /// Asks for `format` and returns what the device actually set (drivers
    /// round sizes and intervals to what they support).
    ///
    /// - Throws: ``CaptureError`` when streaming, or when nothing close is possible.
    @discardableResult
    func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat
    /// Starts streaming into `handler`.
    ///
    /// - Throws: ``CaptureError`` (for V4L2, ``CaptureError/insufficientBandwidth(device:format:)``
    ///   when the bus is full).
    func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError)
    /// Stops streaming; returns once the device's thread has finished. A
    /// ``CaptureEvent/stopped`` event is the last output. Idempotent.
    func stop()
}

extension CaptureDevice {
    /// Looks `format` up in ``supportedFormats()`` (see ``CaptureDevice/supports(_:)``).
    public func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool {
        try supportedFormats().contains(format)
    }

    /// Starts streaming and returns the outputs as an `AsyncSequence`.
    ///
    /// At most `bufferingNewest` frames wait for the consumer; when another
    /// arrives the oldest waiting frame is dropped, which hands its buffer
    /// back to the driver (newest wins: a slow consumer sees fresh frames and
    /// the camera never starves). Events are never dropped. The sequence ends
    /// after ``CaptureEvent/stopped`` or ``CaptureEvent/disconnected``;
    /// cancelling the iterating task stops the device.
    public func outputs(bufferingNewest limit: Int = 2) throws(CaptureError) -> CaptureOutputs {
        let buffer = CaptureOutputs.Buffer(limit: max(1, limit))
        try start { output in buffer.push(output) }
        return CaptureOutputs(buffer: buffer, stop: { [weak self] in self?.stop() })
    }
}


/// The outputs of a streaming device as an `AsyncSequence` (see ``CaptureDevice/outputs(bufferingNewest:)``).
public struct CaptureOutputs: AsyncSequence, Sendable {
    /// Frames and events, in order.
    public typealias Element = CaptureOutput
    let buffer: Buffer
    let stop: @Sendable () -> Void

    /// Iterates the outputs; cancelling the task stops the device.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let buffer: Buffer
        let stop: @Sendable () -> Void
        /// The next output, or `nil` after the device stopped or disconnected.
        public mutating func next() async -> CaptureOutput? {
            let buffer = self.buffer, stop = self.stop
            return await withTaskCancellationHandler {
                await buffer.next()
            } onCancel: {
                stop()
                buffer.finish()
            }
        }
    }

    /// An iterator over the outputs.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(buffer: buffer, stop: stop) }

    /// A bounded, newest-wins queue of frames plus an unbounded queue position for events.
    final class Buffer: Sendable {
        struct State {
            var queue: [CaptureOutput] = []
            var waiter: CheckedContinuation<CaptureOutput?, Never>?
            var finished = false
        }
        let limit: Int
        let state = Locked(State())

        init(limit: Int) { self.limit = limit }

        func push(_ output: CaptureOutput) {
            var ends = false
            if case .event(let event) = output, event == .stopped || event == .disconnected { ends = true }
            let (waiter, dropped): (CheckedContinuation<CaptureOutput?, Never>?, CaptureOutput?) = state.withLock { s in
                if s.finished { return (nil, nil) }
                if ends { s.finished = true }
                if let waiter = s.waiter {
                    s.waiter = nil
                    return (waiter, nil)
                }
                s.queue.append(output)
                let frames = s.queue.reduce(0) { count, o in if case .frame = o { return count + 1 }; return count }
                if frames > limit, let first = s.queue.firstIndex(where: { if case .frame = $0 { return true }; return false }) {
                    return (nil, s.queue.remove(at: first))
                }
                return (nil, nil)
            }
            // Resume and release outside the lock (the dropped frame's deinit re-queues a driver buffer).
            waiter?.resume(returning: output)
            _ = dropped
        }

        func finish() {
            let waiter = state.withLock { s -> CheckedContinuation<CaptureOutput?, Never>? in
                s.finished = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: nil)
        }

        func next() async -> CaptureOutput? {
            await withCheckedContinuation { (continuation: CheckedContinuation<CaptureOutput?, Never>) in
                let immediate: CaptureOutput?? = state.withLock { s in
                    if !s.queue.isEmpty { return .some(s.queue.removeFirst()) }
                    if s.finished { return .some(nil) }
                    s.waiter = continuation
                    return .none
                }
                if let immediate { continuation.resume(returning: immediate) }
            }
        }
    }
}

/// A capture device that can be opened again after it was unplugged and plugged back in.
public protocol ReconnectableCaptureDevice: CaptureDevice {
    /// Opens the device again after ``CaptureEvent/disconnected`` and re-applies its last
    /// format, confirming that the device now found is the same camera (its stable identity).
    ///
    /// - Throws: ``CaptureError/cannotOpen(device:errno:)`` while it is still absent, or
    ///   ``CaptureError/invalidState(device:reason:)`` naming the other camera found instead.
    func reconnect() throws(CaptureError)

    /// Calls `arrived` (on any thread) whenever this device may have come back, so that a
    /// ``reconnect()`` is worth trying now, until the watch is cancelled; `nil` when the
    /// device cannot be watched (its owner then tries now and then).
    func watchArrivals(_ arrived: @escaping @Sendable () -> Void) -> HotplugWatch?
}

extension ReconnectableCaptureDevice {
    /// No watch: the owner tries ``reconnect()`` now and then.
    public func watchArrivals(_ arrived: @escaping @Sendable () -> Void) -> HotplugWatch? { nil }
}

/// A device whose streaming thread can be asked to stop without waiting for it, so several
/// can be told at once before each is joined.
protocol StopRequesting {
    /// Asks the streaming thread to finish; ``CaptureDevice/stop()`` still waits for it.
    func requestStop()
}
