// The semi-global matcher's kernels (ParallaxDepth/Matching/SemiGlobalMatcher.swift drives
// them). One C body (sgm_rows.h and its sweeps, sgm_sweep.h) is compiled at each vector
// level: the architecture's baseline (SSE2 on x86-64, NEON on arm64) and, on x86-64, inside
// functions with target("avx2,fma"), target("…avx512…") and, where the CPU has VBMI and
// VPOPCNTDQ, target("…avx512vbmi,avx512vpopcntdq"), written with the compiler's vector types
// at 16, 32 and 64 disparities per vector (the widest of the level's that divides D). Every
// operation is on unsigned integers that cannot wrap (the plan's bounds below), so every
// level computes the same disparities, bit for bit; the sub-pixel step, the left–right check
// and the speckle filter are one scalar body for all.
//
// The algorithm (Hirschmüller, "Stereo Processing by Semiglobal Matching and Mutual
// Information", TPAMI 2008; census cost as Zabih and Woodfill, ECCV 1994):
//   census   c(p) = the bits [I(q) < I(p)] over the window's q ≠ p, rows clamped, columns
//            replicated at the image's edges;
//   cost     C(p, d) = popcount(cL(x, y) ^ cR(x − dmin − d, y)) for d in [0, D); where the
//            right pixel falls outside the image, C = the window's bit count (no match);
//   paths    Lr(p, d) = C(p, d) + min(Lr(p−r, d), Lr(p−r, d±1) + P1, min_k Lr(p−r, k) + P2(p, r))
//                       − min_k Lr(p−r, k), with Lr = C at a path's first pixel, and
//            P2(p, r) = the plan's table at |I(p) − I(p−r)| (the left image's luma);
//   sum      S(p, d) = Σ_r Lr(p, d);
//   winner   d* = the smallest d with the least S (ties to the smaller disparity);
// then the uniqueness ratio, the right image's winners along the same sums (for the
// left–right check), equiangular lines through the matching costs C(d*−1), C(d*), C(d*+1)
// summed over five pixels of the row for the sub-pixel offset, and the speckle filter (see
// parallax_sgm_match).
//
// Bounds that keep the paths in bytes: costs are at most the window's bit count b ≤ 64 and
// P1 ≤ P2 ≤ 255 − b, so Lr ≤ b + P2 ≤ 255 (paths are bytes, added with saturation that never
// changes a minimum: see sgm_rows.h), S ≤ 8 · 255 = 2040 in 16 bits and S · 256 + 255 < 2³²
// (the packed winners). parallax_sgm_plan_check says which bound a plan breaks.
#ifndef PARALLAX_CDEPTHKERNELS_H
#define PARALLAX_CDEPTHKERNELS_H
#include <stddef.h>
#include <stdint.h>

/// The vector level a match runs at (the values of CRemapKernels' parallax_simd_level):
/// 0 baseline, 1 AVX2 and FMA, 2 AVX-512 F, DQ, BW and VL. The caller asks the CPU.
typedef int32_t parallax_sgm_level;

/// The aggregation paths, as bits of parallax_sgm_plan.paths. The first five run in one
/// pass from the top row down (line buffers); the last three need a second pass from the
/// bottom up over the first pass's sums, kept for the whole image.
enum {
    PARALLAX_SGM_LEFT_TO_RIGHT = 1 << 0,   // from (x − 1, y)
    PARALLAX_SGM_RIGHT_TO_LEFT = 1 << 1,   // from (x + 1, y)
    PARALLAX_SGM_TOP_DOWN = 1 << 2,        // from (x, y − 1)
    PARALLAX_SGM_TOP_LEFT = 1 << 3,        // from (x − 1, y − 1)
    PARALLAX_SGM_TOP_RIGHT = 1 << 4,       // from (x + 1, y − 1)
    PARALLAX_SGM_BOTTOM_UP = 1 << 5,       // from (x, y + 1)
    PARALLAX_SGM_BOTTOM_LEFT = 1 << 6,     // from (x − 1, y + 1)
    PARALLAX_SGM_BOTTOM_RIGHT = 1 << 7,    // from (x + 1, y + 1)
    PARALLAX_SGM_FIRST_PASS = 0x1F,
    PARALLAX_SGM_SECOND_PASS = 0xE0,
};

/// The value of an invalid pixel in the fixed-point map (16 × disparity).
#define PARALLAX_SGM_INVALID ((int16_t)INT16_MIN)

/// What one matcher does, fixed when it is made.
typedef struct {
    /// The images' size in pixels: 1…8192 each way.
    int32_t width, height;
    /// The first disparity searched (any sign) and how many: a multiple of 16 in 16…256.
    /// |min_disparity| + disparities ≤ 2047 (the fixed-point range).
    int32_t min_disparity, disparities;
    /// The census window: odd sides, width · height − 1 ≤ 64 bits (9 × 7 gives 62).
    int32_t census_width, census_height;
    /// The penalty for a one-disparity step along a path, 1…P2.
    int32_t p1;
    /// P2 for each intensity step |I(p) − I(p−r)| of 0…255, each in P1…255 − the window's bits.
    uint16_t p2_for_step[256];
    /// PARALLAX_SGM_* bits: at least one.
    uint32_t paths;
    /// A winner is kept when every sum more than one disparity from it is at least
    /// (100 + uniqueness_percent) % of its own: 0…100 (0 keeps every winner).
    int32_t uniqueness_percent;
    /// The largest difference, in whole disparities, between a pixel's winner and its right
    /// partner's; negative turns the left–right check off.
    int32_t lr_max_difference;
    /// Connected regions (4-neighbours differing by at most speckle_max_difference16, in
    /// sixteenths of a pixel) of at most speckle_max_size pixels become invalid; 0 turns the
    /// filter off.
    int32_t speckle_max_size, speckle_max_difference16;
} parallax_sgm_plan;

