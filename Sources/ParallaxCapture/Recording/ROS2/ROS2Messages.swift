/// The ROS 2 messages a stereo rig's bag holds (`sensor_msgs/msg/Image`, `CompressedImage`
/// and `CameraInfo`), serialized as ROS 2 does (CDR, little-endian, with its 4-byte
/// encapsulation header) and described in `ros2msg`, the schema encoding MCAP's `ros2`
/// profile uses: the type's fields, then each type it uses after a line of `=` and
/// `MSG: package/Type`.
public enum ROS2 {
    /// `builtin_interfaces/msg/Time`.
    public struct Time: Sendable, Hashable {
        /// Whole seconds.
        public var sec: Int32
        /// Nanoseconds past `sec`, below 1 000 000 000.
        public var nanosec: UInt32

        /// The time `nanoseconds` after the epoch of the clock it is on (negative times
        /// round down to whole seconds, so `nanosec` stays in range). Times beyond `Int32`
        /// seconds (year 2038 on the Unix clock) are clamped.
        public init(nanoseconds: Int64) {
            let (q, r) = nanoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
            let seconds = r < 0 ? q - 1 : q
            sec = Int32(clamping: seconds)
            nanosec = UInt32(r < 0 ? r + 1_000_000_000 : r)
        }

        /// A time from its fields.
        public init(sec: Int32, nanosec: UInt32) { (self.sec, self.nanosec) = (sec, nanosec) }

        /// Nanoseconds since the clock's epoch.
        public var nanoseconds: Int64 { Int64(sec) * 1_000_000_000 + Int64(nanosec) }
    }

    /// `std_msgs/msg/Header`: when, and in which frame of reference.
    public struct Header: Sendable, Hashable {
        /// When the data was taken.
        public var stamp: Time
        /// The coordinate frame, e.g. `left_camera_optical_frame`.
        public var frameID: String

        /// A header with these fields.
        public init(stamp: Time, frameID: String) { (self.stamp, self.frameID) = (stamp, frameID) }
    }

    /// `sensor_msgs/msg/Image`: uncompressed pixels, rows of `step` bytes.
    public struct Image: Sendable, Hashable {
        /// When and where.
        public var header: Header
        /// Rows and columns.
        public var height: UInt32, width: UInt32
        /// The pixel layout: `mono8`, `rgb8`, `bgr8`, `yuv422_yuy2`, …
        public var encoding: String
        /// Multi-byte pixels big-endian (never, for the encodings here).
        public var isBigEndian: Bool
        /// Bytes per row.
        public var step: UInt32
        /// `height × step` bytes.
        public var data: [UInt8]

        /// An image with these fields.
        public init(header: Header, height: UInt32, width: UInt32, encoding: String, isBigEndian: Bool = false, step: UInt32,
                    data: [UInt8]) {
            (self.header, self.height, self.width, self.encoding) = (header, height, width, encoding)
            (self.isBigEndian, self.step, self.data) = (isBigEndian, step, data)
        }
    }

    /// `sensor_msgs/msg/CompressedImage`: a JPEG (or PNG) as it is.
    public struct CompressedImage: Sendable, Hashable {
        /// When and where.
        public var header: Header
        /// `jpeg` or `png`.
        public var format: String
        /// The compressed bytes.
        public var data: [UInt8]

        /// A compressed image with these fields.
        public init(header: Header, format: String, data: [UInt8]) { (self.header, self.format, self.data) = (header, format, data) }
    }

    /// `sensor_msgs/msg/RegionOfInterest`.
    public struct RegionOfInterest: Sendable, Hashable {
        /// The region's corner, size, and whether to rectify within it (all zero: the whole image).
        public var xOffset: UInt32 = 0, yOffset: UInt32 = 0, height: UInt32 = 0, width: UInt32 = 0, doRectify = false

        /// The whole image.
        public init() {}
    }

