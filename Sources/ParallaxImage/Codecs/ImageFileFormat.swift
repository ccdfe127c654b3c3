import ParallaxGeometry

/// The image file formats Parallax reads and writes.
///
/// Reading picks the format from the file's first bytes (its magic number),
/// never from its name, so a mislabelled file still opens. Writing picks the
/// format from the path's extension.
public enum ImageFileFormat: String, CaseIterable, Hashable, Sendable {
    /// Netpbm gray map, 8-bit: binary (`P5`) read and written, plain ASCII (`P2`) read;
    /// 16-bit files are read and reduced to 8 bits.
    case pgm
    /// Netpbm pixel map, 8-bit RGB: binary (`P6`) read and written, plain ASCII (`P3`)
    /// read; 16-bit files are read and reduced to 8 bits.
    case ppm
    /// PNG through libpng: gray, gray + alpha (alpha dropped), RGB, RGBA, palette; 16-bit reduced to 8 bits.
    case png
    /// JPEG through libjpeg-turbo: gray or colour (YCbCr, decoded to RGB).
    case jpeg

    /// The format whose magic number starts `bytes`, or `nil`.
    public init?(sniffing bytes: some Collection<UInt8>) {
        let head = Array(bytes.prefix(8))
        if head.count >= 8, head == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] {
            self = .png
        } else if head.count >= 3, head[0] == 0xFF, head[1] == 0xD8, head[2] == 0xFF {
            self = .jpeg
        } else if head.count >= 2, head[0] == UInt8(ascii: "P"), head[1] == UInt8(ascii: "5") || head[1] == UInt8(ascii: "2") {
            self = .pgm
        } else if head.count >= 2, head[0] == UInt8(ascii: "P"), head[1] == UInt8(ascii: "6") || head[1] == UInt8(ascii: "3") {
            self = .ppm
        } else {
            return nil
        }
    }

    /// The format a path's extension names (case-insensitive: `.pgm`, `.ppm`,
    /// `.pnm` (as PPM), `.png`, `.jpg`, `.jpeg`), or `nil`.
    public init?(pathExtensionOf path: String) {
        guard let dot = path.lastIndex(of: "."), !path[dot...].contains("/") else { return nil }
        switch path[path.index(after: dot)...].lowercased() {
        case "pgm": self = .pgm
        case "ppm", "pnm": self = .ppm
        case "png": self = .png
        case "jpg", "jpeg": self = .jpeg
        default: return nil
        }
    }
}
