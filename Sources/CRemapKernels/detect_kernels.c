// Chessboard detection's per-pixel passes (ParallaxCalibration's GrayImage and
// ChessboardDetector call them): a separable blur and the saddle response with its first
// maximum test. Like map_build.c, each loop is written once and instantiated for the
// baseline and, on x86-64, with target("avx2,fma") and the AVX-512 set; contraction is off,
// so every instance performs the same IEEE operations in the same order on each pixel and
// gives the same bits (the compiler only chooses how many pixels share a register).
#include "CRemapKernels.h"

#include <math.h>
#include <string.h>

#pragma clang fp contract(off)

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_WIDE_VARIANTS 1
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")))
#else
#define HAVE_WIDE_VARIANTS 0
#endif

#define INLINE static inline __attribute__((always_inline))

// Sixteen pixels per step in clang's vector type (one register with AVX-512, two with AVX2,
// four with SSE2): each lane sums its taps exactly as the scalar tails do.
#define LANES 16
typedef float lanes __attribute__((ext_vector_type(LANES)));
typedef int32_t peak_mask __attribute__((ext_vector_type(LANES)));
// Kernels longer than this (a blur σ of 30 px at 3 σ) go through the scalar sums only.
#define MAX_TAPS 181

// Returning a 64-byte vector changes the calling convention between the levels, which clang
// warns about at every call (-Wpsabi); load_lanes is always inlined, so no call remains.
#pragma clang diagnostic ignored "-Wpsabi"

INLINE lanes load_lanes(const float *p) {
    lanes v;
    memcpy(&v, p, sizeof v);
    return v;
}

// out[x] = Σ_t k[t] · tap[t][x + shift] for x in [from, to), summed from 0 in t order: two
// vectors of sums per step (one vector's additions wait on each other), then one, then
// single pixels. Both blur passes run through here.
INLINE void weighted_taps(const float *const *tap, ptrdiff_t shift, const float *restrict kernel, int32_t taps,
                          float *restrict out, ptrdiff_t from, ptrdiff_t to) {
    ptrdiff_t x = from;
    for (; x + 2 * LANES <= to; x += 2 * LANES) {
        lanes a = (lanes){0}, b = (lanes){0};
        for (int32_t t = 0; t < taps; t++) {
            a += kernel[t] * load_lanes(tap[t] + x + shift);
            b += kernel[t] * load_lanes(tap[t] + x + shift + LANES);
        }
        memcpy(out + x, &a, sizeof a);
        memcpy(out + x + LANES, &b, sizeof b);
    }
    for (; x + LANES <= to; x += LANES) {
        lanes acc = (lanes){0};
        for (int32_t t = 0; t < taps; t++) acc += kernel[t] * load_lanes(tap[t] + x + shift);
        memcpy(out + x, &acc, sizeof acc);
    }
    for (; x < to; x++) {
        float sum = 0;
        for (int32_t t = 0; t < taps; t++) sum += kernel[t] * tap[t][x + shift];
        out[x] = sum;
    }
}

// Rows: out[x] = Σ_t k[t] · in[clamp(x − radius + t)], summed from 0 in t order. The interior
// needs no clamping (tap t of pixel x is in[t + x − radius]); kernels longer than MAX_TAPS
// leave it empty and go through the clamped sums only.
INLINE void blur_rows(const float *restrict src, float *restrict dst, ptrdiff_t width, ptrdiff_t height,
                      const float *restrict kernel, int32_t taps) {
    const ptrdiff_t radius = taps / 2;
    const ptrdiff_t first = radius < width ? radius : width, interior_end = width - radius > first ? width - radius : first;
    const ptrdiff_t last = taps <= MAX_TAPS ? interior_end : first;
    for (ptrdiff_t y = 0; y < height; y++) {
        const float *in = src + y * width;
        float *restrict out = dst + y * width;
        const float *tap[MAX_TAPS];
        for (int32_t t = 0; t < taps && t < MAX_TAPS; t++) tap[t] = in + t;
        weighted_taps(tap, -radius, kernel, taps, out, first, last);
        // The borders, the edge pixel repeated.
        for (ptrdiff_t x = 0; x < width; x++) {
            if (x >= first && x < last) {
                x = last - 1;
                continue;
            }
            float sum = 0;
            for (int32_t t = 0; t < taps; t++) {
                ptrdiff_t at = x - radius + t;
                at = at < 0 ? 0 : (at > width - 1 ? width - 1 : at);
                sum += kernel[t] * in[at];
            }
            out[x] = sum;
        }
    }
}

