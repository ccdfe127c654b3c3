import ParallaxGeometry
import Foundation

/// A camera arriving or leaving.
public enum HotplugEvent: Hashable, Sendable {
    /// A camera whose identity was not present before.
    case arrived(DiscoveredCamera)
    /// A camera that is no longer present.
    case left(DiscoveredCamera)
}

/// Notices cameras arriving and leaving, by watching the video nodes.
///
/// Mechanism: inotify on the device directory (`/dev`) for `video*` nodes
/// being created, removed or having their attributes changed, then a
/// re-scan of sysfs (``V4L2Discovery``) compared with the previous scan by
/// stable identity. Chosen over a libudev monitor because it needs no
/// library or running udev daemon (containers and minimal systems often
/// have neither), and a node in `/dev` is exactly what can be opened. A
/// plug-in produces a burst (the node, its metadata sibling, udev's
/// permission changes and by-id links), so events are *debounced*: the scan
/// runs once no change has been seen for ``debounceNanoseconds``. Where
/// inotify is unavailable the monitor re-scans every ``debounceNanoseconds`` × 4.
///
/// Reconnect by identity: on `.arrived` with a known `stableID`, open it
/// again with ``V4L2Camera/open(stableID:discovery:syscalls:options:)``.
public final class HotplugMonitor: Sendable {
    /// Where cameras are looked for.
    public let discovery: V4L2Discovery
    /// Quiet time before a burst of changes is scanned.
    public let debounceNanoseconds: Int64
    private let thread: Locked<CaptureThread?> = Locked(nil)

    /// A monitor; call ``start(_:)`` to begin watching.
    public init(discovery: V4L2Discovery = V4L2Discovery(), debounceNanoseconds: Int64 = 250_000_000) {
        self.discovery = discovery
        self.debounceNanoseconds = debounceNanoseconds
    }

    deinit { stop() }

    /// Starts watching; `handler` gets every arrival and departure on the monitor's thread.
    /// The cameras present at the start are the baseline (not reported).
    public func start(_ handler: @escaping @Sendable (HotplugEvent) -> Void) {
        stop()
        let discovery = self.discovery, debounce = debounceNanoseconds
        let devRoot = discovery.devRoot
        // The watch is in place before the baseline scan, so nothing arriving after
        // start() returns can slip between the two.
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        let watch = fd >= 0 ? inotify_add_watch(fd, devRoot, UInt32(IN_CREATE | IN_DELETE | IN_ATTRIB | IN_MOVED_TO | IN_MOVED_FROM)) : -1
        let baseline = Dictionary(discovery.cameras().map { ($0.identity.stableID, $0) }, uniquingKeysWith: { a, _ in a })
        let worker = CaptureThread(name: "parallax.hotplug") { thread in
            var known = baseline
            defer { if fd >= 0 { close(fd) } }
            var pendingSince: Int64?
            var lastChange: Int64 = 0
            var buffer = [UInt8](repeating: 0, count: 4096)
            while !thread.shouldStop {
                if fd >= 0 && watch >= 0 {
                    var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                    if poll(&p, 1, 50) > 0 {
                        let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                        if n > 0 && Self.mentionsVideoNode(buffer, count: n) {
                            lastChange = monotonicNanoseconds()
                            if pendingSince == nil { pendingSince = lastChange }
                        }
                    }
                } else {
                    usleep(50_000)
                    if pendingSince == nil && monotonicNanoseconds() - lastChange > 4 * debounce {
                        lastChange = monotonicNanoseconds()
                        pendingSince = lastChange
                    }
                }
                guard pendingSince != nil, monotonicNanoseconds() - lastChange >= debounce else { continue }
                pendingSince = nil
                let now = Dictionary(discovery.cameras().map { ($0.identity.stableID, $0) }, uniquingKeysWith: { a, _ in a })
                for (id, camera) in known where now[id] == nil { handler(.left(camera)) }
                for (id, camera) in now where known[id] == nil { handler(.arrived(camera)) }
                known = now
            }
        }
        thread.withLock { $0 = worker }
    }

    /// Stops watching (waits for the monitor's thread, with a deadline).
    public func stop() {
        let worker = thread.withLock { t in defer { t = nil }; return t }
        worker?.stopAndJoin()
    }

    /// True when the inotify records in `buffer` name a `video*` entry.
    private static func mentionsVideoNode(_ buffer: [UInt8], count: Int) -> Bool {
        var offset = 0
        let header = MemoryLayout<inotify_event>.size
        while offset + header <= count {
            let length = buffer.withUnsafeBytes { Int($0.load(fromByteOffset: offset + 12, as: UInt32.self)) }
            let nameStart = offset + header
            let nameEnd = min(nameStart + length, count)
            let name = String(decoding: buffer[nameStart..<nameEnd].prefix(while: { $0 != 0 }), as: UTF8.self)
            if name.hasPrefix("video") { return true }
            offset = nameEnd
        }
        return false
    }
}