    /// `sensor_msgs/msg/CameraInfo`: a camera's calibration for one image size.
    public struct CameraInfo: Sendable, Hashable {
        /// When and where.
        public var header: Header
        /// The image size the calibration is for.
        public var height: UInt32, width: UInt32
        /// `plumb_bob` (5 coefficients), `rational_polynomial` (8) or `equidistant` (4).
        public var distortionModel: String
        /// The distortion coefficients.
        public var d: [Double]
        /// The camera matrix (row-major 3×3), the rectifying rotation (3×3) and the
        /// rectified projection (3×4).
        public var k: [Double], r: [Double], p: [Double]
        /// Binning (0 or 1: none).
        public var binningX: UInt32 = 0, binningY: UInt32 = 0
        /// The region of interest (zeros: the whole image).
        public var roi = RegionOfInterest()

        /// Camera info with these fields (`k` and `r` 9 values, `p` 12).
        public init(header: Header, height: UInt32, width: UInt32, distortionModel: String, d: [Double], k: [Double], r: [Double],
                    p: [Double]) {
            (self.header, self.height, self.width, self.distortionModel) = (header, height, width, distortionModel)
            (self.d, self.k, self.r, self.p) = (d, k, r, p)
        }
    }

    // MARK: Schemas

    /// The quality of service every topic is offered with, as rosbag2 records it (a YAML list
    /// in a string, in the channel metadata of the `ros2` MCAP profile and in `metadata.yaml`):
    /// keep the last 10, reliable, volatile, automatic liveliness; the durations 0 s, which
    /// ROS reads as "unspecified" (no deadline, lifespan or lease), in every ROS 2 release.
    public static let offeredQoSProfiles = """
        - history: 1
          depth: 10
          reliability: 1
          durability: 2
          deadline:
            sec: 0
            nsec: 0
          lifespan:
            sec: 0
            nsec: 0
          liveliness: 1
          liveliness_lease_duration:
            sec: 0
            nsec: 0
          avoid_ros_namespace_conventions: false
        """

    /// The `ros2msg` text of each message type here, by its ROS 2 name.
    public static let schemas: [String: String] = [
        "sensor_msgs/msg/Image": definition(image, uses: [header, time]),
        "sensor_msgs/msg/CompressedImage": definition(compressedImage, uses: [header, time]),
        "sensor_msgs/msg/CameraInfo": definition(cameraInfo, uses: [header, time, regionOfInterest]),
    ]

    private typealias Definition = (name: String, fields: [String])
    private static let time: Definition = ("builtin_interfaces/Time", ["int32 sec", "uint32 nanosec"])
    private static let header: Definition = ("std_msgs/Header", ["builtin_interfaces/Time stamp", "string frame_id"])
    private static let regionOfInterest: Definition = (
        "sensor_msgs/RegionOfInterest", ["uint32 x_offset", "uint32 y_offset", "uint32 height", "uint32 width", "bool do_rectify"])
    private static let image: Definition = (
        "sensor_msgs/Image",
        ["std_msgs/Header header", "uint32 height", "uint32 width", "string encoding", "uint8 is_bigendian", "uint32 step", "uint8[] data"])
    private static let compressedImage: Definition = ("sensor_msgs/CompressedImage", ["std_msgs/Header header", "string format", "uint8[] data"])
    private static let cameraInfo: Definition = (
        "sensor_msgs/CameraInfo",
        ["std_msgs/Header header", "uint32 height", "uint32 width", "string distortion_model", "float64[] d", "float64[9] k",
         "float64[9] r", "float64[12] p", "uint32 binning_x", "uint32 binning_y", "sensor_msgs/RegionOfInterest roi"])

    private static func definition(_ main: Definition, uses: [Definition]) -> String {
        let separator = String(repeating: "=", count: 80)
        return ([main.fields.joined(separator: "\n")] + uses.map { "\(separator)\nMSG: \($0.name)\n" + $0.fields.joined(separator: "\n") })
            .joined(separator: "\n") + "\n"
    }
}

// MARK: CDR

extension ROS2.Header {
    /// The stamp (nanoseconds) of a message whose CDR begins with a `std_msgs/Header`, read
    /// without decoding the rest.
    public static func stamp(cdr: UnsafeRawBufferPointer) throws(CDRError) -> Int64 {
        var r = try CDRReader(cdr)
        return try r.header().stamp.nanoseconds
    }
}

