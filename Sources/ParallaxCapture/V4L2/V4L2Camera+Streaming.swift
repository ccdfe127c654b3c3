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
final class StreamSession: @unchecked Sendable {
    struct Mapping {
        let address: UnsafeMutableRawPointer
        let length: Int
    }
    let syscalls: any V4L2Syscalls
    let fd: Int32
    let mappings: [Mapping]
    /// Buffers are re-queued only while the session streams.
    let active = Atomic<Bool>(true)
    /// Buffers currently held by frames (for tests and diagnostics).
    let outstanding = Atomic<Int>(0)

    init(syscalls: any V4L2Syscalls, fd: Int32, mappings: [Mapping]) {
        self.syscalls = syscalls
        self.fd = fd
        self.mappings = mappings
    }

    deinit {
        for mapping in mappings { syscalls.munmap(mapping.address, length: mapping.length) }
    }

    /// Gives buffer `index` back to the driver (called from a frame's release).
    func requeue(_ index: UInt32) {
        outstanding.subtract(1, ordering: .relaxed)
        guard active.load(ordering: .acquiring) else { return }
        var buffer = v4l2_buffer()
        buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        buffer.memory = V4L2_MEMORY_MMAP.rawValue
        buffer.index = index
        let syscalls = self.syscalls, fd = self.fd
        // A failure means the device is going away; the capture thread reports that.
        _ = withUnsafeMutableBytes(of: &buffer) { raw in try? syscalls.ioctl(fd, CV4L2_VIDIOC_QBUF, raw.baseAddress!) }
    }
}

