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
    /// Sensor noise: every frame gets independent Gaussian noise of this standard deviation
    /// (pixel levels) added to each byte, clamped to 0…255. Sixteen noisy copies of the
    /// view are made when streaming starts and used in turn, so any 16 consecutive frames
    /// have independent noise. 0 (the default): every frame shares one clean rendering.
    public var noiseStandardDeviation: Double
    /// MJPEG only: the probability that a frame arrives damaged, as after a USB error
    /// mid-frame: alternately cut to 60 % of its bytes (no end-of-image marker) or with a
    /// marker written into its entropy data. Such frames decode to nothing; a stereo device
    /// drops them as ``DropReason/corruptFrame``.
    public var corruptFrameProbability: Double

    /// A timing; jitter and noise are clamped to ≥ 0 and the probabilities to [0, 1].
    public init(offsetNanoseconds: Int64 = 0, driftPPM: Double = 0, jitterNanoseconds: Int64 = 0, dropProbability: Double = 0,
                noiseStandardDeviation: Double = 0, corruptFrameProbability: Double = 0) {
        self.offsetNanoseconds = offsetNanoseconds
        self.driftPPM = driftPPM
        self.jitterNanoseconds = max(0, jitterNanoseconds)
        self.dropProbability = min(max(dropProbability, 0), 1)
        self.noiseStandardDeviation = noiseStandardDeviation.isFinite ? max(0, noiseStandardDeviation) : 0
        self.corruptFrameProbability = corruptFrameProbability.isFinite ? min(max(corruptFrameProbability, 0), 1) : 0
    }
}

/// Whether the simulated rig waits for its frames' times.
public enum SimulationPace: String, Hashable, Sendable {
    /// Frames arrive when their timestamps say (sleeping in between), like real cameras.
    case realTime
    /// Frames arrive as fast as the consumer takes them; timestamps still advance
    /// by the frame interval, so timing-dependent code sees the same sequence faster. The
    /// two cameras hand frames over in the order of their timestamps, so however far their
    /// clocks drift apart their frames still meet (`SessionDriftTests`).
    case asFastAsPossible
}

/// The simulated stereo rig as two ``CaptureDevice``s on one shared clock.
///
/// Each camera renders its view of the rig's scene once per format (the
/// scene is static; frames share those pixels without copying) and streams
/// it at the configured interval. With a ``BoardTrajectory`` the board moves instead:
/// each frame shows it where the trajectory has it at that frame's exposure, rendered
/// once per held pose and for every frame while it moves. Camera c's frame k is exposed at
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
    ///   - rig: the calibrated cameras and the scene they see; the left camera is cam0, the right cam1.
    ///   - frameInterval: the nominal interval of both cameras.
    ///   - pixelFormat: gray8, rgb8, bgr8 or yuyv (configure `MJPG` for Motion-JPEG: the
    ///     colour view encoded at ``SimulatedCamera/jpegQuality``).
    ///   - leftTiming: the left camera's offset, drift, jitter, drops and noise on the shared clock.
    ///   - rightTiming: the same for the right camera.
    ///   - pace: whether frames arrive at their timestamps' times or as fast as they are taken.
    ///   - epochNanoseconds: the shared clock's zero on CLOCK_MONOTONIC (now by default).
    ///   - seed: seeds jitter and drops (left uses `seed`, right `seed + 1`).
    ///   - boardTrajectory: moves the scene's board (which must have one) along this path;
    ///     `nil` keeps the scene still.
    public init(rig: SimulatedStereoRig, frameInterval: FrameInterval = FrameInterval(numerator: 1, denominator: 30),
                pixelFormat: PixelFormat = .gray8, leftTiming: SimulatedCameraTiming = .init(),
                rightTiming: SimulatedCameraTiming = .init(), pace: SimulationPace = .realTime,
                epochNanoseconds: Int64? = nil, seed: UInt64 = 1, boardTrajectory: BoardTrajectory? = nil) {
        self.rig = rig
        let epoch = epochNanoseconds ?? monotonicNanoseconds()
        let lockstep = Lockstep()
        let trajectory = rig.scene.target == nil ? nil : boardTrajectory
        left = SimulatedCamera(rig: rig, camera: .left, timing: leftTiming, interval: frameInterval, pixelFormat: pixelFormat,
                               pace: pace, epoch: epoch, seed: seed, lockstep: lockstep, trajectory: trajectory)
        right = SimulatedCamera(rig: rig, camera: .right, timing: rightTiming, interval: frameInterval, pixelFormat: pixelFormat,
                                pace: pace, epoch: epoch, seed: seed &+ 1, lockstep: lockstep, trajectory: trajectory)
    }

    /// The board's path, when it moves.
    public var boardTrajectory: BoardTrajectory? { left.trajectory }

    /// Both cameras.
    public var cameras: PerSide<SimulatedCamera> { PerSide(left: left, right: right) }

    /// Renders both views now (otherwise each camera renders when it starts). Call it
    /// before starting cameras that run as fast as possible, so the first one does not race
    /// ahead while the second renders.
    public func prepare() throws(CaptureError) {
        try left.prepare()
        try right.prepare()
    }
}

