// AVX2 bilinear kernels (see include/CRemapKernels.h for the contract of each).
//
// The arithmetic is OpenCV's INTER_LINEAR fixed point, done in two exact integer steps:
// a horizontal blend per tap row with `vpmaddubsw` (bytes × signed byte weights 32−fx, fx,
// sums ≤ 255·32 = 8160 fit 16 bits), then a vertical blend with `vpmaddwd`
// (t·(32−fy) + b·fy in 32 bits), then + 512 and >> 10. Expanding the two steps gives
// Σ wᵢ pᵢ with OpenCV's four weights, so the results are the same integers.
//
// Taps are fetched 4 bytes per tap and sample, either with `vpgatherdd` or with eight scalar
// loads per vector (`loads`, see parallax_avx2_taps_by_loads), the scalar ones 8 bytes at a
// time where a tap and its neighbour fit in 8, and NV12 chroma's tap and neighbour as one
// 4-byte fetch: every stored result blends the same bytes either way, so the results are
// the same. The map's compiler keeps every such read inside the source plane
// (CompiledMap.swift, "vector reads").
#include "CRemapKernels.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

parallax_simd_level parallax_simd_level_cap(void) {
    const char *cap = getenv("PARALLAX_SIMD");
    if (cap == NULL || cap[0] == 0) return PARALLAX_SIMD_AVX512;
    if (strcmp(cap, "baseline") == 0) return PARALLAX_SIMD_BASELINE;
    if (strcmp(cap, "avx2") == 0) return PARALLAX_SIMD_AVX2;
    if (strcmp(cap, "avx512") == 0) return PARALLAX_SIMD_AVX512;
    // A misspelt cap must not silently run wider kernels than asked: the narrowest, said once
    // (atomically: threads may ask for the level at the same time).
    static _Atomic int warned = 0;
    if (!atomic_exchange(&warned, 1)) {
        fprintf(stderr, "PARALLAX_SIMD=%s is none of baseline, avx2, avx512: the kernels run at baseline\n", cap);
    }
    return PARALLAX_SIMD_BASELINE;
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AVX2 __attribute__((target("avx2,fma")))
// Bodies are always inlined, so that each exported kernel holds its own copy of them with
// `loads` a constant (plain `inline` left one shared body testing it in the loop).
#define INLINE static inline __attribute__((always_inline))

static parallax_simd_level detect_level(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return PARALLAX_SIMD_BASELINE;
    const unsigned osxsave = 1u << 27, fma = 1u << 12, avx = 1u << 28;
    if ((c & osxsave) == 0 || (c & fma) == 0 || (c & avx) == 0) return PARALLAX_SIMD_BASELINE;
    // The OS must save the YMM registers on a context switch (XCR0 bits 1 and 2).
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6u) != 6u) return PARALLAX_SIMD_BASELINE;
    if (__get_cpuid_max(0, 0) < 7) return PARALLAX_SIMD_BASELINE;
    __cpuid_count(7, 0, a, b, c, d);
    return (b & (1u << 5)) ? PARALLAX_SIMD_AVX2 : PARALLAX_SIMD_BASELINE;
}

static parallax_simd_level lower(parallax_simd_level a, parallax_simd_level b) { return a < b ? a : b; }

parallax_simd_level parallax_remap_simd_level(void) {
    // Not cached here: the Swift side asks once (SIMDLevel.supported).
    return lower(detect_level(), parallax_simd_level_cap());
}

static parallax_simd_level detect_map_level(void) {
    if (detect_level() != PARALLAX_SIMD_AVX2) return PARALLAX_SIMD_BASELINE;
    unsigned a, b, c, d;
    __cpuid_count(7, 0, a, b, c, d);
    const unsigned f = 1u << 16, dq = 1u << 17, bw = 1u << 30, vl = 1u << 31;
    if ((b & (f | dq | bw | vl)) != (f | dq | bw | vl)) return PARALLAX_SIMD_AVX2;
    // The OS must save the opmask and all 512-bit registers (XCR0 bits 5, 6 and 7).
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (lo & 0xE0u) == 0xE0u ? PARALLAX_SIMD_AVX512 : PARALLAX_SIMD_AVX2;
}

parallax_simd_level parallax_map_simd_level(void) {
    return lower(detect_map_level(), parallax_simd_level_cap());
}

