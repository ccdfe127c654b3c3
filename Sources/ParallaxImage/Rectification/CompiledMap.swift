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
    /// `sourceRowBytes` between rows. Rows are compiled in blocks spread over
    /// `pool`'s threads.
    init(xs: UnsafeBufferPointer<Float>, ys: UnsafeBufferPointer<Float>, width: Int, height: Int,
         sourceWidth: Int, sourceHeight: Int, sourceRowBytes: Int, layout: SampleLayout, interpolation: Interpolation,
         pool: WorkerPool) {
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

        // Each block keeps its own side table; entries outside spans hold
        // block-local indices until the tables are joined below.
        let blockCount = min(max(1, height), pool.threadCount * 4)
        let blockSlow = UnsafeMutablePointer<[SlowSample]>.allocate(capacity: blockCount)
        blockSlow.initialize(repeating: [], count: blockCount)
        defer { blockSlow.deinitialize(count: blockCount); blockSlow.deallocate() }
        let job = CompileJob(xs: xs, ys: ys, width: width, height: height, sourceWidth: sourceWidth,
                             sourceHeight: sourceHeight, sourceRowBytes: sourceRowBytes, layout: layout,
                             interpolation: interpolation, blockCount: blockCount, entries: entries, rowBase: rowBase,
                             spanStart: spanStart, spanEnd: spanEnd, blockSlow: blockSlow)
        withUnsafePointer(to: job) { pointer in
            pool.run(tasks: blockCount, context: UnsafeRawPointer(pointer)) { context, block in
                CompiledMap.compileBlock(context.assumingMemoryBound(to: CompileJob.self), block)
            }
        }
        var slow: [SlowSample] = []
        for block in 0..<blockCount {
            let offset = UInt32(slow.count)
            if offset > 0 {
                for v in job.rows(ofBlock: block) {
                    let row = entries + v * width
                    for u in 0..<Int(spanStart[v]) { row[u] += offset }
                    for u in Int(spanEnd[v])..<width { row[u] += offset }
                }
            }
            slow += blockSlow[block]
        }
        self.slow = slow
    }

    /// The inputs and outputs of one compilation, shared by its blocks.
    private struct CompileJob {
        let xs: UnsafeBufferPointer<Float>
        let ys: UnsafeBufferPointer<Float>
        let width: Int, height: Int, sourceWidth: Int, sourceHeight: Int, sourceRowBytes: Int
        let layout: SampleLayout
        let interpolation: Interpolation
        let blockCount: Int
        let entries: UnsafeMutablePointer<UInt32>
        let rowBase: UnsafeMutablePointer<Int>
        let spanStart: UnsafeMutablePointer<Int32>
        let spanEnd: UnsafeMutablePointer<Int32>
        let blockSlow: UnsafeMutablePointer<[SlowSample]>

        func rows(ofBlock block: Int) -> Range<Int> {
            (block * height / blockCount)..<((block + 1) * height / blockCount)
        }
    }

    /// Compiles the rows of one block (see the type's description).
    private static func compileBlock(_ job: UnsafePointer<CompileJob>, _ block: Int) {
        let j = job.pointee
        let width = j.width
        let taps = j.interpolation.taps
        // Only the bilinear vector kernels read past a sample (see SampleLayout.spareColumns).
        let spare = j.interpolation == .bilinear ? j.layout.spareColumns : 0
        let lead = j.interpolation == .bicubic ? 1 : 0
        let pixelStride = j.layout.pixelStride
        // Vector reads: the bilinear kernels load 4 bytes at each tap (SampleLayout.vectorReadBytes),
        // which may run past the last sample of the last source row; such samples stay out of spans.
        let readable = (j.sourceHeight - 1) * j.sourceRowBytes + j.sourceWidth * pixelStride
        let vectorRead = j.interpolation == .bilinear ? j.layout.vectorReadBytes : 0
        var slow: [SlowSample] = []
        // Scratch rows: unchecked buffers because this loop runs once per output pixel.
        let rowSamples = UnsafeMutableBufferPointer<SlowSample>.allocate(capacity: max(1, width))
        let inside = UnsafeMutableBufferPointer<Bool>.allocate(capacity: max(1, width) + 1)
        defer { rowSamples.deallocate(); inside.deallocate() }
        for v in j.rows(ofBlock: block) {
            var minY = Int.max
            let row = v * width
            for u in 0..<width {
                let sample = quantise(j.xs[row + u], j.ys[row + u], interpolation: j.interpolation, lead: lead)
                rowSamples[u] = sample
                let x = Int(sample.x), y = Int(sample.y)
                let isInside = sample.x != .min && x >= 0 && y >= 0 && x + taps + spare <= j.sourceWidth
                    && y + taps <= j.sourceHeight
                    && (y + taps - 1) * j.sourceRowBytes + x * pixelStride + vectorRead <= readable
                inside[u] = isInside
                if isInside && y < minY { minY = y }
            }
            inside[width] = false
            // The longest run of inside samples whose offset fits.
            let base = minY == .max ? 0 : minY * j.sourceRowBytes
            var bestStart = 0, bestLength = 0, runStart = 0
            for u in 0...width {
                var ok = false
                if inside[u] {
                    let s = rowSamples[u]
                    ok = Int(s.y) * j.sourceRowBytes + Int(s.x) * pixelStride - base < offsetLimit
                }
                if !ok {
                    if u - runStart > bestLength { bestStart = runStart; bestLength = u - runStart }
                    runStart = u + 1
                }
            }
            j.rowBase[v] = base
            j.spanStart[v] = Int32(bestStart)
            j.spanEnd[v] = Int32(bestStart + bestLength)
            let out = j.entries + row
            for u in 0..<bestStart {
                out[u] = UInt32(slow.count)
                slow.append(rowSamples[u])
            }
            for u in bestStart..<(bestStart + bestLength) {
                let s = rowSamples[u]
                let offset = Int(s.y) * j.sourceRowBytes + Int(s.x) * pixelStride - base
                out[u] = UInt32(truncatingIfNeeded: offset) << 10 | UInt32(s.fy) << 5 | UInt32(s.fx)
            }
            for u in (bestStart + bestLength)..<width {
                out[u] = UInt32(slow.count)
                slow.append(rowSamples[u])
            }
        }
        j.blockSlow[block] = slow
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
        // |x| < 2^16 rejects NaN, infinities and positions far outside any
        // image, and keeps 32 x below 2^21 for the rounding below.
        guard abs(x) < 65536, abs(y) < 65536 else { return .undefined }
        let qx = roundHalfEven(x * 32), qy = roundHalfEven(y * 32)
        if interpolation == .nearest {
            // Round to the nearest sample; the quantised position decides ties.
            return SlowSample(x: Int32((qx + 16) >> 5), y: Int32((qy + 16) >> 5), fx: 0, fy: 0)
        }
        return SlowSample(x: Int32((qx >> 5) - lead), y: Int32((qy >> 5) - lead), fx: UInt8(qx & 31), fy: UInt8(qy & 31))
    }

    /// `v` rounded to the nearest integer, ties to even (as OpenCV's
    /// `cvRound`), for |v| < 2²²: adding 1.5 · 2²³ leaves no fraction bits,
    /// so the hardware rounds in the current (nearest-even) mode. Inline,
    /// unlike `rounded(.toNearestOrEven)`, which calls `rintf`.
    @inline(__always)
    static func roundHalfEven(_ v: Float) -> Int {
        let magic: Float = 12_582_912
        return Int((v + magic) - magic)
    }

    /// Number of samples handled outside spans (border and undefined).
    var slowCount: Int { slow.count }
}
