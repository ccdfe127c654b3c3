#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Whole-file reads and atomic writes on the C library, for the file formats
/// of this module (which avoids Foundation).
public enum FileAccess {
    /// The bytes of the file at `path`.
    ///
    /// - Throws: ``FileAccessError`` naming the path and the system's reason.
    public static func readBytes(atPath path: String) throws(FileAccessError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .cannotOpen(path: path, reason: systemReason()) }
        defer { close(fd) }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .cannotRead(path: path, reason: systemReason())
            }
            if n == 0 { break }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// The file at `path` as UTF-8 text.
    public static func readText(atPath path: String) throws(FileAccessError) -> String {
        String(decoding: try readBytes(atPath: path), as: UTF8.self)
    }

    /// Writes `bytes` to `path` atomically: into a temporary file beside it,
    /// flushed, then renamed over the destination. A failure leaves any
    /// existing file untouched and no partial file behind.
    public static func writeAtomically(_ bytes: [UInt8], toPath path: String) throws(FileAccessError) {
        let temporary = path + ".partial-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .cannotWrite(path: path, reason: systemReason()) }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                let reason = systemReason()
                close(fd)
                unlink(temporary)
                throw .cannotWrite(path: path, reason: reason)
            }
            offset += n
        }
        if fsync(fd) != 0 || close(fd) != 0 {
            let reason = systemReason()
            unlink(temporary)
            throw .cannotWrite(path: path, reason: reason)
        }
        guard rename(temporary, path) == 0 else {
            let reason = systemReason()
            unlink(temporary)
            throw .cannotWrite(path: path, reason: reason)
        }
    }

    /// Writes UTF-8 `text` atomically (see ``writeAtomically(_:toPath:)``).
    public static func writeAtomically(_ text: String, toPath path: String) throws(FileAccessError) {
        try writeAtomically(Array(text.utf8), toPath: path)
    }

    private static func systemReason() -> String {
        String(cString: strerror(errno))
    }
}

/// A file that could not be read or written.
public enum FileAccessError: Error, Hashable, Sendable, CustomStringConvertible {
    case cannotOpen(path: String, reason: String)
    case cannotRead(path: String, reason: String)
    case cannotWrite(path: String, reason: String)

    public var description: String {
        switch self {
        case .cannotOpen(let p, let r): return "\(p): cannot open: \(r)"
        case .cannotRead(let p, let r): return "\(p): cannot read: \(r)"
        case .cannotWrite(let p, let r): return "\(p): cannot write: \(r)"
        }
    }
}
