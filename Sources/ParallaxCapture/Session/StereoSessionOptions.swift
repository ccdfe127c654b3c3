import ParallaxGeometry
import ParallaxImage

/// How a ``StereoSession`` rectifies: OpenCV-style rectification settings plus the output
/// orientation, interpolation and the initial convergence plane.
public struct SessionRectification: Hashable, Sendable {
    /// OpenCV's free scaling (0: only valid pixels, 1: every source pixel) and output size.
    public var options: RectificationOptions
    /// How the rectified images are turned and flipped for display.
    public var orientation: OutputOrientation
    /// The resampling filter.
    public var interpolation: Interpolation
    /// Where disparity is zero at the start, in the calibration's translation unit
    /// (`nil`: infinity, the classic rectification). Move it while streaming with
    /// ``StereoSession/setConvergence(atDistance:)``.
    public var convergenceDistance: Double?
    /// Threads per pair, including the session's own (`nil`: every online processor).
    public var threads: Int?

    /// Settings; the defaults are OpenCV's `stereoRectify` defaults, bilinear, no rotation.
    public init(options: RectificationOptions = RectificationOptions(), orientation: OutputOrientation = .identity,
                interpolation: Interpolation = .bilinear, convergenceDistance: Double? = nil, threads: Int? = nil) {
        self.options = options
        self.orientation = orientation
        self.interpolation = interpolation
        self.convergenceDistance = convergenceDistance
        self.threads = threads
    }
}

/// What a session does when pairs come faster than the consumer takes them.
public enum BackPressure: Hashable, Sendable {
    /// Live cameras: at most `queuedPairs` pairs wait for the consumer; when another is
    /// ready the oldest waiting pair is dropped (counted per side as
    /// ``DropReason/consumerBehind``), so the consumer always sees fresh moments and
    /// the cameras' buffers go back to their drivers.
    case newestWins(queuedPairs: Int)
    /// Sources that can wait (the simulated rig running as fast as possible, recorded
    /// folders): the cameras' threads wait for the consumer, so nothing is lost.
    case waitForConsumer

    /// ``waitForConsumer`` for a simulated rig running as fast as possible and for
    /// recordings, ``newestWins(queuedPairs:)`` with two pairs for everything else.
    public static func suited(to device: StereoDevice) -> BackPressure {
        switch device.kind {
        case .recording: return .waitForConsumer
        case .simulated:
            let fast = device.constituents.both.allSatisfy { ($0 as? SimulatedCamera)?.pace == .asFastAsPossible }
            return fast ? .waitForConsumer : .newestWins(queuedPairs: 2)
        case .twoCameras, .sideBySide: return .newestWins(queuedPairs: 2)
        }
    }
}

/// Everything a ``StereoSession`` can be told besides its device and calibration.
public struct StereoSessionOptions: Sendable {
    /// How pairs are rectified when a calibration is given.
    public var rectification: SessionRectification
    /// How frames are paired; `nil`: the approximate policy with the device's frame
    /// interval, a skew limit of half an interval and 2 ms of timestamp jitter, and a
    /// 100 ms latency deadline for live cameras (none for sources that wait).
    public var synchronizer: SynchronizerConfiguration?
    /// What happens when the consumer is slower than the cameras; `nil`:
    /// ``BackPressure/suited(to:)``.
    public var backPressure: BackPressure?
    /// Pressure measurement and frame-rate adaptation.
    public var pressure: PressurePolicy
    /// Reopen a constituent that was unplugged, when it comes back (V4L2 cameras).
    public var reconnects: Bool
    /// How often a vanished camera is looked for (seconds) when nothing announces its
    /// return. A V4L2 camera is watched instead (udev, or a virtual driver's own events):
    /// it is reopened as soon as it arrives, and looked for only every
    /// ``watchedReconnectIntervalSeconds`` besides, in case an announcement never comes
    /// (a container without the kernel's uevents).
    public var reconnectIntervalSeconds: Double
    /// How often a watched camera that vanished is looked for besides its announcements
    /// (seconds).
    public var watchedReconnectIntervalSeconds: Double = 2
    /// Give up (and end the session) when a vanished camera has not come back after this
    /// many seconds; `nil` waits for it as long as the session runs.
    public var reconnectTimeoutSeconds: Double?
    /// Pairs keep their raw frames (and so the drivers' buffers) even when rectified.
    /// Off by default: a rectified pair hands its frames back as soon as it is resampled.
    public var keepsRawFrames: Bool
    /// Use the calibration even when it records other cameras than the device's.
    public var forcesCalibration: Bool
    /// Rectify with the calibration attached to the device (``StereoDevice/attach(_:force:)``)
    /// when the session is given none. On by default (one calibration, attached in one
    /// place); off for raw pairs from a device whose frames carry camera models.
    public var usesAttachedCalibration: Bool = true
    /// The most memory rectified pairs your code holds may take (bytes; 512 MiB by default).
    /// The session rectifies into a pool of buffers: those of the pairs that wait for you and
    /// three more. A pair you keep, or a view of its images, holds its buffers; while you
    /// hold pairs the pool grows, one pair's buffers at a time, each growth a
    /// ``SessionEvent/Kind/poolGrew(pairs:held:)`` event (the only allocations of a running
    /// session). Past this limit the session ends, rather than stop pairing, and
    /// ``StereoSession/pairs`` throws ``StereoSessionError/pairsHeld(held:pairBytes:limitBytes:)``:
    /// keep copies (``StereoPair/copyImages()``) rather than pairs, or raise the limit.
    public var heldPairsLimitBytes: Int = 512 << 20

    /// Options; see each property for the defaults.
    public init(rectification: SessionRectification = SessionRectification(),
                synchronizer: SynchronizerConfiguration? = nil, backPressure: BackPressure? = nil,
                pressure: PressurePolicy = PressurePolicy(), reconnects: Bool = true,
                reconnectIntervalSeconds: Double = 0.25, reconnectTimeoutSeconds: Double? = 60,
                keepsRawFrames: Bool = false, forcesCalibration: Bool = false) {
        self.rectification = rectification
        self.synchronizer = synchronizer
        self.backPressure = backPressure
        self.pressure = pressure
        self.reconnects = reconnects
        self.reconnectIntervalSeconds = reconnectIntervalSeconds
        self.reconnectTimeoutSeconds = reconnectTimeoutSeconds
        self.keepsRawFrames = keepsRawFrames
        self.forcesCalibration = forcesCalibration
    }
}
