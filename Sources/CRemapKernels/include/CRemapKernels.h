// Resampling kernels written with the vector instructions of one CPU level, selected at
// run time (ParallaxImage's RemapKernels decides which to call). Compiled for the
// architecture's baseline like the rest of the package: each function carries its own
// `target` attribute, and none may be called unless parallax_remap_simd_level() says the
// CPU has that level.
//
// Every kernel works on one span of one output row of a compiled map (see
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
} parallax_simd_level;

/// The widest level this CPU runs (cpuid and xgetbv on x86-64, asked on every call).
parallax_simd_level parallax_remap_simd_level(void);

/// Gray bilinear: reads 4 bytes at each tap row (the tap and its right neighbour, plus
/// 2 bytes the weights ignore), writes out[u], one byte per sample.
ptrdiff_t parallax_remap_gray_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                            const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out);

/// Four-byte samples (BGRA, RGBA): reads 4 bytes at each of the four taps, writes 4 bytes
/// per sample.
ptrdiff_t parallax_remap_packed4_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                               const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out);

/// Three-byte samples (RGB, BGR): reads 4 bytes at each of the four taps (the fourth
/// belongs to the next sample; the map keeps a spare source column) and writes exactly
/// 3 bytes per processed sample, nothing past out[3·returned − 1].
ptrdiff_t parallax_remap_packed3_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                               const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out);

/// NV12 chroma (two bytes per sample, Cb and Cr): reads 4 bytes at each of the four taps
/// (the map keeps a spare source column) and writes 2 bytes per processed sample.
///
/// YUYV and UYVY have no AVX2 kernel: their luma and chroma bytes interleave and belong to
/// different bands, so results must be stored byte by byte, and on an AMD Zen 3 the gathers
/// then made them about 15 % slower than the portable kernels (`parallax bench rectify
/// --format yuyv --simd avx2` against `--simd baseline`, 2026-11-23).
ptrdiff_t parallax_remap_nv12_chroma_bilinear_avx2(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                                   const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out);

#endif
