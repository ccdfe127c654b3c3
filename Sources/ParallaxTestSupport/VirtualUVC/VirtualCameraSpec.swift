import Foundation
import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// How a virtual UVC camera presents itself: identity, formats, controls
/// and the habits of a real driver.
public struct VirtualCameraSpec: Sendable {
    /// One pixel format with its discrete frame sizes and intervals.
    public struct Format: Sendable {
        /// The pixel format code.
        public var fourCC: FourCC
        /// A readable one-line description.
        public var description: String
        /// Compressed (MJPEG): frames of varying size, no stride.
        public var isCompressed: Bool
        /// Discrete frame sizes.
        public var sizes: [ImageSize]
        /// Offered at every size.
        public var intervals: [FrameInterval]
        /// Synthesised by (emulated) libv4l2 conversion rather than the camera.
        var isEmulated = false
        /// A stepwise or continuous size range instead of `sizes` (as CSI and some USB cameras report).
        public var sizeRange: V4L2Range<ImageSize>?
        /// A stepwise or continuous interval range instead of `intervals`.
        public var intervalRange: V4L2Range<FrameInterval>?

        /// A format with discrete sizes and intervals.
        public init(fourCC: FourCC, description: String? = nil, isCompressed: Bool? = nil,
                    sizes: [ImageSize], intervals: [FrameInterval]) {
            self.fourCC = fourCC
            self.description = description ?? fourCC.description
            self.isCompressed = isCompressed ?? (fourCC == .mjpeg)
            self.sizes = sizes
            self.intervals = intervals
        }

        /// A format with a size range and an interval range (stepwise or continuous).
        public init(fourCC: FourCC, description: String? = nil, sizeRange: V4L2Range<ImageSize>,
                    intervalRange: V4L2Range<FrameInterval>) {
            self.init(fourCC: fourCC, description: description, isCompressed: nil,
                      sizes: sizeRange.representativeValues, intervals: intervalRange.representativeValues)
            self.sizeRange = sizeRange
            self.intervalRange = intervalRange
        }

        /// True when `size` can be set exactly.
        func offers(_ size: ImageSize) -> Bool {
            switch sizeRange {
            case nil: return sizes.contains(size)
            case .discrete(let list): return list.contains(size)
            case .continuous(let lo, let hi):
                return (lo.width...hi.width).contains(size.width) && (lo.height...hi.height).contains(size.height)
            case .stepwise(let lo, let hi, let step):
                return (lo.width...hi.width).contains(size.width) && (lo.height...hi.height).contains(size.height)
                    && (size.width - lo.width) % max(1, step.width) == 0 && (size.height - lo.height) % max(1, step.height) == 0
            }
        }

        /// The size a driver sets for a request: nearest offered size, or the request clamped and rounded to the step.
        func nearestSize(to wanted: ImageSize) -> ImageSize {
            func snap(_ value: Int, _ lo: Int, _ hi: Int, _ step: Int) -> Int {
                let clamped = min(max(value, lo), hi)
                let steps = (Double(clamped - lo) / Double(max(1, step))).rounded(.toNearestOrAwayFromZero)
                return min(hi, lo + Int(steps) * max(1, step))
            }
            switch sizeRange {
            case .continuous(let lo, let hi)?:
                return ImageSize(width: snap(wanted.width, lo.width, hi.width, 1), height: snap(wanted.height, lo.height, hi.height, 1))
            case .stepwise(let lo, let hi, let step)?:
                return ImageSize(width: snap(wanted.width, lo.width, hi.width, step.width),
                                 height: snap(wanted.height, lo.height, hi.height, step.height))
            default:
                return sizes.min(by: {
                    abs($0.width - wanted.width) + abs($0.height - wanted.height) < abs($1.width - wanted.width) + abs($1.height - wanted.height)
                }) ?? wanted
            }
        }

        /// The interval a driver sets for a request.
        func nearestInterval(to asked: FrameInterval) -> FrameInterval? {
            switch intervalRange {
            case .continuous(let lo, let hi)?, .stepwise(let lo, let hi, _)?:
                return asked < lo ? lo : (hi < asked ? hi : asked)
            default:
                return intervals.min(by: { abs($0.seconds - asked.seconds) < abs($1.seconds - asked.seconds) })
            }
        }