/// One camera of a ``SimulatedRigDevice``.
public final class SimulatedCamera: CaptureDevice, StopRequesting, @unchecked Sendable {
    /// Who this device is.
    public let identity: DeviceIdentity
    /// Which camera of the rig.
    public let camera: StereoSide
    /// Its timing.
    public let timing: SimulatedCameraTiming
    /// Pacing.
    public let pace: SimulationPace
    /// The board's path, when it moves (see ``SimulatedRigDevice``).
    public let trajectory: BoardTrajectory?
    private let rig: SimulatedStereoRig
    private let epoch: Int64
    private let seed: UInt64
    fileprivate let lockstep: Lockstep
    private let state: Locked<State>
    /// Set by ``requestStop()`` while a rendering is in progress, which then stops; cleared
    /// when the next rendering starts, so a stop request never outlives its rendering.
    private let renderingCancelled = Atomic<Bool>(false)

    private struct State: @unchecked Sendable {
        var format: CaptureFormat
        var pixels: [SharedPixels]?
        var thread: CaptureThread?
        var nextFrame: Int64 = 0
        /// The frames the timing dropped (`dropProbability`), for ground truth.
        var dropped: Set<UInt64> = []
        /// A rendering is in progress (``requestStop()`` cancels only then).
        var rendering = false
        /// With a trajectory: the clean view of the pose held last (its index), reused while held.
        var held: (pose: Int, image: ImageBuffer)?
        /// With a trajectory: the view without the board, which every frame is drawn over.
        var background: ImageBuffer?
    }

    init(rig: SimulatedStereoRig, camera: StereoSide, timing: SimulatedCameraTiming, interval: FrameInterval,
         pixelFormat: PixelFormat, pace: SimulationPace, epoch: Int64, seed: UInt64, lockstep: Lockstep,
         trajectory: BoardTrajectory? = nil) {
        self.lockstep = lockstep
        self.trajectory = trajectory
        self.rig = rig
        self.camera = camera
        self.timing = timing
        self.pace = pace
        self.epoch = epoch
        self.seed = seed
        self.identity = DeviceIdentity(stableID: "simulated-\(camera)", name: "simulated \(camera) camera")
        let size = rig.model(camera).size
        let fourCC = CaptureFormat.fourCC(of: pixelFormat) ?? .grey
        self.state = Locked(State(format: CaptureFormat(fourCC: fourCC, size: size, frameInterval: interval)))
    }

    deinit { stop() }

