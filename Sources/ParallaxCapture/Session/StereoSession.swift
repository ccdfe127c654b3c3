import Foundation
import ParallaxGeometry
import ParallaxImage

/// Two cameras in, rectified matched pairs out: a ``StereoDevice`` → an
/// ``OutputSynchronizer`` → a `Rectifier` (ParallaxImage) → your code.
///
/// ```swift
/// let session = try StereoSession(device: device, calibration: calibration)
/// try session.start()
/// for try await pair in session.pairs { use(pair.left.image, pair.right.image) }
/// ```
///
/// The session starts and stops the device, pairs its frames, releases pairs whose proof
/// is overdue, rectifies each pair once into a small pool of reused buffers, and hands it
/// over as a ``StereoPair`` through ``pairs`` (an `AsyncSequence`) or a callback
/// (``start(delivering:)``). What happens when the consumer is slower than the cameras is
/// chosen by ``BackPressure``.
///
/// Along the way it keeps one account (``statistics``): every frame that reached it ends in
/// a delivered pair or a drop with a reason, beside the frames the cameras lost. It
/// measures its own pressure (``PressureLevel``) and may lower its frame rate while
/// pressed; it survives a camera being unplugged and plugged back (V4L2); it captures
/// still pairs averaged over several frames (``captureStillPair(quality:)``); and it moves
/// the convergence plane while running (``setConvergence(atDistance:)``). What happens is
/// reported through ``events``.
///
/// Threads: the cameras' threads pair frames; one session thread rectifies, delivers,
/// measures pressure and reconnects cameras. A callback runs on the session thread.
public final class StereoSession: Sendable {
    /// The stereo device the session runs.
    public let device: StereoDevice
    /// The calibration the session rectifies with, as given (for the format it was made
    /// at): the one passed to ``init(device:calibration:options:)``, else the one attached
    /// to the device (``StereoDevice/calibration``); `nil` when neither.
    public let calibration: StereoCalibration?
    /// The calibration adapted to the active format (scaled, and centre-cropped when the
    /// aspect ratio differs): what the pairs are rectified with.
    public let activeCalibration: StereoCalibration?
    /// The options.
    public let options: StereoSessionOptions
    /// The back-pressure in use.
    public let backPressure: BackPressure
    /// The format both sides stream.
    public let format: CaptureFormat

    let synchronizer: OutputSynchronizer<Frame>
    let rectifier: Rectifier?
    let models: PerSide<CameraModel>?
    let pairQueue: AsyncQueue<StereoPair>
    let eventQueue = AsyncQueue<SessionEvent>(capacity: 1024)
    let state: Locked<State>
    /// Wakes the session thread and cameras waiting for room.
    let signal = NSCondition()
    /// Thermal zones and CPU frequency limits, where the pressure policy says to read them.
    var machine: MachineState { MachineState(sysRoot: options.pressure.machineStateRoot) }

    /// Where the session is in its life.
    enum Phase: Sendable { case idle, running, ending, stopped }

    /// Whether one side's camera is there. Whether it is switched on is the device's to say
    /// (``StereoDevice/enabledSides``), not stored here.
    enum SideState: Sendable, Equatable {
        case present
        /// Unplugged at this monotonic time; looked for since.
        case disconnected(since: Int64, lastAttempt: Int64)
        /// Its stream ended (the end of a recording).
        case ended
    }

    /// The consumer's callback.
    final class PairHandler: Sendable {
        let call: @Sendable (StereoPair) -> Void
        init(_ call: @escaping @Sendable (StereoPair) -> Void) { self.call = call }
    }

    /// A pair from the synchronizer on its way to the session thread.
    struct Incoming: Sendable {
        var pair: SynchronizedPair<Frame>
        var number: Int
    }