// Columns: out[y][x] = Σ_t k[t] · in[clamp(y − radius + t)][x], summed from 0 in t order.
INLINE void blur_columns(const float *restrict src, float *restrict dst, ptrdiff_t width, ptrdiff_t height,
                         const float *restrict kernel, int32_t taps) {
    const ptrdiff_t radius = taps / 2;
    for (ptrdiff_t y = 0; y < height; y++) {
        float *restrict out = dst + y * width;
        if (taps > MAX_TAPS) {
            for (ptrdiff_t x = 0; x < width; x++) {
                float sum = 0;
                for (int32_t t = 0; t < taps; t++) {
                    ptrdiff_t row = y - radius + t;
                    row = row < 0 ? 0 : (row > height - 1 ? height - 1 : row);
                    sum += kernel[t] * src[row * width + x];
                }
                out[x] = sum;
            }
            continue;
        }
        const float *rows[MAX_TAPS];
        for (int32_t t = 0; t < taps; t++) {
            ptrdiff_t row = y - radius + t;
            row = row < 0 ? 0 : (row > height - 1 ? height - 1 : row);
            rows[t] = src + row * width;
        }
        weighted_taps(rows, 0, kernel, taps, out, 0, width);
    }
}

// max(0, dxy² − dxx·dyy) from second differences, for pixels `border` or more inside the
// image; the rest of `response` is left as it is.
INLINE void saddle_response(const float *restrict p, float *restrict r, ptrdiff_t w, ptrdiff_t h, ptrdiff_t border) {
    for (ptrdiff_t y = border; y < h - border; y++) {
        for (ptrdiff_t x = border; x < w - border; x++) {
            const ptrdiff_t i = y * w + x;
            const float dxx = p[i - 1] - 2 * p[i] + p[i + 1];
            const float dyy = p[i - w] - 2 * p[i] + p[i + w];
            const float dxy = (p[i + w + 1] - p[i + w - 1] - p[i - w + 1] + p[i - w - 1]) * 0.25f;
            const float s = dxy * dxy - dxx * dyy;
            r[i] = s > 0 ? s : 0;
        }
    }
}

// Appends to `found` (room for `capacity`) the index y·w + x of every pixel at least `border`
// inside the image whose response reaches `threshold` and none of its four direct
// neighbours' exceeds; `*total` is how many there are (those past `capacity` are counted only).
INLINE void response_peaks(const float *restrict r, ptrdiff_t w, ptrdiff_t h, ptrdiff_t border, float threshold,
                           int32_t *restrict found, ptrdiff_t capacity, ptrdiff_t *total) {
    ptrdiff_t count = 0;
    for (ptrdiff_t y = border; y < h - border; y++) {
        const float *row = r + y * w;
        ptrdiff_t x = border;
        for (; x + LANES <= w - border; x += LANES) {
            const lanes v = load_lanes(row + x);
            const lanes left = load_lanes(row + x - 1), right = load_lanes(row + x + 1);
            const lanes up = load_lanes(row + x - w), down = load_lanes(row + x + w);
            const peak_mask peak = (v >= threshold) & (v >= left) & (v >= right) & (v >= up) & (v >= down);
            // Most blocks have no candidate at all.
            uint64_t words[sizeof peak / 8], any = 0;
            memcpy(words, &peak, sizeof peak);
            for (size_t k = 0; k < sizeof words / 8; k++) any |= words[k];
            if (!any) continue;
            for (int32_t k = 0; k < LANES; k++) {
                if (peak[k]) {
                    if (count < capacity) found[count] = (int32_t)(y * w + x + k);
                    count++;
                }
            }
        }
        for (; x < w - border; x++) {
            const float v = row[x];
            if (v >= threshold && v >= row[x - 1] && v >= row[x + 1] && v >= row[x - w] && v >= row[x + w]) {
                if (count < capacity) found[count] = (int32_t)(y * w + x);
                count++;
            }
        }
    }
    *total = count;
}

#define INSTANCES(NAME, PARAMS, ARGS)                        \
    static void NAME##_baseline PARAMS { NAME ARGS; }        \
    WIDE_INSTANCES(NAME, PARAMS, ARGS)

#if HAVE_WIDE_VARIANTS
#define WIDE_INSTANCES(NAME, PARAMS, ARGS)                   \
    AVX2 static void NAME##_avx2 PARAMS { NAME ARGS; }       \
    AVX512 static void NAME##_avx512 PARAMS { NAME ARGS; }
#define DISPATCH(NAME, ARGS, level)                                      \
    do {                                                                 \
        if ((level) == PARALLAX_SIMD_AVX512) NAME##_avx512 ARGS;         \
        else if ((level) == PARALLAX_SIMD_AVX2) NAME##_avx2 ARGS;        \
        else NAME##_baseline ARGS;                                       \
    } while (0)
#else
#define WIDE_INSTANCES(NAME, PARAMS, ARGS)
#define DISPATCH(NAME, ARGS, level) \
    do {                            \
        (void)(level);              \
        NAME##_baseline ARGS;       \
    } while (0)
#endif

INSTANCES(blur_rows,
          (const float *src, float *dst, ptrdiff_t width, ptrdiff_t height, const float *kernel, int32_t taps),
          (src, dst, width, height, kernel, taps))
INSTANCES(blur_columns,
          (const float *src, float *dst, ptrdiff_t width, ptrdiff_t height, const float *kernel, int32_t taps),
          (src, dst, width, height, kernel, taps))
INSTANCES(saddle_response, (const float *p, float *r, ptrdiff_t w, ptrdiff_t h, ptrdiff_t border), (p, r, w, h, border))