    /// The camera's sensor size in every format the renderer produces, at the configured interval
    /// (other sizes are the same sensor rescaled, see ``configure(_:)``).
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] {
        let current = state.withLock { $0.format }
        let codes = SceneRenderer.supportedFormats.compactMap { CaptureFormat.fourCC(of: $0) } + [.mjpeg]
        return codes.map { CaptureFormat(fourCC: $0, size: rig.model(camera).size, frameInterval: current.frameInterval) }
    }

    /// Any size and interval in a pixel format the renderer produces, or MJPEG at an even
    /// size (see ``configure(_:)``).
    public func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool {
        guard Self.renderFormat(of: format) != nil else { return false }
        return format.size.width > 0 && format.size.height > 0
    }

    /// The JPEG quality of MJPEG frames (libjpeg's scale, 1…100), 4:2:0 chroma.
    public static let jpegQuality = 90

    /// What a format is rendered in before it is delivered: its own pixel format, or RGB
    /// for MJPEG (encoded after rendering); `nil` when the renderer cannot make it.
    static func renderFormat(of format: CaptureFormat) -> PixelFormat? {
        if format.fourCC == .mjpeg { return format.size.width % 2 == 0 && format.size.height % 2 == 0 ? .rgb8 : nil }
        guard let pixel = format.pixelFormat, SceneRenderer.supportedFormats.contains(pixel) else { return nil }
        return pixel
    }

    /// The format in use (see ``CaptureDevice/activeFormat``).
    public var activeFormat: CaptureFormat? { state.withLock { $0.format } }

    /// Accepts any size (the camera model is rescaled to it, as a sensor's scaled mode would be),
    /// any interval, and the renderer's pixel formats.
    @discardableResult
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat {
        guard Self.renderFormat(of: format) != nil else {
            throw .unsupportedFormat(device: identity.name, requested: format, available: try supportedFormats())
        }
        try state.withLock { s throws(CaptureError) in
            guard s.thread == nil else { throw .invalidState(device: identity.name, reason: "cannot change the format while streaming") }
            s.format = format
            s.pixels = nil
            s.held = nil
            s.background = nil
        }
        return format
    }

    /// The camera model for the active format.
    public var model: CameraModel {
        let size = state.withLock { $0.format.size }
        let native = rig.model(camera)
        return native.adapted(to: size)
    }

    /// Ground truth: when frame `k` (its sequence number) was exposed, in nanoseconds on CLOCK_MONOTONIC.
    public func exposureTimeNanoseconds(ofFrame k: UInt64) -> Int64 {
        let interval = Double(state.withLock { $0.format.frameInterval.nanoseconds })
        let period = interval * (1 + timing.driftPPM * 1e-6)  // the same expression the stream uses
        return epoch + timing.offsetNanoseconds + Int64((Double(k) * period).rounded())
    }

    /// Starts streaming into `handler` (see ``CaptureDevice/start(_:)``).
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        let pixels = trajectory == nil ? try renderedPixels() : []
        let (format, first) = state.withLock { ($0.format, $0.nextFrame) }
        // MJPEG: each rendering encoded once (a moving board: each frame as it is rendered).
        let jpegs = format.fourCC == .mjpeg ? try pixels.map { rendering throws(CaptureError) in try encode(rendering) } : []
        let context = SimulatedStream(camera: self, pixels: pixels, jpegs: jpegs, format: format, model: model, firstFrame: first,
                                      handler: handler)
        let thread = CaptureThread(name: "parallax.simulated \(camera)") { thread in context.run(thread) }
        try state.withLock { s throws(CaptureError) in
            guard s.thread == nil else {
                thread.stopAndJoin()
                throw .invalidState(device: identity.name, reason: "already streaming")
            }
            s.thread = thread
        }
    }

    /// Stops streaming and waits for the device thread, with a deadline (see ``CaptureDevice/stop()``).
    public func stop() {
        let thread = state.withLock { s in defer { s.thread = nil }; return s.thread }
        thread?.stopAndJoin(timeoutSeconds: 5)
    }

    /// Asks the streaming thread to stop without waiting for it (``stop()`` waits), and a
    /// rendering in progress (in ``prepare()`` or ``start(_:)``) to give up.
    func requestStop() {
        let thread = state.withLock { s in
            if s.rendering { renderingCancelled.store(true, ordering: .releasing) }
            return s.thread
        }
        thread?.stopRequested.store(true, ordering: .releasing)
    }

    fileprivate func remember(nextFrame: Int64) { state.withLock { $0.nextFrame = nextFrame } }
    fileprivate func remember(dropped frame: UInt64) { state.withLock { _ = $0.dropped.insert(frame) } }

    /// Ground truth: whether frame `k` was made and handed on (false for a frame the timing's
    /// `dropProbability` dropped, reported as a `simulated` drop, and for frames not yet made).
    public func delivered(frame k: UInt64) -> Bool {
        state.withLock { Int64(clamping: k) < $0.nextFrame && !$0.dropped.contains(k) }
    }

    /// Renders the view for the active format now (``start(_:)`` does it otherwise); with a
    /// trajectory, the view of the first frame.
    public func prepare() throws(CaptureError) {
        if trajectory != nil {
            let first = state.withLock { $0.nextFrame }
            _ = try framePixels(first)
        } else {
            _ = try renderedPixels()
        }
    }

    /// Ground truth with a trajectory: the board's pose (board → left camera frame) in frame `k`.
    public func boardPose(ofFrame k: UInt64) -> RigidTransform? {
        trajectory?.pose(atSeconds: secondsOnTrajectory(Int64(clamping: k))).pose
    }

    /// Where frame `k` falls on the trajectory: its exposure's seconds after the shared epoch.
    private func secondsOnTrajectory(_ k: Int64) -> Double {
        let interval = Double(state.withLock { $0.format.frameInterval.nanoseconds })
        let period = interval * (1 + timing.driftPPM * 1e-6)
        return (Double(timing.offsetNanoseconds) + Double(k) * period) * 1e-9
    }

    /// With a trajectory: frame `k`'s pixels, with the board where the trajectory has it
    /// (a held pose is rendered once), and this frame's own sensor noise.
    fileprivate func framePixels(_ k: Int64) throws(CaptureError) -> SharedPixels {
        guard let trajectory else { return try renderedPixels()[Int(k % 16)] }
        let (pose, holding) = trajectory.pose(atSeconds: secondsOnTrajectory(k))
        var image: ImageBuffer
        if let holding, let held = state.withLock({ $0.held }), held.pose == holding {
            image = held.image
        } else {
            let format = state.withLock { $0.format }
            guard let pixel = Self.renderFormat(of: format) else {
                throw .unsupportedFormat(device: identity.name, requested: format, available: try supportedFormats())
            }
            var geometry = rig
            if camera == .left { geometry.calibration.left = model } else { geometry.calibration.right = model }
            geometry.scene.target?.pose = pose
            state.withLock { s in
                s.rendering = true
                renderingCancelled.store(false, ordering: .releasing)
            }
            defer { state.withLock { $0.rendering = false } }
            let cancelled = { self.renderingCancelled.load(ordering: .acquiring) }
            do {
                // The scene without the board once; then only the pixels the board reaches, per frame.
                let background: ImageBuffer
                if let cached = state.withLock({ $0.background }) {
                    background = cached
                } else {
                    var empty = geometry
                    empty.scene.target = nil
                    background = try empty.render(camera, format: pixel, isCancelled: cancelled)
                    state.withLock { $0.background = background }
                }
                geometry.scene.target?.pose = pose
                image = try SceneRenderer(samplesPerAxis: geometry.samplesPerAxis)
                    .render(geometry.scene, over: background, camera: geometry.model(camera),
                            cameraFromWorld: geometry.cameraFromWorld(camera), isCancelled: cancelled)
            } catch {
                throw .simulation(device: identity.name, reason: "\(error)")
            }
            if let holding { state.withLock { $0.held = (holding, image) } }
        }
        let sigma = timing.noiseStandardDeviation
        if sigma > 0 {
            var random = SeededRandomGenerator(seed: (seed &* 0x9E37_79B9 &+ 7) ^ UInt64(bitPattern: k &* 0x2545_F491_4F6C_DD1D))
            let noisy = image.bytes.map { byte -> UInt8 in
                UInt8(min(255, max(0, (Double(byte) + sigma * random.nextGaussian()).rounded())))
            }
            // The size and format are the rendering's own, so the bytes always fit.
            image = (try? ImageBuffer(format: image.format, size: image.size, bytes: noisy)) ?? image
        }
        return SharedPixels(image)
    }

    /// The view for the active format: one clean rendering, or sixteen noisy copies of it.
    private func renderedPixels() throws(CaptureError) -> [SharedPixels] {
        if let pixels = state.withLock({ $0.pixels }) { return pixels }
        let format = state.withLock { $0.format }
        guard let pixel = Self.renderFormat(of: format) else {
            throw .unsupportedFormat(device: identity.name, requested: format, available: try supportedFormats())
        }
        var geometry = rig
        if camera == .left { geometry.calibration.left = model } else { geometry.calibration.right = model }
        state.withLock { s in
            s.rendering = true
            renderingCancelled.store(false, ordering: .releasing)
        }
        defer { state.withLock { $0.rendering = false } }
        let image: ImageBuffer
        do {
            image = try geometry.render(camera, format: pixel) { renderingCancelled.load(ordering: .acquiring) }
        } catch {
            throw .simulation(device: identity.name, reason: "\(error)")
        }
        var pixels = [SharedPixels(image)]
        let sigma = timing.noiseStandardDeviation
        if sigma > 0 {
            var random = SeededRandomGenerator(seed: seed &* 0x9E37_79B9 &+ 7)
            pixels = (0..<16).map { _ in
                let noisy = image.bytes.map { byte -> UInt8 in
                    UInt8(min(255, max(0, (Double(byte) + sigma * random.nextGaussian()).rounded())))
                }
                // The size and format are the rendering's own, so the bytes always fit.
                return SharedPixels((try? ImageBuffer(format: image.format, size: image.size, bytes: noisy)) ?? image)
            }
        }
        state.withLock { $0.pixels = pixels }
        return pixels
    }

    /// One rendering as an MJPEG frame's bytes.
    fileprivate func encode(_ pixels: SharedPixels) throws(CaptureError) -> SharedBytes {
        do {
            return SharedBytes(try JPEGEncoder.encode(ImageBuffer(copying: pixels.view), quality: Self.jpegQuality))
        } catch {
            throw .simulation(device: identity.name, reason: "cannot encode the MJPEG frame: \(error)")
        }
    }

    fileprivate var epochNanoseconds: Int64 { epoch }
    fileprivate var seedValue: UInt64 { seed }
}

