#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ParallaxGeometry

/// Rectifies stereo pairs: builds both maps once, then resamples each pair
/// in one pass per image.
///
/// Camera formats are read directly: gray8, RGB/BGR, RGBA/BGRA, YUYV, UYVY,
/// NV12, and the planar I420 and I422 of decoded MJPEG (chroma resampled on
/// its own grid at its own resolution, with neutral chroma outside the source). Outputs have the input's format and
/// the maps' output size; outside the source, luma and RGB are black (0).
///
/// The first pair of a given format and row stride (or ``prepare(for:)``)
/// compiles compact fixed-point maps (4 bytes per output sample, see
/// `CompiledMap`); every later pair of that layout reuses them. A rectifier
/// made from a calibration computes their positions straight from the lens
/// models, row by row, with C kernels chosen for the CPU (AVX-512, AVX2 or
/// the baseline, all giving the same bits), and holds float maps only once
/// ``maps`` is read. With destination buffers passed back in
/// (``rectify(left:right:into:_:)->()``, or caller-owned memory with
/// ``rectify(left:right:into:_:)->_``) a pair allocates nothing. Work is split
/// into bands of rows spread over a pool of threads that all rectifiers with
/// the same thread count share and that lives as long as the process.
///
/// Calls are serialised internally, so one rectifier may be shared between
/// threads. Rectifiers on the same shared pool take turns per job, each job
/// using all of the pool's threads; a rectifier with `threads: 1` works on
/// the caller's thread alone, so such rectifiers run side by side.
public final class Rectifier: @unchecked Sendable {
    /// The float maps this rectifier resamples through.
    ///
    /// A rectifier made from a calibration computes its fixed-point maps straight from
    /// the camera models, row by row, and builds these float maps only when first asked
    /// (on all of its threads); they hold the same positions the compiled maps were made from.
    public var maps: StereoRectificationMaps {
        guarded.withLock { _ in
            switch positions {
            case .stored(let maps):
                return maps
            case .model(let builders):
                if let builtMaps { return builtMaps }
                let maps = Self.buildMaps(builders.left, builders.right, rectification: baseRectification,
                                          orientation: orientation, pool: pool)
                builtMaps = maps
                return maps
            }
        }
    }
    /// The interpolation of every pair.
    public let interpolation: Interpolation
    /// The size of rectified images.
    public let outputSize: ImageSize
    /// Threads used per pair, including the caller's.
    public var threadCount: Int { pool.threadCount }
    /// The vector instructions the kernels use: the level asked for at creation, lowered
    /// to what the CPU supports. Every level gives the same pixels.
    public let simdLevel: SIMDLevel
    /// Whether this rectifier keeps compact maps: no whole fixed-point map per plane, but
    /// each band's entries compiled from the camera models a few rows at a time as the pair
    /// is resampled (see ``init(calibration:convergenceDistance:options:orientation:interpolation:threads:simdLevel:compactMaps:)``).
    public let compactMaps: Bool

    /// Where the source positions come from.
    private enum Positions {
        case stored(StereoRectificationMaps)
        case model(PerSide<RectificationMap.Builder>)
    }
    private let positions: Positions
    /// The maps' rectification, display orientation and source image sizes.
    private let baseRectification: StereoRectification
    private let orientation: OutputOrientation
    private let sourceSizes: PerSide<ImageSize>

    private let pool: WorkerPool
    /// Held while the state below is read or written, and for a whole pair (one pair at a
    /// time: the plans and the shared pool's run serve one caller).
    private let guarded = Locked<Void>(())
    // Guarded by `guarded`:
    /// The float maps of a `.model` rectifier, once asked for.
    private var builtMaps: StereoRectificationMaps?
    private var compiled: [CompileKey: CompiledMap] = [:]
    private var plans: [PlanKey: PairPlan] = [:]
    /// The convergence distance asked for with ``setConvergence(atDistance:)``; `.none`
    /// while the maps' own convergence applies.
    private var liveConvergence: Double?? = .none
    private var tapsByLoads = SIMDLevel.avx2TapsByLoads

