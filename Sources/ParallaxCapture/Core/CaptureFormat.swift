import ParallaxGeometry
import ParallaxImage

/// A frame duration as a fraction of a second (V4L2's `v4l2_fract`,
/// AVFoundation's frame duration): 1/30 is thirty frames per second.
public struct FrameInterval: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// Seconds numerator.
    public var numerator: UInt32
    /// Seconds denominator (frames per second when the numerator is 1).
    public var denominator: UInt32

    /// - Precondition: a non-zero denominator (programmer error otherwise).
    public init(numerator: UInt32, denominator: UInt32) {
        precondition(denominator != 0, "a frame interval needs a non-zero denominator")
        self.numerator = numerator
        self.denominator = denominator
    }

    /// The interval of `framesPerSecond` frames per second (rounded to 1/1000 s resolution
    /// for non-integer rates).
    public init(framesPerSecond: Double) {
        if framesPerSecond == framesPerSecond.rounded(), framesPerSecond >= 1, framesPerSecond < Double(UInt32.max) {
            self.init(numerator: 1, denominator: UInt32(framesPerSecond))
        } else {
            self.init(numerator: 1000, denominator: UInt32(max(1, min(Double(UInt32.max), (framesPerSecond * 1000).rounded()))))
        }
    }

    /// The interval in seconds.
    public var seconds: Double { Double(numerator) / Double(denominator) }
    /// The interval in nanoseconds.
    public var nanoseconds: Int64 { Int64(numerator) * 1_000_000_000 / Int64(denominator) }
    /// Frames per second.
    public var framesPerSecond: Double { Double(denominator) / Double(numerator) }

    /// True when `a` is the shorter interval (the higher frame rate).
    public static func < (a: FrameInterval, b: FrameInterval) -> Bool {
        UInt64(a.numerator) * UInt64(b.denominator) < UInt64(b.numerator) * UInt64(a.denominator)
    }

    /// A readable one-line description.
    public var description: String {
        let fps = framesPerSecond
        return fps == fps.rounded() ? "\(Int(fps)) fps" : "\(numerator)/\(denominator) s"
    }
}

/// One way a device can stream: pixel format, frame size and frame interval.
public struct CaptureFormat: Hashable, Sendable, CustomStringConvertible {
    /// The V4L2 pixel format code.
    public var fourCC: FourCC
    /// The frame size in pixels.
    public var size: ImageSize
    /// The time between frames.
    public var frameInterval: FrameInterval

    /// A format of `size` pixels in `fourCC` every `frameInterval`.
    public init(fourCC: FourCC, size: ImageSize, frameInterval: FrameInterval) {
        self.fourCC = fourCC
        self.size = size
        self.frameInterval = frameInterval
    }

    /// The uncompressed pixel layout of this code, or `nil` for compressed
    /// (MJPEG) or unknown codes, whose frames carry only ``Frame/payload``.
    public var pixelFormat: PixelFormat? { Self.pixelFormat(of: fourCC) }

    /// The uncompressed pixel layout of a V4L2 code, when Parallax has one.
    public static func pixelFormat(of fourCC: FourCC) -> PixelFormat? {
        switch fourCC {
        case .yuyv: return .yuyv
        case .uyvy: return .uyvy
        case .grey: return .gray8
        case .rgb24: return .rgb8
        case .bgr24: return .bgr8
        case .nv12: return .nv12
        default: return nil
        }
    }

    /// The V4L2 code of a pixel layout, when V4L2 has one.
    public static func fourCC(of format: PixelFormat) -> FourCC? {
        switch format {
        case .yuyv: return .yuyv
        case .uyvy: return .uyvy
        case .gray8: return .grey
        case .rgb8: return .rgb24
        case .bgr8: return .bgr24
        case .nv12: return .nv12
        // I420 and I422 are what MJPEG decodes to (full-range YCbCr); V4L2's YU12 and 422P
        // are studio swing, so they are not the same layout.
        case .rgba8, .bgra8, .i420, .i422: return nil
        }
    }

    /// Parses the command line's `WIDTHxHEIGHT@FPS:FOURCC` (for example
    /// `1280x720@30:YUYV`); the `:FOURCC` part defaults to `YUYV`.
    public init?(parsing text: String) {
        let parts = text.split(separator: ":", maxSplits: 1)
        guard let first = parts.first else { return nil }
        let sizeAndRate = first.split(separator: "@")
        // Frame rates a camera can have: up to 1000 fps (an interval of 1 ms).
        guard sizeAndRate.count == 2, let size = ImageSize(parsing: String(sizeAndRate[0])),
              let fps = Double(sizeAndRate[1]), fps > 0, fps <= 1000 else { return nil }
        let code = parts.count == 2 ? String(parts[1]) : "YUYV"
        guard code.utf8.count == 4 else { return nil }
        self.init(fourCC: FourCC(code), size: size, frameInterval: FrameInterval(framesPerSecond: fps))
    }

    /// A readable one-line description.
    public var description: String { "\(size.width)x\(size.height)@\(frameInterval.framesPerSecond.formatted3):\(fourCC)" }
}

extension Double {
    /// Up to three decimals, trailing zeros dropped (for format strings).
    var formatted3: String {
        if self == rounded() && abs(self) < 1e15 { return String(Int(self)) }
        let scaled = (self * 1000).rounded() / 1000
        return String(scaled)
    }
}
