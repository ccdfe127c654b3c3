import ParallaxGeometry
import ParallaxImage

/// Disparity maps as files: Middlebury's PFM, KITTI's 16-bit PNG, and a colourised picture.
extension DisparityMap {
    /// The map as a PFM file (Middlebury's format: one Float32 channel, little-endian, rows
    /// from the bottom up), +∞ where invalid, as Middlebury's own maps mark unknown pixels.
    public func pfm() -> [UInt8] {
        var bytes = Array("Pf\n\(size.width) \(size.height)\n-1.0\n".utf8)
        bytes.reserveCapacity(bytes.count + 4 * values.count)
        for y in (0..<size.height).reversed() {
            for x in 0..<size.width {
                let bits = values[y * size.width + x].bitPattern
                bytes.append(contentsOf: [UInt8(bits & 0xFF), UInt8((bits >> 8) & 0xFF), UInt8((bits >> 16) & 0xFF), UInt8(bits >> 24)])
            }
        }
        return bytes
    }

    /// The values of a PFM file with one channel (either byte order), top row first; non-finite
    /// values (Middlebury's +∞ for unknown) as they are.
    ///
    /// - Throws: ``DepthError/corruptFile(path:reason:)`` naming `source` and what is wrong.
    public static func pfmValues(_ bytes: [UInt8], source: String) throws(DepthError) -> (size: ImageSize, values: [Float]) {
        // Three text lines: "Pf", "W H", the scale (negative: little-endian).
        var lines: [String] = [], start = 0, index = 0
        while lines.count < 3, index < bytes.count, index < 256 {
            if bytes[index] == 0x0A {
                lines.append(String(decoding: bytes[start..<index], as: UTF8.self))
                start = index + 1
            }
            index += 1
        }
        guard lines.count == 3 else { throw .corruptFile(path: source, reason: "no PFM header (three text lines)") }
        guard lines[0] == "Pf" else {
            throw .corruptFile(path: source, reason: lines[0] == "PF" ? "a colour PFM (PF): a disparity map has one channel (Pf)" : "not a PFM file (it starts '\(lines[0].prefix(8))')")
        }
        let dimensions = lines[1].split(separator: " ").compactMap { Int($0) }
        guard dimensions.count == 2, dimensions[0] > 0, dimensions[1] > 0, dimensions[0] <= 65536, dimensions[1] <= 65536 else {
            throw .corruptFile(path: source, reason: "PFM size '\(lines[1])' is not two positive numbers up to 65536")
        }
        guard let scale = Double(lines[2].split(separator: " ").first ?? ""), scale != 0, scale.isFinite else {
            throw .corruptFile(path: source, reason: "PFM scale '\(lines[2])' is not a non-zero number")
        }
        let width = dimensions[0], height = dimensions[1]
        let expected = start + 4 * width * height
        guard bytes.count >= expected else {
            throw .corruptFile(path: source, reason: "PFM truncated: \(bytes.count - start) bytes of samples for \(width)×\(height) (\(4 * width * height))")
        }
        var values = [Float](repeating: 0, count: width * height)
        let littleEndian = scale < 0
        for row in 0..<height {
            let y = height - 1 - row
            for x in 0..<width {
                let at = start + 4 * (row * width + x)
                let b = (UInt32(bytes[at]), UInt32(bytes[at + 1]), UInt32(bytes[at + 2]), UInt32(bytes[at + 3]))
                let bits = littleEndian ? b.0 | b.1 << 8 | b.2 << 16 | b.3 << 24 : b.3 | b.2 << 8 | b.1 << 16 | b.0 << 24
                values[y * width + x] = Float(bitPattern: bits)
            }
        }
        return (ImageSize(width: width, height: height), values)
    }

    /// The map as a 16-bit gray PNG at KITTI's scale: 256 × disparity rounded, 0 where invalid
    /// (a valid disparity below 1/256 px is written as 1, the smallest valid value).
    ///
    /// - Throws: ``DepthError/notRepresentable(_:)`` when the range reaches below 0 or to 256
    ///   pixels, which the format cannot hold (write PFM), and file errors naming `destination`.
    public func kittiPNG(destination: String) throws(DepthError) -> [UInt8] {
        guard minimumDisparity >= 0, minimumDisparity + disparityCount <= 256 else {
            throw .notRepresentable("KITTI's 16-bit PNG holds disparities 0…255.996; this map's range is \(minimumDisparity)…\(minimumDisparity + disparityCount - 1): write a .pfm")
        }
        let samples = values.map { value -> UInt16 in
            guard value.isFinite else { return 0 }
            return UInt16(max(1, min(65535, (value * 256).rounded())))
        }
        do {
            return try Gray16PNG.encode(samples, size: size, destination: destination)
        } catch {
            throw .corruptFile(path: destination, reason: "\(error)")
        }
    }

