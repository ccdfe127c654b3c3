import CV4L2
import Foundation
import ParallaxGeometry
import ParallaxImage
import Synchronization

/// The mapped buffers of one streaming session.
///
/// Frames keep the session alive; the buffers are unmapped only when the
/// session is torn down *and* the last frame has gone, so a frame's pixels
/// stay valid even after a disconnect or `stop()`.
final class StreamSession: FrameBufferOwner, @unchecked Sendable {
    struct Mapping {
        let address: UnsafeMutableRawPointer
        let length: Int
    }
    let syscalls: any V4L2Syscalls
    let fd: Int32
    let mappings: [Mapping]
    /// The camera's clock readings beside the frames, when its driver gives them.
    let clock: CameraClockStream?
    /// Buffers are re-queued only while the session streams. Cleared under the buffers'
    /// lock (``deactivate()``), so no re-queue or restart is half-way when STREAMOFF or
    /// close follows.
    private let active = Atomic<Bool>(true)
    /// Which buffers are out of the driver's hands, under one lock so that a restart after a
    /// queue error re-queues exactly the buffers no frame holds while frames are released.
    private struct Buffers {
        /// Held by frames.
        var held: Set<UInt32> = []
        /// Released by their frames but refused by QBUF; the errno, and whether it was reported.
        var refused: [UInt32: (errno: Int32, reported: Bool)] = [:]
    }
    private let buffers = Locked(Buffers())

    init(syscalls: any V4L2Syscalls, fd: Int32, mappings: [Mapping], clock: CameraClockStream?) {
        self.syscalls = syscalls
        self.fd = fd
        self.mappings = mappings
        self.clock = clock
    }

    deinit {
        for mapping in mappings { syscalls.munmap(mapping.address, length: mapping.length) }
    }

    /// Buffers currently held by frames (for tests and diagnostics).
    var heldCount: Int { buffers.withLock { $0.held.count } }

    /// Ends re-queueing and restarts; true if the session was still active (the caller then
    /// stops the stream).
    func deactivate() -> Bool {
        buffers.withLock { _ in active.exchange(false, ordering: .acquiringAndReleasing) }
    }

    /// Notes that buffer `index` left the driver (dequeued); ``requeue(_:)`` gives it back.
    func dequeued(_ index: UInt32) {
        buffers.withLock { _ = $0.held.insert(index) }
    }

    /// Gives buffer `index` back to the driver (called from a frame's release, on any thread).
    /// A refusal is kept for the capture thread, which retries and reports it
    /// (``retryRefused()``); a buffer is never silently lost to the stream.
    func requeue(_ index: UInt32) {
        buffers.withLock { b in
            b.held.remove(index)
            guard active.load(ordering: .acquiring) else { return }
            // ENODEV: the device is gone; EIO: vb2's queue error, whose restart queues this
            // buffer again. Anything else is retried by the capture thread.
            if let error = queue(index), error.code != ENODEV && error.code != EIO { b.refused[index] = (error.code, false) }
        }
    }

    /// A freed frame's buffer: re-queued (``requeue(_:)``).
    func giveBack(buffer index: UInt32) { requeue(index) }

    /// Queues the buffers QBUF refused again; returns the refusals not reported yet
    /// (buffer index and errno), marking them reported.
    func retryRefused() -> [(index: UInt32, errno: Int32)] {
        buffers.withLock { b in
            guard !b.refused.isEmpty else { return [] }
            var unreported: [(index: UInt32, errno: Int32)] = []
            for (index, refusal) in b.refused.sorted(by: { $0.key < $1.key }) {
                if !refusal.reported { unreported.append((index, refusal.errno)) }
                if let error = queue(index) { b.refused[index] = (error.code, true) } else { b.refused[index] = nil }
            }
            return unreported
        }
    }

    /// After the driver put its queue in the error state (vb2's `vb2_queue_error`: POLLERR,
    /// DQBUF and QBUF fail with EIO until STREAMOFF): STREAMOFF, every buffer no frame holds
    /// queued again (a refusal is kept for ``retryRefused()``), STREAMON. Nothing once the
    /// session was deactivated (stopped meanwhile). The failed request and its errno, or nil.
    func restart() -> (request: String, error: V4L2Errno)? {
        buffers.withLock { b -> (request: String, error: V4L2Errno)? in
            guard active.load(ordering: .acquiring) else { return nil }
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            if let error = ioctl(CV4L2_VIDIOC_STREAMOFF, &type) { return ("VIDIOC_STREAMOFF", error) }
            b.refused = [:]
            for index in 0..<UInt32(mappings.count) where !b.held.contains(index) {
                if let error = queue(index) { b.refused[index] = (error.code, false) }
            }
            if let error = ioctl(CV4L2_VIDIOC_STREAMON, &type) { return ("VIDIOC_STREAMON", error) }
            return nil
        }
    }

