import ParallaxGeometry

/// The USB bus classes whose periodic bandwidth Parallax budgets.
///
/// Isochronous (video) transfers are scheduled once per service interval: a 1 ms frame at
/// full speed, a 125 µs microframe at high speed and SuperSpeed. Each bus class reserves
/// part of every interval for periodic transfers:
///
/// - full speed (12 Mbit/s): 1500 bytes per 1 ms frame, 90 % periodic → 1350 bytes
///   (USB 2.0 §5.6.4); one isochronous packet carries at most 1023 bytes.
/// - high speed (480 Mbit/s): 7500 bytes per microframe, 80 % periodic → 6000 bytes
///   (USB 2.0 §5.6.4); one endpoint moves at most 3 × 1024 bytes per microframe.
/// - SuperSpeed (5 Gbit/s and up): the line rate after encoding (8b/10b at 5 Gbit/s,
///   128b/132b above) per 125 µs, 90 % periodic (the xHCI bandwidth rules keep 10 % for
///   asynchronous traffic) → 56,250 bytes at 5 Gbit/s; one endpoint moves at most
///   3 × 16 × 1024 = 49,152 bytes per interval.
///
/// These are the budgets the host controller driver enforces when it admits a stream; real
/// controllers also spend bus time on packet overhead, so a bus near 1.0 may still refuse.
public enum USBSpeed: Hashable, Sendable, CustomStringConvertible {
    /// USB 1.1 full speed, 12 Mbit/s.
    case full
    /// USB 2.0 high speed, 480 Mbit/s.
    case high
    /// SuperSpeed at this line rate in Mbit/s (5000, 10000 or 20000).
    case superSpeed(megabitsPerSecond: Double)

    /// The bus class of a negotiated speed as sysfs reports it (`speed`, Mbit/s); `nil`
    /// for low speed (1.5), which carries no isochronous video.
    public init?(megabitsPerSecond speed: Double) {
        switch speed {
        case ..<2: return nil
        case ..<100: self = .full
        case ..<1000: self = .high
        default: self = .superSpeed(megabitsPerSecond: speed)
        }
    }

    /// The service interval in seconds (1 ms at full speed, 125 µs otherwise).
    public var intervalSeconds: Double { self == .full ? 1e-3 : 125e-6 }

    /// Bytes per service interval the bus reserves for periodic (isochronous) transfers.
    public var periodicBudgetBytes: Int {
        switch self {
        case .full: return 1350
        case .high: return 6000
        case .superSpeed(let mbps):
            let efficiency = mbps <= 5000 ? 0.8 : 128.0 / 132.0
            return Int((mbps * 1e6 * efficiency / 8 * intervalSeconds * 0.9).rounded(.down))
        }
    }

    /// The most one endpoint can move per service interval.
    public var largestEndpointBytes: Int {
        switch self {
        case .full: return 1023
        case .high: return 3 * 1024
        case .superSpeed: return 3 * 16 * 1024
        }
    }

    /// Packet sizes assumed when the camera's own descriptors are not known.
    ///
    /// High speed: the video streaming alternate settings of a common UVC webcam (192 to
    /// 3060 bytes: 1×192 … 1×944, 2×640, 2×800, 2×992, 3×896, 3×1020), the shape most UVC
    /// cameras share. Full speed: every size up to 1023. SuperSpeed: multiples of 1024 (one
    /// to 48 packets per interval), as SuperSpeed UVC cameras offer bursts.
    public var typicalPacketSizes: [Int] {
        switch self {
        case .full: return [128, 256, 384, 512, 640, 768, 896, 1023]
        case .high: return [192, 384, 512, 640, 800, 944, 1280, 1600, 1984, 2688, 3060]
        case .superSpeed: return (1...48).map { $0 * 1024 }
        }
    }

    /// `USB 2.0 high speed` and the like.
    public var description: String {
        switch self {
        case .full: return "USB full speed (12 Mbit/s)"
        case .high: return "USB 2.0 high speed (480 Mbit/s)"
        case .superSpeed(let mbps): return "USB SuperSpeed (\(mbps.formatted3) Mbit/s)"
        }
    }
}