/// The streaming loop of one simulated camera. It holds the camera weakly,
/// so a camera released while streaming stops instead of living on.
private final class SimulatedStream: @unchecked Sendable {
    weak var camera: SimulatedCamera?
    /// The view's renderings, used in turn (one, or sixteen noisy copies).
    let pixels: [SharedPixels]
    /// For MJPEG: those renderings encoded, in the same order.
    let jpegs: [SharedBytes]
    let format: CaptureFormat
    let model: CameraModel
    let firstFrame: Int64
    let handler: @Sendable (CaptureOutput) -> Void

    init(camera: SimulatedCamera, pixels: [SharedPixels], jpegs: [SharedBytes], format: CaptureFormat, model: CameraModel,
         firstFrame: Int64, handler: @escaping @Sendable (CaptureOutput) -> Void) {
        self.camera = camera
        self.pixels = pixels
        self.jpegs = jpegs
        self.format = format
        self.model = model
        self.firstFrame = firstFrame
        self.handler = handler
    }

    func run(_ thread: CaptureThread) {
        guard let initial = camera else { return }
        let pace = initial.pace, timing = initial.timing, epoch = initial.epochNanoseconds, identity = initial.identity
        var random = SeededRandomGenerator(seed: initial.seedValue)
        var k = firstFrame
        let period = Double(format.frameInterval.nanoseconds) * (1 + timing.driftPPM * 1e-6)
        if pace == .realTime {
            // Join the shared clock where it is now: frames before the start are never seen.
            let elapsed = Double(monotonicNanoseconds() - epoch - timing.offsetNanoseconds)
            k = max(k, Int64((elapsed / period).rounded(.up)))
        }
        let side = initial.camera
        let lockstep = initial.lockstep
        let base = epoch + timing.offsetNanoseconds
        /// When frame `n` is exposed, on this camera's clock (offset and drift included).
        func exposed(_ n: Int64) -> Int64 { base + Int64((Double(n) * period).rounded()) }
        if pace == .asFastAsPossible { k = lockstep.join(side, at: k, base: base, period: period) }
        defer { lockstep.leave(side) }
        while !thread.shouldStop, let camera {
            // As fast as possible, but never ahead in time of the other camera, so the two
            // virtual timelines stay together and their frames can pair, however far the
            // clocks have drifted apart in frame numbers.
            if pace == .asFastAsPossible && !lockstep.waitForTurn(side, time: exposed(k), thread: thread) { break }
            let exposure = exposed(k)
            if pace == .realTime {
                if !thread.sleep(untilMonotonicNanoseconds: exposure) { break }
            }
            let sequence = UInt64(k)
            k += 1
            camera.remember(nextFrame: k)
            if timing.dropProbability > 0 && random.nextUnit() < timing.dropProbability {
                camera.remember(dropped: sequence)
                handler(.event(.dropped(count: 1, reason: .simulated)))
                if pace == .asFastAsPossible { lockstep.advance(side, toTime: exposed(k)) }
                continue
            }
            let jitter = timing.jitterNanoseconds
            let noise = jitter > 0 ? Int64((random.nextUnit() * 2 - 1) * Double(jitter)) : 0
            let pixels: SharedPixels
            if self.pixels.isEmpty {
                // A moving board: this frame's own rendering (a stop cancels it).
                guard let rendered = try? camera.framePixels(Int64(sequence)) else { break }
                pixels = rendered
            } else {
                pixels = self.pixels[Int(sequence % UInt64(self.pixels.count))]
            }
            let frame: Frame
            if format.fourCC == .mjpeg {
                let jpeg: SharedBytes
                if jpegs.isEmpty {
                    guard let encoded = try? camera.encode(pixels) else { break }
                    jpeg = encoded
                } else {
                    jpeg = jpegs[Int(sequence % UInt64(jpegs.count))]
                }
                var payload = jpeg.payload
                if timing.corruptFrameProbability > 0 && random.nextUnit() < timing.corruptFrameProbability {
                    payload = sequence % 2 == 0 ? FramePayload(baseAddress: payload.baseAddress, count: payload.count * 6 / 10,
                                                                 owner: payload.owner)
                        : jpeg.damagedPayload
                }
                frame = Frame(image: nil, payload: payload, format: format, timestampNanoseconds: exposure + noise,
                              timestampSource: .midExposure, sequence: sequence, source: identity, exposureNanoseconds: nil,
                              camera: model, release: { _ = jpeg })
            } else {
                frame = Frame(image: pixels.view, payload: pixels.payload, format: format,
                              timestampNanoseconds: exposure + noise, timestampSource: .midExposure,
                              sequence: sequence, source: identity, exposureNanoseconds: nil, camera: model,
                              release: { _ = pixels })
            }
            handler(.frame(frame))
            // Counted only once handed over, so the other camera never runs ahead of what
            // a consumer (a synchronizer with a two-frame queue) has actually received.
            if pace == .asFastAsPossible { lockstep.advance(side, toTime: exposed(k)) }
        }
        handler(.event(.stopped))
    }
}

