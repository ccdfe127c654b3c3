import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
#if canImport(Glibc)
import Glibc
#endif

/// A USB webcam emulated in this process for the kernel's real `uvcvideo` driver: it
/// answers, as a UVC 1.0 camera would, the USB/IP requests of the kernel's virtual host
/// controller (`vhci-hcd`), so the kernel enumerates it, binds uvcvideo, creates its video
/// and metadata nodes and streams its frames like any webcam's.
///
/// ```swift
/// let webcam = EmulatedWebcam(EmulatedWebcamSpec(serial: "LEFT-1"))
/// try webcam.attach()                       // needs root and the vhci-hcd module
/// let node = try webcam.waitForNode()       // /dev/videoN, found in sysfs
/// let camera = try V4L2Camera(path: node.devicePath)  // and stream from it
/// webcam.detach()
/// ```
///
/// What it does as a camera: descriptors with every format, frame size and interval of
/// its ``EmulatedWebcamSpec``, its controls (GET_INFO/MIN/MAX/RES/DEF/CUR, SET_CUR),
/// VS_PROBE/VS_COMMIT negotiation (the payload size it asks for is what uvcvideo picks an
/// alternate setting with), and frames as UVC payloads with 12-byte headers: the frame
/// ID toggling per frame, end of frame on the last payload, the presentation time
/// (device clock at the start of exposure) and the source clock (device clock when the
/// payload leaves). Frames are paced by the device clock; each one's truth (its number,
/// when its exposure started on the host clock) is kept in ``truth``.
///
/// Every reply goes out under one lock together with the list of requests still open:
/// vhci drops the whole device when a request completes after its cancellation was answered.
public final class EmulatedWebcam: @unchecked Sendable {
    /// What the camera is.
    public let spec: EmulatedWebcamSpec

    /// One frame as the camera made it.
    public struct FrameTruth: Sendable, Equatable {
        /// Which time the host started streaming (1 for the first, since the camera was made).
        public var stream: Int
        /// Frames since streaming started, from 0 (uvcvideo's sequence number counts the same).
        public var number: Int
        /// The start of exposure, host CLOCK_MONOTONIC nanoseconds.
        public var exposureStartNanoseconds: Int64
        /// The exposure time.
        public var exposureNanoseconds: Int64
        /// When its first payload was handed to the host.
        public var transferStartNanoseconds: Int64
        /// The frame's bytes as sent.
        public var byteCount: Int
        /// The fault it carried, if any.
        public var fault: EmulatedWebcamSpec.Fault?
    }

    /// Errors of attaching a camera to the virtual host controller.
    public enum AttachError: Error, CustomStringConvertible {
        /// No `vhci-hcd` (modprobe vhci-hcd), or not root.
        case noHostController(String)
        /// Every high-speed port is taken.
        case noFreePort
        /// The kernel refused the attach request.
        case refused(errno: Int32)
        /// The camera is plugged in already (detach it first).
        case alreadyAttached(port: Int)
        /// The camera's node did not appear in time.
        case noNode(String)

        /// One line saying why the camera could not be attached (with the kernel's reason for a
        /// refusal).
        public var description: String {
            switch self {
            case .noHostController(let why): return "no USB/IP host controller: \(why)"
            case .noFreePort: return "every high-speed port of vhci_hcd.0 is in use"
            case .refused(let code): return "vhci_hcd refused the attach: \(String(cString: strerror(code)))"
            case .alreadyAttached(let port): return "the emulated webcam is attached already, on port \(port)"
            case .noNode(let what): return "the emulated webcam's video node did not appear: \(what)"
            }
        }
    }

    // MARK: State (behind `condition`)

    private struct Negotiation {
        var formatIndex = 1, frameIndex = 1
        var interval: UInt32 = 333_333
        /// Which start of streaming these settings stream in (a stop and start is a new stream).
        var stream = 0
    }

