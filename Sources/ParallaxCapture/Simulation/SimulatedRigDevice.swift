import Foundation
import ParallaxGeometry
import ParallaxImage
import Synchronization

/// How a simulated camera's frames are timed, relative to the rig's shared clock.
public struct SimulatedCameraTiming: Hashable, Sendable {
    /// Constant offset of this camera's exposures from the shared clock, in nanoseconds.
    public var offsetNanoseconds: Int64
    /// Clock drift in parts per million: the camera's frame period is the nominal
    /// one times (1 + ppm·10⁻⁶), so its frames slide against the other camera's.
    public var driftPPM: Double
    /// Timestamp noise, uniform in ± this many nanoseconds (the exposure itself stays on schedule).
    public var jitterNanoseconds: Int64
    /// Probability that a frame is lost (reported as a ``DropReason/simulated`` drop and a sequence gap).
    public var dropProbability: Double

    public init(offsetNanoseconds: Int64 = 0, driftPPM: Double = 0, jitterNanoseconds: Int64 = 0, dropProbability: Double = 0) {
        self.offsetNanoseconds = offsetNanoseconds
        self.driftPPM = driftPPM
        self.jitterNanoseconds = max(0, jitterNanoseconds)
        self.dropProbability = min(max(dropProbability, 0), 1)
    }
}

/// Whether the simulated rig waits for its frames' times.
public enum SimulationPace: String, Hashable, Sendable {
    /// Frames arrive when their timestamps say (sleeping in between), like real cameras.
    case realTime
    /// Frames arrive as fast as the consumer takes them; timestamps still advance
    /// by the frame interval, so timing-dependent code sees the same sequence faster.
    case asFastAsPossible
}

/// The simulated stereo rig as two ``CaptureDevice``s on one shared clock.
///
/// Each camera renders its view of the rig's scene once per format (the
/// scene is static; frames share those pixels without copying) and streams
/// it at the configured interval. Camera c's frame k is exposed at
/// `epoch + offset_c + k·interval·(1 + drift_c·10⁻⁶)` on CLOCK_MONOTONIC;
/// its timestamp is that plus uniform jitter, and the exact exposure time
/// is ground truth (``SimulatedCamera/exposureTimeNanoseconds(ofFrame:)``).
/// Dropped frames leave a gap in the sequence numbers, as a real camera's do.
public final class SimulatedRigDevice: Sendable {
    /// The geometry and scene.
    public let rig: SimulatedStereoRig
    /// The left camera (cam0).
    public let left: SimulatedCamera
    /// The right camera (cam1).
    public let right: SimulatedCamera

    /// - Parameters:
    ///   - frameInterval: the nominal interval of both cameras.
    ///   - pixelFormat: gray8, rgb8, bgr8 or yuyv.
    ///   - epochNanoseconds: the shared clock's zero on CLOCK_MONOTONIC (now by default).
    ///   - seed: seeds jitter and drops (left uses `seed`, right `seed + 1`).
    public init(rig: SimulatedStereoRig, frameInterval: FrameInterval = FrameInterval(numerator: 1, denominator: 30),
                pixelFormat: PixelFormat = .gray8, leftTiming: SimulatedCameraTiming = .init(),
                rightTiming: SimulatedCameraTiming = .init(), pace: SimulationPace = .realTime,
                epochNanoseconds: Int64? = nil, seed: UInt64 = 1) {
        self.rig = rig
        let epoch = epochNanoseconds ?? monotonicNanoseconds()
        left = SimulatedCamera(rig: rig, camera: .left, timing: leftTiming, interval: frameInterval, pixelFormat: pixelFormat,
                               pace: pace, epoch: epoch, seed: seed)
        right = SimulatedCamera(rig: rig, camera: .right, timing: rightTiming, interval: frameInterval, pixelFormat: pixelFormat,
                                pace: pace, epoch: epoch, seed: seed &+ 1)
    }

    /// Both cameras, left first.
    public var cameras: [SimulatedCamera] { [left, right] }
}

/// One camera of a ``SimulatedRigDevice``.
public final class SimulatedCamera: CaptureDevice, @unchecked Sendable {
    public let identity: DeviceIdentity
    /// Which camera of the rig.
    public let camera: RigCamera
    /// Its timing.
    public let timing: SimulatedCameraTiming
    /// Pacing.
    public let pace: SimulationPace
    private let rig: SimulatedStereoRig
    private let epoch: Int64
    private let seed: UInt64
    private let state: Mutex<State>

    private struct State: @unchecked Sendable {
        var format: CaptureFormat
        var pixels: SharedPixels?
        var thread: CaptureThread?
        var nextFrame: Int64 = 0
    }

    init(rig: SimulatedStereoRig, camera: RigCamera, timing: SimulatedCameraTiming, interval: FrameInterval,
         pixelFormat: PixelFormat, pace: SimulationPace, epoch: Int64, seed: UInt64) {
        self.rig = rig
        self.camera = camera
        self.timing = timing
        self.pace = pace
        self.epoch = epoch
        self.seed = seed
        self.identity = DeviceIdentity(stableID: "simulated-\(camera.rawValue)", name: "simulated \(camera.rawValue) camera")
        let size = rig.model(camera).size
        let fourCC = CaptureFormat.fourCC(of: pixelFormat) ?? .grey
        self.state = Mutex(State(format: CaptureFormat(fourCC: fourCC, size: size, frameInterval: interval)))
    }

    deinit { stop() }

