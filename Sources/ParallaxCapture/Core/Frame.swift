import ParallaxGeometry
import ParallaxImage

/// Where a frame's timestamp was taken, so that timestamps of cameras with different
/// exposure times can be moved to the middle of the exposure before they are compared.
///
/// V4L2 reports it per buffer (`V4L2_BUF_FLAG_TSTAMP_SRC_EOF` / `_SOE`). A ``Frame`` is
/// already on mid-exposure; ``Frame/timestampSource`` says where the driver took it.
public enum TimestampSource: String, Hashable, Sendable {
    /// At the start of exposure (`V4L2_BUF_FLAG_TSTAMP_SRC_SOE`): mid-exposure is
    /// `timestamp + exposure / 2`.
    case startOfExposure
    /// When the last pixel arrived (`V4L2_BUF_FLAG_TSTAMP_SRC_EOF`, UVC's usual case):
    /// mid-exposure is `timestamp − exposure / 2` (the sensor's read-out time is not
    /// reported by V4L2, so only the exposure half is corrected).
    case endOfFrame
    /// Already the middle of exposure (simulated and recorded devices, and every ``Frame``).
    case midExposure
    /// The start of exposure on the camera's own clock (UVC's presentation time), mapped
    /// onto CLOCK_MONOTONIC by fitting the camera's clock to the host's from uvcvideo's
    /// metadata node (``CameraClockFit``): free of the bus's and the host's delays, so two
    /// webcams pair far tighter than by their arrival. Corrected as ``startOfExposure``.
    case cameraClock
    /// When the frame was dequeued: the driver's own stamps were not on CLOCK_MONOTONIC (by
    /// their flag, or far ahead of it, as under vivid's "Wrap Timestamp"). Corrected as
    /// ``endOfFrame``; less exact by the driver's and the capture thread's latency.
    case arrival

    /// The mid-exposure timestamp (nanoseconds), or `timestamp` unchanged when the exposure
    /// is unknown, zero or negative.
    @inlinable
    public func midExposure(timestampNanoseconds timestamp: Int64, exposureNanoseconds exposure: Int64?) -> Int64 {
        guard let exposure, exposure > 0 else { return timestamp }
        switch self {
        case .endOfFrame, .arrival: return timestamp &- exposure / 2
        case .startOfExposure, .cameraClock: return timestamp &+ exposure / 2
        case .midExposure: return timestamp
        }
    }
}

/// The bytes of a frame as the device delivered them. A payload read from a ``Frame``
/// keeps the frame (and so its driver buffer) alive while it or a copy of it exists, as an
/// `ImageView` does. For compressed formats (MJPEG) this is the only view of the data.
public struct FramePayload: @unchecked Sendable {
    /// First byte.
    public let baseAddress: UnsafeRawPointer
    /// Bytes used by this frame (V4L2 `bytesused`).
    public let count: Int
    /// What keeps the bytes alive (the frame), or `nil` for memory its maker manages.
    public let owner: (any AnyObject & Sendable)?

    /// `count` bytes from `baseAddress`, kept alive by `owner` when one is given.
    public init(baseAddress: UnsafeRawPointer, count: Int, owner: (any AnyObject & Sendable)? = nil) {
        self.baseAddress = baseAddress
        self.count = count
        self.owner = owner
    }

    /// The same bytes, holding `owner` for as long as this payload or a copy of it exists, in
    /// place of the owner it had (which `owner` must keep alive; see ``ImageView``'s).
    package func keepingAlive(_ owner: any AnyObject & Sendable) -> FramePayload {
        FramePayload(baseAddress: baseAddress, count: count, owner: owner)
    }

    /// The bytes as a buffer pointer (valid while this payload is alive).
    public var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: baseAddress, count: count) }
}

