/// A V4L2 pixel format code: four ASCII characters packed little-endian into
/// 32 bits (`v4l2_fourcc(a, b, c, d)`), such as `YUYV`, `MJPG` or `GREY`.
public struct FourCC: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The packed code as V4L2 stores it in `pixelformat`.
    public var rawValue: UInt32

    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code of four ASCII characters; shorter strings are padded with spaces,
    /// longer ones truncated (V4L2 codes are always four characters).
    public init(_ text: String) {
        var bytes = Array(text.utf8.prefix(4))
        while bytes.count < 4 { bytes.append(0x20) }
        rawValue = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    public init(stringLiteral value: String) { self.init(value) }

    /// The four characters (non-printable bytes shown as `?`).
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }
        return String(decoding: bytes.map { (0x20...0x7e).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    public static let yuyv: FourCC = "YUYV"
    public static let uyvy: FourCC = "UYVY"
    public static let grey: FourCC = "GREY"
    public static let mjpeg: FourCC = "MJPG"
    public static let rgb24: FourCC = "RGB3"
    public static let bgr24: FourCC = "BGR3"
    public static let nv12: FourCC = "NV12"
    /// Planar 4:2:0 (`YU12`), one of libv4l2's emulated formats.
    public static let yuv420: FourCC = "YU12"

    /// The formats libv4l2 can synthesise from a camera's native ones (by copying).
    public static let libv4l2Emulated: Set<FourCC> = [.rgb24, .bgr24, .yuv420, "YV12"]
}