    /// Counters of one pressure window.
    struct Window: Sendable {
        var pairsProcessed = 0
        var rectifyNanoseconds: Int64 = 0
        var consumerPairs = 0
        var consumerNanoseconds: Int64 = 0
        var delivered = 0
        var framesArrived = 0
        var cameraLosses = 0
        var sessionLosses = 0
    }

    /// Everything the session's threads share, under one lock.
    struct State {
        var phase = Phase.idle
        var endReason: String?
        var discardOnEnd = false
        /// Why ``pairs`` throws once it has handed over every pair: the consumer held too
        /// many (``StereoSessionError/pairsHeld(held:pairBytes:limitBytes:)``).
        var failure: StereoSessionError?
        /// The pair callback, held by reference (reading a closure out of the lock would
        /// re-wrap it, one allocation per pair).
        var handler: PairHandler?
        var worker: CaptureThread?
        var startedAt: Int64 = 0
        var sides = PerSide(repeating: SideState.present)

        /// Pairs waiting for the session thread: two for live cameras (newest wins), more
        /// for sources that wait (their cameras are held back before this fills).
        var incoming: Ring<Incoming>
        /// Pairs received from the synchronizer (each one went into ``incoming``).
        var pairsMade = 0
        /// Pairs the session thread took from ``incoming`` and is still rectifying or handing
        /// over (0 or 1): with ``incoming`` and the consumer's queue, where a pair in flight is.
        var processing = 0
        var pushed = PerSide(repeating: 0)
        /// When each side last pushed a frame (monotonic nanoseconds), or was last held in ``waitForRoom(_:)`` for the consumer.
        var lastPush = PerSide<Int64>(repeating: 0)
        var decided = PerSide(repeating: 0)
        var lostByCamera = PerSide<[DropReason: Int]>(repeating: [:])
        var sessionDrops: [DropReason: Int] = [:]
        var delivered = 0
        var pool: PairStoragePool
        var rectifyTimes = DurationHistogram()
        var consumerTimes = DurationHistogram()
        /// When the consumer of ``pairs`` got its last pair (to time how long it took).
        var handedOverAt: Int64?

        var window = Window()
        var windowStart: Int64 = 0
        /// Frames arrived and lost in the last windows (for the loss rate's longer view).
        var lossHistory: [(arrived: Int, lost: Int)] = []
        var pairsPerSecond = 0.0
        var tracker: PressureTracker
        var nominalSince: Int64?
        var lastRateChange: Int64 = 0
        /// The rate frames reach the session (the cameras', or a device's fixed cap below it),
        /// and the session's own cap on pairs per second (`nil`: none).
        let cameraFramesPerSecond: Double
        var capFramesPerSecond: Double? {
            didSet {
                guard let rate = capFramesPerSecond else {
                    cap = nil
                    return
                }
                let interval = Int64(1e9 / rate)
                if cap == nil {
                    cap = FrameRateCap(intervalNanoseconds: interval, cameraIntervalNanoseconds: Int64(1e9 / cameraFramesPerSecond))
                } else {
                    cap?.intervalNanoseconds = interval
                }
            }
        }
        /// The grid of ``capFramesPerSecond``, kept across rate changes.
        var cap: FrameRateCap?

        var events: [SessionEvent] = []
        var stills: [StillRequest] = []
        /// The hot-plug watches for reconnectable constituents, while the session runs.
        var watches: [HotplugWatch] = []
        /// Which sides are watched (their return is announced, not polled for).
        var watched = PerSide(repeating: false)
        /// A side's camera was announced since its last reconnection attempt.
        var arrivals = PerSide(repeating: false)
        /// A side's camera was announced and is not streaming again yet: it is tried at the
        /// short interval (the node may not be ready, or not yet ours to open, at the
        /// announcement).
        var pendingArrival = PerSide(repeating: false)
        /// When a side's camera went away, kept until it delivers a frame again: a camera
        /// that comes back but cannot stream does not restart the reconnect timeout.
        var lostSince = PerSide<Int64?>(repeating: nil)
        /// The last reason a side's reconnection failed, reported once as an event.
        var reconnectFailures = PerSide<String?>(repeating: nil)

