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
static inline SGM_TARGET uint8_t SGM_NAME(step)(const uint8_t *restrict c, const uint8_t *restrict prev,
                                                uint8_t prev_min, uint8_t p1, uint8_t p2, int32_t disparities,
                                                uint8_t *restrict out, uint16_t *restrict sum) {
    const uint8_t jump = saturating_add(prev_min, p2);
    uint8_t least = 0xFF;
    for (int32_t d = 0; d < disparities; d++) {
        uint8_t best = prev[d];
        const uint8_t down = saturating_add(prev[d - 1], p1), up = saturating_add(prev[d + 1], p1);
        best = best < down ? best : down;
        best = best < up ? best : up;
        best = best < jump ? best : jump;
        // best ≥ prev_min (every candidate is), and c + best − prev_min ≤ C + P2 ≤ 255.
        const uint8_t value = (uint8_t)(c[d] + (uint8_t)(best - prev_min));
        out[d] = value;
        sum[d] = (uint16_t)(sum[d] + value);
        least = least < value ? least : value;
    }
    return least;
}

// A horizontal path along one row, from x = 0 (dx = +1, left to right) or x = width − 1
// (dx = −1). `buffers` holds two path vectors of `stride` elements, each with its sentinel
// pair at [−1] and [D] (0xFF) and `zero` one of zeros with sentinels; `luma` the left row.
// Reads costs and luma of the row; adds into sum (width · D).
static SGM_TARGET void SGM_NAME(path_horizontal)(const uint8_t *restrict costs, const uint8_t *restrict luma,
                                                 int32_t width, int32_t disparities, int32_t dx, uint8_t p1,
                                                 const uint8_t *p2_for_step, uint8_t *buffers, ptrdiff_t stride,
                                                 const uint8_t *zero, uint16_t *restrict sum) {
    const uint8_t *prev = zero;
    uint8_t prev_min = 0;
    int32_t x = dx > 0 ? 0 : width - 1;
    for (int32_t n = 0; n < width; n++, x += dx) {
        uint8_t *out = buffers + (n & 1) * stride;
        const int32_t step = n == 0 ? 0 : abs((int32_t)luma[x] - (int32_t)luma[x - dx]);
        const ptrdiff_t at = (ptrdiff_t)x * disparities;
        prev_min = SGM_NAME(step)(costs + at, prev, prev_min, p1, p2_for_step[step], disparities, out, sum + at);
        prev = out;
    }
}

// A path arriving from the row before (in the pass's order) at column x + dx (dx −1, 0 or +1):
// `prev` the previous row's path vectors (stride apart, sentinels at [−1] and [D]) and minima,
// or NULL at the pass's first row (the path starts: Lr = C); writes this row's into `out` and
// `out_min`. Reads costs (width · D), luma and prev_luma (width), prev (width vectors).
static SGM_TARGET void SGM_NAME(path_from_row)(const uint8_t *restrict costs, const uint8_t *restrict luma,
                                               const uint8_t *restrict prev_luma, int32_t width, int32_t disparities,
                                               int32_t dx, uint8_t p1, const uint8_t *p2_for_step,
                                               const uint8_t *prev, const uint8_t *prev_min, uint8_t *out,
                                               uint8_t *out_min, ptrdiff_t stride, const uint8_t *zero,
                                               uint16_t *restrict sum) {
    for (int32_t x = 0; x < width; x++) {
        const int32_t from = x + dx;
        const int inside = prev != NULL && from >= 0 && from < width;
        const uint8_t *p = inside ? prev + (ptrdiff_t)from * stride : zero;
        const uint8_t least = inside ? prev_min[from] : 0;
        const int32_t step = inside ? abs((int32_t)luma[x] - (int32_t)prev_luma[from]) : 0;
        const ptrdiff_t at = (ptrdiff_t)x * disparities;
        out_min[x] = SGM_NAME(step)(costs + at, p, least, p1, p2_for_step[step], disparities,
                                    out + (ptrdiff_t)x * stride, sum + at);
    }
}

// sum[i] += other[i] for i in [0, count).
static SGM_TARGET void SGM_NAME(add_row)(uint16_t *restrict sum, const uint16_t *restrict other, ptrdiff_t count) {
    for (ptrdiff_t i = 0; i < count; i++) sum[i] = (uint16_t)(sum[i] + other[i]);
}

// The winners of one row: best[x] = min_d (S(x, d) · 256 + d), packed so the least sum wins and
// a tie goes to the smaller d; and the right image's, right[pad + k] = the same minimum over
// the sums whose right pixel is width − 1 − k (right holds width + 2 · pad entries, set to
// UINT32_MAX by the caller; pad ≥ |dmin| + D). Reads sums (width · D).
static SGM_TARGET void SGM_NAME(winners_row)(const uint16_t *restrict sums, int32_t width, int32_t min_disparity,
                                             int32_t disparities, ptrdiff_t pad, uint32_t *restrict best,
                                             uint32_t *restrict right) {
    for (int32_t x = 0; x < width; x++) {
        const uint16_t *s = sums + (ptrdiff_t)x * disparities;
        uint32_t *r = right + pad + (width - 1 - x + min_disparity);
        uint32_t least = UINT32_MAX;
        for (int32_t d = 0; d < disparities; d++) {
            const uint32_t packed = ((uint32_t)s[d] << 8) | (uint32_t)d;
            least = least < packed ? least : packed;
            r[d] = r[d] < packed ? r[d] : packed;
        }
        best[x] = least;
    }
}

// The least sum more than one disparity away from `winner` (0xFFFF when there is none).
// Reads s[0 … D).
static SGM_TARGET uint16_t SGM_NAME(runner_up)(const uint16_t *restrict s, int32_t disparities, int32_t winner) {
    // Two plain minima, below winner − 1 and above winner + 1 (a masked single loop does not
    // vectorise at every level).
    uint16_t least = 0xFFFF;
    for (int32_t d = 0; d < winner - 1; d++) least = least < s[d] ? least : s[d];
    for (int32_t d = winner + 2; d < disparities; d++) least = least < s[d] ? least : s[d];
    return least;
}
