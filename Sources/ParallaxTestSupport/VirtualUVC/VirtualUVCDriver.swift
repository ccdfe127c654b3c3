import CV4L2
import Foundation
import ParallaxCapture
import ParallaxGeometry

/// An in-process UVC camera driver behind the ``V4L2Syscalls`` seam, for
/// testing V4L2 code without hardware (this is how Parallax tests its own
/// `V4L2Camera`; your tests can do the same).
///
/// It answers the V4L2 ioctls a UVC driver answers, with the real structures
/// from `linux/videodev2.h`: QUERYCAP, ENUM_FMT / ENUM_FRAMESIZES /
/// ENUM_FRAMEINTERVALS, S_FMT / G_FMT (rounding the size to the nearest
/// offered one and an unknown pixel format to the first, as drivers do),
/// S_PARM / G_PARM (nearest offered interval), REQBUFS / QUERYBUF / QBUF /
/// DQBUF with page-aligned buffers handed out by ``mmap(_:length:offset:)``,
/// STREAMON / STREAMOFF, QUERYCTRL / G_CTRL / S_CTRL. Frames are produced
/// on a CLOCK_MONOTONIC schedule at the configured interval, with jitter,
/// sequence numbers, and a gap whenever no buffer was queued in time.
///
/// A descriptor opened with conversion (`allowConversion`) also sees RGB3
/// and BGR3 flagged `V4L2_FMT_FLAG_EMULATED`, as libv4l2 adds them.
///
/// Cameras with a ``VirtualCameraSpec/usb`` location share their bus's bandwidth: at
/// STREAMON a camera asks for its payload per microframe, gets the smallest alternate
/// setting that carries it (EIO when none does, as uvcvideo) and is admitted only while
/// the bus's periodic budget has room (ENOSPC otherwise, as the host controller).
///
/// Faults (``VirtualCameraFault``) are injected with ``inject(_:into:)``;
/// ``unplug(_:)`` and ``replug(_:)`` remove and restore a camera, numbering its nodes as
/// the kernel does (a number stays taken while a descriptor on it is open, so a camera
/// replugged during a session comes back under another node), and announce it to
/// ``watchHotplug(_:)`` subscribers. Test controls name a camera by its spec's path.
///
/// Each frame's first 8 bytes hold its sequence number (little-endian) and
/// the rest of the image is filled with the low byte of the sequence, so a
/// test can check both where pixels live and what they are.
public final class VirtualUVCDriver: V4L2Syscalls, @unchecked Sendable {
    private let lock = NSCondition()
    /// Each camera's current device, by the camera's name (its spec's first path).
    private var cameras: [String: Device] = [:]
    /// The devices at the nodes present now (video and metadata nodes), by node path.
    private var nodes: [String: Device] = [:]
    private var descriptors: [Int32: Descriptor] = [:]
    private var nextDescriptor: Int32 = 1000
    /// Memory of buffer sets that were replaced while still mapped.
    private var retired: [UnsafeMutableRawPointer] = []
    /// Devices that were unplugged, kept until the driver goes so late munmaps find their buffers.
    private var unplugged: [Device] = []
    /// Every metadata node's device made for a camera (``VirtualCameraSpec/metadataNode``),
    /// so that buffers requested on one are freed with the driver.
    private var metadataDevices: [Device] = []
    /// Hot-plug subscribers (``watchHotplug(_:)``), by subscription number.
    private var watchers: [Int: @Sendable (HotplugEvent) -> Void] = [:]
    private var nextWatcher = 0

    /// An open descriptor: the device and node it was opened on, and the plug generation.
    private struct Descriptor {
        let device: Device
        let node: String
        let generation: Int
        let conversion: Bool
    }

    /// The driver's clock: CLOCK_MONOTONIC, or faster for time-compressed soaks.
    public let clock: VirtualClock

    /// A driver serving these cameras, all plugged in at their spec's paths (metadata nodes,
    /// where asked for, at the lowest free numbers after them).
    ///
    /// - Parameter timeScale: how much faster than real time the cameras run (1: real
    ///   time). Timestamps and frame times follow the scaled clock (``clock``), so an hour
    ///   of 60 fps streaming takes two minutes at 30; everything else (poll timeouts, stall
    ///   detection in the capture code) stays in real time.
    public init(cameras specs: [VirtualCameraSpec], timeScale: Double = 1) {
        clock = VirtualClock(scale: timeScale)
        for spec in specs {
            let device = Device(spec: spec, clock: clock)
            device.node = spec.path
            cameras[spec.path] = device
            nodes[spec.path] = device
        }
        for spec in specs { if let device = cameras[spec.path] { addMetadataNode(to: device) } }
    }

