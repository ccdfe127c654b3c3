// The semi-global matcher: the work area, the two stages and their ring, the winners' checks,
// the sub-pixel step and the speckle filter (see include/CDepthKernels.h for the algorithm and
// the bounds). The row kernels are sgm_rows.h, instantiated here once per vector level.
#include "CDepthKernels.h"

#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

// MARK: The row kernels at each level

// What a path step does with the row's sums (sgm_rows.h).
enum { SGM_ADD = 0, SGM_SET = 1, SGM_NONE = 2 };

// a + b, at most 255 (the kernels' path arithmetic): clang's saturating add, which vectorises
// to one saturating byte addition (a compare-and-select form is widened to 32 bits instead).
static inline __attribute__((always_inline)) uint8_t saturating_add(uint8_t a, uint8_t b) {
#if __has_builtin(__builtin_elementwise_add_sat)
    return __builtin_elementwise_add_sat(a, b);
#else
    const unsigned sum = (unsigned)a + b;
    return sum > 255 ? 255 : (uint8_t)sum;
#endif
}

#define SGM_NAME(x) x##_baseline
#define SGM_TARGET
#define SGM_LANES 16
#include "sgm_rows.h"
#undef SGM_NAME
#undef SGM_TARGET
#undef SGM_LANES

#if defined(__x86_64__)
#define SGM_NAME(x) x##_avx2
#define SGM_TARGET __attribute__((target("avx2,fma")))
#define SGM_LANES 32
#include "sgm_rows.h"
#undef SGM_NAME
#undef SGM_TARGET
#undef SGM_LANES

#define SGM_NAME(x) x##_avx512
#define SGM_TARGET __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl")))
#define SGM_LANES 64
#include "sgm_rows.h"
#undef SGM_NAME
#undef SGM_TARGET
#undef SGM_LANES

// AVX-512 with VPOPCNTDQ as well (Intel Ice Lake and later, AMD Zen 4): only the costs change,
// one population count per code instead of a table lookup per nibble; the same numbers.
#define SGM_NAME(x) x##_avx512_popcount
#define SGM_TARGET __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vpopcntdq"), unused))
#define SGM_LANES 64
#include "sgm_rows.h"
#undef SGM_NAME
#undef SGM_TARGET
#undef SGM_LANES

#include <cpuid.h>

// Whether the CPU has AVX-512 VPOPCNTDQ (cpuid leaf 7, ECX bit 14); asked once. The caller
// passes level 2 only where the CPU has AVX-512 F, DQ, BW and VL and the OS saves its state.
static int has_vector_popcount(void) {
    static _Atomic int known = -1;
    int value = atomic_load(&known);
    if (value < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        value = 0;
        if (__get_cpuid_max(0, 0) >= 7) {
            __cpuid_count(7, 0, a, b, c, d);
            value = (c & (1u << 14)) != 0;
        }
        atomic_store(&known, value);
    }
    return value;
}
#endif

typedef struct {
    void (*census_from_rows)(const uint8_t *const *, int32_t, int32_t, int32_t, uint64_t *);
    void (*cost_row)(const uint64_t *, const uint64_t *, ptrdiff_t, int32_t, int32_t, int32_t, uint8_t, uint8_t *);
    uint8_t (*step)(const uint8_t *, const uint8_t *, uint8_t, uint8_t, uint8_t, int32_t, uint8_t *, uint16_t *);
    void (*paths_horizontal)(const uint8_t *, const uint8_t *, int32_t, int32_t, int, int, uint8_t, const uint8_t *,
                             uint8_t *, ptrdiff_t, const uint8_t *, uint16_t *);
    void (*paths_from_row)(const uint8_t *, const uint8_t *, const uint8_t *, int32_t, int32_t, int32_t, const int32_t *,
                           uint8_t, const uint8_t *, const uint8_t *const *, const uint8_t *const *, uint8_t *const *,
                           uint8_t *const *, ptrdiff_t, const uint8_t *, int, uint16_t *);
    void (*add_row)(uint16_t *, const uint16_t *, ptrdiff_t);
    void (*winners_row)(const uint16_t *, int32_t, int32_t, int32_t, ptrdiff_t, uint32_t *, uint32_t *);
    uint16_t (*runner_up)(const uint16_t *, int32_t, int32_t);
} sgm_kernels;

