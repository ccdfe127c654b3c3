import CRemapKernels

/// The vector instructions the kernels use.
///
/// Parallax is compiled for the architecture's baseline, so it runs on every CPU of that
/// architecture; kernels for wider instruction sets are chosen at run time, as OpenCV does,
/// when the CPU has them (``supported``). Every level produces the same pixels and the same
/// maps: the resampling kernels all compute OpenCV's fixed-point interpolation exactly, the
/// float map kernels perform the same IEEE operations at every level, and the quantised map
/// rows take from their cubic only roundings that equal the exact positions' (tests compare
/// every level).
public enum SIMDLevel: String, Sendable, CaseIterable, Comparable, CustomStringConvertible {
    /// The portable kernels: Swift SIMD types and C compiled for the baseline (SSE2 on
    /// x86-64, NEON on arm64).
    case baseline
    /// x86-64 kernels written for AVX2 and FMA (Intel Haswell, AMD Zen and later): bilinear
    /// gray, RGB/BGR, RGBA/BGRA, NV12, YUYV and UYVY resampling and every map kernel; the
    /// other interpolations use the portable kernels.
    case avx2
    /// x86-64 with AVX-512 F, DQ, BW and VL as well (Intel Skylake-SP and later, AMD Zen 4):
    /// building and compiling maps run 512-bit instances of their kernels; resampling uses
    /// the AVX2 kernels.
    case avx512

    /// The widest level this CPU runs; asked of the CPU once. The environment variable
    /// `PARALLAX_SIMD` (`baseline`, `avx2` or `avx512`) caps it, so that one machine can run
    /// the kernels another CPU would, as `make test-cpus` does.
    public static let supported: SIMDLevel = {
        switch parallax_map_simd_level() {
        case PARALLAX_SIMD_AVX512: return .avx512
        case PARALLAX_SIMD_AVX2: return .avx2
        default: return .baseline
        }
    }()

    /// Whether the AVX2 resampling kernels fetch their taps with scalar loads rather than
    /// `vpgatherdd` on this CPU: on AMD's Zen cores a gather is dozens of micro-ops, and on
    /// Intel cores with the Gather Data Sampling microcode mitigation it is far slower, while
    /// on other Intel cores it is the faster way. Asked once (`parallax_avx2_taps_by_loads`;
    /// the environment variable `PARALLAX_AVX2_TAPS=loads` or `=gathers` overrides it). The
    /// pixels are the same either way.
    public static let avx2TapsByLoads: Bool = parallax_avx2_taps_by_loads() != 0

    /// The level, named for people, with the instruction set it stands for on this machine
    /// (and, where the AVX2 resampling kernels fetch taps with scalar loads, that too).
    public var description: String {
        let taps = Self.avx2TapsByLoads ? "taps by scalar loads" : nil
        switch self {
        case .avx512: return "AVX-512 (maps) and AVX2+FMA (resampling\(taps.map { ", " + $0 } ?? ""))"
        case .avx2: return "AVX2+FMA" + (taps.map { " (" + $0 + ")" } ?? "")
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

    /// The C kernels' name for this level.
    package var kernelLevel: parallax_simd_level {
        switch self {
        case .baseline: return PARALLAX_SIMD_BASELINE
        case .avx2: return PARALLAX_SIMD_AVX2
        case .avx512: return PARALLAX_SIMD_AVX512
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
        case .avx512: return 2
        }
    }
}
