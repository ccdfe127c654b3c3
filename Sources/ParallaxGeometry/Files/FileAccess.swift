#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Whole-file reads and atomic writes on the C library, for the file formats
/// of this module (which avoids Foundation).
public enum FileAccess {
    /// What a reader expects at a path, for the cap it reads up to and the message when the
    /// input is more than that: a calibration file is kilobytes, an image at most a few
    /// hundred megabytes, so `/dev/zero` or a mistaken multi-gigabyte file is refused with
    /// the cap named, not read until memory runs out.
    public struct InputKind: Sendable {
        /// What it is, in words ("a calibration file").
        public var name: String
        /// The most bytes read.
        public var limitBytes: Int

        /// A kind of input read up to `limitBytes`.
        public init(name: String, limitBytes: Int) {
            self.name = name
            self.limitBytes = limitBytes
        }

        /// Calibration files, corner lists and camera_info: 16 MiB (the largest Parallax
        /// writes are tens of kilobytes).
        public static let calibration = InputKind(name: "a calibration file", limitBytes: 16 << 20)
        /// Encoded images: 1 GiB (a 16-bit 16384×16384 PNG is 512 MiB uncompressed).
        public static let image = InputKind(name: "an image", limitBytes: 1 << 30)
        /// Timestamp lists of recordings: 1 GiB (tens of millions of lines).
        public static let log = InputKind(name: "a timestamp log", limitBytes: 1 << 30)
        /// Anything else: 64 MiB.
        public static let file = InputKind(name: "a file", limitBytes: 64 << 20)
    }

