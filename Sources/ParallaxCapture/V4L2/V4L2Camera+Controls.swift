import CV4L2
import Foundation

extension V4L2Camera {
    /// The controls Parallax names that this camera has, with their ranges and current values
    /// (QUERYCTRL then G_CTRL for each of ``CameraControlID``).
    public func controls() throws(CaptureError) -> [CameraControl] {
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw .disconnected(device: path) }
        var result: [CameraControl] = []
        for id in CameraControlID.allCases {
            var query = v4l2_queryctrl()
            query.id = id.rawID
            if let error = call(fd, CV4L2_VIDIOC_QUERYCTRL, &query) {
                if error.code == EINVAL { continue }
                throw failure(error, request: "VIDIOC_QUERYCTRL")
            }
            if query.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) != 0 { continue }
            let value = try readControl(fd, id)
            result.append(CameraControl(id: id, name: String(cArray: query.name), minimum: query.minimum,
                                        maximum: query.maximum, step: query.step, defaultValue: query.default_value,
                                        value: value, isBoolean: query.type == V4L2_CTRL_TYPE_BOOLEAN.rawValue))
        }
        return result
    }

    /// The current value of a control (G_CTRL).
    public func value(of control: CameraControlID) throws(CaptureError) -> Int32 {
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw .disconnected(device: path) }
        return try readControl(fd, control)
    }

    /// Sets a control (S_CTRL) and returns the value the driver kept (it may clamp).
    /// Exposure is in 100 µs units; setting it also updates the exposure frames report.
    @discardableResult
    public func set(_ control: CameraControlID, to value: Int32) throws(CaptureError) -> Int32 {
        let kept = try writeControl(control.rawID, value, readBack: true)
        if control == .exposureAbsolute { state.withLock { $0.exposureNanoseconds = Int64(kept) * 100_000 } }
        return kept
    }

    func readControl(_ fd: Int32, _ control: CameraControlID) throws(CaptureError) -> Int32 {
        try readControl(fd, rawID: control.rawID)
    }

    private func readControl(_ fd: Int32, rawID: UInt32) throws(CaptureError) -> Int32 {
        var c = v4l2_control(id: rawID, value: 0)
        try xioctl(fd, CV4L2_VIDIOC_G_CTRL, "VIDIOC_G_CTRL", &c)
        return c.value
    }

    /// S_CTRL on the open descriptor, then (when asked) G_CTRL for the value the driver kept.
    private func writeControl(_ rawID: UInt32, _ value: Int32, readBack: Bool) throws(CaptureError) -> Int32 {
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw .disconnected(device: path) }
        var c = v4l2_control(id: rawID, value: value)
        try xioctl(fd, CV4L2_VIDIOC_S_CTRL, "VIDIOC_S_CTRL", &c)
        return readBack ? try readControl(fd, rawID: rawID) : 0
    }

    /// Every control the driver offers, its own ones included, as QUERYCTRL enumerates them
    /// with `V4L2_CTRL_FLAG_NEXT_CTRL` (control-class headings and disabled controls are
    /// left out). Use it for drivers' private controls, such as the vivid test driver's
    /// fault injection ("Percentage of Dropped Buffers", "Disconnect").
    public func driverControls() throws(CaptureError) -> [DriverControl] {
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw .disconnected(device: path) }
        var result: [DriverControl] = []
        var query = v4l2_queryctrl()
        query.id = CV4L2_CTRL_FLAG_NEXT_CTRL
        while call(fd, CV4L2_VIDIOC_QUERYCTRL, &query) == nil {
            let disabled = query.flags & UInt32(V4L2_CTRL_FLAG_DISABLED) != 0
            if !disabled && query.type != V4L2_CTRL_TYPE_CTRL_CLASS.rawValue {
                result.append(DriverControl(
                    rawID: query.id, name: String(cArray: query.name), minimum: query.minimum, maximum: query.maximum,
                    defaultValue: query.default_value, isButton: query.type == V4L2_CTRL_TYPE_BUTTON.rawValue))
            }
            query.id |= CV4L2_CTRL_FLAG_NEXT_CTRL
            if result.count > 1000 { break }  // a driver that never ends the list
        }
        return result
    }

    /// Sets any control by its V4L2 id (S_CTRL); a button control is pressed by any value.
    /// Returns the value the driver kept (0 for a button, which has none to read).
    @discardableResult
    public func set(driverControl control: DriverControl, to value: Int32) throws(CaptureError) -> Int32 {
        try writeControl(control.rawID, value, readBack: !control.isButton)
    }
}

/// A control as the driver enumerates it (see ``V4L2Camera/driverControls()``).
public struct DriverControl: Hashable, Sendable {
    /// The V4L2 control id.
    public var rawID: UInt32
    /// The driver's name for it.
    public var name: String
    /// The smallest value.
    public var minimum: Int32
    /// The largest value.
    public var maximum: Int32
    /// The driver's default.
    public var defaultValue: Int32
    /// A button: setting it acts once and it holds no value.
    public var isButton: Bool
}
