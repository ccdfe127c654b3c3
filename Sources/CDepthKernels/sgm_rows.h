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

// One pixel of one path (see the header's parallax_sgm_path_step). Reads c[0 … D), prev[−1 … D],
// writes out[0 … D), updates sum[0 … D). Bytes with saturating additions: every path value is
// at most C + P2 ≤ 255 (the plan's bound), so a sum that saturates at 255 is never below
// prev[d] ≤ 255 and cannot change a minimum; the result is the exact recurrence.
//
// Written with the compiler's vector types, SGM_LANES disparities at a time and then 16 (D
// is a multiple of 16): a plain loop left to the vectoriser ran its vector body only for
// counts of at least twice its width, so 64 disparities ran scalar at AVX-512's 64 lanes.
// SGM_STEP_BODY is one vector step of width `lanes` on vector type `vb` (bytes) and `vw`
// (words); `mode` (a constant at each call) says what it does with `sum`: SGM_ADD adds the
// values, SGM_SET stores them (the row's first path), SGM_NONE leaves it.
#define SGM_STEP_BODY(vb, vw, lanes)                                                                               \
    do {                                                                                                           \
        vb a, lower, upper, cost;                                                                                  \
        memcpy(&a, prev + d, lanes);                                                                               \
        memcpy(&lower, prev + d - 1, lanes);                                                                       \
        memcpy(&upper, prev + d + 1, lanes);                                                                       \
        memcpy(&cost, c + d, lanes);                                                                               \
        const vb step1 = (vb){0} + p1, far = (vb){0} + jump;                                                       \
        vb best = __builtin_elementwise_min(a, __builtin_elementwise_add_sat(lower, step1));                       \
        best = __builtin_elementwise_min(best, __builtin_elementwise_add_sat(upper, step1));                       \
        best = __builtin_elementwise_min(best, far);                                                               \
        const vb value = cost + (best - ((vb){0} + prev_min));                                                     \
        memcpy(out + d, &value, lanes);                                                                            \
        if (mode != SGM_NONE) {                                                                                    \
            vw total = __builtin_convertvector(value, vw);                                                         \
            if (mode == SGM_ADD) {                                                                                 \
                vw before;                                                                                         \
                memcpy(&before, sum + d, 2 * (lanes));                                                             \
                total += before;                                                                                   \
            }                                                                                                      \
            memcpy(sum + d, &total, 2 * (lanes));                                                                  \
        }                                                                                                          \
        const uint8_t smallest = __builtin_reduce_min(value);                                                      \
        least = least < smallest ? least : smallest;                                                               \
    } while (0)

static inline __attribute__((always_inline)) SGM_TARGET uint8_t SGM_NAME(step_mode)(
    const uint8_t *restrict c, const uint8_t *restrict prev, uint8_t prev_min, uint8_t p1, uint8_t p2,
    int32_t disparities, uint8_t *restrict out, uint16_t *restrict sum, int mode) {
    typedef uint8_t wide_bytes __attribute__((vector_size(SGM_LANES)));
    typedef uint16_t wide_words __attribute__((vector_size(2 * SGM_LANES)));
    typedef uint8_t bytes16 __attribute__((vector_size(16)));
    typedef uint16_t words16 __attribute__((vector_size(32)));
    const uint8_t jump = saturating_add(prev_min, p2);
    uint8_t least = 0xFF;
    int32_t d = 0;
    for (; d + SGM_LANES <= disparities; d += SGM_LANES) SGM_STEP_BODY(wide_bytes, wide_words, SGM_LANES);
    for (; d < disparities; d += 16) SGM_STEP_BODY(bytes16, words16, 16);
    return least;
}

// One pixel of one path, its values added to `sum` (parallax_sgm_path_step).
static inline SGM_TARGET uint8_t SGM_NAME(step)(const uint8_t *restrict c, const uint8_t *restrict prev,
                                                uint8_t prev_min, uint8_t p1, uint8_t p2, int32_t disparities,
                                                uint8_t *restrict out, uint16_t *restrict sum) {
    return SGM_NAME(step_mode)(c, prev, prev_min, p1, p2, disparities, out, sum, SGM_ADD);
}
#undef SGM_STEP_BODY

