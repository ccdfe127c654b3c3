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

    /// The listed values, or for a range its two ends followed by the `common` values it contains.
    func candidates(common: [Value], contains: (Value) -> Bool) -> [Value] {
        guard case .discrete(let values) = self else {
            let ends = representativeValues
            return ends + common.filter { contains($0) && !ends.contains($0) }
        }
        return values
    }
}

extension V4L2Range where Value == ImageSize {
    /// True when `size` can be set exactly: listed, or inside the range on its step.
    public func contains(_ size: ImageSize) -> Bool {
        switch self {
        case .discrete(let sizes): return sizes.contains(size)
        case .continuous(let lo, let hi):
            return (lo.width...max(lo.width, hi.width)).contains(size.width)
                && (lo.height...max(lo.height, hi.height)).contains(size.height)
        case .stepwise(let lo, let hi, let step):
            guard V4L2Range.continuous(min: lo, max: hi).contains(size) else { return false }
            return (size.width - lo.width) % Swift.max(1, step.width) == 0
                && (size.height - lo.height) % Swift.max(1, step.height) == 0
        }
    }

    /// The listed sizes, or for a range its two ends and the common camera sizes inside
    /// it (``V4L2CommonValues/sizes``), so two cameras with ranges still meet at 1280×720.
    public var candidateValues: [ImageSize] { candidates(common: V4L2CommonValues.sizes, contains: contains) }
}

extension V4L2Range where Value == FrameInterval {
    /// True when `interval` can be set exactly: listed, or inside the range on its step
    /// (compared as exact fractions).
    public func contains(_ interval: FrameInterval) -> Bool {
        switch self {
        case .discrete(let intervals): return intervals.contains { !($0 < interval) && !(interval < $0) }
        case .continuous(let lo, let hi):
            let (shortest, longest) = hi < lo ? (hi, lo) : (lo, hi)
            return !(interval < shortest) && !(longest < interval)
        case .stepwise(let lo, let hi, let step):
            guard V4L2Range.continuous(min: lo, max: hi).contains(interval) else { return false }
            // (interval − lo) / step must be a whole number: with a/b, c/d, e/f that is
            // (a·d − c·b)·f divisible by b·d·e. Products of three UInt32 fit in 128 bits;
            // intervals are small fractions in practice, so 64-bit with overflow checks suffices.
            let a = Int64(interval.numerator), b = Int64(interval.denominator)
            let c = Int64(lo.numerator), d = Int64(lo.denominator)
            let e = Int64(step.numerator), f = Int64(step.denominator)
            let (ad, o1) = a.multipliedReportingOverflow(by: d)
            let (cb, o2) = c.multipliedReportingOverflow(by: b)
            let (numerator, o3) = (ad - cb).multipliedReportingOverflow(by: f)
            let (bd, o4) = b.multipliedReportingOverflow(by: d)
            let (denominator, o5) = bd.multipliedReportingOverflow(by: e)
            guard !(o1 || o2 || o3 || o4 || o5), denominator != 0 else {
                let steps = (interval.seconds - lo.seconds) / step.seconds
                return abs(steps - steps.rounded()) < 1e-9
            }
            return numerator % denominator == 0
        }
    }

    /// The listed intervals, or for a range its two ends and the common frame rates inside
    /// it (``V4L2CommonValues/intervals``).
    public var candidateValues: [FrameInterval] { candidates(common: V4L2CommonValues.intervals, contains: contains) }
}

/// Sizes and frame rates that cameras commonly offer: the values tried inside a stepwise
/// or continuous range when formats are listed or two cameras' formats are intersected
/// (any other value in a range is still accepted by ``CaptureDevice/supports(_:)``).
public enum V4L2CommonValues {
    /// 160×120 up to 3840×2160, the sizes UVC cameras list most often.
    public static let sizes: [ImageSize] = [
        (160, 120), (320, 240), (640, 360), (640, 480), (800, 600), (1024, 768), (1280, 720), (1280, 800),
        (1280, 960), (1280, 1024), (1600, 1200), (1920, 1080), (2560, 1440), (3840, 2160),
    ].map { ImageSize(width: $0.0, height: $0.1) }
    /// 5 to 120 frames per second.
    public static let intervals: [FrameInterval] = [5, 10, 15, 20, 24, 25, 30, 50, 60, 90, 120].map {
        FrameInterval(numerator: 1, denominator: $0)
    }
}

/// One frame size and the frame intervals offered at it.
public struct V4L2FrameSize: Hashable, Sendable {
    /// The frame size in pixels.
    public var size: ImageSize
    /// The frame intervals offered at this size.
    public var intervals: V4L2Range<FrameInterval>
}

/// One pixel format of a node, fully enumerated (ENUM_FMT, ENUM_FRAMESIZES, ENUM_FRAMEINTERVALS).
public struct V4L2FormatDescription: Hashable, Sendable {
    /// The pixel format code.
    public var fourCC: FourCC
    /// The driver's description (`YUYV 4:2:2`).
    public var name: String
    /// True for compressed formats (MJPEG).
    public var isCompressed: Bool
    /// True for formats libv4l2 synthesises by converting (copying).
    public var isEmulated: Bool
    /// Frame sizes: discrete ones, or a stepwise or continuous range.
    public var sizeRange: V4L2Range<ImageSize>
    /// Sizes with the intervals the driver enumerates at each: every discrete size, or for
    /// a range its two ends and the common sizes inside it (``V4L2Range/candidateValues-219hw``).
    public var sizes: [V4L2FrameSize]

    /// Every listed (size, interval) pair as capture formats; inside interval ranges, the
    /// ends and the common rates (``V4L2Range/candidateValues-1rn5g``).
    public var captureFormats: [CaptureFormat] {
        sizes.flatMap { frameSize in
            frameSize.intervals.candidateValues.map {
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

    /// A readable one-line description.
    public var description: String {
        wasAdjusted ? "\(actual) (driver adjusted: \(adjustments.joined(separator: ", ")))" : "\(actual)"
    }
}

/// Camera controls Parallax knows by name.
public enum CameraControlID: String, CaseIterable, Hashable, Sendable {
    /// `V4L2_CID_BRIGHTNESS`.
    case brightness
    /// `V4L2_CID_GAIN`.
    case gain
    /// `V4L2_CID_AUTOGAIN` (boolean).
    case autoGain
    /// `V4L2_CID_EXPOSURE_AUTO` (menu: 0 auto, 1 manual, 2 shutter priority, 3 aperture priority).
    case exposureAuto
    /// `V4L2_CID_EXPOSURE_ABSOLUTE`, in 100 µs units.
    case exposureAbsolute
    /// `V4L2_CID_WHITE_BALANCE_TEMPERATURE`, in kelvin.
    case whiteBalanceTemperature
    /// `V4L2_CID_AUTO_WHITE_BALANCE` (boolean).
    case autoWhiteBalance
    /// `V4L2_CID_FOCUS_ABSOLUTE`.
    case focusAbsolute
    /// `V4L2_CID_FOCUS_AUTO` (boolean).
    case autoFocus

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
    /// Which control.
    public var id: CameraControlID
    /// The driver's name for it.
    public var name: String
    /// The smallest value.
    public var minimum: Int32
    /// The largest value.
    public var maximum: Int32
    /// Values are `minimum + k·step`.
    public var step: Int32
    /// The driver's default.
    public var defaultValue: Int32
    /// The value read with G_CTRL (exposure in units of 100 µs, per V4L2).
    public var value: Int32
    /// True for an on/off control (the auto modes).
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
