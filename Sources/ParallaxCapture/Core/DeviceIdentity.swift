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

    public init(stableID: String, name: String, path: String? = nil) {
        self.stableID = stableID
        self.name = name
        self.path = path
    }

    public var description: String {
        if let path { return "\(name) [\(stableID)] at \(path)" }
        return "\(name) [\(stableID)]"
    }
}