    deinit {
        for device in metadataDevices { for buffer in device.buffers { buffer.memory.deallocate() } }
        for device in cameras.values { for buffer in device.buffers { buffer.memory.deallocate() } }
        for device in unplugged { for buffer in device.buffers { buffer.memory.deallocate() } }
        for memory in retired { memory.deallocate() }
    }

    // MARK: Test controls

    /// Adds a camera (a new node appearing at its spec's path, named by it). Whatever was
    /// at that node goes away first, as if unplugged (its descriptors die), and a camera of
    /// the same name is replaced: their buffers are freed with the driver, once.
    public func add(_ spec: VirtualCameraSpec) {
        let (departed, arrived) = locked { () -> ([DiscoveredCamera], DiscoveredCamera?) in
            var departed: [DiscoveredCamera] = []
            for old in [nodes[spec.path], cameras[spec.path]].compactMap({ $0 }) where old.connected {
                if !old.spec.isMetadataNode, let camera = discovered(old) { departed.append(camera) }
                disconnect(old)
            }
            if let old = cameras[spec.path] { retire(old) }
            let device = Device(spec: spec, clock: clock)
            device.node = spec.path
            cameras[spec.path] = device
            nodes[spec.path] = device
            addMetadataNode(to: device)
            return (departed, discovered(device))
        }
        for camera in departed { announce(.departed(camera)) }
        announce(arrived.map { .arrived($0) })
    }

    /// Queues a fault for the camera named `name` (its spec's path).
    public func inject(_ fault: VirtualCameraFault, into name: String) {
        lock.lock(); defer { lock.broadcast(); lock.unlock() }
        guard let device = cameras[name] else { return }
        switch fault {
        case .queueError: device.queueFailed = true
        case .refusedQueueing(let n): device.pendingRefusedQueueing += n
        case .spuriousWakeups(let n): device.pendingSpurious += n
        case .noSpaceAtStreamOn: device.failNextStreamOn = true
        case .errorFlaggedBuffers(let n): device.pendingErrorFlags += n
        case .sequenceGap(let n): device.pendingGap += n
        case .sequenceStepsBack(let n): device.pendingStepBack = n
        case .timestampsAhead(let ns): device.timestampOffset = ns
        case .timestampBackwards(let ns): device.pendingBackwards = ns
        case .stall(let ns): device.stallUntil = ns.map { clock.now() + $0 } ?? Int64.max
        }
    }

    /// Ends a stall started with `.stall(nanoseconds: nil)`.
    public func clearStall(_ name: String) {
        lock.lock(); defer { lock.broadcast(); lock.unlock() }
        cameras[name]?.stallUntil = nil
    }

    /// Unplugs the camera: open descriptors die (ENODEV, POLLERR | POLLHUP) and its nodes
    /// disappear; as in the kernel, a node's number stays taken while a descriptor opened
    /// on it is still open.
    public func unplug(_ name: String) {
        let departed = locked { () -> DiscoveredCamera? in
            guard let device = cameras[name], device.connected else { return nil }
            let camera = discovered(device)
            disconnect(device)
            return camera
        }
        announce(departed.map { .departed($0) })
    }

    /// Plugs the camera back in as a fresh device (default format, no buffers) under the
    /// lowest free node number, as the kernel numbers it: its old node if nothing holds it
    /// open, another one if a descriptor on it is still open. Old descriptors stay dead.
    public func replug(_ name: String) {
        let arrived = locked { () -> DiscoveredCamera? in
            guard let old = cameras[name], !old.connected else { return nil }
            retire(old)
            let fresh = Device(spec: old.spec, clock: clock)
            fresh.generation = old.generation + 1
            let node = lowestFreeNode(like: old.spec.path)
            fresh.node = node
            nodes[node] = fresh
            cameras[name] = fresh
            addMetadataNode(to: fresh)
            return discovered(fresh)
        }
        announce(arrived.map { .arrived($0) })
    }

    /// The node the camera named `name` has now (`nil` while it is unplugged).
    public func node(of name: String) -> String? {
        lock.lock(); defer { lock.unlock() }
        return cameras[name]?.node
    }