int32_t parallax_avx2_taps_by_loads(void) {
    const char *choice = getenv("PARALLAX_AVX2_TAPS");
    if (choice && strcmp(choice, "loads") == 0) return 1;
    if (choice && strcmp(choice, "gathers") == 0) return 0;
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    // The vendor string is in EBX, EDX, ECX: "AuthenticAMD", or "HygonGenuine" (Zen too).
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &d, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = 0;
    if (strcmp(vendor, "AuthenticAMD") == 0 || strcmp(vendor, "HygonGenuine") == 0) return 1;
    // Intel cores whose microcode mitigates Gather Data Sampling run vpgatherdd far slower.
    FILE *file = fopen("/sys/devices/system/cpu/vulnerabilities/gather_data_sampling", "r");
    if (!file) return 0;
    char state[64] = {0};
    const int mitigated = fgets(state, sizeof state, file) && strncmp(state, "Mitigation", 10) == 0;
    fclose(file);
    return mitigated;
}

INLINE uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

// The 4 bytes at base + each lane of `offsets` (whose values `o` also holds): one
// `vpgatherdd`, or eight scalar loads put together (`loads`, a constant at each call).
INLINE AVX2 __m256i fetch8(const uint8_t *base, __m256i offsets, const uint32_t o[8], int loads) {
    if (!loads) return _mm256_i32gather_epi32((const int *)base, offsets, 1);
    return _mm256_setr_epi32((int)load32(base + o[0]), (int)load32(base + o[1]), (int)load32(base + o[2]),
                             (int)load32(base + o[3]), (int)load32(base + o[4]), (int)load32(base + o[5]),
                             (int)load32(base + o[6]), (int)load32(base + o[7]));
}

INLINE uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

// The 8 bytes at base + o[k] for eight samples, split into their first 4 bytes (`first`) and
// their last 4 (`second`), samples in order.
INLINE AVX2 void pairs8(const uint8_t *base, const uint32_t o[8], __m256i *first, __m256i *second) {
    const __m256i low = _mm256_setr_epi64x((long long)load64(base + o[0]), (long long)load64(base + o[1]),
                                           (long long)load64(base + o[2]), (long long)load64(base + o[3]));
    const __m256i high = _mm256_setr_epi64x((long long)load64(base + o[4]), (long long)load64(base + o[5]),
                                            (long long)load64(base + o[6]), (long long)load64(base + o[7]));
    // Per 128-bit lane: the even (odd) dwords of `low`, then of `high`: samples 0, 1, 4, 5 |
    // 2, 3, 6, 7; the 64-bit permutation puts them back in order.
    const __m256 l = _mm256_castsi256_ps(low), h = _mm256_castsi256_ps(high);
    *first = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(l, h, 0x88)), 0xD8);
    *second = _mm256_permute4x64_epi64(_mm256_castps_si256(_mm256_shuffle_ps(l, h, 0xDD)), 0xD8);
}

// The offsets of eight entries, as a vector and (for scalar loads) as integers.
INLINE AVX2 __m256i offsets8(const uint32_t *entries, __m256i *e, uint32_t o[8], int loads) {
    *e = _mm256_loadu_si256((const __m256i *)entries);
    const __m256i offsets = _mm256_srli_epi32(*e, 10);
    if (loads) _mm256_storeu_si256((__m256i *)o, offsets);
    return offsets;
}

// Per 32-bit lane, the 16-bit value (32 − fx) | fx << 8: the byte pair vpmaddubsw
// multiplies with a tap and its right neighbour.
INLINE AVX2 __m256i weights_x(__m256i e) {
    __m256i fx = _mm256_and_si256(e, _mm256_set1_epi32(31));
    return _mm256_add_epi32(_mm256_sub_epi32(_mm256_slli_epi32(fx, 8), fx), _mm256_set1_epi32(32));
}

// Per 32-bit lane, the 16-bit pair (32 − fy, fy) for vpmaddwd.
INLINE AVX2 __m256i weights_y(__m256i e) {
    __m256i fy = _mm256_and_si256(_mm256_srli_epi32(e, 5), _mm256_set1_epi32(31));
    return _mm256_add_epi32(_mm256_sub_epi32(_mm256_slli_epi32(fy, 16), fy), _mm256_set1_epi32(32));
}

