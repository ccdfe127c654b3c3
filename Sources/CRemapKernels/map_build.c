// Map building: rows of float source positions from a pinhole or Brown–Conrady camera, and
// rows of float maps compiled into the kernels' packed entries (see include/CRemapKernels.h).
//
// Each loop is written once, as an always-inline body, and instantiated for the
// architecture's baseline and, on x86-64, inside functions with target("avx2,fma") and
// target("…avx512…"), where the compiler vectorises the same body four doubles (eight
// floats) or eight doubles (sixteen floats) wide. Floating-point contraction is off, so no
// instance fuses a multiply and an add: every level performs the same IEEE operations in
// the same order and gives the same bits. (The positions are OpenCV's
// initUndistortRectifyMap arithmetic, one reciprocal of z for both coordinates; they may
// differ from CameraModel.project, which divides, in the last bit of a double.)
#include "CRemapKernels.h"

#include <float.h>
#include <math.h>
#include <string.h>

#pragma clang fp contract(off)

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_AVX2_VARIANT 1
#define AVX2 __attribute__((target("avx2,fma")))
#define AVX512 __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")))
#else
#define HAVE_AVX2_VARIANT 0
#endif

#define INLINE static inline __attribute__((always_inline))

// One row of positions. `rational` and `distorted` are constants at each call site, so the
// compiler emits a branch-free loop for each model.
INLINE void brown_row(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                      ptrdiff_t width, float *xs, float *ys, int distorted, int rational) {
    const double ox = origin[0], oy = origin[1], oz = origin[2];
    const double sx = step[0], sy = step[1], sz = step[2];
    const double fx = lens->fx, fy = lens->fy, cx = lens->cx, cy = lens->cy, skew = lens->skew;
    const double k1 = lens->k1, k2 = lens->k2, k3 = lens->k3, k4 = lens->k4, k5 = lens->k5, k6 = lens->k6;
    const double p1 = lens->p1, p2 = lens->p2;
    // One vector register of doubles per value (4 with AVX2, 8 with AVX-512): wider
    // unrolling runs out of registers.
#pragma clang loop interleave_count(1)
    // A 32-bit counter: AVX2 converts int32 lanes to double in one instruction, int64 lanes
    // in many (map widths are far below 2^31).
    for (int32_t u = 0; u < (int32_t)width; u++) {
        const double t = (double)u;
        const double rx = ox + t * sx, ry = oy + t * sy, rz = oz + t * sz;
        // One division for both coordinates, as OpenCV's initUndistortRectifyMap does.
        const double w = 1 / rz;
        double x = rx * w, y = ry * w;
        if (distorted) {
            const double x2 = x * x, y2 = y * y, r2 = x2 + y2, xy2 = 2 * x * y;
            double radial = 1 + r2 * (k1 + r2 * (k2 + r2 * k3));
            // Without k4–k6 the denominator is exactly 1 wherever r2 is finite, and where it
            // is not the position is not finite either way: skipping the division keeps the bits.
            if (rational) radial = radial / (1 + r2 * (k4 + r2 * (k5 + r2 * k6)));
            const double xd = x * radial + p1 * xy2 + p2 * (r2 + 2 * x2);
            const double yd = y * radial + p1 * (r2 + 2 * y2) + p2 * xy2;
            x = xd;
            y = yd;
        }
        const double px = fx * x + skew * y + cx, py = fy * y + cy;
        // Behind the camera, or no finite pixel: no source point.
        // (Bitwise, not &&: short-circuiting turns the selects into three masked stores.)
        const int defined = (rz > 0) & (fabs(px) <= DBL_MAX) & (fabs(py) <= DBL_MAX);
        const float fx32 = (float)px, fy32 = (float)py;
        xs[u] = defined ? fx32 : NAN;
        ys[u] = defined ? fy32 : NAN;
    }
}

INLINE void brown_row_any(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                          ptrdiff_t width, float *xs, float *ys) {
    if (!lens->distorted) brown_row(lens, origin, step, width, xs, ys, 0, 0);
    else if (lens->rational) brown_row(lens, origin, step, width, xs, ys, 1, 1);
    else brown_row(lens, origin, step, width, xs, ys, 1, 0);
}

static void brown_row_baseline(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                               ptrdiff_t width, float *xs, float *ys) {
    brown_row_any(lens, origin, step, width, xs, ys);
}

#if HAVE_AVX2_VARIANT
AVX512 static void brown_row_avx512(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                                    ptrdiff_t width, float *xs, float *ys) {
    brown_row_any(lens, origin, step, width, xs, ys);
}