    /// The bytes of the file at `path`, read up to `kind`'s cap. Regular files and pipes
    /// (FIFOs) are read; a folder, a device or a socket is refused before reading.
    ///
    /// - Throws: ``FileAccessError`` naming the path and the system's reason, what the path
    ///   is when it is not a file, or the cap when the input holds more.
    public static func readBytes(atPath path: String, as kind: InputKind = .file) throws(FileAccessError) -> [UInt8] {
        // What the path is, before opening it: opening a device can itself do something (a
        // serial line raising DTR, a camera node powering up).
        var info = stat()
        guard stat(path, &info) == 0 else { throw .cannotOpen(path: path, reason: systemReason()) }
        try refuseNonFiles(info.st_mode, path: path, kind: kind)
        // A FIFO's open waits for its writer, as `cat` would.
        guard let file = FileDescriptor(opening: path, flags: O_RDONLY | O_CLOEXEC) else {
            throw .cannotOpen(path: path, reason: systemReason())
        }
        // Checked again on the descriptor: the path may have been replaced in between.
        guard let status = file.status() else { throw .cannotRead(path: path, reason: systemReason()) }
        info = status
        try refuseNonFiles(info.st_mode, path: path, kind: kind)
        let tooLarge = FileAccessError.cannotRead(
            path: path, reason: "it holds more than \(byteCount(kind.limitBytes)), the most read as \(kind.name) (is it the right file?)")
        if (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) > Int64(kind.limitBytes) { throw tooLarge }
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = chunk.withUnsafeMutableBytes { file.read(into: $0.baseAddress!, count: $0.count) }
            if n < 0 { throw .cannotRead(path: path, reason: systemReason()) }
            if n == 0 { break }
            guard result.count + n <= kind.limitBytes else { throw tooLarge }
            result.append(contentsOf: chunk[0..<n])
        }
        return result
    }

    /// Throws unless `mode` is a regular file's or a FIFO's.
    private static func refuseNonFiles(_ mode: mode_t, path: String, kind: InputKind) throws(FileAccessError) {
        switch mode & S_IFMT {
        case S_IFREG, S_IFIFO: return
        case S_IFDIR: throw .cannotRead(path: path, reason: "it is a folder; \(kind.name) is expected")
        case S_IFCHR, S_IFBLK: throw .cannotRead(path: path, reason: "it is a device, not a file; \(kind.name) is expected")
        default: throw .cannotRead(path: path, reason: "it is not a file (a socket?); \(kind.name) is expected")
        }
    }

    /// The file at `path` as text, read up to `kind`'s cap (see ``readBytes(atPath:as:)``):
    /// UTF-8, with a byte-order mark dropped, or UTF-16 with its byte-order mark (as some
    /// Windows editors save), transcoded (see ``text(decoding:)``).
    public static func readText(atPath path: String, as kind: InputKind = .file) throws(FileAccessError) -> String {
        text(decoding: try readBytes(atPath: path, as: kind))
    }

    /// `bytes` as text: UTF-16 when they start with its byte-order mark (FF FE little-endian,
    /// FE FF big-endian), else UTF-8 without a leading byte-order mark (EF BB BF). Invalid
    /// sequences become U+FFFD, which the parsers then name with their line.
    public static func text(decoding bytes: [UInt8]) -> String {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { return String(decoding: bytes.dropFirst(3), as: UTF8.self) }
        guard bytes.count >= 2, bytes.starts(with: [0xFF, 0xFE]) || bytes.starts(with: [0xFE, 0xFF]) else {
            return String(decoding: bytes, as: UTF8.self)
        }
        let littleEndian = bytes[0] == 0xFF
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var index = 2
        while index + 1 < bytes.count {
            let (first, second) = (UInt16(bytes[index]), UInt16(bytes[index + 1]))
            units.append(littleEndian ? first | second << 8 : first << 8 | second)
            index += 2
        }
        return String(decoding: units, as: UTF16.self)
    }

    /// `bytes` in the largest binary unit that keeps it whole or near it (`16 MiB`).
    static func byteCount(_ bytes: Int) -> String {
        if bytes >= 1 << 30 && bytes % (1 << 30) == 0 { return "\(bytes >> 30) GiB" }
        if bytes >= 1 << 20 && bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        return "\(bytes) bytes"
    }

    /// Writes `bytes` to `path` atomically: into a temporary file beside it,
    /// flushed, then renamed over the destination. A failure leaves any
    /// existing file untouched and no partial file behind.
    public static func writeAtomically(_ bytes: [UInt8], toPath path: String) throws(FileAccessError) {
        // One mechanism for every atomic write: the streaming writer, given everything at once.
        let writer = try AtomicFileWriter(path: path)
        try writer.write(bytes)
        try writer.commit()
    }

    /// The file an output path stands for, checked before anything is written.
    ///
    /// An output written through a symbolic link goes to the link's target (followed to the
    /// end of a chain, relative targets read against the link's folder), and the link stays:
    /// the temporary file is made beside the target and renamed over it. A path that exists
    /// and is not a regular file (a device such as `/dev/null`, a FIFO, a socket, a folder),
    /// directly or through a link, is refused: renaming a file over it would replace it.
    ///
    /// - Throws: ``FileAccessError/cannotWrite(path:reason:)`` naming `path` and what it is.
    public static func outputTarget(for path: String) throws(FileAccessError) -> String {
        var target = path
        for _ in 0..<40 {  // the kernel's own limit on links followed (ELOOP)
            var info = stat()
            guard lstat(target, &info) == 0 else {
                if errno == ENOENT { return target }  // a new file (or a dangling link's target)
                throw .cannotWrite(path: path, reason: systemReason())
            }
            switch info.st_mode & S_IFMT {
            case S_IFREG: return target
            case S_IFLNK:
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let count = readlink(target, &buffer, buffer.count - 1)
                guard count > 0 else { throw .cannotWrite(path: path, reason: systemReason()) }
                let destination = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if destination.hasPrefix("/") {
                    target = destination
                } else if let slash = target.lastIndex(of: "/") {
                    target = String(target[...slash]) + destination
                } else {
                    target = destination
                }
            case S_IFDIR: throw .cannotWrite(path: path, reason: "it is a folder; a file is expected")
            case S_IFCHR, S_IFBLK:
                throw .cannotWrite(path: path, reason: "it is a device, not a file; Parallax writes outputs to files only")
            case S_IFIFO:
                throw .cannotWrite(path: path, reason: "it is a FIFO, not a file; Parallax writes outputs to files only "
                                   + "(give - for standard output where a command offers it)")
            default: throw .cannotWrite(path: path, reason: "it is not a file (a socket?); Parallax writes outputs to files only")
            }
        }
        throw .cannotWrite(path: path, reason: "too many levels of symbolic links")
    }

    /// A new file beside `path` (see ``outputTarget(for:)``) to write before renaming it
    /// over that target: created exclusively (`O_EXCL`), so that a file of the same name the
    /// user had is never truncated; another name is tried when one is taken. The file is
    /// listed among the ``removeTemporaries()`` until it is renamed or removed.
    static func createTemporary(beside path: String) throws(FileAccessError) -> (file: FileDescriptor, path: String, target: String) {
        let target = try outputTarget(for: path)
        if isClosed(target) { throw .cannotWrite(path: path, reason: "the program is ending and removing its folder") }
        for attempt in 0..<100 {
            let temporary = target + ".partial-\(getpid())" + (attempt == 0 ? "" : "-\(attempt)")
            if let file = FileDescriptor(opening: temporary, flags: O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode: 0o644) {
                trackTemporary(temporary)
                return (file, temporary, target)
            }
            if errno != EEXIST { throw .cannotWrite(path: path, reason: systemReason()) }
        }
        throw .cannotWrite(path: path, reason: "no free name for a temporary file beside it")
    }

    /// Temporary files being written now, across the process.
    private static let temporaries = Locked<Set<String>>([])

    /// Lists a temporary file of the caller's own among those ``removeTemporaries()``
    /// removes (until ``forgetTemporary(_:)``).
    public static func trackTemporary(_ path: String) {
        temporaries.withLock { _ = $0.insert(path) }
    }

    /// Forgets a temporary file that was renamed into place or removed.
    public static func forgetTemporary(_ path: String) {
        temporaries.withLock { _ = $0.remove(path) }
    }

    /// Removes every temporary file an atomic write in this process has open: for a program
    /// that is about to exit on a signal (the writes are abandoned; their targets stay as
    /// they were). Returns how many were removed.
    @discardableResult
    public static func removeTemporaries() -> Int {
        let paths = temporaries.withLock { paths in
            defer { paths.removeAll() }
            return paths
        }
        return paths.filter { unlink($0) == 0 }.count
    }

    /// Folders (each ending in "/") in which no file or folder is made any more.
    private static let closedFolders = Locked<[String]>([])

    /// From now on refuses to make files (atomic writes' temporaries) and folders inside
    /// `folder` or the folder itself, across the process: for a program about to remove a
    /// folder of its own on a signal, whose threads would otherwise make it again as they
    /// write (their writes fail instead). The path is compared as given.
    public static func refuseWrites(under folder: String) {
        let closed = folder.hasSuffix("/") ? folder : folder + "/"
        closedFolders.withLock { $0.append(closed) }
    }

    private static func isClosed(_ path: String) -> Bool {
        closedFolders.withLock { folders in folders.contains { (path + "/").hasPrefix($0) } }
    }

    /// Creates the folder at `path` and any missing parents (`mkdir -p`).
    ///
    /// - Throws: ``FileAccessError/cannotCreateFolder(path:reason:)`` naming the folder
    ///   that could not be made and the system's reason.
    public static func createDirectories(atPath path: String) throws(FileAccessError) {
        if isClosed(path) { throw .cannotCreateFolder(path: path, reason: "the program is ending and removing its folder") }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/") where !component.isEmpty {
            prefix += component
            if mkdir(prefix, 0o755) != 0 && errno != EEXIST {
                throw .cannotCreateFolder(path: prefix, reason: systemReason())
            }
            var info = stat()
            if stat(prefix, &info) != 0 || (info.st_mode & S_IFMT) != S_IFDIR {
                throw .cannotCreateFolder(path: prefix, reason: "a file of that name is in the way")
            }
            prefix += "/"
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

/// Writes a file of any size through a buffer, atomically: the bytes go to a temporary
/// file beside the target, which replaces the target only at ``commit()``. A path that is a
/// symbolic link is written through to its target; one that is a device, FIFO, socket or
/// folder is refused at ``init(path:)`` (see ``FileAccess/outputTarget(for:)``). Dropped without
/// a commit (an error on the way), it removes the temporary file and the target is as it
/// was. Writing to standard output (``init(standardOutput:)``) streams instead.
///
/// Full buffers (1 MiB) are written by a background queue, at most two at a time, so
/// that the caller goes on producing while the kernel copies: a write error surfaces at
/// the next call.
public final class AtomicFileWriter {
    /// The target path, or `nil` for standard output.
    public let path: String?
    private let temporary: String?
    /// Where the file lands: `path`, or the target of the symbolic link `path` is.
    private let target: String?
    private let file: FileDescriptor
    private var buffer: [UInt8] = []
    private let flushThreshold = 1 << 20
    private var committed = false
    private let queue = DispatchQueue(label: "parallax.atomic-file-writer")
    private let inFlight = DispatchSemaphore(value: 2)
    private let failure = FailureBox()

    /// Opens a temporary file beside `path`.
    ///
    /// - Throws: ``FileAccessError/cannotWrite(path:reason:)`` when the folder is not
    ///   writable.
    public init(path: String) throws(FileAccessError) {
        self.path = path
        let created = try FileAccess.createTemporary(beside: path)
        (file, temporary, target) = (created.file, created.path, created.target)
        buffer.reserveCapacity(flushThreshold + 4096)
    }

    /// Streams to standard output (there is nothing to rename; ``commit()`` flushes).
    public init(standardOutput: Void) {
        path = nil
        temporary = nil
        target = nil
        file = FileDescriptor(rawValue: 1, owned: false)
        buffer.reserveCapacity(flushThreshold + 4096)
    }

    deinit {
        queue.sync {}
        if let temporary, !committed {
            file.close()
            unlink(temporary)
            FileAccess.forgetTemporary(temporary)
        }
    }

    /// Appends bytes.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(FileAccessError) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= flushThreshold { try flush() }
    }

    /// Appends bytes.
    public func write(_ bytes: [UInt8]) throws(FileAccessError) {
        buffer.append(contentsOf: bytes)
        if buffer.count >= flushThreshold { try flush() }
    }

    /// Appends UTF-8 text.
    public func write(_ text: String) throws(FileAccessError) {
        buffer.append(contentsOf: text.utf8)
        if buffer.count >= flushThreshold { try flush() }
    }

    /// Hands what is buffered to the background queue now, which writes it to the file: a
    /// process killed once that write is done loses none of it (the temporary file keeps it).
    /// Throws an earlier write's error.
    public func flush() throws(FileAccessError) {
        if let error = failure.error { throw error }
        guard !buffer.isEmpty else { return }
        let chunk = buffer
        buffer = []
        buffer.reserveCapacity(flushThreshold + 4096)
        inFlight.wait()
        let (file, name, failure, inFlight) = (self.file, path ?? "standard output", self.failure, self.inFlight)
        queue.async {
            defer { inFlight.signal() }
            guard failure.error == nil else { return }
            if !chunk.withUnsafeBytes({ file.writeAll($0) }) {
                failure.error = .cannotWrite(path: name, reason: String(cString: strerror(errno)))
            }
        }
    }

    /// Writes what is buffered and, for a file, syncs it and renames it over the target.
    public func commit() throws(FileAccessError) {
        try flush()
        queue.sync {}
        if let error = failure.error { throw error }
        guard let temporary, let path, let target else { return }
        defer { FileAccess.forgetTemporary(temporary) }
        if !file.sync() || !file.close() {
            let reason = String(cString: strerror(errno))
            committed = true
            unlink(temporary)
            throw .cannotWrite(path: path, reason: reason)
        }
        committed = true
        guard rename(temporary, target) == 0 else {
            let reason = String(cString: strerror(errno))
            unlink(temporary)
            throw .cannotWrite(path: path, reason: reason)
        }
    }

    /// Stops writing, without a commit, and leaves what was written under the temporary
    /// name, which it returns (`nil` for standard output, or once committed): whatever was
    /// at the target stays as it was, and the caller owns the temporary file from here on
    /// (to finish it, as ParallaxCapture's `MCAPRecovery` does a bag cut short by a full disk).
    public func keepUnfinished() -> String? {
        _ = try? flush()
        queue.sync {}
        guard let temporary, !committed else { return nil }
        committed = true
        _ = file.sync()
        file.close()
        FileAccess.forgetTemporary(temporary)
        return temporary
    }

    /// The first write error of the background queue.
    private final class FailureBox: Sendable {
        private let stored = Locked<FileAccessError?>(nil)
        var error: FileAccessError? {
            get { stored.withLock { $0 } }
            set { stored.withLock { $0 = $0 ?? newValue } }
        }
    }
}

