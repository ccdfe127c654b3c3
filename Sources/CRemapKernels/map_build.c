// Map building: rows of float source positions from a pinhole or Brown–Conrady camera, the
// same rows quantised to 1/32 pixel for a compiled map (most positions without evaluating
// the lens), and rows of either kind compiled into the kernels' packed entries (see
// include/CRemapKernels.h).
//
// Each loop is written once, as an always-inline body, and instantiated for the
// architecture's baseline and, on x86-64, inside functions with target("avx2,fma") and
// target("…avx512…"), where the compiler vectorises the same body four doubles (eight
// floats) or eight doubles (sixteen floats) wide. Floating-point contraction is off, so no
// instance fuses a multiply and an add: every level performs the same IEEE operations in
// the same order and gives the same bits. The exception is the quantised rows' fit and
// cubic, which fuse where the level can: they only decide which roundings are taken from the
// cubic, by a bound estimated from the nodes (see fit_block), and every position they decide
// is the exact position's rounding. So the same bits at every level rest on that bound, as
// correctness does; MapBuildingTests and Tests/CrossArchitecture compare every level with the
// exact rows. (The positions are OpenCV's
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

INLINE uint64_t load8(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

// Eight inside flags (bytes 0 or 1) that are all 1.
#define ALL_INSIDE 0x0101010101010101ull

// The bitwise or and and of 32 bytes as four words: zero only where all are zero, ALL_INSIDE
// only where all are 1.
INLINE uint64_t load32_or(const uint8_t *p) { return load8(p) | load8(p + 8) | load8(p + 16) | load8(p + 24); }
INLINE uint64_t load32_and(const uint8_t *p) { return load8(p) & load8(p + 8) & load8(p + 16) & load8(p + 24); }

// The lens and the ray of one row, as plain values: the loops below keep them in registers.
typedef struct {
    double ox, oy, oz, sx, sy, sz;
    double fx, fy, cx, cy, skew;
    double k1, k2, k3, k4, k5, k6, p1, p2;
} brown_constants;

INLINE brown_constants brown_setup(const parallax_brown_lens *lens, const double origin[3], const double step[3]) {
    brown_constants c;
    c.ox = origin[0], c.oy = origin[1], c.oz = origin[2];
    c.sx = step[0], c.sy = step[1], c.sz = step[2];
    c.fx = lens->fx, c.fy = lens->fy, c.cx = lens->cx, c.cy = lens->cy, c.skew = lens->skew;
    c.k1 = lens->k1, c.k2 = lens->k2, c.k3 = lens->k3, c.k4 = lens->k4, c.k5 = lens->k5, c.k6 = lens->k6;
    c.p1 = lens->p1, c.p2 = lens->p2;
    return c;
}

// The source pixel of the ray origin + t·step, in double precision; returns whether it is
// defined (in front of the camera, finite). `rational` and `distorted` are constants at each
// call site, so the compiler emits a branch-free loop for each model.
INLINE int brown_point(const brown_constants c, double t, int distorted, int rational, double *px_out,
                       double *py_out) {
    const double rx = c.ox + t * c.sx, ry = c.oy + t * c.sy, rz = c.oz + t * c.sz;
    // One division for both coordinates, as OpenCV's initUndistortRectifyMap does.
    const double w = 1 / rz;
    double x = rx * w, y = ry * w;
    if (distorted) {
        const double x2 = x * x, y2 = y * y, r2 = x2 + y2, xy2 = 2 * x * y;
        double radial = 1 + r2 * (c.k1 + r2 * (c.k2 + r2 * c.k3));
        // Without k4–k6 the denominator is exactly 1 wherever r2 is finite, and where it
        // is not the position is not finite either way: skipping the division keeps the bits.
        if (rational) radial = radial / (1 + r2 * (c.k4 + r2 * (c.k5 + r2 * c.k6)));
        const double xd = x * radial + c.p1 * xy2 + c.p2 * (r2 + 2 * x2);
        const double yd = y * radial + c.p1 * (r2 + 2 * y2) + c.p2 * xy2;
        x = xd;
        y = yd;
    }
    const double px = c.fx * x + c.skew * y + c.cx, py = c.fy * y + c.cy;
    *px_out = px;
    *py_out = py;
    // Behind the camera, or no finite pixel: no source point.
    // (Bitwise, not &&: short-circuiting turns the selects into three masked stores.)
    return (rz > 0) & (fabs(px) <= DBL_MAX) & (fabs(py) <= DBL_MAX);
}

// One row of positions: columns first, first + 1, …
INLINE void brown_row(const parallax_brown_lens *lens, const double origin[3], const double step[3], int32_t first,
                      ptrdiff_t width, float *xs, float *ys, int distorted, int rational) {
    const brown_constants c = brown_setup(lens, origin, step);
    // One vector register of doubles per value (4 with AVX2, 8 with AVX-512): wider
    // unrolling runs out of registers.
#pragma clang loop interleave_count(1)
    // A 32-bit counter: AVX2 converts int32 lanes to double in one instruction, int64 lanes
    // in many (map widths are far below 2^31).
    for (int32_t u = 0; u < (int32_t)width; u++) {
        double px, py;
        const int defined = brown_point(c, (double)(first + u), distorted, rational, &px, &py);
        const float fx32 = (float)px, fy32 = (float)py;
        xs[u] = defined ? fx32 : NAN;
        ys[u] = defined ? fy32 : NAN;
    }
}

// The same positions at listed columns: (xs[i], ys[i]) for column columns[i].
INLINE void brown_columns(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                          const int32_t *columns, ptrdiff_t count, float *xs, float *ys, int distorted, int rational) {
    const brown_constants c = brown_setup(lens, origin, step);
    const int32_t *restrict listed = columns;
#pragma clang loop interleave_count(1)
    for (ptrdiff_t i = 0; i < count; i++) {
        double px, py;
        const int defined = brown_point(c, (double)listed[i], distorted, rational, &px, &py);
        const float fx32 = (float)px, fy32 = (float)py;
        xs[i] = defined ? fx32 : NAN;
        ys[i] = defined ? fy32 : NAN;
    }
}

// The exact double positions at columns first, first + stride, … (NaN where undefined).
INLINE void brown_nodes(const parallax_brown_lens *lens, const double origin[3], const double step[3], int32_t first,
                        int32_t stride, ptrdiff_t count, double *xs, double *ys, int distorted, int rational) {
    const brown_constants c = brown_setup(lens, origin, step);
#pragma clang loop interleave_count(1)
    for (int32_t k = 0; k < (int32_t)count; k++) {
        double px, py;
        const int defined = brown_point(c, (double)(first + k * stride), distorted, rational, &px, &py);
        xs[k] = defined ? px : NAN;
        ys[k] = defined ? py : NAN;
    }
}

#define BY_MODEL(CALL)                                        \
    do {                                                      \
        if (!lens->distorted) CALL(0, 0);                     \
        else if (lens->rational) CALL(1, 1);                  \
        else CALL(1, 0);                                      \
    } while (0)

INLINE void brown_row_any(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                          ptrdiff_t width, float *xs, float *ys) {
#define ROW(D, R) brown_row(lens, origin, step, 0, width, xs, ys, D, R)
    BY_MODEL(ROW);
#undef ROW
}

// MARK: Quantising

// Positions are quantised as OpenCV's convertMaps does: round(32 x), ties to even. |x| < 2^16
// rejects NaN, infinities and positions far outside any image, and keeps 32 x below 2^21,
// where adding 1.5 · 2^23 leaves no fraction bits: the sum rounds to the nearest integer,
// ties to even, as OpenCV's cvRound (and vectorises, unlike rintf). Other positions quantise
// to PARALLAX_UNDEFINED_POSITION.
INLINE int32_t round32(float v) { return (int32_t)((v * 32.0f + 12582912.0f) - 12582912.0f); }

INLINE int32_t quantise_position(float x) { return fabsf(x) < 65536.0f ? round32(x) : PARALLAX_UNDEFINED_POSITION; }

// MARK: Quantised rows
//
// A compiled map needs round(32 x) of each float position, not the position itself. Between
// exact nodes every 16 columns, a cubic through four nodes gives the position to within a
// bound estimated from the nodes' fourth differences; where that puts 32 x clearly on one
// side of a rounding boundary (k + ½), the rounded value k is certain and the exact model is
// not evaluated. Every other sample (near a boundary, near an undefined node, at the row's
// ends) is computed exactly and quantised.

// (The span is at most 32: a bit per sample of an interval. 32 would halve the nodes and
// fits, but strong lenses' fourth differences grow sixteenfold and leave six times as many
// samples undecided, which costs more.)
enum { QUANTISED_SPAN = 16, QUANTISED_LEAD_NODES = 2 };

// Intervals are fitted and stored sixteen at a time, so that evaluating one reads all its
// coefficients at fixed distances from one address (separate arrays cost a register each).
enum { BLOCK_INTERVALS = 16 };

// The bits of the float 1.5 · 2^23. Adding that float to v (|v| < 2^22) leaves round(v),
// ties to even, in the low mantissa bits: the sum's bits minus these are round(v).
#define ROUNDING_BITS 0x4B400000

// Per interval of one axis: the cubic through nodes f[-1], f[0], f[1], f[2] (spacing 16) as
// 32 x = K0 + r0 + j (d1 + j (d2 + j d3)) for column 16 i + j (K0 an integer, |K0| < 2^21,
// stored less ROUNDING_BITS), and the largest distance |32 x − round(32 x)| at which the
// rounding is still certain (limit; negative: never).
typedef struct {
    float r0[BLOCK_INTERVALS], d1[BLOCK_INTERVALS], d2[BLOCK_INTERVALS], d3[BLOCK_INTERVALS];
    float limit[BLOCK_INTERVALS];
    int32_t k0[BLOCK_INTERVALS];
} axis_block;

typedef struct {
    axis_block x, y;
} interval_block;

INLINE ptrdiff_t quantised_block_count(ptrdiff_t width) {
    return (width / QUANTISED_SPAN + BLOCK_INTERVALS - 1) / BLOCK_INTERVALS;
}

// Nodes a row of `width` columns needs: columns 16 (k − 2) for k = 0 … count − 1, so that
// every whole interval [16 i, 16 i + 16) has nodes i − 2 … i + 3 around it.
INLINE ptrdiff_t quantised_node_count(ptrdiff_t width) { return width / QUANTISED_SPAN + 6; }

// The node arrays hold whole blocks' worth: the fit reads nodes i … i + 5 for every interval
// of a block, and those past the row's nodes are NaN, which no fit accepts. (At least
// quantised_node_count: the row's last interval may end a block.)
INLINE ptrdiff_t quantised_node_capacity(ptrdiff_t width) {
    return quantised_block_count(width) * BLOCK_INTERVALS + 6;
}

ptrdiff_t parallax_quantised_row_scratch_bytes(ptrdiff_t width) {
    const ptrdiff_t blocks = quantised_block_count(width), nodes = quantised_node_capacity(width);
    return blocks * (ptrdiff_t)sizeof(interval_block)                  // coefficients
        + 2 * nodes * (ptrdiff_t)sizeof(double)                        // node positions
        + (blocks * BLOCK_INTERVALS + 64) * (ptrdiff_t)sizeof(uint32_t) // undecided samples per interval
        + width * (ptrdiff_t)sizeof(int32_t)                            // listed columns
        + 2 * width * (ptrdiff_t)sizeof(float) + 192;                   // their exact positions, alignment slack
}

// One block of intervals of one axis; `f` holds the nodes from the block's first interval's
// node i − 2 on.
INLINE void fit_block(const double *nodes, axis_block *restrict out) {
    const double *restrict f = nodes;
    for (int i = 0; i < BLOCK_INTERVALS; i++) {
        // Fused multiply-adds where the level has them: the fit's rounding is far below the
        // bound's slack (the cubic need only be the one the bound describes).
#pragma clang fp contract(fast)
        // Nodes i … i + 5 are columns 16 (i − 2) … 16 (i + 3): fm2 = f(−2) … f3 = f(3).
        const double fm2 = f[i], fm1 = f[i + 1], f0 = f[i + 2], f1 = f[i + 3], f2 = f[i + 4], f3 = f[i + 5];
        // Lagrange cubic through t = −1, 0, 1, 2 (t in units of 16 columns). (Multiplied by
        // rounded reciprocals: the cubic need only be the one the bound describes, to within
        // far less than the bound's slack, and a division costs as much as the rest.)
        const double third = 1.0 / 3, sixth = 1.0 / 6;
        const double c1 = f1 - 0.5 * f0 - third * fm1 - sixth * f2;
        const double c2 = 0.5 * (fm1 + f1) - f0;
        const double c3 = sixth * (f2 - fm1) + 0.5 * (f0 - f1);
        // Its error on [0, 1] is at most (9/16) / 24 · h⁴ max|f⁗| ≈ 0.0234 |Δ⁴f|; the bound
        // takes 16 times the larger of the two fourth differences around the interval, plus
        // the float arithmetic below and half a float ulp of the position (at most 2^-24 |x|,
        // and |x| < size + 1 on the interval), so that the exact float, which rounding cannot
        // move across a boundary, cannot sit on one either.
        const double d4a = fabs(fm2 - 4 * fm1 + 6 * f0 - 4 * f1 + f2);
        const double d4b = fabs(fm1 - 4 * f0 + 6 * f1 - 4 * f2 + f3);
        const double d4 = d4a > d4b ? d4a : d4b;
        const double slope = fabs(c1) + fabs(c2) + fabs(c3), size = fabs(f0) + slope;
        // The float evaluation works on 32 (x − floor): its error grows with the slope terms,
        // not with the position, and stays below 2^-21 of them (five roundings of 2^-24 of
        // terms up to 32 times the slope, in units of 1/32); 2^-19 is four times that.
        const double bound = 0.375 * d4 + 0x1p-24 * (size + 1) + 0x1p-19 * (1 + slope) + 1e-7;
        const double scaled = 32 * f0, k0 = floor(scaled);
        // NaN anywhere (an undefined node) fails this test; so do positions too far out.
        const int ok = (fabs(fm2) + fabs(f3) + size < 60000.0) & (bound < 0.01);
        // Where the fit is unusable every sample is undecided (limit −1), and zeros keep the
        // conversion of K0 defined and the evaluation's values below 2^22, where the bits of
        // the rounding sum are the integer (NaN or huge nodes would give neither).
        out->k0[i] = (ok ? (int32_t)k0 : 0) - ROUNDING_BITS;
        out->r0[i] = ok ? (float)(scaled - k0) : 0.0f;
        // Per column instead of per node spacing (32 / 16^k: powers of two, exact).
        out->d1[i] = ok ? (float)(2 * c1) : 0.0f;
        out->d2[i] = ok ? (float)(0.125 * c2) : 0.0f;
        out->d3[i] = ok ? (float)(0x1p-7 * c3) : 0.0f;
        out->limit[i] = ok ? (float)(0.5 - 32 * bound) : -1.0f;
    }
}

// One interval (lane `i` of a block), both axes: writes k = round(32 x) and returns a bit per
// sample whose rounding is not certain in either axis (all of them where the fit is
// unusable: its limit is −1).
INLINE uint32_t eval_interval(const interval_block *block, int i, int32_t *restrict out_x, int32_t *restrict out_y) {
    const float rx = block->x.r0[i], x1 = block->x.d1[i], x2 = block->x.d2[i], x3 = block->x.d3[i];
    const float ry = block->y.r0[i], y1 = block->y.d1[i], y2 = block->y.d2[i], y3 = block->y.d3[i];
    const float limit_x = block->x.limit[i], limit_y = block->y.limit[i];
    const int32_t kx = block->x.k0[i], ky = block->y.k0[i];
    uint32_t undecided = 0;
    for (int32_t j = 0; j < QUANTISED_SPAN; j++) {
        // Fused multiply-adds where the level has them: fewer roundings than the bound allows for.
#pragma clang fp contract(fast)
        const float t = (float)j;
        const float vx = rx + t * (x1 + t * (x2 + t * x3)), vy = ry + t * (y1 + t * (y2 + t * y3));
        // Round to nearest (|v| < 2^22): the sum leaves no fraction bits, and its bits hold
        // the integer (see ROUNDING_BITS), so no conversion is needed.
        const float sx = vx + 12582912.0f, sy = vy + 12582912.0f;
        const float nx = sx - 12582912.0f, ny = sy - 12582912.0f;
        int32_t bits_x, bits_y;
        memcpy(&bits_x, &sx, sizeof bits_x);
        memcpy(&bits_y, &sy, sizeof bits_y);
        out_x[j] = bits_x + kx;
        out_y[j] = bits_y + ky;
        const int open = !(fabsf(vx - nx) < limit_x) | !(fabsf(vy - ny) < limit_y);
        undecided |= (uint32_t)open << j;
    }
    return undecided;
}

INLINE ptrdiff_t quantised_row(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                               ptrdiff_t width, int32_t *qx, int32_t *qy, void *scratch, int distorted,
                               int rational) {
    const ptrdiff_t node_count = quantised_node_count(width), intervals = width / QUANTISED_SPAN;
    const ptrdiff_t blocks = quantised_block_count(width), capacity = quantised_node_capacity(width);
    // Carve the scratch (see parallax_quantised_row_scratch_bytes).
    uintptr_t cursor = ((uintptr_t)scratch + 63) & ~(uintptr_t)63;
    interval_block *coefficients = (interval_block *)cursor;
    double *node_x = (double *)(coefficients + blocks);
    double *node_y = node_x + capacity;
    uint32_t *undecided = (uint32_t *)(node_y + capacity);
    int32_t *columns = (int32_t *)(undecided + blocks * BLOCK_INTERVALS + 64);
    float *exact_x = (float *)(columns + width);
    float *exact_y = exact_x + width;

    brown_nodes(lens, origin, step, -QUANTISED_LEAD_NODES * QUANTISED_SPAN, QUANTISED_SPAN, node_count, node_x, node_y,
                distorted, rational);
    for (ptrdiff_t k = node_count; k < capacity; k++) node_x[k] = node_y[k] = NAN;
    for (ptrdiff_t b = 0; b < blocks; b++) {
        fit_block(node_x + b * BLOCK_INTERVALS, &coefficients[b].x);
        fit_block(node_y + b * BLOCK_INTERVALS, &coefficients[b].y);
    }
    for (ptrdiff_t i = 0; i < intervals; i++) {
        const ptrdiff_t u = i * QUANTISED_SPAN;
        undecided[i] = eval_interval(&coefficients[i / BLOCK_INTERVALS], (int)(i % BLOCK_INTERVALS), qx + u, qy + u);
    }
    // Zeros up to the last 64-interval word.
    for (ptrdiff_t i = intervals; i < intervals + 64; i++) undecided[i] = 0;
    // Everything not decided, and the columns after the last whole interval, exactly.
    // One bit per open interval, then one per undecided sample of it; most open intervals
    // have one or two, taken without a branch (a loop over the bits mispredicts).
    ptrdiff_t count = 0;
    for (ptrdiff_t w = 0; w < intervals; w += 64) {
        uint64_t open = 0;
        for (ptrdiff_t k = 0; k < 64; k++) open |= (uint64_t)(undecided[w + k] != 0) << k;
        while (open) {
            const ptrdiff_t i = w + __builtin_ctzll(open), u = i * QUANTISED_SPAN;
            open &= open - 1;
            uint64_t samples = undecided[i];
            // An open interval has at least one. The second is written whether or not there is
            // one (bit 63, past every span, stands in for none) and counted only if there is;
            // the write stays inside the list (count is then at most 16 i + 1).
            columns[count++] = (int32_t)(u + __builtin_ctzll(samples));
            samples &= samples - 1;
            columns[count] = (int32_t)(u + __builtin_ctzll(samples | 1ull << 63));
            count += samples != 0;
            samples &= samples - 1;
            while (samples) {
                columns[count++] = (int32_t)(u + __builtin_ctzll(samples));
                samples &= samples - 1;
            }
        }
    }
    for (ptrdiff_t u = intervals * QUANTISED_SPAN; u < width; u++) columns[count++] = (int32_t)u;
    brown_columns(lens, origin, step, columns, count, exact_x, exact_y, distorted, rational);
    for (ptrdiff_t i = 0; i < count; i++) {
        qx[columns[i]] = quantise_position(exact_x[i]);
        qy[columns[i]] = quantise_position(exact_y[i]);
    }
    return count;
}

INLINE ptrdiff_t quantised_row_any(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                                   ptrdiff_t width, int32_t *qx, int32_t *qy, void *scratch) {
#define ROW(D, R) return quantised_row(lens, origin, step, width, qx, qy, scratch, D, R)
    BY_MODEL(ROW);
#undef ROW
}

// MARK: Levels

#define INSTANCES(NAME, PARAMS, ARGS)                      \
    static void NAME##_baseline PARAMS { NAME##_any ARGS; } \
    LEVEL_INSTANCES(NAME, PARAMS, ARGS)
// The same for kernels that return a count.
#define COUNT_INSTANCES(NAME, PARAMS, ARGS)                                \
    static ptrdiff_t NAME##_baseline PARAMS { return NAME##_any ARGS; }   \
    COUNT_LEVEL_INSTANCES(NAME, PARAMS, ARGS)

#if HAVE_AVX2_VARIANT
#define LEVEL_INSTANCES(NAME, PARAMS, ARGS)                         \
    AVX512 static void NAME##_avx512 PARAMS { NAME##_any ARGS; }    \
    AVX2 static void NAME##_avx2 PARAMS { NAME##_any ARGS; }
#define DISPATCH(NAME, ARGS)                                         \
    do {                                                             \
        if (level == PARALLAX_SIMD_AVX512) { NAME##_avx512 ARGS; return; } \
        if (level == PARALLAX_SIMD_AVX2) { NAME##_avx2 ARGS; return; }     \
        NAME##_baseline ARGS;                                        \
    } while (0)
#define COUNT_LEVEL_INSTANCES(NAME, PARAMS, ARGS)                                 \
    AVX512 static ptrdiff_t NAME##_avx512 PARAMS { return NAME##_any ARGS; }     \
    AVX2 static ptrdiff_t NAME##_avx2 PARAMS { return NAME##_any ARGS; }
#define COUNT_DISPATCH(NAME, ARGS)                                   \
    do {                                                             \
        if (level == PARALLAX_SIMD_AVX512) return NAME##_avx512 ARGS; \
        if (level == PARALLAX_SIMD_AVX2) return NAME##_avx2 ARGS;     \
        return NAME##_baseline ARGS;                                 \
    } while (0)
#else
#define LEVEL_INSTANCES(NAME, PARAMS, ARGS)
#define DISPATCH(NAME, ARGS) \
    do {                     \
        (void)level;         \
        NAME##_baseline ARGS; \
    } while (0)
#define COUNT_LEVEL_INSTANCES(NAME, PARAMS, ARGS)
#define COUNT_DISPATCH(NAME, ARGS)     \
    do {                               \
        (void)level;                   \
        return NAME##_baseline ARGS;   \
    } while (0)
#endif

#define ROW_PARAMS (const parallax_brown_lens *lens, const double origin[3], const double step[3], ptrdiff_t width, float *xs, float *ys)
#define ROW_ARGS (lens, origin, step, width, xs, ys)
INSTANCES(brown_row, ROW_PARAMS, ROW_ARGS)

#define QROW_PARAMS (const parallax_brown_lens *lens, const double origin[3], const double step[3], ptrdiff_t width, int32_t *qx, int32_t *qy, void *scratch)
#define QROW_ARGS (lens, origin, step, width, qx, qy, scratch)
COUNT_INSTANCES(quantised_row, QROW_PARAMS, QROW_ARGS)

void parallax_map_row_brown(const parallax_brown_lens *lens, const double origin[3], const double step[3],
                            ptrdiff_t width, float *xs, float *ys, parallax_simd_level level) {
    DISPATCH(brown_row, ROW_ARGS);
}

ptrdiff_t parallax_map_row_brown_quantised(const parallax_brown_lens *lens, const double origin[3],
                                           const double step[3], ptrdiff_t width, int32_t *qx, int32_t *qy,
                                           void *scratch, parallax_simd_level level) {
    COUNT_DISPATCH(quantised_row, QROW_ARGS);
}

// MARK: Compiling

// The first tap of a quantised position (`nearest` and `lead` as in parallax_compile_params,
// passed as values so that loops keep them in registers). An undefined position's is below
// −2^25: outside every image, and far enough from overflow for the sums below.
INLINE int32_t first_tap(int32_t q, int32_t nearest, int32_t lead) {
    return nearest ? (q + 16) >> 5 : (q >> 5) - lead;
}

INLINE int32_t fractions_of(int32_t qx, int32_t qy, int32_t nearest) {
    return nearest ? 0 : (qy & 31) << 5 | (qx & 31);
}

// The first tap row no inside sample of the row lies above: the lowest among samples whose
// first taps both lie in the source. (Inside samples pass a stricter test, so every inside
// sample's offset from this row's start is ≥ 0.)
INLINE int32_t lowest_tap_row(const int32_t *qx, const int32_t *qy, ptrdiff_t width, const parallax_compile_params *p) {
    const uint32_t columns = (uint32_t)p->source_width, rows = (uint32_t)p->source_height;
    const int32_t nearest = p->nearest, lead = p->lead;
    const int32_t *restrict row_x = qx, *restrict row_y = qy;
    int32_t lowest = INT32_MAX;
    for (ptrdiff_t u = 0; u < width; u++) {
        const int32_t wx = first_tap(row_x[u], nearest, lead), wy = first_tap(row_y[u], nearest, lead);
        // Unsigned: a negative tap fails too.
        const int possible = ((uint32_t)wx < columns) & ((uint32_t)wy < rows);
        const int32_t candidate = possible ? wy : INT32_MAX; // a plain min: vectorises as a reduction
        lowest = candidate < lowest ? candidate : lowest;
    }
    return lowest == INT32_MAX ? 0 : lowest;
}

// Writes every sample's packed entry (0 where the sample is not inside the source or its
// offset from `base` does not fit), with the inside flags. This is the general form, in
// 64-bit arithmetic, for planes whose offsets need it (rare: pack_row32 below is the common
// case).
INLINE void pack_row64(const int32_t *qx, const int32_t *qy, ptrdiff_t width, const parallax_compile_params *p,
                       int64_t base, uint32_t *entries, uint8_t *inside) {
    const int64_t source_width = p->source_width, source_height = p->source_height;
    const int64_t row_bytes = p->source_row_bytes, stride = p->pixel_stride;
    const int64_t spare = p->spare, vector_read = p->vector_read, readable = p->readable, taps = p->taps;
    const int32_t nearest = p->nearest, lead = p->lead;
    for (ptrdiff_t u = 0; u < width; u++) {
        const int64_t wx = first_tap(qx[u], nearest, lead), wy = first_tap(qy[u], nearest, lead);
        const int64_t offset = wy * row_bytes + wx * stride - base;
        const int in = (wx >= 0) & (wy >= 0) & (wx + taps + spare <= source_width) & (wy + taps <= source_height)
            & ((wy + taps - 1) * row_bytes + wx * stride + vector_read <= readable)
            & (offset < PARALLAX_COMPILED_OFFSET_LIMIT);
        entries[u] = in ? (uint32_t)offset << 10 | (uint32_t)fractions_of(qx[u], qy[u], nearest) : 0;
        inside[u] = (uint8_t)in;
    }
}

// The same in 32-bit arithmetic, for non-negative strides whose offsets fit 31 bits (see
// compile_row), sixteen samples per AVX-512 vector. The seven tests above become three
// unsigned range tests: both first taps within [0, last], and the offset within
// [0, limit], where limit joins the offset limit and the readable bytes (every sample
// that passes the tap tests lies at or below the base row, so its offset is ≥ 0).
// `farthest` is the largest offset from the plane's start a tap row may have.
INLINE void pack_row32(const int32_t *qx, const int32_t *qy, ptrdiff_t width, const parallax_compile_params *p,
                       int32_t base, int64_t farthest, uint32_t *entries, uint8_t *inside, uint32_t stride,
                       int32_t nearest) {
    const int64_t last_x = p->source_width - p->taps - p->spare, last_y = p->source_height - p->taps;
    int64_t limit = farthest - base;
    if (limit > PARALLAX_COMPILED_OFFSET_LIMIT - 1) limit = PARALLAX_COMPILED_OFFSET_LIMIT - 1;
    if (last_x < 0 || last_y < 0 || limit < 0) {
        // No sample can be inside.
        memset(entries, 0, (size_t)width * sizeof(uint32_t));
        memset(inside, 0, (size_t)width);
        return;
    }
    const uint32_t max_x = (uint32_t)last_x, max_y = (uint32_t)last_y, max_offset = (uint32_t)limit;
    const uint32_t row_bytes = (uint32_t)p->source_row_bytes;
    const uint32_t base32 = (uint32_t)base;
    const int32_t lead = p->lead;
    const int32_t *restrict row_x = qx, *restrict row_y = qy;
    uint32_t *restrict out = entries;
    uint8_t *restrict flags = inside;
    for (ptrdiff_t u = 0; u < width; u++) {
        const int32_t x = row_x[u], y = row_y[u];
        const uint32_t wx = (uint32_t)first_tap(x, nearest, lead), wy = (uint32_t)first_tap(y, nearest, lead);
        // Unsigned, so that the offsets of samples whose taps are out of range wrap harmlessly.
        const uint32_t offset = wy * row_bytes + wx * stride - base32;
        const int in = (wx <= max_x) & (wy <= max_y) & (offset <= max_offset);
        out[u] = in ? offset << 10 | (uint32_t)fractions_of(x, y, nearest) : 0;
        flags[u] = (uint8_t)in;
    }
}

// The side-table values of samples [from, to): first taps (INT32_MIN where the position is
// undefined) and fractions. (`qx` and `qy` may be scratch's tap arrays: each sample is read
// before its own slots are written.)
INLINE void side_samples(const int32_t *qx, const int32_t *qy, ptrdiff_t from, ptrdiff_t to,
                         const parallax_compile_params *p, const parallax_compile_scratch *scratch) {
    const int32_t nearest = p->nearest, lead = p->lead;
    int32_t *tap_x = scratch->tap_x, *tap_y = scratch->tap_y, *fractions = scratch->fractions;
    for (ptrdiff_t k = from; k < to; k++) {
        const int32_t x = qx[k], y = qy[k];
        const int defined = (x != PARALLAX_UNDEFINED_POSITION) & (y != PARALLAX_UNDEFINED_POSITION);
        tap_x[k] = defined ? first_tap(x, nearest, lead) : INT32_MIN;
        tap_y[k] = defined ? first_tap(y, nearest, lead) : INT32_MIN;
        fractions[k] = defined ? fractions_of(x, y, nearest) : 0;
    }
}

INLINE void compile_quantised_row_any(const int32_t *qx, const int32_t *qy, ptrdiff_t width,
                                      const parallax_compile_params *p, const parallax_compile_scratch *scratch,
                                      uint32_t *entries, parallax_compiled_row *row) {
    // 32-bit arithmetic is exact when the largest offset a sample can produce, and the
    // largest sum formed on the way, stay below 2^31: positions are below 2^16 + 4, so
    // bound the plane by (2^16 + 8) rows and columns of the real strides.
    const int64_t bound = ((int64_t)1 << 16) + 8;
    const int narrow = p->source_row_bytes >= 0 && p->pixel_stride >= 0
        && bound * (p->source_row_bytes + p->pixel_stride) + p->vector_read + p->readable < INT32_MAX;
    // The largest offset from the plane's start a tap row may have (its taps and vector reads
    // stay readable). Where the offset limit reaches it, offsets from the plane itself fit and
    // no row needs a base of its own (a 1080p gray or NV12 luma plane, every plane up to
    // 720p): the spans are the same either way.
    const int64_t farthest = p->readable - p->vector_read - (int64_t)(p->taps - 1) * p->source_row_bytes;
    const int64_t base = farthest < PARALLAX_COMPILED_OFFSET_LIMIT
        ? 0 : (int64_t)lowest_tap_row(qx, qy, width, p) * p->source_row_bytes;
    uint8_t *inside = scratch->inside;
    // The stride (1 for gray and NV12 luma: no multiply) and the interpolation as constants:
    // the compiler does not unswitch the loop on them.
#define PACK(STRIDE, NEAREST) pack_row32(qx, qy, width, p, (int32_t)base, farthest, entries, inside, STRIDE, NEAREST)
    if (narrow && p->pixel_stride == 1) {
        if (p->nearest) PACK(1, 1);
        else PACK(1, 0);
    } else if (narrow) {
        if (p->nearest) PACK((uint32_t)p->pixel_stride, 1);
        else PACK((uint32_t)p->pixel_stride, 0);
    } else pack_row64(qx, qy, width, p, base, entries, inside);
#undef PACK
    // The longest run of inside samples whose offset fits.
    ptrdiff_t best_start = 0, best_length = 0, u = 0;
    while (u < width) {
        // Thirty-two, then eight flags at a time where they are all equal (most of a row is
        // one run).
        while (u + 32 <= width && load32_or(inside + u) == 0) u += 32;
        while (u + 8 <= width && load8(inside + u) == 0) u += 8;
        while (u < width && !inside[u]) u++;
        const ptrdiff_t start = u;
        while (u + 32 <= width && load32_and(inside + u) == ALL_INSIDE) u += 32;
        while (u + 8 <= width && load8(inside + u) == ALL_INSIDE) u += 8;
        while (u < width && inside[u]) u++;
        if (u - start > best_length) {
            best_start = start;
            best_length = u - start;
        }
    }
    // The samples outside the span, for the caller's side table.
    side_samples(qx, qy, 0, best_start, p, scratch);
    side_samples(qx, qy, best_start + best_length, width, p, scratch);
    row->base = base;
    row->span_start = best_start;
    row->span_end = best_start + best_length;
}

// Float positions are quantised into the scratch's tap arrays first.
INLINE void quantise_row(const float *restrict xs, const float *restrict ys, ptrdiff_t width, int32_t *restrict qx,
                         int32_t *restrict qy) {
    for (ptrdiff_t u = 0; u < width; u++) {
        qx[u] = quantise_position(xs[u]);
        qy[u] = quantise_position(ys[u]);
    }
}

INLINE void compile_row_any(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p,
                            const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row) {
    // (Not restrict here: the side table below writes the same arrays through `scratch`.)
    quantise_row(xs, ys, width, scratch->tap_x, scratch->tap_y);
    compile_quantised_row_any(scratch->tap_x, scratch->tap_y, width, p, scratch, entries, row);
}

#define COMPILE_PARAMS (const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p, const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row)
#define COMPILE_ARGS (xs, ys, width, p, scratch, entries, row)
INSTANCES(compile_row, COMPILE_PARAMS, COMPILE_ARGS)

#define QCOMPILE_PARAMS (const int32_t *qx, const int32_t *qy, ptrdiff_t width, const parallax_compile_params *p, const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row)
#define QCOMPILE_ARGS (qx, qy, width, p, scratch, entries, row)
INSTANCES(compile_quantised_row, QCOMPILE_PARAMS, QCOMPILE_ARGS)

void parallax_compile_row(const float *xs, const float *ys, ptrdiff_t width, const parallax_compile_params *p,
                          const parallax_compile_scratch *scratch, uint32_t *entries, parallax_compiled_row *row,
                          parallax_simd_level level) {
    DISPATCH(compile_row, COMPILE_ARGS);
}

void parallax_compile_quantised_row(const int32_t *qx, const int32_t *qy, ptrdiff_t width,
                                    const parallax_compile_params *p, const parallax_compile_scratch *scratch,
                                    uint32_t *entries, parallax_compiled_row *row, parallax_simd_level level) {
    DISPATCH(compile_quantised_row, QCOMPILE_ARGS);
}
