// The semi-global matcher: the work area, the two stages and their ring, the winners' checks,
// the sub-pixel step and the speckle filter (see include/CDepthKernels.h for the algorithm and
// the bounds). The row kernels are sgm_rows.h, instantiated here once per vector level.
#include "CDepthKernels.h"

#include <linux/futex.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

// MARK: The row kernels at each level

// The sweeps' helpers pass 16-bit vectors wider than the level's registers by value; they are
// all always_inline, so no such value ever crosses a call and the ABI change clang warns of
// cannot arise.
#pragma clang diagnostic ignored "-Wpsabi"

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

// Lane lists for the sweeps' shuffles (sgm_sweep.h): b, b + 1, …, b + width − 1.
#define SGM_SEQ16(b)                                                                                               \
    (b), (b) + 1, (b) + 2, (b) + 3, (b) + 4, (b) + 5, (b) + 6, (b) + 7, (b) + 8, (b) + 9, (b) + 10, (b) + 11,       \
        (b) + 12, (b) + 13, (b) + 14, (b) + 15
#define SGM_SEQ32(b) SGM_SEQ16(b), SGM_SEQ16((b) + 16)
#define SGM_SEQ64(b) SGM_SEQ32(b), SGM_SEQ32((b) + 32)

// A path from the row before, as a sweep runs it: the previous row's vectors (`stride`
// apart, each with sentinels at [−1] and [D]) and their least, or prev NULL at the pass's
// first row; this row's go to out and out_min. out NULL: the sweep does not run the path.
typedef struct {
    const uint8_t *prev, *prev_min;
    uint8_t *out, *out_min;
} sgm_row_path;

// One sweep along a row (sgm_sweep.h): the row's costs (width · D) and left luma, the previous
// row's luma (in the pass's order), the paths it runs and where their values go.
typedef struct {
    const uint8_t *costs, *luma, *prev_luma;
    int32_t width, disparities, min_disparity;
    ptrdiff_t stride, pad;
    uint8_t p1;
    const uint8_t *p2_for_step;
    // D zeros with sentinels: the values before a path's first pixel.
    const uint8_t *zero;
    // Whether the sweep runs its horizontal path (the sweep keeps its values itself).
    int horizontal;
    // The paths from the row before (forward sweep only): from (x, y ∓ 1), (x − 1, y ∓ 1) and
    // (x + 1, y ∓ 1).
    sgm_row_path straight, from_left, from_right;
    // Forward: the row's partial sums, written. Backward: the forward sweep's (or NULL), the
    // first pass's (or NULL), and where to store the completed sums instead of picking winners
    // (the first pass of two), or NULL.
    uint16_t *sums;
    const uint16_t *partial, *earlier;
    uint16_t *store;
    // The winners (backward, when not storing): see sweep_backward.
    int32_t uniqueness;
    uint8_t *best, *ambiguous;
    uint16_t *least;
    uint8_t *right;
} sgm_sweep;

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

// AVX-512 with VPOPCNTDQ and VBMI as well (Intel Ice Lake and later, AMD Zen 4): one
// population count per code instead of a table lookup per nibble, one permutation per
// shifted vector; the same numbers.
#define SGM_NAME(x) x##_avx512_icelake
#define SGM_TARGET __attribute__((target("avx2,fma,avx512f,avx512dq,avx512bw,avx512vl,avx512vbmi,avx512vpopcntdq")))
#define SGM_LANES 64
#include "sgm_rows.h"
#undef SGM_NAME
#undef SGM_TARGET
#undef SGM_LANES

#include <cpuid.h>

