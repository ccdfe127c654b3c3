// Map building, resampling and detection kernels written with the vector instructions of one
// CPU level, selected at run time (ParallaxGeometry's RectificationMap, ParallaxImage's
// RemapKernels and ParallaxCalibration's detectors decide which to call). Compiled for the
// architecture's baseline like the rest of the package: each function carries its own
// `target` attribute, and none may be called at a level parallax_remap_simd_level()
// (resampling) or parallax_map_simd_level() (map building and detection) does not report
// for this CPU.
//
// Every resampling kernel works on one span of one output row of a compiled map (see
// ParallaxImage/Rectification/CompiledMap.swift): entries [start, end) pack
//     offset << 10 | fy << 5 | fx
// where `offset` is the byte offset of the sample's first tap from `base`. The map's
// compiler guarantees that every byte a kernel reads (4 bytes from each tap, described at
// each kernel) lies inside the source plane. Each kernel processes whole groups of samples
// from `start` and returns the index of the first sample it did not process; the caller
// finishes the row with the portable kernels. Results equal OpenCV's fixed-point
// INTER_LINEAR: (Σ wᵢ pᵢ + 512) >> 10 with weights (32−fx)(32−fy), fx(32−fy), (32−fx)fy, fx·fy.
#ifndef PARALLAX_CREMAPKERNELS_H
#define PARALLAX_CREMAPKERNELS_H
#include <stddef.h>
#include <stdint.h>

/// The vector instruction levels a kernel may be written for.
typedef enum {
    /// The architecture's baseline (SSE2 on x86-64, NEON on arm64): the portable Swift kernels.
    PARALLAX_SIMD_BASELINE = 0,
    /// x86-64 with AVX2 and FMA (Intel Haswell, AMD Zen and later).
    PARALLAX_SIMD_AVX2 = 1,
    /// x86-64 with AVX-512 F, DQ, BW and VL besides AVX2 and FMA (Intel Skylake-SP, Ice Lake,
    /// AMD Zen 4 and later). Only the map-building kernels have this level.
    PARALLAX_SIMD_AVX512 = 2,
} parallax_simd_level;

/// The widest level the environment allows: `PARALLAX_SIMD=baseline`, `avx2` or `avx512` caps
/// the two levels below, so that a machine runs the kernels another CPU would (`make
/// test-cpus`; OpenCV's `OPENCV_CPU_DISABLE` does the same for OpenCV). Unset: no cap. Any
/// other value caps at the baseline and says so on stderr once.
parallax_simd_level parallax_simd_level_cap(void);

/// The widest level the resampling kernels have and this CPU runs, within the cap above
/// (baseline or AVX2; cpuid and xgetbv on x86-64, asked on every call).
parallax_simd_level parallax_remap_simd_level(void);

/// The widest level the map-building kernels have and this CPU runs (baseline, AVX2 or
/// AVX-512), within the cap above; asked on every call.
parallax_simd_level parallax_map_simd_level(void);

/// Whether the AVX2 resampling kernels below should fetch taps with scalar loads (non-zero)
/// rather than `vpgatherdd`, which AMD's Zen cores run as dozens of micro-ops and Intel
/// cores with the Gather Data Sampling microcode mitigation run far slower: 1 on AMD and
/// Hygon CPUs and where /sys/devices/system/cpu/vulnerabilities/gather_data_sampling reports
/// a mitigation, else 0. The environment variable PARALLAX_AVX2_TAPS=loads or =gathers
/// overrides it. Every kernel takes the choice as its last argument (`loads`); both ways
/// read the same bytes and give the same results.
int32_t parallax_avx2_taps_by_loads(void);

/// Gray bilinear: reads 4 bytes at each tap row (the tap and its right neighbour, plus
/// 2 bytes the weights ignore), writes out[u], one byte per sample.
ptrdiff_t parallax_remap_gray_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                            const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int32_t loads);

/// Four-byte samples (BGRA, RGBA): reads 4 bytes at each of the four taps (with scalar
/// loads, 8 from each tap row's first tap: the same bytes), writes 4 bytes per sample.
ptrdiff_t parallax_remap_packed4_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                               const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int32_t loads);

/// Three-byte samples (RGB, BGR): reads 4 bytes at each of the four taps (the fourth
/// belongs to the next sample; the map keeps a spare source column), or with scalar loads
/// 8 bytes from each tap row's first tap, and writes exactly 3 bytes per processed sample,
/// nothing past out[3·returned − 1].
ptrdiff_t parallax_remap_packed3_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                               const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int32_t loads);

