import ParallaxGeometry

/// What a stereo device streams: one format for both constituents, and optionally a
/// frame-rate cap.
///
/// The cap is AVFoundation's minimum-frame-duration override: a promise never to deliver
/// more than `maximumFramesPerSecond` frames per second per side. When the cameras offer
/// an interval at or below the cap, they stream at the fastest such interval (which also
/// lowers the USB bandwidth, and so the hardware cost); otherwise they stream at the
/// format's interval and the device decimates (frames it holds back are reported as
/// ``DropReason/frameRateCap`` drops).
public struct StereoConfiguration: Hashable, Sendable, CustomStringConvertible {
    /// The format of each constituent (for a side-by-side camera: of each half).
    public var format: CaptureFormat
    /// The most frames per second each side delivers, or `nil` for the format's rate.
    public var maximumFramesPerSecond: Double?

    /// A configuration; a cap that is not positive and finite is ignored (programmer error
    /// otherwise, so it is dropped rather than trapping).
    public init(format: CaptureFormat, maximumFramesPerSecond: Double? = nil) {
        self.format = format
        self.maximumFramesPerSecond = maximumFramesPerSecond.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
    }

    /// The cap as a frame interval (the shortest interval allowed), when there is a cap.
    public var minimumFrameInterval: FrameInterval? {
        maximumFramesPerSecond.map { FrameInterval(framesPerSecond: $0) }
    }

    /// `1280x720@30:YUYV` or `1280x720@30:YUYV capped at 15 fps`.
    public var description: String {
        guard let cap = maximumFramesPerSecond else { return format.description }
        return "\(format) capped at \(cap.formatted3) fps"
    }
}

/// A format both constituents of a stereo device can stream at once, with its cost.
public struct SharedFormat: Hashable, Sendable, CustomStringConvertible {
    /// The format of each side.
    public var format: CaptureFormat
    /// True when libv4l2 synthesises it by converting (a copy per frame).
    public var isEmulated: Bool
    /// The hardware cost of streaming it on both sides.
    public var cost: HardwareCost

    /// `640x480@30:YUYV (cost 0.896)`.
    public var description: String {
        "\(format)\(isEmulated ? " (emulated)" : "") (cost \(cost.cost.formatted3))"
    }
}

/// A cheaper configuration offered when a stereo device's cost is 1.0 or more.
public struct CostAlternative: Hashable, Sendable, CustomStringConvertible {
    /// The configuration.
    public var configuration: StereoConfiguration
    /// Its hardware cost (below 1.0).
    public var cost: HardwareCost
    /// What it gives up, in words (`MJPG instead of YUYV`, `640x480 instead of 1280x720`).
    public var change: String
    /// How much it gives up (0 is nothing); alternatives are sorted by this.
    public var penalty: Double

    /// `640x480@30:YUYV (cost 0.896: 640x480 instead of 1280x720)`.
    public var description: String { "\(configuration) (cost \(cost.cost.formatted3): \(change))" }
}

/// What to keep when reducing a configuration's cost.
public enum CostPreference: String, Hashable, Sendable, CaseIterable {
    /// Keep the resolution; give up frame rate first.
    case resolution
    /// Keep the frame rate; give up resolution first.
    case frameRate
}