        init(policy: PressurePolicy, steadyPool: Int, incomingCapacity: Int, cameraFramesPerSecond: Double) {
            incoming = Ring(capacity: max(1, incomingCapacity))
            tracker = PressureTracker(policy: policy)
            lossHistory.reserveCapacity(policy.lossHorizonWindows + 1)
            pool = PairStoragePool(steady: steadyPool)
            self.cameraFramesPerSecond = cameraFramesPerSecond
        }

        /// Counts a dropped pair; its two frames are losses in the pressure window unless the
        /// session meant to drop it (its own frame-rate cap, or the end).
        mutating func countDrop(_ reason: DropReason) {
            sessionDrops[reason, default: 0] += 1
            if reason != .adaptiveFrameRateCap && reason != .sessionStopped { window.sessionLosses += 2 }
        }

        var currentFramesPerSecond: Double { min(cameraFramesPerSecond, capFramesPerSecond ?? cameraFramesPerSecond) }

        /// Whether `side` delivers frames: its camera is there and switched on (`enabled`, the
        /// device's ``StereoDevice/enabledSides``, read before the lock).
        func isActive(_ side: StereoSide, enabled: PerSide<Bool>) -> Bool { sides[side] == .present && enabled[side] }
    }

    /// Creates a session over a device. A device that is not configured yet is configured
    /// with its ``StereoDevice/preferredFormat()``.
    ///
    /// With a calibration the session rectifies: the calibration is adapted to the active
    /// format now (scaled, centre-cropped for another aspect ratio) and its maps are built,
    /// so a calibration that cannot fit is refused here rather than at the first pair.
    /// Without one, a calibration attached to the device (``StereoDevice/attach(_:force:)``)
    /// is used: one calibration, attached in one place, rectifies (for raw pairs from such a
    /// device, turn ``StereoSessionOptions/usesAttachedCalibration`` off).
    ///
    /// - Throws: ``StereoSessionError/device(_:)`` when the device cannot be configured or
    ///   the calibration records other cameras; ``StereoSessionError/calibrationDoesNotFit(_:)``
    ///   naming what does not fit (compressed frames, a crop that would discard most of the
    ///   image, a rig that cannot be rectified).
    public init(device: StereoDevice, calibration given: StereoCalibration? = nil,
                options: StereoSessionOptions = StereoSessionOptions()) throws(StereoSessionError) {
        self.device = device
        // The device checked an attached calibration's cameras when it was attached.
        let attached = given == nil && options.usesAttachedCalibration ? device.calibration : nil
        let calibration = given ?? attached
        self.calibration = calibration
        self.options = options
        if device.configuration == nil {
            do {
                guard let preferred = try device.preferredFormat() else {
                    throw StereoSessionError.invalidState("the stereo device has no uncompressed shared format that fits; configure it first")
                }
                try device.configure(StereoConfiguration(format: preferred.format))
            } catch let error as StereoSessionError {
                throw error
            } catch let error as StereoDeviceError {
                throw .device(error)
            } catch {
                throw .invalidState("\(error)")
            }
        }
        guard let formats = device.activeFormats else { throw .invalidState("the stereo device is not configured") }
        format = formats.left
        let backPressure = options.backPressure ?? .suited(to: device)
        self.backPressure = backPressure
        if case .newestWins(let queued) = backPressure {
            pairQueue = AsyncQueue(capacity: max(1, queued))
        } else {
            pairQueue = AsyncQueue(capacity: 2)
        }

        if let calibration {
            if !options.forcesCalibration && attached == nil {
                do { try device.checkCameras(of: calibration) } catch { throw .device(error) }
            }
            let settings = options.rectification
            if format.fourCC == .mjpeg {
                // Frames decode at the largest DCT reduction that still covers a smaller
                // rectified output (unless a reduction was set on the device already).
                var decoding = device.mjpegDecoding
                if decoding.scale == .full, let wanted = settings.options.outputSize {
                    decoding.scale = MJPEGScale.largestReduction(from: format.size, covering: wanted)
                    do { try device.setMJPEGDecoding(decoding) } catch { throw .device(error) }
                }
            }
            guard let delivered = device.deliveredImage else { throw .invalidState("the stereo device is not configured") }
            try Self.checkRectifiable(format)
            let adapted = try Self.adapt(calibration, toSize: delivered.size)
            activeCalibration = adapted
            models = PerSide(left: adapted.left, right: adapted.right)
            do {
                rectifier = try Rectifier(calibration: adapted, convergenceDistance: settings.convergenceDistance,
                                          options: settings.options, orientation: settings.orientation,
                                          interpolation: settings.interpolation, threads: settings.threads)
            } catch {
                throw .calibrationDoesNotFit("it cannot be rectified: \(error)")
            }
            // (Decoded MJPEG in YCbCr: the JPEGs' subsampling picks the format at the first frame.)
            if let pixel = delivered.format {
                do { try rectifier?.prepare(for: pixel) } catch {
                    throw .calibrationDoesNotFit("\(format) cannot be rectified to \(settings.options.outputSize ?? delivered.size): \(error)")
                }
            }
        } else {
            activeCalibration = nil
            models = nil
            rectifier = nil
        }

        let interval = device.configuration.map { device.streamingFormat(for: $0).frameInterval.nanoseconds }
            ?? format.frameInterval.nanoseconds
        // Sources that wait for the consumer have no wall-clock deadline: how long a frame
        // waits for its partner says nothing about it there (a slow disk, a busy machine),
        // so pairing depends on the timestamps alone.
        let waits = backPressure == .waitForConsumer
        let settings = options.synchronizer ?? SynchronizerConfiguration(
            policy: .approximate, frameIntervalNanoseconds: interval, timestampJitterNanoseconds: 2_000_000,
            maximumLatencyNanoseconds: waits ? Int64.max / 4 : 100_000_000)
        // The rate frames reach the session: the cameras', or a device's cap below it (its
        // adaptive cap starts from there).
        let delivered = min(1e9 / Double(max(1, interval)), device.configuration?.maximumFramesPerSecond ?? .infinity)
        state = Locked(State(policy: options.pressure, steadyPool: backPressure.queuedPairs + 3,
                             incomingCapacity: waits ? 64 : 2, cameraFramesPerSecond: delivered))
        let box = WeakSession()
        synchronizer = OutputSynchronizer(configuration: settings, pairHandler: { pair in
            box.session?.received(pair)
        }, dropHandler: { drop, _ in
            box.session?.decided(drop.side)
        })
        box.session = self
        for side in StereoSide.allCases where !device.enabledSides[side] { synchronizer.setEnabled(false, for: side) }
    }

