import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage
import Synchronization

/// A capture device whose frames a test hands over itself, on the caller's thread, as a
/// camera's thread would: what a session sees is exactly what the test made, when it chose.
public final class HandFedCamera: CaptureDevice, @unchecked Sendable {
    /// The identity given at creation: `name` as both stable ID and display name.
    public let identity: DeviceIdentity
    /// The one format it offers and streams.
    public let format: CaptureFormat
    /// Held by reference: reading a closure out of a lock re-wraps it (one allocation per
    /// frame, which AllocationTests would count).
    final class Handler: Sendable {
        let call: @Sendable (CaptureOutput) -> Void
        init(_ call: @escaping @Sendable (CaptureOutput) -> Void) { self.call = call }
    }
    private let handler = Locked<Handler?>(nil)

    /// A camera named `name` offering `format` only.
    public init(name: String, format: CaptureFormat) {
        identity = DeviceIdentity(stableID: name, name: name)
        self.format = format
    }

    /// Just ``format``; never throws.
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] { [format] }
    /// Always ``format``, even before ``configure(_:)`` is called.
    public var activeFormat: CaptureFormat? { format }
    /// Ignores the format asked for and returns ``format``, as a driver that can only stream
    /// that one would; never throws.
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat { self.format }
    /// Keeps `handler` (replacing any earlier one) for ``deliver(_:)`` to call; no thread is
    /// started and nothing is delivered until the test hands a frame over. Never throws.
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        self.handler.withLock { $0 = Handler(handler) }
    }
    /// Forgets the handler and sends it ``CaptureEvent/stopped`` on the caller's thread;
    /// nothing happens when the camera is not started, so a second call is harmless.
    public func stop() {
        let handler = self.handler.withLock { h in defer { h = nil }; return h }
        handler?.call(.event(.stopped))
    }

    /// Delivers `frame` on the caller's thread (nothing when the camera is not started).
    public func deliver(_ frame: Frame) { handler.withLock { $0 }?.call(.frame(frame)) }

    /// A frame of this camera showing `pixels` (kept alive until the frame is released),
    /// stamped at mid-exposure.
    public func frame(_ pixels: SharedPixels, timestampNanoseconds: Int64, sequence: UInt64) -> Frame {
        Frame(image: pixels.view, payload: pixels.payload, format: format, timestampNanoseconds: timestampNanoseconds,
              timestampSource: .midExposure, sequence: sequence, source: identity, release: { _ = pixels })
    }

    /// A compressed frame of this camera carrying `bytes` (an MJPEG frame: no image until a
    /// stereo device decodes it), stamped at mid-exposure.
    public func frame(_ bytes: SharedBytes, timestampNanoseconds: Int64, sequence: UInt64) -> Frame {
        Frame(image: nil, payload: bytes.payload, format: format, timestampNanoseconds: timestampNanoseconds,
              timestampSource: .midExposure, sequence: sequence, source: identity, release: { _ = bytes })
    }
}

/// Deterministic test images: every byte from a xorshift sequence over a ramp, so that each
/// format's planes carry texture (a resampler that reads the wrong tap changes them).
public enum TestPattern {
    /// An image of `format` and `size`; `seed` picks the sequence.
    public static func image(_ format: PixelFormat, size: ImageSize, seed: UInt32) throws -> ImageBuffer {
        var bytes = [UInt8](repeating: 0, count: ImageBuffer.byteCount(format: format, size: size))
        var state: UInt32 = 2_463_534_242 &+ seed
        for i in bytes.indices {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            bytes[i] = UInt8(truncatingIfNeeded: (i &* 3) &+ Int(state & 63))
        }
        return try ImageBuffer(format: format, size: size, bytes: bytes)
    }
}

/// Two hand-fed cameras as one rectifying stereo session, for measuring what a pair costs in
/// steady state (the session benchmark and AllocationTests): the simulated rig's two views at
/// `size`, 30 fps, the right camera 2 ms late, rectified on one thread with the rig's own
/// calibration. Frames are made by ``frames(_:)`` before they are handed over by ``run(_:timeoutSeconds:)``,
/// a pair at a time, each waiting until the session has delivered one more pair: what a
/// window measures is the session's work, not the frames' making.
public final class HandFedSession: @unchecked Sendable {
    /// The format both cameras stream.
    public let format: CaptureFormat
    /// The two cameras.
    public let cameras: PerSide<HandFedCamera>
    /// The session over them (started).
    public let session: StereoSession
    private let pixels: PerSide<SharedPixels>
    /// With `mjpeg`: the two views encoded at quality 90, which the frames carry instead.
    private let jpegs: PerSide<SharedBytes>?
    private final class Counter: Sendable { let value = Atomic<Int>(0) }
    private let deliveredPairs = Counter()
    private var next = 0