/// How a UVC camera's stream turns into bus bandwidth (UVC 1.5 §2.4.3, and how Linux's
/// uvcvideo driver chooses an alternate setting at STREAMON).
public enum UVCBandwidth {
    /// The UVC payload header each isochronous packet starts with (12 bytes for the common
    /// header with presentation time and source clock).
    public static let payloadHeaderBytes = 12

    /// Bits per pixel of the uncompressed V4L2 formats the cost model knows.
    static let uncompressedBitsPerPixel: [FourCC: Int] = {
        var table: [FourCC: Int] = [:]
        for (bits, codes) in [(8, ["GREY", "BA81", "GBRG", "GRBG", "RGGB"]), (12, ["NV12", "NV21", "YU12", "YV12"]),
                              (16, ["YUYV", "UYVY", "YVYU", "VYUY", "Y16 ", "Z16 ", "RGBP", "Y10 ", "Y12 "]),
                              (24, ["RGB3", "BGR3"]), (32, ["AR24", "XR24", "BA24", "RGB4", "BGR4"])] {
            for code in codes { table[FourCC(code)] = bits }
        }
        return table
    }()

    /// The compressed formats UVC webcams send, which take the camera's largest packet.
    public static let compressedFormats: Set<FourCC> = [.mjpeg, "JPEG", "H264", "HEVC"]

    /// Every format the cost model knows, uncompressed then compressed, each sorted.
    public static var knownFormats: [FourCC] {
        uncompressedBitsPerPixel.keys.sorted { $0.description < $1.description }
            + compressedFormats.sorted { $0.description < $1.description }
    }

    /// Bits per pixel of an uncompressed V4L2 format, or `nil` for compressed and unknown codes.
    public static func bitsPerPixel(_ fourCC: FourCC) -> Int? { uncompressedBitsPerPixel[fourCC] }

    /// The bytes per service interval the camera asks for (`dwMaxPayloadTransferSize`):
    /// for an uncompressed format the frame bytes times the frame rate spread over the
    /// intervals of a second, rounded up, plus the payload header; `nil` for a compressed
    /// format, whose cameras ask for the largest packet (see ``packetBytes(for:speed:offered:)``).
    public static func payloadBytesPerInterval(_ format: CaptureFormat, speed: USBSpeed) -> Int? {
        guard let bits = bitsPerPixel(format.fourCC) else { return nil }
        // In Double: width × height × bits overflows Int for absurd sizes; a payload beyond
        // Int32 is far past any packet, so it is held there (no packet holds it either way).
        let bytesPerSecond = Double(format.size.width) * Double(format.size.height) * Double(bits) / 8
            * format.frameInterval.framesPerSecond
        let bytes = (bytesPerSecond * speed.intervalSeconds).rounded(.up)
        return bytes.isFinite && bytes < Double(Int32.max) ? Int(bytes) + payloadHeaderBytes : Int(Int32.max)
    }

    /// The packet uvcvideo reserves: the smallest alternate setting at least as large as
    /// the payload, or for compressed formats the largest one (`nil` when no setting is
    /// large enough: uvcvideo then fails STREAMON).
    public static func packetBytes(for payload: Int?, speed: USBSpeed, offered: [Int]) -> Int? {
        let sizes = (offered.isEmpty ? speed.typicalPacketSizes : offered).sorted()
        guard let payload else { return sizes.last }
        return sizes.first { $0 >= payload }
    }
}

/// One camera stream as the cost model sees it: a format on a bus.
public struct CostedStream: Hashable, Sendable {
    /// The format the camera streams (the whole frame for a side-by-side camera).
    public var format: CaptureFormat
    /// The bus it is on, e.g. `usb bus 3`; streams with the same name share its bandwidth.
    public var bus: String
    /// The bus's speed class.
    public var speed: USBSpeed
    /// The camera's packet sizes (empty: ``USBSpeed/typicalPacketSizes``).
    public var offeredPacketSizes: [Int]
    /// Which side it serves (`nil` for a side-by-side camera's single stream).
    public var side: StereoSide?

    /// A stream of `format` on `bus`.
    public init(format: CaptureFormat, bus: String, speed: USBSpeed, offeredPacketSizes: [Int] = [], side: StereoSide? = nil) {
        self.format = format
        self.bus = bus
        self.speed = speed
        self.offeredPacketSizes = offeredPacketSizes
        self.side = side
    }