    // MARK: Discovery

    /// The metadata node beside `path`'s capture node: none: the virtual driver's metadata nodes hold no clock readings (the emulated webcams
    /// under uvcvideo test the camera clock; see ``EmulatedWebcam``).
    public func metadataNode(of path: String) -> String? { nil }

    /// The capture nodes of the connected cameras (metadata nodes and unplugged cameras left
    /// out) with their identities, as ``V4L2Discovery`` names real USB cameras (the serial when
    /// unique, else the USB port; a camera without a USB location by its bus info), in node
    /// order; empty when none is connected.
    public func captureNodes() -> [DiscoveredCamera] {
        lock.lock(); defer { lock.unlock() }
        return V4L2Discovery.identified(cameras.values.filter { $0.connected && !$0.spec.isMetadataNode }
            .compactMap { plainDiscovered($0) })
            .sorted { Self.nodeNumber($0.devicePath) < Self.nodeNumber($1.devicePath) }
    }

    /// Calls `handler` for every camera unplugged, plugged back or added, on the thread that
    /// did it, until the watch is cancelled.
    public func watchHotplug(_ handler: @escaping @Sendable (HotplugEvent) -> Void) -> HotplugWatch? {
        let id = locked { () -> Int in
            defer { nextWatcher += 1 }
            watchers[nextWatcher] = handler
            return nextWatcher
        }
        return HotplugWatch { [weak self] in
            guard let self else { return }
            self.locked { self.watchers[id] = nil }
        }
    }

    private static func nodeNumber(_ path: String) -> Int {
        Int(String(path.reversed().prefix(while: \.isNumber).reversed())) ?? Int.max
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock(); defer { lock.broadcast(); lock.unlock() }
        return body()
    }

    private func announce(_ event: HotplugEvent?) {
        guard let event else { return }
        for handler in locked({ Array(watchers.values) }) { handler(event) }
    }

    /// The camera as discovery lists it, identity included (caller holds the lock).
    private func discovered(_ device: Device) -> DiscoveredCamera? {
        guard let camera = plainDiscovered(device) else { return nil }
        let others = cameras.values.filter { $0 !== device && $0.connected && !$0.spec.isMetadataNode }.compactMap(plainDiscovered)
        return V4L2Discovery.identified(others + [camera]).last
    }

    /// The camera before identities are settled (its stable id the port, or the bus info).
    private func plainDiscovered(_ device: Device) -> DiscoveredCamera? {
        guard let node = device.node else { return nil }
        let spec = device.spec
        return DiscoveredCamera(devicePath: node, name: spec.card, driver: spec.driver, nodeIndex: 0, usb: spec.usb,
                                identity: DeviceIdentity(stableID: spec.usb?.portIdentity ?? spec.busInfo, name: spec.card,
                                                         path: node, usb: spec.usb))
    }

    /// Unplugs `device`: its descriptors die, its nodes go (caller holds the lock).
    private func disconnect(_ device: Device) {
        device.connected = false
        device.generation += 1
        device.streaming = false
        removeNodes(of: device)
    }

    /// Moves a device its camera no longer uses to the unplugged ones, whose buffers are
    /// freed once unmapped or with the driver; never twice (caller holds the lock).
    private func retire(_ device: Device) {
        guard !unplugged.contains(where: { $0 === device }) else { return }
        unplugged.append(device)
    }

    /// Removes the device's nodes from the present ones (caller holds the lock).
    private func removeNodes(of device: Device) {
        if let node = device.node, nodes[node] === device { nodes[node] = nil }
        device.lastNode = device.node
        if let metadata = device.metadata, let node = metadata.node, nodes[node] === metadata {
            nodes[node] = nil
            metadata.connected = false
            metadata.generation += 1
        }
        device.node = nil
    }

    /// Gives a camera that asks for one its metadata node (caller holds the lock).
    private func addMetadataNode(to device: Device) {
        guard device.spec.metadataNode, let videoNode = device.node else { return }
        var spec = device.spec
        spec.isMetadataNode = true
        spec.metadataNode = false
        let metadata = Device(spec: spec, clock: clock)
        let node = lowestFreeNode(like: videoNode)
        metadata.node = node
        nodes[node] = metadata
        device.metadata = metadata
        metadataDevices.append(metadata)
    }

