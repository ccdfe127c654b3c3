import CRemapKernels

/// The resampling loops. Each works on a band of output rows of one sample
/// grid, reading through a ``CompiledMap``.
///
/// Bilinear arithmetic equals OpenCV's fixed-point `INTER_LINEAR`: with
/// fractions fx, fy in 1/32 pixel the four weights are
/// (32−fx)(32−fy), fx(32−fy), (32−fx)fy, fx·fy (sum 1024) and the result is
/// `(Σ wᵢ pᵢ + 512) >> 10`. The 4-byte-pixel kernels get it from SSE2's
/// 16 × 16 → 32-bit multiply-add (`pmaddwd`), as OpenCV does. The gray,
/// RGB, luma and NV12-chroma kernels compute it in 16-bit lanes (SSE2 has
/// 16-bit multiplies but no 32-bit ones) by splitting the row results t, b
/// (≤ 8160) as 4q + r:
///
///     Σ wᵢ pᵢ = 4 (q_t gy + q_b fy) + (r_t gy + r_b fy)      (gy = 32 − fy)
///     (Σ + 512) >> 10 = (A + (B + 512) >> 2) >> 8
///
/// with A ≤ 65 280 and B ≤ 96, exact because the dropped low bits of
/// (B + 512) cannot carry into bit 10.
///
/// These are the portable kernels; with ``SIMDLevel/avx2`` or above the bilinear spans go to
/// the C kernels of `CRemapKernels` first, which stop at a whole group of samples and
/// leave the rest of the span to the code here. Both give the same integers.
///
/// Only concrete SIMD types appear here: in generic code the standard
/// library's SIMD operators and lane conversions run lane by lane, and the
/// optimiser recovers vector code only in part (measured up to 2× slower).
enum RemapKernels {
    /// Resamples rows `rows` of `map`'s output grid.
    ///
    /// - Parameters:
    ///   - source: first byte of the source plane (the layout's channel
    ///     offsets are added to it), laid out as the map was compiled for.
    ///   - destination: first byte of the destination plane, same sample layout.
    ///   - shift: moves the output by whole samples (a live convergence
    ///     change): output sample (u, v) is what the map gives for
    ///     (u − shift.x, v − shift.y); samples the shift brings in from
    ///     outside the map are border.
    ///   - level: the widest kernels to use.
    ///   - loads: whether the AVX2 kernels fetch taps with scalar loads instead of
    ///     `vpgatherdd` (``SIMDLevel/avx2TapsByLoads``; the same pixels either way).
    ///
    /// Bounds: span entries address bytes `rowBase + offset + tap offsets`
    /// that the compiler checked lie inside the source grid; other samples
    /// check each tap. With a shift, only map columns `0..<width` and rows
    /// `0..<height` are read: output columns `lo..<hi` below are exactly
    /// those whose map column `u − shift.x` is inside the row, and the
    /// destination is written at columns `0..<width` only.
    static func run(_ map: CompiledMap, rows: Range<Int>, source: UnsafeRawPointer,
                    destination: UnsafeMutableRawPointer, destinationRowBytes: Int, shift: SIMD2<Int> = .zero,
                    level: SIMDLevel = .baseline, loads: Bool = SIMDLevel.avx2TapsByLoads) {
        for v in rows {
            runRow(map, row: v, columns: 0..<map.width, source: source, out: destination + v * destinationRowBytes,
                   shift: shift, level: level, loads: loads)
        }
    }

    /// Where one output row reads its map: output columns `lo..<hi` read map columns
    /// `lo − shift.x …` of map row `row` (nil: the whole output row is border), and
    /// `lo + start..<lo + end` of them are the compiled span the vector kernels may read.
    private struct RowReach {
        var row: Int, lo: Int, hi: Int, start: Int, end: Int
        /// The span, in output columns.
        var span: Range<Int> { (lo + start)..<(lo + end) }

        init?(_ map: CompiledMap, row v: Int, shift: SIMD2<Int>) {
            let width = map.width
            lo = min(width, max(0, shift.x))
            hi = max(lo, min(width, width + shift.x))
            row = v - shift.y
            guard row >= 0, row < map.height, hi > lo else { return nil }
            let first = lo - shift.x, count = hi - lo
            start = min(count, max(0, Int(map.spanStart[row]) - first))
            end = max(start, min(count, Int(map.spanEnd[row]) - first))
        }
    }