    /// Whether the AVX2 resampling kernels fetch taps with scalar loads instead of
    /// `vpgatherdd`: ``SIMDLevel/avx2TapsByLoads`` unless set (tests compare both; the
    /// pixels are the same).
    package var avx2TapsByLoads: Bool {
        get { guarded.withLock { _ in tapsByLoads } }
        set { guarded.withLock { _ in tapsByLoads = newValue } }
    }

    /// A rectifier for precomputed maps.
    ///
    /// - Parameters:
    ///   - maps: the left and right maps (`StereoRectificationMaps`); they fix
    ///     the output size, the source sizes pairs must have, the rectification and the display
    ///     orientation.
    ///   - interpolation: how every pair is resampled between source pixels.
    ///   - threads: threads per pair including the caller's; `nil` uses every
    ///     online processor.
    ///   - simdLevel: the widest vector instructions to use (for comparing levels);
    ///     the default is the widest the CPU has.
    public convenience init(maps: StereoRectificationMaps, interpolation: Interpolation = .bilinear, threads: Int? = nil,
                            simdLevel: SIMDLevel = .supported) {
        self.init(positions: .stored(maps), rectification: maps.rectification, orientation: maps.orientation,
                  outputSize: maps.left.outputSize, sourceSizes: PerSide(left: maps.left.sourceSize, right: maps.right.sourceSize),
                  interpolation: interpolation, pool: WorkerPool.shared(threadCount: threads ?? WorkerPool.processorCount),
                  simdLevel: simdLevel, compactMaps: false)
    }

    /// A rectifier for a calibration: OpenCV-style rectification with
    /// `options` (alpha, output size), the zero-parallax plane moved to
    /// `convergenceDistance` (calibration units; `nil` keeps it at infinity),
    /// and the output turned by `orientation`. `threads` and `simdLevel` are as in
    /// ``init(maps:interpolation:threads:simdLevel:)``.
    ///
    /// The fixed-point maps are computed from the camera models when a format is first
    /// rectified (or ``prepare(for:)``), without float maps in between; ``maps`` builds
    /// those on demand.
    ///
    /// With `compactMaps`, no whole fixed-point map is kept: every pair compiles its entries
    /// from the camera models 8 rows at a time, into tables of 8 rows per band (no build
    /// before the first pair; at 1080p gray8 the process peaked at 38.1 MB against 50.9 MB
    /// with whole maps, the tables' compile scratch taking much of what the entries gave
    /// back). The pixels are the same as with whole maps (the same entries;
    /// `CompactMapTests`); each pair costs the compilation on top of the resampling
    /// (`parallax bench rectify --compact`).
    ///
    /// - Throws: `RectificationError` when the calibration cannot be rectified.
    public convenience init(calibration: StereoCalibration, convergenceDistance: Double? = nil,
                            options: RectificationOptions = RectificationOptions(),
                            orientation: OutputOrientation = .identity,
                            interpolation: Interpolation = .bilinear, threads: Int? = nil,
                            simdLevel: SIMDLevel = .supported, compactMaps: Bool = false) throws(RectificationError) {
        var rectification = try calibration.rectification(options)
        if let convergenceDistance { rectification = rectification.converged(atDistance: convergenceDistance) }
        let r = rectification
        let left = RectificationMap.Builder(camera: calibration.left, rotation: r.r1, newCamera: r.leftIntrinsics,
                                            size: r.size, orientation: orientation)
        let right = RectificationMap.Builder(camera: calibration.right, rotation: r.r2, newCamera: r.rightIntrinsics,
                                             size: r.size, orientation: orientation)
        self.init(positions: .model(PerSide(left: left, right: right)), rectification: r, orientation: orientation,
                  outputSize: left.outputSize, sourceSizes: PerSide(left: calibration.left.size, right: calibration.right.size),
                  interpolation: interpolation, pool: WorkerPool.shared(threadCount: threads ?? WorkerPool.processorCount),
                  simdLevel: simdLevel, compactMaps: compactMaps)
    }

