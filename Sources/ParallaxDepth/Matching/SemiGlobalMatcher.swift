import CDepthKernels
import ParallaxGeometry
import ParallaxImage
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A semi-global matcher (Hirschmüller, TPAMI 2008) for rectified pairs: census costs,
/// aggregation along 4, 5 or 8 paths, winner takes all with sub-pixel refinement, a uniqueness
/// margin, a left–right check and a speckle filter.
///
/// Made once for an image size and a ``Configuration``; ``match(left:right:into:)`` then runs
/// per pair with no allocation, into a ``DisparityMap`` the caller keeps. The kernels use the
/// widest vector instructions of the CPU (``simdLevel``) and give the same disparities at every
/// level and on one or two threads.
///
/// ```swift
/// let matcher = try SemiGlobalMatcher(size: ImageSize(width: 640, height: 480))
/// var disparity = DisparityMap()
/// guard let left = pair.left.image, let right = pair.right.image else { return }  // a side off
/// try matcher.match(left: left, right: right, into: &disparity)
/// if let d = disparity[320, 240] { print("centre: \(d) px") }
/// ```
///
/// Calls from several threads take turns: one matcher matches one pair at a time.
public final class SemiGlobalMatcher: @unchecked Sendable {
    /// What the matcher computes.
    public let configuration: Configuration
    /// The size of the pairs it matches.
    public let size: ImageSize
    /// The vector instructions its kernels use.
    public let simdLevel: SIMDLevel

    /// The level's instructions as the matcher's kernels use them, named for people
    /// (`SIMDLevel.description` speaks of the rectification kernels).
    public var kernelDescription: String {
        switch simdLevel {
        case .avx512: return "AVX-512 BW (64 disparities per instruction)"
        case .avx2: return "AVX2 (32 disparities per instruction)"
        case .baseline:
            #if arch(arm64)
            return "NEON (16 disparities per instruction)"
            #else
            return "SSE2 (16 disparities per instruction)"
            #endif
        }
    }
    /// Bytes of working memory, allocated once when the matcher is made: a ring of a few rows'
    /// costs and sums and the paths' line buffers; with bottom-up paths (``AggregationPaths/four``
    /// and ``AggregationPaths/eight``) also the first pass's sums for the whole image (2 bytes per
    /// pixel and disparity).
    public let workingMemoryBytes: Int

    private let plan: UnsafeMutablePointer<parallax_sgm_plan>
    private let work: UnsafeMutableRawPointer
    private let pool: WorkerPool?
    /// One match at a time: the work area is the matcher's only state.
    private let matching = Mutex(())

    /// The default thread count: 2 where the machine has more than one processor.
    static var defaultThreads: Int { WorkerPool.processorCount > 1 ? 2 : 1 }

    /// A matcher for pairs of `size`.
    ///
    /// - Parameters:
    ///   - configuration: what to compute (the defaults of ``Configuration``).
    ///   - size: the size of the pairs, both images.
    ///   - simdLevel: the kernels' level, at most `SIMDLevel.supported` (the default); lower
    ///     levels give the same disparities, more slowly.
    /// - Throws: ``DepthError/invalidConfiguration(field:value:allowed:)`` naming the first value
    ///   out of range, ``DepthError/emptyImage(_:)``, ``DepthError/rangeWiderThanImage(minimumDisparity:disparityCount:width:)``,
    ///   ``DepthError/outOfMemory(bytes:)`` when the system refuses the working memory.
    public init(configuration: Configuration = Configuration(), size: ImageSize,
                simdLevel: SIMDLevel = .supported) throws(DepthError) {
        try configuration.validate(for: size)
        guard simdLevel <= .supported else {
            throw .invalidConfiguration(field: "simdLevel", value: simdLevel.kernelLevelValue,
                                        allowed: "at most this CPU's \(SIMDLevel.supported.rawValue)")
        }
        self.configuration = configuration
        self.size = size
        self.simdLevel = simdLevel
        let plan = UnsafeMutablePointer<parallax_sgm_plan>.allocate(capacity: 1)
        plan.initialize(to: parallax_sgm_plan())
        Self.fill(plan, configuration: configuration, size: size)
        let check = parallax_sgm_plan_check(plan)
        guard check == 0 else {
            plan.deallocate()
            // validate(for:) checks every bound the kernels do; reaching here is a bug in one of them.
            preconditionFailure("the kernels refuse a configuration that passed validation (bound \(check))")
        }
        let bytes = parallax_sgm_work_bytes(plan)
        // posix_memalign rather than allocate(byteCount:alignment:), which traps: eight paths
        // at a large size ask for gigabytes, and a refusal is an error to report.
        var memory: UnsafeMutableRawPointer?
        guard posix_memalign(&memory, 64, bytes) == 0, let memory else {
            plan.deallocate()
            throw .outOfMemory(bytes: bytes)
        }
        self.workingMemoryBytes = bytes
        self.plan = plan
        self.work = memory
        parallax_sgm_prepare(plan, work)
        let pool = configuration.threads > 1 ? WorkerPool.shared(threadCount: 2) : nil
        // The two stages wait for each other: each needs its own thread, or the match runs on one.
        self.pool = pool.flatMap { $0.startedThreads >= 1 ? $0 : nil }
    }