    deinit {
        // Only reached when nobody holds the session (a consumer of `pairs` does): the
        // session thread has let go of it, so the device is stopped here, without an account.
        let (worker, watches) = state.withLock { s -> (CaptureThread?, [HotplugWatch]) in
            s.phase = .stopped
            return (s.worker, s.watches)
        }
        for watch in watches { watch.cancel() }
        device.stop()
        synchronizer.finish()
        pairQueue.finish()
        eventQueue.finish()
        worker?.stopAndJoin(timeoutSeconds: 5)
    }

    /// The calibration for `format`: each camera adapted (scaled, or centre-cropped to the
    /// aspect ratio and scaled, see `CameraModel.adapted(to:)`), as a session does before
    /// its first pair.
    ///
    /// MJPEG frames are adapted at their full size (a device decoding them at a DCT
    /// reduction delivers ``StereoDevice/deliveredImage``'s size instead).
    ///
    /// - Throws: ``StereoSessionError/calibrationDoesNotFit(_:)`` for compressed frames other
    ///   than MJPEG, and for an aspect ratio so different that the crop would keep under
    ///   half of the calibrated image.
    public static func adapt(_ calibration: StereoCalibration, to format: CaptureFormat) throws(StereoSessionError) -> StereoCalibration {
        try checkRectifiable(format)
        return try adapt(calibration, toSize: format.size)
    }