    /// Resamples output columns `columns` of output row `v` (`out` is that row's first byte);
    /// writes nothing outside them, so two calls on disjoint columns may fill one row.
    private static func runRow(_ map: CompiledMap, row v: Int, columns: Range<Int>, source: UnsafeRawPointer,
                               out: UnsafeMutableRawPointer, shift: SIMD2<Int>, level: SIMDLevel, loads: Bool) {
        guard !columns.isEmpty else { return }
        let layout = map.layout
        let width = map.width
        guard let reach = RowReach(map, row: v, shift: shift) else {
            fillBorder(layout, out: out, range: columns)
            return
        }
        let (lo, hi) = (reach.lo, reach.hi)
        let left = columns.clamped(to: 0..<lo), right = columns.clamped(to: hi..<width)
        if !left.isEmpty { fillBorder(layout, out: out, range: left) }
        if !right.isEmpty { fillBorder(layout, out: out, range: right) }
        // Output columns lo..<hi read map columns first..<first + count; below, indices are
        // relative to lo.
        let first = lo - shift.x, count = hi - lo
        let wanted = (columns.lowerBound - lo)..<(columns.upperBound - lo)
        let entries = map.entries + reach.row * width + first
        let base = source + map.rowBase[reach.row]
        let o = out + lo * layout.pixelStride
        let before = wanted.clamped(to: 0..<reach.start), after = wanted.clamped(to: reach.end..<count)
        let (start, end) = (max(reach.start, wanted.lowerBound), min(reach.end, wanted.upperBound))
        if !before.isEmpty { slowSamples(map, entries: entries, range: before, source: source, out: o) }
        if end > start {
            switch map.interpolation {
            case .bilinear:
                let from = level >= .avx2
                    ? bilinearAVX2(entries, range: start..<end, base: base, rowBytes: map.sourceRowBytes,
                                   layout: layout, out: o, loads: loads)
                    : start
                guard from < end else { break }
                let rest = from..<end
                if layout.isGray {
                    bilinearGray(entries, range: rest, base: base, rowBytes: map.sourceRowBytes, out: o)
                } else if layout.isLuma422 {
                    bilinearLuma422(entries, range: rest, base: base, rowBytes: map.sourceRowBytes,
                                    offset: layout.offsets[0], out: o)
                } else if layout.isChromaPair {
                    bilinearChromaPair(entries, range: rest, base: base, rowBytes: map.sourceRowBytes,
                                       layout: layout, out: o)
                } else if layout.isPacked3 {
                    bilinearPacked3(entries, range: rest, base: base, rowBytes: map.sourceRowBytes, out: o)
                } else if layout.isPacked4 {
                    bilinearPacked4(entries, range: rest, base: base, rowBytes: map.sourceRowBytes, out: o)
                } else {
                    bilinearAny(entries, range: rest, base: base, rowBytes: map.sourceRowBytes, layout: layout, out: o)
                }
            case .nearest:
                nearestAny(entries, range: start..<end, base: base, layout: layout, out: o)
            case .bicubic:
                bicubicAny(entries, range: start..<end, base: base, rowBytes: map.sourceRowBytes, layout: layout, out: o)
            }
        }
        if !after.isEmpty { slowSamples(map, entries: entries, range: after, source: source, out: o) }
    }