    /// What the camera asks for per service interval (compressed: the largest packet).
    public var bytesPerInterval: Int {
        UVCBandwidth.payloadBytesPerInterval(format, speed: speed) ?? largestPacketBytes
    }
    /// The packet reserved for it, or `nil` when no alternate setting is large enough.
    public var packetBytes: Int? {
        UVCBandwidth.packetBytes(for: UVCBandwidth.payloadBytesPerInterval(format, speed: speed), speed: speed,
                                 offered: offeredPacketSizes)
    }
    /// The camera's largest packet.
    public var largestPacketBytes: Int {
        (offeredPacketSizes.isEmpty ? speed.typicalPacketSizes : offeredPacketSizes).max() ?? speed.largestEndpointBytes
    }
}

/// The hardware cost of running streams together: the load of the most loaded resource,
/// where the resources are each bus's periodic budget and each camera's largest packet.
///
/// A bus's load is the sum of its streams' reserved packets over its
/// ``USBSpeed/periodicBudgetBytes``. A camera whose largest packet cannot carry its stream
/// is a resource of its own, loaded above 1.0 (what it asks for over that packet). Below 1.0 everything
/// fits; at 1.0 or more a stereo device refuses to start. Devices without a USB bus (the
/// simulated rig, recordings, cameras whose bus is unknown) cost nothing here.
public struct HardwareCost: Hashable, Sendable, CustomStringConvertible {
    /// One bus's share.
    public struct Bus: Hashable, Sendable {
        /// Its name, e.g. `usb bus 3`.
        public var name: String
        /// Its speed class.
        public var speed: USBSpeed
        /// Bytes per service interval its streams reserve.
        public var reservedBytes: Int
        /// ``reservedBytes`` over the budget.
        public var cost: Double
    }

    /// The streams that were costed.
    public var streams: [CostedStream]
    /// Every bus with at least one stream, busiest first.
    public var buses: [Bus]
    /// The highest load: the number that must stay below 1.0.
    public var cost: Double
    /// Why the cost is what it is, in words (`usb bus 1: 5376 of 6000 bytes per microframe`).
    public var explanation: String
    /// Set when this camera pair and format were refused by the kernel at STREAMON before,
    /// although the estimate was below 1.0; such a configuration does not ``runs``.
    public var refusedAtStreamOnBefore: Bool = false

    /// True when the streams fit (cost below 1.0 and no earlier refusal).
    public var runs: Bool { cost < 1.0 && !refusedAtStreamOnBefore }

    /// The cost of running `streams` at once.
    public init(streams: [CostedStream]) {
        self.streams = streams
        var loads: [String: (USBSpeed, Int)] = [:]
        var worst = 0.0
        var why = "no USB bandwidth needed"
        for stream in streams {
            let reserved = stream.packetBytes ?? stream.bytesPerInterval
            loads[stream.bus, default: (stream.speed, 0)].1 += reserved
            // A camera is a resource of its own only when none of its packets holds the
            // stream (then its load is above 1.0); a stream that fits loads only its bus.
            let own = stream.packetBytes == nil ? Double(stream.bytesPerInterval) / Double(stream.largestPacketBytes) : 0
            if own > worst {
                worst = own
                why = "\(stream.format) needs \(stream.bytesPerInterval) bytes per \(Self.interval(stream.speed)); "
                    + "the camera's largest packet is \(stream.largestPacketBytes)"
            }
        }
        buses = loads.map { name, load in
            Bus(name: name, speed: load.0, reservedBytes: load.1, cost: Double(load.1) / Double(load.0.periodicBudgetBytes))
        }.sorted { ($0.cost, $1.name) > ($1.cost, $0.name) }
        for bus in buses where bus.cost >= worst {
            worst = bus.cost
            why = "\(bus.name): \(bus.reservedBytes) of \(bus.speed.periodicBudgetBytes) bytes per \(Self.interval(bus.speed)) "
                + "(\(bus.speed))"
        }
        cost = worst
        explanation = why
    }

    private static func interval(_ speed: USBSpeed) -> String { speed == .full ? "frame" : "microframe" }

    /// `cost 0.896 (usb bus 1: 5376 of 6000 bytes per microframe …)`.
    public var description: String {
        "cost \(cost.formatted3)\(refusedAtStreamOnBefore ? " (refused at STREAMON before)" : "") (\(explanation))"
    }
}
