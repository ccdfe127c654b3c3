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
        pixels.withUnsafeBufferPointer { Self.sample($0, width: width, height: height, x, y) }
    }

    /// ``sample(_:_:)`` on the levels of a `width` × `height` image (at least 2 × 2), for loops
    /// that take many samples and should not pay for the array's checks on each.
    @inlinable
    static func sample(_ pixels: UnsafeBufferPointer<Float>, width: Int, height: Int, _ x: Double, _ y: Double) -> Float {
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
        pixels.withUnsafeBufferPointer { src in
            temp.withUnsafeMutableBufferPointer { dst in
                kernel.withUnsafeBufferPointer { k in
                    Self.blurRows(src, into: dst, kernel: k, width: w, height: h, radius: radius)
                }
            }
        }
        temp.withUnsafeBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                kernel.withUnsafeBufferPointer { k in
                    Self.blurColumns(src, into: dst, kernel: k, width: w, height: h, taps: taps, radius: radius)
                }
            }
        }
        return GrayImage(width: w, height: h, pixels: out)
    }

    // MARK: Blur kernels
    //
    // Eight pixels at a time in SIMD registers. Bounds: every load reads
    // `x − radius + t … x − radius + t + 7` within one row (horizontal) or
    // `x … x + 7` of a clamped row (vertical), and the loops stop 8 short of
    // the row's end; the scalar tails handle the rest.

    private static func blurRows(_ src: UnsafeBufferPointer<Float>, into dst: UnsafeMutableBufferPointer<Float>,
                                 kernel k: UnsafeBufferPointer<Float>, width w: Int, height h: Int, radius: Int) {
        guard let s = src.baseAddress, let d = dst.baseAddress, let weights = k.baseAddress else { return }
        let taps = k.count
        for y in 0..<h {
            let row = y * w
            let from = UnsafeRawPointer(s + row), to = UnsafeMutableRawPointer(d + row)
            var x = radius
            // Sixteen pixels per step in two accumulators: each tap's weight is loaded once for both.
            while x + 16 <= w - radius {
                var a = SIMD8<Float>(repeating: 0), b = a
                for t in 0..<taps {
                    let weight = weights[t], at = (x - radius + t) * 4
                    a += weight * from.loadUnaligned(fromByteOffset: at, as: SIMD8<Float>.self)
                    b += weight * from.loadUnaligned(fromByteOffset: at + 32, as: SIMD8<Float>.self)
                }
                to.storeBytes(of: a, toByteOffset: x * 4, as: SIMD8<Float>.self)
                to.storeBytes(of: b, toByteOffset: x * 4 + 32, as: SIMD8<Float>.self)
                x += 16
            }
            while x + 8 <= w - radius {
                var acc = SIMD8<Float>(repeating: 0)
                for t in 0..<taps {
                    acc += weights[t] * from.loadUnaligned(fromByteOffset: (x - radius + t) * 4, as: SIMD8<Float>.self)
                }
                to.storeBytes(of: acc, toByteOffset: x * 4, as: SIMD8<Float>.self)
                x += 8
            }
            // Tail of the interior, then the borders with the edge pixel repeated.
            for x in 0..<w where x < radius || x >= x0(w, radius) {
                var sum: Float = 0
                for t in 0..<taps { sum += weights[t] * s[row + min(max(x - radius + t, 0), w - 1)] }
                d[row + x] = sum
            }
        }
        @inline(__always) func x0(_ w: Int, _ radius: Int) -> Int {
            // First x the vector loop did not reach.
            let interior = max(w - 2 * radius, 0)
            return radius + (interior / 8) * 8
        }
    }

    private static func blurColumns(_ src: UnsafeBufferPointer<Float>, into dst: UnsafeMutableBufferPointer<Float>,
                                    kernel k: UnsafeBufferPointer<Float>, width w: Int, height h: Int, taps: Int, radius: Int) {
        guard let s = src.baseAddress, let d = dst.baseAddress, let weights = k.baseAddress else { return }
        let raw = UnsafeRawPointer(s)
        withUnsafeTemporaryAllocation(of: Int.self, capacity: taps) { rows in
            for y in 0..<h {
                for t in 0..<taps { rows[t] = min(max(y - radius + t, 0), h - 1) * w * 4 }
                let to = UnsafeMutableRawPointer(d + y * w)
                var x = 0
                while x + 16 <= w {
                    var a = SIMD8<Float>(repeating: 0), b = a
                    for t in 0..<taps {
                        let weight = weights[t], at = rows[t] + x * 4
                        a += weight * raw.loadUnaligned(fromByteOffset: at, as: SIMD8<Float>.self)
                        b += weight * raw.loadUnaligned(fromByteOffset: at + 32, as: SIMD8<Float>.self)
                    }
                    to.storeBytes(of: a, toByteOffset: x * 4, as: SIMD8<Float>.self)
                    to.storeBytes(of: b, toByteOffset: x * 4 + 32, as: SIMD8<Float>.self)
                    x += 16
                }
                while x + 8 <= w {
                    var acc = SIMD8<Float>(repeating: 0)
                    for t in 0..<taps {
                        acc += weights[t] * raw.loadUnaligned(fromByteOffset: rows[t] + x * 4, as: SIMD8<Float>.self)
                    }
                    to.storeBytes(of: acc, toByteOffset: x * 4, as: SIMD8<Float>.self)
                    x += 8
                }
                while x < w {
                    var sum: Float = 0
                    for t in 0..<taps { sum += weights[t] * s[rows[t] / 4 + x] }
                    d[y * w + x] = sum
                    x += 1
                }
            }
        }
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