    private init(positions: Positions, rectification: StereoRectification, orientation: OutputOrientation,
                 outputSize: ImageSize, sourceSizes: PerSide<ImageSize>,
                 interpolation: Interpolation, pool: WorkerPool, simdLevel: SIMDLevel, compactMaps: Bool) {
        self.positions = positions
        self.compactMaps = compactMaps
        self.baseRectification = rectification
        self.orientation = orientation
        self.outputSize = outputSize
        self.sourceSizes = sourceSizes
        self.interpolation = interpolation
        self.pool = pool
        self.simdLevel = min(simdLevel, .supported)
    }

    /// Both cameras' float maps, built on `pool` in blocks of rows (both sides' blocks in
    /// one job, so every thread stays busy until the last block).
    private static func buildMaps(_ leftBuilder: RectificationMap.Builder, _ rightBuilder: RectificationMap.Builder,
                                  rectification: StereoRectification, orientation: OutputOrientation,
                                  pool: WorkerPool) -> StereoRectificationMaps {
        struct Job {
            let builders: PerSide<RectificationMap.Builder>
            let xs: PerSide<UnsafeMutablePointer<Float>>
            let ys: PerSide<UnsafeMutablePointer<Float>>
            let blocksPerSide: Int
        }
        // Four blocks per thread and side balance rows of uneven cost (fisheye edges).
        let height = leftBuilder.outputSize.height
        let blocksPerSide = max(1, min(height, pool.threadCount * 4))
        var right: RectificationMap?
        let left = leftBuilder.map { leftX, leftY in
            right = rightBuilder.map { rightX, rightY in
                withUnsafePointer(to: Job(builders: PerSide(left: leftBuilder, right: rightBuilder),
                                          xs: PerSide(left: leftX, right: rightX), ys: PerSide(left: leftY, right: rightY),
                                          blocksPerSide: blocksPerSide)) { job in
                    pool.run(tasks: 2 * blocksPerSide, context: UnsafeRawPointer(job)) { context, task in
                        let j = context.assumingMemoryBound(to: Job.self).pointee
                        let side: StereoSide = task < j.blocksPerSide ? .left : .right
                        let block = task % j.blocksPerSide
                        let builder = j.builders[side]
                        let rows = builder.outputSize.height
                        builder.fill(rows: (block * rows / j.blocksPerSide)..<((block + 1) * rows / j.blocksPerSide),
                                     xs: j.xs[side], ys: j.ys[side])
                    }
                }
            }
        }
        // `map` always calls its closure, so `right` is set.
        let rightMap = right ?? rightBuilder.map { x, y in rightBuilder.fill(rows: 0..<height, xs: x, ys: y) }
        return StereoRectificationMaps(left: left, right: rightMap, rectification: rectification, orientation: orientation)
    }

    // MARK: Rectifying

    /// Rectifies a pair into caller-owned memory (for example a display
    /// buffer or a camera frame pool). Allocates nothing once the layout has
    /// been seen.
    ///
    /// - Throws: ``ImageError/sizeMismatch(what:expected:actual:)`` when an
    ///   input is not the calibrated size or an output is not ``outputSize``;
    ///   ``ImageError/unsupportedFormat(_:operation:)`` when the formats differ;
    ///   ``ImageError/invalidSize(_:format:reason:)`` when ``outputSize`` does
    ///   not suit the format (odd width for YUYV, odd height for NV12 and I420).
    ///
    /// - Returns: the rectification the pair was resampled with (see
    ///   ``rectification(for:)``; read here, it cannot be a later convergence change's).
    @discardableResult
    public func rectify(left: ImageView, right: ImageView,
                        into leftOutput: MutableImageView, _ rightOutput: MutableImageView) throws(ImageError) -> StereoRectification {
        try validate(left: left, right: right)
        // Checked one by one: an array of the two would allocate on every pair.
        try validateOutput(leftOutput, name: "left output", format: left.format)
        try validateOutput(rightOutput, name: "right output", format: left.format)
        return try perform(left: left, right: right, into: leftOutput, rightOutput)
    }

