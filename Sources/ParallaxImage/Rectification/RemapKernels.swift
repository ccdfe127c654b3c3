/// The resampling loops. Each works on a band of output rows of one sample
/// grid, reading through a ``CompiledMap``.
///
/// Bilinear arithmetic equals OpenCV's fixed-point `INTER_LINEAR`: with
/// fractions fx, fy in 1/32 pixel the four weights are
/// (32−fx)(32−fy), fx(32−fy), (32−fx)fy, fx·fy (sum 1024) and the result is
/// `(Σ wᵢ pᵢ + 512) >> 10`. The vector paths compute the same value in
/// 16-bit lanes (SSE2 has 16-bit multiplies but no 32-bit ones) by splitting
/// the row results t, b (≤ 8160) as 4q + r:
///
///     Σ wᵢ pᵢ = 4 (q_t gy + q_b fy) + (r_t gy + r_b fy)      (gy = 32 − fy)
///     (Σ + 512) >> 10 = (A + (B + 512) >> 2) >> 8
///
/// with A ≤ 65 280 and B ≤ 96, exact because the dropped low bits of
/// (B + 512) cannot carry into bit 10.
enum RemapKernels {
    /// Resamples rows `rows` of `map`'s output grid.
    ///
    /// - Parameters:
    ///   - source: first byte of the source plane (the layout's channel
    ///     offsets are added to it), laid out as the map was compiled for.
    ///   - destination: first byte of the destination plane, same sample layout.
    ///
    /// Bounds: span entries address bytes `rowBase + offset + tap offsets`
    /// that the compiler checked lie inside the source grid; other samples
    /// check each tap.
    static func run(_ map: CompiledMap, rows: Range<Int>, source: UnsafeRawPointer,
                    destination: UnsafeMutableRawPointer, destinationRowBytes: Int) {
        let layout = map.layout
        for v in rows {
            let start = Int(map.spanStart[v]), end = Int(map.spanEnd[v])
            let entries = map.entries + v * map.width
            let base = source + map.rowBase[v]
            let out = destination + v * destinationRowBytes
            if start > 0 { slowSamples(map, entries: entries, range: 0..<start, source: source, out: out) }
            if end > start {
                switch map.interpolation {
                case .bilinear:
                    if layout.isGray {
                        bilinearGray(entries, range: start..<end, base: base, rowBytes: map.sourceRowBytes, out: out)
                    } else if layout.isPacked4 {
                        bilinearPacked4(entries, range: start..<end, base: base, rowBytes: map.sourceRowBytes, out: out)
                    } else {
                        bilinearAny(entries, range: start..<end, base: base, rowBytes: map.sourceRowBytes, layout: layout, out: out)
                    }
                case .nearest:
                    nearestAny(entries, range: start..<end, base: base, layout: layout, out: out)
                case .bicubic:
                    bicubicAny(entries, range: start..<end, base: base, rowBytes: map.sourceRowBytes, layout: layout, out: out)
                }
            }
            if end < map.width { slowSamples(map, entries: entries, range: end..<map.width, source: source, out: out) }
        }
    }

    // MARK: Bilinear