    private func queue(_ index: UInt32) -> V4L2Errno? {
        var buffer = v4l2_buffer()
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        buffer.index = index
        return ioctl(CV4L2_VIDIOC_QBUF, &buffer)
    }

    private func ioctl<T>(_ request: UInt, _ value: inout T) -> V4L2Errno? {
        syscalls.call(fd, request, &value)
    }
}

extension V4L2Camera {
    /// Buffers held by live frames right now (0 once every frame is released).
    public var buffersHeldByFrames: Int { state.withLock { $0.session?.heldCount ?? 0 } }

    /// Starts streaming into `handler` (see ``CaptureDevice/start(_:)``).
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        let (fd, negotiation, running) = state.withLock { ($0.fd, $0.negotiation, $0.session != nil) }
        guard fd >= 0 else { throw .disconnected(device: path) }
        guard !running else { throw .invalidState(device: path, reason: "already streaming") }
        guard let negotiation else { throw .invalidState(device: path, reason: "configure a format before starting") }

        var request = v4l2_requestbuffers()
        request.count = UInt32(options.bufferCount)
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        if let error = call(fd, CV4L2_VIDIOC_REQBUFS, &request) {
            switch error.code {
            case EBUSY:
                throw .invalidState(device: path, reason: "frames from the previous stream are still held; release them before starting again")
            default: throw failure(error, request: "VIDIOC_REQBUFS")
            }
        }
        guard request.count >= 2 else {
            releaseBuffers(fd)
            throw .tooFewBuffers(device: path, granted: Int(request.count), needed: 2)
        }
        var mappings: [StreamSession.Mapping] = []
        func unwind() {
            for m in mappings { syscalls.munmap(m.address, length: m.length) }
            releaseBuffers(fd)
        }
        for index in 0..<request.count {
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            buffer.index = index
            do { try xioctl(fd, CV4L2_VIDIOC_QUERYBUF, "VIDIOC_QUERYBUF", &buffer) } catch { unwind(); throw error }
            do {
                let address = try syscalls.mmap(fd, length: Int(buffer.length), offset: Int64(buffer.m.offset))
                mappings.append(StreamSession.Mapping(address: address, length: Int(buffer.length)))
            } catch {
                unwind()
                throw .mappingFailed(device: path, errno: error.code)
            }
            do { try xioctl(fd, CV4L2_VIDIOC_QBUF, "VIDIOC_QBUF", &buffer) } catch { unwind(); throw error }
        }
        // The metadata node streams first, so the first frames have their clock readings.
        let clockHz = state.withLock { $0.identity.usb?.deviceClockHz }
        let clock = options.cameraClockTimestamps ? CameraClockStream.start(besides: path, syscalls: syscalls, frequencyHz: clockHz) : nil
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        if let error = call(fd, CV4L2_VIDIOC_STREAMON, &type) {
            clock?.stop()
            unwind()
            switch error.code {
            case ENOSPC: throw .insufficientBandwidth(device: path, format: negotiation.actual)
            default: throw failure(error, request: "VIDIOC_STREAMON")
            }
        }
        let session = StreamSession(syscalls: syscalls, fd: fd, mappings: mappings, clock: clock)
        let context = CaptureContext(camera: self, session: session, negotiation: negotiation, handler: handler)
        let thread = CaptureThread(name: "parallax.capture \(path)") { thread in context.run(thread) }
        state.withLock { s in
            s.session = session
            s.thread = thread
        }
    }

    /// Stops streaming and waits for the device thread, with a deadline (see
    /// ``CaptureDevice/stop()``). A camera that went away lets go of its old descriptor here.
    public func stop() {
        let (thread, session, fd) = state.withLock { s in
            defer { s.thread = nil; s.session = nil }
            return (s.thread, s.session, s.fd)
        }
        if let thread {
            thread.stopAndJoin()
            if let session, session.deactivate() {
                var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
                _ = call(fd, CV4L2_VIDIOC_STREAMOFF, &type)
            }
        }
        // A departed camera's descriptor goes with the stop: nobody waits for it any more.
        let departed = state.withLock { s -> Int32 in
            defer { s.departedFD = -1 }
            return s.departedFD
        }
        if departed >= 0 { syscalls.close(departed) }
    }

    /// Frees the driver's buffers (REQBUFS with a count of 0); the errno on failure
    /// (EBUSY while frames of an earlier stream still hold mapped buffers).
    @discardableResult
    func releaseBuffers(_ fd: Int32) -> V4L2Errno? {
        var request = v4l2_requestbuffers()
        request.count = 0
        request.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        return call(fd, CV4L2_VIDIOC_REQBUFS, &request)
    }

    /// Tears the stream down after the device vanished: no more re-queues,
    /// STREAMOFF attempted, the descriptor kept until ``reconnect()``, ``stop()`` or `deinit`
    /// closes it.
    /// Mappings go with the last frame.
    fileprivate func tearDownAfterDisconnect(_ session: StreamSession) {
        _ = session.deactivate()
        // On the capture thread, its only reader.
        session.clock?.stop()
        let fd = state.withLock { s -> Int32 in
            defer {
                s.fd = -1
                s.session = nil
                s.thread = nil
            }
            return s.fd
        }
        if fd >= 0 {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            _ = call(fd, CV4L2_VIDIOC_STREAMOFF, &type)
            // Held until the camera is found again, stopped or freed: its node number stays
            // taken meanwhile, so the camera comes back under another node and is found by
            // identity (the consumer's mapped frames would hold the node just the same).
            let earlier = state.withLock { s -> Int32 in
                defer { s.departedFD = fd }
                return s.departedFD
            }
            if earlier >= 0 { syscalls.close(earlier) }
        }
    }

    fileprivate var frameContext: (identity: DeviceIdentity, calibration: CameraModel?, exposure: Int64?) {
        state.withLock { ($0.identity, $0.calibration, $0.exposureNanoseconds) }
    }
}

