import CV4L2
import Foundation
import ParallaxCapture
import ParallaxGeometry

/// One virtual camera's driver state. Only touched under the driver's lock.
final class Device {
    enum BufferState { case dequeued, queued, done }

    final class Buffer {
        let index: UInt32
        let memory: UnsafeMutableRawPointer
        let length: Int
        let offset: Int64
        var state = BufferState.dequeued
        var mapCount = 0
        var sequence: UInt32 = 0
        var timestamp: Int64 = 0
        var flags: UInt32 = 0
        var bytesUsed = 0

        init(index: UInt32, length: Int) {
            self.index = index
            self.length = length
            // Page-aligned like real driver memory; offsets are cookies for mmap, as in the kernel.
            self.memory = UnsafeMutableRawPointer.allocate(byteCount: max(length, 1), alignment: 4096)
            self.offset = Int64(index) * 0x10_0000
        }
    }

    let spec: VirtualCameraSpec
    var connected = true
    var generation = 0
    /// The node the camera has while plugged in (`nil` once unplugged).
    var node: String?
    /// The node it had last (its number stays taken while its buffers are mapped).
    var lastNode: String?
    /// Its metadata node's device, for a camera with ``VirtualCameraSpec/metadataNode``.
    var metadata: Device?
    var formatIndex = 0
    var size: ImageSize
    var interval: FrameInterval
    var controls: [UInt32: Int32] = [:]
    var buffers: [Buffer] = []
    var done: [Int] = []
    /// Queued empty buffers in QBUF order: the driver fills the oldest first.
    var queue: [Int] = []
    var streaming = false
    var streamOwner: Int32 = -1
    var nextDue: Int64 = .max
    var sequence: UInt32 = 0
    var lastTimestamp: Int64 = 0
    /// Ground truth of one recent frame: its raw timestamp and when it was really due
    /// (before jitter and faults).
    struct FrameRecord {
        var sequence: UInt32
        var rawTimestamp: Int64
        var due: Int64
    }
    /// The last 1024 frames' records, in the slot `sequence % 1024`: a ring, so that
    /// producing a frame allocates nothing (the allocation test counts the capture thread,
    /// which produces the virtual camera's frames).
    var records = [FrameRecord?](repeating: nil, count: 1024)
    /// The record of frame `sequence`, if it is one of the last 1024.
    func record(_ sequence: UInt32) -> FrameRecord? {
        records[Int(sequence % UInt32(records.count))].flatMap { $0.sequence == sequence ? $0 : nil }
    }
    /// The driver's clock (real time, or faster for soaks).
    let clock: VirtualClock
    var random: UInt64

    /// vb2's queue error state: POLLERR, EIO from DQBUF and QBUF, until STREAMOFF.
    var queueFailed = false
    var pendingRefusedQueueing = 0
    /// vb2's `waiting_for_buffers`: set by STREAMOFF and REQBUFS, cleared by QBUF; while set,
    /// poll reports POLLERR (vb2's capture-queue quirk) and DQBUF has nothing.
    var waitingForBuffers = true
    var pendingSpurious = 0
    var failNextStreamOn = false
    var pendingErrorFlags = 0
    var pendingGap = 0
    var pendingStepBack: Int?
    /// The sequence number of the last frame written into a buffer.
    var lastFilledSequence: UInt32?
    /// Added to every timestamp (``VirtualCameraFault/timestampsAhead(nanoseconds:)``).
    var timestampOffset: Int64 = 0
    var pendingBackwards: Int64?
    var stallUntil: Int64?
    /// Bytes per microframe reserved on the USB bus while streaming (the alternate setting's packet).
    var reservedPacketBytes = 0

    init(spec: VirtualCameraSpec, clock: VirtualClock) {
        self.spec = spec
        self.clock = clock
        self.size = spec.formats.first?.sizes.first ?? ImageSize(width: 640, height: 480)
        self.interval = spec.formats.first?.intervals.first ?? FrameInterval(numerator: 1, denominator: 30)
        self.random = spec.seed | 1
        for control in spec.controls { controls[control.id.rawID] = control.defaultValue }
    }

