import ParallaxCapture
import ParallaxGeometry
import ParallaxImage

/// What an ``EmulatedWebcam`` is: the USB device a UVC 1.0 webcam presents to the kernel
/// (identity, formats, controls, transfer type), the clock it stamps its payloads with, and
/// the faults it can be told to make.
///
/// The defaults describe a typical high-speed webcam: YUYV and MJPEG at 640×480 and
/// 1280×720, GREY at 640×480, isochronous alternate settings with the packet sizes such
/// cameras offer (128 to 3×1024 bytes per microframe), exposure, gain, white balance and
/// focus controls, a 48 MHz device clock.
public struct EmulatedWebcamSpec: Sendable {
    /// One format with its frame sizes; every size offers every interval.
    public struct Format: Sendable, Equatable {
        /// YUYV, GREY (uncompressed) or MJPG.
        public var fourCC: FourCC
        /// Frame sizes, in the order the frame descriptors list them.
        public var sizes: [ImageSize]
        /// Frame intervals, shortest first.
        public var intervals: [FrameInterval]

        /// A format with its sizes and intervals.
        public init(fourCC: FourCC, sizes: [ImageSize], intervals: [FrameInterval]) {
            self.fourCC = fourCC
            self.sizes = sizes
            self.intervals = intervals
        }

        /// Bits per pixel of an uncompressed format (0 for MJPEG).
        var bitsPerPixel: Int { fourCC == .yuyv ? 16 : fourCC == .grey ? 8 : 0 }
        /// True for MJPEG.
        var isCompressed: Bool { fourCC == .mjpeg }
    }

    /// How the video streaming interface moves data.
    public enum Transfer: Sendable, Equatable {
        /// Isochronous, with one alternate setting per packet size (bytes per 125 µs
        /// microframe; above 1024 a size is sent as 2 or 3 transactions of at most 1024).
        case isochronous(packetSizes: [Int])
        /// Bulk, 512-byte packets (high speed), payloads of up to 16 KiB.
        case bulk
    }

    /// A fault the camera makes when told (``EmulatedWebcam/inject(_:)``).
    public enum Fault: Sendable, Equatable {
        /// The next frame's payload headers carry the ERR bit (a USB error the camera saw).
        case errorBit
        /// The next frame is cut to this fraction of its bytes (an MJPEG frame then fails to decode).
        case shortFrame(fraction: Double)
        /// The next frame is this many bytes longer than the committed maximum frame size.
        case oversizedFrame(extraBytes: Int)
        /// No frames for this many nanoseconds.
        case stall(nanoseconds: Int64)
    }

    /// USB vendor id (default 0x1209, pid.codes, whose product 0x0001 is reserved for tests).
    public var vendorID: UInt16 = 0x1209
    /// USB product id.
    public var productID: UInt16 = 0x0001
    /// The manufacturer string.
    public var manufacturer = "Parallax"
    /// The product string (uvcvideo names the video node after it).
    public var product = "Emulated Webcam"
    /// The serial number string; `nil` for none (as cheap cameras have).
    public var serial: String?
    /// The formats, in the order the streaming interface lists them.
    public var formats: [Format]
    /// The transfer type and its packet sizes.
    public var transfer: Transfer = .isochronous(packetSizes: [128, 512, 1024, 2 * 1024, 3 * 1024])
    /// The device clock's frequency (the Video Control header's `dwClockFrequency`).
    public var clockFrequencyHz: UInt32 = 48_000_000
    /// Where the device clock starts against the host's CLOCK_MONOTONIC, in nanoseconds
    /// (the device clock reads `(host + offset) × (1 + drift)` in seconds).
    public var clockOffsetNanoseconds: Int64 = 0
    /// The device clock's rate error, in parts per million (frames are paced by it).
    public var clockDriftPPM: Double = 0
    /// Where the sensor's frame grid sits on the device clock: exposures start at device
    /// times `phase + n × interval`, whenever streaming starts (a free-running sensor), so
    /// two cameras with equal clocks expose together, or this far apart.
    public var exposurePhaseNanoseconds: Int64 = 0
    /// Each frame's transfer starts after its readout plus a uniform random delay of up
    /// to this many nanoseconds (a busy bus or camera).
    public var transferJitterNanoseconds: Int64 = 0
    /// The time from the end of exposure to the start of the transfer.
    public var readoutNanoseconds: Int64 = 2_000_000
    /// The seed of the jitter.
    public var seed: UInt64 = 1
    /// What the frames show: an RGB or gray picture of the size asked for. Every frame
    /// also carries its number in its top-left corner (``FrameMark``).
    public var picture: @Sendable (ImageSize) -> ImageBuffer

