import Foundation
import ParallaxCapture
import ParallaxTestSupport
import Testing

@Suite("Discovery and hot-plug")
struct DiscoveryTests {
    @Test("cameras that share one platform device (vivid's instances) get distinct stable identities from their names")
    func platformCamerasSharingADevice() throws {
        let fake = try FakeSysfs()
        defer { fake.remove() }
        try fake.addPlatformCameras(device: "vivid.0", names: [(0, "vivid-000-vid-cap"), (1, "vivid-001-vid-cap")])
        let cameras = V4L2Discovery(sysfsRoot: fake.sys, devRoot: fake.dev).cameras()
        #expect(cameras.map(\.identity.stableID) == ["platform-vivid.0:vivid-000-vid-cap", "platform-vivid.0:vivid-001-vid-cap"])
    }

    @Test("Video nodes are found with name, driver, USB bus, port and speed; metadata nodes are not cameras")
    func findsCameras() throws {
        let fake = try FakeSysfs()
        defer { fake.remove() }
        try fake.addCamera(port: "2", serial: "A1B2C3", name: "HD Webcam", videoNodes: [0, 1])
        let discovery = V4L2Discovery(sysfsRoot: fake.sys, devRoot: fake.dev)
        #expect(discovery.kernelHasV4L2)
        #expect(discovery.allNodes().count == 2)
        let cameras = discovery.cameras()
        #expect(cameras.count == 1)
        let camera = try #require(cameras.first)
        #expect(camera.devicePath == fake.dev + "/video0")
        #expect(camera.name == "HD Webcam")
        #expect(camera.driver == "uvcvideo")
        #expect(camera.usb?.bus == 1)
        #expect(camera.usb?.portPath == "2")
        #expect(camera.usb?.speedMbps == 480)
        #expect(camera.identity.stableID == "usb-046d:0825-A1B2C3")
    }

    @Test("A serial shared by two cameras is not an identity: both fall back to their port paths")
    func duplicateSerialsUsePorts() throws {
        let fake = try FakeSysfs()
        defer { fake.remove() }
        try fake.addCamera(port: "1.1", serial: "0001", videoNodes: [0, 1])
        try fake.addCamera(port: "1.2", serial: "0001", videoNodes: [2, 3])
        try fake.addCamera(port: "3", serial: nil, videoNodes: [4, 5])
        let ids = V4L2Discovery(sysfsRoot: fake.sys, devRoot: fake.dev).cameras().map(\.identity.stableID)
        #expect(ids == ["usb-1-1.1", "usb-1-1.2", "usb-1-3"])
    }

    @Test("No video4linux in sysfs means no V4L2 in the kernel")
    func noKernelSupport() {
        let discovery = V4L2Discovery(sysfsRoot: "/nonexistent-sys", devRoot: "/nonexistent-dev")
        #expect(!discovery.kernelHasV4L2)
        #expect(discovery.cameras().isEmpty)
    }

    @Test("Hot-plug reports a camera arriving and leaving, once per burst; it reopens by identity on another node")
    func hotplug() throws {
        let fake = try FakeSysfs()
        defer { fake.remove() }
        try fake.addCamera(port: "2", serial: "KEEP", videoNodes: [0, 1])
        let discovery = V4L2Discovery(sysfsRoot: fake.sys, devRoot: fake.dev)
        let monitor = HotplugMonitor(discovery: discovery, debounceNanoseconds: 100_000_000)
        let log = EventLog()
        monitor.start { log.add($0) }
        defer { monitor.stop() }
        // Plug in: two nodes appear (a burst), one arrival is reported.
        try fake.addCamera(port: "4", serial: "NEW", videoNodes: [2, 3])
        #expect(log.wait(count: 1, timeoutSeconds: 5))
        guard case .arrived(let camera)? = log.events.first else {
            Issue.record("expected an arrival, got \(log.events)")
            return
        }
        #expect(camera.identity.stableID == "usb-046d:0825-NEW")
        // Unplug.
        try fake.removeNodes([2, 3])
        #expect(log.wait(count: 2, timeoutSeconds: 5))
        // Events come in order: a second arrival for the burst would sit before the departure.
        #expect(log.events.count == 2, "\(log.events)")
        guard case .left(let gone)? = log.events.last else {
            Issue.record("expected a departure, got \(log.events)")
            return
        }
        #expect(gone.identity.stableID == "usb-046d:0825-NEW")
        // Replugged into another port and node number: found again by its identity.
        try fake.addCamera(port: "5", serial: "NEW", videoNodes: [6, 7])
        #expect(log.wait(count: 3, timeoutSeconds: 5))
        #expect(discovery.camera(withStableID: "usb-046d:0825-NEW")?.devicePath == fake.dev + "/video6")
        // Opening by identity goes to the new node (through the virtual driver serving that path).
        let driver = VirtualUVCDriver(cameras: [VirtualCameraSpec(path: fake.dev + "/video6")])
        let reopened = try V4L2Camera.open(stableID: "usb-046d:0825-NEW", discovery: discovery, syscalls: driver)
        #expect(reopened.path == fake.dev + "/video6")
        #expect(reopened.identity.stableID == "usb-046d:0825-NEW")
    }
}

/// Hot-plug events with a bounded wait.
final class EventLog: @unchecked Sendable {
    private let condition = NSCondition()
    private var list: [HotplugEvent] = []
    func add(_ event: HotplugEvent) { condition.lock(); list.append(event); condition.broadcast(); condition.unlock() }
    var events: [HotplugEvent] { condition.lock(); defer { condition.unlock() }; return list }
    func wait(count: Int, timeoutSeconds: Double) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        condition.lock(); defer { condition.unlock() }
        while list.count < count { if !condition.wait(until: deadline) { return list.count >= count } }
        return true
    }
}
