import ParallaxGeometry
import ParallaxImage

/// Two cameras as one device: constituents that share one format and one frame interval,
/// with a hardware cost known before streaming.
///
/// A stereo device is made over any two ``CaptureDevice``s (two V4L2 cameras), over one
/// side-by-side camera (split into two halves with identical timestamps), over the
/// simulated rig, or over a recording's two folders. Its life cycle is
/// ``sharedFormats()`` → ``configure(_:allowingOverBudget:)`` → ``start(_:)`` →
/// ``stop()``:
///
/// - ``sharedFormats()`` lists what both sides can stream at once, native formats first,
///   each with its ``HardwareCost``.
/// - ``configure(_:allowingOverBudget:)`` refuses a cost of 1.0 or more before any stream
///   starts, listing cheaper alternatives (``reducingCost(of:preferring:)`` picks one);
///   it sets both sides, reads both back and refuses when the drivers disagree.
/// - ``start(_:)`` streams both sides into one handler as ``StereoOutput``s; feed them to
///   an ``OutputSynchronizer`` with `push(_:)` to receive pairs.
/// - ``setEnabled(_:_:)`` switches one side off (STREAMOFF: its bandwidth is freed) while
///   the other keeps streaming, and on again.
/// - ``attach(_:force:)`` gives every frame the camera model of its side, scaled and
///   cropped to the active format.
///
/// All methods are thread-safe; outputs reach the handler on the constituents' threads.
public final class StereoDevice: Sendable {
    /// What the constituents are.
    public enum Kind: String, Hashable, Sendable {
        /// Two separate cameras (V4L2, or any two capture devices).
        case twoCameras
        /// One camera delivering both views side by side.
        case sideBySide
        /// The simulated rig.
        case simulated
        /// A recording's cam0 and cam1 folders.
        case recording
    }

    /// The two constituent devices.
    public let constituents: PerSide<any CaptureDevice>
    /// What they are.
    public let kind: Kind
    /// The side-by-side camera itself, for ``Kind/sideBySide`` (one stream on the bus).
    let sideBySideSource: (any CaptureDevice)?
    let state = Locked(State())

    struct State {
        var configuration: StereoConfiguration?
        var allowOverBudget = false
        var active: PerSide<CaptureFormat>?
        var enabled = PerSide(repeating: true)
        var streaming = false
        var handler: OutputHandler?
        var calibration: StereoCalibration?
        var models: PerSide<CameraModel>?
        /// Each side's decimation to the configuration's cap, while the cameras stream
        /// faster than it (`nil` otherwise); a new grid at every start of a side.
        var caps: PerSide<FrameRateCap?> = PerSide(repeating: nil)
        /// How MJPEG frames are decoded, and each side's decoder while an MJPEG format streams.
        var decoding = MJPEGDecoding()
        var decoders: PerSide<MJPEGFrameDecoder?> = PerSide(repeating: nil)
    }

    /// The consumer's handler, held by reference: a closure read out of the lock as a
    /// value is re-wrapped (a reabstraction thunk, one allocation) every time; a class
    /// reference is only retained.
    final class OutputHandler: Sendable {
        let call: @Sendable (StereoOutput) -> Void
        init(_ call: @escaping @Sendable (StereoOutput) -> Void) { self.call = call }
    }

    init(constituents: PerSide<any CaptureDevice>, kind: Kind, sideBySideSource: (any CaptureDevice)? = nil) {
        self.constituents = constituents
        self.kind = kind
        self.sideBySideSource = sideBySideSource
    }

    /// A stereo device over two cameras, left and right as in the calibration (the
    /// extrinsics map points from the left camera's frame into the right's).
    public convenience init(left: any CaptureDevice, right: any CaptureDevice) {
        self.init(constituents: PerSide(left: left, right: right), kind: .twoCameras)
    }

    /// A stereo device over one side-by-side camera (left view in the left half).
    public convenience init(sideBySide source: any CaptureDevice) {
        let splitter = SideBySideSplitter(source: source)
        self.init(constituents: PerSide(left: splitter.left, right: splitter.right), kind: .sideBySide, sideBySideSource: source)
    }

    /// The simulated rig as a stereo device.
    public convenience init(simulated rig: SimulatedRigDevice) {
        self.init(constituents: PerSide(left: rig.left, right: rig.right), kind: .simulated)
    }

    /// A recording in the EuRoC layout (`DIR/cam0` left, `DIR/cam1` right) as a stereo device.
    ///
    /// - Throws: ``CaptureError/recording(path:reason:)`` naming the folder or file at fault.
    public convenience init(recording directory: String, pace: SimulationPace = .asFastAsPossible) throws(CaptureError) {
        let left = try RecordedFolderDevice(directory: directory, side: .left, pace: pace)
        let right = try RecordedFolderDevice(directory: directory, side: .right, pace: pace)
        self.init(constituents: PerSide(left: left, right: right), kind: .recording)
    }

