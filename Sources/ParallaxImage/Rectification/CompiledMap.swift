#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import CRemapKernels
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
    private(set) var slow: [SlowSample]
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

    /// Compiles the positions `rows` produces (source sample coordinates, NaN for none, or
    /// the same already quantised) for a source grid laid out as `layout` with
    /// `sourceRowBytes` between rows. Rows are compiled in blocks spread over `pool`'s
    /// threads, by the C kernel written for `rows.level` (every level gives the same map).
    ///
    /// - Throws: ``ImageError/outOfMemory(what:bytes:)`` when the entries cannot be allocated.
    init(rows: PositionRows, sourceRowBytes: Int, layout: SampleLayout, interpolation: Interpolation,
         pool: WorkerPool) throws(ImageError) {
        let width = rows.width, height = rows.height
        self.width = width
        self.height = height
        self.sourceRowBytes = sourceRowBytes
        self.sourceWidth = rows.sourceWidth
        self.sourceHeight = rows.sourceHeight
        self.layout = layout
        self.interpolation = interpolation
        // Given back in deinit, for the next map of this size.
        entries = try EntryMemory.shared.take(max(1, width * height))
        rowBase = .allocate(capacity: max(1, height))
        spanStart = .allocate(capacity: max(1, height))
        spanEnd = .allocate(capacity: max(1, height))

        // Each block keeps its own side table; entries outside spans hold
        // block-local indices until the tables are joined below.
        let blockCount = min(max(1, height), pool.threadCount * 4)
        let blockSlow = UnsafeMutablePointer<[SlowSample]>.allocate(capacity: blockCount)
        blockSlow.initialize(repeating: [], count: blockCount)
        defer { blockSlow.deinitialize(count: blockCount); blockSlow.deallocate() }
        let job = CompileJob(rows: rows, sourceRowBytes: sourceRowBytes, layout: layout, interpolation: interpolation,
                             blockCount: blockCount, entries: entries, rowBase: rowBase, spanStart: spanStart,
                             spanEnd: spanEnd, blockSlow: blockSlow)
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
        let rows: PositionRows
        let sourceRowBytes: Int
        let layout: SampleLayout
        let interpolation: Interpolation
        let blockCount: Int
        let entries: UnsafeMutablePointer<UInt32>
        let rowBase: UnsafeMutablePointer<Int>
        let spanStart: UnsafeMutablePointer<Int32>
        let spanEnd: UnsafeMutablePointer<Int32>
        let blockSlow: UnsafeMutablePointer<[SlowSample]>

        var width: Int { rows.width }
        var height: Int { rows.height }
        var sourceWidth: Int { rows.sourceWidth }
        var sourceHeight: Int { rows.sourceHeight }

        func rows(ofBlock block: Int) -> Range<Int> {
            (block * height / blockCount)..<((block + 1) * height / blockCount)
        }
    }

    /// Compiles the rows of one block (see the type's description): the C kernel quantises
    /// each row, finds its span and packs the span's entries; the samples outside the span
    /// go to the block's side table here.
    private static func compileBlock(_ job: UnsafePointer<CompileJob>, _ block: Int) {
        let j = job.pointee
        let compiler = RowCompiler(rows: j.rows, sourceRowBytes: j.sourceRowBytes, layout: j.layout,
                                   interpolation: j.interpolation)
        defer { compiler.deallocate() }
        var slow: [SlowSample] = []
        for v in j.rows(ofBlock: block) {
            compiler.compile(row: v, into: j.entries + v * j.width, rowBase: j.rowBase + v, spanStart: j.spanStart + v,
                             spanEnd: j.spanEnd + v, slow: &slow)
        }
        j.blockSlow[block] = slow
    }

    /// What compiling one row needs: the kernel's parameters and scratch (allocated once,
    /// reused for every row; ``deallocate()`` frees it).
    struct RowCompiler {
        let rows: PositionRows
        private var params = parallax_compile_params()
        private let words: UnsafeMutablePointer<Int32>
        private let inside: UnsafeMutablePointer<UInt8>
        private let positions: PositionRows.Scratch

        init(rows: PositionRows, sourceRowBytes: Int, layout: SampleLayout, interpolation: Interpolation) {
            self.rows = rows
            params.source_width = Int64(rows.sourceWidth)
            params.source_height = Int64(rows.sourceHeight)
            params.source_row_bytes = Int64(sourceRowBytes)
            params.pixel_stride = Int64(layout.pixelStride)
            params.taps = Int32(interpolation.taps)
            // Only the bilinear vector kernels read past a sample (see SampleLayout.spareColumns).
            params.spare = Int32(interpolation == .bilinear ? layout.spareColumns : 0)
            params.lead = interpolation == .bicubic ? 1 : 0
            params.nearest = interpolation == .nearest ? 1 : 0
            // Vector reads: the bilinear kernels read up to SampleLayout.vectorReadBytes from each tap
            // row's first tap, which may run past the last sample of the last source row; such
            // samples stay out of spans.
            params.vector_read = Int64(interpolation == .bilinear ? layout.vectorReadBytes : 0)
            params.readable = Int64((rows.sourceHeight - 1) * sourceRowBytes + rows.sourceWidth * layout.pixelStride)
            let columns = max(1, rows.width)
            words = .allocate(capacity: 3 * columns)
            inside = .allocate(capacity: columns)
            positions = PositionRows.Scratch(for: rows)
        }

        func deallocate() {
            words.deallocate()
            inside.deallocate()
            positions.deallocate()
        }

        /// Compiles grid row `v` into one row of entries (`rows.width` of them) and its base and
        /// span, appending the samples outside the span to `slow` (their entries index it). A
        /// row outside the grid is all border.
        func compile(row v: Int, into out: UnsafeMutablePointer<UInt32>, rowBase: UnsafeMutablePointer<Int>,
                     spanStart: UnsafeMutablePointer<Int32>, spanEnd: UnsafeMutablePointer<Int32>,
                     slow: inout [SlowSample]) {
            let width = rows.width
            guard v >= 0, v < rows.height else {
                rowBase.pointee = 0
                spanStart.pointee = 0
                spanEnd.pointee = 0
                for u in 0..<width {
                    out[u] = UInt32(slow.count)
                    slow.append(.undefined)
                }
                return
            }
            var scratch = parallax_compile_scratch(tap_x: words, tap_y: words + max(1, width),
                                                   fractions: words + 2 * max(1, width), inside: inside)
            var params = self.params
            var compiled = parallax_compiled_row()
            switch rows.row(v, scratch: positions) {
            case .floats(let xs, let ys):
                parallax_compile_row(xs, ys, width, &params, &scratch, out, &compiled, rows.level)
            case .quantised(let qx, let qy):
                parallax_compile_quantised_row(qx, qy, width, &params, &scratch, out, &compiled, rows.level)
            }
            rowBase.pointee = Int(compiled.base)
            spanStart.pointee = Int32(compiled.span_start)
            spanEnd.pointee = Int32(compiled.span_end)
            // The samples outside the span go to the side table.
            func setAside(_ range: Range<Int>) {
                for u in range {
                    out[u] = UInt32(slow.count)
                    let fractions = scratch.fractions[u]
                    slow.append(SlowSample(x: scratch.tap_x[u], y: scratch.tap_y[u], fx: UInt8(fractions & 31),
                                           fy: UInt8(fractions >> 5)))
                }
            }
            setAside(0..<compiled.span_start)
            setAside(compiled.span_end..<width)
        }
    }

    /// A map of `chunkRows` rows of `rows`' grid whose entries are compiled on demand by
    /// ``recompile(firstRow:count:)``: what a rectifier with compact maps keeps per
    /// band instead of the whole map.
    ///
    /// - Throws: ``ImageError/outOfMemory(what:bytes:)`` when the entries cannot be allocated.
    init(chunkOf rows: PositionRows, chunkRows: Int, sourceRowBytes: Int, layout: SampleLayout,
         interpolation: Interpolation) throws(ImageError) {
        width = rows.width
        height = max(1, chunkRows)
        self.sourceRowBytes = sourceRowBytes
        sourceWidth = rows.sourceWidth
        sourceHeight = rows.sourceHeight
        self.layout = layout
        self.interpolation = interpolation
        entries = try EntryMemory.shared.take(max(1, width * height))
        rowBase = .allocate(capacity: height)
        spanStart = .allocate(capacity: height)
        spanEnd = .allocate(capacity: height)
        rowBase.initialize(repeating: 0, count: height)
        spanStart.initialize(repeating: 0, count: height)
        spanEnd.initialize(repeating: 0, count: height)
        slow = []
        // Room for a whole chunk outside spans: refills then never allocate.
        slow.reserveCapacity(width * height)
        chunkCompiler = RowCompiler(rows: rows, sourceRowBytes: sourceRowBytes, layout: layout,
                                    interpolation: interpolation)
    }

    /// The compiler of a chunk map (nil for a whole map).
    private var chunkCompiler: RowCompiler?

    /// Compiles grid rows `firstRow ..< firstRow + count` (`count` at most the chunk's rows)
    /// into rows `0 ..< count` of this chunk map; rows outside the grid are border.
    func recompile(firstRow: Int, count: Int) {
        guard let compiler = chunkCompiler else { preconditionFailure("recompile needs a chunk map") }
        precondition(count <= height, "a chunk holds \(height) rows")
        slow.removeAll(keepingCapacity: true)
        for r in 0..<count {
            compiler.compile(row: firstRow + r, into: entries + r * width, rowBase: rowBase + r, spanStart: spanStart + r,
                             spanEnd: spanEnd + r, slow: &slow)
        }
    }

    deinit {
        chunkCompiler?.deallocate()
        EntryMemory.shared.give(entries, count: max(1, width * height))
        rowBase.deallocate()
        spanStart.deallocate()
        spanEnd.deallocate()
    }
}