extension ROS2.Image {
    /// The message as CDR bytes.
    public func serialized() -> [UInt8] {
        var w = CDRWriter()
        w.header(header)
        w.u32(height)
        w.u32(width)
        w.string(encoding)
        w.u8(isBigEndian ? 1 : 0)
        w.u32(step)
        w.bytes(data)
        return w.bytes
    }

    /// Reads an `Image` from CDR bytes; checks that `data` holds `height × step` bytes.
    public init(cdr: UnsafeRawBufferPointer) throws(CDRError) {
        var r = try CDRReader(cdr)
        let header = try r.header()
        let height = try r.u32("height"), width = try r.u32("width")
        let encoding = try r.string("encoding")
        let bigEndian = try r.u8("is_bigendian") != 0
        let step = try r.u32("step")
        let data = try r.bytes("data")
        guard UInt64(data.count) == UInt64(height) * UInt64(step) else {
            throw CDRError(field: "data", reason: "holds \(data.count) bytes, but height × step is \(UInt64(height) * UInt64(step))")
        }
        self.init(header: header, height: height, width: width, encoding: encoding, isBigEndian: bigEndian, step: step, data: data)
    }
}

extension ROS2.CompressedImage {
    /// The message as CDR bytes.
    public func serialized() -> [UInt8] {
        var w = CDRWriter()
        w.header(header)
        w.string(format)
        w.bytes(data)
        return w.bytes
    }

    /// Reads a `CompressedImage` from CDR bytes.
    public init(cdr: UnsafeRawBufferPointer) throws(CDRError) {
        var r = try CDRReader(cdr)
        let header = try r.header()
        let format = try r.string("format")
        self.init(header: header, format: format, data: try r.bytes("data"))
    }
}

extension ROS2.CameraInfo {
    /// The message as CDR bytes.
    public func serialized() -> [UInt8] {
        var w = CDRWriter()
        w.header(header)
        w.u32(height)
        w.u32(width)
        w.string(distortionModel)
        w.u32(UInt32(d.count))
        for v in d { w.f64(v) }
        for v in k { w.f64(v) }
        for v in r { w.f64(v) }
        for v in p { w.f64(v) }
        w.u32(binningX)
        w.u32(binningY)
        w.u32(roi.xOffset)
        w.u32(roi.yOffset)
        w.u32(roi.height)
        w.u32(roi.width)
        w.u8(roi.doRectify ? 1 : 0)
        return w.bytes
    }

    /// Reads a `CameraInfo` from CDR bytes.
    public init(cdr: UnsafeRawBufferPointer) throws(CDRError) {
        var c = try CDRReader(cdr)
        let header = try c.header()
        let height = try c.u32("height"), width = try c.u32("width")
        let model = try c.string("distortion_model")
        let count = Int(try c.u32("d"))
        guard count <= 64 else { throw CDRError(field: "d", reason: "\(count) distortion coefficients (at most 64 are plausible)") }
        var d: [Double] = []
        for _ in 0..<count { d.append(try c.f64("d")) }
        var k: [Double] = [], r: [Double] = [], p: [Double] = []
        for _ in 0..<9 { k.append(try c.f64("k")) }
        for _ in 0..<9 { r.append(try c.f64("r")) }
        for _ in 0..<12 { p.append(try c.f64("p")) }
        self.init(header: header, height: height, width: width, distortionModel: model, d: d, k: k, r: r, p: p)
        binningX = try c.u32("binning_x")
        binningY = try c.u32("binning_y")
        roi.xOffset = try c.u32("roi.x_offset")
        roi.yOffset = try c.u32("roi.y_offset")
        roi.height = try c.u32("roi.height")
        roi.width = try c.u32("roi.width")
        roi.doRectify = try c.u8("roi.do_rectify") != 0
    }
}

/// A CDR message that does not decode: the field, and what is wrong with it.
public struct CDRError: Error, Sendable, CustomStringConvertible {
    /// The field being read, e.g. `header.frame_id`.
    public var field: String
    /// What is wrong.
    public var reason: String

    /// `the message's FIELD REASON`.
    public var description: String { "the message's \(field) \(reason)" }
}

/// Writes CDR: the little-endian encapsulation header, then each primitive aligned to its
/// size, counted from the end of the header.
struct CDRWriter {
    private(set) var bytes: [UInt8] = [0x00, 0x01, 0x00, 0x00]