    /// The lowest-numbered node in `path`'s directory that no present device has and that
    /// nothing holds: no open descriptor, no mapped buffer of a departed camera (the
    /// kernel frees a number only when the last reference to the node goes; caller holds
    /// the lock).
    private func lowestFreeNode(like path: String) -> String {
        let prefix = String(path.reversed().drop(while: \.isNumber).reversed())
        let departed = (Array(cameras.values) + unplugged).filter { !$0.connected && $0.buffers.contains { $0.mapCount > 0 } }
        var number = 0
        while true {
            let candidate = prefix + String(number)
            if nodes[candidate] == nil && !descriptors.values.contains(where: { $0.node == candidate })
                && !departed.contains(where: { $0.lastNode == candidate }) { return candidate }
            number += 1
        }
    }

    /// The buffer addresses ``mmap(_:length:offset:)`` has handed out for the current buffers
    /// of the camera named `path` (its spec's path, as for every test control).
    public func mappedAddresses(_ path: String) -> [UnsafeRawPointer] {
        lock.lock(); defer { lock.unlock() }
        return cameras[path]?.buffers.filter { $0.mapCount > 0 }.map { UnsafeRawPointer($0.memory) } ?? []
    }

    /// How many of the camera's buffers are queued to the driver (empty and waiting, or filled and not yet dequeued).
    public func buffersOwnedByDriver(_ path: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return cameras[path]?.buffers.filter { $0.state != .dequeued }.count ?? 0
    }

    /// Number of live mappings of the camera's buffers (0 once everything is unmapped).
    public func liveMappings(_ path: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        let all = (cameras[path].map { [$0] } ?? []) + unplugged.filter { $0.spec.path == path }
        return all.reduce(0) { total, device in device.buffers.reduce(total) { $0 + $1.mapCount } }
    }

    /// Injected faults the camera named `path` has not produced yet (spurious wake-ups, refused
    /// QBUFs, error-flagged buffers, sequence gaps and steps, a backwards timestamp), so a
    /// test can prove its fault really reached the stream rather than passing without it.
    public func faultsPending(_ path: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        guard let device = cameras[path] else { return 0 }
        return device.pendingSpurious + device.pendingRefusedQueueing + device.pendingErrorFlags + device.pendingGap
            + (device.pendingStepBack == nil ? 0 : 1) + (device.pendingBackwards == nil ? 0 : 1)
    }

    /// Frames the camera has produced since STREAMON (its sequence counter).
    public func framesProduced(_ path: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return Int(cameras[path]?.sequence ?? 0)
    }

    /// The timestamp the driver put on frame `sequence` (one of the last 1024), in nanoseconds
    /// on CLOCK_MONOTONIC; the V4L2 buffer carries it with microsecond resolution.
    public func driverTimestamp(_ path: String, sequence: UInt64) -> Int64? {
        lock.lock(); defer { lock.unlock() }
        return cameras[path]?.record(UInt32(truncatingIfNeeded: sequence))?.rawTimestamp
    }

    /// The driver's own counter for the frame whose buffer carried `timestamp` (nanoseconds;
    /// matched to the microsecond the buffer carries), among the last 1024 frames. A frame's
    /// ``Frame/sequence`` is numbered on across stream restarts while the driver's counter
    /// starts again at 0, so ground truth is looked up by timestamp.
    public func driverSequence(_ path: String, timestamp: Int64) -> UInt64? {
        lock.lock(); defer { lock.unlock() }
        return cameras[path]?.records.lazy.compactMap { $0 }.first { abs($0.rawTimestamp - timestamp) < 1000 }.map { UInt64($0.sequence) }
    }

    /// Ground truth: when frame `sequence` of the camera named `path` was really due, before
    /// jitter and timestamp faults (the last 1024 frames of the current connection).
    public func dueTime(_ path: String, sequence: UInt64) -> Int64? {
        lock.lock(); defer { lock.unlock() }
        return cameras[path]?.record(UInt32(truncatingIfNeeded: sequence))?.due
    }

    /// Bytes per microframe reserved on USB bus `bus` by the cameras streaming on it.
    public func reservedBandwidth(onBus bus: Int) -> Int {
        lock.lock(); defer { lock.unlock() }
        return load(onBus: bus)
    }

