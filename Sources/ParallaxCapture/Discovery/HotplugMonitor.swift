import CV4L2
import Foundation
import ParallaxGeometry

/// Announces V4L2 cameras arriving and departing, as udev sees them.
///
/// A libudev monitor on the netlink socket, filtered to the `video4linux` subsystem: the
/// processed events of the udev daemon when one runs (the node then has its permissions),
/// the kernel's own uevents otherwise (containers and minimal systems; `devtmpfs` has made
/// the node before the kernel sends the event). An added node is looked up in sysfs
/// (``V4L2Discovery``) for its identity; a removed one is named from what was known of it.
/// Only capture nodes count (UVC's metadata nodes do not), and each camera is announced
/// once per plug, with the node it has now.
///
/// Reconnect by identity: on `.arrived` with a known `stableID`, open it again with
/// ``V4L2Camera/open(stableID:discovery:syscalls:options:)``; a ``StereoSession``
/// subscribes for its cameras itself.
public final class HotplugMonitor: Sendable {
    /// Where arrived cameras are looked up.
    public let discovery: V4L2Discovery
    private let thread: Locked<CaptureThread?> = Locked(nil)
    private let tracker: Locked<NodeTracker>

    /// A monitor; call ``start(_:)`` to begin watching.
    public init(discovery: V4L2Discovery = V4L2Discovery()) {
        self.discovery = discovery
        tracker = Locked(NodeTracker(discovery: discovery))
    }

    deinit { stop() }

    /// Starts watching; `handler` gets every arrival and departure on the monitor's thread.
    /// The cameras present at the start are the baseline (not reported).
    ///
    /// - Returns: false when no udev monitor can be made here (no netlink socket); nothing
    ///   is then reported.
    @discardableResult
    public func start(_ handler: @escaping @Sendable (HotplugEvent) -> Void) -> Bool {
        stop()
        // Receiving before the baseline is read: nothing arriving after start() returns can
        // slip between the two.
        guard let connection = UdevConnection() else { return false }
        tracker.withLock { $0.rescan() }
        let worker = CaptureThread(name: "parallax.hotplug") { [tracker] thread in
            while !thread.shouldStop {
                guard connection.wait(milliseconds: 100) else { continue }
                while let (action, node) = connection.receive() {
                    for event in tracker.withLock({ $0.apply(action: action, node: node) }) { handler(event) }
                }
            }
        }
        thread.withLock { $0 = worker }
        return true
    }

    /// Stops watching (waits for the monitor's thread, with a deadline).
    public func stop() {
        let worker = thread.withLock { t in defer { t = nil }; return t }
        worker?.stopAndJoin()
    }

    /// Feeds one uevent by hand (`action` as udev names it, `node` the device's name such
    /// as `video2`), as the monitor's thread does for each it receives; returns what it
    /// announces. Tests drive the monitor over a fake sysfs tree with this.
    package func apply(action: String, node: String) -> [HotplugEvent] {
        tracker.withLock { $0.apply(action: action, node: node) }
    }

    /// Reads the baseline again (what ``start(_:)`` does first).
    package func rescan() { tracker.withLock { $0.rescan() } }
}

/// The capture nodes known to be present, kept in step with the uevents.
struct NodeTracker {
    let discovery: V4L2Discovery
    private(set) var known: [String: DiscoveredCamera] = [:]

    init(discovery: V4L2Discovery) { self.discovery = discovery }

    mutating func rescan() {
        known = Dictionary(discovery.cameras().map { ($0.devicePath, $0) }, uniquingKeysWith: { first, _ in first })
    }

    /// The events one uevent on `node` (`video2`) means.
    mutating func apply(action: String, node: String) -> [HotplugEvent] {
        let path = discovery.devRoot + "/" + node
        switch action {
        case "remove":
            return known.removeValue(forKey: path).map { [.departed($0)] } ?? []
        case "add", "change", "bind", "move":
            // A metadata node, or one not ready in sysfs yet, is no camera.
            guard let camera = discovery.cameras().first(where: { $0.devicePath == path }) else { return [] }
            let before = known[path]
            guard before?.identity != camera.identity else { return [] }
            known[path] = camera
            return (before.map { [HotplugEvent.departed($0)] } ?? []) + [.arrived(camera)]
        default:
            return []
        }
    }
}

/// A libudev netlink monitor for `video4linux`: the unsafe C handles, fenced here.
private final class UdevConnection: @unchecked Sendable {
    private let udev: OpaquePointer
    private let monitor: OpaquePointer
    private let fd: Int32

    init?() {
        guard let udev = udev_new() else { return nil }
        // The daemon's processed events when it runs, the kernel's otherwise.
        let source = Self.daemonListens() ? "udev" : "kernel"
        guard let monitor = udev_monitor_new_from_netlink(udev, source) else {
            udev_unref(udev)
            return nil
        }
        guard udev_monitor_filter_add_match_subsystem_devtype(monitor, "video4linux", nil) >= 0,
              udev_monitor_enable_receiving(monitor) >= 0 else {
            udev_monitor_unref(monitor)
            udev_unref(udev)
            return nil
        }
        self.udev = udev
        self.monitor = monitor
        fd = udev_monitor_get_fd(monitor)
    }

    deinit {
        udev_monitor_unref(monitor)
        udev_unref(udev)
    }

    /// Whether a udev daemon listens on its control socket (the socket file alone may be a
    /// leftover, or the host's in a chroot). The socket is root's: for anyone else a
    /// refused permission is the daemon's answer too; only a refused connection (nobody
    /// listening) or no socket means there is none.
    private static func daemonListens() -> Bool {
        let path = "/run/udev/control"
        let fd = socket(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, byte) in bytes.enumerated() { raw[i] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return connected == 0 || errno == EACCES || errno == EPERM
    }

    /// Whether an event is waiting, after up to `milliseconds`.
    func wait(milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, milliseconds) > 0
    }

    /// The next waiting event's action and device name (`video2`), or nil when none waits
    /// (the socket is non-blocking).
    func receive() -> (action: String, node: String)? {
        while let device = udev_monitor_receive_device(monitor) {
            defer { udev_device_unref(device) }
            guard let action = udev_device_get_action(device), let name = udev_device_get_sysname(device) else { continue }
            return (String(cString: action), String(cString: name))
        }
        return nil
    }
}