    /// The resampling itself, on validated views; returns the rectification applied.
    @discardableResult
    private func perform(left: ImageView, right: ImageView, into leftOutput: MutableImageView,
                         _ rightOutput: MutableImageView) throws(ImageError) -> StereoRectification {
        try guarded.withLock { _ throws(ImageError) in
            let plan = try self.plan(left: left, right: right)
            let setting = liveSetting(for: left.format)
            withUnsafePointer(to: PairJob(plan: plan, inputs: PerSide(left: left, right: right),
                                          outputs: PerSide(left: leftOutput, right: rightOutput),
                                          shifts: setting.shifts, level: simdLevel, loads: tapsByLoads)) { job in
                pool.run(tasks: plan.bands.count, context: UnsafeRawPointer(job)) { context, index in
                    Rectifier.runBand(context.assumingMemoryBound(to: PairJob.self), index)
                }
            }
            return setting.rectification
        }
    }

    /// What every band of one pair needs, passed to the pool by pointer.
    private struct PairJob {
        let plan: PairPlan
        let inputs: PerSide<ImageView>
        let outputs: PerSide<MutableImageView>
        /// Output shift of each side for the live convergence, in displayed pixels.
        let shifts: PerSide<SIMD2<Int>>
        let level: SIMDLevel
        /// AVX2 taps by scalar loads (see ``Rectifier/avx2TapsByLoads``).
        let loads: Bool
    }

    /// Resamples band `index` of a pair.
    private static func runBand(_ pair: UnsafePointer<PairJob>, _ index: Int) {
        let plan = pair.pointee.plan
        let band = plan.bands[index]
        let job = plan.jobs[band.job]
        let source = pair.pointee.inputs[job.side]
        let destination = pair.pointee.outputs[job.side]
        // Validated: views carry every plane their format has.
        guard let sourcePlane = source.plane(job.plane), let outputPlane = destination.plane(job.plane) else { return }
        let (sourceBase, destinationBase, destinationRowBytes) = (sourcePlane.baseAddress, outputPlane.base,
                                                                  outputPlane.bytesPerRow)
        // The live-convergence shift, on this plane's grid (whole samples: see `convergenceStep`).
        var shift = pair.pointee.shifts[job.side]
        switch job.grid {
        case .full: break
        case .chroma422: shift.x /= 2
        case .chroma420: shift = SIMD2(shift.x / 2, shift.y / 2)
        }
        if let chunks = band.chunks {
            // Compact maps: this band's rows a chunk at a time, each chunk's entries compiled
            // first (map rows `v − shift.y`, so the chunk runs unshifted vertically).
            var start = band.rows.lowerBound
            while start < band.rows.upperBound {
                let count = min(Band.chunkRows, band.rows.upperBound - start)
                chunks.luma.recompile(firstRow: start - shift.y, count: count)
                chunks.chroma?.recompile(firstRow: start - shift.y, count: count)
                let out = destinationBase + start * destinationRowBytes
                if let chroma = chunks.chroma {
                    RemapKernels.run422(luma: chunks.luma, chroma: chroma, rows: 0..<count, source: sourceBase,
                                        destination: out, destinationRowBytes: destinationRowBytes,
                                        shift: SIMD2(shift.x, 0), level: pair.pointee.level,
                                        loads: pair.pointee.loads)
                } else {
                    RemapKernels.run(chunks.luma, rows: 0..<count, source: sourceBase, destination: out,
                                     destinationRowBytes: destinationRowBytes, shift: SIMD2(shift.x, 0),
                                     level: pair.pointee.level, loads: pair.pointee.loads)
                }
                start += count
            }
        } else if let chroma = band.chroma, let map = job.map, let chromaMap = plan.jobs[chroma].map {
            RemapKernels.run422(luma: map, chroma: chromaMap, rows: band.rows, source: sourceBase,
                                destination: destinationBase, destinationRowBytes: destinationRowBytes, shift: shift,
                                level: pair.pointee.level, loads: pair.pointee.loads)
        } else if let map = job.map {
            RemapKernels.run(map, rows: band.rows, source: sourceBase,
                             destination: destinationBase, destinationRowBytes: destinationRowBytes, shift: shift,
                             level: pair.pointee.level, loads: pair.pointee.loads)
        }
    }