    private let condition = NSCondition()
    private var socket: Int32 = -1
    private var port: Int?
    private var generation = 0
    private var controls: [UInt16: Int32] = [:]
    private var probe = Negotiation()
    private var committed: Negotiation?
    private var alternateSetting = 0
    /// Counts starts of streaming (an alternate setting chosen, or a bulk stream committed).
    private var streamStarts = 0
    private var bulkHalted = false
    /// Streaming requests the host has sent and the camera not yet answered, oldest first.
    private var pending: [USBIP.Submit] = []
    private var faults: [EmulatedWebcamSpec.Fault] = []
    private var frames: [FrameTruth] = []

    /// A camera that is not attached yet.
    public init(_ spec: EmulatedWebcamSpec) {
        self.spec = spec
        for control in Self.controlTable { controls[control.key] = control.defaultValue }
    }


    // MARK: The test's side

    /// Every frame the camera has made, in order, each recorded as its transfer starts (so
    /// before the host can have it; a stop may cut the last one off).
    public var truth: [FrameTruth] { condition.withLock { frames } }

    /// The frames of the latest stream (numbered from 0, as uvcvideo's sequence numbers are).
    public var latestStreamTruth: [FrameTruth] {
        condition.withLock { frames.filter { $0.stream == frames.last?.stream } }
    }

    /// The vhci port the camera is attached to (nil when detached).
    public var attachedPort: Int? { condition.withLock { port } }

    /// Makes `fault` happen to the next frame.
    public func inject(_ fault: EmulatedWebcamSpec.Fault) { condition.withLock { faults.append(fault) } }

    /// The current value of a control, as the host last set it (for checking copied settings).
    public func controlValue(_ id: CameraControlID) -> Int32? {
        guard let entry = Self.controlTable.first(where: { $0.id == id }) else { return nil }
        return condition.withLock { controls[entry.key] }
    }

    /// Plugs the camera into a free high-speed port of the kernel's virtual host controller.
    public func attach(host: VHCIHost = VHCIHost()) throws(AttachError) {
        if let port = attachedPort { throw .alreadyAttached(port: port) }
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { throw .refused(errno: errno) }
        let port: Int
        do {
            port = try host.attach(socket: pair[0])
        } catch {
            close(pair[0])
            close(pair[1])
            throw error
        }
        // The kernel holds its own reference to its end.
        close(pair[0])
        serve(socket: pair[1], port: port)
    }

    /// Answers the USB/IP requests arriving on `socket` (a connected stream socket, which
    /// the camera then owns) as if attached at `port`: how ``attach(host:)`` starts, and
    /// how a test plays the host controller itself.
    package func serve(socket fd: Int32, port: Int) {
        let current = condition.withLock {
            socket = fd
            self.port = port
            generation += 1
            (probe, committed, alternateSetting, bulkHalted, pending) = (Negotiation(), nil, 0, false, [])
            return generation
        }
        let reader = Thread { [self] in answerRequests(socket: fd, generation: current) }
        reader.name = "emulated webcam \(spec.serial ?? spec.product) requests"
        reader.start()
        let streamer = Thread { [self] in stream(generation: current) }
        streamer.name = "emulated webcam \(spec.serial ?? spec.product) frames"
        streamer.start()
    }

    /// Unplugs the camera as a user would (vhci's detach): the kernel closes the connection.
    public func detach(host: VHCIHost = VHCIHost()) {
        guard let port = attachedPort else { return }
        host.detach(port: port)
        waitUntilDetached()
    }

    /// The camera dies mid-stream: its end of the connection closes without a word.
    public func disconnect() {
        condition.withLock { if socket >= 0 { shutdown(socket, Int32(SHUT_RDWR)) } }
        waitUntilDetached()
    }

    private func waitUntilDetached() {
        condition.lock()
        let deadline = Date(timeIntervalSinceNow: 10)
        while port != nil && condition.wait(until: deadline) {}
        condition.unlock()
    }

