import ParallaxGeometry
import ParallaxImage
import Synchronization

/// How a stereo device decodes MJPEG frames: into what, at what scale.
///
/// Decoding happens on each camera's own thread as its frame arrives (the two cameras
/// decode in parallel; the pairing thread never decodes), into buffers from a pool that
/// stops growing once the stream runs. A frame that does not decode is dropped as
/// ``DropReason/corruptFrame``, never handed on.
public struct MJPEGDecoding: Hashable, Sendable, CustomStringConvertible {
    /// What frames decode to (the JPEG's own YCbCr planes unless asked otherwise).
    public var output: MJPEGOutput
    /// How far the decoding scales down (DCT scaling; see `MJPEGScale` in ParallaxImage).
    public var scale: MJPEGScale

    /// Decoding to `output` at `scale`.
    public init(output: MJPEGOutput = .ycbcr, scale: MJPEGScale = .full) {
        self.output = output
        self.scale = scale
    }

    /// The size a frame of `size` decodes to.
    public func decodedSize(of size: ImageSize) -> ImageSize { scale.scaled(size) }

    /// `ycbcr`, or `gray8 at 1/2`.
    public var description: String { scale == .full ? output.rawValue : "\(output.rawValue) at 1/\(scale.rawValue)" }
}

/// One camera's MJPEG decoding: a libjpeg-turbo decoder and the pool its images live in.
/// Used from that camera's thread only.
final class MJPEGFrameDecoder: @unchecked Sendable {
    let decoding: MJPEGDecoding
    private let decoder: MJPEGDecoder
    private let device: String
    /// Made at the first frame, when the JPEG's subsampling (and so the planar format) is known.
    private var pool: DecodedImagePool?
    /// The kinds of failure reported as an event so far: each is reported once per stream
    /// (a camera sending 4:4:4, a cable damaging every tenth frame); the drops count them all.
    private var reported: Set<MJPEGDecodingError.Kind> = []

    /// Images a side can hold at once before frames are refused (its driver's buffers
    /// bound what is in flight long before this).
    static let poolLimit = 32

    /// The size every frame of the stream has (the format's): a frame whose header says
    /// otherwise is damaged, and is dropped before anything is set aside for it.
    private let frameSize: ImageSize

    init(decoding: MJPEGDecoding, device: String, frameSize: ImageSize) throws(CaptureError) {
        self.decoding = decoding
        self.device = device
        self.frameSize = frameSize
        do {
            decoder = try MJPEGDecoder(output: decoding.output, scale: decoding.scale)
        } catch {
            throw .invalidState(device: device, reason: "cannot start the MJPEG decoder: \(error)")
        }
    }

    /// What became of one frame.
    enum Outcome {
        /// The frame with its decoded image (pooled) attached, and the camera model.
        case decoded(Frame)
        /// Dropped; `report` is set the first time a kind of failure is seen.
        case dropped(DropReason, report: CaptureError?)
    }

    /// Decodes `frame` (an MJPEG frame) into a pooled image, with `model` attached.
    func decode(_ frame: Frame, model: CameraModel?) -> Outcome {
        do throws(MJPEGDecodingError) {
            let header = try decoder.header(of: frame.payload.bytes)
            guard header.size == frameSize else {
                throw MJPEGDecodingError(.unexpectedLayout, "its header says \(header.size) in a \(frameSize) stream")
            }
            let (format, size) = try decoder.layout(for: header)
            if pool == nil || pool?.format != format || pool?.size != size {
                // The first frame, or a camera that changed its JPEGs' layout mid-stream:
                // frames in flight keep the old pool alive until they are released.
                pool = DecodedImagePool(format: format, size: size, limit: Self.poolLimit)
            }
            guard let pool, let memory = pool.take() else { return .dropped(.noDecodeBuffer, report: nil) }
            let view = MutableImageView(packed: format, size: size, baseAddress: memory.base, byteCount: memory.byteCount)
            do throws(MJPEGDecodingError) {
                try decoder.decode(frame.payload.bytes, into: view)
            } catch {
                pool.give(memory)
                throw error
            }
            frame.attachDecoded(view.readOnly, pool: pool, memory: memory)
            return .decoded(StereoDevice.frame(frame, with: model))
        } catch {
            let first = reported.insert(error.kind).inserted
            return .dropped(.corruptFrame, report: first ? .undecodableFrame(device: device, sequence: frame.sequence,
                                                                              reason: error.description) : nil)
        }
    }
}

/// Fixed-size image buffers handed out and given back from any thread; it grows to
/// `limit` buffers and keeps them (0 allocations per frame once a stream has run a while).
final class DecodedImagePool: Sendable {
    let format: PixelFormat
    let size: ImageSize
    private let byteCount: Int
    private let limit: Int
    private struct Buffers: @unchecked Sendable {
        var free: [UnsafeMutableRawPointer] = []
        var all: [UnsafeMutableRawPointer] = []
    }
    private let buffers: Locked<Buffers>

    init(format: PixelFormat, size: ImageSize, limit: Int) {
        self.format = format
        self.size = size
        self.limit = limit
        byteCount = max(1, ImageBuffer.byteCount(format: format, size: size))
        var initial = Buffers()
        initial.free.reserveCapacity(limit)
        initial.all.reserveCapacity(limit)
        buffers = Locked(initial)
    }

    deinit {
        buffers.withLock { b in for memory in b.all { memory.deallocate() } }
    }

    /// One of the pool's buffers; owned by whoever took it until given back.
    struct Memory: @unchecked Sendable {
        let base: UnsafeMutableRawPointer
        /// Its size in bytes (the pool's images').
        let byteCount: Int
    }

    /// A free buffer, a new one while fewer than `limit` exist, or `nil`.
    func take() -> Memory? {
        buffers.withLock { b -> Memory? in
            if let memory = b.free.popLast() { return Memory(base: memory, byteCount: byteCount) }
            guard b.all.count < limit else { return nil }
            let memory = UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: 64)
            b.all.append(memory)
            return Memory(base: memory, byteCount: byteCount)
        }
    }

    /// Gives a buffer from ``take()`` back.
    func give(_ memory: Memory) {
        buffers.withLock { $0.free.append(memory.base) }
    }
}