    deinit { stop() }

    /// The constituents' identities.
    public var identities: PerSide<DeviceIdentity> { constituents.map(\.identity) }
    /// The configuration in use, once configured.
    public var configuration: StereoConfiguration? { state.withLock { $0.configuration } }
    /// The format each side streams, once configured (equal on both sides).
    public var activeFormats: PerSide<CaptureFormat>? { state.withLock { $0.active } }

    /// How MJPEG frames are decoded (the JPEG's own YCbCr planes at full size unless set).
    public var mjpegDecoding: MJPEGDecoding { state.withLock { $0.decoding } }

    /// Sets how MJPEG frames are decoded, from the next ``start(_:)`` on.
    ///
    /// - Throws: ``StereoDeviceError/invalidState(_:)`` while streaming.
    public func setMJPEGDecoding(_ decoding: MJPEGDecoding) throws(StereoDeviceError) {
        try state.withLock { s throws(StereoDeviceError) in
            guard !s.streaming else { throw .invalidState("the MJPEG decoding cannot change while the stereo device streams") }
            s.decoding = decoding
        }
    }

    /// What the frames of the active format are delivered as: the format's own pixel layout
    /// and size, or for MJPEG the size they decode to and `nil` for the pixel format (the
    /// JPEGs' subsampling decides between I420 and I422 unless ``mjpegDecoding`` asks for
    /// gray or BGR/RGB). `nil` before the device is configured.
    public var deliveredImage: (format: PixelFormat?, size: ImageSize)? {
        state.withLock { s -> (PixelFormat?, ImageSize)? in
            guard let format = s.active?.left else { return nil }
            guard format.fourCC == .mjpeg else { return (format.pixelFormat, format.size) }
            let size = s.decoding.decodedSize(of: format.size)
            switch s.decoding.output {
            case .ycbcr: return (nil, size)
            case .gray8: return (.gray8, size)
            case .bgr8: return (.bgr8, size)
            case .rgb8: return (.rgb8, size)
            }
        }
    }
    /// Which sides are switched on.
    public var enabledSides: PerSide<Bool> { state.withLock { $0.enabled } }
    /// True while streaming.
    public var isStreaming: Bool { state.withLock { $0.streaming } }
    /// The hardware cost of the active configuration with the sides that are switched on
    /// now (a side switched off costs nothing), or `nil` before ``configure(_:allowingOverBudget:)``.
    public var hardwareCost: HardwareCost? {
        let (active, enabled) = state.withLock { ($0.active, $0.enabled) }
        guard let active else { return nil }
        return cost(streaming: active.left, enabled: enabled)
    }

    // MARK: Configuration

    /// Sets both sides to `configuration`, reads both back, and remembers it for ``start(_:)``.
    ///
    /// With a frame-rate cap the cameras are set to the fastest interval at or below the
    /// cap that both offer; if they offer none, they keep the format's interval and the
    /// device decimates.
    ///
    /// - Parameters:
    ///   - configuration: the format for both sides (for a side-by-side camera, of each half)
    ///     and an optional frame-rate cap; both cameras must offer the format.
    ///   - allowingOverBudget: configure even when the cost is 1.0 or more (for
    ///     measuring what the kernel does; ``start(_:)`` then tries STREAMON anyway).
    /// - Returns: the configuration as set (the drivers may have adjusted size or interval).
    /// - Throws: ``StereoDeviceError/formatNotOffered(_:missingOn:leftOffers:rightOffers:)``,
    ///   ``StereoDeviceError/overBudget(_:cost:alternatives:separateBusesCost:)`` before
    ///   touching the cameras, ``StereoDeviceError/driversDisagree(requested:left:right:)``
    ///   after reading back, ``StereoDeviceError/capture(_:side:)``.
    @discardableResult
    public func configure(_ configuration: StereoConfiguration,
                          allowingOverBudget: Bool = false) throws(StereoDeviceError) -> StereoConfiguration {
        guard !isStreaming else { throw .invalidState("cannot configure a stereo device while it streams; stop it first") }
        try requireOffered(configuration.format)
        let streaming = streamingFormat(for: configuration)
        let estimate = cost(streaming: streaming, enabled: PerSide(repeating: true))
        if !estimate.runs && !allowingOverBudget {
            throw .overBudget(configuration, cost: estimate, alternatives: alternatives(to: configuration),
                              separateBusesCost: separateBusesCost(streaming))
        }
        var actual = PerSide(repeating: streaming)
        for side in StereoSide.allCases {
            do { actual[side] = try constituents[side].configure(streaming) } catch {
                throw .capture(error, side: side)
            }
        }
        guard actual.left == actual.right else {
            throw .driversDisagree(requested: streaming, left: actual.left, right: actual.right)
        }
        let set = StereoConfiguration(format: actual.left, maximumFramesPerSecond: configuration.maximumFramesPerSecond)
        state.withLock { s in
            s.configuration = set
            s.allowOverBudget = allowingOverBudget
            s.active = actual
            s.models = s.calibration.map { Self.models(of: $0, for: actual) }
        }
        return set
    }