/// NV12 chroma (two bytes per sample, Cb and Cr): reads 4 bytes from each tap row's first
/// tap (the tap and its right neighbour) and writes 2 bytes per processed sample.
ptrdiff_t parallax_remap_nv12_chroma_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                                   const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int32_t loads);

/// YUYV or UYVY, luma and chroma of one output row together: `count` macropixels, each from
/// two luma entries (`luma_entries[2j]`, `[2j + 1]`, span entries of the luma map, offsets
/// from `luma_base`, which already points at the luma byte) and one chroma entry
/// (`chroma_entries[j]`, a span entry of the 4:2:2 chroma map, offsets from `chroma_base`
/// to the macropixel's first byte). `luma_byte` is 0 for YUYV and 1 for UYVY. Reads what
/// the luma and chroma kernels read (4 bytes at each luma tap, 4 bytes at each chroma
/// tap and its right neighbour); writes 4 whole bytes per processed macropixel, in groups
/// of 8, and returns how many it processed.
///
/// Separate luma and chroma kernels could not do this: the two planes interleave byte by
/// byte, so each would have to store single bytes (on an AMD Zen 3 that made them about
/// 15 % slower than the portable kernels).
ptrdiff_t parallax_remap_422_bilinear_avx2(const uint32_t *luma_entries, const uint32_t *chroma_entries,
                                           ptrdiff_t count, const uint8_t *luma_base, const uint8_t *chroma_base,
                                           ptrdiff_t row_bytes, int32_t luma_byte, uint8_t *out, int32_t loads);

// MARK: Map building

/// A pinhole camera with optional Brown–Conrady distortion (OpenCV's order k1, k2, p1, p2,
/// k3, k4, k5, k6), as ParallaxGeometry's CameraModel holds it.
typedef struct {
    double fx, fy, cx, cy, skew;
    double k1, k2, p1, p2, k3, k4, k5, k6;
    /// Non-zero when the lens distorts at all (a Brown model, even with zero coefficients).
    int32_t distorted;
    /// Non-zero when the rational denominator (k4, k5, k6) is in use.
    int32_t rational;
} parallax_brown_lens;

/// One row of a rectification map: for u in [0, width), the ray origin + u·step (camera
/// frame) projected through `lens`, as float pixel positions; NaN where the ray points
/// behind the camera or the pixel is not finite. Bit for bit the same at every level.
void parallax_map_row_brown(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                            ptrdiff_t width, float *xs, float *ys, parallax_simd_level level);

/// A quantised position: round(32 x), ties to even, as OpenCV's convertMaps computes it,
/// for |x| < 2^16; this value for every other position (NaN, infinite or far outside any
/// image).
static const int32_t PARALLAX_UNDEFINED_POSITION = INT32_MIN;

/// The same row as parallax_map_row_brown, quantised (see PARALLAX_UNDEFINED_POSITION): what
/// a compiled map needs. Positions whose rounding is certain from a cubic through exact nodes
/// every 16 columns are not evaluated at all (see map_build.c). `scratch` holds
/// parallax_quantised_row_scratch_bytes(width) bytes. The same at every level. Returns how
/// many positions were evaluated exactly.
ptrdiff_t parallax_map_row_brown_quantised(const parallax_brown_lens *lens, const double origin[3],
                                           const double step[3], ptrdiff_t width, int32_t *qx, int32_t *qy,
                                           void *scratch, parallax_simd_level level);

/// Scratch bytes parallax_map_row_brown_quantised needs for a row of `width` columns.
ptrdiff_t parallax_quantised_row_scratch_bytes(ptrdiff_t width);

/// Entry offsets must stay below this (22 bits; see CompiledMap.swift).
#define PARALLAX_COMPILED_OFFSET_LIMIT (1 << 22)

/// The source layout and interpolation a map is compiled for (CompiledMap.swift).
typedef struct {
    int64_t source_width, source_height, source_row_bytes, pixel_stride;
    /// Taps per axis (1, 2 or 4), spare columns the vector kernels read past the taps,
    /// and the taps before the sample (1 for bicubic).
    int32_t taps, spare, lead;
    /// Non-zero for nearest-neighbour interpolation.
    int32_t nearest;
    /// Bytes a vector kernel reads from a tap row's first tap, and the bytes of the plane
    /// that may be read: a span never reads past them.
    int64_t vector_read, readable;
} parallax_compile_params;