/// One captured image and what is known about it.
///
/// A frame *borrows* its pixels: for a V4L2 camera they are the driver's
/// mapped buffer itself, for the simulated rig a shared rendered image. The
/// buffer goes back to the driver when the last reference to the frame goes
/// away, and the views it hands out (``image``, ``payload``) are such references:
/// a view kept after the frame was dropped still reads this frame's pixels, never a
/// buffer the driver refilled. Holding frames or their views too long starves the
/// camera; that shows up as drop events, never as a hang. Copy the pixels
/// (``copyImage()``) to keep them longer.
public final class Frame: @unchecked Sendable {
    /// The pixels: for uncompressed formats the driver's own, for MJPEG frames that a
    /// ``StereoDevice`` decoded the decoded image (see ``MJPEGDecoding``); `nil` for a
    /// compressed frame nobody decoded (see ``payload``). The view keeps this frame alive.
    public var image: ImageView? { (decoded?.view ?? delivered)?.keepingAlive(self) }
    /// The pixels as the device delivered them.
    private let delivered: ImageView?
    /// A decoded image and the pooled buffer it lives in, set once by the decoding device
    /// before anyone else sees the frame (so reading it needs no lock), given back at deinit.
    private var decoded: (view: ImageView, pool: DecodedImagePool, memory: DecodedImagePool.Memory)?
    /// The raw bytes as delivered; the payload keeps this frame alive.
    public var payload: FramePayload { deliveredPayload.keepingAlive(self) }
    private let deliveredPayload: FramePayload
    /// The format the device was streaming.
    public let format: CaptureFormat
    /// When the frame was exposed: nanoseconds on CLOCK_MONOTONIC, normalised
    /// to the middle of exposure when the exposure time and timestamp source allow it.
    public let timestampNanoseconds: Int64
    /// Where the driver took its timestamp (before normalisation).
    public let timestampSource: TimestampSource
    /// The device's frame counter (V4L2 `sequence`); gaps mean frames were lost.
    public let sequence: UInt64
    /// The device that captured it.
    public let source: DeviceIdentity
    /// The exposure time in nanoseconds, when the device reports it.
    public let exposureNanoseconds: Int64?
    /// The camera model for the active format, when a calibration is attached to the device.
    public let camera: CameraModel?
    /// What gives the memory back, once, when the frame is freed.
    private let release: Release

    /// How a frame gives its memory back: a closure its maker passed, or a driver buffer
    /// handed to its owner by index, which costs no allocation (a closure capturing the
    /// owner and the index would be one more per frame; ``V4L2Camera`` frames use this).
    private enum Release {
        case closure(@Sendable () -> Void)
        case buffer(index: UInt32, owner: any FrameBufferOwner)
    }

    /// A frame over memory that `release` gives back.
    ///
    /// - Parameters:
    ///   - image: the pixels as the device delivered them, valid until `release` runs; `nil` for
    ///     a compressed (MJPEG) frame. ``image`` hands this view out holding the frame.
    ///   - payload: the bytes as delivered (for a V4L2 buffer, its `bytesused`), valid until
    ///     `release` runs; ``payload`` hands them out holding the frame.
    ///   - format: the format the device was streaming.
    ///   - timestampNanoseconds: when the frame was exposed, in nanoseconds on CLOCK_MONOTONIC,
    ///     already moved to the middle of exposure where possible
    ///     (``TimestampSource/midExposure(timestampNanoseconds:exposureNanoseconds:)``); stored as given.
    ///   - timestampSource: where the driver took its timestamp, before that correction.
    ///   - sequence: the device's frame counter (V4L2 `sequence`); gaps mean frames were lost.
    ///   - source: the device that captured the frame.
    ///   - exposureNanoseconds: the exposure time in nanoseconds; `nil` when the device does not report it.
    ///   - camera: the camera model for the active format, when a calibration is attached; `nil` otherwise.
    ///   - release: called exactly once, from `deinit`, on whichever thread drops the last reference.
    public convenience init(image: ImageView?, payload: FramePayload, format: CaptureFormat, timestampNanoseconds: Int64,
                            timestampSource: TimestampSource, sequence: UInt64, source: DeviceIdentity,
                            exposureNanoseconds: Int64? = nil, camera: CameraModel? = nil,
                            release: @escaping @Sendable () -> Void) {
        self.init(image: image, payload: payload, format: format, timestampNanoseconds: timestampNanoseconds,
                  timestampSource: timestampSource, sequence: sequence, source: source,
                  exposureNanoseconds: exposureNanoseconds, camera: camera, release: .closure(release))
    }

    /// A frame over driver buffer `index`, which goes back to `owner` when the frame is freed
    /// (the other parameters as in the public initialiser).
    package convenience init(image: ImageView?, payload: FramePayload, format: CaptureFormat, timestampNanoseconds: Int64,
                             timestampSource: TimestampSource, sequence: UInt64, source: DeviceIdentity,
                             exposureNanoseconds: Int64?, camera: CameraModel?,
                             returningBuffer index: UInt32, to owner: any FrameBufferOwner) {
        self.init(image: image, payload: payload, format: format, timestampNanoseconds: timestampNanoseconds,
                  timestampSource: timestampSource, sequence: sequence, source: source,
                  exposureNanoseconds: exposureNanoseconds, camera: camera, release: .buffer(index: index, owner: owner))
    }

    private init(image: ImageView?, payload: FramePayload, format: CaptureFormat, timestampNanoseconds: Int64,
                 timestampSource: TimestampSource, sequence: UInt64, source: DeviceIdentity,
                 exposureNanoseconds: Int64?, camera: CameraModel?, release: Release) {
        self.delivered = image
        self.deliveredPayload = payload
        self.format = format
        self.timestampNanoseconds = timestampNanoseconds
        self.timestampSource = timestampSource
        self.sequence = sequence
        self.source = source
        self.exposureNanoseconds = exposureNanoseconds
        self.camera = camera
        self.release = release
    }