    /// Refuses compressed formats the session cannot decode.
    static func checkRectifiable(_ format: CaptureFormat) throws(StereoSessionError) {
        guard format.pixelFormat != nil || format.fourCC == .mjpeg else {
            throw .calibrationDoesNotFit("\(format.fourCC) frames are compressed in a way Parallax does not decode; "
                                         + "choose MJPG or an uncompressed format (YUYV, GREY, NV12, RGB3)")
        }
    }

    /// The calibration adapted to images of `size` (see ``adapt(_:to:)``).
    static func adapt(_ calibration: StereoCalibration, toSize size: ImageSize) throws(StereoSessionError) -> StereoCalibration {
        for side in StereoSide.allCases {
            let camera = calibration[side]
            let kept = camera.areaKept(adaptedTo: size)
            guard kept >= 0.5 else {
                throw .calibrationDoesNotFit("the \(side) camera was calibrated at \(camera.size); \(size) has another "
                                             + "aspect ratio that would keep only \(Int(kept * 100)) % of the "
                                             + "calibrated image; calibrate at this format")
            }
        }
        return calibration.adapted(to: size)
    }

    // MARK: Running

    /// Starts the device and the session thread; read pairs from ``pairs`` (reading them
    /// starts the session too, so calling this first is optional). Calling it again while
    /// the session runs this way does nothing.
    ///
    /// - Throws: ``StereoSessionError/device(_:)`` when the device cannot start (cost,
    ///   bandwidth refused at STREAMON, a camera that failed), ``StereoSessionError/invalidState(_:)``
    ///   when the session has stopped (a session runs once) or delivers to a callback.
    public func start() throws(StereoSessionError) { try start(handler: nil) }

    /// Starts the device and the session thread, handing every pair to `handler` on the
    /// session thread instead of ``pairs``. The handler may keep the pair; while it runs,
    /// newer pairs wait (or are dropped, see ``BackPressure``).
    ///
    /// - Throws: as ``start()``.
    public func start(delivering handler: @escaping @Sendable (StereoPair) -> Void) throws(StereoSessionError) {
        try start(handler: handler)
    }

    private func start(handler: (@Sendable (StereoPair) -> Void)?) throws(StereoSessionError) {
        enum Outcome { case fresh, alreadyRunning, refused(String) }
        let outcome = state.withLock { s -> Outcome in
            switch s.phase {
            case .idle: break
            case .running where handler == nil && s.handler == nil: return .alreadyRunning
            case .running:
                return .refused(s.handler != nil ? "the session is already running and delivers its pairs to the callback given to start(delivering:)"
                                                 : "the session is already running (started by start() or by reading session.pairs); start(delivering:) must come before either")
            case .ending, .stopped:
                return .refused("this session has stopped, and a session runs once; create a new StereoSession over the device to stream again")
            }
            s.phase = .running
            s.handler = handler.map(PairHandler.init)
            s.startedAt = monotonicNanoseconds()
            // A side that has not pushed yet counts as progressing from the start.
            s.lastPush = PerSide(repeating: s.startedAt)
            return .fresh
        }
        switch outcome {
        case .fresh: break
        case .alreadyRunning: return
        case .refused(let reason): throw .invalidState(reason)
        }
        do {
            try device.start { [weak self] output in self?.receive(output) }
        } catch {
            state.withLock { $0.phase = .stopped }
            synchronizer.finish()
            pairQueue.finish()
            eventQueue.finish()
            throw .device(error)
        }
        // Times count from when both sides stream (starting renders simulated views, opens
        // buffers…).
        state.withLock { s in
            s.startedAt = monotonicNanoseconds()
            s.windowStart = s.startedAt
        }
        emit(.started)
        let box = WeakSession()
        box.session = self
        if options.reconnects { watchConstituents(box) }
        let worker = CaptureThread(name: "parallax.session") { thread in Self.run(box, thread: thread) }
        state.withLock { $0.worker = worker }
    }