    /// Resamples rows `rows` of a YUYV or UYVY image: its luma map (full grid) and chroma
    /// map (4:2:2 grid) together, so one thread writes whole output rows. With
    /// ``SIMDLevel/avx2`` and bilinear maps, the columns where both spans cover a
    /// macropixel go to a C kernel that stores 32 interleaved bytes at a time (neither
    /// band alone could store whole bytes of the other's); the rest of each row runs
    /// through ``runRow(_:row:columns:source:out:shift:level:loads:)`` per plane, as `run` would.
    ///
    /// - Parameter shift: the luma plane's shift (see `run`); chroma moves by `shift.x / 2`
    ///   (a 4:2:2 convergence step is an even number of pixels).
    static func run422(luma: CompiledMap, chroma: CompiledMap, rows: Range<Int>, source: UnsafeRawPointer,
                       destination: UnsafeMutableRawPointer, destinationRowBytes: Int, shift: SIMD2<Int> = .zero,
                       level: SIMDLevel = .baseline, loads: Bool = SIMDLevel.avx2TapsByLoads) {
        let chromaShift = SIMD2(shift.x / 2, shift.y)
        let fusable = level >= .avx2 && luma.interpolation == .bilinear && chroma.interpolation == .bilinear
            && luma.layout.isLuma422 && chroma.layout.isChromaPair && chroma.layout.pixelStride == 4
        for v in rows {
            let out = destination + v * destinationRowBytes
            // Chroma columns whose macropixel lies inside both spans.
            var fused = 0..<0
            if fusable, let l = RowReach(luma, row: v, shift: shift), let c = RowReach(chroma, row: v, shift: chromaShift) {
                let lumaSpan = l.span, chromaSpan = c.span
                let from = max(chromaSpan.lowerBound, (lumaSpan.lowerBound + 1) / 2)
                let to = min(chromaSpan.upperBound, lumaSpan.upperBound / 2)
                if to > from {
                    let lumaEntries = luma.entries + l.row * luma.width + (2 * from - shift.x)
                    let chromaEntries = chroma.entries + c.row * chroma.width + (from - chromaShift.x)
                    let done = parallax_remap_422_bilinear_avx2(
                        lumaEntries, chromaEntries, to - from,
                        (source + luma.rowBase[l.row] + luma.layout.offsets[0]).assumingMemoryBound(to: UInt8.self),
                        (source + chroma.rowBase[c.row]).assumingMemoryBound(to: UInt8.self), luma.sourceRowBytes,
                        Int32(luma.layout.offsets[0]), (out + 4 * from).assumingMemoryBound(to: UInt8.self),
                        loads ? 1 : 0)
                    fused = from..<(from + done)
                }
            }
            if fused.isEmpty {
                runRow(luma, row: v, columns: 0..<luma.width, source: source, out: out, shift: shift, level: level,
                       loads: loads)
                runRow(chroma, row: v, columns: 0..<chroma.width, source: source, out: out, shift: chromaShift,
                       level: level, loads: loads)
            } else {
                runRow(luma, row: v, columns: 0..<(2 * fused.lowerBound), source: source, out: out, shift: shift,
                       level: level, loads: loads)
                runRow(luma, row: v, columns: (2 * fused.upperBound)..<luma.width, source: source, out: out, shift: shift,
                       level: level, loads: loads)
                runRow(chroma, row: v, columns: 0..<fused.lowerBound, source: source, out: out, shift: chromaShift,
                       level: level, loads: loads)
                runRow(chroma, row: v, columns: fused.upperBound..<chroma.width, source: source, out: out,
                       shift: chromaShift, level: level, loads: loads)
            }
        }
    }

    /// Writes the border value into samples `range` of one output row.
    private static func fillBorder(_ layout: SampleLayout, out: UnsafeMutableRawPointer, range: Range<Int>) {
        for u in range {
            for c in 0..<layout.channels {
                out.storeBytes(of: layout.border, toByteOffset: u * layout.pixelStride + layout.offsets[c], as: UInt8.self)
            }
        }
    }

    // MARK: Bilinear

    /// The AVX2 kernel for `layout`, over whole groups of samples from the start of `range`;
    /// returns the first sample it left (the range's start for layouts it does not cover:
    /// YUYV and UYVY luma and chroma on their own, which `run422` fuses instead).
    /// Bounds: the C kernels read what the portable ones read, plus up to
    /// `layout.vectorReadBytes` from each tap row, which the map's compiler kept inside
    /// the source plane for every span entry.
    @inline(__always)
    private static func bilinearAVX2(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                     rowBytes: Int, layout: SampleLayout, out: UnsafeMutableRawPointer,
                                     loads: Bool) -> Int {
        let source = base.assumingMemoryBound(to: UInt8.self)
        let destination = out.assumingMemoryBound(to: UInt8.self)
        let (start, end) = (range.lowerBound, range.upperBound)
        let fetch: Int32 = loads ? 1 : 0
        if layout.isGray {
            return parallax_remap_gray_bilinear_avx2(entries, start, end, source, rowBytes, destination, fetch)
        } else if layout.isChromaPair && layout.pixelStride == 2 {
            return parallax_remap_nv12_chroma_bilinear_avx2(entries, start, end, source, rowBytes, destination, fetch)
        } else if layout.isPacked3 {
            return parallax_remap_packed3_bilinear_avx2(entries, start, end, source, rowBytes, destination, fetch)
        } else if layout.isPacked4 {
            return parallax_remap_packed4_bilinear_avx2(entries, start, end, source, rowBytes, destination, fetch)
        }
        return start
    }