/// Where compiled maps keep their entries. A rebuild (a new calibration, format or
/// resolution) replaces maps of the same size: the tables the old maps give back are kept
/// (at most the limit ``EntryMemory/shared`` is made with: 128 MiB) and handed to the next maps of that size,
/// so a rebuild writes into memory the process already has instead of waiting for the kernel
/// to clear fresh pages (16 MB for a 1080p pair: several milliseconds, and the larger part
/// of a two-thread build). malloc does the same for other libraries' arrays.
///
/// Compiled maps use ``shared``; tests make their own, so that no other test's maps can take
/// or evict the tables they watch.
final class EntryMemory: Sendable {
    /// The memory every compiled map takes its entries from.
    static let shared = EntryMemory(keptBytesLimit: 128 << 20)

    /// Bytes of given-back tables kept for reuse.
    let keptBytesLimit: Int

    /// Given-back tables, oldest first, and their total size.
    private struct Kept: @unchecked Sendable {
        var tables: [(bytes: Int, memory: UnsafeMutableRawPointer)] = []
        var bytes = 0
    }
    private let kept = Locked(Kept())

    /// Memory that keeps at most `keptBytesLimit` bytes of given-back tables.
    init(keptBytesLimit: Int) {
        self.keptBytesLimit = keptBytesLimit
    }