#define SGM_KERNELS(suffix)                                                                                        \
    {census_from_rows_##suffix, cost_row_##suffix, step_##suffix, paths_horizontal_##suffix,                        \
     paths_from_row_##suffix, add_row_##suffix, winners_row_##suffix, runner_up_##suffix}

static const sgm_kernels kernels_baseline = SGM_KERNELS(baseline);
#if defined(__x86_64__)
static const sgm_kernels kernels_avx2 = SGM_KERNELS(avx2);
static const sgm_kernels kernels_avx512 = SGM_KERNELS(avx512);
static const sgm_kernels kernels_avx512_popcount = {
    census_from_rows_avx512, cost_row_avx512_popcount, step_avx512, paths_horizontal_avx512,
    paths_from_row_avx512, add_row_avx512, winners_row_avx512, runner_up_avx512};
#endif

// The caller has asked the CPU (SIMDLevel): a level it does not report is never passed.
static const sgm_kernels *kernels_for(parallax_sgm_level level) {
#if defined(__x86_64__)
    if (level >= 2) return has_vector_popcount() ? &kernels_avx512_popcount : &kernels_avx512;
    if (level == 1) return &kernels_avx2;
#else
    (void)level;
#endif
    return &kernels_baseline;
}

// MARK: The plan

// The sub-pixel fit's window: the matching costs of 2 · 2 + 1 pixels of the row (select_row).
enum { MAX_WINDOW_SIDE = 15, RING_SLOTS = 4, SENTINEL = 0xFF, SUBPIXEL_RADIUS = 2 };

int32_t parallax_sgm_plan_check(const parallax_sgm_plan *plan) {
    if (plan->width < 1 || plan->height < 1 || plan->width > 8192 || plan->height > 8192) return 1;
    if (plan->disparities < 16 || plan->disparities > 256 || plan->disparities % 16 != 0) return 2;
    if (abs(plan->min_disparity) + plan->disparities > 2047) return 3;
    const int32_t cw = plan->census_width, ch = plan->census_height;
    if (cw < 1 || ch < 1 || cw % 2 == 0 || ch % 2 == 0 || cw > MAX_WINDOW_SIDE || ch > MAX_WINDOW_SIDE ||
        cw * ch - 1 > 64 || cw * ch < 2)
        return 4;
    const int32_t bits = cw * ch - 1;
    if (plan->p1 < 1 || plan->p1 > 255 - bits) return 5;
    for (int i = 0; i < 256; i++) {
        if (plan->p2_for_step[i] < plan->p1 || plan->p2_for_step[i] > 255 - bits) return 6;
    }
    if ((plan->paths & PARALLAX_SGM_FIRST_PASS) == 0 || (plan->paths & ~0xFFu) != 0) return 7;
    if (plan->uniqueness_percent < 0 || plan->uniqueness_percent > 100) return 8;
    if (plan->speckle_max_size < 0 || plan->speckle_max_difference16 < 0) return 9;
    return 0;
}

// MARK: The work area

typedef struct {
    // The ring's counters, each on its own cache line: steps the first stage has handed over
    // and steps the second has finished with.
    _Alignas(64) _Atomic int64_t produced;
    _Alignas(64) _Atomic int64_t consumed;
    _Alignas(64) const parallax_sgm_plan *plan;
    int32_t width, height, disparities, min_disparity;
    ptrdiff_t stride;   // elements between path vectors: D + 16, the vector at +8 (sentinels at ±1)
    ptrdiff_t pad;      // padding of the reversed right codes and right winners: |dmin| + D
    int32_t two_pass, steps;
    uint8_t no_match, p1;
    uint8_t p2_for_step[256];
    // The ring: each slot one row's costs, its partial sums and its left luma.
    uint8_t *slot_costs[RING_SLOTS];
    uint16_t *slot_sums[RING_SLOTS];
    uint8_t *slot_luma[RING_SLOTS];
    // The first stage's own: padded luma rows (per image, a ring of the window's rows keyed by
    // row), census codes, the horizontal paths' vectors, the top-down or bottom-up path's rows.
    uint8_t *padded[2][MAX_WINDOW_SIDE];
    int32_t padded_row[2][MAX_WINDOW_SIDE];
    uint64_t *census_left, *census_reversed;
    uint8_t *horizontal;
    uint8_t *up_rows[2], *up_min[2];
    // The second stage's own: three paths' rows (this row and the one before), the previous
    // left luma row, a zero vector, the winners, the first pass's sums, the filter's buffers.
    uint8_t *path_rows[3][2], *path_min[3][2];
    uint8_t *prev_luma;
    uint8_t *zero;
    uint32_t *best, *right_best;
    uint16_t *volume;
    int32_t *labels, *region;
    parallax_sgm_invalid_counts counts;
} sgm_work;

static size_t round_up(size_t n) { return (n + 63) & ~(size_t)63; }

// Walks the layout: with `base` NULL only sums the sizes. Every buffer 64-byte aligned.
static size_t layout(const parallax_sgm_plan *plan, sgm_work *w, uint8_t *base) {
    const size_t W = (size_t)plan->width, H = (size_t)plan->height, D = (size_t)plan->disparities;
    const size_t stride = D + 16, pad = (size_t)abs(plan->min_disparity) + D;
    const size_t rx = (size_t)plan->census_width / 2;
    size_t at = round_up(sizeof(sgm_work));
#define TAKE(field, type, count)                                                                                   \
    do {                                                                                                           \
        if (base) field = (type *)(base + at);                                                                     \
        at += round_up(sizeof(type) * (size_t)(count));                                                            \
    } while (0)
    sgm_work scratch;
    sgm_work *v = base ? w : &scratch;
    for (int k = 0; k < RING_SLOTS; k++) {
        TAKE(v->slot_costs[k], uint8_t, W * D);
        TAKE(v->slot_sums[k], uint16_t, W * D);
        TAKE(v->slot_luma[k], uint8_t, W);
    }
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < plan->census_height; j++) TAKE(v->padded[i][j], uint8_t, W + 2 * rx);
    }
    TAKE(v->census_left, uint64_t, W);
    TAKE(v->census_reversed, uint64_t, W + 2 * pad);
    TAKE(v->horizontal, uint8_t, 4 * stride);
    const int up = (plan->paths & (PARALLAX_SGM_BOTTOM_UP | PARALLAX_SGM_TOP_DOWN)) != 0;
    for (int k = 0; k < 2; k++) {
        TAKE(v->up_rows[k], uint8_t, up ? W * stride : 0);
        TAKE(v->up_min[k], uint8_t, up ? W : 0);
    }
    // The second stage's paths: [0] is unused (top down is the first stage's), [1] and [2] the
    // diagonals of either pass.
    for (int p = 1; p < 3; p++) {
        for (int k = 0; k < 2; k++) {
            TAKE(v->path_rows[p][k], uint8_t, W * stride);
            TAKE(v->path_min[p][k], uint8_t, W);
        }
    }
    TAKE(v->prev_luma, uint8_t, W);
    TAKE(v->zero, uint8_t, stride);
    TAKE(v->best, uint32_t, W);
    TAKE(v->right_best, uint32_t, W + 2 * pad);
    const int two_pass = (plan->paths & PARALLAX_SGM_SECOND_PASS) != 0;
    TAKE(v->volume, uint16_t, two_pass ? H * W * D : 0);
    const int speckle = plan->speckle_max_size > 0;
    TAKE(v->labels, int32_t, speckle ? W * H : 0);
    TAKE(v->region, int32_t, speckle ? W * H : 0);
