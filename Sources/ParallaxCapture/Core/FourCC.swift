import Foundation

/// A V4L2 pixel format code: four ASCII characters packed little-endian into
/// 32 bits (`v4l2_fourcc(a, b, c, d)`), such as `YUYV`, `MJPG` or `GREY`.
public struct FourCC: RawRepresentable, Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    /// The packed code as V4L2 stores it in `pixelformat`.
    public var rawValue: UInt32

    /// The code as V4L2 stores it.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// The code of four ASCII characters; shorter strings are padded with spaces,
    /// longer ones truncated (V4L2 codes are always four characters).
    public init(_ text: String) {
        var bytes = Array(text.utf8.prefix(4))
        while bytes.count < 4 { bytes.append(0x20) }
        rawValue = UInt32(bytes[0]) | UInt32(bytes[1]) << 8 | UInt32(bytes[2]) << 16 | UInt32(bytes[3]) << 24
    }

    /// A code written as its four characters, e.g. `"YUYV"`.
    public init(stringLiteral value: String) { self.init(value) }

    /// The four characters (non-printable bytes shown as `?`).
    public var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: rawValue >> (8 * $0)) }
        return String(decoding: bytes.map { (0x20...0x7e).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// Packed 4:2:2 `YUYV`, the common webcam format.
    public static let yuyv: FourCC = "YUYV"
    /// Packed 4:2:2 `UYVY`.
    public static let uyvy: FourCC = "UYVY"
    /// 8-bit luma `GREY`.
    public static let grey: FourCC = "GREY"
    /// Motion-JPEG `MJPG` (compressed).
    public static let mjpeg: FourCC = "MJPG"
    /// 24-bit `RGB3`.
    public static let rgb24: FourCC = "RGB3"
    /// 24-bit `BGR3`.
    public static let bgr24: FourCC = "BGR3"
    /// 4:2:0 `NV12` (Y plane, interleaved CbCr plane).
    public static let nv12: FourCC = "NV12"
    /// Planar 4:2:0 (`YU12`), one of libv4l2's emulated formats.
    public static let yuv420: FourCC = "YU12"

    /// A known code (``UVCBandwidth/knownFormats``) that `text` was probably meant to be: the
    /// same letters in another case (`yuyv`) or another order (`YUVY`), or one letter off;
    /// the fewest letters off wins, and among equals the commonest webcam format (YUYV, MJPG,
    /// GREY, NV12 first). `nil` when none is that close.
    public static func nearestKnown(to text: String) -> FourCC? {
        let typed = Array(text.uppercased())
        let common: [FourCC] = [.yuyv, .mjpeg, .grey, .nv12]
        let candidates = UVCBandwidth.knownFormats.compactMap { known -> (FourCC, Int, Int)? in
            let code = Array(known.description.trimmingCharacters(in: .whitespaces))
            guard code.count == typed.count else { return nil }
            let differing = zip(code, typed).filter { $0 != $1 }.count
            guard differing <= 1 || code.sorted() == typed.sorted() else { return nil }
            return (known, differing, common.firstIndex(of: known) ?? common.count)
        }
        return candidates.min { ($0.1, $0.2) < ($1.1, $1.2) }?.0
    }

    /// The formats libv4l2 can synthesise from a camera's native ones (by copying).
    public static let libv4l2Emulated: Set<FourCC> = [.rgb24, .bgr24, .yuv420, "YV12"]
}
