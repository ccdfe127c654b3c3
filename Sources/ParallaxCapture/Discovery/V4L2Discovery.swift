import Foundation

/// A video node found in sysfs.
public struct DiscoveredCamera: Hashable, Sendable, Codable {
    /// The device node (`/dev/video0`).
    public var devicePath: String
    /// The sysfs name (the card name, as the driver reports it).
    public var name: String
    /// The kernel driver (`uvcvideo`), when sysfs links one.
    public var driver: String?
    /// The node's index within its device (UVC: 0 is the video node, 1 the metadata node).
    public var nodeIndex: Int
    /// USB details, for USB cameras.
    public var usb: USBLocation?
    /// The stable identity (serial when unique, else port path; see ``DeviceIdentity``).
    public var identity: DeviceIdentity

    /// A node as discovery lists it (a virtual driver lists its cameras with this).
    public init(devicePath: String, name: String, driver: String?, nodeIndex: Int, usb: USBLocation?,
                identity: DeviceIdentity) {
        self.devicePath = devicePath
        self.name = name
        self.driver = driver
        self.nodeIndex = nodeIndex
        self.usb = usb
        self.identity = identity
    }
}

/// Finds V4L2 video nodes through sysfs (`/sys/class/video4linux`), without
/// opening them.
///
/// The roots are parameters so tests can point them at a fake tree. Only a
/// device's first node (index 0) is listed by ``cameras()``: UVC drivers add a
/// metadata node beside each video node, and that one cannot stream images.
public struct V4L2Discovery: Sendable {
    /// Where sysfs is mounted (`/sys`).
    public var sysfsRoot: String
    /// Where device nodes live (`/dev`).
    public var devRoot: String

    /// Discovery under the given roots (the real ones by default).
    public init(sysfsRoot: String = "/sys", devRoot: String = "/dev") {
        self.sysfsRoot = sysfsRoot
        self.devRoot = devRoot
    }

    /// True when the kernel has video4linux at all (`/sys/class/video4linux` exists).
    public var kernelHasV4L2: Bool {
        FileManager.default.fileExists(atPath: sysfsRoot + "/class/video4linux")
    }