    /// Opens the camera at node `path` as an application would with ``V4L2Discovery``: the
    /// stable identity and USB location as ``captureNodes()`` lists them.
    public func camera(at path: String, options: V4L2Camera.Options = .init()) throws(CaptureError) -> V4L2Camera {
        let found = captureNodes().first { $0.devicePath == path }
        return try V4L2Camera(path: path, syscalls: self, options: options, stableID: found?.identity.stableID, usb: found?.usb)
    }

    /// True while the camera streams.
    public func isStreaming(_ path: String) -> Bool {
        lock.lock(); defer { lock.unlock() }
        return cameras[path]?.streaming ?? false
    }

    /// Descriptors currently open on the camera named `name`, on any of its plug generations.
    public func openDescriptors(_ name: String) -> Int {
        lock.lock(); defer { lock.unlock() }
        return descriptors.values.filter { $0.device.spec.path == name && !$0.device.spec.isMetadataNode }.count
    }

    // MARK: V4L2Syscalls

    /// See ``V4L2Syscalls/open(_:allowConversion:)``.
    public func open(_ path: String, allowConversion: Bool) throws(V4L2Errno) -> Int32 {
        lock.lock(); defer { lock.unlock() }
        guard let device = nodes[path], device.connected else { throw V4L2Errno(ENOENT) }
        let fd = nextDescriptor
        nextDescriptor += 1
        descriptors[fd] = Descriptor(device: device, node: path, generation: device.generation, conversion: allowConversion)
        return fd
    }

    /// See ``V4L2Syscalls/close(_:)``.
    public func close(_ fd: Int32) {
        lock.lock(); defer { lock.broadcast(); lock.unlock() }
        guard let entry = descriptors.removeValue(forKey: fd) else { return }
        let device = entry.device
        if entry.generation == device.generation && device.streamOwner == fd {
            device.stopStreaming()
        }
    }

    /// See ``V4L2Syscalls/mmap(_:length:offset:)``.
    public func mmap(_ fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        lock.lock(); defer { lock.unlock() }
        let device = try live(fd)
        guard let buffer = device.buffers.first(where: { $0.offset == offset }), length <= buffer.length else {
            throw .invalidArgument
        }
        buffer.mapCount += 1
        return buffer.memory
    }

    /// See ``V4L2Syscalls/munmap(_:length:)``.
    public func munmap(_ address: UnsafeMutableRawPointer, length: Int) {
        lock.lock(); defer { lock.unlock() }
        for device in Array(cameras.values) + unplugged {
            if let buffer = device.buffers.first(where: { $0.memory == address }) { buffer.mapCount -= 1 }
        }
        // An unplugged camera's memory goes once nothing maps it any more, as the kernel's does.
        unplugged.removeAll { device in
            guard device.buffers.allSatisfy({ $0.mapCount <= 0 }) else { return false }
            for buffer in device.buffers { buffer.memory.deallocate() }
            device.buffers = []
            return true
        }
    }

    /// The driver's clock (faster than CLOCK_MONOTONIC with a time scale above 1).
    public func monotonicNanoseconds() -> Int64 { clock.now() }