        /// Bytes per pixel of the first plane (MJPEG: 0, the payload size varies).
        var bytesPerPixel: Int {
            switch fourCC {
            case .grey: return 1
            case .yuyv, .uyvy: return 2
            case .rgb24, .bgr24: return 3
            default: return 0
            }
        }
    }

    /// One control (QUERYCTRL / G_CTRL / S_CTRL).
    public struct Control: Sendable {
        /// Which control.
        public var id: CameraControlID
        /// QUERYCTRL's name.
        public var name: String
        /// Range, step and default, as QUERYCTRL reports them.
        public var minimum: Int32, maximum: Int32, step: Int32, defaultValue: Int32
        /// A boolean control (an auto mode switch).
        public var isBoolean: Bool

        /// A control with its range.
        public init(id: CameraControlID, name: String, minimum: Int32, maximum: Int32, step: Int32 = 1,
                    defaultValue: Int32, isBoolean: Bool = false) {
            self.id = id
            self.name = name
            (self.minimum, self.maximum, self.step, self.defaultValue) = (minimum, maximum, step, defaultValue)
            self.isBoolean = isBoolean
        }
    }

    /// The node path the camera has when the driver is made (`/dev/video0`). It also names
    /// the camera in the driver's test controls (``VirtualUVCDriver/unplug(_:)``, …) for its
    /// whole life: plugged back, it may have another node (``VirtualUVCDriver/node(of:)``).
    public var path: String
    /// QUERYCAP `card`.
    public var card: String
    /// QUERYCAP `driver`.
    public var driver: String
    /// QUERYCAP `bus_info`.
    public var busInfo: String
    /// The native formats, in ENUM_FMT order.
    public var formats: [Format]
    /// The controls.
    public var controls: [Control]
    /// A metadata-only node (UVC creates one beside each video node).
    public var isMetadataNode: Bool
    /// Give the camera a metadata node beside its video node, numbered as the kernel
    /// numbers uvcvideo's (the lowest free number after the video node's), so that a replug
    /// renumbers both as on a real machine.
    public var metadataNode = false
    /// Extra bytes at the end of every row (drivers align rows; the stride is then larger than the width).
    public var rowPadding: Int
    /// Most buffers the driver hands out at REQBUFS.
    public var maximumBuffers: Int
    /// Uniform timestamp jitter, ± this many nanoseconds.
    public var timestampJitterNanoseconds: Int64
    /// Seed for the jitter.
    public var seed: UInt64
    /// Where the driver takes its timestamps (UVC: end of frame; some CSI drivers: start of exposure).
    public var timestampSource: TimestampSource = .endOfFrame
    /// Clock drift in parts per million: frames come every interval × (1 + ppm·10⁻⁶).
    public var driftPPM: Double = 0
    /// Probability that a frame is lost on the bus (a gap in the sequence numbers, as a real
    /// driver reports it).
    public var dropProbability: Double = 0
    /// False to flag timestamps as of an unknown clock (`V4L2_BUF_FLAG_TIMESTAMP_UNKNOWN`), as some old drivers do.
    public var monotonicTimestamps = true
    /// Where the camera is plugged in: cameras whose `bus` numbers are equal share that
    /// bus's periodic bandwidth, and STREAMON fails as the kernel's would (see
    /// ``VirtualUVCDriver``). `nil`: a camera with its bus to itself and no bandwidth limit.
    public var usb: USBLocation?
    /// What MJPEG frames show: real JPEG images (``VirtualPictures``); `nil` fills every
    /// frame with its sequence number instead (enough for timing tests, not for decoding).
    public var pictures: VirtualPictures?
    /// With ``pictures``: the probability that an MJPEG frame arrives damaged, alternately
    /// cut to 60 % of its bytes or with a marker written into its entropy data (a USB
    /// error mid-frame, which uvcvideo does not always flag).
    public var corruptFrameProbability: Double = 0