/// A file that could not be read or written.
public enum FileAccessError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The file could not be opened (the system's reason).
    case cannotOpen(path: String, reason: String)
    /// Reading it failed.
    case cannotRead(path: String, reason: String)
    /// Writing, syncing or renaming it failed.
    case cannotWrite(path: String, reason: String)
    /// A folder on the way to it could not be made.
    case cannotCreateFolder(path: String, reason: String)

    /// The file or folder concerned.
    public var path: String {
        switch self {
        case .cannotOpen(let p, _), .cannotRead(let p, _), .cannotWrite(let p, _), .cannotCreateFolder(let p, _): return p
        }
    }

    /// What went wrong, without the path: `cannot open: No such file or directory`.
    public var reason: String {
        switch self {
        case .cannotOpen(_, let r): return "cannot open: \(r)"
        case .cannotRead(_, let r): return "cannot read: \(r)"
        case .cannotWrite(_, let r): return "cannot write: \(r)"
        case .cannotCreateFolder(_, let r): return "cannot create the folder: \(r)"
        }
    }

    /// `<path>: <reason>`.
    public var description: String {
        switch self {
        case .cannotOpen(let p, let r): return "\(p): cannot open: \(r)"
        case .cannotRead(let p, let r): return "\(p): cannot read: \(r)"
        case .cannotWrite(let p, let r): return "\(p): cannot write: \(r)"
        case .cannotCreateFolder(let p, let r): return "\(p): cannot create the folder: \(r)"
        }
    }
}