    /// Every video node, including metadata nodes, sorted by device path.
    public func allNodes() -> [DiscoveredCamera] {
        let classDir = sysfsRoot + "/class/video4linux"
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: classDir) else { return [] }
        var found: [DiscoveredCamera] = []
        for entry in entries where entry.hasPrefix("video") {
            let node = classDir + "/" + entry
            let devicePath = devRoot + "/" + entry
            guard FileManager.default.fileExists(atPath: devicePath) else { continue }
            let name = Self.read(node + "/name") ?? entry
            let index = Self.read(node + "/index").flatMap(Int.init) ?? 0
            let deviceDir = Self.resolve(node + "/device")
            let driver = deviceDir.flatMap { Self.resolve($0 + "/driver") }.map { ($0 as NSString).lastPathComponent }
            let usb = deviceDir.flatMap(Self.usbLocation(from:))
            let fallback = deviceDir.map { "platform-" + ($0 as NSString).lastPathComponent } ?? entry
            found.append(DiscoveredCamera(devicePath: devicePath, name: name, driver: driver, nodeIndex: index, usb: usb,
                                          identity: DeviceIdentity(stableID: usb?.portIdentity ?? fallback, name: name,
                                                                   path: devicePath, usb: usb)))
        }
        found = Self.identified(found)
        // One platform device can hold several cameras (vivid's instances all hang off
        // vivid.0): the node's name tells them apart, and stays put across reboots. Always
        // added, not only when another camera shares the device: an identity must not depend
        // on what else is present (a rebound device registers its cameras one by one).
        for i in found.indices where found[i].usb == nil {
            found[i].identity.stableID += ":" + found[i].name.replacingOccurrences(of: " ", with: "_")
        }
        return found.sorted { Self.nodeNumber($0.devicePath) < Self.nodeNumber($1.devicePath) }
    }

    /// `nodes` with their stable identities settled: a USB camera is
    /// `usb-VENDOR:PRODUCT-SERIAL` when no other camera shares its serial (cheap cameras
    /// often report the same serial, or none), otherwise its port (`usb-BUS-PORTPATH`, as
    /// listed). The one rule for every list of cameras (sysfs's here, a virtual driver's).
    package static func identified(_ nodes: [DiscoveredCamera]) -> [DiscoveredCamera] {
        var found = nodes
        let serials = found.filter { $0.nodeIndex == 0 }.compactMap { $0.usb?.serial }.filter { !$0.isEmpty }
        for i in found.indices {
            if let serial = found[i].usb?.serial, !serial.isEmpty, serials.filter({ $0 == serial }).count == 1 {
                let vendor = found[i].usb?.vendorID ?? "", product = found[i].usb?.productID ?? ""
                found[i].identity.stableID = "usb-\(vendor):\(product)-\(serial)"
            }
        }
        return found
    }

    /// The metadata node (index 1) of the device whose video node is `devicePath`: the
    /// node whose sysfs `device` link leads to the same interface; nil when there is none.
    public func metadataNode(of devicePath: String) -> String? {
        let classDir = sysfsRoot + "/class/video4linux"
        let name = (devicePath as NSString).lastPathComponent
        guard let device = Self.resolve(classDir + "/" + name + "/device"),
              let entries = try? FileManager.default.contentsOfDirectory(atPath: classDir) else { return nil }
        return entries.sorted().first { entry in
            entry != name && Self.read(classDir + "/" + entry + "/index") == "1"
                && Self.resolve(classDir + "/" + entry + "/device") == device
        }.map { devRoot + "/" + $0 }
    }

    /// The capture nodes (index 0 of each device), sorted by device path.
    public func cameras() -> [DiscoveredCamera] { allNodes().filter { $0.nodeIndex == 0 } }

    /// The camera with this stable identity, wherever it is plugged in now.
    public func camera(withStableID id: String) -> DiscoveredCamera? { cameras().first { $0.identity.stableID == id } }

    private static func nodeNumber(_ path: String) -> Int {
        Int(path.reversed().prefix(while: \.isNumber).reversed().map(String.init).joined()) ?? Int.max
    }

    static func read(_ path: String) -> String? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func resolve(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Walks up from the interface directory to the USB device directory (the one with `busnum` and `devpath`).
    static func usbLocation(from deviceDir: String) -> USBLocation? {
        var dir = deviceDir
        for _ in 0..<4 {
            if let bus = read(dir + "/busnum").flatMap(Int.init), let port = read(dir + "/devpath") {
                let descriptors = FileManager.default.contents(atPath: dir + "/descriptors").map { [UInt8]($0) }
                return USBLocation(bus: bus, portPath: port, speedMbps: read(dir + "/speed").flatMap(Double.init),
                                   vendorID: read(dir + "/idVendor"), productID: read(dir + "/idProduct"),
                                   serial: read(dir + "/serial"), manufacturer: read(dir + "/manufacturer"),
                                   product: read(dir + "/product"),
                                   isochronousPacketSizes: descriptors.map(USBDescriptors.videoStreamingPacketSizes) ?? [],
                                   deviceClockHz: descriptors.flatMap(USBDescriptors.videoClockFrequency))
            }
            dir = (dir as NSString).deletingLastPathComponent
            if dir == "/" || dir.isEmpty { break }
        }
        return nil
    }
}

extension V4L2Camera {
    /// Opens the camera with this stable identity wherever it is plugged in now
    /// (reconnecting after a replug that gave it another `/dev/videoN`).
    ///
    /// - Throws: ``CaptureError/cannotOpen(device:errno:)`` (ENOENT) when no such camera is present.
    public static func open(stableID: String, discovery: V4L2Discovery = V4L2Discovery(),
                            syscalls: any V4L2Syscalls = LibV4L2Syscalls(), options: Options = Options()) throws(CaptureError) -> V4L2Camera {
        guard let found = discovery.camera(withStableID: stableID) else { throw .cannotOpen(device: stableID, errno: ENOENT) }
        return try V4L2Camera(path: found.devicePath, syscalls: syscalls, options: options, stableID: stableID, usb: found.usb)
    }
}
