import ParallaxGeometry

/// Errors from image buffers, conversions and codecs. Each names the file or
/// the sizes involved so the message can be acted upon.
public enum ImageError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A size that the format cannot hold (odd width for 4:2:2, zero, …).
    case invalidSize(ImageSize, format: PixelFormat, reason: String)
    /// Two images that must have the same size do not.
    case sizeMismatch(what: String, expected: ImageSize, actual: ImageSize)
    /// An image in a format the operation does not accept.
    case unsupportedFormat(PixelFormat, operation: String)
    /// A borrowed view whose stride or byte count is too small for its size.
    case invalidLayout(String)
    /// A file that could not be decoded: corrupt, truncated or of an unknown type.
    case corruptFile(path: String, reason: String)
    /// A file that could not be read or written.
    case fileAccess(path: String, reason: String)
    /// Memory for `what` (`bytes` of it) could not be allocated: a size too large for the machine.
    case outOfMemory(what: String, bytes: Int)

    /// One line naming the file or sizes involved.
    public var description: String {
        switch self {
        case .invalidSize(let s, let f, let r): return "invalid size \(s) for \(f.rawValue): \(r)"
        case .sizeMismatch(let what, let e, let a): return "\(what): expected \(e), got \(a)"
        case .unsupportedFormat(let f, let op): return "\(op) does not support pixel format \(f.rawValue)"
        case .invalidLayout(let m): return "invalid image layout: \(m)"
        case .corruptFile(let p, let r): return "\(p): \(r)"
        case .fileAccess(let p, let r): return "\(p): \(r)"
        case .outOfMemory(let what, let bytes):
            return "cannot allocate \(bytes) bytes for \(what): the machine has not that much memory free; use a smaller size"
        }
    }
}
