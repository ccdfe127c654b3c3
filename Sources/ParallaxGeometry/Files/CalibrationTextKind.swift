/// What a calibration file's text is, told from its first bytes and keys (not its name):
/// the readers use it to name what they found when it is not what they read.
package enum CalibrationTextKind: Equatable, Sendable {
    case parallaxJSON, openCVYAML, rosCameraInfo
    /// Something else, described ("a PNG image", "a Kalibr camchain").
    case other(String)

    package var isOther: Bool { if case .other = self { return true } else { return false } }

    /// What it is, in words ("OpenCV YAML").
    package var name: String {
        switch self {
        case .parallaxJSON: return "Parallax JSON"
        case .openCVYAML: return "OpenCV YAML"
        case .rosCameraInfo: return "ROS camera_info"
        case .other(let what): return what
        }
    }

    /// The kind of `text`, from its first 4 KiB and its top-level keys.
    package init(of text: String) {
        let head = text.prefix(4096)
        let trimmed = head.drop { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" || $0 == "\u{FEFF}" }
        // Any JSON object is read as Parallax JSON, whose parser names a missing or wrong key.
        if trimmed.hasPrefix("{") { self = .parallaxJSON; return }
        if trimmed.hasPrefix("\u{89}PNG") || trimmed.hasPrefix("\u{FFFD}PNG") { self = .other("a PNG image"); return }
        if trimmed.hasPrefix("P5") || trimmed.hasPrefix("P2") || trimmed.hasPrefix("P6") { self = .other("a Netpbm image"); return }
        // A JPEG starts FF D8 FF, three bytes that are not UTF-8: decoded, three replacement
        // characters (then, in every JPEG, an APPn or other marker byte ≥ 0xC0, a fourth).
        if text.utf8.prefix(3).elementsEqual([0xFF, 0xD8, 0xFF]) || trimmed.hasPrefix("\u{FFFD}\u{FFFD}\u{FFFD}\u{FFFD}") {
            self = .other("a JPEG image")
            return
        }
        // Other bytes that are not text (a NUL, or several invalid sequences early on).
        if head.contains("\u{0}") || head.prefix(64).filter({ $0 == "\u{FFFD}" }).count >= 4 {
            self = .other("binary data, not text")
            return
        }
        func hasKey(_ key: String) -> Bool {
            text.hasPrefix(key + ":") || text.contains("\n" + key + ":") || text.contains("\r\n" + key + ":")
        }
        if hasKey("camera_matrix") && hasKey("projection_matrix") { self = .rosCameraInfo; return }
        if hasKey("cam0") && (text.contains("T_cn_cnm1") || text.contains("intrinsics:")) {
            self = .other("a Kalibr camchain")
            return
        }
        if trimmed.hasPrefix("%YAML") || text.contains("!!opencv-matrix")
            || ["M1", "K1", "D1", "R", "T"].contains(where: hasKey) {
            self = .openCVYAML
            return
        }
        self = .other("not JSON or YAML Parallax recognizes")
    }
}
