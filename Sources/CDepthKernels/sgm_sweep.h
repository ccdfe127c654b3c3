// The matcher's two sweeps along a row at one vector width: SGM_W bytes (16, 32 or 64, at
// most the level's), SGM_W disparities per vector. sgm_rows.h includes this file once per
// width, with SGM_WNAME(x) naming the instance and SGM_SEQ(b) listing the SGM_W lanes
// b, b + 1, …, b + SGM_W − 1. The disparity count D is a multiple of SGM_W (the caller picks
// the width). Every operation is on unsigned integers within the header's bounds, so every
// width and level gives the same numbers.
//
// Why two sweeps: a pixel's path values are used where they are made. The forward sweep (x
// rising) runs the horizontal path from the left and every path from the row before (the
// straight one and both diagonals: the row before is complete, so any order along the row
// will do), and writes the row's partial sums once; the backward sweep (x falling) runs the
// horizontal path from the right, completes each pixel's sums in registers and picks its
// winners there, so the full sums are never written and read back. (With two threads the
// sweeps are the two stages: the census and the costs go with the forward one, the checks
// with the backward one, which balances them.) Two more choices keep the horizontal chains
// (each pixel waits for its neighbour) short: their values stay in registers from one pixel
// to the next and are shifted by a lane there (a load straddling two fresh stores waits for
// them to reach the cache), and the right image's winners slide along in registers instead
// of being read back overlapping. The usual vector counts (one or two a pixel) are given to
// the compiler as constants, so that those arrays are registers.

#define VB SGM_WNAME(bytes)
#define VW SGM_WNAME(words)
#define VS SGM_WNAME(signed_words)
#define VC SGM_WNAME(signed_bytes)
typedef uint8_t VB __attribute__((vector_size(SGM_W)));
typedef uint16_t VW __attribute__((vector_size(2 * SGM_W)));
typedef int16_t VS __attribute__((vector_size(2 * SGM_W)));
typedef int8_t VC __attribute__((vector_size(SGM_W)));

#define SGM_INLINE static inline __attribute__((always_inline)) SGM_TARGET

SGM_INLINE VB SGM_WNAME(load)(const uint8_t *p) {
    VB v;
    memcpy(&v, p, SGM_W);
    return v;
}

SGM_INLINE void SGM_WNAME(store)(uint8_t *p, VB v) { memcpy(p, &v, SGM_W); }

SGM_INLINE VW SGM_WNAME(load_words)(const uint16_t *p) {
    VW v;
    memcpy(&v, p, 2 * SGM_W);
    return v;
}

SGM_INLINE void SGM_WNAME(store_words)(uint16_t *p, VW v) { memcpy(p, &v, 2 * SGM_W); }

SGM_INLINE VW SGM_WNAME(widen)(VB v) { return __builtin_convertvector(v, VW); }

// Bit i set where lane i of a comparison's result is true (a mask register with AVX-512, a
// byte-mask move below it).
typedef _Bool SGM_WNAME(lane_bits) __attribute__((ext_vector_type(SGM_W)));
SGM_INLINE uint64_t SGM_WNAME(lanes_where)(VS comparison) {
    const SGM_WNAME(lane_bits) bits = __builtin_convertvector(comparison, SGM_WNAME(lane_bits));
    uint64_t mask = 0;
    memcpy(&mask, &bits, SGM_W / 8);
    return mask;
}

// (before's last lane, current's first SGM_W − 1): the values at d − 1 of the lanes of `current`.
SGM_INLINE VB SGM_WNAME(shifted_up)(VB before, VB current) {
    return __builtin_shufflevector(before, current, SGM_SEQ(SGM_W - 1));
}

// (current's last SGM_W − 1, after's first): the values at d + 1.
SGM_INLINE VB SGM_WNAME(shifted_down)(VB current, VB after) {
    return __builtin_shufflevector(current, after, SGM_SEQ(1));
}

SGM_INLINE VW SGM_WNAME(shifted_down_words)(VW current, VW after) {
    return __builtin_shufflevector(current, after, SGM_SEQ(1));
}