    deinit {
        if let decoded { decoded.pool.give(decoded.memory) }
        switch release {
        case .closure(let release): release()
        case .buffer(let index, let owner): owner.giveBack(buffer: index)
        }
    }

    /// Gives this frame its decoded image (a stereo device's MJPEG decoding, on the camera's
    /// thread, before the frame is handed on): no second frame is made, so a decoded frame
    /// costs no allocation. The buffer goes back to `pool` when the frame is freed.
    func attachDecoded(_ view: ImageView, pool: DecodedImagePool, memory: DecodedImagePool.Memory) {
        precondition(decoded == nil, "a frame is decoded once")
        decoded = (view, pool, memory)
    }

    /// The intrinsics for the active format, when a calibration is attached.
    public var intrinsics: CameraIntrinsics? { camera?.intrinsics }

    /// An owned copy of the pixels (uncompressed formats only).
    public func copyImage() -> ImageBuffer? { image.map { ImageBuffer(copying: $0) } }
}

/// Who takes a driver buffer back when the ``Frame`` over it is freed (a V4L2 stream's
/// buffers), called once per frame from its `deinit`, on whichever thread freed it.
package protocol FrameBufferOwner: AnyObject, Sendable {
    /// Takes buffer `index` back (for V4L2: queues it to the driver again).
    func giveBack(buffer index: UInt32)
}

/// Immutable pixels that frames can share without copying (rendered or decoded images).
public final class SharedPixels: Sendable {
    /// The pixel format of the image.
    public let format: PixelFormat
    /// The size of the image.
    public let size: ImageSize
    private let storage: UnsafeMutableRawBufferPointerBox
    private let byteCount: Int

    /// Copies `buffer` once into memory that stays put for the lifetime of this
    /// object (the buffer itself is not kept, so the pixels exist once).
    public init(_ buffer: ImageBuffer) {
        format = buffer.format
        size = buffer.size
        let bytes = buffer.bytes
        byteCount = bytes.count
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 64)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0) }
        self.storage = UnsafeMutableRawBufferPointerBox(memory)
    }

    deinit { storage.memory.deallocate() }

    /// A view of the pixels; it keeps this object alive.
    public var view: ImageView {
        ImageView(packed: format, size: size, baseAddress: UnsafeRawPointer(storage.memory.baseAddress!),
                  byteCount: storage.memory.count, owner: self)
    }

    /// The whole buffer as a payload; it keeps this object alive.
    public var payload: FramePayload {
        FramePayload(baseAddress: UnsafeRawPointer(storage.memory.baseAddress!), count: byteCount, owner: self)
    }
}

/// Immutable bytes that frames can share without copying (an encoded MJPEG frame), and a
/// damaged copy of them for fault injection.
public final class SharedBytes: Sendable {
    private let storage: UnsafeMutableRawBufferPointerBox
    private let damaged: UnsafeMutableRawBufferPointerBox
    private let count: Int

    /// Copies `bytes` once into memory that stays put for the lifetime of this object.
    public init(_ bytes: [UInt8]) {
        count = bytes.count
        let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 64)
        bytes.withUnsafeBytes { memory.copyMemory(from: $0) }
        storage = UnsafeMutableRawBufferPointerBox(memory)
        // The same bytes with a restart marker written halfway into them, where a JPEG's
        // entropy data is: libjpeg-turbo finds it out of place (a damaged transfer).
        let copy = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 64)
        copy.copyMemory(from: UnsafeRawBufferPointer(memory))
        if bytes.count > 4 {
            copy[bytes.count / 2 + bytes.count / 4] = 0xFF
            copy[bytes.count / 2 + bytes.count / 4 + 1] = 0xD3
        }
        damaged = UnsafeMutableRawBufferPointerBox(copy)
    }

    deinit {
        storage.memory.deallocate()
        damaged.memory.deallocate()
    }

    /// The bytes; the payload keeps this object alive.
    public var payload: FramePayload {
        FramePayload(baseAddress: UnsafeRawPointer(storage.memory.baseAddress!), count: count, owner: self)
    }

    /// The damaged copy; the payload keeps this object alive.
    public var damagedPayload: FramePayload {
        FramePayload(baseAddress: UnsafeRawPointer(damaged.memory.baseAddress!), count: count, owner: self)
    }
}

/// Memory that is written once at creation and only read afterwards.
private struct UnsafeMutableRawBufferPointerBox: @unchecked Sendable {
    let memory: UnsafeMutableRawBufferPointer
    init(_ memory: UnsafeMutableRawBufferPointer) { self.memory = memory }
}