INLINE AVX2 __m256i round_shift(__m256i sum) {
    return _mm256_srli_epi32(_mm256_add_epi32(sum, _mm256_set1_epi32(512)), 10);
}

// Eight one-channel samples from entries `e`: per 32-bit lane, the tap and its right
// neighbour at bytes 0 and 1 of `top` (tap row) and `bottom` (next row). One result (0…255)
// per lane.
INLINE AVX2 __m256i blend8(__m256i e, __m256i top, __m256i bottom) {
    // Bytes 2 and 3 of each lane meet weight 0, so each 32-bit lane holds (t, 0).
    __m256i wx = weights_x(e);
    __m256i t = _mm256_maddubs_epi16(top, wx);
    __m256i b = _mm256_maddubs_epi16(bottom, wx);
    return round_shift(_mm256_madd_epi16(_mm256_or_si256(t, _mm256_slli_epi32(b, 16)), weights_y(e)));
}

// Eight gray samples, one result (0…255) per 32-bit lane.
INLINE AVX2 __m256i gray8(const uint32_t *entries, const uint8_t *base, ptrdiff_t row_bytes, int loads) {
    __m256i e;
    uint32_t o[8];
    const __m256i offsets = offsets8(entries, &e, o, loads);
    return blend8(e, fetch8(base, offsets, o, loads), fetch8(base + row_bytes, offsets, o, loads));
}

// How far ahead, in samples, the multi-byte kernels ask for their taps' cache lines. A
// rectified row crosses source rows and pages as it goes, which the hardware prefetcher does
// not foresee: asking 128 samples ahead made bgra8, rgb8, yuyv and nv12 pairs 3–24 % faster
// on the development Xeon, with gathers and with scalar loads; gray, whose row stays on few
// lines, gained nothing and asks for none.
enum { PREFETCH_AHEAD = 128 };

// Asks for the cache lines of both tap rows of sample `u + PREFETCH_AHEAD` (the span's last
// sample near its end: `entries` is read inside the span only).
INLINE void prefetch_taps(const uint32_t *entries, ptrdiff_t u, ptrdiff_t end, const uint8_t *base,
                          ptrdiff_t row_bytes) {
    const ptrdiff_t k = u + PREFETCH_AHEAD < end ? u + PREFETCH_AHEAD : end - 1;
    const uint8_t *p = base + (entries[k] >> 10);
    _mm_prefetch((const char *)p, _MM_HINT_T0);
    _mm_prefetch((const char *)(p + row_bytes), _MM_HINT_T0);
}

INLINE AVX2 ptrdiff_t gray_bilinear(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                    const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int loads) {
    ptrdiff_t u = start;
    // After the two packs, dword 0 of each 128-bit lane holds the first sample group of
    // that lane and dword 1 the second; this order puts them back in sequence.
    const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (; u + 16 <= end; u += 16) {
        __m256i r0 = gray8(entries + u, base, row_bytes, loads), r1 = gray8(entries + u + 8, base, row_bytes, loads);
        __m256i words = _mm256_packus_epi32(r0, r1);
        __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words), order);
        _mm_storeu_si128((__m128i *)(out + u), _mm256_castsi256_si128(bytes));
    }
    for (; u + 8 <= end; u += 8) {
        __m256i r = gray8(entries + u, base, row_bytes, loads);
        __m256i words = _mm256_packus_epi32(r, r);
        __m256i bytes = _mm256_permutevar8x32_epi32(_mm256_packus_epi16(words, words), order);
        _mm_storel_epi64((__m128i *)(out + u), _mm256_castsi256_si128(bytes));
    }
    return u;
}