    private mutating func align(_ n: Int) {
        let position = bytes.count - 4
        let pad = (n - position % n) % n
        bytes.append(contentsOf: repeatElement(0, count: pad))
    }

    private mutating func put<T: FixedWidthInteger>(_ v: T) {
        align(MemoryLayout<T>.size)
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u32(_ v: UInt32) { put(v) }
    mutating func i32(_ v: Int32) { put(v) }
    mutating func f64(_ v: Double) { put(v.bitPattern) }
    /// A string: its length with the terminating NUL, the UTF-8 bytes, the NUL.
    mutating func string(_ s: String) {
        u32(UInt32(s.utf8.count + 1))
        bytes.append(contentsOf: s.utf8)
        bytes.append(0)
    }
    /// A `uint8[]`: its count, then the bytes.
    mutating func bytes(_ data: [UInt8]) {
        u32(UInt32(data.count))
        bytes.append(contentsOf: data)
    }
    mutating func header(_ h: ROS2.Header) {
        i32(h.stamp.sec)
        u32(h.stamp.nanosec)
        string(h.frameID)
    }
}

/// Reads CDR written little-endian (big-endian CDR is refused by name), every field checked
/// against the message's end.
struct CDRReader {
    private let raw: UnsafeRawBufferPointer
    private var position = 4

    init(_ raw: UnsafeRawBufferPointer) throws(CDRError) {
        guard raw.count >= 4 else { throw CDRError(field: "encapsulation header", reason: "is missing (\(raw.count) bytes)") }
        guard raw[0] == 0, raw[1] == 1 else {
            throw CDRError(field: "encapsulation header", reason: raw[1] == 0 ? "says big-endian CDR, which Parallax does not read"
                           : "is \(raw[0]) \(raw[1]), not plain little-endian CDR (0 1)")
        }
        self.raw = raw
    }

    private mutating func take(_ n: Int, aligned: Int, _ field: String) throws(CDRError) -> Int {
        let pad = (aligned - (position - 4) % aligned) % aligned
        guard n >= 0, position + pad + n <= raw.count else {
            throw CDRError(field: field, reason: "runs past the end of the message (\(raw.count) bytes)")
        }
        position += pad
        defer { position += n }
        return position
    }

    private mutating func get<T: FixedWidthInteger>(_: T.Type, _ field: String) throws(CDRError) -> T {
        let at = try take(MemoryLayout<T>.size, aligned: MemoryLayout<T>.size, field)
        return T(littleEndian: raw.loadUnaligned(fromByteOffset: at, as: T.self))
    }

    mutating func u8(_ field: String) throws(CDRError) -> UInt8 { try get(UInt8.self, field) }
    mutating func u32(_ field: String) throws(CDRError) -> UInt32 { try get(UInt32.self, field) }
    mutating func i32(_ field: String) throws(CDRError) -> Int32 { try get(Int32.self, field) }
    mutating func f64(_ field: String) throws(CDRError) -> Double { Double(bitPattern: try get(UInt64.self, field)) }

    mutating func string(_ field: String) throws(CDRError) -> String {
        let n = Int(try u32(field))
        guard n >= 1 else { throw CDRError(field: field, reason: "has length 0 (a CDR string holds at least its NUL)") }
        let at = try take(n, aligned: 1, field)
        return String(decoding: UnsafeRawBufferPointer(rebasing: raw[at..<(at + n - 1)]), as: UTF8.self)
    }

    mutating func bytes(_ field: String) throws(CDRError) -> [UInt8] {
        let n = Int(try u32(field))
        let at = try take(n, aligned: 1, field)
        return Array(UnsafeRawBufferPointer(rebasing: raw[at..<(at + n)]))
    }

    mutating func header() throws(CDRError) -> ROS2.Header {
        let sec = try i32("header.stamp.sec"), nanosec = try u32("header.stamp.nanosec")
        guard nanosec < 1_000_000_000 else { throw CDRError(field: "header.stamp.nanosec", reason: "is \(nanosec), not below 10⁹") }
        return ROS2.Header(stamp: ROS2.Time(sec: sec, nanosec: nanosec), frameID: try string("header.frame_id"))
    }
}