    /// A webcam with `formats` (the default set when omitted).
    public init(serial: String? = nil, formats: [Format]? = nil,
                picture: @escaping @Sendable (ImageSize) -> ImageBuffer = EmulatedWebcamSpec.testCard) {
        self.serial = serial
        self.formats = formats ?? Self.webcamFormats
        self.picture = picture
    }

    /// 30, 15 and 5 frames per second.
    public static let webcamIntervals = [30, 15, 5].map { FrameInterval(numerator: 1, denominator: UInt32($0)) }

    /// YUYV and MJPEG at 640×480 and 1280×720, GREY at 640×480.
    public static let webcamFormats = [
        Format(fourCC: .mjpeg, sizes: [ImageSize(width: 640, height: 480), ImageSize(width: 1280, height: 720)],
               intervals: webcamIntervals),
        Format(fourCC: .yuyv, sizes: [ImageSize(width: 640, height: 480), ImageSize(width: 1280, height: 720)],
               intervals: webcamIntervals),
        Format(fourCC: .grey, sizes: [ImageSize(width: 640, height: 480)], intervals: webcamIntervals),
    ]

    /// A test card: a diagonal gradient under a checkerboard of 40-pixel squares (RGB).
    @Sendable public static func testCard(_ size: ImageSize) -> ImageBuffer {
        var bytes = [UInt8](repeating: 0, count: size.width * size.height * 3)
        for y in 0..<size.height {
            for x in 0..<size.width {
                let check = ((x / 40) + (y / 40)) % 2 == 0
                let base = (x + y) * 255 / max(1, size.width + size.height)
                let i = (y * size.width + x) * 3
                bytes[i] = UInt8(check ? min(255, base + 60) : base / 2)
                bytes[i + 1] = UInt8(check ? 200 : 40)
                bytes[i + 2] = UInt8(255 - base)
            }
        }
        // The byte count matches the size by construction.
        return try! ImageBuffer(format: .rgb8, size: size, bytes: bytes)
    }
}

/// A frame's number written into its picture, so a test can tell which frame it holds:
/// 16 bits, most significant first, as 8×8-pixel blocks along the top-left edge (luma 235
/// for a one, 16 for a zero). Flat 8×8 blocks survive JPEG coding at any usual quality:
/// a block's mean is its DC coefficient, quantised to within a few levels of 235 or 16.
public enum FrameMark {
    /// Bits written.
    public static let bits = 16
    /// The block side, in pixels.
    public static let block = 8

    /// Writes `number` (mod 2¹⁶) into a gray8 image's bytes (`stride` bytes a row).
    static func write(_ number: Int, gray bytes: inout [UInt8], stride: Int) {
        for bit in 0..<bits {
            let value: UInt8 = (number >> (bits - 1 - bit)) & 1 == 1 ? 235 : 16
            for y in 0..<block { for x in 0..<block { bytes[y * stride + bit * block + x] = value } }
        }
    }

    /// Writes `number` into a YUYV image's luma (chroma set neutral there).
    static func write(_ number: Int, yuyv bytes: inout [UInt8], width: Int) {
        for bit in 0..<bits {
            let value: UInt8 = (number >> (bits - 1 - bit)) & 1 == 1 ? 235 : 16
            for y in 0..<block {
                for x in 0..<block {
                    let i = (y * width + bit * block + x) * 2
                    bytes[i] = value
                    bytes[i + 1] = 128
                }
            }
        }
    }

    /// Reads the number back from luma (`luma(x, y)`): each block's centre 4×4 mean, a one above 128.
    public static func read(luma: (Int, Int) -> UInt8) -> Int {
        var number = 0
        for bit in 0..<bits {
            var sum = 0
            for y in 2..<6 { for x in 2..<6 { sum += Int(luma(bit * block + x, y)) } }
            number = number << 1 | (sum / 16 > 128 ? 1 : 0)
        }
        return number
    }
}