// One vector of a path: C + min(L⁻(d), min(L⁻(d − 1), L⁻(d + 1)) + P1, jump) − least, with
// jump = least + P2 (saturated) and least = min_k L⁻(k). Every term is at least `least`, so
// the subtraction cannot wrap; the result is at most C + P2 ≤ 255; the saturation of
// min(…) + P1 only ever replaces a value above 255, which was never the minimum.
SGM_INLINE VB SGM_WNAME(path_vector)(VB cost, VB same, VB lower, VB upper, VB p1, VB jump, VB least) {
    VB best = __builtin_elementwise_min(same, __builtin_elementwise_add_sat(__builtin_elementwise_min(lower, upper), p1));
    best = __builtin_elementwise_min(best, jump);
    return cost + (best - least);
}

// Where a path from the row before starts at a pixel: its previous values (sentinels at [−1]
// and [D]) and their least, or the zero vector and 0 where there is none (the path's first
// pixel: L = C), and the step's P2.
typedef struct {
    const uint8_t *prev;
    uint8_t least, p2;
} SGM_WNAME(origin);

SGM_INLINE SGM_WNAME(origin) SGM_WNAME(origin_at)(const sgm_row_path *path, const sgm_sweep *s, int32_t x, int32_t from) {
    SGM_WNAME(origin) o = {s->zero, 0, s->p2_for_step[0]};
    if (path->prev != NULL && from >= 0 && from < s->width) {
        o.prev = path->prev + (ptrdiff_t)from * s->stride;
        o.least = path->prev_min[from];
        o.p2 = s->p2_for_step[abs((int32_t)s->luma[x] - (int32_t)s->prev_luma[from])];
    }
    return o;
}

// Vector i of a path from the row before (its values written a row ago, read straight).
SGM_INLINE VB SGM_WNAME(row_path_vector)(SGM_WNAME(origin) o, VB cost, int32_t d, VB p1) {
    return SGM_WNAME(path_vector)(cost, SGM_WNAME(load)(o.prev + d), SGM_WNAME(load)(o.prev + d - 1),
                                  SGM_WNAME(load)(o.prev + d + 1), p1, (VB){0} + saturating_add(o.least, o.p2),
                                  (VB){0} + o.least);
}

// Vector i of the horizontal path at this pixel: h_prev holds the pixel before's n vectors
// and gets this one's in their place; `before` and `current` (the pixel before's vectors i − 1
// and i, read before they were replaced) move on a vector.
SGM_INLINE VB SGM_WNAME(horizontal_vector)(VB *h_prev, int32_t i, int32_t n, VB cost, VB *before, VB *current, VB p1,
                                           VB jump, VB least) {
    const VB full = (VB){0} + 0xFF;
    const VB after = i + 1 < n ? h_prev[i + 1] : full;
    const VB v = SGM_WNAME(path_vector)(cost, *current, SGM_WNAME(shifted_up)(*before, *current),
                                        SGM_WNAME(shifted_down)(*current, after), p1, jump, least);
    h_prev[i] = v;
    *before = *current;
    *current = after;
    return v;
}