/// Keeps two as-fast-as-possible cameras together in time: a camera hands over its next frame
/// only when the other camera's next frame is not earlier, so frames reach the synchronizer
/// in the order of their timestamps. (Kept together by frame numbers instead, as it once was,
/// two clocks that drift apart need more and more frames queued on one side to pair: at 40 ppm
/// the rig stalled after 138 000 pairs, at 2000 ppm after 2500.)
final class Lockstep: @unchecked Sendable {
    private let condition = NSCondition()
    private var running = PerSide(repeating: false)
    /// When the next frame each camera will hand over was exposed (its clock's nanoseconds).
    private var next = PerSide<Int64>(repeating: 0)

    /// Registers a starting camera whose frame `n` is exposed at `base + n · period`, and
    /// returns the frame it starts at: `frame`, or the first one within half a frame of the
    /// other camera's next, when that one is already running (so the two meet at once instead
    /// of the late one racing through frames the other left behind). A camera starting alone
    /// gives its partner `partnerWaitSeconds` to start too, since the two are usually started
    /// one after the other; a camera used on its own just starts that much later.
    func join(_ side: StereoSide, at frame: Int64, base: Int64, period: Double, partnerWaitSeconds: Double = 0.2) -> Int64 {
        condition.lock()
        defer { condition.unlock() }
        var start = frame
        if running[side.opposite] {
            let meeting = (Double(next[side.opposite] - base) - period / 2) / period
            start = max(frame, Int64(meeting.rounded(.up)))
        }
        running[side] = true
        next[side] = base + Int64((Double(start) * period).rounded())
        condition.broadcast()
        let deadline = Date(timeIntervalSinceNow: partnerWaitSeconds)
        while !running[side.opposite] {
            if !condition.wait(until: deadline) { break }
        }
        return start
    }

    func leave(_ side: StereoSide) {
        condition.lock()
        running[side] = false
        condition.broadcast()
        condition.unlock()
    }

    /// The camera's next frame is exposed at `time` (it handed over, or dropped, the one before).
    func advance(_ side: StereoSide, toTime time: Int64) {
        condition.lock()
        next[side] = time
        condition.broadcast()
        condition.unlock()
    }

    /// Waits (in 50 ms slices, honouring stop) while the other camera runs and its next frame
    /// is earlier than `time`, this camera's next: of two frames, the earlier goes first, and
    /// at equal times both go. False when asked to stop.
    func waitForTurn(_ side: StereoSide, time: Int64, thread: CaptureThread) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while running[side.opposite] && next[side.opposite] < time {
            if thread.shouldStop { return false }
            _ = condition.wait(until: Date(timeIntervalSinceNow: 0.05))
        }
        return !thread.shouldStop
    }
}