/// One image's luma: `width` samples per row, `step` bytes apart (1 for gray and the
/// planar formats' Y plane, 2 for YUYV and UYVY from the luma's first byte).
typedef struct {
    const uint8_t *base;
    ptrdiff_t row_bytes;
    int32_t step;
} parallax_sgm_luma;

/// Why pixels of the last match are invalid (parallax_sgm_counts).
typedef struct {
    int64_t outside;      // the winner's right pixel outside the image
    int64_t ambiguous;    // failed the uniqueness ratio
    int64_t inconsistent; // failed the left–right check
    int64_t speckle;      // removed by the speckle filter
} parallax_sgm_invalid_counts;

/// 0 when the plan keeps every bound above, else the number of the first it breaks:
/// 1 size, 2 disparities, 3 range, 4 census window, 5 P1, 6 a P2 entry, 7 paths,
/// 8 uniqueness, 9 speckle.
int32_t parallax_sgm_plan_check(const parallax_sgm_plan *plan);

/// The bytes of working memory a match with `plan` needs (one allocation, 64-byte aligned),
/// the whole image's first-pass sums included when `plan` has second-pass paths. 0 for a
/// plan parallax_sgm_plan_check refuses.
size_t parallax_sgm_work_bytes(const parallax_sgm_plan *plan);

/// Lays out `work` (parallax_sgm_work_bytes bytes, 64-byte aligned) for `plan`, which must
/// stay alive and unchanged at the same address while the work area is used.
void parallax_sgm_prepare(const parallax_sgm_plan *plan, void *work);

/// Resets the ring between the stages: called before each match that runs stages 1 and 2.
void parallax_sgm_begin(void *work);

/// Matches one pair into `disparity16` (16 × disparity, PARALLAX_SGM_INVALID where none;
/// rows `stride16` elements apart) and `disparity` (the same in pixels as Float32, +∞ where
/// none; rows `stride` apart). Every byte read lies inside the two images (width samples of
/// `step` bytes in each of height rows). The match runs in two stages handing rows over
/// through a ring in `work`: `stage` 1 (census, costs, and the forward sweep along each row:
/// left to right and the paths from the row before, top down, then bottom up) and `stage` 2
/// (the backward sweep: right to left, the sums, the winners; the checks, the speckle filter)
/// called at the same time on two threads with the same arguments; or `stage` 0 on one
/// thread, which runs both row by row. The disparities are the same either way. Returns 0.
int32_t parallax_sgm_match(void *work, parallax_sgm_level level, int32_t stage, parallax_sgm_luma left,
                           parallax_sgm_luma right, int16_t *disparity16, ptrdiff_t stride16, float *disparity,
                           ptrdiff_t stride);

/// The invalid pixels of the last match, by reason.
parallax_sgm_invalid_counts parallax_sgm_counts(const void *work);

// MARK: Stages on their own, for tests (each the kernel parallax_sgm_match runs)

/// The census codes of row `y` of `image` (`width` codes), rows clamped and columns replicated.
void parallax_sgm_census_row(parallax_sgm_level level, parallax_sgm_luma image, int32_t width, int32_t height,
                             int32_t window_width, int32_t window_height, int32_t y, uint64_t *codes);

/// The costs of one row: costs[x · disparities + d] for the left codes and right codes of
/// one row (`width` each), as the header's cost line says; `no_match` where the right pixel
/// falls outside.
void parallax_sgm_cost_row(parallax_sgm_level level, const uint64_t *left, const uint64_t *right, int32_t width,
                           int32_t min_disparity, int32_t disparities, uint8_t no_match, uint8_t *costs);

/// One path step at one pixel: out[d] = c[d] + min(prev[d], prev[d±1] + p1, prev_min + p2) − prev_min
/// for d in [0, disparities), prev[−1] and prev[disparities] read as 255 (the caller
/// provides them), every value at most 255 − the additions' saturation never mattering while
/// c[d] + p2 ≤ 255; sum[d] += out[d]; returns min_d out[d].
uint8_t parallax_sgm_path_step(parallax_sgm_level level, const uint8_t *c, const uint8_t *prev, uint8_t prev_min,
                               uint8_t p1, uint8_t p2, int32_t disparities, uint8_t *out, uint16_t *sum);

/// The speckle filter on its own: `map` (width × height, PARALLAX_SGM_INVALID where invalid)
/// loses its regions of at most `max_size` pixels joined through 4-neighbours differing by at
/// most `max_difference16`, rows taken in the order a match makes them (bottom up when
/// `bottom_up`, as with second-pass paths). Returns the pixels removed.
int64_t parallax_sgm_speckle_filter(int16_t *map, int32_t width, int32_t height, int32_t max_size,
                                    int32_t max_difference16, int32_t bottom_up);

#endif