    /// The map as a picture: disparities coloured from dark blue (the smallest, far) through
    /// green and yellow to red (the largest, near), invalid pixels black, and below it a colour
    /// bar over the same range with a tick at every `tickStep` pixels of disparity.
    ///
    /// - Parameters:
    ///   - range: the disparities the colours span; the valid values' own range when `nil`
    ///     (the searched range when none is valid).
    ///   - tickStep: the bar's tick spacing in pixels of disparity; when `nil`, 1, 2 or 5 times
    ///     a power of ten giving at most ten ticks.
    /// - Throws: ``DepthError/notRepresentable(_:)`` for a map too large for one image.
    public func colourised(range: ClosedRange<Float>? = nil, tickStep: Float? = nil) throws(DepthError) -> ImageBuffer {
        let valid = values.filter(\.isFinite)
        let low = range?.lowerBound ?? valid.min() ?? Float(minimumDisparity)
        let high = max(range?.upperBound ?? valid.max() ?? Float(minimumDisparity + disparityCount - 1), low + 1e-3)
        let width = max(size.width, 1), barHeight = max(12, size.height / 16), height = size.height + 4 + barHeight
        var bytes = [UInt8](repeating: 0, count: width * height * 3)
        func paint(_ x: Int, _ y: Int, _ colour: (UInt8, UInt8, UInt8)) {
            let at = 3 * (y * width + x)
            bytes[at] = colour.0
            bytes[at + 1] = colour.1
            bytes[at + 2] = colour.2
        }
        for y in 0..<size.height {
            for x in 0..<size.width {
                let value = values[y * size.width + x]
                if value.isFinite { paint(x, y, Self.colour((value - low) / (high - low))) }
            }
        }
        // The bar: the ramp left to right, white ticks at multiples of the step.
        let step = tickStep ?? Self.niceStep(for: high - low)
        for x in 0..<width {
            let colour = Self.colour(Float(x) / Float(max(width - 1, 1)))
            for y in (size.height + 4)..<height { paint(x, y, colour) }
        }
        var tick = (low / step).rounded(.up) * step
        while tick <= high {
            let x = Int(((tick - low) / (high - low) * Float(width - 1)).rounded())
            for y in (size.height + 4)..<(size.height + 4 + barHeight / 2) where x >= 0 && x < width { paint(x, y, (255, 255, 255)) }
            tick += step
        }
        do {
            return try ImageBuffer(format: .rgb8, size: ImageSize(width: width, height: height), bytes: bytes)
        } catch {
            throw .notRepresentable("a colourised \(width)×\(height) picture: \(error)")
        }
    }

    /// A colour for t in 0…1 (clamped): dark blue, light blue, green, yellow, red, linearly between.
    static func colour(_ t: Float) -> (UInt8, UInt8, UInt8) {
        let stops: [(Float, Float, Float)] = [(0, 0, 130), (0, 130, 255), (0, 200, 90), (255, 215, 0), (205, 0, 0)]
        let position = min(max(t.isFinite ? t : 0, 0), 1) * Float(stops.count - 1)
        let i = min(Int(position), stops.count - 2), f = position - Float(i)
        let a = stops[i], b = stops[i + 1]
        return (UInt8(a.0 + (b.0 - a.0) * f), UInt8(a.1 + (b.1 - a.1) * f), UInt8(a.2 + (b.2 - a.2) * f))
    }

    /// The smallest of 1, 2 or 5 times a power of ten (from 0.01) that gives at most ten ticks
    /// over `span`.
    static func niceStep(for span: Float) -> Float {
        guard span.isFinite, span > 0 else { return 1 }
        var magnitude: Float = 0.01
        while magnitude < 1e9 {
            for multiple: Float in [1, 2, 5] where span / (multiple * magnitude) <= 10 { return multiple * magnitude }
            magnitude *= 10
        }
        return magnitude
    }
}
