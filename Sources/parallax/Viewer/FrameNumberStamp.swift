import ParallaxGeometry
import ParallaxImage

/// A pair's number drawn into its images as a bar code, so that a page can read which
/// pair it shows from the pixels themselves (the viewer's latency measurement,
/// `parallax view --stamp-frame-numbers`).
///
/// The code fills the image's top ``rows`` rows with ``cells`` cells of equal width: a
/// white cell, ``bits`` cells for the number (most significant bit first, white = 1), a
/// black cell. A reader samples each cell's centre and compares it with the midpoint of the
/// two reference cells, so JPEG's rounding and any brightness scaling leave it readable.
/// Numbers are taken modulo 2^``bits``.
enum FrameNumberStamp {
    /// Bits of the number.
    static let bits = 20
    /// Cells across the image: the white reference, the bits, the black reference.
    static let cells = bits + 2
    /// Rows the code covers (JPEG's 16-row blocks: a whole block row, so the code's edges
    /// do not bleed into the picture's blocks or the picture into the code's).
    static let rows = 16

    /// A copy of `image` (as RGB, or gray for gray images) with `number` drawn in.
    ///
    /// - Throws: ``ViewerError`` when the image is too small to hold the code (narrower
    ///   than 4 px per cell, or not taller than its rows).
    static func stamped(_ image: ImageBuffer, number: Int) throws -> ImageBuffer {
        let cellWidth = image.size.width / cells
        guard cellWidth >= 4, image.size.height > rows else {
            throw ViewerError("a \(image.size) image is too small for the frame-number stamp "
                              + "(\(cells * 4)x\(rows + 1) at least)")
        }
        let target: PixelFormat = image.format == .gray8 ? .gray8 : .rgb8
        let converted = try image.converted(to: target)
        var bytes = converted.bytes
        let channels = target == .gray8 ? 1 : 3
        let value = UInt32(truncatingIfNeeded: number) & ((1 << bits) - 1)
        for cell in 0..<cells {
            let white: Bool
            switch cell {
            case 0: white = true
            case cells - 1: white = false
            default: white = (value >> UInt32(bits - cell)) & 1 == 1
            }
            let shade: UInt8 = white ? 255 : 0
            let first = cell * cellWidth
            // The last cell runs to the right edge.
            let end = cell == cells - 1 ? image.size.width : first + cellWidth
            for y in 0..<rows {
                let row = y * image.size.width * channels
                for x in first..<end {
                    for c in 0..<channels { bytes[row + x * channels + c] = shade }
                }
            }
        }
        return try ImageBuffer(format: target, size: image.size, bytes: bytes)
    }

    /// The number an image carries, read as a page reads it (`nil`: no readable code: the
    /// references are not white over black).
    static func read(_ image: ImageBuffer) throws -> Int? {
        let gray = try image.converted(to: .gray8)
        let cellWidth = image.size.width / cells
        guard cellWidth >= 4, image.size.height > rows else { return nil }
        func sample(_ cell: Int) -> Int { Int(gray.bytes[(rows / 2) * image.size.width + cell * cellWidth + cellWidth / 2]) }
        let white = sample(0), black = sample(cells - 1)
        guard white - black > 64 else { return nil }
        let threshold = (white + black) / 2
        var value = 0
        for cell in 1...bits { value = value << 1 | (sample(cell) > threshold ? 1 : 0) }
        return value
    }
}
