/// The plain bilinear resampler that the fast engine (ParallaxImage's
/// `Rectifier`) is tested against: straightforward, in double precision,
/// one pixel at a time.
public enum ReferenceRemap {
    /// Resamples an interleaved 8-bit image (`channels` per pixel, rows
    /// packed) through `map` with bilinear interpolation.
    ///
    /// Neighbours outside the source read as `border`, the way OpenCV's
    /// `BORDER_CONSTANT` blends them in; output pixels whose map entry is NaN
    /// get `border`. Results round half up to the nearest level.
    ///
    /// - Precondition: `source.count == map.sourceSize.area * channels`.
    public static func bilinear(_ source: [UInt8], channels: Int, map: RectificationMap, border: UInt8 = 0) -> [UInt8] {
        let w = map.sourceSize.width, h = map.sourceSize.height
        precondition(source.count == w * h * channels, "source holds \(source.count) bytes, map expects \(w * h * channels)")
        var out = [UInt8](repeating: border, count: map.outputSize.area * channels)
        func sample(_ x: Int, _ y: Int, _ c: Int) -> Double {
            guard x >= 0, y >= 0, x < w, y < h else { return Double(border) }
            return Double(source[(y * w + x) * channels + c])
        }
        for i in 0..<map.outputSize.area {
            let sx = Double(map.sourceX[i]), sy = Double(map.sourceY[i])
            guard sx.isFinite, sy.isFinite, sx > -1, sy > -1, sx < Double(w), sy < Double(h) else { continue }
            let x0 = Int(_floor(sx)), y0 = Int(_floor(sy))
            let fx = sx - Double(x0), fy = sy - Double(y0)
            for c in 0..<channels {
                let top = sample(x0, y0, c) * (1 - fx) + sample(x0 + 1, y0, c) * fx
                let bottom = sample(x0, y0 + 1, c) * (1 - fx) + sample(x0 + 1, y0 + 1, c) * fx
                let value = top * (1 - fy) + bottom * fy
                out[i * channels + c] = UInt8(min(max(_floor(value + 0.5), 0), 255))
            }
        }
        return out
    }
}