    /// The camera's video node, once the kernel has made it (found in sysfs by serial
    /// number, or by the port it is plugged into when it has none).
    public func waitForNode(timeoutSeconds: Double = 20, discovery: V4L2Discovery = V4L2Discovery()) throws(AttachError) -> DiscoveredCamera {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        repeat {
            if let port = attachedPort,
               let found = discovery.cameras().first(where: { camera in
                   guard camera.driver == "uvcvideo", let usb = camera.usb else { return false }
                   if let serial = spec.serial { return usb.serial == serial }
                   return usb.portPath == "\(port + 1)" && usb.vendorID == String(format: "%04x", spec.vendorID)
               }), FileManager.default.fileExists(atPath: found.devicePath) {
                return found
            }
            usleep(20_000)
        } while Date() < deadline
        throw .noNode("\(spec.serial ?? spec.product) on port \(attachedPort.map(String.init) ?? "none") after \(timeoutSeconds) s")
    }

    // MARK: Requests

    private func answerRequests(socket fd: Int32, generation: Int) {
        func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, count - got) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return nil }
                got += n
            }
            return bytes
        }
        while let command = USBIP.readCommand(read) {
            switch command {
            case .submit(let submit) where submit.endpoint == 0:
                let (status, data) = control(submit)
                send(USBIP.retSubmit(submit, status: status, data: data), generation: generation)
            case .submit(let submit):
                condition.withLock {
                    // Only this connection's: a reader outlived by a new attach answers nothing.
                    guard self.generation == generation else { return }
                    pending.append(submit)
                    condition.broadcast()
                }
            case .unlink(let seqnum, let target):
                condition.withLock {
                    guard self.generation == generation else { return }
                    let found = pending.firstIndex { $0.seqnum == target }
                    if let found { pending.remove(at: found) }
                    write(USBIP.retUnlink(seqnum: seqnum, status: found == nil ? 0 : USBIP.unlinked))
                }
            }
        }
        condition.withLock {
            if self.generation == generation {
                socket = -1
                port = nil
                self.generation += 1
                pending = []
            }
            condition.broadcast()
        }
        // The reader owns its connection's descriptor: closed once, here.
        close(fd)
    }

    private func send(_ bytes: [UInt8], generation: Int) {
        condition.withLock { if self.generation == generation { write(bytes) } }
    }

    /// Writes a whole message (the caller holds the lock). MSG_NOSIGNAL: a connection the
    /// kernel has shut (a detach) fails with EPIPE instead of killing the process.
    private func write(_ bytes: [UInt8]) {
        guard socket >= 0 else { return }
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(socket, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return }
            sent += n
        }
    }

    /// Answers a control request: the status and, for a read, the data.
    private func control(_ submit: USBIP.Submit) -> (Int32, [UInt8]) {
        let setup = submit.setup
        let type = setup[0], request = setup[1]
        let value = UInt16(setup[2]) | UInt16(setup[3]) << 8, index = UInt16(setup[4]) | UInt16(setup[5]) << 8
        let length = Int(UInt16(setup[6]) | UInt16(setup[7]) << 8)
        func reply(_ data: [UInt8]?) -> (Int32, [UInt8]) {
            guard let data else { return (USBIP.stalled, []) }
            return (0, Array(data.prefix(length)))
        }
        let descriptors = UVCDescriptors(spec: spec)
        switch (type & 0x60, request) {
        case (0x00, 0x06):  // GET_DESCRIPTOR
            switch value >> 8 {
            case 1: return reply(descriptors.device)
            case 2: return reply(descriptors.configuration)
            case 3: return reply(descriptors.string(UInt8(value & 0xFF)))
            default: return reply(nil)
            }
        case (0x00, 0x00): return reply([0, 0])                    // GET_STATUS
        case (0x00, 0x08): return reply([1])                       // GET_CONFIGURATION
        case (0x00, 0x0A): return reply([UInt8(condition.withLock { alternateSetting })])
        case (0x00, 0x0B) where index == 1:                        // SET_INTERFACE on streaming
            condition.withLock {
                alternateSetting = Int(value)
                if value != 0 { streamStarts += 1 }
                condition.broadcast()
            }
            return reply([])
        case (0x00, 0x01) where type & 0x1F == 2 && index & 0xFF == Int(UVCDescriptors.streamingEndpoint):
            condition.withLock {                                   // CLEAR_FEATURE(ENDPOINT_HALT): bulk stops
                bulkHalted = true
                condition.broadcast()
            }
            return reply([])
        case (0x00, _): return reply([])                           // SET_CONFIGURATION, SET_FEATURE, …
        case (0x20, _): return classRequest(request, selector: UInt8(value >> 8), entity: UInt8(index >> 8),
                                            interface: UInt8(index & 0xFF), data: submit.data, reply: reply)
        default: return reply(nil)
        }
    }

    // MARK: UVC class requests

    private static let setCurrent: UInt8 = 0x01, getCurrent: UInt8 = 0x81, getMinimum: UInt8 = 0x82, getMaximum: UInt8 = 0x83
    private static let getResolution: UInt8 = 0x84, getLength: UInt8 = 0x85, getInfo: UInt8 = 0x86, getDefault: UInt8 = 0x87

    private func classRequest(_ request: UInt8, selector: UInt8, entity: UInt8, interface: UInt8, data: [UInt8],
                              reply: ([UInt8]?) -> (Int32, [UInt8])) -> (Int32, [UInt8]) {
        if interface == 1 && entity == 0 && (selector == 1 || selector == 2) {
            return streamingRequest(request, isCommit: selector == 2, data: data, reply: reply)
        }
        guard interface == 0, let entry = Self.controlTable.first(where: { $0.entity == entity && $0.selector == selector }) else {
            return reply(nil)
        }
        func encoded(_ value: Int32) -> [UInt8] { (0..<entry.size).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
        switch request {
        case Self.getInfo: return reply([0x03])
        case Self.getLength: return reply(le16(UInt16(entry.size)))
        case Self.getMinimum: return reply(encoded(entry.minimum))
        case Self.getMaximum: return reply(encoded(entry.maximum))
        case Self.getResolution: return reply(encoded(entry.resolution))
        case Self.getDefault: return reply(encoded(entry.defaultValue))
        case Self.getCurrent: return reply(encoded(condition.withLock { controls[entry.key] ?? entry.defaultValue }))
        case Self.setCurrent:
            guard data.count >= entry.size else { return reply(nil) }
            var value: Int32 = 0
            for i in 0..<entry.size { value |= Int32(data[i]) << (8 * i) }
            if entry.size == 2 && entry.isSigned { value = Int32(Int16(truncatingIfNeeded: value)) }
            guard entry.accepts(value) else { return reply(nil) }
            condition.withLock { controls[entry.key] = value }
            return reply([])
        default: return reply(nil)
        }
    }

    /// VS_PROBE_CONTROL and VS_COMMIT_CONTROL (UVC 1.0's 26 bytes).
    private func streamingRequest(_ request: UInt8, isCommit: Bool, data: [UInt8],
                                  reply: ([UInt8]?) -> (Int32, [UInt8])) -> (Int32, [UInt8]) {
        switch request {
        case Self.setCurrent:
            guard data.count >= 8 else { return reply(nil) }
            let asked = Negotiation(formatIndex: Int(data[2]), frameIndex: Int(data[3]),
                                    interval: UInt32(data[4]) | UInt32(data[5]) << 8 | UInt32(data[6]) << 16 | UInt32(data[7]) << 24)
            let settled = settle(asked)
            condition.withLock {
                if isCommit {
                    committed = settled
                    bulkHalted = false
                    if spec.transfer == .bulk { streamStarts += 1 }
                    condition.broadcast()
                } else {
                    probe = settled
                }
            }
            return reply([])
        case Self.getCurrent, Self.getMinimum, Self.getMaximum, Self.getDefault:
            let current = condition.withLock { isCommit ? (committed ?? probe) : probe }
            return reply(probeBytes(request == Self.getCurrent ? current : settle(Negotiation())))
        case Self.getInfo: return reply([0x03])
        case Self.getLength: return reply(le16(26))
        default: return reply(nil)
        }
    }

    /// The nearest settings the camera offers to `asked`.
    private func settle(_ asked: Negotiation) -> Negotiation {
        let formatIndex = min(max(asked.formatIndex, 1), spec.formats.count)
        let format = spec.formats[formatIndex - 1]
        let frameIndex = min(max(asked.frameIndex, 1), format.sizes.count)
        let offered = format.intervals.map { UInt32(UInt64($0.numerator) * 10_000_000 / UInt64($0.denominator)) }
        let interval = offered.min { abs(Int64($0) - Int64(asked.interval)) < abs(Int64($1) - Int64(asked.interval)) } ?? 333_333
        return Negotiation(formatIndex: formatIndex, frameIndex: frameIndex, interval: interval)
    }

    private func probeBytes(_ n: Negotiation) -> [UInt8] {
        let format = spec.formats[n.formatIndex - 1], size = format.sizes[n.frameIndex - 1]
        var bytes = le16(1) + [UInt8(n.formatIndex), UInt8(n.frameIndex)] + le32(n.interval)
        bytes += le16(0) + le16(0) + le16(0) + le16(0) + le16(0)
        bytes += le32(UInt32(Self.maximumFrameSize(format, size))) + le32(UInt32(payloadSize(format, size, interval: n.interval)))
        return bytes
    }

    /// The bytes a frame can take: uncompressed exactly, MJPEG at most two bytes a pixel.
    static func maximumFrameSize(_ format: EmulatedWebcamSpec.Format, _ size: ImageSize) -> Int {
        format.isCompressed ? size.width * size.height * 2 : size.width * size.height * format.bitsPerPixel / 8
    }

    /// The payload size the camera asks for (`dwMaxPayloadTransferSize`): uncompressed, a
    /// frame's bytes over the microframes of one interval plus the header, rounded up to
    /// the smallest packet size that carries it; MJPEG the largest packet; bulk 16 KiB.
    private func payloadSize(_ format: EmulatedWebcamSpec.Format, _ size: ImageSize, interval: UInt32) -> Int {
        guard case .isochronous(let stated) = spec.transfer else { return UVCDescriptors.bulkPayloadSize }
        let sizes = stated.map(UVCDescriptors.carried)
        let largest = sizes.max() ?? 1024
        if format.isCompressed { return largest }
        let microframes = Double(interval) / 1250      // 100 ns units over 125 µs
        let needed = Int((Double(Self.maximumFrameSize(format, size)) / microframes).rounded(.up)) + 12
        return sizes.sorted().first { $0 >= needed } ?? needed
    }

    // MARK: Controls

    struct ControlEntry {
        var id: CameraControlID
        var entity: UInt8, selector: UInt8, size: Int
        var minimum: Int32, maximum: Int32, resolution: Int32, defaultValue: Int32
        var isSigned = false
        var key: UInt16 { UInt16(entity) << 8 | UInt16(selector) }
        /// The auto-exposure mode is a bitmap of one mode; the others a range on the resolution's grid.
        func accepts(_ value: Int32) -> Bool {
            if id == .exposureAuto { return value != 0 && value & resolution == value && value & (value - 1) == 0 }
            return value >= minimum && value <= maximum && (value - minimum) % max(1, resolution) == 0
        }
    }

    /// The camera terminal's and processing unit's controls (UVC 1.0 §4.2.2).
    static let controlTable: [ControlEntry] = [
        // Auto-exposure mode: manual (1) or aperture priority (8), the usual pair.
        ControlEntry(id: .exposureAuto, entity: UVCDescriptors.cameraTerminal, selector: 0x02, size: 1,
                     minimum: 0, maximum: 0, resolution: 0x09, defaultValue: 8),
        ControlEntry(id: .exposureAbsolute, entity: UVCDescriptors.cameraTerminal, selector: 0x04, size: 4,
                     minimum: 3, maximum: 2047, resolution: 1, defaultValue: 100),
        ControlEntry(id: .focusAbsolute, entity: UVCDescriptors.cameraTerminal, selector: 0x06, size: 2,
                     minimum: 0, maximum: 250, resolution: 5, defaultValue: 0),
        ControlEntry(id: .autoFocus, entity: UVCDescriptors.cameraTerminal, selector: 0x08, size: 1,
                     minimum: 0, maximum: 1, resolution: 1, defaultValue: 1),
        ControlEntry(id: .brightness, entity: UVCDescriptors.processingUnit, selector: 0x02, size: 2,
                     minimum: -64, maximum: 64, resolution: 1, defaultValue: 0, isSigned: true),
        ControlEntry(id: .gain, entity: UVCDescriptors.processingUnit, selector: 0x04, size: 2,
                     minimum: 0, maximum: 255, resolution: 1, defaultValue: 32),
        ControlEntry(id: .whiteBalanceTemperature, entity: UVCDescriptors.processingUnit, selector: 0x0A, size: 2,
                     minimum: 2800, maximum: 6500, resolution: 10, defaultValue: 4600),
        ControlEntry(id: .autoWhiteBalance, entity: UVCDescriptors.processingUnit, selector: 0x0B, size: 1,
                     minimum: 0, maximum: 1, resolution: 1, defaultValue: 1),
    ]

    // MARK: Frames

    /// The device clock (ticks at `clockFrequencyHz`, 32 bits) at host time `nanoseconds`.
    public func deviceClock(atHostNanoseconds nanoseconds: Int64) -> UInt32 {
        let seconds = Double(nanoseconds + spec.clockOffsetNanoseconds) * 1e-9 * (1 + spec.clockDriftPPM * 1e-6)
        // Whole ticks, kept below 2⁶³ before the 32-bit wrap (the counter wraps as the camera's does).
        let ticks = (seconds * Double(spec.clockFrequencyHz)).rounded(.down).truncatingRemainder(dividingBy: 4_294_967_296)
        return UInt32(truncatingIfNeeded: Int64(ticks < 0 ? ticks + 4_294_967_296 : ticks))
    }

    /// What is streaming now: the committed settings and the packet size, or nil.
    private func streamingNow() -> (Negotiation, Int?)? {
        guard var committed else { return nil }
        committed.stream = streamStarts
        switch spec.transfer {
        case .bulk: return bulkHalted ? nil : (committed, nil)
        case .isochronous(let sizes):
            guard alternateSetting > 0 && alternateSetting <= sizes.count else { return nil }
            return (committed, UVCDescriptors.carried(sizes[alternateSetting - 1]))
        }
    }

    /// True while `generation` streams with `settings` (the caller holds the lock).
    private func isStreaming(_ settings: Negotiation, generation: Int) -> Bool {
        guard self.generation == generation, let (now, _) = streamingNow() else { return false }
        return now.formatIndex == settings.formatIndex && now.frameIndex == settings.frameIndex && now.interval == settings.interval
            && now.stream == settings.stream
    }

    private func stream(generation: Int) {
        var pictures = PictureCache(spec: spec)
        var random = SeededRandomGenerator(seed: spec.seed &+ UInt64(generation))
        while true {
            // Wait for streaming to start (or the camera to go).
            condition.lock()
            while self.generation == generation && streamingNow() == nil { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
            guard self.generation == generation, let (settings, packetSize) = streamingNow() else { condition.unlock(); return }
            condition.unlock()
            let format = spec.formats[settings.formatIndex - 1], size = format.sizes[settings.frameIndex - 1]
            pictures.prepare(format, size)
            // Exposures start on the sensor's grid of device time (interval apart, at the phase).
            let devicePeriod = Double(settings.interval) * 100
            let rate = 1 + spec.clockDriftPPM * 1e-6
            func deviceTime(_ host: Int64) -> Double { Double(host + spec.clockOffsetNanoseconds) * rate }
            func hostTime(_ device: Double) -> Int64 { Int64((device / rate).rounded()) - spec.clockOffsetNanoseconds }
            let phase = Double(spec.exposurePhaseNanoseconds)
            let firstSlot = ((deviceTime(monotonicNanoseconds()) - phase) / devicePeriod).rounded(.up)
            var number = 0, skipped = 0
            func stillStreaming() -> Bool { condition.withLock { isStreaming(settings, generation: generation) } }
            while stillStreaming() {
                let slot = firstSlot + Double(number + skipped)
                let exposureStart = hostTime(phase + slot * devicePeriod)
                let exposure = Int64(condition.withLock { controls[Self.controlTable[1].key] ?? 100 }) * 100_000
                let jitter = spec.transferJitterNanoseconds > 0 ? Int64.random(in: 0...spec.transferJitterNanoseconds, using: &random) : 0
                let sendAt = exposureStart + exposure + spec.readoutNanoseconds + jitter
                let wait = sendAt - monotonicNanoseconds()
                if wait > 0 { sleep(nanoseconds: wait) }
                var fault = condition.withLock { faults.isEmpty ? nil : faults.removeFirst() }
                if case .stall(let nanoseconds) = fault {
                    skipped += Int((Double(nanoseconds) * rate / devicePeriod).rounded(.up))
                    fault = nil
                    continue
                }
                var bytes = pictures.frame(number, format, size)
                switch fault {
                case .shortFrame(let fraction)?: bytes.removeLast(bytes.count - Int(Double(bytes.count) * min(1, max(0, fraction))))
                case .oversizedFrame(let extra)?:
                    bytes += [UInt8](repeating: 0x55, count: Self.maximumFrameSize(format, size) - bytes.count + extra)
                default: break
                }
                // Recorded before it leaves: whenever the host has a frame, its truth is here.
                condition.withLock {
                    frames.append(FrameTruth(stream: settings.stream, number: number, exposureStartNanoseconds: exposureStart,
                                             exposureNanoseconds: exposure, transferStartNanoseconds: monotonicNanoseconds(),
                                             byteCount: bytes.count, fault: fault))
                }
                let delivered = deliver(bytes, frameID: UInt8(number & 1), pts: deviceClock(atHostNanoseconds: exposureStart),
                                        error: fault == .errorBit, packetSize: packetSize, settings: settings, generation: generation)
                guard delivered else { break }
                number += 1
            }
        }
    }

    private func sleep(nanoseconds: Int64) {
        var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    /// Sends one frame as payloads into the host's open streaming requests, waiting for
    /// requests when none is open. False when streaming stopped first.
    private func deliver(_ frame: [UInt8], frameID: UInt8, pts: UInt32, error: Bool, packetSize: Int?,
                         settings: Negotiation, generation: Int) -> Bool {
        var offset = 0
        var first = true
        while offset < frame.count || first {
            condition.lock()
            while isStreaming(settings, generation: generation) && pending.isEmpty { _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05)) }
            guard isStreaming(settings, generation: generation), !pending.isEmpty else { condition.unlock(); return false }
            let request = pending.removeFirst()
            var data: [UInt8] = []
            var lengths: [Int] = []
            var headers: [Int] = []  // where each payload header starts in `data`
            func payload(capacity: Int) -> [UInt8] {
                let take = max(0, min(frame.count - offset, capacity - 12))
                let last = offset + take >= frame.count
                let flags: UInt8 = frameID | (last ? 0x02 : 0) | 0x04 | 0x08 | (error ? 0x40 : 0) | 0x80
                // The source clock is written just before the reply leaves (below).
                let header: [UInt8] = [12, flags] + le32(pts) + [0, 0, 0, 0, 0, 0]
                defer { offset += take }
                return header + frame[offset..<(offset + take)]
            }
            if request.packetCount > 0 {
                for requested in request.packetLengths {
                    guard offset < frame.count || first else { lengths.append(0); continue }
                    first = false
                    let bytes = payload(capacity: min(requested, packetSize ?? requested))
                    headers.append(data.count)
                    data += bytes
                    lengths.append(bytes.count)
                }
            } else {
                first = false
                data = payload(capacity: min(request.transferBufferLength, UVCDescriptors.bulkPayloadSize))
                headers = [0]
            }
            var message = USBIP.retSubmit(request, data: data, packetActualLengths: lengths)
            // The payloads leave now: each header's source clock reads the device clock now (a
            // camera stamps a payload as it sends it), so building them costs the readings nothing.
            let now = monotonicNanoseconds()
            let stc = le32(deviceClock(atHostNanoseconds: now)) + le16(UInt16(truncatingIfNeeded: now / 1_000_000) & 0x7FF)
            for header in headers {
                let at = USBIP.headerSize + header + 6
                message.replaceSubrange(at..<(at + 6), with: stc)
            }
            write(message)
            condition.unlock()
        }
        return true
    }
}

