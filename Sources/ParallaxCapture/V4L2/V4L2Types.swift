import CV4L2
import ParallaxGeometry

/// What `VIDIOC_QUERYCAP` says about a node.
public struct V4L2Capabilities: Hashable, Sendable {
    /// Driver name (`uvcvideo`).
    public var driver: String
    /// Device name (`HD Pro Webcam C920`).
    public var card: String
    /// Bus location (`usb-0000:00:14.0-1`).
    public var busInfo: String
    /// Capabilities of this node (V4L2 `device_caps` when present, else `capabilities`).
    public var deviceCapabilities: UInt32

    /// True for a node that captures video frames.
    public var isVideoCapture: Bool { deviceCapabilities & UInt32(V4L2_CAP_VIDEO_CAPTURE) != 0 }
    /// True for a node that streams through mmap buffers.
    public var canStream: Bool { deviceCapabilities & UInt32(V4L2_CAP_STREAMING) != 0 }
    /// True for a metadata-only node (UVC cameras add one beside each video node).
    public var isMetadataOnly: Bool {
        deviceCapabilities & UInt32(V4L2_CAP_META_CAPTURE) != 0 && !isVideoCapture
    }
}

/// A range of frame intervals or sizes as V4L2 enumerates them.
public enum V4L2Range<Value: Hashable & Sendable>: Hashable, Sendable {
    /// A list of exact values.
    case discrete([Value])
    /// Any value from `min` to `max` in multiples of `step`.
    case stepwise(min: Value, max: Value, step: Value)
    /// Any value from `min` to `max`.
    case continuous(min: Value, max: Value)

    /// The discrete values, or the two ends of a range.
    public var representativeValues: [Value] {
        switch self {
        case .discrete(let values): return values
        case .stepwise(let min, let max, _), .continuous(let min, let max): return min == max ? [min] : [min, max]
        }
    }
}

/// One frame size and the frame intervals offered at it.
public struct V4L2FrameSize: Hashable, Sendable {
    public var size: ImageSize
    public var intervals: V4L2Range<FrameInterval>
}

/// One pixel format of a node, fully enumerated (ENUM_FMT, ENUM_FRAMESIZES, ENUM_FRAMEINTERVALS).
public struct V4L2FormatDescription: Hashable, Sendable {
    public var fourCC: FourCC
    /// The driver's description (`YUYV 4:2:2`).
    public var name: String
    /// True for compressed formats (MJPEG).
    public var isCompressed: Bool
    /// True for formats libv4l2 synthesises by converting (copying).
    public var isEmulated: Bool
    /// Frame sizes: discrete ones each with their intervals, or a range
    /// (whose two ends are listed in `sizes` with their intervals).
    public var sizeRange: V4L2Range<ImageSize>
    public var sizes: [V4L2FrameSize]

    /// Every (size, interval) pair as capture formats (range ends for ranges).
    public var captureFormats: [CaptureFormat] {
        sizes.flatMap { frameSize in
            frameSize.intervals.representativeValues.map {
                CaptureFormat(fourCC: fourCC, size: frameSize.size, frameInterval: $0)
            }
        }
    }
}

/// What the driver made of a requested format.
public struct FormatNegotiation: Hashable, Sendable, CustomStringConvertible {
    /// What was asked for.
    public var requested: CaptureFormat
    /// What the driver set (read back after S_FMT and S_PARM).
    public var actual: CaptureFormat
    /// Bytes per row of the image the driver will deliver.
    public var bytesPerRow: Int
    /// Bytes per frame buffer.
    public var bufferSize: Int

    /// True when the driver changed anything.
    public var wasAdjusted: Bool { requested != actual }

    /// The changes in words, e.g. `["size 1000x700 → 960x720", "interval 1/25 → 1/30"]`.
    public var adjustments: [String] {
        var list: [String] = []
        if requested.fourCC != actual.fourCC { list.append("pixel format \(requested.fourCC) → \(actual.fourCC)") }
        if requested.size != actual.size { list.append("size \(requested.size) → \(actual.size)") }
        if requested.frameInterval != actual.frameInterval {
            list.append("frame rate \(requested.frameInterval) → \(actual.frameInterval)")
        }
        return list
    }

    public var description: String {
        wasAdjusted ? "\(actual) (driver adjusted: \(adjustments.joined(separator: ", ")))" : "\(actual)"
    }
}

/// Camera controls Parallax knows by name.
public enum CameraControlID: String, CaseIterable, Hashable, Sendable {
    case brightness, gain, autoGain, exposureAuto, exposureAbsolute
    case whiteBalanceTemperature, autoWhiteBalance, focusAbsolute, autoFocus

    /// The V4L2 control id.
    public var rawID: UInt32 {
        switch self {
        case .brightness: return CV4L2_CID_BRIGHTNESS
        case .gain: return CV4L2_CID_GAIN
        case .autoGain: return CV4L2_CID_AUTOGAIN
        case .exposureAuto: return CV4L2_CID_EXPOSURE_AUTO
        case .exposureAbsolute: return CV4L2_CID_EXPOSURE_ABSOLUTE
        case .whiteBalanceTemperature: return CV4L2_CID_WHITE_BALANCE_TEMPERATURE
        case .autoWhiteBalance: return CV4L2_CID_AUTO_WHITE_BALANCE
        case .focusAbsolute: return CV4L2_CID_FOCUS_ABSOLUTE
        case .autoFocus: return CV4L2_CID_FOCUS_AUTO
        }
    }

    /// The control of a V4L2 id, if Parallax names it.
    public init?(rawID: UInt32) {
        guard let match = Self.allCases.first(where: { $0.rawID == rawID }) else { return nil }
        self = match
    }
}

/// A control as QUERYCTRL describes it, with its current value.
public struct CameraControl: Hashable, Sendable {
    public var id: CameraControlID
    /// The driver's name for it.
    public var name: String
    public var minimum: Int32
    public var maximum: Int32
    public var step: Int32
    public var defaultValue: Int32
    /// The value read with G_CTRL.
    public var value: Int32
    /// Exposure (`exposureAbsolute`) is in units of 100 µs, per V4L2.
    public var isBoolean: Bool
}

extension String {
    /// A NUL-terminated C character array imported as a tuple.
    init<T>(cArray: T) {
        var copy = cArray
        self = withUnsafeBytes(of: &copy) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }
}