    /// Gray: eight pixels per step. Each pixel's two neighbour pairs are
    /// 2-byte scalar loads placed into vector lanes; the fractions come
    /// from the low 16 bits of the entries. No lane-type conversions are
    /// used: the standard library implements those lane by lane.
    @inline(__always)
    private static func bilinearGray(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                     rowBytes: Int, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        while u + 8 <= end {
            let e = UnsafeRawPointer(entries + u).loadUnaligned(as: SIMD8<UInt32>.self)
            var top = SIMD8<UInt16>(), bottom = SIMD8<UInt16>(), fractions = SIMD8<UInt16>()
            for k in 0..<8 {
                let p = base + Int(e[k] >> 10)
                top[k] = p.loadUnaligned(as: UInt16.self)
                bottom[k] = p.loadUnaligned(fromByteOffset: rowBytes, as: UInt16.self)
                fractions[k] = UInt16(truncatingIfNeeded: e[k])
            }
            // Little-endian: the low byte of each pair is the left pixel.
            let r = blend(top & 0xFF, shiftRight(top, 8), bottom & 0xFF, shiftRight(bottom, 8),
                          fx: fractions & 31, fy: shiftRight(fractions, 5) & 31)
            // r ≤ 255: pack pairs of lanes into bytes through 32-bit lanes.
            let pairs = unsafeBitCast(r, to: SIMD4<UInt32>.self)
            let packed = (pairs & 0xFF) | ((pairs &>> 8) & 0xFF00)
            out.storeBytes(of: packed[0] | packed[1] << 16, toByteOffset: u, as: UInt32.self)
            out.storeBytes(of: packed[2] | packed[3] << 16, toByteOffset: u + 4, as: UInt32.self)
            u += 8
        }
        while u < end {
            let e = entries[u]
            let p = base + Int(e >> 10)
            out.storeBytes(of: blendScalar(Int(p.load(as: UInt8.self)), Int(p.load(fromByteOffset: 1, as: UInt8.self)),
                                           Int(p.load(fromByteOffset: rowBytes, as: UInt8.self)),
                                           Int(p.load(fromByteOffset: rowBytes + 1, as: UInt8.self)),
                                           fx: Int(e & 31), fy: Int((e >> 5) & 31)),
                           toByteOffset: u, as: UInt8.self)
            u += 1
        }
    }

    /// Bilinear blend in 16-bit lanes, exactly `(Σ wᵢ pᵢ + 512) >> 10` (see the type's note).
    ///
    /// Written per concrete vector type on purpose: in a generic function the
    /// operators resolve to the protocol's lane-by-lane versions, which the
    /// optimiser only partly turns back into vector code (measured 2× slower).
    @inline(__always)
    private static func blend(_ p00: SIMD8<UInt16>, _ p01: SIMD8<UInt16>, _ p10: SIMD8<UInt16>, _ p11: SIMD8<UInt16>,
                              fx: SIMD8<UInt16>, fy: SIMD8<UInt16>) -> SIMD8<UInt16> {
        let gx = 32 &- fx, gy = 32 &- fy
        let t = p00 &* gx &+ p01 &* fx
        let b = p10 &* gx &+ p11 &* fx
        let a = shiftRight(t, 2) &* gy &+ shiftRight(b, 2) &* fy
        let r = (t & 3) &* gy &+ (b & 3) &* fy
        return shiftRight(a &+ shiftRight(r &+ 512, 2), 8)
    }

    /// `v >> n` in every 16-bit lane, done as two 64-bit shifts and a mask of
    /// the bits that crossed lanes. The standard library's SIMD shift is a
    /// lane loop that the optimiser vectorises only partly for 16-bit lanes;
    /// the 64-bit form becomes one instruction per half.
    @inline(__always)
    static func shiftRight(_ v: SIMD8<UInt16>, _ n: UInt16) -> SIMD8<UInt16> {
        let wide = unsafeBitCast(v, to: SIMD2<UInt64>.self)
        let shifted = SIMD2<UInt64>(wide[0] &>> UInt64(n), wide[1] &>> UInt64(n))
        return unsafeBitCast(shifted, to: SIMD8<UInt16>.self) & SIMD8(repeating: 0xFFFF &>> n)
    }

    @inline(__always)
    private static func blendScalar(_ p00: Int, _ p01: Int, _ p10: Int, _ p11: Int, fx: Int, fy: Int) -> UInt8 {
        let t = p00 * (32 - fx) + p01 * fx
        let b = p10 * (32 - fx) + p11 * fx
        return UInt8(truncatingIfNeeded: (t * (32 - fy) + b * fy + 512) >> 10)
    }

    /// Samples ahead whose tap rows the multi-byte kernels ask for (as the AVX2 kernels do,
    /// `PREFETCH_AHEAD` in remap_avx2.c): a rectified row crosses source rows and pages,
    /// which the hardware prefetcher does not foresee.
    private static let prefetchAhead = 128

    /// Asks for the cache lines of both tap rows of sample `u + prefetchAhead` (the range's
    /// last sample near its end: `entries` is read inside the range only).
    @inline(__always)
    private static func prefetchTaps(_ entries: UnsafePointer<UInt32>, _ u: Int, end: Int, base: UnsafeRawPointer,
                                     rowBytes: Int) {
        let tap = base + Int(entries[min(u + prefetchAhead, end - 1)] >> 10)
        parallax_prefetch(tap)
        parallax_prefetch(tap + rowBytes)
    }