/// The capture thread's loop and its bookkeeping.
///
/// It holds the camera weakly: a camera released while streaming stops (its
/// `deinit` joins this thread, which sees the camera gone and ends) instead
/// of being kept alive by its own thread.
private final class CaptureContext: @unchecked Sendable {
    weak var camera: V4L2Camera?
    let path: String
    let stallTimeoutNanoseconds: Int64
    let session: StreamSession
    let negotiation: FormatNegotiation
    let handler: @Sendable (CaptureOutput) -> Void
    let frameContext: (identity: DeviceIdentity, calibration: CameraModel?, exposure: Int64?)

    init(camera: V4L2Camera, session: StreamSession, negotiation: FormatNegotiation,
         handler: @escaping @Sendable (CaptureOutput) -> Void) {
        self.camera = camera
        self.path = camera.path
        self.stallTimeoutNanoseconds = camera.options.stallTimeoutNanoseconds
        self.frameContext = camera.frameContext
        self.session = session
        self.negotiation = negotiation
        self.handler = handler
    }

    /// DQBUF straight through the seam (the camera may be going away).
    private func dequeue(_ buffer: inout v4l2_buffer) -> V4L2Errno? {
        session.syscalls.call(session.fd, CV4L2_VIDIOC_DQBUF, &buffer)
    }

    /// What the capture loop remembers from one buffer to the next.
    private struct LoopState {
        var lastSequence: UInt32?
        /// The driver's 32-bit counter, extended to 64 bits so that a wrap (after 2³² frames,
        /// or at once under vivid's "Wrap Sequence Number") keeps the sequence rising.
        var sequence: UInt64 = 0
        var lastTimestamp: Int64?
        var lastFrameAt = monotonicNanoseconds()
        var stalled = false
        var warnedAboutClock = false
        var warnedAboutSequence = false
        /// Stream restarts after a queue error: one happened and no frame came yet; how many
        /// in a row came before a frame; whether a restart's own failure was said.
        var restarted = false
        var failedRestarts = 0
        var restartFailing = false
        var lastDequeuedTimestamp: Int64?
    }

    /// How the loop goes on after a failed DQBUF: after waiting (a stall may be due), at
    /// once, or not (the camera is gone).
    private enum Recovery { case waited, pollAgain, disconnected }