// The forward sweep of a row (sgm_sweep: which paths, where their rows are). Writes each
// path's values and least for the next row, and the row's partial sums: sums[x · D + d] =
// the sum of this sweep's paths.
SGM_INLINE void SGM_WNAME(sweep_forward_body)(const sgm_sweep *s, const int horizontal, const int straight,
                                              const int from_left, const int from_right, const int32_t n) {
    const int32_t width = s->width, D = s->disparities;
    const VB p1 = (VB){0} + s->p1, full = (VB){0} + 0xFF;
    // The horizontal path's values at the pixel before (zeros before the first: L = C there)
    // and their least: registers, for the usual vector counts.
    VB h_prev[256 / SGM_W];
    for (int32_t i = 0; i < n; i++) h_prev[i] = (VB){0};
    uint8_t h_prev_least = 0;
    for (int32_t x = 0; x < width; x++) {
        const uint8_t *c = s->costs + (ptrdiff_t)x * D;
        const SGM_WNAME(origin) up = SGM_WNAME(origin_at)(&s->straight, s, x, x);
        const SGM_WNAME(origin) corner = SGM_WNAME(origin_at)(&s->from_left, s, x, x - 1);
        const SGM_WNAME(origin) other = SGM_WNAME(origin_at)(&s->from_right, s, x, x + 1);
        const uint8_t h_p2 = s->p2_for_step[x == 0 ? 0 : abs((int32_t)s->luma[x] - (int32_t)s->luma[x - 1])];
        const VB h_jump = (VB){0} + saturating_add(h_prev_least, h_p2), h_least = (VB){0} + h_prev_least;
        uint8_t *up_out = straight ? s->straight.out + (ptrdiff_t)x * s->stride : NULL;
        uint8_t *corner_out = from_left ? s->from_left.out + (ptrdiff_t)x * s->stride : NULL;
        uint8_t *other_out = from_right ? s->from_right.out + (ptrdiff_t)x * s->stride : NULL;
        uint16_t *sums = s->sums + (ptrdiff_t)x * D;
        VB h_min = full, up_min = full, corner_min = full, other_min = full;
        VB h_before = full, h_current = horizontal ? h_prev[0] : full;
        for (int32_t i = 0; i < n; i++) {
            const int32_t d = i * SGM_W;
            const VB cost = SGM_WNAME(load)(c + d);
            VW total = {0};
            if (horizontal) {
                const VB v = SGM_WNAME(horizontal_vector)(h_prev, i, n, cost, &h_before, &h_current, p1, h_jump, h_least);
                h_min = __builtin_elementwise_min(h_min, v);
                total += SGM_WNAME(widen)(v);
            }
            if (straight) {
                const VB v = SGM_WNAME(row_path_vector)(up, cost, d, p1);
                SGM_WNAME(store)(up_out + d, v);
                up_min = __builtin_elementwise_min(up_min, v);
                total += SGM_WNAME(widen)(v);
            }
            if (from_left) {
                const VB v = SGM_WNAME(row_path_vector)(corner, cost, d, p1);
                SGM_WNAME(store)(corner_out + d, v);
                corner_min = __builtin_elementwise_min(corner_min, v);
                total += SGM_WNAME(widen)(v);
            }
            if (from_right) {
                const VB v = SGM_WNAME(row_path_vector)(other, cost, d, p1);
                SGM_WNAME(store)(other_out + d, v);
                other_min = __builtin_elementwise_min(other_min, v);
                total += SGM_WNAME(widen)(v);
            }
            SGM_WNAME(store_words)(sums + d, total);
        }
        if (horizontal) h_prev_least = __builtin_reduce_min(h_min);
        if (straight) s->straight.out_min[x] = __builtin_reduce_min(up_min);
        if (from_left) s->from_left.out_min[x] = __builtin_reduce_min(corner_min);
        if (from_right) s->from_right.out_min[x] = __builtin_reduce_min(other_min);
    }
}

// The forward sweep, with the paths it runs known to the compiler in the usual case (all
// four, the first pass of five or eight paths), so that nothing in the loop asks.
static SGM_TARGET void SGM_WNAME(sweep_forward)(const sgm_sweep *s) {
    const int horizontal = s->horizontal, straight = s->straight.out != NULL,
              from_left = s->from_left.out != NULL, from_right = s->from_right.out != NULL;
    const int32_t n = s->disparities / SGM_W;
    if (horizontal && straight && from_left && from_right && n == 2)
        SGM_WNAME(sweep_forward_body)(s, 1, 1, 1, 1, 2);
    else if (horizontal && straight && from_left && from_right && n == 1)
        SGM_WNAME(sweep_forward_body)(s, 1, 1, 1, 1, 1);
    else if (horizontal && straight && from_left && from_right)
        SGM_WNAME(sweep_forward_body)(s, 1, 1, 1, 1, n);
    else
        SGM_WNAME(sweep_forward_body)(s, horizontal, straight, from_left, from_right, n);
}