#undef TAKE
    return at;
}

size_t parallax_sgm_work_bytes(const parallax_sgm_plan *plan) {
    if (parallax_sgm_plan_check(plan) != 0) return 0;
    return layout(plan, NULL, NULL);
}

// Path vectors live at +8 in each `stride`-element block, with sentinels at +7 and +8 + D.
static void set_sentinels(uint8_t *rows, size_t count, size_t stride, size_t D) {
    for (size_t i = 0; i < count; i++) {
        rows[i * stride + 7] = SENTINEL;
        rows[i * stride + 8 + D] = SENTINEL;
    }
}

void parallax_sgm_prepare(const parallax_sgm_plan *plan, void *work) {
    uint8_t *base = work;
    memset(base, 0, sizeof(sgm_work));
    sgm_work *w = work;
    layout(plan, w, base);
    w->plan = plan;
    w->width = plan->width;
    w->height = plan->height;
    w->disparities = plan->disparities;
    w->min_disparity = plan->min_disparity;
    w->stride = plan->disparities + 16;
    w->pad = abs(plan->min_disparity) + plan->disparities;
    w->two_pass = (plan->paths & PARALLAX_SGM_SECOND_PASS) != 0;
    w->steps = plan->height * (w->two_pass ? 2 : 1);
    w->no_match = (uint8_t)(plan->census_width * plan->census_height - 1);
    w->p1 = (uint8_t)plan->p1;
    for (int i = 0; i < 256; i++) w->p2_for_step[i] = (uint8_t)plan->p2_for_step[i];
    const size_t W = (size_t)w->width, D = (size_t)w->disparities, stride = (size_t)w->stride;
    memset(w->zero, 0, stride);
    set_sentinels(w->zero, 1, stride, D);
    memset(w->horizontal, 0, 4 * stride);
    set_sentinels(w->horizontal, 4, stride, D);
    for (int k = 0; k < 2; k++) {
        if (plan->paths & (PARALLAX_SGM_BOTTOM_UP | PARALLAX_SGM_TOP_DOWN)) set_sentinels(w->up_rows[k], W, stride, D);
        for (int p = 1; p < 3; p++) set_sentinels(w->path_rows[p][k], W, stride, D);
    }
    atomic_init(&w->produced, 0);
    atomic_init(&w->consumed, 0);
}