    /// A camera at `path`; the defaults describe a typical UVC webcam.
    public init(path: String, card: String = "Virtual UVC Camera", driver: String = "uvcvideo",
                busInfo: String = "usb-0000:00:14.0-1", formats: [Format] = VirtualCameraSpec.webcamFormats,
                controls: [Control] = VirtualCameraSpec.webcamControls, isMetadataNode: Bool = false,
                rowPadding: Int = 0, maximumBuffers: Int = 32, timestampJitterNanoseconds: Int64 = 50_000,
                seed: UInt64 = 1) {
        self.path = path
        self.card = card
        self.driver = driver
        self.busInfo = busInfo
        self.formats = formats
        self.controls = controls
        self.isMetadataNode = isMetadataNode
        self.rowPadding = rowPadding
        self.maximumBuffers = maximumBuffers
        self.timestampJitterNanoseconds = timestampJitterNanoseconds
        self.seed = seed
    }

    /// A typical webcam: YUYV at 640×480 and 320×240 (30, 15 fps), MJPEG up to
    /// 1280×720 (30 fps), GREY at 320×240 (60, 30 fps).
    public static let webcamFormats: [Format] = [
        Format(fourCC: .yuyv, description: "YUYV 4:2:2", sizes: [ImageSize(width: 640, height: 480), ImageSize(width: 320, height: 240)],
               intervals: [FrameInterval(numerator: 1, denominator: 30), FrameInterval(numerator: 1, denominator: 15)]),
        Format(fourCC: .mjpeg, description: "Motion-JPEG", sizes: [ImageSize(width: 1280, height: 720), ImageSize(width: 640, height: 480)],
               intervals: [FrameInterval(numerator: 1, denominator: 30)]),
        Format(fourCC: .grey, description: "8-bit Greyscale", sizes: [ImageSize(width: 320, height: 240)],
               intervals: [FrameInterval(numerator: 1, denominator: 60), FrameInterval(numerator: 1, denominator: 30)]),
    ]

    /// Exposure (100 µs units), its auto mode, gain and white balance.
    public static let webcamControls: [Control] = [
        Control(id: .exposureAuto, name: "Auto Exposure", minimum: 0, maximum: 3, defaultValue: 3),
        Control(id: .exposureAbsolute, name: "Exposure Time, Absolute", minimum: 3, maximum: 2047, defaultValue: 100),
        Control(id: .gain, name: "Gain", minimum: 0, maximum: 255, defaultValue: 32),
        Control(id: .autoWhiteBalance, name: "White Balance, Automatic", minimum: 0, maximum: 1, defaultValue: 1, isBoolean: true),
        Control(id: .whiteBalanceTemperature, name: "White Balance Temperature", minimum: 2800, maximum: 6500, step: 10, defaultValue: 4600),
    ]
}

/// A fault the virtual driver can be told to produce.
public enum VirtualCameraFault: Hashable, Sendable {
    /// The driver puts its buffer queue in the error state, as the kernel's vb2 does on a
    /// fatal streaming error (`vb2_queue_error`: vivid's "Inject Fatal Streaming Error",
    /// uvcvideo on a broken stream): poll reports POLLERR and DQBUF and QBUF fail with EIO
    /// until STREAMOFF. (Before the kernel-backed tests this was a one-off EIO from DQBUF,
    /// which vb2 never produces.)
    case queueError
    /// The next `count` polls report data that DQBUF then does not have (EAGAIN).
    case spuriousWakeups(count: Int)
    /// The next `count` QBUFs fail with EINVAL (as under vivid's "Inject VIDIOC_QBUF Error",
    /// which makes one buffer preparation fail).
    case refusedQueueing(count: Int)
    /// The next STREAMON fails with ENOSPC (not enough USB bandwidth).
    case noSpaceAtStreamOn
    /// The next `count` frames come back with V4L2_BUF_FLAG_ERROR.
    case errorFlaggedBuffers(count: Int)
    /// The sequence counter skips `frames` before the next frame.
    case sequenceGap(frames: Int)
    /// The next frame's sequence number is `by` less than the previous frame's (0: it
    /// repeats it, as vivid does when its thread wakes twice within one frame period).
    case sequenceStepsBack(by: Int)
    /// From the next frame on, timestamps are `nanoseconds` ahead of CLOCK_MONOTONIC (behind
    /// it when negative), as under vivid's "Wrap Timestamp", which moves them to 16 s before
    /// the 64-bit nanosecond count wraps.
    case timestampsAhead(nanoseconds: Int64)
    /// The next frame's timestamp is `nanoseconds` before the previous one.
    case timestampBackwards(nanoseconds: Int64)
    /// No frames for `nanoseconds` (nil: until ``VirtualUVCDriver/clearStall(_:)``).
    case stall(nanoseconds: Int64?)
}