    /// Rectifies a pair into reusable buffers: when `leftOutput` and
    /// `rightOutput` already have the right format and size (and are not
    /// shared), their memory is reused and nothing is allocated; otherwise
    /// they are replaced by new buffers.
    public func rectify(left: ImageView, right: ImageView,
                        into leftOutput: inout ImageBuffer, _ rightOutput: inout ImageBuffer) throws(ImageError) {
        try validate(left: left, right: right)
        if leftOutput.format != left.format || leftOutput.size != outputSize {
            leftOutput = try ImageBuffer(format: left.format, size: outputSize)
        }
        if rightOutput.format != left.format || rightOutput.size != outputSize {
            rightOutput = try ImageBuffer(format: left.format, size: outputSize)
        }
        // (The closures return the rectification applied, which this method does not.)
        var failure: ImageError?
        leftOutput.withMutableView { l in
            rightOutput.withMutableView { r in
                do throws(ImageError) { _ = try perform(left: left, right: right, into: l, r) } catch { failure = error }
            }
        }
        if let failure { throw failure }
    }

    /// Rectifies a pair into new buffers (convenient; allocates two images).
    public func rectify(left: ImageBuffer, right: ImageBuffer) throws(ImageError) -> (left: ImageBuffer, right: ImageBuffer) {
        try validate(left.format, left.size, right.format, right.size)
        var l = try ImageBuffer(format: left.format, size: outputSize)
        var r = l
        var failure: ImageError?
        left.withView { lv in
            right.withView { rv in
                l.withMutableView { lo in
                    r.withMutableView { ro in
                        do throws(ImageError) { _ = try perform(left: lv, right: rv, into: lo, ro) } catch { failure = error }
                    }
                }
            }
        }
        if let failure { throw failure }
        return (l, r)
    }

    /// Compiles the maps for packed images of `format` now, so the first
    /// pair does not pay for it.
    public func prepare(for format: PixelFormat) throws(ImageError) {
        try format.validate(outputSize)
        try format.validate(sourceSizes.left)
        try format.validate(sourceSizes.right)
        let strides = sourceSizes.map { ImageBuffer.packedRowBytes(format, $0) }
        _ = try guarded.withLock { _ throws(ImageError) in try plan(key: PlanKey(format: format, strides: strides)) }
    }

    private func validateOutput(_ output: MutableImageView, name: String, format: PixelFormat) throws(ImageError) {
        guard output.size == outputSize else { throw .sizeMismatch(what: name, expected: outputSize, actual: output.size) }
        guard output.format == format else {
            throw .unsupportedFormat(output.format, operation: "rectifying \(format.rawValue) images into a \(name)")
        }
    }

    private func validate(left: ImageView, right: ImageView) throws(ImageError) {
        try validate(left.format, left.size, right.format, right.size)
    }

    private func validate(_ leftFormat: PixelFormat, _ leftSize: ImageSize,
                          _ rightFormat: PixelFormat, _ rightSize: ImageSize) throws(ImageError) {
        guard leftSize == sourceSizes.left else {
            throw .sizeMismatch(what: "left image", expected: sourceSizes.left, actual: leftSize)
        }
        guard rightSize == sourceSizes.right else {
            throw .sizeMismatch(what: "right image", expected: sourceSizes.right, actual: rightSize)
        }
        guard rightFormat == leftFormat else {
            throw .unsupportedFormat(rightFormat, operation: "rectifying a pair whose left image is \(leftFormat.rawValue)")
        }
        try leftFormat.validate(outputSize)
    }

    // MARK: Live convergence