    /// The camera's sensor size in every format the renderer produces, at the configured interval
    /// (other sizes are the same sensor rescaled, see ``configure(_:)``).
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] {
        let current = state.withLock { $0.format }
        return SceneRenderer.supportedFormats.compactMap { format in
            CaptureFormat.fourCC(of: format).map {
                CaptureFormat(fourCC: $0, size: rig.model(camera).size, frameInterval: current.frameInterval)
            }
        }
    }

    public var activeFormat: CaptureFormat? { state.withLock { $0.format } }

    /// Accepts any size (the camera model is rescaled to it, as a sensor's scaled mode would be),
    /// any interval, and the renderer's pixel formats.
    @discardableResult
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat {
        guard let pixel = format.pixelFormat, SceneRenderer.supportedFormats.contains(pixel) else {
            throw .unsupportedFormat(device: identity.name, requested: format, available: try supportedFormats())
        }
        try state.withLock { s throws(CaptureError) in
            guard s.thread == nil else { throw .invalidState(device: identity.name, reason: "cannot change the format while streaming") }
            s.format = format
            s.pixels = nil
        }
        return format
    }

    /// The camera model for the active format.
    public var model: CameraModel {
        let size = state.withLock { $0.format.size }
        let native = rig.model(camera)
        return native.size == size ? native : native.resized(to: size)
    }

    /// Ground truth: when frame `k` (its sequence number) was exposed, in nanoseconds on CLOCK_MONOTONIC.
    public func exposureTimeNanoseconds(ofFrame k: UInt64) -> Int64 {
        let interval = Double(state.withLock { $0.format.frameInterval.nanoseconds })
        return epoch + timing.offsetNanoseconds + Int64((Double(k) * interval * (1 + timing.driftPPM * 1e-6)).rounded())
    }

    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        let pixels = try renderedPixels()
        let (format, first) = state.withLock { ($0.format, $0.nextFrame) }
        let context = SimulatedStream(camera: self, pixels: pixels, format: format, model: model, firstFrame: first, handler: handler)
        let thread = CaptureThread(name: "parallax.simulated \(camera.rawValue)") { thread in context.run(thread) }
        try state.withLock { s throws(CaptureError) in
            guard s.thread == nil else {
                thread.stopAndJoin()
                throw .invalidState(device: identity.name, reason: "already streaming")
            }
            s.thread = thread
        }
    }

    public func stop() {
        let thread = state.withLock { s in defer { s.thread = nil }; return s.thread }
        thread?.stopAndJoin(timeoutSeconds: 5)
    }

    fileprivate func remember(nextFrame: Int64) { state.withLock { $0.nextFrame = nextFrame } }

    private func renderedPixels() throws(CaptureError) -> SharedPixels {
        if let pixels = state.withLock({ $0.pixels }) { return pixels }
        let format = state.withLock { $0.format }
        guard let pixel = format.pixelFormat else {
            throw .unsupportedFormat(device: identity.name, requested: format, available: try supportedFormats())
        }
        var geometry = rig
        if camera == .left { geometry.calibration.left = model } else { geometry.calibration.right = model }
        let image: ImageBuffer
        do { image = try geometry.render(camera, format: pixel) } catch {
            throw .simulation(device: identity.name, reason: "\(error)")
        }
        let pixels = SharedPixels(image)
        state.withLock { $0.pixels = pixels }
        return pixels
    }

    fileprivate var epochNanoseconds: Int64 { epoch }
    fileprivate var seedValue: UInt64 { seed }
}

/// The streaming loop of one simulated camera.
private struct SimulatedStream: @unchecked Sendable {
    let camera: SimulatedCamera
    let pixels: SharedPixels
    let format: CaptureFormat
    let model: CameraModel
    let firstFrame: Int64
    let handler: @Sendable (CaptureOutput) -> Void

    func run(_ thread: CaptureThread) {
        var random = SplitMix(seed: camera.seedValue)
        var k = firstFrame
        if camera.pace == .realTime {
            // Join the shared clock where it is now: frames before the start are never seen.
            let period = Double(format.frameInterval.nanoseconds) * (1 + camera.timing.driftPPM * 1e-6)
            let elapsed = Double(monotonicNanoseconds() - camera.epochNanoseconds - camera.timing.offsetNanoseconds)
            k = max(k, Int64((elapsed / period).rounded(.up)))
        }
        while !thread.shouldStop {
            let exposure = camera.exposureTimeNanoseconds(ofFrame: UInt64(k))
            if camera.pace == .realTime {
                // Sleep in slices so stop() is honoured promptly.
                while !thread.shouldStop {
                    let remaining = exposure - monotonicNanoseconds()
                    if remaining <= 0 { break }
                    usleep(UInt32(min(remaining / 1000, 20_000)))
                }
                if thread.shouldStop { break }
            }
            let sequence = UInt64(k)
            k += 1
            camera.remember(nextFrame: k)
            if camera.timing.dropProbability > 0 && random.nextUnit() < camera.timing.dropProbability {
                handler(.event(.dropped(count: 1, reason: .simulated)))
                continue
            }
            let jitter = camera.timing.jitterNanoseconds
            let noise = jitter > 0 ? Int64((random.nextUnit() * 2 - 1) * Double(jitter)) : 0
            let pixels = self.pixels
            let frame = Frame(image: pixels.view, payload: pixels.payload, format: format,
                              timestampNanoseconds: exposure + noise, timestampSource: .midExposure,
                              sequence: sequence, source: camera.identity, exposureNanoseconds: nil, camera: model,
                              release: { _ = pixels })
            handler(.frame(frame))
        }
        handler(.event(.stopped))
    }
}

/// A small deterministic generator (SplitMix64) for jitter and drops.
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
