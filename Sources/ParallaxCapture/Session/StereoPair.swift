import ParallaxGeometry
import ParallaxImage

/// One side of a ``StereoPair``: what is known about the frame, and its pixels.
public struct StereoPairSide: Sendable {
    /// Mid-exposure timestamp (nanoseconds on the capture clock, CLOCK_MONOTONIC for V4L2).
    public var timestampNanoseconds: Int64
    /// The camera's frame counter.
    public var sequence: UInt64
    /// The exposure time, when the camera reports it (nanoseconds).
    public var exposureNanoseconds: Int64?
    /// The camera that took it.
    public var source: DeviceIdentity
    /// The camera model for the active format (the calibration scaled or cropped to it),
    /// when the session has a calibration.
    public var camera: CameraModel?
    /// The pixels: rectified when the session rectifies, otherwise the frame's own (`nil`
    /// for compressed frames). The view keeps its buffer (the session's pooled one, or the
    /// frame) alive, so it reads these pixels however long it is kept; while it is kept,
    /// the session has one buffer fewer.
    public var image: ImageView?
    /// The captured frame, for uncalibrated sessions (and with
    /// ``StereoSessionOptions/keepsRawFrames``); holding it holds a driver buffer.
    public var frame: Frame?
}

/// A left and a right frame of the same moment, as a ``StereoSession`` hands them over.
///
/// Its images (and any copy of them) keep the memory they read alive: a view kept after
/// the pair is gone still reads this pair's pixels. A rectified pair's pixels live in a
/// pool the session reuses only when no pair or view holds them: keep a pair or its views
/// no longer than needed (copy the images with ``copyImages()`` to keep them). While you
/// hold pairs the pool grows; past ``StereoSessionOptions/heldPairsLimitBytes`` the
/// session ends with ``StereoSessionError/pairsHeld(held:pairBytes:limitBytes:)``.
public struct StereoPair: Sendable {
    /// The pair's number in this session (0, 1, 2, …; gaps are pairs that were dropped).
    public var number: Int
    /// The left camera's frame.
    public var left: StereoPairSide
    /// The right camera's frame.
    public var right: StereoPairSide
    /// Right minus left pairing timestamp (nanoseconds, after clock correction).
    public var skewNanoseconds: Int64
    /// True when the images are rectified.
    public var isRectified: Bool
    /// The rectification these images were resampled with (P1, P2, Q, valid rectangles and
    /// convergence distance as applied to this pair), when rectified.
    public var rectification: StereoRectification?
    /// From the arrival of the later frame until the synchronizer proved the pair (nanoseconds).
    public var pairingLatencyNanoseconds: Int64
    /// From the pair's release by the synchronizer until the session began resampling it (nanoseconds).
    public var queuedNanoseconds: Int64
    /// Time spent rectifying both images (nanoseconds; 0 when not rectified).
    public var rectifyNanoseconds: Int64
    /// Keeps the pooled rectified pixels alive (and out of the pool) while the pair lives.
    let storage: PairStorage?

    /// Each side's frame information.
    public subscript(side: StereoSide) -> StereoPairSide { side == .left ? left : right }

    /// Owned copies of both images (`nil` when a side has no pixels, as for MJPEG).
    public func copyImages() -> PerSide<ImageBuffer>? {
        guard let l = left.image, let r = right.image else { return nil }
        return PerSide(left: ImageBuffer(copying: l), right: ImageBuffer(copying: r))
    }
}

/// Two rectified images in memory the session reuses pair after pair.
final class PairStorage: @unchecked Sendable {
    let format: PixelFormat
    let size: ImageSize
    private let memory: PerSide<UnsafeMutableRawPointer>
    /// Bytes of each side's memory.
    private let byteCount: Int

    init(format: PixelFormat, size: ImageSize) {
        self.format = format
        self.size = size
        let bytes = max(1, ImageBuffer.byteCount(format: format, size: size))
        byteCount = bytes
        memory = PerSide { _ in
            let pointer = UnsafeMutableRawPointer.allocate(byteCount: bytes, alignment: 64)
            pointer.initializeMemory(as: UInt8.self, repeating: 0, count: bytes)
            return pointer
        }
    }

    deinit {
        memory.left.deallocate()
        memory.right.deallocate()
    }

    /// A read-only view of one side (the memory is sized for `format` and `size`).
    /// The view holds this storage, so the pool does not reuse it while the view lives.
    func view(_ side: StereoSide) -> ImageView {
        ImageView(packed: format, size: size, baseAddress: memory[side], byteCount: byteCount, owner: self)
    }

    /// A writable view of one side.
    func mutableView(_ side: StereoSide) -> MutableImageView {
        MutableImageView(packed: format, size: size, baseAddress: memory[side], byteCount: byteCount)
    }
}

/// The storages of rectified pairs: a storage is free when nobody but the pool holds it.
struct PairStoragePool {
    private var storages: [PairStorage] = []
    /// The storages a session needs while its consumer holds nothing beyond the pair it
    /// works on: the queue's, one being rectified, and room to hand over.
    let steady: Int

    init(steady: Int) {
        self.steady = max(1, steady)
        storages.reserveCapacity(self.steady)
    }

    /// A storage for `format` and `size` that no pair holds, or a new one while the pool
    /// holds fewer than `limit`; `nil` when all `limit` are held.
    mutating func take(format: PixelFormat, size: ImageSize, limit: Int) -> PairStorage? {
        for index in storages.indices where isKnownUniquelyReferenced(&storages[index]) {
            if storages[index].format != format || storages[index].size != size {
                storages[index] = PairStorage(format: format, size: size)
            }
            return storages[index]
        }
        guard storages.count < max(steady, limit) else { return nil }
        let storage = PairStorage(format: format, size: size)
        storages.append(storage)
        return storage
    }

    /// Storages allocated so far.
    var count: Int { storages.count }
}
