import Foundation
import ParallaxGeometry
@testable import ParallaxImage

/// Helpers shared by the image tests: fixture paths, scratch folders and
/// deterministic test patterns.
enum TestImages {
    /// The repository's `Tests/Fixtures` folder.
    static let fixtures: String = {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").path
    }()

    /// OpenCV's sample stereo images (Debian opencv-doc).
    static let opencvData = "/usr/share/doc/opencv-doc/examples/data"

    /// A fresh empty folder under the system's temporary directory.
    static func scratchDirectory(_ name: String = #function) -> String {
        let safe = name.filter { $0.isLetter || $0.isNumber }
        let path = NSTemporaryDirectory() + "parallax-image-tests-\(safe)-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// A smooth-plus-texture pattern: every byte differs from its neighbours,
    /// so swapped channels, shifted rows or wrong strides show up.
    static func pattern(_ format: PixelFormat, width: Int, height: Int, seed: Int = 0) -> ImageBuffer {
        let count = ImageBuffer.byteCount(format: format, size: ImageSize(width: width, height: height))
        var bytes = [UInt8](repeating: 0, count: count)
        var state = UInt32(truncatingIfNeeded: 2_463_534_242 &+ seed)
        for i in 0..<count {
            state ^= state << 13; state ^= state >> 17; state ^= state << 5
            bytes[i] = UInt8(truncatingIfNeeded: (i * 7 + Int(state % 32)) & 0xFF)
        }
        // A valid size by construction; the tests pass sizes the format accepts.
        return try! ImageBuffer(format: format, size: ImageSize(width: width, height: height), bytes: bytes)
    }

    /// A smooth image (gentle gradients and a soft blob) that survives JPEG compression well.
    static func smooth(_ format: PixelFormat, width: Int, height: Int) -> ImageBuffer {
        var rgb = [UInt8](repeating: 0, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let i = (y * width + x) * 3
                let dx = Double(x - width / 2), dy = Double(y - height / 2)
                let bump = exp(-(dx * dx + dy * dy) / Double(width * width) * 16)
                rgb[i] = UInt8(40 + 150 * x / max(width - 1, 1))
                rgb[i + 1] = UInt8(40 + 150 * y / max(height - 1, 1))
                rgb[i + 2] = UInt8(60 + 140 * bump)
            }
        }
        let image = try! ImageBuffer(format: .rgb8, size: ImageSize(width: width, height: height), bytes: rgb)
        return try! image.converted(to: format)
    }
}