parallax_sgm_invalid_counts parallax_sgm_counts(const void *work) { return ((const sgm_work *)work)->counts; }

// MARK: Luma and census

// Row `row` of an image into `out` (width samples), padded by `rx` copies of each end sample.
static void load_padded(parallax_sgm_luma image, int32_t width, int32_t row, int32_t rx, uint8_t *out) {
    const uint8_t *src = image.base + (ptrdiff_t)row * image.row_bytes;
    uint8_t *dst = out + rx;
    if (image.step == 1) {
        memcpy(dst, src, (size_t)width);
    } else {
        for (int32_t x = 0; x < width; x++) dst[x] = src[(ptrdiff_t)x * image.step];
    }
    for (int32_t i = 1; i <= rx; i++) {
        dst[-i] = dst[0];
        dst[width - 1 + i] = dst[width - 1];
    }
}

static int32_t clamp_row(int32_t row, int32_t height) { return row < 0 ? 0 : (row >= height ? height - 1 : row); }

// The census codes of row y of image `which` (0 left, 1 right), its padded rows kept in the
// work area's ring (rows a step apart share all but one). Returns the centre row, unpadded.
static const uint8_t *census(sgm_work *w, const sgm_kernels *k, int which, parallax_sgm_luma image, int32_t y,
                             uint64_t *codes) {
    const parallax_sgm_plan *plan = w->plan;
    const int32_t wh = plan->census_height, rx = plan->census_width / 2, ry = wh / 2;
    const uint8_t *rows[MAX_WINDOW_SIDE];
    for (int32_t j = 0; j < wh; j++) {
        const int32_t row = clamp_row(y - ry + j, w->height);
        const int32_t slot = row % wh;
        if (w->padded_row[which][slot] != row + 1) {  // +1: 0 marks an empty slot
            load_padded(image, w->width, row, rx, w->padded[which][slot]);
            w->padded_row[which][slot] = row + 1;
        }
        rows[j] = w->padded[which][slot] + rx;
    }
    k->census_from_rows(rows, w->width, plan->census_width, wh, codes);
    return rows[ry];
}

// MARK: The two stages

static void wait_until(_Atomic int64_t *counter, int64_t at_least) {
    // Spins briefly (the other stage is usually a row away), then yields the core.
    for (int spins = 0; atomic_load_explicit(counter, memory_order_acquire) < at_least; spins++) {
        if (spins > 64) sched_yield();
    }
}