    deinit {
        free(work)
        plan.deallocate()
    }

    /// Matches a rectified pair into `map`, resizing it only if it is not yet of ``size``.
    ///
    /// Luma is read straight from gray8, YUYV, UYVY, NV12, I420 and I422 images (the two may
    /// differ in format). Every pixel gets a disparity in [minimum, minimum + count − 1] or is
    /// invalid, counted by reason in ``DisparityMap/invalid``.
    ///
    /// - Throws: ``DepthError/sizesDiffer(left:right:)``, ``DepthError/sizeDiffersFromMatcher(image:matcher:)``,
    ///   ``DepthError/unsupportedFormat(_:side:)``.
    public func match(left: ImageView, right: ImageView, into map: inout DisparityMap) throws(DepthError) {
        guard left.size == right.size else { throw .sizesDiffer(left: left.size, right: right.size) }
        guard left.size == size else { throw .sizeDiffersFromMatcher(image: left.size, matcher: size) }
        let leftLuma = try Self.luma(of: left, side: .left)
        let rightLuma = try Self.luma(of: right, side: .right)
        map.prepare(size: size, minimumDisparity: configuration.minimumDisparity, disparityCount: configuration.disparityCount)
        let counts: parallax_sgm_invalid_counts = matching.withLock { _ in
            map.fixedPoint.withUnsafeMutableBufferPointer { fixed in
                map.values.withUnsafeMutableBufferPointer { values in
                    SemiGlobalKernels.match(work: work, level: simdLevel, pool: pool, left: leftLuma, right: rightLuma,
                                            fixedPoint: fixed, values: values, width: size.width)
                }
            }
            return parallax_sgm_counts(work)
        }
        // The views' memory was read only inside the kernels, while the views were alive.
        withExtendedLifetime((left, right)) {}
        map.invalid.outside = Int(counts.outside)
        map.invalid.ambiguous = Int(counts.ambiguous)
        map.invalid.inconsistent = Int(counts.inconsistent)
        map.invalid.speckle = Int(counts.speckle)
    }

    /// Matches a rectified pair into a new map (one allocation per call; keep a map and use
    /// ``match(left:right:into:)`` per stream).
    public func match(left: ImageView, right: ImageView) throws(DepthError) -> DisparityMap {
        var map = DisparityMap()
        try match(left: left, right: right, into: &map)
        return map
    }

    /// The kernels' description of an image's luma.
    static func luma(of view: ImageView, side: StereoSide) throws(DepthError) -> parallax_sgm_luma {
        let plane = view.plane0
        let base = plane.baseAddress.assumingMemoryBound(to: UInt8.self)
        switch view.format {
        case .gray8, .nv12, .i420, .i422:
            return parallax_sgm_luma(base: base, row_bytes: plane.bytesPerRow, step: 1)
        case .yuyv:
            return parallax_sgm_luma(base: base, row_bytes: plane.bytesPerRow, step: 2)
        case .uyvy:
            return parallax_sgm_luma(base: base + 1, row_bytes: plane.bytesPerRow, step: 2)
        case .rgb8, .bgr8, .rgba8, .bgra8:
            throw .unsupportedFormat(view.format, side: side)
        }
    }

    /// The kernels' plan for a validated configuration.
    private static func fill(_ plan: UnsafeMutablePointer<parallax_sgm_plan>, configuration c: Configuration, size: ImageSize) {
        plan.pointee.width = Int32(size.width)
        plan.pointee.height = Int32(size.height)
        plan.pointee.min_disparity = Int32(c.minimumDisparity)
        plan.pointee.disparities = Int32(c.disparityCount)
        plan.pointee.census_width = Int32(c.census.width)
        plan.pointee.census_height = Int32(c.census.height)
        plan.pointee.p1 = Int32(c.smallPenalty)
        withUnsafeMutableBytes(of: &plan.pointee.p2_for_step) { raw in
            let table = raw.bindMemory(to: UInt16.self)
            for (step, penalty) in c.largePenaltyForStep.enumerated() { table[step] = penalty }
        }
        plan.pointee.paths = c.paths.kernelPaths
        plan.pointee.uniqueness_percent = Int32(c.uniquenessPercent)
        plan.pointee.lr_max_difference = Int32(c.leftRightMaxDifference ?? -1)
        plan.pointee.speckle_max_size = Int32(c.speckle?.maximumRegionSize ?? 0)
        plan.pointee.speckle_max_difference16 = Int32((c.speckle?.maximumDifference ?? 0) * DisparityMap.subpixelScale)
    }
}

extension SIMDLevel {
    /// The C kernels' number for the level (0 baseline, 1 AVX2, 2 AVX-512); the tests pass it too.
    package var kernelLevelValue: Int {
        switch self {
        case .baseline: return 0
        case .avx2: return 1
        case .avx512: return 2
        }
    }
}