// The horizontal paths of one row, left to right (from x = 0) and right to left (from
// x = width − 1), either or both (`left_to_right`, `right_to_left`), run in one loop: each path
// is a chain in which a pixel waits for its neighbour's result, and two independent chains
// keep the core busy while either waits. `buffers` holds four path vectors of `stride`
// elements (two per path, in turn), each with its sentinel pair at [−1] and [D] (0xFF), and
// `zero` one of zeros with sentinels; `luma` the left row. Reads costs and luma of the row;
// adds into sum (width · D).
static SGM_TARGET void SGM_NAME(paths_horizontal)(const uint8_t *restrict costs, const uint8_t *restrict luma,
                                                  int32_t width, int32_t disparities, int left_to_right,
                                                  int right_to_left, uint8_t p1, const uint8_t *p2_for_step,
                                                  uint8_t *buffers, ptrdiff_t stride, const uint8_t *zero,
                                                  uint16_t *restrict sum) {
    const uint8_t *forward = zero, *backward = zero;
    uint8_t forward_min = 0, backward_min = 0;
    for (int32_t n = 0; n < width; n++) {
        // The first of the two paths to reach a pixel stores its sums, the second adds: at
        // iteration n the forward path is at n and the backward one at width − 1 − n, so before
        // the middle both are first, after it both second, and at an odd width's middle pixel
        // the forward path, which runs first, stores.
        const int early = n < width - 1 - n, middle = n == width - 1 - n;
        if (left_to_right) {
            const int32_t x = n;
            uint8_t *out = buffers + (n & 1) * stride;
            const int32_t step = n == 0 ? 0 : abs((int32_t)luma[x] - (int32_t)luma[x - 1]);
            const ptrdiff_t at = (ptrdiff_t)x * disparities;
            if (!right_to_left || early || middle)
                forward_min = SGM_NAME(step_mode)(costs + at, forward, forward_min, p1, p2_for_step[step], disparities, out,
                                                  sum + at, SGM_SET);
            else
                forward_min = SGM_NAME(step_mode)(costs + at, forward, forward_min, p1, p2_for_step[step], disparities, out,
                                                  sum + at, SGM_ADD);
            forward = out;
        }
        if (right_to_left) {
            const int32_t x = width - 1 - n;
            uint8_t *out = buffers + (2 + (n & 1)) * stride;
            const int32_t step = n == 0 ? 0 : abs((int32_t)luma[x] - (int32_t)luma[x + 1]);
            const ptrdiff_t at = (ptrdiff_t)x * disparities;
            if (!left_to_right || early)
                backward_min = SGM_NAME(step_mode)(costs + at, backward, backward_min, p1, p2_for_step[step], disparities,
                                                   out, sum + at, SGM_SET);
            else
                backward_min = SGM_NAME(step_mode)(costs + at, backward, backward_min, p1, p2_for_step[step], disparities,
                                                   out, sum + at, SGM_ADD);
            backward = out;
        }
    }
}

// The paths arriving from the row before (in the pass's order), up to three at once, one pixel
// at a time: path j comes from column x + dx[j] (−1, 0 or +1); `prev[j]` holds the previous
// row's path vectors (stride apart, sentinels at [−1] and [D]) and `prev_min[j]` their minima,
// or prev[j] is NULL at the pass's first row (the path starts: Lr = C); this row's go to
// out[j] and out_min[j]. The pixel's values of every path are added to `sum` in one pass over
// it (`set`: stored, when no path before this stage wrote the row's sums). Reads costs
// (width · D), luma and prev_luma (width), the previous rows (width vectors each).
static SGM_TARGET void SGM_NAME(paths_from_row)(const uint8_t *restrict costs, const uint8_t *restrict luma,
                                                const uint8_t *restrict prev_luma, int32_t width, int32_t disparities,
                                                int32_t count, const int32_t *dx, uint8_t p1, const uint8_t *p2_for_step,
                                                const uint8_t *const *prev, const uint8_t *const *prev_min,
                                                uint8_t *const *out, uint8_t *const *out_min, ptrdiff_t stride,
                                                const uint8_t *zero, int set, uint16_t *restrict sum) {
    typedef uint8_t bytes16 __attribute__((vector_size(16)));
    typedef uint16_t words16 __attribute__((vector_size(32)));
    for (int32_t x = 0; x < width; x++) {
        const ptrdiff_t at = (ptrdiff_t)x * disparities;
        const uint8_t *values[3] = {zero, zero, zero};
        for (int32_t j = 0; j < count; j++) {
            const int32_t from = x + dx[j];
            const int inside = prev[j] != NULL && from >= 0 && from < width;
            const uint8_t *p = inside ? prev[j] + (ptrdiff_t)from * stride : zero;
            const uint8_t least = inside ? prev_min[j][from] : 0;
            const int32_t step = inside ? abs((int32_t)luma[x] - (int32_t)prev_luma[from]) : 0;
            uint8_t *o = out[j] + (ptrdiff_t)x * stride;
            out_min[j][x] = SGM_NAME(step_mode)(costs + at, p, least, p1, p2_for_step[step], disparities, o, sum + at,
                                                SGM_NONE);
            values[j] = o;
        }
        // The pixel's sums, once: the paths' values (just written, still in the first cache)
        // widened and added, 16 disparities at a time.
        for (int32_t d = 0; d < disparities; d += 16) {
            words16 total = {0};
            if (!set) memcpy(&total, sum + at + d, 32);
            for (int32_t j = 0; j < count; j++) {
                bytes16 v;
                memcpy(&v, values[j] + d, 16);
                total += __builtin_convertvector(v, words16);
            }
            memcpy(sum + at + d, &total, 32);
        }
    }
}

