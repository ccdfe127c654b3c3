import CV4L2
import Foundation
import ParallaxGeometry
import ParallaxImage

/// A V4L2 video capture node (a UVC webcam, a CSI camera), through libv4l2.
///
/// Opening the camera opens the node non-blocking, checks with QUERYCAP that
/// it captures video and streams (metadata-only nodes are refused), and
/// enumerates and caches every format, frame size and frame interval.
/// ``configure(_:)`` sets the format with S_FMT and the frame interval with
/// S_PARM, reading both back: drivers round to what they support, and
/// ``negotiate(_:)`` reports what changed. ``start(_:)`` maps
/// ``Options/bufferCount`` (≥ 4) MMAP buffers and runs one capture thread
/// that waits in `poll()` with a deadline — never in a blocking DQBUF.
///
/// Frames borrow the mapped driver buffer (zero copy) and queue it back when
/// released. Buffers the driver flags as corrupt and gaps in its sequence
/// counter become ``CaptureEvent/dropped(count:reason:)``; ENOSPC at STREAMON
/// is ``CaptureError/insufficientBandwidth(device:format:)``; ENODEV, POLLERR
/// or POLLHUP tear the stream down cleanly and report
/// ``CaptureEvent/disconnected``. After a replug, ``reconnect()`` finds the
/// camera again by its stable identity, under whatever node it has now.
///
/// Every system call goes through a ``V4L2Syscalls`` value, so tests run this
/// exact code against `VirtualUVCDriver` from ParallaxTestSupport.
public final class V4L2Camera: ReconnectableCaptureDevice, @unchecked Sendable {
    /// How the camera is opened and streamed.
    public struct Options: Hashable, Sendable {
        /// Driver buffers to request (at least 4: one being filled, one with the
        /// consumer, spares so a short hiccup costs no frame).
        public var bufferCount: Int
        /// Open with libv4l2's conversion on, which adds the emulated formats
        /// (RGB24, BGR24, YUV420) at the price of a copy per frame. Off by
        /// default: native formats stream zero-copy.
        public var allowEmulatedFormats: Bool
        /// How long without a frame counts as a stall, at least; the camera
        /// uses the larger of this and four frame intervals.
        public var stallTimeoutNanoseconds: Int64
        /// Stamp frames with the start of exposure on the camera's own clock when uvcvideo's
        /// metadata node gives its readings (``TimestampSource/cameraClock``); otherwise, or
        /// when false, frames carry the driver's stamps.
        public var cameraClockTimestamps: Bool

        /// Options; fewer than 4 buffers are raised to 4.
        public init(bufferCount: Int = 4, allowEmulatedFormats: Bool = false,
                    stallTimeoutNanoseconds: Int64 = 500_000_000, cameraClockTimestamps: Bool = true) {
            self.bufferCount = max(4, bufferCount)
            self.allowEmulatedFormats = allowEmulatedFormats
            self.stallTimeoutNanoseconds = stallTimeoutNanoseconds
            self.cameraClockTimestamps = cameraClockTimestamps
        }
    }

    /// The node's path (`/dev/video0`): where the camera was opened, or where
    /// ``reconnect()`` found it again after a replug.
    public var path: String { state.withLock { $0.path } }
    /// How it was opened.
    public let options: Options
    let syscalls: any V4L2Syscalls
    let state: Locked<State>

    struct State: @unchecked Sendable {
        var path: String
        var fd: Int32 = -1
        /// The descriptor of a camera that went away, closed when it is found again.
        var departedFD: Int32 = -1
        /// Whether discovery knows the camera (its identity is then what ``reconnect()``
        /// looks for); false for a node discovery does not list.
        var isDiscovered = true
        var capabilities = V4L2Capabilities(driver: "", card: "", busInfo: "", deviceCapabilities: 0)
        var formats: [V4L2FormatDescription] = []
        var negotiation: FormatNegotiation?
        var session: StreamSession?
        var thread: CaptureThread?
        var identity: DeviceIdentity
        var calibration: CameraModel?
        var exposureNanoseconds: Int64?
        /// `bus_info` when the camera was first opened: what a reconnect of a camera that
        /// discovery does not list must find again at its node (a failed attempt that met
        /// another camera overwrites `capabilities`, not this).
        var firstBusInfo: String?
    }

