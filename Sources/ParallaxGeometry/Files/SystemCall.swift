#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The package's one rule for system calls a signal can interrupt.
package enum SystemCall {
    /// Calls `call` again for as long as it fails with `EINTR` (a signal arrived before it
    /// did anything, as SIGINT does while a recording writes); returns its first other result,
    /// with the error number (`errorNumber`, `errno` unless the call keeps its own, as
    /// libv4l2 does) set when that result is negative.
    @inlinable
    package static func retryingInterrupts<Result: BinaryInteger>(errorNumber: () -> Int32 = { errno },
                                                                 _ call: () -> Result) -> Result {
        while true {
            let result = call()
            if result >= 0 || errorNumber() != EINTR { return result }
        }
    }
}

/// An open file descriptor, owned: closed once, by ``close()`` or when the last reference
/// goes. Its calls retry what a signal interrupts (``SystemCall/retryingInterrupts(errorNumber:_:)``)
/// and say failure by their result, with `errno` set, as the system calls do.
///
/// The files the package opens itself travel as this type (recordings' CSVs, timestamp logs,
/// whole-file reads, atomic writes); the V4L2 seam keeps raw descriptors, as the system calls
/// it mirrors take them (a test's virtual driver stands behind the same numbers).
package final class FileDescriptor: @unchecked Sendable {
    /// The descriptor's number; not to be closed by the caller.
    package let rawValue: Int32
    /// Whether this value closes the descriptor (standard output is borrowed).
    private let owned: Bool
    private let isClosed = Locked(false)

    /// Opens `path` with `flags` (and `mode` for a file `O_CREAT` makes); `nil` with
    /// `errno` set when it cannot be opened.
    package init?(opening path: String, flags: Int32, mode: mode_t = 0) {
        let descriptor = SystemCall.retryingInterrupts { open(path, flags, mode) }
        guard descriptor >= 0 else { return nil }
        rawValue = descriptor
        owned = true
    }

    /// A descriptor opened elsewhere, owned from here on (`owned`), or borrowed (standard
    /// output: never closed by this value).
    package init(rawValue: Int32, owned: Bool) {
        self.rawValue = rawValue
        self.owned = owned
    }

    deinit { close() }

    /// Closes the descriptor (once; later calls, and borrowed descriptors, do nothing and
    /// return true); false when `close(2)` failed, with `errno` set.
    @discardableResult
    package func close() -> Bool {
        let first = isClosed.withLock { closed in
            defer { closed = true }
            return !closed
        }
        guard first && owned else { return true }
        #if canImport(Glibc)
        return Glibc.close(rawValue) == 0
        #elseif canImport(Musl)
        return Musl.close(rawValue) == 0
        #else
        return Darwin.close(rawValue) == 0
        #endif
    }

    /// Reads up to `count` bytes into `buffer`: the bytes read (0 at the end), or −1.
    package func read(into buffer: UnsafeMutableRawPointer, count: Int) -> Int {
        SystemCall.retryingInterrupts { systemRead(rawValue, buffer, count) }
    }

    /// Writes all of `bytes` (as many `write(2)` calls as it takes); false on a failure.
    package func writeAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let n = SystemCall.retryingInterrupts { systemWrite(rawValue, base + offset, bytes.count - offset) }
            guard n >= 0 else { return false }
            offset += n
        }
        return true
    }

    /// Flushes what was written to the disk (`fsync(2)`); false on a failure.
    package func sync() -> Bool { SystemCall.retryingInterrupts { fsync(rawValue) } == 0 }

    /// The file's status (`fstat(2)`), or `nil` with `errno` set.
    package func status() -> stat? {
        var info = stat()
        return fstat(rawValue, &info) == 0 ? info : nil
    }
}

/// `read(2)` and `write(2)`, named apart from the descriptor's own methods.
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer, _ count: Int) -> Int {
    read(descriptor, buffer, count)
}

private func systemWrite(_ descriptor: Int32, _ bytes: UnsafeRawPointer, _ count: Int) -> Int {
    write(descriptor, bytes, count)
}