static void wait_for_room(sgm_work *w, int64_t step) {
    while (step - atomic_load_explicit(&w->consumed, memory_order_acquire) >= RING_SLOTS) {
        sched_yield();
    }
}

// The pass and row of step s: the first pass top down, the second bottom up.
static int32_t row_of(const sgm_work *w, int32_t s, int *second) {
    *second = s >= w->height;
    return *second ? 2 * w->height - 1 - s : s;
}

// Stage 1 of step s: census, costs, the horizontal and top-down paths (first pass) or bottom-up (second).
static void first_stage_step(sgm_work *w, const sgm_kernels *k, parallax_sgm_luma left, parallax_sgm_luma right,
                             int32_t s) {
    const parallax_sgm_plan *plan = w->plan;
    int second;
    const int32_t y = row_of(w, s, &second);
    const int slot = s % RING_SLOTS;
    const int32_t W = w->width, D = w->disparities;
    const uint8_t *luma = census(w, k, 0, left, y, w->census_left);
    // The right codes go in reverse order, so that a pixel's candidates are consecutive.
    uint64_t *reversed = w->census_reversed + w->pad;
    census(w, k, 1, right, y, reversed);
    for (int32_t i = 0, j = W - 1; i < j; i++, j--) {
        const uint64_t t = reversed[i];
        reversed[i] = reversed[j];
        reversed[j] = t;
    }
    uint8_t *costs = w->slot_costs[slot];
    uint16_t *sums = w->slot_sums[slot];
    k->cost_row(w->census_left, w->census_reversed, w->pad, W, w->min_disparity, D, w->no_match, costs);
    memcpy(w->slot_luma[slot], luma, (size_t)W);
    const uint8_t p1 = w->p1;
    uint8_t *h = w->horizontal + 8;
    // This stage's paths write the row's sums first (the second stage adds to them); with none
    // here, the second stage stores them (first_stage_writes). Its vertical path (top down in
    // the first pass, bottom up in the second) keeps its rows in up_rows: one pass at a time.
    int written = 0;
    if (!second) {
        const int forward = (plan->paths & PARALLAX_SGM_LEFT_TO_RIGHT) != 0, backward = (plan->paths & PARALLAX_SGM_RIGHT_TO_LEFT) != 0;
        if (forward || backward) {
            k->paths_horizontal(costs, luma, W, D, forward, backward, p1, w->p2_for_step, h, w->stride, w->zero + 8, sums);
            written = 1;
        }
    }
    if (plan->paths & (second ? PARALLAX_SGM_BOTTOM_UP : PARALLAX_SGM_TOP_DOWN)) {
        const int first = second ? y == w->height - 1 : y == 0, cur = y & 1;
        // The previous row's luma is the slot before's (the ring holds it until stage 2 is done
        // with it, and stage 1 wrote it); at the pass's first row there is none.
        const uint8_t *prev_luma = first ? luma : w->slot_luma[(s + RING_SLOTS - 1) % RING_SLOTS];
        const int32_t dx[1] = {0};
        const uint8_t *prev[1] = {first ? NULL : w->up_rows[cur ^ 1] + 8};
        const uint8_t *prev_min[1] = {w->up_min[cur ^ 1]};
        uint8_t *out[1] = {w->up_rows[cur] + 8}, *out_min[1] = {w->up_min[cur]};
        k->paths_from_row(costs, luma, prev_luma, W, D, 1, dx, p1, w->p2_for_step, prev, prev_min, out, out_min,
                          w->stride, w->zero + 8, !written, sums);
    }
}

// Whether the first stage writes the sums of a row of the first (`second` 0) or second pass.
static int first_stage_writes(const parallax_sgm_plan *plan, int second) {
    return second ? (plan->paths & PARALLAX_SGM_BOTTOM_UP) != 0
                  : (plan->paths & (PARALLAX_SGM_LEFT_TO_RIGHT | PARALLAX_SGM_RIGHT_TO_LEFT | PARALLAX_SGM_TOP_DOWN)) != 0;
}