    /// The format the cameras are set to for `configuration`: its format, at the fastest
    /// interval at or below the cap that both sides offer (the format's own interval
    /// when there is no cap, or when they offer none).
    public func streamingFormat(for configuration: StereoConfiguration) -> CaptureFormat {
        guard let cap = configuration.minimumFrameInterval, configuration.format.frameInterval < cap else {
            return configuration.format
        }
        var candidates = [cap] + V4L2CommonValues.intervals
        for device in constituents.both {
            let listed = (try? device.supportedFormats()) ?? []
            candidates += listed.filter { $0.fourCC == configuration.format.fourCC && $0.size == configuration.format.size }
                .map(\.frameInterval)
        }
        let usable = candidates.filter { !($0 < cap) }.sorted()
        for interval in usable {
            var format = configuration.format
            format.frameInterval = interval
            if constituents.both.allSatisfy({ (try? $0.supports(format)) == true }) { return format }
        }
        return configuration.format
    }

    /// Every format both sides can stream at once: native formats before emulated ones,
    /// then by hardware cost (cheapest first), then larger and faster first.
    ///
    /// - Throws: ``StereoDeviceError/noSharedFormat(left:right:leftOffers:rightOffers:)``
    ///   naming what each side offers when there is none.
    public func sharedFormats() throws(StereoDeviceError) -> [SharedFormat] {
        let offers = try offeredFormats()
        var seen = Set<CaptureFormat>()
        var shared: [SharedFormat] = []
        for format in offers.left + offers.right where seen.insert(format).inserted {
            guard constituents.both.allSatisfy({ (try? $0.supports(format)) == true }) else { continue }
            shared.append(SharedFormat(format: format, isEmulated: FourCC.libv4l2Emulated.contains(format.fourCC),
                                       cost: cost(streaming: format, enabled: PerSide(repeating: true))))
        }
        guard !shared.isEmpty else {
            throw .noSharedFormat(left: constituents.left.identity.name, right: constituents.right.identity.name,
                                  leftOffers: Self.summary(offers.left), rightOffers: Self.summary(offers.right))
        }
        return shared.sorted { a, b in
            if a.isEmulated != b.isEmulated { return !a.isEmulated }
            if a.cost.cost != b.cost.cost { return a.cost.cost < b.cost.cost }
            let (pa, pb) = (a.format.size.width * a.format.size.height, b.format.size.width * b.format.size.height)
            if pa != pb { return pa > pb }
            return a.format.frameInterval < b.format.frameInterval
        }
    }

    /// A sensible default when the user names no format: among the shared formats that run
    /// (cost below 1.0), native and uncompressed, the largest both cameras deliver at
    /// ``preferredFramesPerSecond`` or more (the faster among equal sizes). When none is
    /// that fast, the fastest, then the largest. Never simply the largest: drivers list
    /// their biggest sizes at a few frames per second (vivid: 3840×2160 at 2 fps, and
    /// 640×480 at 25 at most).
    public func preferredFormat() throws(StereoDeviceError) -> SharedFormat? {
        Self.preferred(among: try sharedFormats())
    }

    /// The frame rate ``preferredFormat()`` looks for first: 25 fps, the PAL rate many
    /// cameras (and vivid at 640×480) top out at.
    public static let preferredFramesPerSecond = 24.9

    /// ``preferredFormat()``'s choice among `formats`.
    static func preferred(among formats: [SharedFormat]) -> SharedFormat? {
        let usable = formats.filter { $0.cost.runs && !$0.isEmulated && $0.format.pixelFormat != nil }
        func area(_ f: SharedFormat) -> Int { f.format.size.width * f.format.size.height }
        func rate(_ f: SharedFormat) -> Double { f.format.frameInterval.framesPerSecond }
        let fast = usable.filter { rate($0) >= preferredFramesPerSecond }
        if !fast.isEmpty {
            return fast.max { a, b in area(a) != area(b) ? area(a) < area(b) : rate(a) < rate(b) }
        }
        return usable.max { a, b in rate(a) != rate(b) ? rate(a) < rate(b) : area(a) < area(b) }
    }