    @inline(__always)
    private static func bilinearGray(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                     rowBytes: Int, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        let mapBytes = UnsafeRawPointer(entries)
        while u + 8 <= end {
            let e = mapBytes.loadUnaligned(fromByteOffset: u * 4, as: SIMD8<UInt32>.self)
            var p00 = SIMD8<UInt16>(), p01 = p00, p10 = p00, p11 = p00
            for k in 0..<8 {
                let p = base + Int(e[k] >> 10)
                let top = p.loadUnaligned(as: UInt16.self)
                let bottom = p.loadUnaligned(fromByteOffset: rowBytes, as: UInt16.self)
                // Little-endian: the low byte is the left pixel.
                p00[k] = top & 0xFF; p01[k] = top >> 8
                p10[k] = bottom & 0xFF; p11[k] = bottom >> 8
            }
            let fx = SIMD8<UInt16>(truncatingIfNeeded: e & 31)
            let fy = SIMD8<UInt16>(truncatingIfNeeded: (e &>> 5) & 31)
            let r = blend(p00, p01, p10, p11, fx: fx, fy: fy)
            out.storeBytes(of: SIMD8<UInt8>(truncatingIfNeeded: r), toByteOffset: u, as: SIMD8<UInt8>.self)
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
    @inline(__always)
    private static func blend<V: SIMD>(_ p00: V, _ p01: V, _ p10: V, _ p11: V, fx: V, fy: V) -> V
    where V.Scalar == UInt16 {
        let gx = 32 &- fx, gy = 32 &- fy
        let t = p00 &* gx &+ p01 &* fx
        let b = p10 &* gx &+ p11 &* fx
        let a = (t &>> 2) &* gy &+ (b &>> 2) &* fy
        let r = (t & 3) &* gy &+ (b & 3) &* fy
        return (a &+ ((r &+ 512) &>> 2)) &>> 8
    }

    @inline(__always)
    private static func blendScalar(_ p00: Int, _ p01: Int, _ p10: Int, _ p11: Int, fx: Int, fy: Int) -> UInt8 {
        let t = p00 * (32 - fx) + p01 * fx
        let b = p10 * (32 - fx) + p11 * fx
        return UInt8(truncatingIfNeeded: (t * (32 - fy) + b * fy + 512) >> 10)
    }

    /// BGRA / RGBA: two pixels per step, each pixel's two horizontal
    /// neighbours loaded as one 8-byte run per row.
    @inline(__always)
    private static func bilinearPacked4(_ entries: UnsafePointer<UInt32>, range: Range<Int>, base: UnsafeRawPointer,
                                        rowBytes: Int, out: UnsafeMutableRawPointer) {
        var u = range.lowerBound
        let end = range.upperBound
        while u + 2 <= end {
            let e0 = entries[u], e1 = entries[u + 1]
            let a = base + Int(e0 >> 10), b = base + Int(e1 >> 10)
            let top = SIMD16<UInt16>(truncatingIfNeeded: SIMD16<UInt8>(
                lowHalf: a.loadUnaligned(as: SIMD8<UInt8>.self), highHalf: b.loadUnaligned(as: SIMD8<UInt8>.self)))
            let bottom = SIMD16<UInt16>(truncatingIfNeeded: SIMD16<UInt8>(
                lowHalf: a.loadUnaligned(fromByteOffset: rowBytes, as: SIMD8<UInt8>.self),
                highHalf: b.loadUnaligned(fromByteOffset: rowBytes, as: SIMD8<UInt8>.self)))
            let fx0 = UInt16(truncatingIfNeeded: e0 & 31), fx1 = UInt16(truncatingIfNeeded: e1 & 31)
            let fy0 = UInt16(truncatingIfNeeded: (e0 >> 5) & 31), fy1 = UInt16(truncatingIfNeeded: (e1 >> 5) & 31)
            // Lanes 0–3 left neighbour, 4–7 right neighbour of pixel 0; 8–15 the same for pixel 1.
            let p00 = SIMD8<UInt16>(lowHalf: top.lowHalf.lowHalf, highHalf: top.highHalf.lowHalf)
            let p01 = SIMD8<UInt16>(lowHalf: top.lowHalf.highHalf, highHalf: top.highHalf.highHalf)
            let p10 = SIMD8<UInt16>(lowHalf: bottom.lowHalf.lowHalf, highHalf: bottom.highHalf.lowHalf)
            let p11 = SIMD8<UInt16>(lowHalf: bottom.lowHalf.highHalf, highHalf: bottom.highHalf.highHalf)
            let fx = SIMD8<UInt16>(lowHalf: SIMD4(repeating: fx0), highHalf: SIMD4(repeating: fx1))
            let fy = SIMD8<UInt16>(lowHalf: SIMD4(repeating: fy0), highHalf: SIMD4(repeating: fy1))
            let r = blend(p00, p01, p10, p11, fx: fx, fy: fy)
            out.storeBytes(of: SIMD8<UInt8>(truncatingIfNeeded: r), toByteOffset: u * 4, as: SIMD8<UInt8>.self)
            u += 2
        }
        if u < end {
            bilinearAny(entries, range: u..<end, base: base, rowBytes: rowBytes, layout: .interleaved(4), out: out)
        }
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