    /// BGRA / RGBA: one pixel per vector, the way SSE2's `pmaddwd` likes it.
    /// A pixel's two horizontal neighbours are 8 adjacent bytes; they are
    /// spread to 16-bit lanes pairing each channel of the left neighbour with
    /// the same channel of the right one, and one multiply-add per row with
    /// the weight pairs (w00, w01) and (w10, w11) gives Σ wᵢ pᵢ per channel in
    /// 32-bit lanes, exactly as OpenCV computes it. (The optimiser turns the
    /// pairwise lane loop in `multiplyAdd` into `pmaddwd`.)
    @inline(__always)
    private static func bilinearPacked4(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                        rowBytes: Int, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        bilinearWeights.withUnsafeBufferPointer { weights in
            while u + 4 <= end {
                prefetchTaps(entries, u, end: end, base: base, rowBytes: rowBytes)
                let e0 = entries[u], e1 = entries[u + 1], e2 = entries[u + 2], e3 = entries[u + 3]
                let r0 = blendPixel4(base + Int(e0 >> 10), rowBytes: rowBytes, weights: weights[Int(e0 & 1023)])
                let r1 = blendPixel4(base + Int(e1 >> 10), rowBytes: rowBytes, weights: weights[Int(e1 & 1023)])
                let r2 = blendPixel4(base + Int(e2 >> 10), rowBytes: rowBytes, weights: weights[Int(e2 & 1023)])
                let r3 = blendPixel4(base + Int(e3 >> 10), rowBytes: rowBytes, weights: weights[Int(e3 & 1023)])
                var bytes = SIMD16<UInt8>()
                for c in 0..<4 {
                    bytes[c] = UInt8(truncatingIfNeeded: r0[c])
                    bytes[4 + c] = UInt8(truncatingIfNeeded: r1[c])
                    bytes[8 + c] = UInt8(truncatingIfNeeded: r2[c])
                    bytes[12 + c] = UInt8(truncatingIfNeeded: r3[c])
                }
                out.storeBytes(of: bytes, toByteOffset: u * 4, as: SIMD16<UInt8>.self)
                u += 4
            }
        }
        if u < end {
            bilinearAny(entries, range: u..<end, base: base, rowBytes: rowBytes, layout: .interleaved(4), out: out)
        }
    }

    /// The four bilinear weights of each 10-bit fraction index (fy << 5 | fx),
    /// packed w00 | w01 << 16 | w10 << 32 | w11 << 48.
    static let bilinearWeights: [UInt64] = (0..<1024).map { index in
        let fx = UInt64(index & 31), fy = UInt64(index >> 5)
        let w00 = (32 - fx) * (32 - fy), w01 = fx * (32 - fy), w10 = (32 - fx) * fy, w11 = fx * fy
        return w00 | w01 << 16 | w10 << 32 | w11 << 48
    }

    /// One 4-byte pixel: `(Σ wᵢ pᵢ + 512) >> 10` for its four channels.
    @inline(__always)
    private static func blendPixel4(_ p: UnsafeRawPointer, rowBytes: Int, weights: UInt64) -> SIMD4<Int32> {
        let w = unsafeBitCast(SIMD2<UInt64>(weights, 0), to: SIMD4<UInt32>.self)
        let top = unsafeBitCast(SIMD4(repeating: w[0]), to: SIMD8<Int16>.self)
        let bottom = unsafeBitCast(SIMD4(repeating: w[1]), to: SIMD8<Int16>.self)
        let sum = multiplyAdd(pairChannels(p.loadUnaligned(as: SIMD8<UInt8>.self)), top)
            &+ multiplyAdd(pairChannels(p.loadUnaligned(fromByteOffset: rowBytes, as: SIMD8<UInt8>.self)), bottom)
        var result = SIMD4<Int32>()
        for c in 0..<4 { result[c] = (sum[c] &+ 512) >> 10 }
        return result
    }

    /// `[a0 a1 a2 a3 b0 b1 b2 b3]` → 16-bit lanes `[a0, b0, a1, b1, a2, b2, a3, b3]`.
    @inline(__always)
    private static func pairChannels(_ x: SIMD8<UInt8>) -> SIMD8<Int16> {
        unsafeBitCast(SIMD16<UInt8>(x[0], 0, x[4], 0, x[1], 0, x[5], 0, x[2], 0, x[6], 0, x[3], 0, x[7], 0),
                      to: SIMD8<Int16>.self)
    }