// Eight samples of a layout read with 4-byte loads `step` bytes apart: 4 result bytes per
// sample (byte c blends byte c of the four taps; for step 2 only bytes 0 and 1 mean
// anything), samples in order.
INLINE AVX2 __m256i quad8(const uint32_t *entries, const uint8_t *base, ptrdiff_t row_bytes, ptrdiff_t step,
                          int loads) {
    __m256i e;
    uint32_t o[8];
    const __m256i offsets = offsets8(entries, &e, o, loads);
    __m256i a, b, c, d;
    if (step == 2) {
        // NV12 chroma: a tap (Cb, Cr) and its right neighbour are the 4 bytes of one fetch; the
        // neighbour shifted down to bytes 0 and 1 (bytes 2 and 3 of a result are dropped).
        a = fetch8(base, offsets, o, loads);
        c = fetch8(base + row_bytes, offsets, o, loads);
        b = _mm256_srli_epi32(a, 16);
        d = _mm256_srli_epi32(c, 16);
    } else if (loads && step == 4) {
        // A tap and its right neighbour are 8 adjacent bytes (which the map keeps readable):
        // one load each, then the taps and the neighbours sorted into their own vectors.
        pairs8(base, o, &a, &b);
        pairs8(base + row_bytes, o, &c, &d);
    } else if (loads && step == 3) {
        // RGB: a tap and its neighbour are 6 adjacent bytes of one 8-byte load (the map keeps
        // 8 readable); the neighbour's 4 bytes are bytes 3…6, spread over both halves.
        __m256i high;
        pairs8(base, o, &a, &high);
        b = _mm256_or_si256(_mm256_srli_epi32(a, 24), _mm256_slli_epi32(high, 8));
        pairs8(base + row_bytes, o, &c, &high);
        d = _mm256_or_si256(_mm256_srli_epi32(c, 24), _mm256_slli_epi32(high, 8));
    } else {
        a = fetch8(base, offsets, o, loads);
        b = fetch8(base + step, offsets, o, loads);
        c = fetch8(base + row_bytes, offsets, o, loads);
        d = fetch8(base + row_bytes + step, offsets, o, loads);
    }
    // Horizontal weights as 4 byte pairs per sample, in the order the byte unpacks
    // below produce: samples 0, 1 | 4, 5 (low) and 2, 3 | 6, 7 (high).
    __m256i wx = weights_x(e);
    wx = _mm256_or_si256(wx, _mm256_slli_epi32(wx, 16));
    __m256i wxLow = _mm256_unpacklo_epi32(wx, wx), wxHigh = _mm256_unpackhi_epi32(wx, wx);
    // Vertical weights, one sample's pair in all four 32-bit lanes of a 128-bit lane.
    __m256i wy = weights_y(e);
    __m256i wyLow = _mm256_unpacklo_epi32(wy, wy), wyHigh = _mm256_unpackhi_epi32(wy, wy);
    __m256i wy0 = _mm256_unpacklo_epi64(wyLow, wyLow), wy1 = _mm256_unpackhi_epi64(wyLow, wyLow);
    __m256i wy2 = _mm256_unpacklo_epi64(wyHigh, wyHigh), wy3 = _mm256_unpackhi_epi64(wyHigh, wyHigh);
    // Pair each channel of a tap with the same channel of its right neighbour, blend.
    __m256i topLow = _mm256_maddubs_epi16(_mm256_unpacklo_epi8(a, b), wxLow);
    __m256i topHigh = _mm256_maddubs_epi16(_mm256_unpackhi_epi8(a, b), wxHigh);
    __m256i bottomLow = _mm256_maddubs_epi16(_mm256_unpacklo_epi8(c, d), wxLow);
    __m256i bottomHigh = _mm256_maddubs_epi16(_mm256_unpackhi_epi8(c, d), wxHigh);
    __m256i r0 = round_shift(_mm256_madd_epi16(_mm256_unpacklo_epi16(topLow, bottomLow), wy0));
    __m256i r1 = round_shift(_mm256_madd_epi16(_mm256_unpackhi_epi16(topLow, bottomLow), wy1));
    __m256i r2 = round_shift(_mm256_madd_epi16(_mm256_unpacklo_epi16(topHigh, bottomHigh), wy2));
    __m256i r3 = round_shift(_mm256_madd_epi16(_mm256_unpackhi_epi16(topHigh, bottomHigh), wy3));
    // The packs undo the unpacks lane by lane, restoring the sample order.
    return _mm256_packus_epi16(_mm256_packus_epi32(r0, r1), _mm256_packus_epi32(r2, r3));
}

INLINE AVX2 ptrdiff_t packed4_bilinear(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                       const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int loads) {
    ptrdiff_t u = start;
    for (; u + 8 <= end; u += 8) {
        prefetch_taps(entries, u, end, base, row_bytes);
        _mm256_storeu_si256((__m256i *)(out + 4 * u), quad8(entries + u, base, row_bytes, 4, loads));
    }
    return u;
}