// Whether the CPU has AVX-512 VPOPCNTDQ and VBMI (cpuid leaf 7, ECX bits 14 and 1); asked
// once. The caller passes level 2 only where the CPU has AVX-512 F, DQ, BW and VL and the OS
// saves its state.
static int has_icelake_extensions(void) {
    static _Atomic int known = -1;
    int value = atomic_load(&known);
    if (value < 0) {
        unsigned a = 0, b = 0, c = 0, d = 0;
        value = 0;
        if (__get_cpuid_max(0, 0) >= 7) {
            __cpuid_count(7, 0, a, b, c, d);
            value = (c & (1u << 14)) != 0 && (c & (1u << 1)) != 0;
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
    void (*sweep_forward)(const sgm_sweep *);
    void (*sweep_backward)(const sgm_sweep *);
} sgm_kernels;

#define SGM_KERNELS(suffix)                                                                                        \
    {census_from_rows_##suffix, cost_row_##suffix, step_##suffix, sweep_forward_##suffix, sweep_backward_##suffix}

static const sgm_kernels kernels_baseline = SGM_KERNELS(baseline);
#if defined(__x86_64__)
static const sgm_kernels kernels_avx2 = SGM_KERNELS(avx2);
static const sgm_kernels kernels_avx512 = SGM_KERNELS(avx512);
static const sgm_kernels kernels_avx512_icelake = SGM_KERNELS(avx512_icelake);
#endif

// The caller has asked the CPU (SIMDLevel): a level it does not report is never passed.
static const sgm_kernels *kernels_for(parallax_sgm_level level) {
#if defined(__x86_64__)
    if (level >= 2) return has_icelake_extensions() ? &kernels_avx512_icelake : &kernels_avx512;
    if (level == 1) return &kernels_avx2;
#else
    (void)level;
#endif
    return &kernels_baseline;
}

// MARK: The plan

// The sub-pixel fit's window: the matching costs of 2 · 2 + 1 pixels of the row (select_row).
enum { MAX_WINDOW_SIDE = 15, RING_SLOTS = 8, SENTINEL = 0xFF, SUBPIXEL_RADIUS = 2 };

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

// A step counter one stage advances and the other waits on: the steps done, and whether the
// other sleeps on it (futex).
typedef struct {
    _Atomic int32_t value;
    _Atomic int32_t waiting;
} sgm_counter;

typedef struct {
    // The ring's counters, each on its own cache line: steps the first stage has handed over
    // and steps the second has finished with.
    _Alignas(64) sgm_counter produced;
    _Alignas(64) sgm_counter consumed;
    _Alignas(64) const parallax_sgm_plan *plan;
    int32_t width, height, disparities, min_disparity;
    ptrdiff_t stride;   // bytes between path vectors: D rounded up to 64, + 64 of sentinels
    ptrdiff_t pad;      // padding of the reversed right codes and right winners: |dmin| + D
    int32_t two_pass, steps;
    uint8_t no_match, p1;
    uint8_t p2_for_step[256];
    // The ring: each slot one row's costs, its partial sums and its left luma.
    uint8_t *slot_costs[RING_SLOTS];
    uint16_t *slot_sums[RING_SLOTS];
    uint8_t *slot_luma[RING_SLOTS];
    // The first stage's own: padded luma rows (per image, a ring of the window's rows keyed by
    // row), census codes, the rows of the paths from the row before (this row and the one
    // before) with their least values.
    uint8_t *padded[2][MAX_WINDOW_SIDE];
    int32_t padded_row[2][MAX_WINDOW_SIDE];
    uint64_t *census_left, *census_reversed;
    uint8_t *straight_rows[2], *straight_min[2], *left_rows[2], *left_min[2], *right_rows[2], *right_min[2];
    // The second stage's own: the winners, the right winners, the first pass's sums, the
    // filter's buffers; and a zero vector both read.
    uint8_t *zero;
    uint8_t *best, *ambiguous, *right_best;
    uint16_t *least;
    uint16_t *volume;
    // The speckle filter's: each run's parent or, at a root, minus its region's size; the run
    // of each pixel of the row before and of this row; the runs so far; the row before's map.
    int32_t *run_parent, *row_runs[2];
    int32_t run_count, speckle_rows;
    const int16_t *speckle_before;
    parallax_sgm_invalid_counts counts;
} sgm_work;

static size_t round_up(size_t n) { return (n + 63) & ~(size_t)63; }

// Walks the layout: with `base` NULL only sums the sizes. Every buffer 64-byte aligned.
static size_t layout(const parallax_sgm_plan *plan, sgm_work *w, uint8_t *base) {
    const size_t W = (size_t)plan->width, H = (size_t)plan->height, D = (size_t)plan->disparities;
    const size_t stride = round_up(D) + 64, pad = (size_t)abs(plan->min_disparity) + D;
    const size_t rx = (size_t)plan->census_width / 2;
    size_t at = round_up(sizeof(sgm_work));
#define TAKE(field, type, count)                                                                                   \
    do {                                                                                                           \
        if (base) field = (count) > 0 ? (type *)(base + at) : NULL;                                               \
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
        // rx more on the right and a vector's width: census_from_rows reads a whole vector at the row's end.
        for (int j = 0; j < plan->census_height; j++) TAKE(v->padded[i][j], uint8_t, W + 2 * rx + 64);
    }
    TAKE(v->census_left, uint64_t, W);
    TAKE(v->census_reversed, uint64_t, W + 2 * pad);
    // A row's path vectors for each pixel (path_vectors), for the paths the plan has (both
    // passes share them).
    const uint32_t paths = plan->paths;
    const int straight = (paths & (PARALLAX_SGM_TOP_DOWN | PARALLAX_SGM_BOTTOM_UP)) != 0;
    const int from_left = (paths & (PARALLAX_SGM_TOP_LEFT | PARALLAX_SGM_BOTTOM_LEFT)) != 0;
    const int from_right = (paths & (PARALLAX_SGM_TOP_RIGHT | PARALLAX_SGM_BOTTOM_RIGHT)) != 0;
    for (int k = 0; k < 2; k++) {
        TAKE(v->straight_rows[k], uint8_t, straight ? 64 + W * stride : 0);
        TAKE(v->straight_min[k], uint8_t, straight ? W : 0);
        TAKE(v->left_rows[k], uint8_t, from_left ? 64 + W * stride : 0);
        TAKE(v->left_min[k], uint8_t, from_left ? W : 0);
        TAKE(v->right_rows[k], uint8_t, from_right ? 64 + W * stride : 0);
        TAKE(v->right_min[k], uint8_t, from_right ? W : 0);
    }
    TAKE(v->zero, uint8_t, 64 + stride);
    TAKE(v->best, uint8_t, W);
    TAKE(v->least, uint16_t, W);
    TAKE(v->ambiguous, uint8_t, W);
    TAKE(v->right_best, uint8_t, W + 2 * pad);
    const int two_pass = (plan->paths & PARALLAX_SGM_SECOND_PASS) != 0;
    TAKE(v->volume, uint16_t, two_pass ? H * W * D : 0);
    const int speckle = plan->speckle_max_size > 0;
    TAKE(v->run_parent, int32_t, speckle ? W * H : 0);
    for (int k = 0; k < 2; k++) TAKE(v->row_runs[k], int32_t, speckle ? W : 0);
#undef TAKE
    return at;
}

size_t parallax_sgm_work_bytes(const parallax_sgm_plan *plan) {
    if (parallax_sgm_plan_check(plan) != 0) return 0;
    return layout(plan, NULL, NULL);
}

// A buffer of `count` path vectors: 64 bytes of sentinels, then the vectors `stride` bytes
// apart, each followed by stride − D sentinels, so that every vector has one at [−1] and [D].
static uint8_t *path_vectors(uint8_t *rows) { return rows + 64; }

static void set_sentinels(uint8_t *rows, size_t count, size_t stride, size_t D) {
    if (rows == NULL) return;
    memset(rows, SENTINEL, 64);
    for (size_t i = 0; i < count; i++) memset(path_vectors(rows) + i * stride + D, SENTINEL, stride - D);
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
    w->stride = (ptrdiff_t)round_up((size_t)plan->disparities) + 64;
    w->pad = abs(plan->min_disparity) + plan->disparities;
    w->two_pass = (plan->paths & PARALLAX_SGM_SECOND_PASS) != 0;
    w->steps = plan->height * (w->two_pass ? 2 : 1);
    w->no_match = (uint8_t)(plan->census_width * plan->census_height - 1);
    w->p1 = (uint8_t)plan->p1;
    for (int i = 0; i < 256; i++) w->p2_for_step[i] = (uint8_t)plan->p2_for_step[i];
    const size_t W = (size_t)w->width, D = (size_t)w->disparities, stride = (size_t)w->stride;
    memset(w->zero, 0, 64 + stride);
    // The census reads a vector past each padded row's end: defined bytes, whose codes are dropped.
    const size_t padded_bytes = W + 2 * (size_t)(plan->census_width / 2) + 64;
    for (int i = 0; i < 2; i++) {
        for (int j = 0; j < plan->census_height; j++) memset(w->padded[i][j], 0, padded_bytes);
    }
    set_sentinels(w->zero, 1, stride, D);
    for (int k = 0; k < 2; k++) {
        set_sentinels(w->straight_rows[k], W, stride, D);
        set_sentinels(w->left_rows[k], W, stride, D);
        set_sentinels(w->right_rows[k], W, stride, D);
    }
    atomic_init(&w->produced.value, 0);
    atomic_init(&w->produced.waiting, 0);
    atomic_init(&w->consumed.value, 0);
    atomic_init(&w->consumed.waiting, 0);
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

// MARK: The speckle filter

// Regions of pixels joined through 4-neighbours whose disparities differ by at most the plan's
// difference; a region of at most speckle_max_size pixels becomes invalid. Row by row as the
// rows are made: each row's runs (neighbours along the row joined) become sets, joined with
// the row before's where a pixel and the one above it are joined; at the end each row's runs,
// found again in the same order (so numbered the same), go when their set is small. The same
// regions as a walk from each pixel would find.

// The root of run r's set, the path to it shortened on the way.
static int32_t run_root(int32_t *parent, int32_t r) {
    int32_t root = r;
    while (parent[root] >= 0) root = parent[root];
    while (parent[r] >= 0) {
        const int32_t next = parent[r];
        parent[r] = root;
        r = next;
    }
    return root;
}

// Joins the sets of runs a and b, the smaller under the larger.
static void join_runs(int32_t *parent, int32_t a, int32_t b) {
    a = run_root(parent, a);
    b = run_root(parent, b);
    if (a == b) return;
    if (parent[a] > parent[b]) {
        const int32_t t = a;
        a = b;
        b = t;
    }
    parent[a] += parent[b];
    parent[b] = a;
}

// Whether neighbours with values a and b (a valid) are joined.
static int joined(int16_t a, int16_t b, int32_t range) {
    return b != PARALLAX_SGM_INVALID && abs((int32_t)a - (int32_t)b) <= range;
}

// Numbers the runs of `row` from `first` on into runs[x] (−1 where invalid); returns the next
// free number. With `parent`, each new run starts a set of its length.
static int32_t number_runs(const int16_t *row, int32_t W, int32_t range, int32_t first, int32_t *runs, int32_t *parent) {
    int32_t next = first;
    for (int32_t x = 0; x < W; x++) {
        if (row[x] == PARALLAX_SGM_INVALID) {
            runs[x] = -1;
            continue;
        }
        if (x == 0 || runs[x - 1] < 0 || !joined(row[x], row[x - 1], range)) {
            if (parent) parent[next] = 0;
            next++;
        }
        runs[x] = next - 1;
        if (parent) parent[next - 1]--;
    }
    return next;
}

// Row `row` of the map is final: its runs, joined with the row before's.
static void speckle_row(sgm_work *w, const int16_t *row) {
    const int32_t W = w->width, range = w->plan->speckle_max_difference16;
    int32_t *runs = w->row_runs[w->speckle_rows & 1], *above = w->row_runs[(w->speckle_rows & 1) ^ 1];
    w->run_count = number_runs(row, W, range, w->run_count, runs, w->run_parent);
    if (w->speckle_rows > 0) {
        const int16_t *before = w->speckle_before;
        for (int32_t x = 0; x < W; x++) {
            if (runs[x] < 0 || above[x] < 0 || !joined(row[x], before[x], range)) continue;
            // Along a pair of runs already joined, the next pixels would join them again.
            if (x > 0 && runs[x - 1] == runs[x] && above[x - 1] == above[x] && joined(row[x - 1], before[x - 1], range)) continue;
            join_runs(w->run_parent, runs[x], above[x]);
        }
    }
    w->speckle_before = row;
    w->speckle_rows++;
}

// After the last row: the runs of small sets become invalid, rows in the order they were made.
static void finish_speckles(sgm_work *w, int16_t *disparity16, ptrdiff_t stride16, float *disparity, ptrdiff_t stride) {
    const int32_t W = w->width, H = w->height, range = w->plan->speckle_max_difference16;
    const int32_t limit = w->plan->speckle_max_size;
    int32_t *runs = w->row_runs[0], next = 0;
    for (int32_t i = 0; i < H; i++) {
        // The last pass made the rows: top down with one pass, bottom up with two.
        const int32_t y = w->two_pass ? H - 1 - i : i;
        int16_t *row = disparity16 + (ptrdiff_t)y * stride16;
        next = number_runs(row, W, range, next, runs, NULL);
        // Each run's set asked once, at its first pixel.
        int32_t run = -1, small = 0;
        for (int32_t x = 0; x < W; x++) {
            if (runs[x] < 0) continue;
            if (runs[x] != run) {
                run = runs[x];
                small = -w->run_parent[run_root(w->run_parent, run)] <= limit;
            }
            if (!small) continue;
            row[x] = PARALLAX_SGM_INVALID;
            if (disparity) disparity[(ptrdiff_t)y * stride + x] = __builtin_inff();
            w->counts.speckle++;
        }
    }
    w->run_count = 0;
    w->speckle_rows = 0;
}

// MARK: The two stages

// The CPU told that this is a wait loop: on a core shared with another hardware thread (a
// virtual machine's processors may be two threads of one core) the other runs meanwhile.
static inline void relax(void) {
#if defined(__x86_64__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

// Waits until `counter` reaches `at_least`: spins a while (the other stage is usually a row
// away: a few to a few tens of microseconds), then sleeps on the counter until the other
// stage's next step wakes it (a millisecond at most, should a wake-up be missed).
static void wait_until(sgm_counter *counter, int32_t at_least) {
    for (int spins = 0; atomic_load_explicit(&counter->value, memory_order_acquire) < at_least; spins++) {
        if (spins < 4096) {
            relax();
            continue;
        }
        atomic_store(&counter->waiting, 1);
        const int32_t seen = atomic_load(&counter->value);
        if (seen >= at_least) break;
        const struct timespec limit = {0, 1000000};
        syscall(SYS_futex, &counter->value, FUTEX_WAIT_PRIVATE, seen, &limit, NULL, 0);
    }
}

// Sets `counter` to `value`, waking the other stage if it sleeps on it.
static void advance(sgm_counter *counter, int32_t value) {
    atomic_store(&counter->value, value);
    if (atomic_load(&counter->waiting)) {
        atomic_store(&counter->waiting, 0);
        syscall(SYS_futex, &counter->value, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    }
}

// The pass and row of step s: the first pass top down, the second bottom up.
static int32_t row_of(const sgm_work *w, int32_t s, int *second) {
    *second = s >= w->height;
    return *second ? 2 * w->height - 1 - s : s;
}

// The sweep's common part for row y of a pass: its costs and luma, the previous row's luma.
static sgm_sweep sweep_of(const sgm_work *w, const uint8_t *costs, const uint8_t *luma, const uint8_t *prev_luma) {
    sgm_sweep s;
    memset(&s, 0, sizeof s);
    s.costs = costs;
    s.luma = luma;
    s.prev_luma = prev_luma;
    s.width = w->width;
    s.disparities = w->disparities;
    s.min_disparity = w->min_disparity;
    s.stride = w->stride;
    s.pad = w->pad;
    s.p1 = w->p1;
    s.p2_for_step = w->p2_for_step;
    s.zero = path_vectors(w->zero);
    return s;
}

// A path from the row before when the plan has it: `rows` and `least` this row's (cur) and the
// previous one's (cur ^ 1, none at the pass's first row).
static sgm_row_path row_path(int enabled, uint8_t *const rows[2], uint8_t *const least[2], int cur, int first) {
    sgm_row_path p = {NULL, NULL, NULL, NULL};
    if (!enabled) return p;
    p.prev = first ? NULL : path_vectors(rows[cur ^ 1]);
    p.prev_min = least[cur ^ 1];
    p.out = path_vectors(rows[cur]);
    p.out_min = least[cur];
    return p;
}

// Whether the first stage's sweep writes the sums of a row of the first (`second` 0) or second pass.
static int first_stage_writes(const parallax_sgm_plan *plan, int second) {
    return (plan->paths & (second ? PARALLAX_SGM_SECOND_PASS : PARALLAX_SGM_FIRST_PASS & ~PARALLAX_SGM_RIGHT_TO_LEFT)) != 0;
}

// Stage 1 of step s: census, costs and the forward sweep (left to right, top down or bottom up,
// and the three paths from the row before), which writes the row's partial sums.
static void first_stage_step(sgm_work *w, const sgm_kernels *k, parallax_sgm_luma left, parallax_sgm_luma right,
                             int32_t s) {
    const uint32_t paths = w->plan->paths;
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
    k->cost_row(w->census_left, w->census_reversed, w->pad, W, w->min_disparity, D, w->no_match, costs);
    memcpy(w->slot_luma[slot], luma, (size_t)W);
    if (!first_stage_writes(w->plan, second)) return;
    const int first = second ? y == w->height - 1 : y == 0, cur = y & 1;
    // The previous row's luma is the slot before's (the ring holds it until stage 2 is done
    // with it, and stage 1 wrote it); at the pass's first row there is none.
    const uint8_t *prev_luma = first ? luma : w->slot_luma[(s + RING_SLOTS - 1) % RING_SLOTS];
    sgm_sweep sweep = sweep_of(w, costs, luma, prev_luma);
    sweep.horizontal = !second && (paths & PARALLAX_SGM_LEFT_TO_RIGHT) != 0;
    sweep.straight = row_path((paths & (second ? PARALLAX_SGM_BOTTOM_UP : PARALLAX_SGM_TOP_DOWN)) != 0,
                              w->straight_rows, w->straight_min, cur, first);
    sweep.from_left = row_path((paths & (second ? PARALLAX_SGM_BOTTOM_LEFT : PARALLAX_SGM_TOP_LEFT)) != 0,
                               w->left_rows, w->left_min, cur, first);
    sweep.from_right = row_path((paths & (second ? PARALLAX_SGM_BOTTOM_RIGHT : PARALLAX_SGM_TOP_RIGHT)) != 0,
                                w->right_rows, w->right_min, cur, first);
    sweep.sums = w->slot_sums[slot];
    k->sweep_forward(&sweep);
}

// The checks and the sub-pixel step for a row's winners (the backward sweep's); writes the
// row's outputs.
static void select_row(sgm_work *w, const uint8_t *costs, int16_t *out16, float *out) {
    const parallax_sgm_plan *plan = w->plan;
    const int32_t W = w->width, D = w->disparities, dmin = w->min_disparity;
    for (int32_t x = 0; x < W; x++) {
        const int32_t d = w->best[x];
        int valid = 1;
        if (d > x - dmin || d < x - dmin - (W - 1)) {
            w->counts.outside++;
            valid = 0;
        } else if (plan->uniqueness_percent > 0 && w->ambiguous[x]) {
            w->counts.ambiguous++;
            valid = 0;
        } else if (plan->lr_max_difference >= 0) {
            const int32_t xr = x - dmin - d;
            const int32_t partner = w->right_best[w->pad + (W - 1 - xr)];
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
                // 16 δ rounded to the nearest, halves away from zero. In Float32, exactly as in
                // integers: the quotient of two integers below 2¹⁰ is within 2⁻²⁴ of itself, the
                // ×16 is exact, and a true quotient off a half is off it by at least 1/denominator
                // ≥ 2⁻¹¹, so the rounding never crosses one.
                offset = (float)(below - above) / (float)(2 * rise);
                const int32_t magnitude = (int32_t)(__builtin_fabsf(16 * offset) + 0.5f);
                sixteenths = offset < 0 ? -magnitude : magnitude;
            }
        }
        out16[x] = (int16_t)(16 * (dmin + d) + sixteenths);
        if (out) out[x] = (float)(dmin + d) + offset;
    }
}

// Stage 2 of step s: the backward sweep (right to left), which completes the sums, and in the
// last pass the winners and the checks.
static void second_stage_step(sgm_work *w, const sgm_kernels *k, int32_t s, int16_t *disparity16,
                              ptrdiff_t stride16, float *disparity, ptrdiff_t stride) {
    const parallax_sgm_plan *plan = w->plan;
    const uint32_t paths = plan->paths;
    int second;
    const int32_t y = row_of(w, s, &second);
    const int slot = s % RING_SLOTS;
    const size_t cells = (size_t)w->width * (size_t)w->disparities;
    const uint8_t *costs = w->slot_costs[slot];
    const uint8_t *luma = w->slot_luma[slot];
    sgm_sweep sweep = sweep_of(w, costs, luma, luma);
    sweep.horizontal = !second && (paths & PARALLAX_SGM_RIGHT_TO_LEFT) != 0;
    sweep.partial = first_stage_writes(plan, second) ? w->slot_sums[slot] : NULL;
    uint16_t *stored = w->two_pass ? w->volume + (size_t)y * cells : NULL;
    sweep.earlier = w->two_pass && second ? stored : NULL;
    sweep.store = w->two_pass && !second ? stored : NULL;
    sweep.uniqueness = plan->uniqueness_percent;
    sweep.best = w->best;
    sweep.least = w->least;
    sweep.ambiguous = w->ambiguous;
    sweep.right = w->right_best;
    k->sweep_backward(&sweep);
    if (sweep.store) return;
    int16_t *row16 = disparity16 + (ptrdiff_t)y * stride16;
    select_row(w, costs, row16, disparity ? disparity + (ptrdiff_t)y * stride : NULL);
    if (plan->speckle_max_size > 0) speckle_row(w, row16);
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
    if (stage != 1) {
        w->run_count = 0;
        w->speckle_rows = 0;
    }
    if (stage == 0) {
        memset(&w->counts, 0, sizeof w->counts);
        for (int32_t s = 0; s < w->steps; s++) {
            first_stage_step(w, k, left, right, s);
            second_stage_step(w, k, s, disparity16, stride16, disparity, stride);
        }
    } else if (stage == 1) {
        for (int32_t s = 0; s < w->steps; s++) {
            // Room in the ring: the second stage is done with the step that used this slot.
            wait_until(&w->consumed, s - RING_SLOTS + 1);
            first_stage_step(w, k, left, right, s);
            advance(&w->produced, s + 1);
        }
    } else {
        memset(&w->counts, 0, sizeof w->counts);
        for (int32_t s = 0; s < w->steps; s++) {
            wait_until(&w->produced, s + 1);
            second_stage_step(w, k, s, disparity16, stride16, disparity, stride);
            advance(&w->consumed, s + 1);
        }
    }
    if (stage != 1 && w->plan->speckle_max_size > 0) finish_speckles(w, disparity16, stride16, disparity, stride);
    return 0;
}

void parallax_sgm_begin(void *work) {
    sgm_work *w = work;
    atomic_store(&w->produced.value, 0);
    atomic_store(&w->produced.waiting, 0);
    atomic_store(&w->consumed.value, 0);
    atomic_store(&w->consumed.waiting, 0);
}

// MARK: Stages on their own

void parallax_sgm_census_row(parallax_sgm_level level, parallax_sgm_luma image, int32_t width, int32_t height,
                             int32_t window_width, int32_t window_height, int32_t y, uint64_t *codes) {
    const int32_t rx = window_width / 2, ry = window_height / 2;
    const size_t row_bytes = (size_t)(width + 2 * rx + 64);
    uint8_t *buffers = calloc((size_t)window_height, row_bytes);
    const uint8_t *rows[MAX_WINDOW_SIDE];
    for (int32_t j = 0; j < window_height; j++) {
        uint8_t *row = buffers + (size_t)j * row_bytes;
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

int64_t parallax_sgm_speckle_filter(int16_t *map, int32_t width, int32_t height, int32_t max_size,
                                    int32_t max_difference16, int32_t bottom_up) {
    parallax_sgm_plan plan;
    memset(&plan, 0, sizeof plan);
    plan.width = width;
    plan.height = height;
    plan.speckle_max_size = max_size;
    plan.speckle_max_difference16 = max_difference16;
    sgm_work *w = calloc(1, sizeof(sgm_work));
    w->plan = &plan;
    w->width = width;
    w->height = height;
    w->two_pass = bottom_up != 0;
    w->run_parent = malloc(sizeof(int32_t) * (size_t)width * (size_t)height);
    w->row_runs[0] = malloc(sizeof(int32_t) * (size_t)width);
    w->row_runs[1] = malloc(sizeof(int32_t) * (size_t)width);
    for (int32_t i = 0; i < height; i++) speckle_row(w, map + (ptrdiff_t)(bottom_up ? height - 1 - i : i) * width);
    finish_speckles(w, map, width, NULL, 0);
    const int64_t removed = w->counts.speckle;
    free(w->run_parent);
    free(w->row_runs[0]);
    free(w->row_runs[1]);
    free(w);
    return removed;
}