AVX2 static void brown_row_avx2(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                                ptrdiff_t width, float *xs, float *ys) {
    brown_row_any(lens, origin, step, width, xs, ys);
}
#endif

void parallax_map_row_brown(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                            ptrdiff_t width, float *xs, float *ys, parallax_simd_level level) {
#if HAVE_AVX2_VARIANT
    if (level == PARALLAX_SIMD_AVX512) {
        brown_row_avx512(lens, origin, step, width, xs, ys);
        return;
    }
    if (level == PARALLAX_SIMD_AVX2) {
        brown_row_avx2(lens, origin, step, width, xs, ys);
        return;
    }
#endif
    (void)level;
    brown_row_baseline(lens, origin, step, width, xs, ys);
}

// MARK: Compiling

// One position quantised as OpenCV's convertMaps does. |x| < 2^16 rejects NaN, infinities
// and positions far outside any image, and keeps 32 x below 2^21, where adding 1.5 · 2^23
// leaves no fraction bits: the sum rounds to the nearest integer, ties to even, as OpenCV's
// cvRound (and vectorises, unlike rintf). Undefined positions quantise as (0, 0), which keeps
// every product in range; `defined` tells them apart.
typedef struct {
    int32_t ix, iy, fractions, defined;
} quantised;

INLINE int32_t round32(float v) { return (int32_t)((v * 32.0f + 12582912.0f) - 12582912.0f); }

INLINE int32_t first_tap(int32_t q, int32_t nearest, int32_t lead) {
    return nearest ? (q + 16) >> 5 : (q >> 5) - lead;
}

// `nearest` and `lead` as in parallax_compile_params (passed as values, so that loops keep
// them in registers).
INLINE quantised quantise(float x, float y, int32_t nearest, int32_t lead) {
    const int defined = fabsf(x) < 65536.0f && fabsf(y) < 65536.0f;
    const int32_t qx = defined ? round32(x) : 0, qy = defined ? round32(y) : 0;
    quantised r;
    r.ix = first_tap(qx, nearest, lead);
    r.iy = first_tap(qy, nearest, lead);
    r.fractions = nearest ? 0 : (qy & 31) << 5 | (qx & 31);
    r.defined = defined;
    return r;
}

// The first tap row no inside sample of the row lies above: that of the smallest y among
// the positions that can be inside at all. Taps are monotonic in y, so every inside
// sample's offset from this row's start is ≥ 0.
INLINE int32_t lowest_tap_row(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p) {
    const float right = (float)p->source_width + 1.0f, bottom = (float)p->source_height + 1.0f;
    const int32_t nearest = p->nearest, lead = p->lead;
    const float *restrict row_x = xs, *restrict row_y = ys;
    int32_t lowest = INT32_MAX;
    for (ptrdiff_t u = 0; u < width; u++) {
        const float x = row_x[u], y = row_y[u];
        // An inside sample has both first taps ≥ 0 and within the source: x, y > −1 and below
        // the far edge + 1. (NaN fails every comparison.)
        const int possible = (x > -1.0f) & (x < right) & (y > -1.0f) & (y < bottom);
        const int32_t tap = first_tap(round32(possible ? y : 0.0f), nearest, lead);
        const int32_t candidate = possible ? tap : INT32_MAX; // a plain min: vectorises as a reduction
        lowest = candidate < lowest ? candidate : lowest;
    }
    if (lowest == INT32_MAX) return 0;
    return lowest > 0 ? lowest : 0;
}

