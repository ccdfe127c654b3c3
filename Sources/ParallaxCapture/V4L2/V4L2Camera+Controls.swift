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
        let fd = state.withLock { $0.fd }
        guard fd >= 0 else { throw .disconnected(device: path) }
        var c = v4l2_control(id: control.rawID, value: value)
        try xioctl(fd, CV4L2_VIDIOC_S_CTRL, "VIDIOC_S_CTRL", &c)
        let kept = try readControl(fd, control)
        if control == .exposureAbsolute { state.withLock { $0.exposureNanoseconds = Int64(kept) * 100_000 } }
        return kept
    }

    func readControl(_ fd: Int32, _ control: CameraControlID) throws(CaptureError) -> Int32 {
        var c = v4l2_control(id: control.rawID, value: 0)
        try xioctl(fd, CV4L2_VIDIOC_G_CTRL, "VIDIOC_G_CTRL", &c)
        return c.value
    }
}
