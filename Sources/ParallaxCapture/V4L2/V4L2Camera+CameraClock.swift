import CV4L2
#if canImport(Glibc)
import Glibc
#endif

/// uvcvideo's metadata node streamed beside a camera's video node: per frame, each
/// payload's presentation time and source clock reading with the host time it arrived
/// (`V4L2_META_FMT_UVC`). It gives each frame the start of its exposure on the host's
/// CLOCK_MONOTONIC through a ``CameraClockFit`` of the camera's clock.
///
/// Owned by the capture thread while streaming (no lock: one thread reads it); opened and
/// closed by ``V4L2Camera``'s start and stop.
final class CameraClockStream: @unchecked Sendable {
    let syscalls: any V4L2Syscalls
    let path: String
    private var fd: Int32
    private let mappings: [(address: UnsafeMutableRawPointer, length: Int)]
    private var fit: CameraClockFit
    private var stamps = ExposureStamps()

    /// `V4L2_META_FMT_UVC`.
    static let uvcMetadataFormat = FourCC("UVCH").rawValue

    private init(syscalls: any V4L2Syscalls, path: String, fd: Int32, mappings: [(UnsafeMutableRawPointer, Int)], frequencyHz: Int) {
        self.syscalls = syscalls
        self.path = path
        self.fd = fd
        self.mappings = mappings.map { (address: $0.0, length: $0.1) }
        self.fit = CameraClockFit(frequencyHz: Double(frequencyHz))
    }

    /// Opens and starts the metadata node beside `videoPath`, or nil when there is none,
    /// the clock's frequency is unknown, or the node will not stream UVC metadata (the
    /// camera is then stamped by its driver, as before).
    static func start(besides videoPath: String, syscalls: any V4L2Syscalls, frequencyHz: Int?) -> CameraClockStream? {
        guard let frequencyHz, frequencyHz > 0, let path = syscalls.metadataNode(of: videoPath),
              let fd = try? syscalls.open(path, allowConversion: false) else { return nil }
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_META_CAPTURE.rawValue
        guard syscalls.call(fd, CV4L2_VIDIOC_G_FMT, &format) == nil, format.fmt.meta.dataformat == uvcMetadataFormat else {
            syscalls.close(fd)
            return nil
        }
        var request = v4l2_requestbuffers()
        request.count = 8
        request.type = V4L2_BUF_TYPE_META_CAPTURE.rawValue
        request.memory = V4L2_MEMORY_MMAP.rawValue
        guard syscalls.call(fd, CV4L2_VIDIOC_REQBUFS, &request) == nil, request.count > 0 else {
            syscalls.close(fd)
            return nil
        }
        var mappings: [(UnsafeMutableRawPointer, Int)] = []
        func fail() -> CameraClockStream? {
            for (address, length) in mappings { syscalls.munmap(address, length: length) }
            var release = v4l2_requestbuffers()
            release.type = V4L2_BUF_TYPE_META_CAPTURE.rawValue
            release.memory = V4L2_MEMORY_MMAP.rawValue
            _ = syscalls.call(fd, CV4L2_VIDIOC_REQBUFS, &release)
            syscalls.close(fd)
            return nil
        }
        for index in 0..<request.count {
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_META_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            buffer.index = index
            guard syscalls.call(fd, CV4L2_VIDIOC_QUERYBUF, &buffer) == nil,
                  let address = try? syscalls.mmap(fd, length: Int(buffer.length), offset: Int64(buffer.m.offset)) else { return fail() }
            mappings.append((address, Int(buffer.length)))
            guard syscalls.call(fd, CV4L2_VIDIOC_QBUF, &buffer) == nil else { return fail() }
        }
        var type = Int32(V4L2_BUF_TYPE_META_CAPTURE.rawValue)
        guard syscalls.call(fd, CV4L2_VIDIOC_STREAMON, &type) == nil else { return fail() }
        return CameraClockStream(syscalls: syscalls, path: path, fd: fd, mappings: mappings, frequencyHz: frequencyHz)
    }

