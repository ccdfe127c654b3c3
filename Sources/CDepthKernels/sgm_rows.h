// The matcher's row kernels, one body for every vector level: sgm.c includes this file once
// per level with SGM_NAME(x) naming that level's instance and SGM_TARGET its target
// attribute. Plain loops over disparities (or pixels) in unsigned integers, which the
// compiler vectorises at each level's width; no loop's result depends on the order it runs
// in, so the instances agree bit for bit. Bounds: every pointer argument covers what its loop
// reads or writes, stated at each function; the callers (sgm.c) size every buffer from the
// plan.

// Census codes of one row from `window_height` padded luma rows (`rows[j]` points at column 0
// of a row padded by `rx` replicated samples on the left and at least rx + SGM_LANES on the
// right): bit order row by row, left to right, the centre skipped, the first neighbour in the
// highest bit; bit = [neighbour < centre]. SGM_LANES pixels at a time, a byte of eight bits
// each per comparison group (a vector compare per neighbour), then the bytes put together
// per code. Reads rows[j][−rx … width + rx + SGM_LANES).
static SGM_TARGET void SGM_NAME(census_from_rows)(const uint8_t *const *rows, int32_t width, int32_t window_width,
                                                  int32_t window_height, uint64_t *restrict codes) {
    typedef uint8_t block __attribute__((vector_size(SGM_LANES)));
    const int32_t rx = window_width / 2, ry = window_height / 2, bits = window_width * window_height - 1;
    // The neighbours in bit order: bit b is neighbour bits − 1 − b.
    const uint8_t *neighbour[64];
    int32_t k = 0;
    for (int32_t j = 0; j < window_height; j++) {
        for (int32_t i = -rx; i <= rx; i++) {
            if (j != ry || i != 0) neighbour[bits - 1 - k++] = rows[j] + i;
        }
    }
    for (int32_t x0 = 0; x0 < width; x0 += SGM_LANES) {
        block centre;
        uint8_t plane[8][SGM_LANES];
        memcpy(&centre, rows[ry] + x0, SGM_LANES);
        for (int32_t p = 0; p < 8; p++) {
            block acc = {0};
            for (int32_t b = 8 * p; b < 8 * p + 8 && b < bits; b++) {
                block v;
                memcpy(&v, neighbour[b] + x0, SGM_LANES);
                acc |= (block)(v < centre) & (uint8_t)(1u << (b & 7));
            }
            memcpy(plane[p], &acc, SGM_LANES);
        }
        // Bytes to codes: eight planes always (zero above the window's bits), so the loop over
        // pixels vectorises.
        uint64_t assembled[SGM_LANES];
        for (int32_t x = 0; x < SGM_LANES; x++) {
            assembled[x] = (uint64_t)plane[0][x] | (uint64_t)plane[1][x] << 8 | (uint64_t)plane[2][x] << 16 |
                           (uint64_t)plane[3][x] << 24 | (uint64_t)plane[4][x] << 32 | (uint64_t)plane[5][x] << 40 |
                           (uint64_t)plane[6][x] << 48 | (uint64_t)plane[7][x] << 56;
        }
        const int32_t count = width - x0 < SGM_LANES ? width - x0 : SGM_LANES;
        memcpy(codes + x0, assembled, sizeof(uint64_t) * (size_t)count);
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
        // Sixteen at a time, the counts narrowed in registers and stored as one vector (a
        // narrowing store straight to memory is slow on some CPUs).
        typedef uint64_t codes8 __attribute__((vector_size(64)));
        typedef uint8_t counts8 __attribute__((vector_size(8)));
        typedef uint8_t counts16 __attribute__((vector_size(16)));
        for (int32_t d = 0; d < disparities; d += 16) {
            codes8 low, high;
            memcpy(&low, r + d, 64);
            memcpy(&high, r + d + 8, 64);
            const counts8 a = __builtin_convertvector(__builtin_elementwise_popcount(low ^ code), counts8);
            const counts8 b = __builtin_convertvector(__builtin_elementwise_popcount(high ^ code), counts8);
            const counts16 both = __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
            memcpy(c + d, &both, 16);
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