// The checks and the sub-pixel step for row y's winners; writes the row's outputs.
static void select_row(sgm_work *w, const sgm_kernels *k, const uint16_t *sums, const uint8_t *costs, int16_t *out16,
                       float *out) {
    const parallax_sgm_plan *plan = w->plan;
    const int32_t W = w->width, D = w->disparities, dmin = w->min_disparity;
    const size_t right_count = (size_t)W + 2 * (size_t)w->pad;
    for (size_t i = 0; i < right_count; i++) w->right_best[i] = UINT32_MAX;
    k->winners_row(sums, W, dmin, D, w->pad, w->best, w->right_best);
    for (int32_t x = 0; x < W; x++) {
        const uint32_t packed = w->best[x];
        const int32_t d = (int32_t)(packed & 0xFF), least = (int32_t)(packed >> 8);
        const uint16_t *s = sums + (ptrdiff_t)x * D;
        int valid = 1;
        if (d > x - dmin || d < x - dmin - (W - 1)) {
            w->counts.outside++;
            valid = 0;
        } else if (plan->uniqueness_percent > 0 &&
                   (int64_t)k->runner_up(s, D, d) * 100 < (int64_t)least * (100 + plan->uniqueness_percent)) {
            w->counts.ambiguous++;
            valid = 0;
        } else if (plan->lr_max_difference >= 0) {
            const int32_t xr = x - dmin - d;
            const int32_t partner = (int32_t)(w->right_best[w->pad + (W - 1 - xr)] & 0xFF);
            if (abs(partner - d) > plan->lr_max_difference) {
                w->counts.inconsistent++;
                valid = 0;
            }
        }
        if (!valid) {
            out16[x] = PARALLAX_SGM_INVALID;
            if (out) out[x] = __builtin_inff();
            continue;
        }
        // The sub-pixel offset from the matching costs at d − 1, d and d + 1 summed over the
        // SUBPIXEL_RADIUS pixels either side in the row (not from the path sums: P1 caps their
        // rise on both sides of the winner, which draws any fit towards whole disparities), by
        // two lines of equal and opposite slope through the three (the steeper side sets the
        // slope): δ = (c₋ − c₊) / (2 (max(c₋, c₊) − c₀)), exact for a V-shaped cost, |δ| ≤ ½
        // while c₀ is the least of the three; 0 where it is not (the paths chose otherwise).
        int32_t sixteenths = 0;
        float offset = 0;
        if (d > 0 && d < D - 1) {
            int32_t below = 0, centre = 0, above = 0;
            for (int32_t i = x - SUBPIXEL_RADIUS; i <= x + SUBPIXEL_RADIUS; i++) {
                const uint8_t *c = costs + (ptrdiff_t)(i < 0 ? 0 : (i >= W ? W - 1 : i)) * D;
                below += c[d - 1], centre += c[d], above += c[d + 1];
            }
            const int32_t rise = (below > above ? below : above) - centre;
            if (rise > 0 && below >= centre && above >= centre) {
                // 16 δ rounded to the nearest, halves away from zero.
                const int32_t numerator = 16 * (below - above), denominator = 2 * rise;
                const int32_t magnitude = (2 * abs(numerator) + denominator) / (2 * denominator);
                sixteenths = numerator < 0 ? -magnitude : magnitude;
                offset = (float)(below - above) / (float)denominator;
            }
        }
        out16[x] = (int16_t)(16 * (dmin + d) + sixteenths);
        if (out) out[x] = (float)(dmin + d) + offset;
    }
}