    /// The start of exposure (CLOCK_MONOTONIC nanoseconds) of the frame the driver numbered
    /// `sequence` and stamped `driverStamp` (its own raw stamp): from the frame's
    /// presentation time through the fit, or, when its metadata is missing, the driver's
    /// stamp less the recent median lag; nil before the fit has a reading.
    func exposureStart(sequence: UInt32, driverStamp: Int64) -> Int64? {
        drain()
        return stamps.exposureStart(sequence: sequence, driverStamp: driverStamp, fit: fit)
    }

    /// Dequeues every metadata buffer ready, feeds its clock readings to the fit and keeps
    /// its frame's presentation time; gives the buffers back.
    private func drain() {
        guard fd >= 0 else { return }
        while true {
            var buffer = v4l2_buffer()
            buffer.type = V4L2_BUF_TYPE_META_CAPTURE.rawValue
            buffer.memory = V4L2_MEMORY_MMAP.rawValue
            guard syscalls.call(fd, CV4L2_VIDIOC_DQBUF, &buffer) == nil else { return }
            if Int(buffer.index) < mappings.count {
                let mapping = mappings[Int(buffer.index)]
                let bytes = UnsafeRawBufferPointer(start: mapping.address, count: min(Int(buffer.bytesused), mapping.length))
                let entries = UVCMetadataEntry.entries(in: bytes)
                fit.add(readings: entries.compactMap { entry in entry.sourceClock.map { ($0, entry.hostNanoseconds) } })
                if let pts = entries.first(where: { $0.presentationTime != nil })?.presentationTime {
                    stamps.presentationTimes[buffer.sequence] = pts
                }
            }
            _ = syscalls.call(fd, CV4L2_VIDIOC_QBUF, &buffer)
        }
    }

    /// Stops the node and lets it go (idempotent).
    func stop() {
        guard fd >= 0 else { return }
        var type = Int32(V4L2_BUF_TYPE_META_CAPTURE.rawValue)
        _ = syscalls.call(fd, CV4L2_VIDIOC_STREAMOFF, &type)
        for mapping in mappings { syscalls.munmap(mapping.address, length: mapping.length) }
        var release = v4l2_requestbuffers()
        release.type = V4L2_BUF_TYPE_META_CAPTURE.rawValue
        release.memory = V4L2_MEMORY_MMAP.rawValue
        _ = syscalls.call(fd, CV4L2_VIDIOC_REQBUFS, &release)
        syscalls.close(fd)
        fd = -1
    }

    deinit { stop() }
}

/// A frame's start of exposure from its presentation time through the camera clock's fit,
/// or, for a frame whose metadata was lost, from its driver stamp less the recent lag.
struct ExposureStamps {
    /// Presentation times by the driver's frame sequence number, for frames not yet dequeued
    /// (at most the few just ahead of the latest frame).
    var presentationTimes: [UInt32: UInt32] = [:]
    /// The driver's stamp minus the camera clock's start of exposure, for recent frames:
    /// a frame whose metadata was lost is stamped by its driver stamp less their median.
    private(set) var lags: [Int64] = []
    /// How many recent lags the median is taken over (about a second at 30 fps).
    static let lagCount = 31

    /// The start of exposure of the frame numbered `sequence` and stamped `driverStamp`; nil
    /// while neither its metadata nor a recent frame's is there to go by.
    mutating func exposureStart(sequence: UInt32, driverStamp: Int64, fit: CameraClockFit) -> Int64? {
        var start: Int64?
        if let pts = presentationTimes.removeValue(forKey: sequence), let host = fit.hostNanoseconds(ofDeviceClock: pts) {
            start = host
            lags.append(driverStamp - host)
            if lags.count > Self.lagCount { lags.removeFirst() }
        } else if !lags.isEmpty {
            start = driverStamp - lags.sorted()[lags.count / 2]
        }
        // Only metadata of the frames just ahead is kept (there are 8 metadata buffers): not
        // that of frames the video queue lost, nor a stream's before a restart numbered anew.
        presentationTimes = presentationTimes.filter { $0.key &- sequence < 64 }
        return start
    }
}