    /// Pairwise multiply-add of 16-bit lanes into 32-bit lanes (SSE2 `pmaddwd`).
    @inline(__always)
    private static func multiplyAdd(_ a: SIMD8<Int16>, _ b: SIMD8<Int16>) -> SIMD4<Int32> {
        var r = SIMD4<Int32>()
        for i in 0..<4 { r[i] = Int32(a[2 * i]) &* Int32(b[2 * i]) &+ Int32(a[2 * i + 1]) &* Int32(b[2 * i + 1]) }
        return r
    }

    /// RGB / BGR: the 4-channel arithmetic on 4-byte loads whose fourth byte
    /// belongs to the next pixel (the compiler keeps one spare source column
    /// inside spans of 3-byte layouts, so those reads stay in the row).
    /// Each result pixel is stored as 4 bytes, 3 apart; the spare byte is
    /// overwritten by the next pixel, so the vector loop stops one pixel
    /// before the span's end.
    @inline(__always)
    private static func bilinearPacked3(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                        rowBytes: Int, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        while u + 5 <= end {
            prefetchTaps(entries, u, end: end, base: base, rowBytes: rowBytes)
            let r = unsafeBitCast(bilinearFour(entries + u, base: base, step: 3, rowBytes: rowBytes), to: SIMD4<UInt32>.self)
            for k in 0..<4 { out.storeBytes(of: r[k], toByteOffset: (u + k) * 3, as: UInt32.self) }
            u += 4
        }
        if u < end {
            bilinearAny(entries, range: u..<end, base: base, rowBytes: rowBytes, layout: .interleaved(3), out: out)
        }
    }

    /// YUYV / UYVY luma: the gray arithmetic, with each tap's two luma
    /// samples (2 bytes apart) read by one 4-byte load. Only luma bytes are
    /// written: the chroma band of the same rows may run on another thread.
    @inline(__always)
    private static func bilinearLuma422(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                        rowBytes: Int, offset: Int, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        let luma = base + offset
        while u + 8 <= end {
            prefetchTaps(entries, u, end: end, base: luma, rowBytes: rowBytes)
            let e = UnsafeRawPointer(entries + u).loadUnaligned(as: SIMD8<UInt32>.self)
            var top = SIMD8<UInt16>(), bottom = SIMD8<UInt16>(), fractions = SIMD8<UInt16>()
            for k in 0..<8 {
                let p = luma + Int(e[k] >> 10)
                let t = p.loadUnaligned(as: UInt32.self), b = p.loadUnaligned(fromByteOffset: rowBytes, as: UInt32.self)
                // Bytes 0 and 2 are the two luma samples; pack them like a gray pair.
                top[k] = UInt16(truncatingIfNeeded: (t & 0xFF) | ((t >> 8) & 0xFF00))
                bottom[k] = UInt16(truncatingIfNeeded: (b & 0xFF) | ((b >> 8) & 0xFF00))
                fractions[k] = UInt16(truncatingIfNeeded: e[k])
            }
            let r = blend(top & 0xFF, shiftRight(top, 8), bottom & 0xFF, shiftRight(bottom, 8),
                          fx: fractions & 31, fy: shiftRight(fractions, 5) & 31)
            for k in 0..<8 {
                out.storeBytes(of: UInt8(truncatingIfNeeded: r[k]), toByteOffset: 2 * (u + k) + offset, as: UInt8.self)
            }
            u += 8
        }
        if u < end {
            bilinearAny(entries, range: u..<end, base: base, rowBytes: rowBytes,
                        layout: SampleLayout(pixelStride: 2, channels: 1, offsets: SIMD4(offset, 0, 0, 0), border: 0), out: out)
        }
    }

    /// Two-channel chroma (YUYV / UYVY with a 4-byte step, NV12 with a
    /// 2-byte step): the 4-channel arithmetic on 4-byte loads from the
    /// sample's first byte; only the two chroma bytes of each result are stored.
    @inline(__always)
    private static func bilinearChromaPair(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                           rowBytes: Int, layout: SampleLayout, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        let step = layout.pixelStride
        let first = layout.offsets[0], second = layout.offsets[1]
        if step == 4 {
            // 4:2:2: a chroma sample is a whole 4-byte group, like a BGRA pixel.
            bilinearWeights.withUnsafeBufferPointer { weights in
                while u < end {
                    if u & 7 == 0 { prefetchTaps(entries, u, end: end, base: base, rowBytes: rowBytes) }
                    let e = entries[u]
                    let r = blendPixel4(base + Int(e >> 10), rowBytes: rowBytes, weights: weights[Int(e & 1023)])
                    let o = out + u * 4
                    o.storeBytes(of: UInt8(truncatingIfNeeded: r[first]), toByteOffset: first, as: UInt8.self)
                    o.storeBytes(of: UInt8(truncatingIfNeeded: r[second]), toByteOffset: second, as: UInt8.self)
                    u += 1
                }
            }
            return
        }
        while u + 4 <= end {
            prefetchTaps(entries, u, end: end, base: base, rowBytes: rowBytes)
            let r = unsafeBitCast(bilinearFour(entries + u, base: base, step: step, rowBytes: rowBytes), to: SIMD4<UInt32>.self)
            for k in 0..<4 {
                let o = out + (u + k) * step
                o.storeBytes(of: UInt8(truncatingIfNeeded: r[k] >> (8 * UInt32(first))), toByteOffset: first, as: UInt8.self)
                o.storeBytes(of: UInt8(truncatingIfNeeded: r[k] >> (8 * UInt32(second))), toByteOffset: second, as: UInt8.self)
            }
            u += 4
        }
        if u < end {
            bilinearAny(entries, range: u..<end, base: base, rowBytes: rowBytes, layout: layout, out: out)
        }
    }