// Stage 2 of step s: the paths from the row before, the sums, and in the last pass the winners.
static void second_stage_step(sgm_work *w, const sgm_kernels *k, int32_t s, int16_t *disparity16,
                              ptrdiff_t stride16, float *disparity, ptrdiff_t stride) {
    const parallax_sgm_plan *plan = w->plan;
    int second;
    const int32_t y = row_of(w, s, &second);
    const int slot = s % RING_SLOTS;
    const int32_t W = w->width, D = w->disparities;
    const size_t cells = (size_t)W * (size_t)D;
    const uint8_t *costs = w->slot_costs[slot];
    uint16_t *sums = w->slot_sums[slot];
    const uint8_t *luma = w->slot_luma[slot];
    const int first = second ? y == w->height - 1 : y == 0;
    const int cur = y & 1;
    const uint8_t p1 = w->p1;
    // Top down is the first stage's (it balances the two: census, costs and three paths there).
    static const uint32_t first_paths[3] = {0, PARALLAX_SGM_TOP_LEFT, PARALLAX_SGM_TOP_RIGHT};
    static const uint32_t second_paths[3] = {0, PARALLAX_SGM_BOTTOM_LEFT, PARALLAX_SGM_BOTTOM_RIGHT};
    static const int32_t from_column[3] = {0, -1, 1};
    int32_t count = 0, dx[3];
    const uint8_t *prev[3], *prev_min[3];
    uint8_t *out[3], *out_min[3];
    for (int p = 0; p < 3; p++) {
        if ((plan->paths & (second ? second_paths[p] : first_paths[p])) == 0) continue;
        dx[count] = from_column[p];
        prev[count] = first ? NULL : w->path_rows[p][cur ^ 1] + 8;
        prev_min[count] = w->path_min[p][cur ^ 1];
        out[count] = w->path_rows[p][cur] + 8;
        out_min[count] = w->path_min[p][cur];
        count++;
    }
    // Every path of a pass is in one stage or the other: when the first wrote no sums, this
    // one has paths and stores them.
    const int set = !first_stage_writes(plan, second);
    if (count > 0)
        k->paths_from_row(costs, luma, w->prev_luma, W, D, count, dx, p1, w->p2_for_step, prev, prev_min, out, out_min,
                          w->stride, w->zero + 8, set, sums);
    memcpy(w->prev_luma, luma, (size_t)W);
    uint16_t *stored = w->two_pass ? w->volume + (size_t)y * cells : NULL;
    if (w->two_pass && !second) {
        memcpy(stored, sums, sizeof(uint16_t) * cells);
        return;
    }
    if (stored) k->add_row(sums, stored, (ptrdiff_t)cells);
    select_row(w, k, sums, costs, disparity16 + (ptrdiff_t)y * stride16, disparity ? disparity + (ptrdiff_t)y * stride : NULL);
}

// MARK: The speckle filter

// Regions of pixels joined through 4-neighbours whose disparities differ by at most the plan's
// difference; a region of at most speckle_max_size pixels becomes invalid. A breadth-first walk
// from each unvisited valid pixel, the region's pixels listed in `region` as they are found.
static void filter_speckles(sgm_work *w, int16_t *disparity16, ptrdiff_t stride16, float *disparity,
                            ptrdiff_t stride) {
    const parallax_sgm_plan *plan = w->plan;
    const int32_t W = w->width, H = w->height, limit = plan->speckle_max_size;
    const int32_t range = plan->speckle_max_difference16;
    int32_t *labels = w->labels, *region = w->region;
    memset(labels, 0, sizeof(int32_t) * (size_t)W * (size_t)H);
    for (int32_t y0 = 0; y0 < H; y0++) {
        for (int32_t x0 = 0; x0 < W; x0++) {
            const int32_t start = y0 * W + x0;
            if (labels[start] || disparity16[(ptrdiff_t)y0 * stride16 + x0] == PARALLAX_SGM_INVALID) continue;
            labels[start] = 1;
            int32_t head = 0, tail = 0;
            region[tail++] = start;
            while (head < tail) {
                const int32_t at = region[head++], x = at % W, y = at / W;
                const int32_t value = disparity16[(ptrdiff_t)y * stride16 + x];
                const int32_t nx[4] = {x - 1, x + 1, x, x}, ny[4] = {y, y, y - 1, y + 1};
                for (int n = 0; n < 4; n++) {
                    if (nx[n] < 0 || nx[n] >= W || ny[n] < 0 || ny[n] >= H) continue;
                    const int32_t next = ny[n] * W + nx[n];
                    if (labels[next]) continue;
                    const int16_t other = disparity16[(ptrdiff_t)ny[n] * stride16 + nx[n]];
                    if (other == PARALLAX_SGM_INVALID || abs((int32_t)other - value) > range) continue;
                    labels[next] = 1;
                    region[tail++] = next;
                }
            }
            if (tail > limit) continue;
            w->counts.speckle += tail;
            for (int32_t i = 0; i < tail; i++) {
                const int32_t x = region[i] % W, y = region[i] / W;
                disparity16[(ptrdiff_t)y * stride16 + x] = PARALLAX_SGM_INVALID;
                if (disparity) disparity[(ptrdiff_t)y * stride + x] = __builtin_inff();
            }
        }
    }
}

