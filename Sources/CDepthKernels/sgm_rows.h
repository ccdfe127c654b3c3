// The matcher's row kernels, one body for every vector level: sgm.c includes this file once
// per level with SGM_NAME(x) naming that level's instance and SGM_TARGET its target
// attribute. Plain loops over disparities (or pixels) in unsigned integers, which the
// compiler vectorises at each level's width; no loop's result depends on the order it runs
// in, so the instances agree bit for bit. Bounds: every pointer argument covers what its loop
// reads or writes, stated at each function; the callers (sgm.c) size every buffer from the
// plan.

// Census codes of one row from `window_height` padded luma rows (`rows[j]` points at column 0
// of a row padded by `rx` replicated samples on each side): bit order row by row, left to
// right, the centre skipped; bit = [neighbour < centre]. Reads rows[j][−rx … width + rx).
static SGM_TARGET void SGM_NAME(census_from_rows)(const uint8_t *const *rows, int32_t width, int32_t window_width,
                                                  int32_t window_height, uint64_t *restrict codes) {
    const int32_t rx = window_width / 2, ry = window_height / 2;
    const uint8_t *centre = rows[ry];
    for (int32_t x = 0; x < width; x++) codes[x] = 0;
    for (int32_t j = 0; j < window_height; j++) {
        for (int32_t i = -rx; i <= rx; i++) {
            if (j == ry && i == 0) continue;
            const uint8_t *row = rows[j] + i;
            for (int32_t x = 0; x < width; x++) {
                codes[x] = (codes[x] << 1) | (uint64_t)(row[x] < centre[x]);
            }
        }
    }
}

// costs[x · D + d] = popcount(left[x] ^ right[x − dmin − d]), or `no_match` where that right
// pixel lies outside [0, width). `reversed` holds the right codes in reverse order with
// `pad` codes before and after (reversed[pad + k] = right[width − 1 − k]); the k read,
// width − 1 − x + dmin + d, lie in [dmin, width + dmin + D − 2], inside the array when
// pad ≥ |dmin| + D (the caller's). Codes read from the padding give costs replaced below.
static SGM_TARGET void SGM_NAME(cost_row)(const uint64_t *restrict left, const uint64_t *restrict reversed,
                                          ptrdiff_t pad, int32_t width, int32_t min_disparity, int32_t disparities,
                                          uint8_t no_match, uint8_t *restrict costs) {
    for (int32_t x = 0; x < width; x++) {
        const uint64_t code = left[x];
        const uint64_t *r = reversed + pad + (width - 1 - x + min_disparity);
        uint8_t *c = costs + (ptrdiff_t)x * disparities;
        // One vector at a time: interleaved vectors would leave counts below their width scalar.
#pragma clang loop interleave_count(1)
        for (int32_t d = 0; d < disparities; d++) {
            c[d] = (uint8_t)__builtin_popcountll(code ^ r[d]);
        }
        // The right pixel x − dmin − d is inside for d in [x − dmin − (width − 1), x − dmin].
        const int32_t first = x - min_disparity - (width - 1), last = x - min_disparity;
        for (int32_t d = 0; d < disparities && d < first; d++) c[d] = no_match;
        for (int32_t d = last < 0 ? 0 : last + 1; d < disparities; d++) c[d] = no_match;
    }
}

// The sweeps at each width the level has (sgm_sweep.h), and their dispatch: the widest that
// divides D.
#define SGM_W 16
#define SGM_WNAME(x) SGM_NAME(x##_w16)
#define SGM_SEQ SGM_SEQ16
#include "sgm_sweep.h"
#undef SGM_W
#undef SGM_WNAME
#undef SGM_SEQ
#if SGM_LANES >= 32
#define SGM_W 32
#define SGM_WNAME(x) SGM_NAME(x##_w32)
#define SGM_SEQ SGM_SEQ32
#include "sgm_sweep.h"
#undef SGM_W
#undef SGM_WNAME
#undef SGM_SEQ
#endif
#if SGM_LANES >= 64
#define SGM_W 64
#define SGM_WNAME(x) SGM_NAME(x##_w64)
#define SGM_SEQ SGM_SEQ64
#include "sgm_sweep.h"
#undef SGM_W
#undef SGM_WNAME
#undef SGM_SEQ
#endif

#if SGM_LANES >= 64
#define SGM_DISPATCH(function, D, ...)                                                                             \
    ((D) % 64 == 0 ? SGM_NAME(function##_w64)(__VA_ARGS__)                                                         \
                   : (D) % 32 == 0 ? SGM_NAME(function##_w32)(__VA_ARGS__) : SGM_NAME(function##_w16)(__VA_ARGS__))
#elif SGM_LANES >= 32
#define SGM_DISPATCH(function, D, ...)                                                                             \
    ((D) % 32 == 0 ? SGM_NAME(function##_w32)(__VA_ARGS__) : SGM_NAME(function##_w16)(__VA_ARGS__))
#else
#define SGM_DISPATCH(function, D, ...) SGM_NAME(function##_w16)(__VA_ARGS__)
#endif

static SGM_TARGET void SGM_NAME(sweep_forward)(const sgm_sweep *s) { SGM_DISPATCH(sweep_forward, s->disparities, s); }

static SGM_TARGET void SGM_NAME(sweep_backward)(const sgm_sweep *s) { SGM_DISPATCH(sweep_backward, s->disparities, s); }

static SGM_TARGET uint8_t SGM_NAME(step)(const uint8_t *restrict c, const uint8_t *restrict prev, uint8_t prev_min,
                                         uint8_t p1, uint8_t p2, int32_t disparities, uint8_t *restrict out,
                                         uint16_t *restrict sum) {
    return SGM_DISPATCH(step, disparities, c, prev, prev_min, p1, p2, disparities, out, sum);
}
#undef SGM_DISPATCH