// sum[i] += other[i] for i in [0, count).
static SGM_TARGET void SGM_NAME(add_row)(uint16_t *restrict sum, const uint16_t *restrict other, ptrdiff_t count) {
    for (ptrdiff_t i = 0; i < count; i++) sum[i] = (uint16_t)(sum[i] + other[i]);
}

// The winners of one row: best[x] = min_d (S(x, d) · 256 + d), packed so the least sum wins and
// a tie goes to the smaller d; and the right image's, right[pad + k] = the same minimum over
// the sums whose right pixel is width − 1 − k (right holds width + 2 · pad entries, set to
// UINT32_MAX by the caller; pad ≥ |dmin| + D). Reads sums (width · D). Sixteen disparities at a
// time (D is a multiple of 16), in 32-bit lanes.
static SGM_TARGET void SGM_NAME(winners_row)(const uint16_t *restrict sums, int32_t width, int32_t min_disparity,
                                             int32_t disparities, ptrdiff_t pad, uint32_t *restrict best,
                                             uint32_t *restrict right) {
    typedef uint16_t words16 __attribute__((vector_size(32)));
    typedef uint32_t packed16 __attribute__((vector_size(64)));
    const packed16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    for (int32_t x = 0; x < width; x++) {
        const uint16_t *s = sums + (ptrdiff_t)x * disparities;
        uint32_t *r = right + pad + (width - 1 - x + min_disparity);
        packed16 least = (packed16){0} + UINT32_MAX;
        for (int32_t d = 0; d < disparities; d += 16) {
            words16 w;
            memcpy(&w, s + d, 32);
            const packed16 packed = (__builtin_convertvector(w, packed16) << 8) | (lane + (uint32_t)d);
            least = __builtin_elementwise_min(least, packed);
            packed16 other;
            memcpy(&other, r + d, 64);
            other = __builtin_elementwise_min(other, packed);
            memcpy(r + d, &other, 64);
        }
        best[x] = __builtin_reduce_min(least);
    }
}

// The least sum more than one disparity away from `winner` (0xFFFF when there is none).
// Reads s[0 … D): sixteen at a time, those within one disparity of the winner masked out.
static SGM_TARGET uint16_t SGM_NAME(runner_up)(const uint16_t *restrict s, int32_t disparities, int32_t winner) {
    typedef uint16_t words16 __attribute__((vector_size(32)));
    typedef int16_t signed16 __attribute__((vector_size(32)));
    const signed16 lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    words16 least = (words16){0} + 0xFFFF;
    for (int32_t d = 0; d < disparities; d += 16) {
        words16 w;
        memcpy(&w, s + d, 32);
        // |d + lane − winner| ≤ 1 marks the winner and its neighbours (all lanes 0xFFFF then).
        const signed16 offset = lane + (int16_t)(d - winner);
        const words16 near = (words16)((offset >= -1) & (offset <= 1));
        least = __builtin_elementwise_min(least, w | near);
    }
    return __builtin_reduce_min(least);
}