    /// Set by the driver before each call: whether the calling descriptor was opened with
    /// libv4l2's conversion on, which adds the emulated RGB3/BGR3 formats as libv4l2 does.
    var conversion = false

    /// The formats the calling descriptor sees (native, then emulated ones when converting).
    var allFormats: [VirtualCameraSpec.Format] {
        guard conversion, let base = spec.formats.first(where: { !$0.isCompressed }) else { return spec.formats }
        return spec.formats + [FourCC.rgb24, FourCC.bgr24].map {
            var f = VirtualCameraSpec.Format(fourCC: $0, description: "\($0) (emulated)", isCompressed: false,
                                             sizes: base.sizes, intervals: base.intervals)
            f.isEmulated = true
            return f
        }
    }

    var format: VirtualCameraSpec.Format {
        let formats = allFormats
        return formats[min(formatIndex, formats.count - 1)]
    }
    var bytesPerRow: Int { format.bytesPerPixel == 0 ? 0 : size.width * format.bytesPerPixel + spec.rowPadding }
    var imageSize: Int { format.bytesPerPixel == 0 ? size.width * size.height : bytesPerRow * size.height }

    // MARK: Identity and enumeration

    func queryCapabilities(_ cap: UnsafeMutablePointer<v4l2_capability>) {
        cap.pointee = v4l2_capability()
        copy(spec.driver, into: &cap.pointee.driver)
        copy(spec.card, into: &cap.pointee.card)
        copy(spec.busInfo, into: &cap.pointee.bus_info)
        cap.pointee.version = 0x06_01_00
        let nodeCaps = spec.isMetadataNode
            ? UInt32(V4L2_CAP_META_CAPTURE) | UInt32(V4L2_CAP_STREAMING)
            : UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_STREAMING)
        cap.pointee.device_caps = nodeCaps
        cap.pointee.capabilities = UInt32(V4L2_CAP_VIDEO_CAPTURE) | UInt32(V4L2_CAP_META_CAPTURE)
            | UInt32(V4L2_CAP_STREAMING) | UInt32(V4L2_CAP_DEVICE_CAPS)
    }

    func enumerateFormat(_ desc: UnsafeMutablePointer<v4l2_fmtdesc>) throws(V4L2Errno) {
        guard !spec.isMetadataNode, desc.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue,
              Int(desc.pointee.index) < allFormats.count else { throw .invalidArgument }
        let f = allFormats[Int(desc.pointee.index)]
        desc.pointee.pixelformat = f.fourCC.rawValue
        desc.pointee.flags = (f.isCompressed ? UInt32(V4L2_FMT_FLAG_COMPRESSED) : 0) | (f.isEmulated ? UInt32(V4L2_FMT_FLAG_EMULATED) : 0)
        copy(f.description, into: &desc.pointee.description)
    }

    func enumerateSize(_ e: UnsafeMutablePointer<v4l2_frmsizeenum>) throws(V4L2Errno) {
        guard let f = allFormats.first(where: { $0.fourCC.rawValue == e.pointee.pixel_format }) else { throw .invalidArgument }
        func stepwise(_ lo: ImageSize, _ hi: ImageSize, _ step: ImageSize) -> v4l2_frmsize_stepwise {
            v4l2_frmsize_stepwise(min_width: UInt32(lo.width), max_width: UInt32(hi.width), step_width: UInt32(step.width),
                                  min_height: UInt32(lo.height), max_height: UInt32(hi.height), step_height: UInt32(step.height))
        }
        switch f.sizeRange {
        case .stepwise(let lo, let hi, let step)?:
            guard e.pointee.index == 0 else { throw .invalidArgument }
            e.pointee.type = V4L2_FRMSIZE_TYPE_STEPWISE.rawValue
            e.pointee.stepwise = stepwise(lo, hi, step)
        case .continuous(let lo, let hi)?:
            guard e.pointee.index == 0 else { throw .invalidArgument }
            e.pointee.type = V4L2_FRMSIZE_TYPE_CONTINUOUS.rawValue
            e.pointee.stepwise = stepwise(lo, hi, ImageSize(width: 1, height: 1))
        default:
            guard Int(e.pointee.index) < f.sizes.count else { throw .invalidArgument }
            let size = f.sizes[Int(e.pointee.index)]
            e.pointee.type = V4L2_FRMSIZE_TYPE_DISCRETE.rawValue
            e.pointee.discrete = v4l2_frmsize_discrete(width: UInt32(size.width), height: UInt32(size.height))
        }
    }

    func enumerateInterval(_ e: UnsafeMutablePointer<v4l2_frmivalenum>) throws(V4L2Errno) {
        guard let f = allFormats.first(where: { $0.fourCC.rawValue == e.pointee.pixel_format }),
              f.offers(ImageSize(width: Int(e.pointee.width), height: Int(e.pointee.height))) else { throw .invalidArgument }
        func fract(_ i: FrameInterval) -> v4l2_fract { v4l2_fract(numerator: i.numerator, denominator: i.denominator) }
        switch f.intervalRange {
        case .stepwise(let lo, let hi, let step)?:
            guard e.pointee.index == 0 else { throw .invalidArgument }
            e.pointee.type = V4L2_FRMIVAL_TYPE_STEPWISE.rawValue
            e.pointee.stepwise = v4l2_frmival_stepwise(min: fract(lo), max: fract(hi), step: fract(step))
        case .continuous(let lo, let hi)?:
            guard e.pointee.index == 0 else { throw .invalidArgument }
            e.pointee.type = V4L2_FRMIVAL_TYPE_CONTINUOUS.rawValue
            e.pointee.stepwise = v4l2_frmival_stepwise(min: fract(lo), max: fract(hi), step: v4l2_fract(numerator: 1, denominator: 1))
        default:
            guard Int(e.pointee.index) < f.intervals.count else { throw .invalidArgument }
            e.pointee.type = V4L2_FRMIVAL_TYPE_DISCRETE.rawValue
            e.pointee.discrete = fract(f.intervals[Int(e.pointee.index)])
        }
    }

    // MARK: Format

    /// S_FMT as UVC does it: an unknown pixel format becomes the first one,
    /// the size snaps to the nearest offered size, and stride and image size are filled in.
    func setFormat(_ f: UnsafeMutablePointer<v4l2_format>, apply: Bool) throws(V4L2Errno) {
        guard f.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue, !spec.formats.isEmpty else { throw .invalidArgument }
        if apply && !buffers.isEmpty { throw .busy }
        let formats = allFormats
        let index = formats.firstIndex(where: { $0.fourCC.rawValue == f.pointee.fmt.pix.pixelformat }) ?? 0
        let wanted = ImageSize(width: Int(f.pointee.fmt.pix.width), height: Int(f.pointee.fmt.pix.height))
        let chosen = formats[index].nearestSize(to: wanted)
        if apply {
            formatIndex = index
            size = chosen
            if let nearest = format.nearestInterval(to: interval) { interval = nearest }
            getFormat(f)
        } else {
            let saved = (formatIndex, size)
            (formatIndex, size) = (index, chosen)
            getFormat(f)
            (formatIndex, size) = saved
        }
    }

    func getFormat(_ f: UnsafeMutablePointer<v4l2_format>) {
        f.pointee.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        f.pointee.fmt.pix.width = UInt32(size.width)
        f.pointee.fmt.pix.height = UInt32(size.height)
        f.pointee.fmt.pix.pixelformat = format.fourCC.rawValue
        f.pointee.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        f.pointee.fmt.pix.bytesperline = UInt32(bytesPerRow)
        f.pointee.fmt.pix.sizeimage = UInt32(imageSize)
        f.pointee.fmt.pix.colorspace = V4L2_COLORSPACE_SRGB.rawValue
    }

    /// S_PARM: the nearest offered frame interval.
    func setParameters(_ p: UnsafeMutablePointer<v4l2_streamparm>) throws(V4L2Errno) {
        guard p.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue else { throw .invalidArgument }
        let asked = p.pointee.parm.capture.timeperframe
        if asked.denominator != 0,
           let nearest = format.nearestInterval(to: FrameInterval(numerator: asked.numerator, denominator: asked.denominator)) {
            interval = nearest
        }
        getParameters(p)
    }

    func getParameters(_ p: UnsafeMutablePointer<v4l2_streamparm>) {
        p.pointee.parm.capture.capability = UInt32(V4L2_CAP_TIMEPERFRAME)
        p.pointee.parm.capture.timeperframe = v4l2_fract(numerator: interval.numerator, denominator: interval.denominator)
        p.pointee.parm.capture.readbuffers = 0
    }

    // MARK: Buffers

    func requestBuffers(_ r: UnsafeMutablePointer<v4l2_requestbuffers>, owner: Int32,
                        retired: inout [UnsafeMutableRawPointer]) throws(V4L2Errno) {
        guard r.pointee.memory == V4L2_MEMORY_MMAP.rawValue,
              r.pointee.type == V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue else { throw .invalidArgument }
        // Like videobuf2: buffers still mapped (frames still held) cannot be reallocated.
        if streaming || buffers.contains(where: { $0.mapCount > 0 }) { throw .busy }
        for buffer in buffers {
            if buffer.mapCount > 0 { retired.append(buffer.memory) } else { buffer.memory.deallocate() }
        }
        buffers = []
        done = []
        queue = []
        waitingForBuffers = true
        let count = r.pointee.count == 0 ? 0 : min(max(Int(r.pointee.count), 2), spec.maximumBuffers)
        let length = imageSize
        buffers = (0..<count).map { Buffer(index: UInt32($0), length: length) }
        // Room for every buffer in either list from the start, as vb2's lists: streaming then
        // never grows them (the allocation test counts the capture thread, which runs this).
        done.reserveCapacity(count)
        queue.reserveCapacity(count)
        r.pointee.count = UInt32(count)
        streamOwner = owner
    }

    func describe(_ buffer: Buffer, into b: UnsafeMutablePointer<v4l2_buffer>) {
        b.pointee.index = buffer.index
        b.pointee.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        b.pointee.memory = V4L2_MEMORY_MMAP.rawValue
        b.pointee.length = UInt32(buffer.length)
        b.pointee.m.offset = UInt32(buffer.offset)
        b.pointee.bytesused = UInt32(buffer.bytesUsed)
        b.pointee.field = V4L2_FIELD_NONE.rawValue
        let source = spec.timestampSource == .startOfExposure ? UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE) : UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_EOF)
        let clock = spec.monotonicTimestamps ? UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC) : UInt32(V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN)
        var flags = buffer.flags | clock | source
        if buffer.mapCount > 0 { flags |= UInt32(V4L2_BUF_FLAG_MAPPED) }
        if buffer.state == .queued { flags |= UInt32(V4L2_BUF_FLAG_QUEUED) }
        if buffer.state == .done { flags |= UInt32(V4L2_BUF_FLAG_DONE) }
        b.pointee.flags = flags
        b.pointee.sequence = buffer.sequence
        b.pointee.timestamp = timeval(tv_sec: Int(buffer.timestamp / 1_000_000_000),
                                      tv_usec: Int((buffer.timestamp % 1_000_000_000) / 1000))
    }

    func queryBuffer(_ b: UnsafeMutablePointer<v4l2_buffer>) throws(V4L2Errno) {
        guard Int(b.pointee.index) < buffers.count else { throw .invalidArgument }
        describe(buffers[Int(b.pointee.index)], into: b)
    }

    func queueBuffer(_ b: UnsafeMutablePointer<v4l2_buffer>) throws(V4L2Errno) {
        guard Int(b.pointee.index) < buffers.count, b.pointee.memory == V4L2_MEMORY_MMAP.rawValue else { throw .invalidArgument }
        let buffer = buffers[Int(b.pointee.index)]
        guard buffer.state == .dequeued else { throw .invalidArgument }
        if queueFailed { throw .ioError }
        if pendingRefusedQueueing > 0 {
            pendingRefusedQueueing -= 1
            throw .invalidArgument
        }
        waitingForBuffers = false
        buffer.state = .queued
        buffer.flags = 0
        queue.append(Int(buffer.index))
    }

    func dequeueBuffer(_ b: UnsafeMutablePointer<v4l2_buffer>) throws(V4L2Errno) {
        guard streaming else { throw .invalidArgument }
        if queueFailed { throw .ioError }
        if pendingSpurious > 0 {
            pendingSpurious -= 1
            throw .wouldBlock
        }
        produce(until: clock.now())
        guard !done.isEmpty else { throw .wouldBlock }
        let buffer = buffers[done.removeFirst()]
        buffer.state = .dequeued
        describe(buffer, into: b)
    }

    func streamOn(owner: Int32, busLoadElsewhere: Int) throws(V4L2Errno) {
        if failNextStreamOn {
            failNextStreamOn = false
            throw .noSpace
        }
        guard !buffers.isEmpty else { throw .invalidArgument }
        if streaming { return }
        if let usb = spec.usb {
            // As uvcvideo: the camera's requested payload picks the smallest alternate
            // setting that carries it (none: EIO); the host controller then admits the
            // endpoint only if the bus's periodic budget still has room (else ENOSPC).
            guard let packet = VirtualUSBBus.alternateSetting(for: VirtualUSBBus.requestedPayload(
                width: size.width, height: size.height, bytesPerPixel: format.bytesPerPixel,
                framesPerSecond: interval.framesPerSecond, compressed: format.isCompressed, usb: usb), usb: usb) else {
                throw .ioError
            }
            guard busLoadElsewhere + packet <= VirtualUSBBus.periodicBudget(usb) else { throw .noSpace }
            reservedPacketBytes = packet
        }
        streaming = true
        streamOwner = owner
        sequence = 0
        lastFilledSequence = nil
        nextDue = clock.now() + interval.nanoseconds
    }

    func stopStreaming() {
        streaming = false
        queueFailed = false
        waitingForBuffers = true
        reservedPacketBytes = 0
        nextDue = .max
        done.removeAll(keepingCapacity: true)
        queue.removeAll(keepingCapacity: true)
        for buffer in buffers { buffer.state = .dequeued }
    }

    // MARK: Frames

    /// Produces every frame due by `now`: into the oldest queued buffer, or
    /// lost (a sequence gap) when the application has queued none.
    func produce(until now: Int64) {
        guard streaming else { return }
        let period = spec.driftPPM == 0 ? interval.nanoseconds
            : Int64((Double(interval.nanoseconds) * (1 + spec.driftPPM * 1e-6)).rounded())
        while nextDue <= now {
            let due = nextDue
            nextDue += period
            if let until = stallUntil {
                if due < until { continue }
                stallUntil = nil
            }
            if pendingGap > 0 {
                sequence &+= UInt32(pendingGap)
                pendingGap = 0
            }
            guard !queue.isEmpty, !lostOnTheBus() else {
                sequence &+= 1  // no buffer, or lost on the bus: the frame is lost, as in a real driver
                continue
            }
            if let back = pendingStepBack {
                // From the last frame handed out, so frames lost just before (a loaded
                // machine) cannot turn the step back into a forward gap.
                sequence = (lastFilledSequence ?? (sequence &- 1)) &- UInt32(truncatingIfNeeded: back)
                pendingStepBack = nil
            }
            let buffer = buffers[queue.removeFirst()]
            var timestamp = due + jitter()
            if let back = pendingBackwards {
                timestamp = lastTimestamp - back
                pendingBackwards = nil
            } else {
                timestamp = max(timestamp, lastTimestamp + 1)
            }
            lastTimestamp = max(lastTimestamp, timestamp)
            // Off the clock by the injected offset after the ordering above, as a driver
            // whose whole clock is shifted.
            timestamp += timestampOffset
            buffer.sequence = sequence
            lastFilledSequence = sequence
            buffer.timestamp = timestamp
            records[Int(sequence % UInt32(records.count))] = FrameRecord(sequence: sequence, rawTimestamp: timestamp, due: due)
            buffer.flags = 0
            if pendingErrorFlags > 0 {
                pendingErrorFlags -= 1
                buffer.flags = UInt32(V4L2_BUF_FLAG_ERROR)
            }
            fill(buffer, due: due)
            buffer.state = .done
            done.append(Int(buffer.index))
            sequence &+= 1
        }
    }

    private func fill(_ buffer: Buffer, due: Int64) {
        if format.isCompressed, let jpeg = spec.pictures?.jpeg(for: size, dueNanoseconds: due) {
            // A real JPEG (the bytes a webcam sends), damaged now and then if asked.
            var used = min(buffer.length, jpeg.count)
            jpeg.withUnsafeBytes { buffer.memory.copyMemory(from: $0.baseAddress!, byteCount: used) }
            if spec.corruptFrameProbability > 0, Double(nextRandom() >> 11) * 0x1p-53 < spec.corruptFrameProbability {
                if sequence % 2 == 0 {
                    used = used * 6 / 10
                } else if used > 8 {
                    buffer.memory.storeBytes(of: 0xFF, toByteOffset: used * 3 / 4, as: UInt8.self)
                    buffer.memory.storeBytes(of: 0xD3, toByteOffset: used * 3 / 4 + 1, as: UInt8.self)
                }
            }
            buffer.bytesUsed = used
            return
        }
        if !format.isCompressed, let pictures = spec.pictures, let pixel = CaptureFormat.pixelFormat(of: format.fourCC),
           let pixels = pictures.pixels(for: size, format: pixel, dueNanoseconds: due) {
            // The view in this format, row by row into the driver's stride (padding left as it was).
            let rowBytes = pixel.minimumBytesPerRow(width: size.width)
            pixels.withUnsafeBytes { source in
                for row in 0..<min(size.height, pixels.count / max(1, rowBytes)) {
                    (buffer.memory + row * bytesPerRow).copyMemory(from: source.baseAddress! + row * rowBytes, byteCount: rowBytes)
                }
            }
            buffer.bytesUsed = imageSize
            return
        }
        let used = format.isCompressed ? min(buffer.length, 4096 + Int(sequence % 512)) : imageSize
        buffer.memory.initializeMemory(as: UInt8.self, repeating: UInt8(truncatingIfNeeded: sequence), count: used)
        buffer.memory.storeBytes(of: UInt64(sequence).littleEndian, as: UInt64.self)
        buffer.bytesUsed = used
    }

    private func jitter() -> Int64 {
        let amplitude = spec.timestampJitterNanoseconds
        guard amplitude > 0 else { return 0 }
        return Int64(nextRandom() % UInt64(2 * amplitude + 1)) - amplitude
    }

    /// True with the spec's drop probability.
    private func lostOnTheBus() -> Bool {
        guard spec.dropProbability > 0 else { return false }
        return Double(nextRandom() >> 11) * 0x1p-53 < spec.dropProbability
    }

    private func nextRandom() -> UInt64 {
        random ^= random << 13
        random ^= random >> 7
        random ^= random << 17
        return random
    }

    // MARK: Controls

    func queryControl(_ q: UnsafeMutablePointer<v4l2_queryctrl>) throws(V4L2Errno) {
        guard let control = spec.controls.first(where: { $0.id.rawID == q.pointee.id }) else { throw .invalidArgument }
        q.pointee.type = control.isBoolean ? V4L2_CTRL_TYPE_BOOLEAN.rawValue : V4L2_CTRL_TYPE_INTEGER.rawValue
        copy(control.name, into: &q.pointee.name)
        q.pointee.minimum = control.minimum
        q.pointee.maximum = control.maximum
        q.pointee.step = control.step
        q.pointee.default_value = control.defaultValue
        q.pointee.flags = 0
    }

    func getControl(_ c: UnsafeMutablePointer<v4l2_control>) throws(V4L2Errno) {
        guard let value = controls[c.pointee.id] else { throw .invalidArgument }
        c.pointee.value = value
    }

    /// S_CTRL: clamped to the range and rounded to the step, as drivers do; refused with
    /// EACCES while the control's auto mode is on (uvcvideo marks it inactive then).
    func setControl(_ c: UnsafeMutablePointer<v4l2_control>) throws(V4L2Errno) {
        guard let control = spec.controls.first(where: { $0.id.rawID == c.pointee.id }) else { throw .invalidArgument }
        let governedBy: [CameraControlID: (CameraControlID, manual: Int32)] = [
            .exposureAbsolute: (.exposureAuto, 1), .gain: (.autoGain, 0), .whiteBalanceTemperature: (.autoWhiteBalance, 0),
            .focusAbsolute: (.autoFocus, 0),
        ]
        if let (mode, manual) = governedBy[control.id], let value = controls[mode.rawID], value != manual {
            throw V4L2Errno(EACCES)
        }
        let clamped = min(max(c.pointee.value, control.minimum), control.maximum)
        let step = max(1, control.step)
        controls[c.pointee.id] = control.minimum + (clamped - control.minimum) / step * step
    }
}

