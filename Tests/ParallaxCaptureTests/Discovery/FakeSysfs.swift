import Foundation

/// A fake sysfs and /dev in a temporary folder, laid out as the kernel lays
/// out a UVC camera: the class entry links to the node's directory under the
/// USB interface, whose parent USB device holds busnum, devpath, speed,
/// vendor, product and serial.
struct FakeSysfs {
    let root: String
    var sys: String { root + "/sys" }
    var dev: String { root + "/dev" }

    init() throws {
        root = NSTemporaryDirectory() + "parallax-sysfs-\(UUID().uuidString)"
        let fm = FileManager.default
        try fm.createDirectory(atPath: root + "/sys/class/video4linux", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: root + "/sys/bus/usb/drivers/uvcvideo", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: root + "/dev", withIntermediateDirectories: true)
    }

    func remove() { try? FileManager.default.removeItem(atPath: root) }

    /// Adds a USB camera on `bus`-`port` with video nodes `videoNodes` (the first is
    /// the capture node, index 0; the second, if any, its metadata node).
    func addCamera(bus: Int = 1, port: String, serial: String?, name: String = "USB Camera", videoNodes: [Int],
                   createDeviceNodes: Bool = true) throws {
        let fm = FileManager.default
        let usbDevice = sys + "/devices/pci0000:00/0000:00:14.0/usb\(bus)/\(bus)-\(port)"
        let interface = usbDevice + "/\(bus)-\(port):1.0"
        try fm.createDirectory(atPath: interface, withIntermediateDirectories: true)
        func write(_ text: String, _ path: String) throws { try (text + "\n").write(toFile: path, atomically: true, encoding: .utf8) }
        try write("\(bus)", usbDevice + "/busnum")
        try write(port, usbDevice + "/devpath")
        try write("480", usbDevice + "/speed")
        try write("046d", usbDevice + "/idVendor")
        try write("0825", usbDevice + "/idProduct")
        if let serial { try write(serial, usbDevice + "/serial") }
        if !fm.fileExists(atPath: interface + "/driver") {
            try fm.createSymbolicLink(atPath: interface + "/driver", withDestinationPath: sys + "/bus/usb/drivers/uvcvideo")
        }
        for (index, number) in videoNodes.enumerated() {
            try addNode(number, index: index, name: name, under: interface, createDeviceNode: createDeviceNodes)
        }
    }

    /// Adds a platform device (no USB) holding one capture node per name, as vivid lays out
    /// its instances: every node's `device` is the one platform device.
    func addPlatformCameras(device: String, names: [(node: Int, name: String)]) throws {
        let fm = FileManager.default
        let platform = sys + "/devices/platform/\(device)"
        try fm.createDirectory(atPath: platform, withIntermediateDirectories: true)
        for (number, name) in names {
            try addNode(number, index: 0, name: name, under: platform, createDeviceNode: true)
        }
    }

    /// Video node `number` of the device folder `device`: its sysfs entry, class link and
    /// (unless not wanted) its `/dev` node.
    private func addNode(_ number: Int, index: Int, name: String, under device: String, createDeviceNode: Bool) throws {
        let fm = FileManager.default
        func write(_ text: String, _ path: String) throws { try (text + "\n").write(toFile: path, atomically: true, encoding: .utf8) }
        let node = device + "/video4linux/video\(number)"
        try fm.createDirectory(atPath: node, withIntermediateDirectories: true)
        try write(name, node + "/name")
        try write("\(index)", node + "/index")
        try fm.createSymbolicLink(atPath: node + "/device", withDestinationPath: "../..")
        try fm.createSymbolicLink(atPath: sys + "/class/video4linux/video\(number)", withDestinationPath: node)
        if createDeviceNode { try write("", dev + "/video\(number)") }
    }

    /// Removes the `/dev` nodes and class entries of `videoNodes` (an unplug).
    func removeNodes(_ videoNodes: [Int]) throws {
        for number in videoNodes {
            try? FileManager.default.removeItem(atPath: dev + "/video\(number)")
            try? FileManager.default.removeItem(atPath: sys + "/class/video4linux/video\(number)")
        }
    }
}