INLINE AVX2 ptrdiff_t packed3_bilinear(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                       const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int loads) {
    ptrdiff_t u = start;
    // Drop byte 3 of each sample (it blended the next sample's first byte): 12 bytes per lane.
    const __m256i compact = _mm256_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1,
                                             0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
    for (; u + 8 <= end; u += 8) {
        prefetch_taps(entries, u, end, base, row_bytes);
        __m256i r = _mm256_shuffle_epi8(quad8(entries + u, base, row_bytes, 3, loads), compact);
        uint8_t *o = out + 3 * u;
        // Samples 0–3 as 16 bytes (the last 4 are overwritten next), then samples 4–7 as
        // exactly 12, so nothing is written past this group.
        _mm_storeu_si128((__m128i *)o, _mm256_castsi256_si128(r));
        __m128i high = _mm256_extracti128_si256(r, 1);
        _mm_storel_epi64((__m128i *)(o + 12), high);
        uint32_t last = (uint32_t)_mm_extract_epi32(high, 2);
        memcpy(o + 20, &last, 4);
    }
    return u;
}

INLINE AVX2 ptrdiff_t nv12_chroma_bilinear(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end,
                                           const uint8_t *base, ptrdiff_t row_bytes, uint8_t *out, int loads) {
    ptrdiff_t u = start;
    // Bytes 0 and 1 of each result are the sample (Cb and Cr); 2 and 3 mean nothing.
    const __m256i compact = _mm256_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1,
                                             0, 1, 4, 5, 8, 9, 12, 13, -1, -1, -1, -1, -1, -1, -1, -1);
    for (; u + 8 <= end; u += 8) {
        prefetch_taps(entries, u, end, base, row_bytes);
        __m256i r = _mm256_shuffle_epi8(quad8(entries + u, base, row_bytes, 2, loads), compact);
        r = _mm256_permute4x64_epi64(r, 0x08);  // 64-bit lanes 0 and 2 first
        _mm_storeu_si128((__m128i *)(out + 2 * u), _mm256_castsi256_si128(r));
    }
    return u;
}

// Eight luma samples of a 4:2:2 row, one result per 32-bit lane: bytes 0 and 2 of each tap's
// 4-byte load are the tap's luma and its right neighbour's, moved to bytes 0 and 1 so the
// gray arithmetic applies unchanged.
INLINE AVX2 __m256i luma422x8(const uint32_t *entries, const uint8_t *base, ptrdiff_t row_bytes, int loads) {
    const __m256i pairs = _mm256_setr_epi8(0, 2, -1, -1, 4, 6, -1, -1, 8, 10, -1, -1, 12, 14, -1, -1,
                                           0, 2, -1, -1, 4, 6, -1, -1, 8, 10, -1, -1, 12, 14, -1, -1);
    __m256i e;
    uint32_t o[8];
    const __m256i offsets = offsets8(entries, &e, o, loads);
    return blend8(e, _mm256_shuffle_epi8(fetch8(base, offsets, o, loads), pairs),
                  _mm256_shuffle_epi8(fetch8(base + row_bytes, offsets, o, loads), pairs));
}

INLINE AVX2 ptrdiff_t bilinear_422(const uint32_t *luma_entries, const uint32_t *chroma_entries,
                                   ptrdiff_t count, const uint8_t *luma_base, const uint8_t *chroma_base,
                                   ptrdiff_t row_bytes, int32_t luma_byte, uint8_t *out, int loads) {
    // The chroma bytes of each macropixel: 1 and 3 (YUYV) or 0 and 2 (UYVY).
    const __m256i chroma_bytes = _mm256_set1_epi32(luma_byte ? 0x00FF00FF : (int)0xFF00FF00);
    ptrdiff_t k = 0;
    for (; k + 8 <= count; k += 8) {
        prefetch_taps(luma_entries, 2 * k, 2 * count, luma_base, row_bytes);
        __m256i y0 = luma422x8(luma_entries + 2 * k, luma_base, row_bytes, loads);
        __m256i y1 = luma422x8(luma_entries + 2 * k + 8, luma_base, row_bytes, loads);
        // Sixteen 16-bit lumas in order (the pack interleaves 64-bit halves of y0 and y1):
        // macropixel j's 32-bit lane holds Y(2j) at byte 0 and Y(2j+1) at byte 2.
        __m256i lumas = _mm256_permute4x64_epi64(_mm256_packus_epi32(y0, y1), 0xD8);
        if (luma_byte) lumas = _mm256_slli_epi16(lumas, 8);
        // Each macropixel's four bytes blended as one 4-byte sample; only its chroma is kept.
        __m256i chroma = _mm256_and_si256(quad8(chroma_entries + k, chroma_base, row_bytes, 4, loads), chroma_bytes);
        _mm256_storeu_si256((__m256i *)(out + 4 * k), _mm256_or_si256(lumas, chroma));
    }
    return k;
}

