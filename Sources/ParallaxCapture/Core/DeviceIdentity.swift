/// Who a capture device is, in a form that survives unplugging and a change
/// of `/dev/videoN` number.
///
/// `stableID` is the serial number when it is unique among the connected
/// cameras (the way `/dev/v4l/by-id` names them), otherwise the physical USB
/// port path (the way `/dev/v4l/by-path` does); simulated and recorded
/// devices use a descriptive name.
public struct DeviceIdentity: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The identity to reconnect by (serial or port path, see above).
    public var stableID: String
    /// A human-readable name (the V4L2 card name, "simulated left", …).
    public var name: String
    /// The node or folder the device was opened from, if any (`/dev/video0`).
    public var path: String?
    /// Where the camera is plugged in, for USB cameras found through sysfs: bus, port
    /// path, negotiated speed and the packet sizes its video endpoint offers (the
    /// hardware cost of a stereo device is computed from these).
    public var usb: USBLocation?

    /// An identity; `path` is the node or folder, when there is one.
    public init(stableID: String, name: String, path: String? = nil, usb: USBLocation? = nil) {
        self.stableID = stableID
        self.name = name
        self.path = path
        self.usb = usb
    }

    /// A readable one-line description.
    public var description: String {
        if let path { return "\(name) [\(stableID)] at \(path)" }
        return "\(name) [\(stableID)]"
    }

    /// This camera among `cameras` (what discovery lists now), by its stable identity; or,
    /// for a USB camera whose listed identity changed with what else is plugged in (a serial
    /// shared with a camera that came or went), by what the identity rests on: the same
    /// serial and model, or, for a camera known by its port, whatever is at that port (the
    /// caller checks it is the same model). `nil` when it is not there.
    public func lookUp(in cameras: [DiscoveredCamera]) -> DiscoveredCamera? {
        if let exact = cameras.first(where: { $0.identity.stableID == stableID }) { return exact }
        guard let usb else { return nil }
        if stableID == usb.portIdentity { return cameras.first { $0.usb?.portIdentity == stableID } }
        guard let serial = usb.serial, !serial.isEmpty else { return nil }
        return cameras.first { other in
            other.usb?.serial == serial && other.usb?.vendorID == usb.vendorID && other.usb?.productID == usb.productID
        }
    }
}

/// Where a USB camera is plugged in, read from sysfs.
public struct USBLocation: Hashable, Sendable, Codable {
    /// USB bus number (`busnum`). A SuperSpeed port's USB 2 companion is another bus
    /// with its own number, and so its own bandwidth.
    public var bus: Int
    /// Port chain on that bus (`devpath`, e.g. `1.2`: port 2 of the hub on port 1).
    public var portPath: String
    /// Negotiated speed in Mbit/s (`speed`: 1.5, 12, 480 for USB 2 high speed, 5000 and up for SuperSpeed).
    public var speedMbps: Double?
    /// USB vendor id (`idVendor`, hex).
    public var vendorID: String?
    /// USB product id (`idProduct`, hex).
    public var productID: String?
    /// The serial number string, if the camera has one.
    public var serial: String?
    /// The manufacturer string.
    public var manufacturer: String?
    /// The product string.
    public var product: String?
    /// Bytes per (micro)frame that the camera's video streaming alternate settings offer,
    /// ascending (from its `descriptors` in sysfs); empty when unknown.
    public var isochronousPacketSizes: [Int]
    /// The frequency of the camera's own clock, which stamps its payloads (UVC's
    /// `dwClockFrequency`, from its descriptors), in hertz; nil when unknown.
    public var deviceClockHz: Int?

    /// A location; only the bus and port path are required.
    public init(bus: Int, portPath: String, speedMbps: Double? = nil, vendorID: String? = nil, productID: String? = nil,
                serial: String? = nil, manufacturer: String? = nil, product: String? = nil,
                isochronousPacketSizes: [Int] = [], deviceClockHz: Int? = nil) {
        self.bus = bus
        self.portPath = portPath
        self.speedMbps = speedMbps
        self.vendorID = vendorID
        self.productID = productID
        self.serial = serial
        self.manufacturer = manufacturer
        self.product = product
        self.isochronousPacketSizes = isochronousPacketSizes
        self.deviceClockHz = deviceClockHz
    }

    /// The `by-path`-style port identity: `usb-<bus>-<port path>`.
    public var portIdentity: String { "usb-\(bus)-\(portPath)" }
}
