#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry
import ParallaxImage

/// A single-channel image of `Float` levels (0–255 for 8-bit sources), row-major,
/// the working copy every detection step reads.
public struct GrayImage: Sendable, Equatable {
    /// Width in pixels.
    public let width: Int
    /// Height in pixels.
    public let height: Int
    /// Levels, `width` per row.
    public var pixels: [Float]

    /// A `width` × `height` image filled with `value`.
    public init(width: Int, height: Int, repeating value: Float = 0) {
        precondition(width >= 0 && height >= 0, "image dimensions must not be negative")
        self.width = width
        self.height = height
        self.pixels = Array(repeating: value, count: width * height)
    }

    /// An image from row-major levels.
    public init(width: Int, height: Int, pixels: [Float]) {
        precondition(pixels.count == width * height, "one level per pixel")
        self.width = width
        self.height = height
        self.pixels = pixels
    }

    /// The luma of any ``ImageBuffer`` (converted to gray8 first when it is not gray).
    public init(_ buffer: ImageBuffer) throws(ImageError) {
        let gray = buffer.format == .gray8 ? buffer : try buffer.converted(to: .gray8)
        self.init(width: gray.size.width, height: gray.size.height, pixels: gray.bytes.map(Float.init))
    }

    /// The size as an ``ImageSize``.
    public var size: ImageSize { ImageSize(width: width, height: height) }

    @inlinable
    /// The level at column `x`, row `y` (no bounds beyond the array's own).
    public subscript(x: Int, y: Int) -> Float {
        get { pixels[y * width + x] }
        set { pixels[y * width + x] = newValue }
    }

    /// Bilinear sample at (x, y) in pixel-centre coordinates, clamped to the image.
    @inlinable
    public func sample(_ x: Double, _ y: Double) -> Float {
        let cx = min(max(x, 0), Double(width - 1)), cy = min(max(y, 0), Double(height - 1))
        let x0 = min(Int(cx), width - 2), y0 = min(Int(cy), height - 2)
        let fx = Float(cx - Double(x0)), fy = Float(cy - Double(y0))
        let i = y0 * width + x0
        let top = pixels[i] + (pixels[i + 1] - pixels[i]) * fx
        let bottom = pixels[i + width] + (pixels[i + width + 1] - pixels[i + width]) * fx
        return top + (bottom - top) * fy
    }

    /// This image blurred by a Gaussian of standard deviation `sigma` pixels
    /// (separable kernel truncated at `truncation` σ, borders replicated).
    public func gaussianBlurred(sigma: Double, truncation: Double = 3) -> GrayImage {
        guard sigma > 0, width > 0, height > 0 else { return self }
        let radius = max(1, Int((truncation * sigma).rounded(.up)))
        var kernel = (-radius...radius).map { Float(exp(-Double($0 * $0) / (2 * sigma * sigma))) }
        let total = kernel.reduce(0, +)
        kernel = kernel.map { $0 / total }
        var temp = [Float](repeating: 0, count: pixels.count)
        var out = [Float](repeating: 0, count: pixels.count)
        let w = width, h = height, taps = kernel.count
        // Row-oriented passes: each tap adds a shifted row, a loop the compiler vectorises.
        pixels.withUnsafeBufferPointer { src in
            temp.withUnsafeMutableBufferPointer { dst in
                kernel.withUnsafeBufferPointer { k in
                    for y in 0..<h {
                        let row = y * w
                        if w > 2 * radius {
                            for t in 0..<taps {
                                let c = k[t], shift = t - radius
                                // Interior: x − radius + t stays inside [0, w).
                                for x in radius..<(w - radius) { dst[row + x] += c * src[row + x + shift] }
                            }
                        }
                        // Borders replicate the edge pixel.
                        for x in 0..<w where x < radius || x >= w - radius {
                            var sum: Float = 0
                            for t in 0..<taps { sum += k[t] * src[row + min(max(x - radius + t, 0), w - 1)] }
                            dst[row + x] = sum
                        }
                    }
                }
            }
        }
        temp.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                kernel.withUnsafeBufferPointer { k in
                    for y in 0..<h {
                        let row = y * w
                        for t in 0..<taps {
                            let c = k[t]
                            let sourceRow = min(max(y - radius + t, 0), h - 1) * w
                            for x in 0..<w { dst[row + x] += c * src[sourceRow + x] }
                        }
                    }
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// The `width` × `height` region whose top-left pixel is (`x`, `y`); pixels outside this image
    /// repeat its nearest edge pixel.
    public func region(x: Int, y: Int, width: Int, height: Int) -> GrayImage {
        var out = GrayImage(width: width, height: height)
        for j in 0..<height {
            let sy = min(max(y + j, 0), self.height - 1) * self.width
            for i in 0..<width { out.pixels[j * width + i] = pixels[sy + min(max(x + i, 0), self.width - 1)] }
        }
        return out
    }

    /// Half the size in each dimension, each output pixel the mean of a 2 × 2 block.
    public func halved() -> GrayImage {
        let w = width / 2, h = height / 2
        var out = GrayImage(width: w, height: h)
        for y in 0..<h {
            for x in 0..<w {
                let i = 2 * y * width + 2 * x
                out.pixels[y * w + x] = (pixels[i] + pixels[i + 1] + pixels[i + width] + pixels[i + width + 1]) * 0.25
            }
        }
        return out
    }
}