    /// Four pixels of a 4-byte-load layout (`step` bytes apart): eight lanes
    /// holding each pixel's 4 result bytes.
    @inline(__always)
    private static func bilinearFour(_ entries: UnsafePointer<UInt32>, base: UnsafeRawPointer, step: Int,
                                     rowBytes: Int) -> SIMD8<UInt16> {
        let e = UnsafeRawPointer(entries).loadUnaligned(as: SIMD4<UInt32>.self)
        var a = SIMD4<UInt32>(), b = a, c = a, d = a
        for k in 0..<4 {
            let p = base + Int(e[k] >> 10)
            a[k] = p.loadUnaligned(as: UInt32.self)
            b[k] = p.loadUnaligned(fromByteOffset: step, as: UInt32.self)
            c[k] = p.loadUnaligned(fromByteOffset: rowBytes, as: UInt32.self)
            d[k] = p.loadUnaligned(fromByteOffset: rowBytes + step, as: UInt32.self)
        }
        // The fractions twice per pixel, one copy per 16-bit half of its 4 bytes.
        let f = e & 0x3FF
        let fractions = unsafeBitCast(f | f &<< 16, to: SIMD8<UInt16>.self)
        let fx = fractions & 31, fy = shiftRight(fractions, 5) & 31
        let p00 = unsafeBitCast(a, to: SIMD8<UInt16>.self), p01 = unsafeBitCast(b, to: SIMD8<UInt16>.self)
        let p10 = unsafeBitCast(c, to: SIMD8<UInt16>.self), p11 = unsafeBitCast(d, to: SIMD8<UInt16>.self)
        let low = blend(p00 & 0xFF, p01 & 0xFF, p10 & 0xFF, p11 & 0xFF, fx: fx, fy: fy)
        let high = blend(shiftRight(p00, 8), shiftRight(p01, 8), shiftRight(p10, 8), shiftRight(p11, 8), fx: fx, fy: fy)
        return low | high &* 256
    }

    /// Any layout, one channel at a time (RGB, YUV planes).
    @inline(__always)
    private static func bilinearAny(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                    rowBytes: Int, layout: SampleLayout, out: UnsafeMutableRawPointer) {
        let step = layout.pixelStride
        for u in range {
            let e = entries[u]
            let p = base + Int(e >> 10)
            let fx = Int(e & 31), fy = Int((e >> 5) & 31)
            let o = out + u * step
            for c in 0..<layout.channels {
                let k = layout.offsets[c]
                let v = blendScalar(Int(p.load(fromByteOffset: k, as: UInt8.self)),
                                    Int(p.load(fromByteOffset: k + step, as: UInt8.self)),
                                    Int(p.load(fromByteOffset: k + rowBytes, as: UInt8.self)),
                                    Int(p.load(fromByteOffset: k + rowBytes + step, as: UInt8.self)), fx: fx, fy: fy)
                o.storeBytes(of: v, toByteOffset: k, as: UInt8.self)
            }
        }
    }

    // MARK: Nearest

    @inline(__always)
    private static func nearestAny(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                   layout: SampleLayout, out: UnsafeMutableRawPointer) {
        if layout.isGray {
            for u in range {
                out.storeBytes(of: base.load(fromByteOffset: Int(entries[u] >> 10), as: UInt8.self), toByteOffset: u, as: UInt8.self)
            }
        } else if layout.isPacked4 {
            for u in range {
                out.storeBytes(of: base.loadUnaligned(fromByteOffset: Int(entries[u] >> 10), as: UInt32.self),
                               toByteOffset: 4 * u, as: UInt32.self)
            }
        } else {
            let step = layout.pixelStride
            for u in range {
                let p = base + Int(entries[u] >> 10)
                for c in 0..<layout.channels {
                    let k = layout.offsets[c]
                    out.storeBytes(of: p.load(fromByteOffset: k, as: UInt8.self), toByteOffset: u * step + k, as: UInt8.self)
                }
            }
        }
    }