    deinit { releaseKept() }

    /// A table of `count` entries: a kept one of exactly that size, else new memory. Tables of
    /// 2 MiB and more are aligned to 2 MiB and offered transparent huge pages, so that filling a
    /// 1080p table takes a few page faults instead of two thousand (where the kernel grants them).
    ///
    /// - Throws: ``ImageError/outOfMemory(what:bytes:)`` when the memory cannot be had (a
    ///   size beyond the machine, or beyond `Int`): the caller's error, never a trap.
    func take(_ count: Int) throws(ImageError) -> UnsafeMutablePointer<UInt32> {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: MemoryLayout<UInt32>.stride)
        guard !overflow, count > 0 else { throw .outOfMemory(what: "\(count) rectification map entries", bytes: overflow ? .max : 0) }
        let reused = kept.withLock { kept -> UnsafeMutableRawPointer? in
            guard let index = kept.tables.lastIndex(where: { $0.bytes == bytes }) else { return nil }
            kept.bytes -= bytes
            return kept.tables.remove(at: index).memory
        }
        if let reused { return reused.bindMemory(to: UInt32.self, capacity: count) }
        let hugePage = 2 << 20
        var raw: UnsafeMutableRawPointer?
        let alignment = bytes >= hugePage ? hugePage : 64
        guard posix_memalign(&raw, alignment, bytes) == 0, let raw else {
            throw .outOfMemory(what: "\(count) rectification map entries", bytes: bytes)
        }
        #if os(Linux)
        if bytes >= hugePage {
            // Advice only: without transparent huge pages the table works the same.
            _ = madvise(raw, (bytes / hugePage) * hugePage, MADV_HUGEPAGE)
        }
        #endif
        return raw.bindMemory(to: UInt32.self, capacity: count)
    }

    /// Gives back a table from ``take(_:)``: kept for the next of its size, the oldest kept
    /// tables freed beyond the limit.
    func give(_ entries: UnsafeMutablePointer<UInt32>, count: Int) {
        let bytes = count * MemoryLayout<UInt32>.stride
        let memory = UnsafeMutableRawPointer(entries)
        let released = kept.withLock { kept -> Kept in
            kept.tables.append((bytes, memory))
            kept.bytes += bytes
            var released = Kept()
            while kept.bytes > self.keptBytesLimit, !kept.tables.isEmpty {
                let oldest = kept.tables.removeFirst()
                kept.bytes -= oldest.bytes
                released.tables.append(oldest)
            }
            return released
        }
        for table in released.tables { free(table.memory) }
    }

    /// Bytes of tables kept for reuse now.
    var keptByteCount: Int { kept.withLock { $0.bytes } }

    /// Frees every kept table (tests; a process that will build no more maps).
    func releaseKept() {
        let all = kept.withLock { kept -> Kept in
            defer { kept = Kept() }
            return kept
        }
        for table in all.tables { free(table.memory) }
    }
}