    /// The capture loop: poll, dequeue, recover from queue errors, stamp and number each
    /// buffer, hand it on as a frame; until the thread is told to stop or the camera goes.
    func run(_ thread: CaptureThread) {
        // The metadata stream is this thread's alone: it ends with it, however the loop ends.
        defer { session.clock?.stop() }
        let syscalls = session.syscalls, fd = session.fd
        let frameNs = negotiation.actual.frameInterval.nanoseconds
        let stallAfter = max(stallTimeoutNanoseconds, 4 * frameNs)
        // poll() in slices so stop() is honoured within one slice.
        let sliceMs = Int32(max(5, min(50, frameNs / 1_000_000)))
        let streamStartedAt = syscalls.monotonicNanoseconds()
        var state = LoopState()
        func reportStallIfDue() {
            let waited = monotonicNanoseconds() - state.lastFrameAt
            if !state.stalled && waited > stallAfter {
                state.stalled = true
                handler(.event(.stalled(waitedNanoseconds: waited)))
            }
        }
        let model = frameContext.calibration.map { $0.adapted(to: negotiation.actual.size) }

        while !thread.shouldStop && camera != nil {
            for refusal in session.retryRefused() {
                handler(.event(.recoverableError(.ioctlFailed(device: path, request: "VIDIOC_QBUF", errno: refusal.errno))))
            }
            let revents: Int16
            do { revents = try syscalls.poll(fd, events: Int16(POLLIN), timeoutMilliseconds: sliceMs) } catch {
                if error.code == ENODEV { return disconnect() }
                handler(.event(.recoverableError(.ioctlFailed(device: path, request: "poll", errno: error.code))))
                continue
            }
            // POLLHUP: the device was unregistered (unplugged). POLLERR alone: the queue is
            // not streaming or failed, which DQBUF below tells apart.
            if revents & Int16(POLLHUP | POLLNVAL) != 0 { return disconnect() }
            let queueFailed = revents & Int16(POLLERR) != 0
            if !queueFailed && revents & Int16(POLLIN) == 0 {
                reportStallIfDue()
                continue
            }
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            if let error = dequeue(&buffer) {
                switch recover(from: error, queueFailed: queueFailed, sliceMs: sliceMs, state: &state, thread: thread) {
                case .disconnected: return disconnect()
                case .waited: reportStallIfDue()
                case .pollAgain: break
                }
                continue
            }
            state.lastFrameAt = monotonicNanoseconds()
            state.failedRestarts = 0
            state.restartFailing = false
            if state.stalled {
                state.stalled = false
                handler(.event(.resumed))
            }
            session.dequeued(buffer.index)
            let (timestamp, source) = stamp(buffer, dequeuedAt: syscalls.monotonicNanoseconds(),
                                            streamStartedAt: streamStartedAt, state: &state)
            let sequence = number(buffer, timestamp: timestamp, frameNs: frameNs, state: &state)
            if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
                session.requeue(buffer.index)
                handler(.event(.dropped(count: 1, reason: .corruptBuffer)))
                continue
            }
            if let last = state.lastTimestamp, timestamp <= last {
                session.requeue(buffer.index)
                handler(.event(.dropped(count: 1, reason: .timestampWentBackwards)))
                continue
            }
            state.lastTimestamp = timestamp
            guard let frame = frame(of: buffer, timestamp: timestamp, source: source, sequence: sequence, model: model) else {
                session.requeue(buffer.index)
                continue
            }
            handler(.frame(frame))
        }
        handler(.event(.stopped))
    }

    /// After a failed DQBUF: waits for buffers vb2 has none of, restarts a stream that
    /// failed (said once per run of failures, backing off while the error keeps coming back
    /// before a frame does), or reports the error.
    private func recover(from error: V4L2Errno, queueFailed: Bool, sliceMs: Int32, state: inout LoopState,
                         thread: CaptureThread) -> Recovery {
        if error.code == ENODEV { return .disconnected }
        if queueFailed && (error.code == EAGAIN || error.code == EINTR) {
            // vb2 says POLLERR while it waits for buffers to be queued (after a restart
            // with every buffer held by frames): nothing to do until a frame is released.
            _ = thread.sleep(untilMonotonicNanoseconds: monotonicNanoseconds() + Int64(sliceMs) * 1_000_000)
            return .waited
        }
        // EIO is vb2's fatal queue error (it stays until STREAMOFF); POLLERR with EINVAL
        // means the queue is not streaming. Both: restart the stream.
        if error.code == EIO || queueFailed {
            if state.failedRestarts == 0 {
                handler(.event(.recoverableError(.ioctlFailed(device: path, request: "VIDIOC_DQBUF", errno: error.code))))
            } else {
                let backoff = min(Int64(1_000_000_000), Int64(sliceMs) * 1_000_000 << min(state.failedRestarts - 1, 10))
                _ = thread.sleep(untilMonotonicNanoseconds: monotonicNanoseconds() + backoff)
            }
            state.failedRestarts += 1
            if thread.shouldStop { return .pollAgain }
            if let failed = session.restart() {
                if failed.error.code == ENODEV { return .disconnected }
                if !state.restartFailing {
                    state.restartFailing = true
                    handler(.event(.recoverableError(.ioctlFailed(device: path, request: failed.request, errno: failed.error.code))))
                }
            } else {
                state.restarted = true
            }
            return .waited
        }
        // EAGAIN or EINTR without POLLERR: a spurious wake-up, poll again.
        if error.code != EAGAIN && error.code != EINTR {
            handler(.event(.recoverableError(.ioctlFailed(device: path, request: "VIDIOC_DQBUF", errno: error.code))))
        }
        return .pollAgain
    }

    /// The buffer's timestamp and where it comes from: the driver's stamp, the camera's own
    /// clock when its metadata stream runs, or the dequeue time for a stamp off
    /// CLOCK_MONOTONIC (said once).
    private func stamp(_ buffer: v4l2_buffer, dequeuedAt: Int64, streamStartedAt: Int64,
                       state: inout LoopState) -> (Int64, TimestampSource) {
        let exposure = frameContext.exposure
        var (timestamp, source) = Self.timestamp(of: buffer, exposure: exposure)
        // A stamp off CLOCK_MONOTONIC (by its flag, ahead of the moment it was dequeued, or
        // before the stream started, as under vivid's "Wrap Timestamp", whose stamps run
        // just below 2⁶³ ns and then wrap) cannot be paired with another camera's: the
        // dequeue time is used instead, and that is said once.
        // In Double: a driver's stamp may lie anywhere in Int64 (vivid's wrap crosses 2⁶³).
        let lead = Double(timestamp) - Double(dequeuedAt), lateness = Double(streamStartedAt) - Double(timestamp)
        let clockProblem: String? =
            buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) != UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
                ? "are not on CLOCK_MONOTONIC"
                : lead > Self.greatestLeadSeconds * 1e9
                    ? "are \(String(format: "%.3f", lead / 1e9)) s ahead of CLOCK_MONOTONIC"
                    : lateness > Self.greatestLeadSeconds * 1e9
                        ? "lie \(String(format: "%.3f", lateness / 1e9)) s before the stream started on CLOCK_MONOTONIC"
                        : nil
        if clockProblem == nil, let clock = session.clock {
            // The camera's own clock: the start of exposure, free of the bus's delays.
            let raw = Int64(buffer.timestamp.tv_sec) &* 1_000_000_000 &+ Int64(buffer.timestamp.tv_usec) &* 1000
            if let start = clock.exposureStart(sequence: buffer.sequence, driverStamp: raw) {
                (timestamp, source) = (TimestampSource.cameraClock.midExposure(timestampNanoseconds: start, exposureNanoseconds: exposure),
                                       .cameraClock)
            }
        }
        if let clockProblem {
            (timestamp, source) = (TimestampSource.arrival.midExposure(timestampNanoseconds: dequeuedAt, exposureNanoseconds: exposure), .arrival)
            if !state.warnedAboutClock {
                state.warnedAboutClock = true
                handler(.event(.recoverableError(.invalidState(
                    device: path, reason: "the driver's buffer timestamps \(clockProblem); frames are stamped when dequeued instead, which is less exact"))))
            }
        }
        return (timestamp, source)
    }

    /// The frame's 64-bit sequence from the driver's 32-bit counter: rising across wraps,
    /// repeats and restarts, with the frames a gap or a restart lost reported as drops.
    private func number(_ buffer: v4l2_buffer, timestamp: Int64, frameNs: Int64, state: inout LoopState) -> UInt64 {
        defer {
            state.restarted = false
            state.lastSequence = buffer.sequence
            state.lastDequeuedTimestamp = timestamp
        }
        if state.restarted, let previous = state.lastDequeuedTimestamp {
            // The driver counts from 0 again after a restart: number on from the last frame
            // dequeued, counting the frames that were due while the stream was down as lost.
            let lost = frameNs > 0 ? max(0, Int((timestamp - previous + frameNs / 2) / frameNs) - 1) : 0
            if lost > 0 { handler(.event(.dropped(count: lost, reason: .streamRestarted))) }
            state.sequence &+= UInt64(1 + lost)
        } else if state.restarted {
            state.sequence = state.lastSequence == nil ? UInt64(buffer.sequence) : state.sequence &+ 1
        } else if let last = state.lastSequence {
            let step = buffer.sequence &- last
            if step == 0 || step > UInt32.max / 2 {
                // The counter repeated or stepped back (vivid repeats one when its thread
                // wakes twice in a frame period). The frame is real and its timestamp is
                // checked below; it is numbered one past the previous so sequences keep rising.
                state.sequence &+= 1
                if !state.warnedAboutSequence {
                    state.warnedAboutSequence = true
                    handler(.event(.recoverableError(.invalidState(
                        device: path, reason: "the driver's frame counter went from \(last) to \(buffer.sequence); "
                            + "frames are numbered on from the previous one"))))
                }
            } else {
                if step > 1 {
                    handler(.event(.dropped(count: Int(step - 1), reason: .sequenceGap)))
                }
                state.sequence &+= UInt64(step)
            }
        } else {
            state.sequence = UInt64(buffer.sequence)
        }
        return state.sequence
    }

    /// The buffer as a frame over its mapping, requeued when the frame is released; `nil`
    /// for an index the driver should not have returned.
    private func frame(of buffer: v4l2_buffer, timestamp: Int64, source: TimestampSource, sequence: UInt64,
                       model: CameraModel?) -> Frame? {
        guard Int(buffer.index) < session.mappings.count else { return nil }
        let mapping = session.mappings[Int(buffer.index)]
        let used = buffer.bytesused == 0 ? mapping.length : min(Int(buffer.bytesused), mapping.length)
        let base = UnsafeRawPointer(mapping.address)
        let image: ImageView? = negotiation.actual.pixelFormat.flatMap { format in
            try? ImageView(format: format, size: negotiation.actual.size, baseAddress: base, byteCount: mapping.length,
                           bytesPerRow: negotiation.bytesPerRow > 0 ? negotiation.bytesPerRow : nil)
        }
        return Frame(image: image, payload: FramePayload(baseAddress: base, count: used),
                     format: negotiation.actual, timestampNanoseconds: timestamp, timestampSource: source,
                     sequence: sequence, source: frameContext.identity, exposureNanoseconds: frameContext.exposure,
                     camera: model, returningBuffer: buffer.index, to: session)
    }

    private func disconnect() {
        // Without the camera (it is in deinit) its deinit closes the descriptor.
        _ = session.deactivate()
        camera?.tearDownAfterDisconnect(session)
        handler(.event(.disconnected))
    }

    /// How far (seconds) a buffer's timestamp may lie after the moment it was dequeued, or
    /// before the stream started, before it is taken to be on another clock (a frame is
    /// stamped before it can be dequeued; start-of-exposure stamps moved to mid-exposure may
    /// lead by half an exposure).
    static let greatestLeadSeconds = 1.0

    /// The buffer's timestamp in nanoseconds, moved to mid-exposure when the
    /// exposure is known: V4L2 stamps either the start of exposure (SOE) or the
    /// end of the frame (EOF, where only the exposure half is corrected; the
    /// sensor's read-out time is not reported by V4L2).
    static func timestamp(of buffer: v4l2_buffer, exposure: Int64?) -> (Int64, TimestampSource) {
        // Wrapping arithmetic: the driver's numbers are not trusted not to overflow; a stamp
        // that wrapped is caught by the clock checks of the capture loop.
        let raw = Int64(buffer.timestamp.tv_sec) &* 1_000_000_000 &+ Int64(buffer.timestamp.tv_usec) &* 1000
        let isStartOfExposure = buffer.flags & UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_MASK) == UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE)
        let half = (exposure ?? 0) / 2
        return isStartOfExposure ? (raw &+ half, .startOfExposure) : (raw &- half, .endOfFrame)
    }
}
