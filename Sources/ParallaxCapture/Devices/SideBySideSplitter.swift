import ParallaxGeometry
import ParallaxImage

/// Splits a camera that delivers both views in one frame (a side-by-side
/// stereo camera: 2560×720 holding two 1280×720 views, left view on the
/// left) into two constituent devices.
///
/// The halves are views into the source frame (no copy): each half-frame
/// keeps the source frame, and so its driver buffer, alive. Both halves
/// carry the source frame's timestamp and sequence number, so they pair
/// exactly. Starting either half starts the source; it stops when both
/// halves have stopped. Compressed formats cannot be split (decode first).
public final class SideBySideSplitter: Sendable {
    /// The camera delivering side-by-side frames.
    public let source: any CaptureDevice
    /// The left half (cam0).
    public let left: SideBySideView
    /// The right half (cam1).
    public let right: SideBySideView
    let hub: Hub

    /// Splits `source`; configure it through either half.
    public init(source: any CaptureDevice) {
        self.source = source
        let hub = Hub(source: source)
        self.hub = hub
        left = SideBySideView(hub: hub, half: .left)
        right = SideBySideView(hub: hub, half: .right)
    }

    /// The two halves, left first.
    public var views: [SideBySideView] { [left, right] }

    /// The source's frames fanned out to the halves that are running.
    final class Hub: Sendable {
        let source: any CaptureDevice
        let handlers = Locked<[StereoSide: @Sendable (CaptureOutput) -> Void]>([:])

        init(source: any CaptureDevice) { self.source = source }

        func start(_ half: StereoSide, handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
            let first = handlers.withLock { h -> Bool in
                let wasEmpty = h.isEmpty
                h[half] = handler
                return wasEmpty
            }
            guard first else { return }
            do {
                try source.start { [weak self] output in self?.deliver(output) }
            } catch {
                handlers.withLock { $0[half] = nil }
                throw error
            }
        }

        func stop(_ half: StereoSide) {
            let (handler, last) = handlers.withLock { h in (h.removeValue(forKey: half), h.isEmpty) }
            if last && handler != nil { source.stop() }
            handler?(.event(.stopped))
        }

        func deliver(_ output: CaptureOutput) {
            let current = handlers.withLock { $0 }
            switch output {
            case .event(.stopped):
                return  // each half reports its own stop
            case .event(let event):
                for handler in current.values { handler(.event(event)) }
            case .frame(let frame):
                for (half, handler) in current {
                    if let piece = Self.half(half, of: frame) { handler(.frame(piece)) }
                }
            }
        }

        /// The half frame: same memory, half the width, the parent kept alive by the release closure.
        static func half(_ half: StereoSide, of frame: Frame) -> Frame? {
            guard let image = frame.image, let size = SideBySideView.halfSize(of: frame.format) else { return nil }
            let bytesPerPixel = image.format.bytesPerPixel
            let offset = half == .left ? 0 : size.width * bytesPerPixel
            let plane1 = image.plane1.map {
                ImagePlane(baseAddress: $0.baseAddress + (half == .left ? 0 : size.width), bytesPerRow: $0.bytesPerRow)
            }
            let view = ImageView(unchecked: image.format, size: size,
                                 plane0: ImagePlane(baseAddress: image.plane0.baseAddress + offset, bytesPerRow: image.plane0.bytesPerRow),
                                 plane1: plane1)
            var format = frame.format
            format.size = size
            let source = DeviceIdentity(stableID: frame.source.stableID + "#\(half)",
                                        name: frame.source.name + " (\(half) half)", path: frame.source.path)
            let parent = frame
            return Frame(image: view,
                         payload: FramePayload(baseAddress: view.plane0.baseAddress,
                                               count: max(0, frame.payload.count - offset)),
                         format: format, timestampNanoseconds: frame.timestampNanoseconds,
                         timestampSource: frame.timestampSource, sequence: frame.sequence, source: source,
                         exposureNanoseconds: frame.exposureNanoseconds, camera: nil, release: { _ = parent })
        }
    }
}

/// One half of a ``SideBySideSplitter``.
public final class SideBySideView: CaptureDevice, Sendable {
    let hub: SideBySideSplitter.Hub
    /// Which half.
    public let half: StereoSide

    init(hub: SideBySideSplitter.Hub, half: StereoSide) {
        self.hub = hub
        self.half = half
    }

    /// Who this device is.
    public var identity: DeviceIdentity {
        let s = hub.source.identity
        return DeviceIdentity(stableID: s.stableID + "#\(half)", name: s.name + " (\(half) half)", path: s.path)
    }

    /// The size of one half of a side-by-side format, or `nil` when it cannot be split
    /// (compressed, or a half width that the pixel format cannot hold).
    public static func halfSize(of format: CaptureFormat) -> ImageSize? {
        guard let pixel = format.pixelFormat, format.size.width % 2 == 0 else { return nil }
        let size = ImageSize(width: format.size.width / 2, height: format.size.height)
        return (try? pixel.validate(size)) != nil ? size : nil
    }

    /// The source's format that carries two halves of `format` side by side (twice the width).
    public static func fullFormat(of format: CaptureFormat) -> CaptureFormat {
        var full = format
        full.size.width *= 2
        return full
    }

    /// The source's splittable formats, each at half the width.
    public func supportedFormats() throws(CaptureError) -> [CaptureFormat] {
        try hub.source.supportedFormats().compactMap { format in
            Self.halfSize(of: format).map { CaptureFormat(fourCC: format.fourCC, size: $0, frameInterval: format.frameInterval) }
        }
    }

    /// True when the source streams twice the width of `format` (see ``CaptureDevice/supports(_:)``).
    public func supports(_ format: CaptureFormat) throws(CaptureError) -> Bool {
        let full = Self.fullFormat(of: format)
        return try hub.source.supports(full) && Self.halfSize(of: full) == format.size
    }

    /// The format in use (see ``CaptureDevice/activeFormat``).
    public var activeFormat: CaptureFormat? {
        hub.source.activeFormat.flatMap { format in
            Self.halfSize(of: format).map { CaptureFormat(fourCC: format.fourCC, size: $0, frameInterval: format.frameInterval) }
        }
    }

    /// Configures the source for twice the width; both halves share the format.
    @discardableResult
    public func configure(_ format: CaptureFormat) throws(CaptureError) -> CaptureFormat {
        let actual = try hub.source.configure(Self.fullFormat(of: format))
        guard let size = Self.halfSize(of: actual) else {
            throw .unsupportedFormat(device: identity.name, requested: format, available: try supportedFormats())
        }
        return CaptureFormat(fourCC: actual.fourCC, size: size, frameInterval: actual.frameInterval)
    }

    /// Starts streaming into `handler` (see ``CaptureDevice/start(_:)``).
    public func start(_ handler: @escaping @Sendable (CaptureOutput) -> Void) throws(CaptureError) {
        guard let format = hub.source.activeFormat, Self.halfSize(of: format) != nil else {
            throw .invalidState(device: identity.name, reason: "the source's format cannot be split into halves (configure an uncompressed format of even width)")
        }
        try hub.start(half, handler: handler)
    }

    /// Stops streaming and waits for the device thread, with a deadline (see ``CaptureDevice/stop()``).
    public func stop() { hub.stop(half) }
}