// The backward sweep of a row: the horizontal path from x + 1 (when it runs), each pixel's sums completed with the forward sweep's (`partial`, or none) and the
// first pass's (`earlier`, or none); then either the sums stored (`store`: the first pass of
// two) or the winners picked: best[x] the smallest d of the least sum, least[x] that sum,
// ambiguous[x] whether a sum more than one disparity from it fails the uniqueness ratio (only
// when `uniqueness`, the ratio's percentage, is above 0), and the right image's winners right[pad + k] for the right pixel
// width − 1 − k, the same minimum over the sums whose right pixel it is (ties to the
// smaller disparity).
SGM_INLINE void SGM_WNAME(sweep_backward_body)(const sgm_sweep *s, const int horizontal, const int with_partial,
                                               const int with_earlier, const int storing, const int32_t n) {
    const int32_t width = s->width, D = s->disparities;
    const VB p1 = (VB){0} + s->p1, full = (VB){0} + 0xFF;
    const VW none = (VW){0} + 0xFFFF;
    const VB lane8 = {SGM_SEQ(0)};
    // The pixel's sums and the right winners' window: lane d of window vector i holds, for the
    // right pixel x − dmin − i · SGM_W − d, the least sum seen so far (window_sums) and its
    // disparity (window_disparities). Each pixel adds its sums at its own disparities; the
    // window then slides a lane, the right pixel leaving it final (no later pixel reaches it).
    VW sums[256 / SGM_W], window_sums[256 / SGM_W];
    VB window_disparities[256 / SGM_W];
    for (int32_t i = 0; i < n; i++) {
        window_sums[i] = none;
        window_disparities[i] = (VB){0};
    }
    VB h_prev[256 / SGM_W];
    for (int32_t i = 0; i < n; i++) h_prev[i] = (VB){0};
    uint8_t h_prev_least = 0;
    for (int32_t x = width - 1; x >= 0; x--) {
        const uint8_t *c = s->costs + (ptrdiff_t)x * D;
        const uint8_t h_p2 = s->p2_for_step[x == width - 1 ? 0 : abs((int32_t)s->luma[x] - (int32_t)s->luma[x + 1])];
        const VB h_jump = (VB){0} + saturating_add(h_prev_least, h_p2), h_least = (VB){0} + h_prev_least;
        const uint16_t *partial = with_partial ? s->partial + (ptrdiff_t)x * D : NULL;
        const uint16_t *earlier = with_earlier ? s->earlier + (ptrdiff_t)x * D : NULL;
        uint16_t *store = storing ? s->store + (ptrdiff_t)x * D : NULL;
        VB h_min = full;
        VB h_before = full, h_current = horizontal ? h_prev[0] : full;
        VW least = none;
        for (int32_t i = 0; i < n; i++) {
            const int32_t d = i * SGM_W;
            const VB cost = SGM_WNAME(load)(c + d);
            VW total = with_partial ? SGM_WNAME(load_words)(partial + d) : (VW){0};
            if (with_earlier) total += SGM_WNAME(load_words)(earlier + d);
            if (horizontal) {
                const VB v = SGM_WNAME(horizontal_vector)(h_prev, i, n, cost, &h_before, &h_current, p1, h_jump, h_least);
                h_min = __builtin_elementwise_min(h_min, v);
                total += SGM_WNAME(widen)(v);
            }
            if (storing) {
                SGM_WNAME(store_words)(store + d, total);
            } else {
                sums[i] = total;
                // The sum (at most 2040, 11 bits) above the vector's number (below 16): the
                // lane-wise minimum keeps, in each lane, the least sum and the first vector with it.
                least = __builtin_elementwise_min(least, (VW)(total << 4) | (uint16_t)i);
            }
        }
        if (horizontal) h_prev_least = __builtin_reduce_min(h_min);
        if (storing) continue;
        // The winner: the first lane holding the least sum. The uniqueness ratio fails when a
        // sum more than one disparity from it is below (100 + u) % of it, that is below
        // threshold = ⌈least · (100 + u) / 100⌉ (integers: S · 100 < least · (100 + u) ⟺
        // S < threshold; at most 2 · 2040, in 16 bits).
        // The least key is the least sum in its first vector; the first lane holding the key
        // there is the winner (a lane holding it in a later vector would hold a larger key).
        const uint16_t key = __builtin_reduce_min(least), smallest = key >> 4;
        const uint32_t winner = (uint32_t)((key & 15) * SGM_W + __builtin_ctzll(SGM_WNAME(lanes_where)(least == key)));
        s->best[x] = (uint8_t)winner;
        s->least[x] = smallest;
        if (s->uniqueness > 0) {
            // Ambiguous when more sums are below the threshold than the winner and its two
            // neighbours account for.
            const uint16_t threshold = (uint16_t)(((uint32_t)smallest * (100 + (uint32_t)s->uniqueness) + 99) / 100);
            int32_t below = 0;
            for (int32_t i = 0; i < n; i++) below += __builtin_popcountll(SGM_WNAME(lanes_where)(sums[i] < threshold));
            int32_t near = sums[winner / SGM_W][winner % SGM_W] < threshold;
            if (winner > 0) near += sums[(winner - 1) / SGM_W][(winner - 1) % SGM_W] < threshold;
            if ((int32_t)winner + 1 < D) near += sums[(winner + 1) / SGM_W][(winner + 1) % SGM_W] < threshold;
            s->ambiguous[x] = below > near;
        }
        // The right winners: a sum at or below the window's takes its place (the window's
        // came from pixels to the right, at larger disparities, so a tie goes to this one).
        for (int32_t i = 0; i < n; i++) {
            const VS take = sums[i] <= window_sums[i];
            window_sums[i] = __builtin_elementwise_min(window_sums[i], sums[i]);
            const VB chosen = (VB)__builtin_convertvector(take, VC);
            window_disparities[i] = (window_disparities[i] & ~chosen) | ((lane8 + (uint8_t)(i * SGM_W)) & chosen);
        }
        // Right pixel x − dmin (reversed index width − 1 − x + dmin) leaves the window final.
        s->right[s->pad + width - 1 - x + s->min_disparity] = window_disparities[0][0];
        for (int32_t i = 0; i < n; i++) {
            const int last = i + 1 == n;
            window_sums[i] = SGM_WNAME(shifted_down_words)(window_sums[i], last ? none : window_sums[i + 1]);
            window_disparities[i] = SGM_WNAME(shifted_down)(window_disparities[i], last ? (VB){0} : window_disparities[i + 1]);
        }
    }
    if (storing) return;
    // The window's remaining right pixels, −dmin − 1 − j (reversed index width + dmin + j): inside the image
    // only when dmin < 0; the others land in the padding.
    for (int32_t j = 0; j + 1 < D; j++) s->right[s->pad + width + s->min_disparity + j] = window_disparities[j / SGM_W][j % SGM_W];
}

