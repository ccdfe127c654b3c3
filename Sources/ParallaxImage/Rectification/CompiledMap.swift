import ParallaxGeometry

/// A rectification map compiled for one sample grid, one source layout and
/// one interpolation: 4 bytes per output sample, designed for the kernels.
///
/// Every output row has a *span*, a run of samples whose whole neighbourhood
/// (1, 2×2 or 4×4 source samples) lies inside the source. Span entries pack
/// the byte offset of the neighbourhood's first sample, relative to the
/// row's base offset, with the 5-bit x and y fractions:
///
///     entry = offset << 10 | fy << 5 | fx      (offset < 2²²)
///
/// so a kernel needs one 32-bit load per sample and no bounds checks. The
/// offset is relative to the row base so that large images still fit 22
/// bits: it only has to cover the source rows one output row touches.
/// Samples outside the span (near the borders, undefined, or too far from
/// the row base) index a small side table handled by a careful per-sample
/// path that blends in the border value, as OpenCV's `BORDER_CONSTANT` does.
///
/// Positions are quantised as OpenCV's `convertMaps` does: `round(32 x)`
/// (ties to even), integer part `>> 5`, fraction `& 31`.
final class CompiledMap: @unchecked Sendable {
    /// Output samples per row and rows.
    let width: Int
    let height: Int
    /// One entry per output sample (span: packed offset; elsewhere: side-table index).
    let entries: UnsafeMutablePointer<UInt32>
    /// Per row: byte offset of the base, span start, span end.
    let rowBase: UnsafeMutablePointer<Int>
    let spanStart: UnsafeMutablePointer<Int32>
    let spanEnd: UnsafeMutablePointer<Int32>
    /// Samples outside spans.
    let slow: [SlowSample]
    /// The layout this was compiled for.
    let sourceRowBytes: Int
    let sourceWidth: Int
    let sourceHeight: Int
    let layout: SampleLayout
    let interpolation: Interpolation

    static let offsetLimit = 1 << 22

    /// One sample handled with bounds checks: its first tap and fractions,
    /// or undefined (x = Int32.min) for no source point.
    struct SlowSample: Sendable {
        var x: Int32
        var y: Int32
        var fx: UInt8
        var fy: UInt8
        static let undefined = SlowSample(x: .min, y: .min, fx: 0, fy: 0)
    }

    /// Compiles `xs`, `ys` (row-major, `width × height`, source sample
    /// coordinates, NaN for none) for a source grid of
    /// `sourceWidth × sourceHeight` samples laid out as `layout` with
    /// `sourceRowBytes` between rows.
    init(xs: UnsafeBufferPointer<Float>, ys: UnsafeBufferPointer<Float>, width: Int, height: Int,
         sourceWidth: Int, sourceHeight: Int, sourceRowBytes: Int, layout: SampleLayout, interpolation: Interpolation) {
        precondition(xs.count == width * height && ys.count == width * height, "map arrays must cover the grid")
        self.width = width
        self.height = height
        self.sourceRowBytes = sourceRowBytes
        self.sourceWidth = sourceWidth
        self.sourceHeight = sourceHeight
        self.layout = layout
        self.interpolation = interpolation
        entries = .allocate(capacity: max(1, width * height))
        rowBase = .allocate(capacity: max(1, height))
        spanStart = .allocate(capacity: max(1, height))
        spanEnd = .allocate(capacity: max(1, height))
        var slow: [SlowSample] = []

        let taps = interpolation.taps
        // Only the bilinear 3-byte kernel over-reads; other interpolations read byte by byte.
        let spare = interpolation == .bilinear ? layout.spareColumns : 0
        let lead = interpolation == .bicubic ? 1 : 0
        var rowSamples = [SlowSample](repeating: .undefined, count: width)
        var inside = [Bool](repeating: false, count: width)
        for v in 0..<height {
            var minY = Int.max
            for u in 0..<width {
                let i = v * width + u
                let sample = Self.quantise(xs[i], ys[i], interpolation: interpolation, lead: lead)
                rowSamples[u] = sample
                let x = Int(sample.x), y = Int(sample.y)
                let isInside = sample.x != .min && x >= 0 && y >= 0 && x + taps + spare <= sourceWidth && y + taps <= sourceHeight
                inside[u] = isInside
                if isInside { minY = min(minY, y) }
            }
            // Longest run of inside samples whose offset fits.
            let base = minY == .max ? 0 : minY * sourceRowBytes
            var bestStart = 0, bestLength = 0, runStart = 0
            for u in 0...width {
                var ok = false
                if u < width && inside[u] {
                    let s = rowSamples[u]
                    ok = Int(s.y) * sourceRowBytes + Int(s.x) * layout.pixelStride - base < Self.offsetLimit
                }
                if !ok {
                    if u - runStart > bestLength { bestStart = runStart; bestLength = u - runStart }
                    runStart = u + 1
                }
            }
            rowBase[v] = base
            spanStart[v] = Int32(bestStart)
            spanEnd[v] = Int32(bestStart + bestLength)
            for u in 0..<width {
                let s = rowSamples[u]
                if u >= bestStart && u < bestStart + bestLength {
                    let offset = Int(s.y) * sourceRowBytes + Int(s.x) * layout.pixelStride - base
                    entries[v * width + u] = UInt32(offset) << 10 | UInt32(s.fy) << 5 | UInt32(s.fx)
                } else {
                    entries[v * width + u] = UInt32(slow.count)
                    slow.append(s)
                }
            }
        }
        self.slow = slow
    }

    deinit {
        entries.deallocate()
        rowBase.deallocate()
        spanStart.deallocate()
        spanEnd.deallocate()
    }

    /// The first tap and fractions of a source position, as OpenCV quantises
    /// it; undefined for NaN or positions far outside any image.
    @inline(__always)
    static func quantise(_ x: Float, _ y: Float, interpolation: Interpolation, lead: Int) -> SlowSample {
        // |x| < 2^20 keeps 32 x exact in Int32 range and rejects NaN and infinities.
        guard abs(x) < 1_048_576, abs(y) < 1_048_576 else { return .undefined }
        let qx = Int((x * 32).rounded(.toNearestOrEven)), qy = Int((y * 32).rounded(.toNearestOrEven))
        if interpolation == .nearest {
            // Round to the nearest sample; the quantised position decides ties.
            return SlowSample(x: Int32((qx + 16) >> 5), y: Int32((qy + 16) >> 5), fx: 0, fy: 0)
        }
        return SlowSample(x: Int32((qx >> 5) - lead), y: Int32((qy >> 5) - lead), fx: UInt8(qx & 31), fy: UInt8(qy & 31))
    }

    /// Number of samples handled outside spans (border and undefined).
    var slowCount: Int { slow.count }
}