// Quantises one row and writes every sample's packed entry (0 where the sample is not
// inside the source or its offset from `base` does not fit), with the inside flags. `Int` is
// int32_t where every offset of the plane fits 31 bits (any real image), int64_t otherwise,
// so the common case vectorises eight samples wide.
#define PACK_ROW(NAME, Int)                                                                                  \
    INLINE void NAME(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p,   \
                     Int base, uint32_t *entries, uint8_t *inside) {                                         \
        const Int source_width = (Int)p->source_width, source_height = (Int)p->source_height;              \
        const Int row_bytes = (Int)p->source_row_bytes, stride = (Int)p->pixel_stride;                      \
        const Int spare = (Int)p->spare, vector_read = (Int)p->vector_read, readable = (Int)p->readable;    \
        const Int taps = (Int)p->taps;                                                                       \
        const int32_t nearest = p->nearest, lead = p->lead;                                                  \
        /* Local restrict pointers: the stores cannot alias the inputs. */                                  \
        const float *restrict row_x = xs, *restrict row_y = ys;                                              \
        uint32_t *restrict out = entries;                                                                    \
        uint8_t *restrict flags = inside;                                                                    \
        for (ptrdiff_t u = 0; u < width; u++) {                                                              \
            const quantised q = quantise(row_x[u], row_y[u], nearest, lead);                                 \
            const Int wx = q.ix, wy = q.iy;                                                                  \
            const Int offset = wy * row_bytes + wx * stride - base;                                          \
            const int in = q.defined & (wx >= 0) & (wy >= 0) & (wx + taps + spare <= source_width)                       \
                & (wy + taps <= source_height) & ((wy + taps - 1) * row_bytes + wx * stride + vector_read <= readable) \
                & (offset < PARALLAX_COMPILED_OFFSET_LIMIT);                                                 \
            out[u] = in ? (uint32_t)offset << 10 | (uint32_t)q.fractions : 0;                                \
            flags[u] = (uint8_t)in;                                                                          \
        }                                                                                                    \
    }

PACK_ROW(pack_row32, int32_t)
PACK_ROW(pack_row64, int64_t)

INLINE uint64_t load8(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

INLINE void compile_row(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p,
                        const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row) {
    // 32-bit arithmetic is exact when the largest offset a sample can produce, and the
    // largest sum formed on the way, stay below 2^31: positions are below 2^16 + 4, so
    // bound the plane by (2^16 + 8) rows and columns of the real strides.
    const int64_t bound = ((int64_t)1 << 16) + 8;
    const int narrow = p->source_row_bytes >= 0 && p->pixel_stride >= 0
        && bound * (p->source_row_bytes + p->pixel_stride) + p->vector_read + p->readable < INT32_MAX;
    const int64_t base = (int64_t)lowest_tap_row(xs, ys, width, p) * p->source_row_bytes;
    uint8_t *inside = scratch->inside;
    if (narrow) pack_row32(xs, ys, width, p, (int32_t)base, entries, inside);
    else pack_row64(xs, ys, width, p, base, entries, inside);
    // The longest run of inside samples whose offset fits.
    ptrdiff_t best_start = 0, best_length = 0, u = 0;
    while (u < width) {
        // Eight flags at a time where they are all equal (most of a row is one run).
        while (u + 8 <= width && load8(inside + u) == 0) u += 8;
        while (u < width && !inside[u]) u++;
        const ptrdiff_t start = u;
        while (u + 8 <= width && load8(inside + u) == 0x0101010101010101ull) u += 8;
        while (u < width && inside[u]) u++;
        if (u - start > best_length) {
            best_start = start;
            best_length = u - start;
        }
    }
    // The few samples outside the span, for the caller's side table.
    for (ptrdiff_t k = 0; k < width; k++) {
        if (k == best_start) k += best_length;
        if (k >= width) break;
        const quantised q = quantise(xs[k], ys[k], p->nearest, p->lead);
        scratch->tap_x[k] = q.defined ? q.ix : INT32_MIN;
        scratch->tap_y[k] = q.defined ? q.iy : INT32_MIN;
        scratch->fractions[k] = q.fractions;
    }
    row->base = base;
    row->span_start = best_start;
    row->span_end = best_start + best_length;
}

static void compile_row_baseline(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p,
                                 const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row) {
    compile_row(xs, ys, width, p, scratch, entries, row);
}

#if HAVE_AVX2_VARIANT
AVX512 static void compile_row_avx512(const float *xs, const float *ys, ptrdiff_t width,
                                      const parallax_compile_params *p, const parallax_compile_scratch *scratch,
                                      uint32_t *entries, parallax_compiled_row *row) {
    compile_row(xs, ys, width, p, scratch, entries, row);
}

AVX2 static void compile_row_avx2(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p,
                                  const parallax_compile_scratch *scratch, uint32_t *entries,
                                  parallax_compiled_row *row) {
    compile_row(xs, ys, width, p, scratch, entries, row);
}
#endif

void parallax_compile_row(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *params,
                          const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row,
                          parallax_simd_level level) {
#if HAVE_AVX2_VARIANT
    if (level == PARALLAX_SIMD_AVX512) {
        compile_row_avx512(xs, ys, width, params, scratch, entries, row);
        return;
    }
    if (level == PARALLAX_SIMD_AVX2) {
        compile_row_avx2(xs, ys, width, params, scratch, entries, row);
        return;
    }
#endif
    (void)level;
    compile_row_baseline(xs, ys, width, params, scratch, entries, row);
}