// The backward sweep, specialised for the usual case (one pass: the path from the right and
// the forward sweep's partial sums, the winners picked).
static SGM_TARGET void SGM_WNAME(sweep_backward)(const sgm_sweep *s) {
    const int horizontal = s->horizontal, with_partial = s->partial != NULL, with_earlier = s->earlier != NULL,
              storing = s->store != NULL;
    const int32_t n = s->disparities / SGM_W;
    const int usual = horizontal && with_partial && !with_earlier && !storing;
    if (usual && n == 2)
        SGM_WNAME(sweep_backward_body)(s, 1, 1, 0, 0, 2);
    else if (usual && n == 1)
        SGM_WNAME(sweep_backward_body)(s, 1, 1, 0, 0, 1);
    else if (usual)
        SGM_WNAME(sweep_backward_body)(s, 1, 1, 0, 0, n);
    else
        SGM_WNAME(sweep_backward_body)(s, horizontal, with_partial, with_earlier, storing, n);
}

// One pixel of one path for the stage tests (parallax_sgm_path_step): prev has sentinels at
// [−1] and [D]; out gets the values, sum adds them; returns their least.
static SGM_TARGET uint8_t SGM_WNAME(step)(const uint8_t *restrict c, const uint8_t *restrict prev, uint8_t prev_min,
                                          uint8_t p1, uint8_t p2, int32_t disparities, uint8_t *restrict out,
                                          uint16_t *restrict sum) {
    const SGM_WNAME(origin) o = {prev, prev_min, p2};
    VB least = (VB){0} + 0xFF;
    for (int32_t d = 0; d < disparities; d += SGM_W) {
        const VB v = SGM_WNAME(row_path_vector)(o, SGM_WNAME(load)(c + d), d, (VB){0} + p1);
        SGM_WNAME(store)(out + d, v);
        SGM_WNAME(store_words)(sum + d, SGM_WNAME(load_words)(sum + d) + SGM_WNAME(widen)(v));
        least = __builtin_elementwise_min(least, v);
    }
    return __builtin_reduce_min(least);
}

#undef SGM_INLINE
#undef VB
#undef VW
#undef VS
#undef VC