/// The pictures a virtual webcam's frames carry: MJPEG frames as JPEG images, encoded at
/// ``quality`` with 4:2:2 chroma as most webcams send, and uncompressed frames as the same
/// view converted to their pixel format; each made on first use (or by ``prepare(size:format:)``)
/// for each frame size by `render` (for the simulated rig's view from one of its cameras).
/// Several views (a board moving from pose to pose) are picked by the frame's due time.
/// Compared by identity.
public final class VirtualPictures: Hashable, @unchecked Sendable {
    /// The JPEG quality (libjpeg's scale, 1…100).
    public let quality: Int
    /// How many views there are.
    public let viewCount: Int
    private let viewAt: @Sendable (Int64) -> Int
    private let render: @Sendable (ImageSize, Int) -> ImageBuffer?
    private let lock = NSLock()
    /// Made views by key (`size`, what, view): JPEG bytes or packed pixels.
    private var made: [String: [UInt8]] = [:]

    /// One picture, rendered by `render` (an RGB or gray image of the size asked for, or `nil`).
    public convenience init(quality: Int = 90, render: @escaping @Sendable (ImageSize) -> ImageBuffer?) {
        self.init(quality: quality, viewCount: 1, viewAt: { _ in 0 }, render: { size, _ in render(size) })
    }

    /// `viewCount` pictures: `render(size, view)` makes view `view`, and a frame due at
    /// `nanoseconds` (the driver's clock) shows view `viewAt(nanoseconds)`.
    public init(quality: Int = 90, viewCount: Int, viewAt: @escaping @Sendable (Int64) -> Int,
                render: @escaping @Sendable (ImageSize, Int) -> ImageBuffer?) {
        self.quality = quality
        self.viewCount = max(1, viewCount)
        self.viewAt = viewAt
        self.render = render
    }

    /// The JPEG of view 0 for frames of `size`, or `nil` when nothing can be rendered at that size.
    public func jpeg(for size: ImageSize) -> [UInt8]? { bytes(size, nil, view: 0) }

    /// The JPEG for a frame of `size` due at `nanoseconds`.
    public func jpeg(for size: ImageSize, dueNanoseconds: Int64) -> [UInt8]? { bytes(size, nil, view: view(at: dueNanoseconds)) }

    /// The packed pixels (rows without padding) of an uncompressed frame of `size` in
    /// `format` due at `nanoseconds`, or `nil` when they cannot be made.
    public func pixels(for size: ImageSize, format: PixelFormat, dueNanoseconds: Int64) -> [UInt8]? {
        bytes(size, format, view: view(at: dueNanoseconds))
    }

    /// Makes every view at `size` now (two at a time): JPEGs, or with `format` that format's
    /// pixels, so that no frame waits for one.
    public func prepare(size: ImageSize, format: PixelFormat? = nil) {
        DispatchQueue.concurrentPerform(iterations: viewCount) { view in _ = bytes(size, format, view: view) }
    }

    private func view(at nanoseconds: Int64) -> Int { min(max(0, viewAt(nanoseconds)), viewCount - 1) }

    /// View `view` at `size`: encoded (`format` nil) or converted to `format`, made once.
    private func bytes(_ size: ImageSize, _ format: PixelFormat?, view: Int) -> [UInt8]? {
        let key = "\(size) \(format?.rawValue ?? "jpeg") \(view)"
        if let bytes = lock.withLock({ made[key] }) { return bytes }
        guard let image = render(size, view) else { return nil }
        let bytes: [UInt8]?
        if let format {
            bytes = (try? image.converted(to: format))?.bytes
        } else {
            bytes = try? JPEGEncoder.encode(image, quality: quality, subsampling: .s422)
        }
        guard let bytes else { return nil }
        lock.withLock { made[key] = bytes }
        return bytes
    }

    /// True only when `a` and `b` are the same object: two sets of pictures made alike are
    /// still different.
    public static func == (a: VirtualPictures, b: VirtualPictures) -> Bool { a === b }
    /// Hashes the object's identity, to agree with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}