    /// The convergence distance asked for (calibration units; `nil`: infinity): the maps'
    /// own, or the last ``setConvergence(atDistance:)``. Where disparity is really zero after
    /// the whole-pixel rounding is ``rectification(for:)``'s `convergenceDistance`.
    public var requestedConvergenceDistance: Double? {
        guarded.withLock { _ in
            switch liveConvergence {
            case .none: return baseRectification.convergenceDistance
            case .some(let distance): return distance
            }
        }
    }

    /// Moves the zero-disparity plane to `distance` (calibration units; `nil` or a
    /// non-positive distance: infinity) from the next pair on, without rebuilding the maps.
    ///
    /// In a rectified pair a new convergence distance moves the two images apart along the
    /// baseline, so it is applied as a shift of each output image by whole samples: left by
    /// −k, right by +k along the baseline (turned with the output orientation), with
    /// `k = round(Δ / 2)` for the change Δ of disparity the new distance asks for, rounded to
    /// ``convergenceStep(for:)`` for subsampled formats. Zero disparity therefore lands
    /// within one pixel of disparity of `distance` (two for YUYV, UYVY, NV12, I420 and I422), and the
    /// pixels a shift brings in from outside are border (black). What was applied,
    /// including the distance where disparity is really zero, is
    /// ``rectification(for:)``. For an exact plane, build a rectifier with
    /// ``init(calibration:convergenceDistance:options:orientation:interpolation:threads:simdLevel:compactMaps:)``.
    public func setConvergence(atDistance distance: Double?) {
        guarded.withLock { _ in liveConvergence = .some(distance.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }) }
    }

    /// Whole samples a live convergence shift moves by for `format`: 2 along an axis on
    /// which the format subsamples chroma (YUYV and UYVY horizontally, NV12 both ways), so
    /// chroma moves by whole samples with luma; 1 otherwise.
    public func convergenceStep(for format: PixelFormat) -> Int {
        convergenceStep(for: format, alongDisplayedX: displayedBaselineAxis.x != 0)
    }

    private func convergenceStep(for format: PixelFormat, alongDisplayedX: Bool) -> Int {
        switch format {
        case .yuyv, .uyvy, .i422: return alongDisplayedX ? 2 : 1
        case .nv12, .i420: return 2
        case .gray8, .rgb8, .bgr8, .rgba8, .bgra8: return 1
        }
    }

    /// The rectification pairs of `format` are resampled with now: the maps' own, or, after
    /// ``setConvergence(atDistance:)``, the one with the whole-sample shift applied (its
    /// `p1`, `p2`, `q`, valid rectangles and `StereoRectification.convergenceDistance`
    /// describe the pixels as written).
    public func rectification(for format: PixelFormat) -> StereoRectification {
        guarded.withLock { _ in liveSetting(for: format).rectification }
    }

    /// The rectified baseline axis as a unit step in displayed pixels (the output
    /// orientation turns and flips it).
    private var displayedBaselineAxis: SIMD2<Int> {
        let o = orientation, size = baseRectification.size
        // Displayed → unrotated is p ↦ A p + c with A a signed permutation, so A⁻¹ = Aᵀ.
        let origin = o.sourcePixel(ofDisplayed: SIMD2(0, 0), imageSize: size)
        let ex = o.sourcePixel(ofDisplayed: SIMD2(1, 0), imageSize: size) - origin
        let ey = o.sourcePixel(ofDisplayed: SIMD2(0, 1), imageSize: size) - origin
        let axis = baseRectification.layout == .horizontal ? 0 : 1
        return SIMD2(Int(ex[axis].rounded()), Int(ey[axis].rounded()))
    }

    /// The applied rectification and the per-side output shifts. Lock held.
    private func liveSetting(for format: PixelFormat) -> (rectification: StereoRectification,
                                                          shifts: PerSide<SIMD2<Int>>) {
        let base = baseRectification
        guard case .some(let distance) = liveConvergence else { return (base, PerSide(repeating: .zero)) }
        let classic = base.unconverged
        let wanted = distance.map { classic.converged(atDistance: $0).convergenceShift } ?? 0
        let axis = displayedBaselineAxis
        let step = Double(convergenceStep(for: format, alongDisplayedX: axis.x != 0))
        // A shift wider than the image shows nothing but border: clamp there, so that any
        // distance (however near) gives a shift the kernels and `Int` can take.
        let limit = Double(baseRectification.size.width + baseRectification.size.height)
        let samples = (min(max((wanted - base.convergenceShift) / step, -limit), limit)).rounded() * step
        guard samples != 0 else { return (base, PerSide(repeating: .zero)) }
        let applied = classic.converged(halfShift: base.convergenceShift + samples)
        // A principal point moved by +s shows rectified pixel u − s at u.
        let k = Int(samples)
        return (applied, PerSide(left: axis &* -k, right: axis &* k))
    }

    // MARK: Plans

    private struct CompileKey: Hashable { var side: StereoSide; var grid: SampleGrid; var rowBytes: Int; var layout: SampleLayout }
    private struct PlanKey: Hashable {
        var format: PixelFormat
        /// Row strides of planes 0, 1, 2 (0 for planes the format lacks).
        var strides: PerSide<SIMD3<Int>>
    }

    /// One plane of one image, compiled (`map`), or for compact maps the positions its
    /// bands compile from.
    private struct Job {
        var side: StereoSide; var plane: Int; var grid: SampleGrid; var map: CompiledMap?
        /// Compact maps only: the positions the bands' chunks are compiled from.
        var rows: PositionRows?; var rowBytes: Int; var layout: SampleLayout
    }
    /// A band of rows of one job: the unit handed to a thread. For YUYV and UYVY, `chroma`
    /// is the 4:2:2 chroma job of the same rows, run with the luma job by one thread
    /// (``RemapKernels/run422(luma:chroma:rows:source:destination:destinationRowBytes:shift:level:loads:)``).
    private struct Band {
        var job: Int; var rows: Range<Int>; var chroma: Int? = nil
        /// Compact maps: this band's chunk tables (luma, and chroma for YUYV and UYVY).
        var chunks: (luma: CompiledMap, chroma: CompiledMap?)? = nil
        /// Rows per chunk of a compact map.
        static let chunkRows = 8
    }
    private final class PairPlan: @unchecked Sendable {
        let jobs: [Job]
        let bands: [Band]
        init(jobs: [Job], bands: [Band]) { self.jobs = jobs; self.bands = bands }
    }

    private func plan(left: ImageView, right: ImageView) throws(ImageError) -> PairPlan {
        func strides(_ view: ImageView) -> SIMD3<Int> {
            SIMD3(view.plane0.bytesPerRow, view.plane1?.bytesPerRow ?? 0, view.plane2?.bytesPerRow ?? 0)
        }
        return try plan(key: PlanKey(format: left.format, strides: PerSide(left: strides(left), right: strides(right))))
    }

    /// The cached plan for a layout, compiling what is missing. Lock held.
    ///
    /// - Throws: ``ImageError/outOfMemory(what:bytes:)`` when a map's table cannot be allocated.
    private func plan(key: PlanKey) throws(ImageError) -> PairPlan {
        if let plan = plans[key] { return plan }
        var jobs: [Job] = []
        var bands: [Band] = []
        for side in StereoSide.allCases {
            let strides = key.strides[side]
            for entry in key.format.remapPlanes {
                let rowBytes = strides[entry.plane]
                // Compact maps need the camera model (a rectifier made from stored maps keeps whole maps).
                let compactRows = compactMaps ? model(side: side).map { positionRows($0, side: side, grid: entry.grid) } : nil
                let map = compactRows == nil
                    ? try compiledMap(side: side, grid: entry.grid, rowBytes: rowBytes, layout: entry.layout) : nil
                jobs.append(Job(side: side, plane: entry.plane, grid: entry.grid, map: map, rows: compactRows,
                                rowBytes: rowBytes, layout: entry.layout))
                if entry.grid == .chroma422 && entry.plane == 0 {
                    // YUYV and UYVY interleave luma and chroma in one plane: the luma job just
                    // before this one has the same rows, and its bands take this job along, so
                    // no two threads write neighbouring bytes (or one cache line) of a row.
                    let chroma = jobs.count - 1
                    for b in bands.indices where bands[b].job == chroma - 1 {
                        bands[b].chroma = chroma
                        if let luma = bands[b].chunks?.luma, let rows = jobs[chroma].rows {
                            bands[b].chunks = (luma, try chunkMap(rows, jobs[chroma]))
                        }
                    }
                    continue
                }
                // Bands of 16–64 rows: several per thread for balance, small
                // enough that a band's source rows stay in cache.
                let rows = map?.height ?? compactRows?.height ?? 0
                let bandRows = max(16, min(64, rows / max(1, pool.threadCount * 4)))
                var start = 0
                while start < rows {
                    var band = Band(job: jobs.count - 1, rows: start..<min(rows, start + bandRows))
                    if let compactRows { band.chunks = (try chunkMap(compactRows, jobs[jobs.count - 1]), nil) }
                    bands.append(band)
                    start += bandRows
                }
            }
        }
        let plan = PairPlan(jobs: jobs, bands: bands)
        plans[key] = plan
        return plan
    }

    /// Side `side`'s camera model as a source of positions, or nil for a rectifier made
    /// from stored maps.
    private func model(side: StereoSide) -> LumaPositions? {
        guard case .model(let builders) = positions else { return nil }
        return .model(builders[side])
    }

    /// The positions of one side's grid from `luma`, computed and compiled at this
    /// rectifier's vector level.
    private func positionRows(_ luma: LumaPositions, side: StereoSide, grid: SampleGrid) -> PositionRows {
        let source = sourceSizes[side]
        return PositionRows(luma: luma, lumaWidth: outputSize.width, lumaHeight: outputSize.height,
                            lumaSourceWidth: source.width, lumaSourceHeight: source.height, grid: grid,
                            level: simdLevel.kernelLevel)
    }

    /// A compact map's chunk table for one job, compiled from `rows`.
    private func chunkMap(_ rows: PositionRows, _ job: Job) throws(ImageError) -> CompiledMap {
        try CompiledMap(chunkOf: rows, chunkRows: Band.chunkRows, sourceRowBytes: job.rowBytes, layout: job.layout,
                    interpolation: interpolation)
    }

    private func compiledMap(side: StereoSide, grid: SampleGrid, rowBytes: Int, layout: SampleLayout) throws(ImageError) -> CompiledMap {
        let key = CompileKey(side: side, grid: grid, rowBytes: rowBytes, layout: layout)
        if let map = compiled[key] { return map }
        func compile(_ luma: LumaPositions) throws(ImageError) -> CompiledMap {
            try CompiledMap(rows: positionRows(luma, side: side, grid: grid), sourceRowBytes: rowBytes, layout: layout,
                        interpolation: interpolation, pool: pool)
        }
        let map: CompiledMap
        switch positions {
        case .stored(let maps):
            let stored = maps[side]
            let result = stored.sourceX.withUnsafeBufferPointer { xs in
                stored.sourceY.withUnsafeBufferPointer { ys -> Result<CompiledMap, ImageError> in
                    // Non-empty: the map covers a valid (non-zero) output size.
                    do throws(ImageError) { return .success(try compile(.stored(xs: xs.baseAddress!, ys: ys.baseAddress!))) } catch { return .failure(error) }
                }
            }
            map = try result.get()
        case .model(let builders):
            map = try compile(.model(builders[side]))
        }
        compiled[key] = map
        return map
    }
}

extension ImageBuffer {
    /// Row strides (planes 0, 1, 2; 0 for planes the format lacks) of a packed image.
    static func packedRowBytes(_ format: PixelFormat, _ size: ImageSize) -> SIMD3<Int> {
        SIMD3(format.minimumBytesPerRow(width: size.width),
              format.planeCount > 1 ? format.minimumBytesPerRow(width: size.width, plane: 1) : 0,
              format.planeCount > 2 ? format.minimumBytesPerRow(width: size.width, plane: 2) : 0)
    }
}
