#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Errors from capture devices. Each names the device (path, folder or
/// simulated name) and says what to do where there is something to do.
public enum CaptureError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The node could not be opened.
    case cannotOpen(device: String, errno: Int32)
    /// The node is not a streaming video capture device (a metadata node, an output device, …).
    case notACaptureDevice(device: String, reason: String)
    /// An ioctl failed with this errno.
    case ioctlFailed(device: String, request: String, errno: Int32)
    /// Mapping a driver buffer failed.
    case mappingFailed(device: String, errno: Int32)
    /// The driver gave fewer buffers than streaming needs.
    case tooFewBuffers(device: String, granted: Int, needed: Int)
    /// The requested format is not offered; `available` lists what is.
    case unsupportedFormat(device: String, requested: CaptureFormat, available: [CaptureFormat])
    /// STREAMON returned ENOSPC: the USB bus cannot carry this format next to the other cameras.
    case insufficientBandwidth(device: String, format: CaptureFormat?)
    /// The device is gone (ENODEV, POLLHUP).
    case disconnected(device: String)
    /// `start` before `configure`, `configure` while streaming, and other misuse at run time.
    case invalidState(device: String, reason: String)
    /// A recorded folder or file that cannot be used.
    case recording(path: String, reason: String)
    /// The simulated rig could not render.
    case simulation(device: String, reason: String)
    /// An MJPEG frame did not decode (reported for the first frame of each kind of failure
    /// in a stream; every such frame is a ``DropReason/corruptFrame`` drop).
    case undecodableFrame(device: String, sequence: UInt64, reason: String)

    /// A readable one-line description.
    public var description: String {
        switch self {
        case .cannotOpen(let d, let e): return "\(d): cannot open (\(ErrnoText.describe(e)))"
        case .notACaptureDevice(let d, let r): return "\(d): not a video capture device: \(r)"
        case .ioctlFailed(let d, let r, let e): return "\(d): \(r) failed (\(ErrnoText.describe(e)))"
        case .mappingFailed(let d, let e): return "\(d): cannot map a driver buffer (\(ErrnoText.describe(e)))"
        case .tooFewBuffers(let d, let g, let n): return "\(d): the driver granted \(g) buffers, streaming needs at least \(n)"
        case .unsupportedFormat(let d, let r, let a):
            let list = a.prefix(12).map(\.description).joined(separator: ", ")
            return "\(d): format \(r) is not offered; available: \(list)\(a.count > 12 ? ", …" : "")"
        case .insufficientBandwidth(let d, let f):
            return "\(d): not enough USB bandwidth to stream\(f.map { " \($0)" } ?? ""); "
                + "use a compressed format (MJPG), a lower resolution or frame rate, or put the cameras on separate USB controllers"
        case .disconnected(let d): return "\(d): device disconnected"
        case .invalidState(let d, let r): return "\(d): \(r)"
        case .recording(let p, let r): return "\(p): \(r)"
        case .simulation(let d, let r): return "\(d): \(r)"
        case .undecodableFrame(let d, let n, let r): return "\(d): frame \(n) did not decode (\(r)); dropped as corrupt_frame"
        }
    }
}

/// errno values as text (internal, so it never clashes with swift-system's `Errno`).
enum ErrnoText {
    /// `"ENODEV: No such device"`-style text for an errno value.
    static func describe(_ code: Int32) -> String {
        let names: [Int32: String] = [
            EPERM: "EPERM", ENOENT: "ENOENT", EINTR: "EINTR", EIO: "EIO", EBADF: "EBADF", EAGAIN: "EAGAIN",
            ENOMEM: "ENOMEM", EACCES: "EACCES", EBUSY: "EBUSY", ENODEV: "ENODEV", EINVAL: "EINVAL",
            ENOSPC: "ENOSPC", ENOTTY: "ENOTTY", EPIPE: "EPIPE", ETIMEDOUT: "ETIMEDOUT",
        ]
        let name = names[code] ?? "errno \(code)"
        return "\(name): \(String(cString: strerror(code)))"
    }
}