/// Copies `text` into a fixed C character array (imported as a tuple), NUL-terminated and truncated to fit.
func copy<T>(_ text: String, into array: inout T) {
    withUnsafeMutableBytes(of: &array) { raw in
        raw.initializeMemory(as: UInt8.self, repeating: 0)
        for (i, byte) in text.utf8.prefix(raw.count - 1).enumerated() { raw[i] = byte }
    }
}

/// The USB side of the virtual driver, written the way a camera's firmware and the host
/// controller work rather than through Parallax's own cost model, so tests compare the
/// two.
enum VirtualUSBBus {
    /// A high-speed UVC webcam's alternate settings (what a common 720p webcam's
    /// descriptors list), used when a spec gives none.
    static let webcamPacketSizes = [192, 384, 512, 640, 800, 944, 1280, 1600, 1984, 2688, 3060]

    static func microframesPerSecond(_ usb: USBLocation) -> Int { (usb.speedMbps ?? 480) < 100 ? 1000 : 8000 }

    /// The camera's dwMaxPayloadTransferSize: a frame's bytes spread over a second's
    /// (micro)frames plus the 12-byte payload header; compressed streams ask for the most.
    static func requestedPayload(width: Int, height: Int, bytesPerPixel: Int, framesPerSecond: Double,
                                 compressed: Bool, usb: USBLocation) -> Int {
        let sizes = usb.isochronousPacketSizes.isEmpty ? webcamPacketSizes : usb.isochronousPacketSizes
        if compressed || bytesPerPixel == 0 { return sizes.max() ?? 3072 }
        let perSecond = Double(width * height * bytesPerPixel) * framesPerSecond
        return Int((perSecond / Double(microframesPerSecond(usb))).rounded(.up)) + 12
    }

    /// uvc_video_init's choice: the first alternate setting (ascending) whose packet holds the payload.
    static func alternateSetting(for payload: Int, usb: USBLocation) -> Int? {
        let sizes = (usb.isochronousPacketSizes.isEmpty ? webcamPacketSizes : usb.isochronousPacketSizes).sorted()
        return sizes.first { $0 >= payload }
    }

    /// Periodic bytes per (micro)frame the host controller admits: 80 % of 7500 at high
    /// speed, 90 % of 1500 at full speed, 90 % of the 8b/10b line rate at SuperSpeed.
    static func periodicBudget(_ usb: USBLocation) -> Int {
        let speed = usb.speedMbps ?? 480
        if speed < 100 { return 1500 * 9 / 10 }
        if speed < 1000 { return 7500 * 8 / 10 }
        return Int(speed * 1_000_000 * 0.8 / 8 / 8000 * 0.9)
    }
}