    func offeredFormats() throws(StereoDeviceError) -> PerSide<[CaptureFormat]> {
        var offers = PerSide<[CaptureFormat]>(repeating: [])
        for side in StereoSide.allCases {
            do { offers[side] = try constituents[side].supportedFormats() } catch { throw .capture(error, side: side) }
        }
        return offers
    }

    /// `YUYV 640x480@30, 320x240@30` style summaries, grouped by pixel format.
    static func summary(_ formats: [CaptureFormat]) -> [String] {
        var groups: [(fourCC: FourCC, modes: [String])] = []
        for format in formats {
            let mode = "\(format.size)@\(format.frameInterval.framesPerSecond.formatted3)"
            if let index = groups.firstIndex(where: { $0.fourCC == format.fourCC }) {
                groups[index].modes.append(mode)
            } else {
                groups.append((format.fourCC, [mode]))
            }
        }
        return groups.map { "\($0.fourCC) \($0.modes.joined(separator: " "))" }
    }

    private func requireOffered(_ format: CaptureFormat) throws(StereoDeviceError) {
        let offers = try offeredFormats()
        let missing = StereoSide.allCases.filter { side in !offers[side].contains { $0.fourCC == format.fourCC } }
        guard missing.isEmpty else {
            if Set(offers.left.map(\.fourCC)).isDisjoint(with: offers.right.map(\.fourCC)) {
                throw .noSharedFormat(left: constituents.left.identity.name, right: constituents.right.identity.name,
                                      leftOffers: Self.summary(offers.left), rightOffers: Self.summary(offers.right))
            }
            throw .formatNotOffered(format, missingOn: missing, leftOffers: Self.summary(offers.left),
                                    rightOffers: Self.summary(offers.right))
        }
    }

    // MARK: Calibration

    /// Attaches a stereo calibration: every frame then carries its side's camera model for
    /// the active format (scaled, and centre-cropped when the aspect ratio differs; see
    /// `CameraModel.adapted(to:)`), and a ``StereoSession`` created over the device later
    /// rectifies with it (unless given another). `nil` detaches.
    ///
    /// When the calibration records the cameras it was made for
    /// (`StereoCalibration.calibratedCameras`), they must be this device's
    /// constituents (by stable identity) unless `force` is true.
    ///
    /// - Throws: ``StereoDeviceError/calibrationForOtherCameras(calibrated:attached:)``.
    public func attach(_ calibration: StereoCalibration?, force: Bool = false) throws(StereoDeviceError) {
        if let calibration, !force { try checkCameras(of: calibration) }
        state.withLock { s in
            s.calibration = calibration
            s.models = calibration.flatMap { c in s.active.map { Self.models(of: c, for: $0) } }
        }
    }

    /// Checks that `calibration` was made for this device's cameras, when it records them
    /// (`StereoCalibration.calibratedCameras`); files that do not record them pass.
    ///
    /// - Throws: ``StereoDeviceError/calibrationForOtherCameras(calibrated:attached:)``.
    public func checkCameras(of calibration: StereoCalibration) throws(StereoDeviceError) {
        guard let recorded = calibration.calibratedCameras else { return }
        let attached = identities.map(\.stableID)
        guard recorded == attached else { throw .calibrationForOtherCameras(calibrated: recorded, attached: attached) }
    }

    /// The calibration attached with ``attach(_:force:)`` (as given, for the format it was
    /// made at), or `nil`. A ``StereoSession`` over this device rectifies with it unless
    /// it is given another.
    public var calibration: StereoCalibration? { state.withLock { $0.calibration } }

    /// The camera models of the active format, when a calibration is attached and the device is configured.
    public var cameraModels: PerSide<CameraModel>? { state.withLock { $0.models } }

    static func models(of calibration: StereoCalibration, for formats: PerSide<CaptureFormat>) -> PerSide<CameraModel> {
        PerSide { side in calibration[side].adapted(to: formats[side].size) }
    }
}

extension StereoCalibration {
    /// The stable identities of the cameras this calibration was made for, when the file
    /// records them (`"cameras": {"left": ID, "right": ID}`); `nil` for files that do not
    /// (older files, OpenCV's), which attach to any cameras.
    public var calibratedCameras: PerSide<String>? {
        get {
            guard let object = extra["cameras"]?.object, let left = object["left"]?.string,
                  let right = object["right"]?.string else { return nil }
            return PerSide(left: left, right: right)
        }
        set {
            extra["cameras"] = newValue.map { .object(JSONObject([("left", .string($0.left)), ("right", .string($0.right))])) }
        }
    }
}