    /// Stops the device and the session. Pairs not yet read are dropped
    /// (``DropReason/sessionStopped``), so once this returns the account is closed:
    /// every frame is delivered or dropped with a reason. ``pairs`` and ``events`` end.
    /// Idempotent; safe from a pair callback (it then returns before the session thread ends).
    public func stop() { end(reason: "stopped", discarding: true) }

    /// True until the session has stopped.
    public var isRunning: Bool { state.withLock { $0.phase == .running || $0.phase == .ending } }

    /// The pairs, oldest first, for one consumer at a time. The sequence ends when the
    /// session stops (by ``stop()``, at the end of a recording, at thermal shutdown, or when
    /// a camera that vanished does not come back in time).
    public var pairs: StereoPairs { StereoPairs(session: self) }

    /// What happens in the session, as it happens (one consumer at a time).
    public var events: SessionEvents {
        let box = WeakSession()
        box.session = self
        return SessionEvents(queue: eventQueue, isIdle: { box.session?.state.withLock { $0.phase == .idle } ?? false })
    }

    /// The account so far; thread-safe, available at any time.
    public var statistics: StereoSessionStatistics {
        // The session's counts first, then the synchronizer's (pairs it made since are not yet
        // received). Pairs in flight are counted where they are, not derived from the other
        // counts, so a pair the session lost without a reason breaks the account. The collections are copied
        // afresh under the lock, so the caller never shares a buffer with the session, which goes
        // on counting and appending in place. Sharing one would be safe (the reference count
        // orders the caller's last read before the session's next write in place), but Swift's
        // runtime, which keeps the count, is not instrumented: ThreadSanitizer on an optimised
        // build, where the collections' code is inlined into ours, cannot see that order and
        // reports a race.
        let s = state.withLock { s in
            (lostByCamera: s.lostByCamera.map { $0.mapValues { $0 } }, sessionDrops: s.sessionDrops.mapValues { $0 },
             delivered: s.delivered, received: s.pairsMade, held: s.incoming.count + s.processing + pairQueue.count,
             pairsPerSecond: s.pairsPerSecond,
             rectification: s.rectifyTimes.summary, consumer: s.consumerTimes.summary, pressure: s.tracker.level,
             framesPerSecond: s.currentFramesPerSecond, pooled: s.pool.count, events: s.events.map { $0 })
        }
        let paired = synchronizer.statistics
        return StereoSessionStatistics(
            synchronizer: paired, lostByCamera: s.lostByCamera, sessionDrops: s.sessionDrops, pairsReceived: s.received,
            pairsDelivered: s.delivered, pairsInFlight: s.held,
            pairsPerSecond: s.pairsPerSecond, rectification: s.rectification, consumer: s.consumer, pressure: s.pressure,
            framesPerSecond: s.framesPerSecond, pooledBuffers: s.pooled, events: s.events)
    }

    /// The pressure level now.
    public var pressure: PressureLevel { state.withLock { $0.tracker.level } }

    /// Switches one side off (its camera stops; pairs stop and the other side's frames are
    /// dropped as `constituent_disabled`) or on again, while the session runs.
    ///
    /// - Throws: ``StereoSessionError/device(_:)`` when the side cannot start again.
    public func setEnabled(_ isEnabled: Bool, _ side: StereoSide) throws(StereoSessionError) {
        do { try device.setEnabled(isEnabled, side) } catch { throw .device(error) }
    }