    /// See ``V4L2Syscalls/poll(_:events:timeoutMilliseconds:)``.
    public func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        let deadline = ParallaxCapture.monotonicNanoseconds() + Int64(max(0, timeoutMilliseconds)) * 1_000_000
        lock.lock(); defer { lock.unlock() }
        while true {
            guard let device = try? live(fd) else { return Int16(POLLERR | POLLHUP) }
            guard device.streaming, !device.queueFailed, !device.waitingForBuffers else { return Int16(POLLERR) }
            device.produce(until: clock.now())
            if device.pendingSpurious > 0 || !device.done.isEmpty { return Int16(POLLIN | POLLRDNORM) }
            let now = ParallaxCapture.monotonicNanoseconds()
            if now >= deadline { return 0 }
            let wake = min(deadline, clock.realTime(of: device.nextDue))
            _ = lock.wait(until: Date(timeIntervalSinceNow: Double(max(0, wake - now)) / 1e9))
        }
    }

    /// See ``V4L2Syscalls/ioctl(_:_:_:)``.
    public func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        lock.lock(); defer { lock.broadcast(); lock.unlock() }
        let device = try live(fd)
        device.conversion = descriptors[fd]?.conversion ?? false
        switch request {
        case CV4L2_VIDIOC_QUERYCAP: device.queryCapabilities(argument.assumingMemoryBound(to: v4l2_capability.self))
        case CV4L2_VIDIOC_ENUM_FMT: try device.enumerateFormat(argument.assumingMemoryBound(to: v4l2_fmtdesc.self))
        case CV4L2_VIDIOC_ENUM_FRAMESIZES: try device.enumerateSize(argument.assumingMemoryBound(to: v4l2_frmsizeenum.self))
        case CV4L2_VIDIOC_ENUM_FRAMEINTERVALS: try device.enumerateInterval(argument.assumingMemoryBound(to: v4l2_frmivalenum.self))
        case CV4L2_VIDIOC_S_FMT, CV4L2_VIDIOC_TRY_FMT:
            try device.setFormat(argument.assumingMemoryBound(to: v4l2_format.self), apply: request == CV4L2_VIDIOC_S_FMT)
        case CV4L2_VIDIOC_G_FMT: device.getFormat(argument.assumingMemoryBound(to: v4l2_format.self))
        case CV4L2_VIDIOC_S_PARM: try device.setParameters(argument.assumingMemoryBound(to: v4l2_streamparm.self))
        case CV4L2_VIDIOC_G_PARM: device.getParameters(argument.assumingMemoryBound(to: v4l2_streamparm.self))
        case CV4L2_VIDIOC_REQBUFS:
            try device.requestBuffers(argument.assumingMemoryBound(to: v4l2_requestbuffers.self), owner: fd, retired: &retired)
        case CV4L2_VIDIOC_QUERYBUF: try device.queryBuffer(argument.assumingMemoryBound(to: v4l2_buffer.self))
        case CV4L2_VIDIOC_QBUF: try device.queueBuffer(argument.assumingMemoryBound(to: v4l2_buffer.self))
        case CV4L2_VIDIOC_DQBUF: try device.dequeueBuffer(argument.assumingMemoryBound(to: v4l2_buffer.self))
        case CV4L2_VIDIOC_STREAMON:
            // The camera is not streaming yet, so the bus's load is everyone else's.
            try device.streamOn(owner: fd, busLoadElsewhere: device.spec.usb.map { load(onBus: $0.bus) } ?? 0)
        case CV4L2_VIDIOC_STREAMOFF: device.stopStreaming()
        case CV4L2_VIDIOC_QUERYCTRL: try device.queryControl(argument.assumingMemoryBound(to: v4l2_queryctrl.self))
        case CV4L2_VIDIOC_G_CTRL: try device.getControl(argument.assumingMemoryBound(to: v4l2_control.self))
        case CV4L2_VIDIOC_S_CTRL: try device.setControl(argument.assumingMemoryBound(to: v4l2_control.self))
        default: throw V4L2Errno(ENOTTY)
        }
    }

    /// Bytes per microframe the streaming cameras on USB bus `bus` reserve (caller holds the lock).
    private func load(onBus bus: Int) -> Int {
        cameras.values.filter { $0.connected && $0.streaming && $0.spec.usb?.bus == bus }.reduce(0) { $0 + $1.reservedPacketBytes }
    }

    /// The device behind a descriptor that is still valid (same plug generation).
    private func live(_ fd: Int32) throws(V4L2Errno) -> Device {
        guard let entry = descriptors[fd] else { throw V4L2Errno(EBADF) }
        guard entry.device.connected, entry.device.generation == entry.generation else { throw .noDevice }
        return entry.device
    }
}

/// The virtual driver's clock: CLOCK_MONOTONIC, optionally running faster from the moment
/// the driver was made.
public struct VirtualClock: Sendable {
    /// How much faster than real time.
    public let scale: Double
    /// CLOCK_MONOTONIC when the driver was made (where both clocks agree).
    public let origin: Int64

    init(scale: Double) {
        self.scale = scale.isFinite && scale > 0 ? scale : 1
        origin = monotonicNanoseconds()
    }

    /// The driver's time now (nanoseconds).
    public func now() -> Int64 {
        scale == 1 ? monotonicNanoseconds() : origin + Int64(Double(monotonicNanoseconds() - origin) * scale)
    }

    /// The CLOCK_MONOTONIC time at which the driver's clock reads `time`.
    func realTime(of time: Int64) -> Int64 {
        guard time != .max else { return .max }
        return scale == 1 ? time : origin + Int64(Double(time - origin) / scale)
    }
}
