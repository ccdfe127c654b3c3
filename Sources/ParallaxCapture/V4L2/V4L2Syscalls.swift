import CV4L2
import ParallaxGeometry

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The system calls the V4L2 backend makes, as one small protocol: the seam
/// between Parallax's V4L2 code and the kernel.
///
/// Like swift-system's mocking layer, each call is outlined once so a test
/// can stand in for the kernel: ``LibV4L2Syscalls`` goes to the kernel
/// through libv4l2, `VirtualUVCDriver` (in ParallaxTestSupport) is an
/// in-process UVC camera with fault injection. Everything above the seam —
/// the ioctl structures, their marshalling, buffer handling, the capture
/// thread — is the same code in both cases.
///
/// Errors are the raw errno values; the camera turns them into ``CaptureError``s
/// that name the device and the request.
public protocol V4L2Syscalls: Sendable {
    /// Opens the node read-write and non-blocking. With `allowConversion`
    /// false, libv4l2's format conversion is off (`V4L2_DISABLE_CONVERSION`)
    /// so native formats stream zero-copy.
    func open(_ path: String, allowConversion: Bool) throws(V4L2Errno) -> Int32
    /// Closes a descriptor from ``open(_:allowConversion:)``.
    func close(_ fd: Int32)
    /// `ioctl(fd, request, argument)`; `argument` points at the request's structure.
    func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno)
    /// Maps `length` bytes of driver buffer memory at `offset` (from QUERYBUF) read-write, shared.
    func mmap(_ fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer
    /// Unmaps a mapping from ``mmap(_:length:offset:)``.
    func munmap(_ address: UnsafeMutableRawPointer, length: Int)
    /// Waits up to `timeoutMilliseconds` for `events` (POLLIN, …) on `fd`;
    /// returns the `revents` (0 on timeout).
    func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16
    /// Now on the clock the driver stamps buffers with: CLOCK_MONOTONIC for the kernel (the
    /// default); a virtual driver whose time runs faster answers with its own clock.
    func monotonicNanoseconds() -> Int64
    /// The capture nodes present now, each with its stable identity (the default reads
    /// sysfs through ``V4L2Discovery``; a virtual driver lists its own cameras). A camera
    /// that was unplugged is found again here by identity, under whatever node it has now.
    func captureNodes() -> [DiscoveredCamera]
    /// Announces cameras arriving and departing, on a thread of the watcher's, until the
    /// returned watch is cancelled (the default: ``HotplugMonitor``); `nil` when nothing can
    /// watch here.
    func watchHotplug(_ handler: @escaping @Sendable (HotplugEvent) -> Void) -> HotplugWatch?
    /// The metadata node beside the video node at `path` (uvcvideo's `V4L2_META_FMT_UVC`
    /// node, with the cameras' own clock readings), or nil (the default reads sysfs through
    /// ``V4L2Discovery/metadataNode(of:)``).
    func metadataNode(of path: String) -> String?
}

extension V4L2Syscalls {
    /// CLOCK_MONOTONIC.
    public func monotonicNanoseconds() -> Int64 { ParallaxCapture.monotonicNanoseconds() }

    /// The capture nodes sysfs lists (``V4L2Discovery/cameras()``).
    public func captureNodes() -> [DiscoveredCamera] { V4L2Discovery().cameras() }

    /// The metadata node sysfs puts beside `path` (``V4L2Discovery/metadataNode(of:)``).
    public func metadataNode(of path: String) -> String? { V4L2Discovery().metadataNode(of: path) }

    /// A ``HotplugMonitor`` on the real `/dev` and `/sys`.
    public func watchHotplug(_ handler: @escaping @Sendable (HotplugEvent) -> Void) -> HotplugWatch? {
        let monitor = HotplugMonitor()
        guard monitor.start(handler) else { return nil }
        return HotplugWatch { monitor.stop() }
    }

    /// ``ioctl(_:_:_:)`` on `value`'s bytes; the errno on failure, nil on success.
    func call<T>(_ fd: Int32, _ request: UInt, _ value: inout T) -> V4L2Errno? {
        withUnsafeMutableBytes(of: &value) { raw -> V4L2Errno? in
            guard let base = raw.baseAddress else { return .invalidArgument }
            do throws(V4L2Errno) { try ioctl(fd, request, base); return nil } catch { return error }
        }
    }
}

