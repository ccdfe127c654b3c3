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
        // Alone on its device (a rebound device registers its cameras one by one, as the kernel
        // test saw), a camera has the same identity: it never depends on what else is present.
        let single = try FakeSysfs()
        defer { single.remove() }
        try single.addPlatformCameras(device: "vivid.0", names: [(0, "vivid-000-vid-cap")])
        #expect(V4L2Discovery(sysfsRoot: single.sys, devRoot: single.dev).cameras().map(\.identity.stableID)
                == ["platform-vivid.0:vivid-000-vid-cap"])
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

    /// A USB camera's listed identity depends on its neighbours (a serial is used only when no
    /// other camera shares it); the camera is found again all the same, by what its identity
    /// rests on.
    @Test("a camera is looked up by its identity, or by its serial and model, or by its port, whatever discovery lists it as now")
    func lookUpByWhatTheIdentityRestsOn() {
        func listed(_ id: String, node: Int, port: String, serial: String?, product: String = "0825") -> DiscoveredCamera {
            let usb = USBLocation(bus: 1, portPath: port, vendorID: "046d", productID: product, serial: serial)
            return DiscoveredCamera(devicePath: "/dev/video\(node)", name: "cam", driver: "uvcvideo", nodeIndex: 0, usb: usb,
                                    identity: DeviceIdentity(stableID: id, name: "cam", path: "/dev/video\(node)", usb: usb))
        }
        // Known by its serial; now its twin with the same serial is plugged in too, so both are listed by port.
        let bySerial = DeviceIdentity(stableID: "usb-046d:0825-X", name: "cam",
                                      usb: USBLocation(bus: 1, portPath: "2", vendorID: "046d", productID: "0825", serial: "X"))
        let twins = [listed("usb-1-3", node: 0, port: "3", serial: "Y"), listed("usb-1-2", node: 4, port: "2", serial: "X")]
        #expect(bySerial.lookUp(in: twins)?.devicePath == "/dev/video4")
        // Known by its port (it had a twin then); now alone, listed by its serial.
        let byPort = DeviceIdentity(stableID: "usb-1-2", name: "cam",
                                    usb: USBLocation(bus: 1, portPath: "2", vendorID: "046d", productID: "0825", serial: "X"))
        #expect(byPort.lookUp(in: [listed("usb-046d:0825-X", node: 6, port: "2", serial: "X")])?.devicePath == "/dev/video6")
        // Not there: nothing, whatever else is.
        #expect(bySerial.lookUp(in: [listed("usb-1-3", node: 0, port: "3", serial: "Y")]) == nil)
        #expect(DeviceIdentity(stableID: "platform-vivid.0:a", name: "a").lookUp(in: twins) == nil)
    }

    @Test("No video4linux in sysfs means no V4L2 in the kernel")
    func noKernelSupport() {
        let discovery = V4L2Discovery(sysfsRoot: "/nonexistent-sys", devRoot: "/nonexistent-dev")
        #expect(!discovery.kernelHasV4L2)
        #expect(discovery.cameras().isEmpty)
    }

    /// The monitor's thread reads uevents from udev's netlink socket (tested against the
    /// kernel in `make test-kernel`); what it makes of each is tested here, fed by hand over
    /// a fake sysfs tree.
    @Test("Hot-plug: an added capture node is an arrival with its identity, a metadata node nothing, a removal a departure; found again by identity on another node")
    func hotplug() throws {
        let fake = try FakeSysfs()
        defer { fake.remove() }
        try fake.addCamera(port: "2", serial: "KEEP", videoNodes: [0, 1])
        let discovery = V4L2Discovery(sysfsRoot: fake.sys, devRoot: fake.dev)
        let monitor = HotplugMonitor(discovery: discovery)
        monitor.rescan()
        // The baseline is not announced again.
        #expect(monitor.apply(action: "add", node: "video0").isEmpty)
        // Plugged in: the capture node arrives; its metadata node is no camera.
        try fake.addCamera(port: "4", serial: "NEW", videoNodes: [2, 3])
        let arrived = monitor.apply(action: "add", node: "video2") + monitor.apply(action: "add", node: "video3")
        #expect(arrived.map(\.camera.identity.stableID) == ["usb-046d:0825-NEW"], "\(arrived)")
        guard case .arrived(let camera)? = arrived.first else {
            Issue.record("expected an arrival, got \(arrived)")
            return
        }
        #expect(camera.devicePath == fake.dev + "/video2")
        // Unplugged: named from what was known (sysfs has nothing left to read).
        try fake.removeNodes([2, 3])
        let departed = monitor.apply(action: "remove", node: "video3") + monitor.apply(action: "remove", node: "video2")
        guard departed.count == 1, case .departed(let gone) = departed[0] else {
            Issue.record("expected one departure, got \(departed)")
            return
        }
        #expect(gone.identity.stableID == "usb-046d:0825-NEW" && gone.devicePath == fake.dev + "/video2")
        // Replugged into another port and node number: announced with its new node.
        try fake.addCamera(port: "5", serial: "NEW", videoNodes: [6, 7])
        let back = monitor.apply(action: "add", node: "video6")
        #expect(back.map(\.camera.devicePath) == [fake.dev + "/video6"])
        #expect(discovery.camera(withStableID: "usb-046d:0825-NEW")?.devicePath == fake.dev + "/video6")
        // A node taken by another camera without a removal in between: the old one departs first.
        try fake.removeNodes([6, 7])
        try fake.addCamera(port: "6", serial: "OTHER", videoNodes: [6, 7])
        let swapped = monitor.apply(action: "add", node: "video6")
        #expect(swapped.count == 2, "\(swapped)")
        if swapped.count == 2, case .departed = swapped[0], case .arrived(let other) = swapped[1] {
            #expect(other.identity.stableID == "usb-046d:0825-OTHER")
        } else {
            Issue.record("expected a departure then an arrival, got \(swapped)")
        }
        // Opening by identity goes to the new node (through the virtual driver serving that path).
        let driver = VirtualUVCDriver(cameras: [VirtualCameraSpec(path: fake.dev + "/video6")])
        let reopened = try V4L2Camera.open(stableID: "usb-046d:0825-OTHER", discovery: discovery, syscalls: driver)
        #expect(reopened.path == fake.dev + "/video6")
        #expect(reopened.identity.stableID == "usb-046d:0825-OTHER")
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
