import CRemapKernels

/// The vector instructions the resampling kernels use.
///
/// Parallax is compiled for the architecture's baseline, so it runs on every CPU of that
/// architecture; kernels for wider instruction sets are chosen at run time, as OpenCV does,
/// when the CPU has them (``supported``). Every level produces the same pixels: they all
/// compute OpenCV's fixed-point interpolation exactly.
public enum SIMDLevel: String, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    /// The portable kernels: Swift SIMD types compiled for the baseline (SSE2 on x86-64,
    /// NEON on arm64).
    case baseline
    /// x86-64 kernels written for AVX2 and FMA (Intel Haswell, AMD Zen and later): bilinear
    /// gray, RGB/BGR, RGBA/BGRA and NV12; YUYV, UYVY and the other interpolations use the
    /// portable kernels.
    case avx2

    /// The widest level this CPU runs; asked of the CPU once.
    public static let supported: SIMDLevel = parallax_remap_simd_level() == PARALLAX_SIMD_AVX2 ? .avx2 : .baseline

    /// The level, named for people, with the instruction set it stands for on this machine.
    public var description: String {
        switch self {
        case .avx2: return "AVX2+FMA"
        case .baseline:
            #if arch(x86_64)
            return "SSE2 (x86-64 baseline)"
            #elseif arch(arm64)
            return "NEON (arm64 baseline)"
            #else
            return "baseline"
            #endif
        }
    }

    /// Lower levels first.
    public static func < (a: SIMDLevel, b: SIMDLevel) -> Bool {
        a.rank < b.rank
    }

    private var rank: Int {
        switch self {
        case .baseline: return 0
        case .avx2: return 1
        }
    }
}