/// An errno value from a V4L2 system call (`EIO`, `ENODEV`, `ENOSPC`, …).
public struct V4L2Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The errno value.
    public var code: Int32
    /// The error of an errno value.
    public init(_ code: Int32) { self.code = code }
    /// A readable one-line description.
    public var description: String { ErrnoText.describe(code) }

    /// `EIO`: an I/O error (a USB transfer failed).
    public static let ioError = V4L2Errno(EIO)
    /// `EAGAIN`: nothing ready on a non-blocking descriptor.
    public static let wouldBlock = V4L2Errno(EAGAIN)
    /// `ENODEV`: the device is gone.
    public static let noDevice = V4L2Errno(ENODEV)
    /// `ENOSPC`: no USB bandwidth left (at STREAMON).
    public static let noSpace = V4L2Errno(ENOSPC)
    /// `EINVAL`: an invalid argument, or the end of an enumeration.
    public static let invalidArgument = V4L2Errno(EINVAL)
    /// `EINTR`: interrupted by a signal.
    public static let interrupted = V4L2Errno(EINTR)
    /// `EBUSY`: the resource is in use (buffers still mapped, streaming).
    public static let busy = V4L2Errno(EBUSY)
}

/// The kernel, through libv4l2 (the real conformance of ``V4L2Syscalls``).
///
/// libv4l2 wraps every descriptor it opens; with conversion disabled it
/// passes buffers straight through, so frames stay zero-copy. Its emulated
/// formats (RGB24, BGR24, YUV420) exist only with conversion on, and are
/// then produced by copying.
public struct LibV4L2Syscalls: V4L2Syscalls {
    /// The kernel through libv4l2.
    public init() {}

    /// See ``V4L2Syscalls/open(_:allowConversion:)``.
    public func open(_ path: String, allowConversion: Bool) throws(V4L2Errno) -> Int32 {
        let raw = Glibc.open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC)
        guard raw >= 0 else { throw V4L2Errno(errno) }
        let fd = cv4l2_fd_open(raw, allowConversion ? 0 : CV4L2_DISABLE_CONVERSION)
        guard fd >= 0 else {
            let code = cv4l2_errno()
            _ = Glibc.close(raw)
            throw V4L2Errno(code)
        }
        return fd
    }

    /// See ``V4L2Syscalls/close(_:)``.
    public func close(_ fd: Int32) { _ = cv4l2_close(fd) }

    /// See ``V4L2Syscalls/ioctl(_:_:_:)``.
    public func ioctl(_ fd: Int32, _ request: UInt, _ argument: UnsafeMutableRawPointer) throws(V4L2Errno) {
        guard SystemCall.retryingInterrupts(errorNumber: { cv4l2_errno() }, { cv4l2_ioctl(fd, request, argument) }) < 0 else {
            return
        }
        throw V4L2Errno(cv4l2_errno())
    }

    /// See ``V4L2Syscalls/mmap(_:length:offset:)``.
    public func mmap(_ fd: Int32, length: Int, offset: Int64) throws(V4L2Errno) -> UnsafeMutableRawPointer {
        let address = cv4l2_mmap(nil, length, PROT_READ | PROT_WRITE, MAP_SHARED, fd, offset)
        guard let address, address != UnsafeMutableRawPointer(bitPattern: -1) else { throw V4L2Errno(cv4l2_errno()) }
        return address
    }

    /// See ``V4L2Syscalls/munmap(_:length:)``.
    public func munmap(_ address: UnsafeMutableRawPointer, length: Int) { _ = cv4l2_munmap(address, length) }

    /// See ``V4L2Syscalls/poll(_:events:timeoutMilliseconds:)``.
    public func poll(_ fd: Int32, events: Int16, timeoutMilliseconds: Int32) throws(V4L2Errno) -> Int16 {
        var descriptor = pollfd(fd: fd, events: events, revents: 0)
        let n = SystemCall.retryingInterrupts { Glibc.poll(&descriptor, 1, timeoutMilliseconds) }
        guard n >= 0 else { throw V4L2Errno(errno) }
        return n == 0 ? 0 : descriptor.revents
    }
}