    /// Moves the zero-disparity plane to `distance` (the calibration's translation unit;
    /// `nil`: infinity) from the next pair rectified on, without rebuilding the maps (see
    /// `Rectifier.setConvergence(atDistance:)` for the whole-pixel rounding). Pairs already
    /// rectified and waiting for the consumer (those in the pair queue, see
    /// ``StereoSessionOptions``) keep the plane they were made with: each pair's
    /// ``StereoPair/rectification`` says which it has.
    ///
    /// - Returns: the rectification pairs are now resampled with (its
    ///   `StereoRectification.convergenceDistance` is where disparity is really zero).
    /// - Throws: ``StereoSessionError/invalidState(_:)`` for a session without calibration.
    @discardableResult
    public func setConvergence(atDistance distance: Double?) throws(StereoSessionError) -> StereoRectification {
        guard let rectifier, let pixel = format.pixelFormat else {
            throw .invalidState("the session has no calibration, so there is no convergence plane to move")
        }
        rectifier.setConvergence(atDistance: distance)
        return rectifier.rectification(for: pixel)
    }

    /// The rectification pairs are resampled with now, when the session rectifies.
    public var rectification: StereoRectification? {
        guard let rectifier, let pixel = format.pixelFormat else { return nil }
        return rectifier.rectification(for: pixel)
    }

    func emit(_ kind: SessionEvent.Kind, side: StereoSide? = nil) {
        let now = monotonicNanoseconds()
        let event = state.withLock { s -> SessionEvent in
            let identity = side.map { device.identities[$0] }
            let event = SessionEvent(kind, side: side, stableID: identity?.stableID, node: identity?.path,
                                     atSeconds: Double(now - s.startedAt) / 1e9)
            if s.events.count >= 10_000 { s.events.removeFirst(s.events.count - 9_999) }
            s.events.append(event)
            return event
        }
        eventQueue.push(event)
    }

    /// Breaks the reference cycle synchronizer → handler → session.
    final class WeakSession: @unchecked Sendable {
        weak var session: StereoSession?
    }
}

/// The pairs of a ``StereoSession`` as an `AsyncSequence`.
///
/// Reading it starts a session that was not started yet (as ``StereoSession/start()``
/// would; its errors are thrown from the first `next()`), so a forgotten `start()` never
/// leaves a loop waiting. One task reads at a time: a second concurrent reader, or reading
/// a session whose pairs go to a callback (``StereoSession/start(delivering:)``), throws
/// ``StereoSessionError/invalidState(_:)`` saying so. A loop that ended (by `break`, or at
/// the end) lets the next one read.
public struct StereoPairs: AsyncSequence, Sendable {
    /// A rectified (or raw) synchronized pair.
    public typealias Element = StereoPair
    /// Why reading failed: the session could not start, or it is read elsewhere.
    public typealias Failure = StereoSessionError
    let session: StereoSession

    /// Reads pairs as the session delivers them.
    public struct AsyncIterator: AsyncIteratorProtocol {
        /// Why reading failed: the session could not start, or it is read elsewhere.
        public typealias Failure = StereoSessionError
        let session: StereoSession
        /// This iterator's right to read; `nil` when another loop was reading.
        let reader: AsyncQueue<StereoPair>.Reader?
        /// The next pair, or `nil` once the session has ended and every pair was read.
        ///
        /// - Throws: ``StereoSessionError`` when the session could not start, or when
        ///   another loop is reading the pairs or a callback receives them.
        public mutating func next() async throws(StereoSessionError) -> StereoPair? {
            guard reader != nil else {
                throw .invalidState("session.pairs is already being read by another loop; read it from one loop at a time")
            }
            return try await session.nextPair()
        }
    }

    /// The iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(session: session, reader: session.pairQueue.claimReader())
    }
}

extension BackPressure {
    /// Pairs that wait for the consumer.
    var queuedPairs: Int {
        switch self {
        case .newestWins(let n): return max(1, n)
        case .waitForConsumer: return 2
        }
    }
}