    /// Opens `path`, queries it and enumerates its formats.
    ///
    /// - Parameters:
    ///   - path: the capture node to open (`/dev/video0`).
    ///   - syscalls: how system calls reach the driver: ``LibV4L2Syscalls`` for the kernel,
    ///     or a stand-in such as `VirtualUVCDriver` in tests.
    ///   - options: buffer count, emulated formats, stall timeout and camera-clock timestamps.
    ///   - stableID: the identity to report (from ``V4L2Discovery``); the bus info when omitted.
    ///   - usb: where the camera is plugged in (from ``V4L2Discovery``), for the hardware cost.
    /// - Throws: ``CaptureError/cannotOpen(device:errno:)``, ``CaptureError/notACaptureDevice(device:reason:)``.
    public init(path: String, syscalls: any V4L2Syscalls = LibV4L2Syscalls(), options: Options = Options(),
                stableID: String? = nil, usb: USBLocation? = nil) throws(CaptureError) {
        self.options = options
        self.syscalls = syscalls
        self.state = Locked(State(path: path, identity: DeviceIdentity(stableID: stableID ?? path, name: path, path: path, usb: usb)))
        try open()
        if stableID == nil {
            // Opened by its node alone: discovery names it as it would have, when it lists it.
            let listed = syscalls.captureNodes().first { $0.devicePath == path }
            state.withLock { s in
                if let listed {
                    s.identity.stableID = listed.identity.stableID
                    s.identity.usb = usb ?? listed.usb
                } else if !s.capabilities.busInfo.isEmpty {
                    s.identity.stableID = s.capabilities.busInfo
                }
                s.isDiscovered = listed != nil
            }
        }
    }

    deinit {
        stop()
        let (fd, departed) = state.withLock { s -> (Int32, Int32) in
            defer { (s.fd, s.departedFD) = (-1, -1) }
            return (s.fd, s.departedFD)
        }
        if fd >= 0 { syscalls.close(fd) }
        if departed >= 0 { syscalls.close(departed) }
    }

    /// Who this device is.
    public var identity: DeviceIdentity { state.withLock { $0.identity } }
    /// What QUERYCAP reported.
    public var capabilities: V4L2Capabilities { state.withLock { $0.capabilities } }
    /// The cached format enumeration.
    public var formatDescriptions: [V4L2FormatDescription] { state.withLock { $0.formats } }
    /// The last negotiation's outcome.
    public var negotiation: FormatNegotiation? { state.withLock { $0.negotiation } }
    /// The format in use (see ``CaptureDevice/activeFormat``).
    public var activeFormat: CaptureFormat? { state.withLock { $0.negotiation?.actual } }
    /// True while the node is open (false after a disconnect until ``reopen()``).
    public var isOpen: Bool { state.withLock { $0.fd >= 0 } }

    /// Attaches this camera's calibration (for any resolution of the sensor);
    /// frames then carry it rescaled to the active format.
    public func attach(calibration: CameraModel?) { state.withLock { $0.calibration = calibration } }

