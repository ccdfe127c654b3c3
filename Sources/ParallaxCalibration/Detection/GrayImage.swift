#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry
import ParallaxImage
import CRemapKernels

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

    /// The luma of any `ImageBuffer` (converted to gray8 first when it is not gray).
    public init(_ buffer: ImageBuffer) throws(ImageError) {
        let gray = buffer.format == .gray8 ? buffer : try buffer.converted(to: .gray8)
        self.init(width: gray.size.width, height: gray.size.height, pixels: gray.bytes.map(Float.init))
    }

    /// The size as an `ImageSize`.
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
    ///
    /// Both passes run in `CRemapKernels` at the widest vector level this CPU has, with the
    /// same bits at every level: each output sums its taps from 0 in kernel order.
    public func gaussianBlurred(sigma: Double, truncation: Double = 3) -> GrayImage {
        gaussianBlurred(sigma: sigma, truncation: truncation, level: GrayImage.kernelLevel)
    }

    /// ``gaussianBlurred(sigma:truncation:)`` by the kernels written for `level` (tests compare levels).
    func gaussianBlurred(sigma: Double, truncation: Double, level: parallax_simd_level) -> GrayImage {
        guard sigma > 0, width > 0, height > 0 else { return self }
        let radius = max(1, Int((truncation * sigma).rounded(.up)))
        var kernel = (-radius...radius).map { Float(exp(-Double($0 * $0) / (2 * sigma * sigma))) }
        let total = kernel.reduce(0, +)
        kernel = kernel.map { $0 / total }
        let w = width, h = height, taps = Int32(kernel.count)
        let count = pixels.count
        // Scratch for the horizontal pass, then the result; every element is written.
        let temp = [Float](unsafeUninitializedCapacity: count) { temp, written in
            pixels.withUnsafeBufferPointer { src in
                kernel.withUnsafeBufferPointer { k in
                    parallax_blur_rows(src.baseAddress, temp.baseAddress, w, h, k.baseAddress, taps, level)
                }
            }
            written = count
        }
        let out = [Float](unsafeUninitializedCapacity: count) { dst, written in
            temp.withUnsafeBufferPointer { src in
                kernel.withUnsafeBufferPointer { k in
                    parallax_blur_columns(src.baseAddress, dst.baseAddress, w, h, k.baseAddress, taps, level)
                }
            }
            written = count
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    /// The widest level of the detection kernels this CPU runs, asked once.
    static let kernelLevel = parallax_map_simd_level()

    /// The `width` × `height` region whose top-left pixel is (`x`, `y`); pixels outside this image
    /// repeat its nearest edge pixel.
    public func region(x: Int, y: Int, width: Int, height: Int) -> GrayImage {
        precondition(width >= 0 && height >= 0, "region dimensions must not be negative")
        let count = width * height
        guard count > 0, !pixels.isEmpty else { return GrayImage(width: width, height: height) }
        // Every element is written: rows of the region, each from one clamped source row.
        let levels = [Float](unsafeUninitializedCapacity: count) { out, written in
            pixels.withUnsafeBufferPointer { source in
                for j in 0..<height {
                    let row = source.baseAddress! + min(max(y + j, 0), self.height - 1) * self.width
                    let to = out.baseAddress! + j * width
                    for i in 0..<width { to[i] = row[min(max(x + i, 0), self.width - 1)] }
                }
            }
            written = count
        }
        return GrayImage(width: width, height: height, pixels: levels)
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