INSTANCES(response_peaks,
          (const float *r, ptrdiff_t w, ptrdiff_t h, ptrdiff_t border, float threshold, int32_t *found,
           ptrdiff_t capacity, ptrdiff_t *total),
          (r, w, h, border, threshold, found, capacity, total))

ptrdiff_t parallax_response_peaks(const float *response, ptrdiff_t width, ptrdiff_t height, ptrdiff_t border,
                                  float threshold, int32_t *found, ptrdiff_t capacity, parallax_simd_level level) {
    ptrdiff_t total = 0;
    DISPATCH(response_peaks, (response, width, height, border, threshold, found, capacity, &total), level);
    return total;
}

void parallax_blur_rows(const float *src, float *dst, ptrdiff_t width, ptrdiff_t height, const float *kernel,
                        int32_t taps, parallax_simd_level level) {
    DISPATCH(blur_rows, (src, dst, width, height, kernel, taps), level);
}

void parallax_blur_columns(const float *src, float *dst, ptrdiff_t width, ptrdiff_t height, const float *kernel,
                           int32_t taps, parallax_simd_level level) {
    DISPATCH(blur_columns, (src, dst, width, height, kernel, taps), level);
}

void parallax_saddle_response(const float *pixels, float *response, ptrdiff_t width, ptrdiff_t height,
                              ptrdiff_t border, parallax_simd_level level) {
    DISPATCH(saddle_response, (pixels, response, width, height, border), level);
}

// MARK: Ring test

// GrayImage.sample: bilinear at (x, y), clamped to the image (at least 2 × 2), written with
// the Swift function's operations in its order (min and max as the standard library's).
INLINE float ring_sample(const float *p, ptrdiff_t w, ptrdiff_t h, double x, double y) {
    const double lx = 0 >= x ? 0 : x, ly = 0 >= y ? 0 : y;  // max(x, 0)
    const double cx = (double)(w - 1) < lx ? (double)(w - 1) : lx, cy = (double)(h - 1) < ly ? (double)(h - 1) : ly;
    const ptrdiff_t ix = (ptrdiff_t)cx, iy = (ptrdiff_t)cy;
    const ptrdiff_t x0 = w - 2 < ix ? w - 2 : ix, y0 = h - 2 < iy ? h - 2 : iy;
    const float fx = (float)(cx - (double)x0), fy = (float)(cy - (double)y0);
    const ptrdiff_t i = y0 * w + x0;
    const float top = p[i] + (p[i + 1] - p[i]) * fx;
    const float bottom = p[i + w] + (p[i + w + 1] - p[i + w]) * fx;
    return top + (bottom - top) * fy;
}

// ChessboardDetector's test of one ring of samples: contrast, point symmetry, four sign changes.
static int ring_alternates(const float *v, int32_t n) {
    float mean = 0, lo = v[0], hi = v[0];
    for (int32_t k = 0; k < n; k++) {
        mean += v[k];
        lo = v[k] < lo ? v[k] : lo;
        hi = v[k] >= hi ? v[k] : hi;
    }
    mean /= (float)n;
    if (hi - lo < 12) return 0;
    float asymmetry = 0, spread = 0;
    for (int32_t k = 0; k < n / 2; k++) asymmetry += fabsf(v[k] - v[k + n / 2]);
    for (int32_t k = 0; k < n; k++) spread += fabsf(v[k] - mean);
    if (asymmetry > 0.5f * spread) return 0;
    const float band = 0.15f * (hi - lo);
    int first = 0, previous = 0, changes = 0;
    for (int32_t k = 0; k < n; k++) {
        const int sign = v[k] > mean + band ? 1 : (v[k] < mean - band ? -1 : 0);
        if (sign == 0) continue;
        if (first == 0) first = sign;
        else if (sign != previous) changes++;
        previous = sign;
    }
    if (first == 0) return 0;
    if (previous != first) changes++;
    return changes == 4;
}

// The samples of one ring; with AVX2 or AVX-512 the compiler gathers several at once.
INLINE void ring_samples(const float *pixels, ptrdiff_t width, ptrdiff_t height, double x, double y,
                         const double *ring_x, const double *ring_y, int32_t count, double radius, float *values) {
    for (int32_t k = 0; k < count; k++)
        values[k] = ring_sample(pixels, width, height, x + ring_x[k] * radius, y + ring_y[k] * radius);
}

INSTANCES(ring_samples,
          (const float *pixels, ptrdiff_t width, ptrdiff_t height, double x, double y, const double *ring_x,
           const double *ring_y, int32_t count, double radius, float *values),
          (pixels, width, height, x, y, ring_x, ring_y, count, radius, values))

int32_t parallax_ring_test(const float *pixels, ptrdiff_t width, ptrdiff_t height, double x, double y,
                           const double *ring_x, const double *ring_y, int32_t count, parallax_simd_level level) {
    float values[64];
    if (count > 64) count = 64;
    for (int pass = 0; pass < 2; pass++) {
        const double radius = pass == 0 ? 3.0 : 5.0;
        DISPATCH(ring_samples, (pixels, width, height, x, y, ring_x, ring_y, count, radius, values), level);
        if (ring_alternates(values, count)) return 1;
    }
    return 0;
}