    // MARK: Bicubic

    /// Cubic-convolution weights (a = −0.75) for the 32 fractions, in 1/2048,
    /// each row summing to exactly 2048.
    static let cubicWeights: [SIMD4<Int32>] = (0..<32).map { k in
        let x = Double(k) / 32, a = -0.75
        let w0 = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a
        let w1 = ((a + 2) * x - (a + 3)) * x * x + 1
        let w2 = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1
        let w3 = 1 - w0 - w1 - w2
        var w = SIMD4<Int32>(Int32((w0 * 2048).rounded()), Int32((w1 * 2048).rounded()),
                             Int32((w2 * 2048).rounded()), Int32((w3 * 2048).rounded()))
        // Put the rounding residue on the largest weight so flat areas stay flat.
        let residue = 2048 - w.wrappedSum()
        let largest = w1 >= w2 ? 1 : 2
        w[largest] += residue
        return w
    }

    @inline(__always)
    private static func bicubicAny(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                   rowBytes: Int, layout: SampleLayout, out: UnsafeMutableRawPointer) {
        let step = layout.pixelStride
        cubicWeights.withUnsafeBufferPointer { table in
            for u in range {
                let e = entries[u]
                let p = base + Int(e >> 10)
                let wx = table[Int(e & 31)], wy = table[Int((e >> 5) & 31)]
                for c in 0..<layout.channels {
                    let k = layout.offsets[c]
                    var sum = 0
                    for j in 0..<4 {
                        let row = p + j * rowBytes + k
                        let h = Int(wx[0]) * Int(row.load(as: UInt8.self)) + Int(wx[1]) * Int(row.load(fromByteOffset: step, as: UInt8.self))
                            + Int(wx[2]) * Int(row.load(fromByteOffset: 2 * step, as: UInt8.self))
                            + Int(wx[3]) * Int(row.load(fromByteOffset: 3 * step, as: UInt8.self))
                        sum += Int(wy[j]) * h
                    }
                    out.storeBytes(of: clampShift22(sum), toByteOffset: u * step + k, as: UInt8.self)
                }
            }
        }
    }

    @inline(__always)
    private static func clampShift22(_ sum: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: min(max((sum + (1 << 21)) >> 22, 0), 255))
    }

    // MARK: Border and undefined samples

    /// Samples outside the span: every tap is checked and taps outside the
    /// source read the border value.
    private static func slowSamples(_ map: CompiledMap, entries: UnsafePointer<UInt32>, range: Range<Int>,
                                    source: UnsafeRawPointer, out: UnsafeMutableRawPointer) {
        let layout = map.layout
        let step = layout.pixelStride, rowBytes = map.sourceRowBytes
        let w = map.sourceWidth, h = map.sourceHeight
        let border = Int(layout.border)
        for u in range {
            let s = map.slow[Int(entries[u])]
            let o = out + u * step
            guard s.x != .min else {
                for c in 0..<layout.channels { o.storeBytes(of: layout.border, toByteOffset: layout.offsets[c], as: UInt8.self) }
                continue
            }
            let x0 = Int(s.x), y0 = Int(s.y)
            for c in 0..<layout.channels {
                let k = layout.offsets[c]
                @inline(__always) func tap(_ x: Int, _ y: Int) -> Int {
                    guard x >= 0, y >= 0, x < w, y < h else { return border }
                    return Int(source.load(fromByteOffset: y * rowBytes + x * step + k, as: UInt8.self))
                }
                let value: UInt8
                switch map.interpolation {
                case .nearest:
                    value = UInt8(truncatingIfNeeded: tap(x0, y0))
                case .bilinear:
                    value = blendScalar(tap(x0, y0), tap(x0 + 1, y0), tap(x0, y0 + 1), tap(x0 + 1, y0 + 1),
                                        fx: Int(s.fx), fy: Int(s.fy))
                case .bicubic:
                    let wx = cubicWeights[Int(s.fx)], wy = cubicWeights[Int(s.fy)]
                    var sum = 0
                    for j in 0..<4 {
                        var row = 0
                        for i in 0..<4 { row += Int(wx[i]) * tap(x0 + i, y0 + j) }
                        sum += Int(wy[j]) * row
                    }
                    value = clampShift22(sum)
                }
                o.storeBytes(of: value, toByteOffset: k, as: UInt8.self)
            }
        }
    }
}