extension V4L2Camera {
    /// Buffers held by live frames right now (0 once every frame is released).
    public var buffersHeldByFrames: Int { state.withLock { $0.session?.outstanding.load(ordering: .relaxed) ?? 0 } }

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
        var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
        if let error = call(fd, CV4L2_VIDIOC_STREAMON, &type) {
            unwind()
            switch error.code {
            case ENOSPC: throw .insufficientBandwidth(device: path, format: negotiation.actual)
            default: throw failure(error, request: "VIDIOC_STREAMON")
            }
        }
        let session = StreamSession(syscalls: syscalls, fd: fd, mappings: mappings)
        let context = CaptureContext(camera: self, session: session, negotiation: negotiation, handler: handler)
        let thread = CaptureThread(name: "parallax.capture \(path)") { thread in context.run(thread) }
        state.withLock { s in
            s.session = session
            s.thread = thread
        }
    }

    /// Stops streaming and waits for the device thread, with a deadline (see ``CaptureDevice/stop()``).
    public func stop() {
        let (thread, session, fd) = state.withLock { s in
            defer { s.thread = nil; s.session = nil }
            return (s.thread, s.session, s.fd)
        }
        guard let thread else { return }
        thread.stopAndJoin()
        if let session, session.active.exchange(false, ordering: .acquiringAndReleasing) {
            var type = Int32(V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue)
            _ = call(fd, CV4L2_VIDIOC_STREAMOFF, &type)
        }
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
    /// STREAMOFF attempted, the descriptor closed. Mappings go with the last frame.
    fileprivate func tearDownAfterDisconnect(_ session: StreamSession) {
        session.active.store(false, ordering: .releasing)
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
            syscalls.close(fd)
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
        let syscalls = session.syscalls, fd = session.fd
        return withUnsafeMutableBytes(of: &buffer) { raw -> V4L2Errno? in
            do throws(V4L2Errno) { try syscalls.ioctl(fd, CV4L2_VIDIOC_DQBUF, raw.baseAddress!); return nil } catch { return error }
        }
    }

    func run(_ thread: CaptureThread) {
        let syscalls = session.syscalls, fd = session.fd
        let frameNs = negotiation.actual.frameInterval.nanoseconds
        let stallAfter = max(stallTimeoutNanoseconds, 4 * frameNs)
        // poll() in slices so stop() is honoured within one slice.
        let sliceMs = Int32(max(5, min(50, frameNs / 1_000_000)))
        var lastSequence: UInt32?
        // The driver's 32-bit counter, extended to 64 bits so that a wrap (after 2³² frames,
        // or at once under vivid's "Wrap Sequence Number") keeps the sequence rising.
        var sequence: UInt64 = 0
        var lastTimestamp: Int64?
        var lastFrameAt = monotonicNanoseconds()
        var stalled = false
        var warnedAboutClock = false
        let (identity, calibration, exposure) = frameContext
        let model = calibration.map { $0.size == negotiation.actual.size ? $0 : $0.resized(to: negotiation.actual.size) }

        while !thread.shouldStop && camera != nil {
            let revents: Int16
            do { revents = try syscalls.poll(fd, events: Int16(POLLIN), timeoutMilliseconds: sliceMs) } catch {
                if error.code == ENODEV { return disconnect() }
                handler(.event(.recoverableError(.ioctlFailed(device: path, request: "poll", errno: error.code))))
                continue
            }
            if revents & Int16(POLLERR | POLLHUP | POLLNVAL) != 0 { return disconnect() }
            if revents & Int16(POLLIN) == 0 {
                let waited = monotonicNanoseconds() - lastFrameAt
                if !stalled && waited > stallAfter {
                    stalled = true
                    handler(.event(.stalled(waitedNanoseconds: waited)))
                }
                continue
            }
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            if let error = dequeue(&buffer) {
                switch error.code {
                case EAGAIN, EINTR: continue  // a spurious wake-up: poll again
                case ENODEV: return disconnect()
                default:
                    handler(.event(.recoverableError(.ioctlFailed(device: path, request: "VIDIOC_DQBUF", errno: error.code))))
                    continue
                }
            }
            lastFrameAt = monotonicNanoseconds()
            if stalled {
                stalled = false
                handler(.event(.resumed))
            }
            session.outstanding.add(1, ordering: .relaxed)
            if let last = lastSequence {
                if buffer.sequence &- last > 1 {
                    handler(.event(.dropped(count: Int(buffer.sequence &- last &- 1), reason: .sequenceGap)))
                }
                sequence &+= UInt64(buffer.sequence &- last)
            } else {
                sequence = UInt64(buffer.sequence)
            }
            lastSequence = buffer.sequence
            if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
                session.requeue(buffer.index)
                handler(.event(.dropped(count: 1, reason: .corruptBuffer)))
                continue
            }
            if !warnedAboutClock && buffer.flags & UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK) != UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) {
                // Said once: frames still flow, but their times cannot be compared with another camera's.
                warnedAboutClock = true
                handler(.event(.recoverableError(.invalidState(
                    device: path, reason: "the driver's buffer timestamps are not on CLOCK_MONOTONIC; they cannot be paired with another camera's"))))
            }
            let (timestamp, source) = Self.timestamp(of: buffer, exposure: exposure)
            if let last = lastTimestamp, timestamp <= last {
                session.requeue(buffer.index)
                handler(.event(.dropped(count: 1, reason: .timestampWentBackwards)))
                continue
            }
            lastTimestamp = timestamp
            guard Int(buffer.index) < session.mappings.count else {
                session.requeue(buffer.index)
                continue
            }
            let mapping = session.mappings[Int(buffer.index)]
            let used = buffer.bytesused == 0 ? mapping.length : min(Int(buffer.bytesused), mapping.length)
            let base = UnsafeRawPointer(mapping.address)
            let image: ImageView? = negotiation.actual.pixelFormat.flatMap { format in
                try? ImageView(format: format, size: negotiation.actual.size, baseAddress: base, byteCount: mapping.length,
                               bytesPerRow: negotiation.bytesPerRow > 0 ? negotiation.bytesPerRow : nil)
            }
            let index = buffer.index
            let session = self.session
            let frame = Frame(image: image, payload: FramePayload(baseAddress: base, count: used),
                              format: negotiation.actual, timestampNanoseconds: timestamp, timestampSource: source,
                              sequence: sequence, source: identity, exposureNanoseconds: exposure,
                              camera: model, release: { session.requeue(index) })
            handler(.frame(frame))
        }
        handler(.event(.stopped))
    }

    private func disconnect() {
        // Without the camera (it is in deinit) its deinit closes the descriptor.
        session.active.store(false, ordering: .releasing)
        camera?.tearDownAfterDisconnect(session)
        handler(.event(.disconnected))
    }

    /// The buffer's timestamp in nanoseconds, moved to mid-exposure when the
    /// exposure is known: V4L2 stamps either the start of exposure (SOE) or the
    /// end of the frame (EOF, where only the exposure half is corrected; the
    /// sensor's read-out time is not reported by V4L2).
    static func timestamp(of buffer: v4l2_buffer, exposure: Int64?) -> (Int64, TimestampSource) {
        let raw = Int64(buffer.timestamp.tv_sec) * 1_000_000_000 + Int64(buffer.timestamp.tv_usec) * 1000
        let isStartOfExposure = buffer.flags & UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_MASK) == UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE)
        let half = (exposure ?? 0) / 2
        return isStartOfExposure ? (raw + half, .startOfExposure) : (raw - half, .endOfFrame)
    }
}