    /// Every format the device can stream (see ``CaptureDevice/supportedFormats()``).
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] {
        state.withLock { $0.formats.flatMap(\.captureFormats) }
    }

    /// True when the camera can stream `format` exactly: its pixel format is offered, its
    /// size is listed or inside the size range, and its frame interval is offered at that
    /// size (asked of the driver for a size inside a range that was not enumerated).
    public func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool {
        let (fd, formats) = state.withLock { ($0.fd, $0.formats) }
        guard let description = formats.first(where: { $0.fourCC == format.fourCC }),
              description.sizeRange.contains(format.size) else { return false }
        if let listed = description.sizes.first(where: { $0.size == format.size }) {
            return listed.intervals.contains(format.frameInterval)
        }
        guard fd >= 0 else { throw .disconnected(device: path) }
        return try enumerateIntervals(fd, format.fourCC, format.size).contains(format.frameInterval)
    }

    // MARK: Opening

    /// Opens the node again (same path), re-reading capabilities and formats and
    /// re-applying the last format. It does not check that the same camera answers: after
    /// a replug use ``reconnect()``, which finds the camera by identity.
    ///
    /// - Throws: ``CaptureError`` as ``init(path:syscalls:options:stableID:usb:)`` does.
    public func reopen() throws(CaptureError) {
        try reopen(at: path)
    }

    /// Closes the old descriptor, opens `node` (the camera's node from now on) and
    /// re-applies the last format.
    private func reopen(at node: String) throws(CaptureError) {
        stop()
        let (old, departed) = state.withLock { s -> (Int32, Int32) in
            defer {
                (s.fd, s.departedFD) = (-1, -1)
                s.path = node
                s.identity.path = node
            }
            return (s.fd, s.departedFD)
        }
        if old >= 0 { syscalls.close(old) }
        if departed >= 0 { syscalls.close(departed) }
        try open()
        if let last = state.withLock({ $0.negotiation }) {
            try negotiate(last.requested)
        }
    }

    /// Reconnects after an unplug (see ``ReconnectableCaptureDevice/reconnect()``) by
    /// identity: the camera is looked up among the capture nodes present now
    /// (``V4L2Syscalls/captureNodes()``) by its stable identity and opened wherever it is:
    /// a camera replugged while its old descriptor was open comes back under another
    /// `/dev/videoN`, and two replugged in the other order swap nodes. A camera found at
    /// its port (identity by port path) that is another model or has another serial is
    /// refused, naming both.
    ///
    /// A node that discovery does not list has no such identity: it is opened again at the
    /// same path and kept only when it reports the same USB bus position (`bus_info`).
    ///
    /// - Throws: ``CaptureError/cannotOpen(device:errno:)`` (ENOENT) while the camera is not
    ///   present, ``CaptureError/invalidState(device:reason:)`` for another camera found
    ///   instead.
    public func reconnect() throws(CaptureError) {
        let (identity, discovered) = state.withLock { ($0.identity, $0.isDiscovered) }
        guard discovered else { return try reconnectAtSameNode() }
        guard let found = identity.lookUp(in: syscalls.captureNodes()) else {
            throw .cannotOpen(device: "\(identity.name) [\(identity.stableID)]", errno: ENOENT)
        }
        if let expected = identity.usb, let now = found.usb, let difference = Self.difference(expected: expected, found: now) {
            throw .invalidState(device: found.devicePath, reason: "another camera is at \(identity.stableID): \(difference)")
        }
        try reopen(at: found.devicePath)
        state.withLock { s in s.identity.usb = found.usb ?? identity.usb }
    }

    /// What tells the camera found apart from the one expected (model, serial), or nil.
    static func difference(expected: USBLocation, found: USBLocation) -> String? {
        func model(_ usb: USBLocation) -> String { "\(usb.vendorID ?? "?"):\(usb.productID ?? "?")" }
        if let a = expected.vendorID, let b = found.vendorID, let c = expected.productID, let d = found.productID, (a, c) != (b, d) {
            return "\(model(found)) \(found.product ?? "") instead of \(model(expected)) \(expected.product ?? "")"
        }
        if let a = expected.serial, let b = found.serial, !a.isEmpty, a != b {
            return "serial \(b) instead of \(a)"
        }
        return nil
    }

    private func reconnectAtSameNode() throws(CaptureError) {
        let before = state.withLock { $0.firstBusInfo ?? "" }
        try reopen()
        let after = state.withLock { $0.capabilities.busInfo }
        guard before.isEmpty || after == before else {
            let fd = state.withLock { s -> Int32 in defer { s.fd = -1 }; return s.fd }
            if fd >= 0 { syscalls.close(fd) }
            throw .invalidState(device: path, reason: "another camera (bus \(after)) answers at this node; expected \(before)")
        }
    }

    /// Calls `arrived` whenever a camera with this camera's identity arrives
    /// (``V4L2Syscalls/watchHotplug(_:)``), until the watch is cancelled; `nil` when
    /// nothing can watch here.
    public func watchArrivals(_ arrived: @escaping @Sendable () -> Void) -> HotplugWatch? {
        let identity = identity
        return syscalls.watchHotplug { event in
            if case .arrived(let camera) = event, identity.lookUp(in: [camera]) != nil { arrived() }
        }
    }

    private func open() throws(CaptureError) {
        let fd: Int32
        do { fd = try syscalls.open(path, allowConversion: options.allowEmulatedFormats) } catch {
            // libv4l2 probes the node with QUERYCAP while wrapping it; ENOTTY means it is no V4L2 node.
            if error.code == ENOTTY { throw .notACaptureDevice(device: path, reason: "not a V4L2 device (it does not answer VIDIOC_QUERYCAP)") }
            throw .cannotOpen(device: path, errno: error.code)
        }
        do throws(CaptureError) {
            let capabilities = try queryCapabilities(fd)
            guard !capabilities.isMetadataOnly else {
                throw CaptureError.notACaptureDevice(device: path, reason: "a metadata node (its video node is a neighbour)")
            }
            guard capabilities.isVideoCapture else {
                throw CaptureError.notACaptureDevice(device: path, reason: "no video capture capability")
            }
            guard capabilities.canStream else {
                throw CaptureError.notACaptureDevice(device: path, reason: "no streaming (mmap) I/O")
            }
            let formats = try enumerateFormats(fd)
            let exposure = try? readControl(fd, .exposureAbsolute)
            state.withLock { s in
                s.fd = fd
                s.capabilities = capabilities
                if s.firstBusInfo == nil { s.firstBusInfo = capabilities.busInfo }
                s.formats = formats
                s.identity.name = capabilities.card.isEmpty ? s.path : capabilities.card
                s.exposureNanoseconds = exposure.map { Int64($0) * 100_000 }
            }
        } catch {
            syscalls.close(fd)
            throw error
        }
    }

    // MARK: ioctl marshalling

    /// Runs one ioctl on `value`'s bytes; the raw errno on failure.
    func call<T>(_ fd: Int32, _ request: UInt, _ value: inout T) -> V4L2Errno? {
        syscalls.call(fd, request, &value)
    }

    /// Runs one ioctl and turns a failure into a ``CaptureError`` naming the request.
    func xioctl<T>(_ fd: Int32, _ request: UInt, _ name: String, _ value: inout T) throws(CaptureError) {
        if let error = call(fd, request, &value) { throw failure(error, request: name) }
    }

    /// The ``CaptureError`` for a failed ioctl: ENODEV means the camera is
    /// gone (a disconnect, whatever the request); anything else names the request.
    func failure(_ error: V4L2Errno, request: String) -> CaptureError {
        error.code == ENODEV ? .disconnected(device: path) : .ioctlFailed(device: path, request: request, errno: error.code)
    }

    private func queryCapabilities(_ fd: Int32) throws(CaptureError) -> V4L2Capabilities {
        var cap = v4l2_capability()
        try xioctl(fd, CV4L2_VIDIOC_QUERYCAP, "VIDIOC_QUERYCAP", &cap)
        let caps = cap.capabilities & UInt32(V4L2_CAP_DEVICE_CAPS) != 0 ? cap.device_caps : cap.capabilities
        return V4L2Capabilities(driver: String(cArray: cap.driver), card: String(cArray: cap.card),
                                busInfo: String(cArray: cap.bus_info), deviceCapabilities: caps)
    }

    private func enumerateFormats(_ fd: Int32) throws(CaptureError) -> [V4L2FormatDescription] {
        var result: [V4L2FormatDescription] = []
        var index: UInt32 = 0
        while index < 256 {
            var desc = v4l2_fmtdesc()
            desc.index = index
            desc.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            if let error = call(fd, CV4L2_VIDIOC_ENUM_FMT, &desc) {
                if error.code == EINVAL { break }
                throw failure(error, request: "VIDIOC_ENUM_FMT")
            }
            let fourCC = FourCC(rawValue: desc.pixelformat)
            let (range, sizes) = try enumerateSizes(fd, fourCC)
            result.append(V4L2FormatDescription(
                fourCC: fourCC, name: String(cArray: desc.description),
                isCompressed: desc.flags & UInt32(V4L2_FMT_FLAG_COMPRESSED) != 0,
                isEmulated: desc.flags & UInt32(V4L2_FMT_FLAG_EMULATED) != 0,
                sizeRange: range, sizes: sizes))
            index += 1
        }
        return result
    }

    private func enumerateSizes(_ fd: Int32, _ fourCC: FourCC) throws(CaptureError) -> (V4L2Range<ImageSize>, [V4L2FrameSize]) {
        var discrete: [ImageSize] = []
        var index: UInt32 = 0
        while index < 1024 {
            var e = v4l2_frmsizeenum()
            e.index = index
            e.pixel_format = fourCC.rawValue
            if let error = call(fd, CV4L2_VIDIOC_ENUM_FRAMESIZES, &e) {
                if error.code == EINVAL || error.code == ENOTTY { break }
                throw failure(error, request: "VIDIOC_ENUM_FRAMESIZES")
            }
            if e.type == V4L2_FRMSIZE_TYPE_DISCRETE.rawValue {
                discrete.append(ImageSize(width: Int(e.discrete.width), height: Int(e.discrete.height)))
                index += 1
                continue
            }
            let s = e.stepwise
            let min = ImageSize(width: Int(s.min_width), height: Int(s.min_height))
            let max = ImageSize(width: Int(s.max_width), height: Int(s.max_height))
            let range: V4L2Range<ImageSize> = e.type == V4L2_FRMSIZE_TYPE_CONTINUOUS.rawValue
                ? .continuous(min: min, max: max)
                : .stepwise(min: min, max: max, step: ImageSize(width: Int(s.step_width), height: Int(s.step_height)))
            var sizes: [V4L2FrameSize] = []
            for size in range.candidateValues {
                sizes.append(V4L2FrameSize(size: size, intervals: try enumerateIntervals(fd, fourCC, size)))
            }
            return (range, sizes)
        }
        var sizes: [V4L2FrameSize] = []
        for size in discrete {
            sizes.append(V4L2FrameSize(size: size, intervals: try enumerateIntervals(fd, fourCC, size)))
        }
        return (.discrete(discrete), sizes)
    }

    private func enumerateIntervals(_ fd: Int32, _ fourCC: FourCC, _ size: ImageSize) throws(CaptureError) -> V4L2Range<FrameInterval> {
        var discrete: [FrameInterval] = []
        var index: UInt32 = 0
        func fraction(_ f: v4l2_fract) -> FrameInterval? {
            f.denominator == 0 ? nil : FrameInterval(numerator: f.numerator, denominator: f.denominator)
        }
        while index < 256 {
            var e = v4l2_frmivalenum()
            e.index = index
            e.pixel_format = fourCC.rawValue
            e.width = UInt32(size.width)
            e.height = UInt32(size.height)
            if let error = call(fd, CV4L2_VIDIOC_ENUM_FRAMEINTERVALS, &e) {
                if error.code == EINVAL || error.code == ENOTTY { break }
                throw failure(error, request: "VIDIOC_ENUM_FRAMEINTERVALS")
            }
            if e.type == V4L2_FRMIVAL_TYPE_DISCRETE.rawValue {
                if let f = fraction(e.discrete) { discrete.append(f) }
                index += 1
                continue
            }
            guard let min = fraction(e.stepwise.min), let max = fraction(e.stepwise.max) else { break }
            if e.type == V4L2_FRMIVAL_TYPE_CONTINUOUS.rawValue { return .continuous(min: min, max: max) }
            return .stepwise(min: min, max: max, step: fraction(e.stepwise.step) ?? min)
        }
        return .discrete(discrete)
    }

    // MARK: Format

    /// Sets `format` and returns what the device set (see ``negotiate(_:)`` for the details).
    @discardableResult
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat {
        try negotiate(format).actual
    }

    /// Sets `format` with S_FMT then S_PARM, reads both back and reports what the driver changed.
    ///
    /// Size and frame-interval adjustments are accepted (see
    /// ``FormatNegotiation/adjustments``); a different pixel format is not,
    /// since the caller's code expects the layout it asked for.
    ///
    /// - Throws: ``CaptureError/unsupportedFormat(device:requested:available:)`` when the
    ///   pixel format is not offered (emulated formats need ``Options/allowEmulatedFormats``),
    ///   ``CaptureError/invalidState(device:reason:)`` while streaming.
    @discardableResult
    public func negotiate(_ requested: CaptureFormat) throws(CaptureError) -> FormatNegotiation {
        let (fd, streaming, formats) = state.withLock { ($0.fd, $0.session != nil, $0.formats) }
        guard fd >= 0 else { throw .disconnected(device: path) }
        guard !streaming else { throw .invalidState(device: path, reason: "cannot change the format while streaming; stop first") }
        guard formats.contains(where: { $0.fourCC == requested.fourCC }) else {
            throw .unsupportedFormat(device: path, requested: requested, available: formats.flatMap(\.captureFormats))
        }
        // Buffers of an earlier stream pin the format (S_FMT answers EBUSY): free them first.
        if let error = releaseBuffers(fd), error.code == EBUSY {
            throw .invalidState(device: path, reason: "frames from the previous stream are still held; release them before changing the format")
        }
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.width = UInt32(requested.size.width)
        format.fmt.pix.height = UInt32(requested.size.height)
        format.fmt.pix.pixelformat = requested.fourCC.rawValue
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        try xioctl(fd, CV4L2_VIDIOC_S_FMT, "VIDIOC_S_FMT", &format)
        let pix = format.fmt.pix
        let actualFourCC = FourCC(rawValue: pix.pixelformat)
        let actualSize = ImageSize(width: Int(pix.width), height: Int(pix.height))

        var parm = v4l2_streamparm()
        parm.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        parm.parm.capture.timeperframe = v4l2_fract(numerator: requested.frameInterval.numerator,
                                                    denominator: requested.frameInterval.denominator)
        try xioctl(fd, CV4L2_VIDIOC_S_PARM, "VIDIOC_S_PARM", &parm)
        var interval = parm.parm.capture.timeperframe
        if interval.denominator == 0 {
            // Some drivers leave S_PARM's answer empty; G_PARM has the truth.
            var current = v4l2_streamparm()
            current.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
            try xioctl(fd, CV4L2_VIDIOC_G_PARM, "VIDIOC_G_PARM", &current)
            interval = current.parm.capture.timeperframe
        }
        let actualInterval = interval.denominator == 0
            ? requested.frameInterval : FrameInterval(numerator: interval.numerator, denominator: interval.denominator)
        let actual = CaptureFormat(fourCC: actualFourCC, size: actualSize, frameInterval: actualInterval)
        guard actualFourCC == requested.fourCC else {
            throw .unsupportedFormat(device: path, requested: requested, available: formats.flatMap(\.captureFormats))
        }
        let negotiation = FormatNegotiation(requested: requested, actual: actual,
                                            bytesPerRow: Int(pix.bytesperline), bufferSize: Int(pix.sizeimage))
        state.withLock { $0.negotiation = negotiation }
        return negotiation
    }
}