/// Per-sample scratch of one row (`width` entries each). After a compilation it holds, for
/// the samples outside the span only, the quantised sample: first tap (INT32_MIN for no
/// source point) and fractions fy << 5 | fx; `inside` is the kernel's own.
typedef struct {
    int32_t *tap_x, *tap_y, *fractions;
    uint8_t *inside;
} parallax_compile_scratch;

/// Where one compiled row's span lies and the byte offset its entries are relative to.
typedef struct {
    int64_t base;
    ptrdiff_t span_start, span_end;
} parallax_compiled_row;

/// Compiles one row: quantises every position as OpenCV's convertMaps does (round(32 x),
/// ties to even), finds the longest run of samples inside the source whose offsets from the
/// row's base fit, and writes their packed entries. Entries outside the span are left for the
/// caller, which reads those samples from `scratch`. The base is 0 where the offset limit
/// reaches every byte a sample may read from the plane's start; otherwise it is the start of
/// the lowest source row among samples whose first taps lie in the source.
void parallax_compile_row(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *params,
                          const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row,
                          parallax_simd_level level);

/// The same for a row of quantised positions (parallax_map_row_brown_quantised's): the
/// entries parallax_compile_row gives for the float row they were quantised from. Every
/// position is |q| < 2^21 or PARALLAX_UNDEFINED_POSITION, as quantising produces them.
void parallax_compile_quantised_row(const int32_t *qx, const int32_t *qy, ptrdiff_t width,
                                    const parallax_compile_params *params, const parallax_compile_scratch *scratch,
                                    uint32_t *entries, parallax_compiled_row *row, parallax_simd_level level);

// MARK: Detection

/// The horizontal pass of a separable blur over `height` rows of `width` floats:
/// `dst[x] = Σ_t kernel[t] · src[clamp(x − taps/2 + t)]`, summed from 0 in t order (`taps`
/// odd, edge pixels repeated). Bit for bit the same at every level (the level at most
/// parallax_map_simd_level()).
void parallax_blur_rows(const float *src, float *dst, ptrdiff_t width, ptrdiff_t height, const float *kernel,
                        int32_t taps, parallax_simd_level level);

/// The vertical pass: `dst[y][x] = Σ_t kernel[t] · src[clamp(y − taps/2 + t)][x]`, as above.
void parallax_blur_columns(const float *src, float *dst, ptrdiff_t width, ptrdiff_t height, const float *kernel,
                           int32_t taps, parallax_simd_level level);

/// The saddle response `max(0, dxy² − dxx·dyy)` of an image's second differences (dxy from the
/// four diagonal neighbours, ¼ of their alternating sum) at every pixel `border` (≥ 1) or
/// more inside it; other entries of `response` are not written. Bit for bit the same at
/// every level.
void parallax_saddle_response(const float *pixels, float *response, ptrdiff_t width, ptrdiff_t height,
                              ptrdiff_t border, parallax_simd_level level);

/// Writes to `found` (room for `capacity`) the index `y·width + x`, in scan order, of every
/// pixel `border` (≥ 1) or more inside the image whose `response` is at least `threshold`
/// and at least each of its four direct neighbours' (the cheap half of the maximum test);
/// returns how many there are, also those beyond `capacity`.
ptrdiff_t parallax_response_peaks(const float *response, ptrdiff_t width, ptrdiff_t height, ptrdiff_t border,
                                  float threshold, int32_t *found, ptrdiff_t capacity, parallax_simd_level level);

/// ChessboardDetector's ring test at (x, y): `count` (at most 64) bilinear samples at
/// (x + ring_x[k]·r, y + ring_y[k]·r), r = 3 then 5, pass when either ring has contrast
/// (≥ 12 levels), point symmetry and exactly four sign changes around its mean. The same
/// operations in the same order as the Swift definition (GrayImage.sample) at every level.
int32_t parallax_ring_test(const float *pixels, ptrdiff_t width, ptrdiff_t height, double x, double y,
                           const double *ring_x, const double *ring_y, int32_t count, parallax_simd_level level);

/// Asks for the cache line at `address` ahead of a read (no fault for any address); for the
/// portable Swift kernels, which have no such intrinsic. Compiles to `prefetcht0` on x86-64
/// and `prfm pldl1keep` on arm64.
static inline void parallax_prefetch(const void *address) { __builtin_prefetch(address, 0, 3); }

#endif