// The exported kernels: each body instantiated with both ways of fetching taps (the
// header declares them).
#define ROW_KERNEL(NAME, BODY)                                                                          \
    AVX2 ptrdiff_t NAME(const uint32_t *entries, ptrdiff_t start, ptrdiff_t end, const uint8_t *base,    \
                        ptrdiff_t row_bytes, uint8_t *out, int32_t loads) {                             \
        return loads ? BODY(entries, start, end, base, row_bytes, out, 1)                                \
                     : BODY(entries, start, end, base, row_bytes, out, 0);                               \
    }

ROW_KERNEL(parallax_remap_gray_bilinear_avx2, gray_bilinear)
ROW_KERNEL(parallax_remap_packed4_bilinear_avx2, packed4_bilinear)
ROW_KERNEL(parallax_remap_packed3_bilinear_avx2, packed3_bilinear)
ROW_KERNEL(parallax_remap_nv12_chroma_bilinear_avx2, nv12_chroma_bilinear)

AVX2 ptrdiff_t parallax_remap_422_bilinear_avx2(const uint32_t *luma_entries, const uint32_t *chroma_entries,
                                                ptrdiff_t count, const uint8_t *luma_base, const uint8_t *chroma_base,
                                                ptrdiff_t row_bytes, int32_t luma_byte, uint8_t *out, int32_t loads) {
#define CALL(L) bilinear_422(luma_entries, chroma_entries, count, luma_base, chroma_base, row_bytes, luma_byte, out, L)
    return loads ? CALL(1) : CALL(0);
#undef CALL
}

#else

parallax_simd_level parallax_remap_simd_level(void) { return PARALLAX_SIMD_BASELINE; }
parallax_simd_level parallax_map_simd_level(void) { return PARALLAX_SIMD_BASELINE; }
int32_t parallax_avx2_taps_by_loads(void) { return 0; }

// Never called on this architecture (the level above is the baseline); defined so the
// Swift side links everywhere.
ptrdiff_t parallax_remap_gray_bilinear_avx2(const uint32_t *e, ptrdiff_t s, ptrdiff_t end, const uint8_t *b,
                                            ptrdiff_t r, uint8_t *o, int32_t l) { (void)e; (void)end; (void)b; (void)r; (void)o; (void)l; return s; }
ptrdiff_t parallax_remap_packed4_bilinear_avx2(const uint32_t *e, ptrdiff_t s, ptrdiff_t end, const uint8_t *b,
                                               ptrdiff_t r, uint8_t *o, int32_t l) { (void)e; (void)end; (void)b; (void)r; (void)o; (void)l; return s; }
ptrdiff_t parallax_remap_packed3_bilinear_avx2(const uint32_t *e, ptrdiff_t s, ptrdiff_t end, const uint8_t *b,
                                               ptrdiff_t r, uint8_t *o, int32_t l) { (void)e; (void)end; (void)b; (void)r; (void)o; (void)l; return s; }
ptrdiff_t parallax_remap_nv12_chroma_bilinear_avx2(const uint32_t *e, ptrdiff_t s, ptrdiff_t end, const uint8_t *b,
                                                   ptrdiff_t r, uint8_t *o, int32_t l) { (void)e; (void)end; (void)b; (void)r; (void)o; (void)l; return s; }
ptrdiff_t parallax_remap_422_bilinear_avx2(const uint32_t *l, const uint32_t *c, ptrdiff_t n, const uint8_t *lb,
                                           const uint8_t *cb, ptrdiff_t r, int32_t y, uint8_t *o, int32_t loads) {
    (void)l; (void)c; (void)n; (void)lb; (void)cb; (void)r; (void)y; (void)o; (void)loads; return 0;
}

#endif