/// The frames' bytes for each format and size: the picture converted (or encoded) once,
/// then each frame's number written in (MJPEG: one of 16 encodings, the number mod 16).
private struct PictureCache {
    let spec: EmulatedWebcamSpec
    var base: [String: [UInt8]] = [:]
    var jpegs: [String: [[UInt8]]] = [:]
    static let jpegCycle = 16

    init(spec: EmulatedWebcamSpec) { self.spec = spec }

    mutating func prepare(_ format: EmulatedWebcamSpec.Format, _ size: ImageSize) {
        let key = "\(format.fourCC) \(size)"
        guard base[key] == nil else { return }
        let picture = spec.picture(size)
        switch format.fourCC {
        case .mjpeg:
            let rgb = (try? picture.converted(to: .rgb8))?.bytes ?? []
            jpegs[key] = (0..<Self.jpegCycle).map { n in
                var marked = rgb
                for bit in 0..<FrameMark.bits {
                    let value: UInt8 = (n >> (FrameMark.bits - 1 - bit)) & 1 == 1 ? 235 : 16
                    for y in 0..<FrameMark.block {
                        for x in 0..<FrameMark.block {
                            let i = (y * size.width + bit * FrameMark.block + x) * 3
                            marked[i] = value; marked[i + 1] = value; marked[i + 2] = value
                        }
                    }
                }
                let image = try? ImageBuffer(format: .rgb8, size: size, bytes: marked)
                return image.flatMap { try? JPEGEncoder.encode($0, quality: 85, subsampling: .s422) } ?? []
            }
            base[key] = []
        case .grey:
            base[key] = (try? picture.converted(to: .gray8))?.bytes ?? [UInt8](repeating: 128, count: size.width * size.height)
        default:
            base[key] = (try? picture.converted(to: .yuyv))?.bytes ?? [UInt8](repeating: 128, count: size.width * size.height * 2)
        }
    }

    func frame(_ number: Int, _ format: EmulatedWebcamSpec.Format, _ size: ImageSize) -> [UInt8] {
        let key = "\(format.fourCC) \(size)"
        switch format.fourCC {
        case .mjpeg:
            let cycle = jpegs[key] ?? []
            return cycle.isEmpty ? [] : cycle[number % cycle.count]
        case .grey:
            var bytes = base[key] ?? []
            FrameMark.write(number, gray: &bytes, stride: size.width)
            return bytes
        default:
            var bytes = base[key] ?? []
            FrameMark.write(number, yuyv: &bytes, width: size.width)
            return bytes
        }
    }
}