    /// A started session; `onPair` sees every pair it delivers, on the session's thread. With
    /// `mjpeg` the cameras stream MJPG: JPEGs of the two views (quality 90, 4:2:0), which the
    /// stereo device decodes into I420 on the feeding thread before the session rectifies them.
    /// `heldPairsLimitBytes` replaces the session's ``StereoSessionOptions/heldPairsLimitBytes``.
    public init(size: ImageSize = ImageSize(width: 160, height: 120), mjpeg: Bool = false, heldPairsLimitBytes: Int? = nil,
                onPair: @escaping @Sendable (StereoPair) -> Void = { _ in }) throws {
        format = CaptureFormat(fourCC: mjpeg ? .mjpeg : .grey, size: size,
                               frameInterval: FrameInterval(numerator: 1, denominator: 30))
        let rig = SimulatedStereoRig.example(size: size)
        pixels = PerSide(left: SharedPixels(try rig.render(.left)), right: SharedPixels(try rig.render(.right)))
        jpegs = mjpeg ? PerSide(left: SharedBytes(try JPEGEncoder.encode(try rig.render(.left, format: .rgb8), quality: 90)),
                                right: SharedBytes(try JPEGEncoder.encode(try rig.render(.right, format: .rgb8), quality: 90)))
            : nil
        cameras = PerSide(left: HandFedCamera(name: "left", format: format), right: HandFedCamera(name: "right", format: format))
        let device = StereoDevice(left: cameras.left, right: cameras.right)
        try device.configure(StereoConfiguration(format: format))
        var options = StereoSessionOptions()
        options.pressure.readsMachineState = false
        options.rectification.threads = 1
        if let heldPairsLimitBytes { options.heldPairsLimitBytes = heldPairsLimitBytes }
        session = try StereoSession(device: device, calibration: rig.calibration, options: options)
        let counter = deliveredPairs
        try session.start(delivering: { pair in
            onPair(pair)
            counter.value.add(1, ordering: .releasing)
        })
    }

    /// Pairs the session has delivered so far.
    public var delivered: Int { deliveredPairs.value.load(ordering: .acquiring) }

    /// The next `count` left/right frame pairs, made now.
    public func frames(_ count: Int) -> [PerSide<Frame>] {
        (0..<count).map { _ in
            defer { next += 1 }
            let t = 1_000_000_000 + Int64(next) * format.frameInterval.nanoseconds
            return PerSide { side in
                let stamp = t + (side == .right ? 2_000_000 : 0)
                if let jpegs { return cameras[side].frame(jpegs[side], timestampNanoseconds: stamp, sequence: UInt64(next)) }
                return cameras[side].frame(pixels[side], timestampNanoseconds: stamp, sequence: UInt64(next))
            }
        }
    }

    /// Frames made now, to be handed over by ``run(_:timeoutSeconds:)-(FrameBatch,_)``, which lets go of
    /// each pair as it hands it over: what a camera does, and what decoded MJPEG frames need
    /// (each holds one of its side's pooled buffers until it is freed).
    public final class FrameBatch: @unchecked Sendable {
        fileprivate var pairs: [PerSide<Frame>?]
        init(_ pairs: [PerSide<Frame>]) { self.pairs = pairs }
        /// Pairs not handed over yet.
        public var remaining: Int { pairs.reduce(0) { $0 + ($1 == nil ? 0 : 1) } }
    }

    /// The next `count` left/right frame pairs, made now, as a batch that is let go of pair by pair.
    public func batch(_ count: Int) -> FrameBatch { FrameBatch(frames(count)) }

    /// Hands over each pair of `batch`, letting go of it, and waits until the session delivered
    /// one more, at most `timeoutSeconds` each (see ``run(_:timeoutSeconds:)-([PerSide<Frame>],_)``).
    public func run(_ batch: FrameBatch, timeoutSeconds: Double = 10) {
        for index in batch.pairs.indices {
            guard let pair = batch.pairs[index] else { continue }
            batch.pairs[index] = nil
            let before = delivered
            cameras.left.deliver(pair.left)
            cameras.right.deliver(pair.right)
            let deadline = ContinuousClock.now + .milliseconds(Int(timeoutSeconds * 1000))
            while delivered == before && ContinuousClock.now < deadline { sched_yield() }
        }
    }

    /// Hands over each pair and waits until the session delivered one more (a pair is
    /// released when its later frame arrives), at most `timeoutSeconds` each: a hang guard.
    public func run(_ batch: [PerSide<Frame>], timeoutSeconds: Double = 10) {
        for pair in batch {
            let before = delivered
            cameras.left.deliver(pair.left)
            cameras.right.deliver(pair.right)
            let deadline = ContinuousClock.now + .milliseconds(Int(timeoutSeconds * 1000))
            while delivered == before && ContinuousClock.now < deadline { sched_yield() }
        }
    }
}