// MARK: The match

int32_t parallax_sgm_match(void *work, parallax_sgm_level level, int32_t stage, parallax_sgm_luma left,
                           parallax_sgm_luma right, int16_t *disparity16, ptrdiff_t stride16, float *disparity,
                           ptrdiff_t stride) {
    sgm_work *w = work;
    const sgm_kernels *k = kernels_for(level);
    if (stage != 2) {
        for (int j = 0; j < MAX_WINDOW_SIDE; j++) w->padded_row[0][j] = w->padded_row[1][j] = 0;
    }
    if (stage == 0) {
        memset(&w->counts, 0, sizeof w->counts);
        for (int32_t s = 0; s < w->steps; s++) {
            first_stage_step(w, k, left, right, s);
            second_stage_step(w, k, s, disparity16, stride16, disparity, stride);
        }
    } else if (stage == 1) {
        for (int32_t s = 0; s < w->steps; s++) {
            wait_for_room(w, s);
            first_stage_step(w, k, left, right, s);
            atomic_store_explicit(&w->produced, (int64_t)s + 1, memory_order_release);
        }
    } else {
        memset(&w->counts, 0, sizeof w->counts);
        for (int32_t s = 0; s < w->steps; s++) {
            wait_until(&w->produced, (int64_t)s + 1);
            second_stage_step(w, k, s, disparity16, stride16, disparity, stride);
            atomic_store_explicit(&w->consumed, (int64_t)s + 1, memory_order_release);
        }
    }
    if (stage != 1 && w->plan->speckle_max_size > 0) filter_speckles(w, disparity16, stride16, disparity, stride);
    return 0;
}

void parallax_sgm_begin(void *work) {
    sgm_work *w = work;
    atomic_store(&w->produced, 0);
    atomic_store(&w->consumed, 0);
}

// MARK: Stages on their own

void parallax_sgm_census_row(parallax_sgm_level level, parallax_sgm_luma image, int32_t width, int32_t height,
                             int32_t window_width, int32_t window_height, int32_t y, uint64_t *codes) {
    const int32_t rx = window_width / 2, ry = window_height / 2;
    uint8_t *buffers = malloc((size_t)window_height * (size_t)(width + 2 * rx));
    const uint8_t *rows[MAX_WINDOW_SIDE];
    for (int32_t j = 0; j < window_height; j++) {
        uint8_t *row = buffers + (size_t)j * (size_t)(width + 2 * rx);
        load_padded(image, width, clamp_row(y - ry + j, height), rx, row);
        rows[j] = row + rx;
    }
    kernels_for(level)->census_from_rows(rows, width, window_width, window_height, codes);
    free(buffers);
}

void parallax_sgm_cost_row(parallax_sgm_level level, const uint64_t *left, const uint64_t *right, int32_t width,
                           int32_t min_disparity, int32_t disparities, uint8_t no_match, uint8_t *costs) {
    const ptrdiff_t pad = abs(min_disparity) + disparities;
    uint64_t *reversed = calloc((size_t)width + 2 * (size_t)pad, sizeof(uint64_t));
    for (int32_t i = 0; i < width; i++) reversed[pad + i] = right[width - 1 - i];
    kernels_for(level)->cost_row(left, reversed, pad, width, min_disparity, disparities, no_match, costs);
    free(reversed);
}

uint8_t parallax_sgm_path_step(parallax_sgm_level level, const uint8_t *c, const uint8_t *prev, uint8_t prev_min,
                               uint8_t p1, uint8_t p2, int32_t disparities, uint8_t *out, uint16_t *sum) {
    return kernels_for(level)->step(c, prev, prev_min, p1, p2, disparities, out, sum);
}
