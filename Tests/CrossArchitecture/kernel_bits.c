// The C kernels' results as hashes, for comparing architectures and vector levels: every
// kernel in Sources/CRemapKernels promises the same bits at every level, and IEEE arithmetic
// without contraction promises them on every architecture. Tests/CrossArchitecture/run
// builds this for x86-64 and for arm64 (run under qemu) and compares the lines.
//
//   kernel_bits LEVEL    (0 baseline, 1 AVX2, 2 AVX-512; capped at what the CPU has)
//
// Prints one line per kernel, "name hash", then "mismatches N": positions whose quantised
// row disagrees with the rounding of the exact row, or whose entries compiled from the
// quantised row differ from those compiled from the exact floats. Exits 1 when N > 0.
#include "CRemapKernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(uint64_t h, const void *data, size_t count) {
    const unsigned char *p = data;
    for (size_t i = 0; i < count; i++) h = (h ^ p[i]) * 1099511628211ull;  // FNV-1a
    return h;
}

static const uint64_t fnv_offset = 14695981039346656037ull;

static int32_t quantised(float x) {
    if (!(fabsf(x) < 65536.0f)) return PARALLAX_UNDEFINED_POSITION;
    return (int32_t)nearbyintf(x * 32.0f);  // ties to even in the default rounding mode
}

int main(int argc, char **argv) {
    int requested = argc > 1 ? atoi(argv[1]) : 0;
    parallax_simd_level widest = parallax_map_simd_level();
    parallax_simd_level level = requested < (int)widest ? (parallax_simd_level)requested : widest;
    // A plain pinhole, a Brown–Conrady lens like OpenCV's sample camera (skewed), a rational one.
    parallax_brown_lens lenses[3] = {
        {1400, 1401, 960, 540, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
        {535, 536, 331, 238, 0.4, -0.29, 0.11, 0.0012, -0.0006, -0.01, 0, 0, 0, 1, 0},
        {600, 600, 320, 240, 0.5, 0.3, -0.2, 0.001, 0.002, 0.05, 0.1, 0.01, 0.02, 1, 1}};
    // The fourth case is the second lens again, on rows that run behind the camera
    // (undefined positions) from column 800 on.
    const int widths[4] = {1920, 640, 1283, 1283}, lens_of[4] = {0, 1, 2, 1};
    long mismatches = 0;
    for (int c = 0; c < 4; c++) {
        const int l = lens_of[c], width = widths[c], rows = 96;
        float *xs = malloc(sizeof(float) * width), *ys = malloc(sizeof(float) * width);
        int32_t *qx = malloc(sizeof(int32_t) * width), *qy = malloc(sizeof(int32_t) * width);
        void *scratch = malloc((size_t)parallax_quantised_row_scratch_bytes(width));
        uint32_t *from_floats = malloc(sizeof(uint32_t) * width), *from_quantised = malloc(sizeof(uint32_t) * width);
        int32_t *words = malloc(sizeof(int32_t) * 3 * width);
        uint8_t *inside = malloc((size_t)width);
        parallax_compile_scratch compile_scratch = {words, words + width, words + 2 * width, inside};
        // A 4-byte-per-pixel source big enough for per-row bases (8 MB), bilinear.
        parallax_compile_params params = {1920, 1080, 1920 * 4, 4, 2, 1, 0, 0, 8, 1079 * 1920 * 4 + 1920 * 4};
        uint64_t exact = fnv_offset, quant = fnv_offset, entries = fnv_offset;
        const double f = lenses[l].fx * 0.97;
        for (int r = 0; r < rows; r++) {
            // Rows across the image and past its edges, tilted a little.
            const double v = -40 + r * (lenses[l].cy * 2 + 80) / rows;
            double origin[3] = {-(width / 2.0 + 5) / f + 0.01 * v / f, (v - lenses[l].cy) / f, 1};
            double step[3] = {1 / f, 0.02 / f, 0.0001 / f};
            if (c == 3) origin[2] = 0.4, step[2] = -0.4 / 800;
            parallax_map_row_brown(&lenses[l], origin, step, width, xs, ys, level);
            parallax_map_row_brown_quantised(&lenses[l], origin, step, width, qx, qy, scratch, level);
            exact = hash_bytes(hash_bytes(exact, xs, sizeof(float) * width), ys, sizeof(float) * width);
            quant = hash_bytes(hash_bytes(quant, qx, sizeof(int32_t) * width), qy, sizeof(int32_t) * width);
            for (int u = 0; u < width; u++)
                if (qx[u] != quantised(xs[u]) || qy[u] != quantised(ys[u])) mismatches++;
            parallax_compiled_row a, b;
            parallax_compile_row(xs, ys, width, &params, &compile_scratch, from_floats, &a, level);
            parallax_compile_quantised_row(qx, qy, width, &params, &compile_scratch, from_quantised, &b, level);
            if (a.base != b.base || a.span_start != b.span_start || a.span_end != b.span_end) mismatches++;
            for (ptrdiff_t u = a.span_start; u < a.span_end; u++)
                if (from_floats[u] != from_quantised[u]) mismatches++;
            entries = hash_bytes(entries, &a, sizeof a);
            entries = hash_bytes(entries, from_floats + a.span_start, sizeof(uint32_t) * (size_t)(a.span_end - a.span_start));
        }
        printf("map_rows_%d %016llx\nquantised_rows_%d %016llx\ncompiled_rows_%d %016llx\n", c,
               (unsigned long long)exact, c, (unsigned long long)quant, c, (unsigned long long)entries);
        free(xs), free(ys), free(qx), free(qy), free(scratch), free(from_floats), free(from_quantised), free(words),
            free(inside);
    }

    // Detection: a pseudo-random 8-bit image with a smooth part, blurred, its saddle
    // response, the peaks and ring tests at a few points.
    enum { W = 331, H = 207 };
    float *image = malloc(sizeof(float) * W * H), *blurred = malloc(sizeof(float) * W * H);
    float *tmp = malloc(sizeof(float) * W * H), *response = calloc(W * H, sizeof(float));
    uint32_t state = 2463534242u;
    for (int i = 0; i < W * H; i++) {
        state ^= state << 13, state ^= state >> 17, state ^= state << 5;
        image[i] = (float)((state & 63) + 96 * (((i % W) / 16 + (i / W) / 16) % 2));
    }
    const float kernel[7] = {0.0044f, 0.054f, 0.242f, 0.3992f, 0.242f, 0.054f, 0.0044f};
    parallax_blur_rows(image, tmp, W, H, kernel, 7, level);
    parallax_blur_columns(tmp, blurred, W, H, kernel, 7, level);
    parallax_saddle_response(blurred, response, W, H, 3, level);
    int32_t found[4096];
    const ptrdiff_t peaks = parallax_response_peaks(response, W, H, 3, 1.0f, found, 4096, level);
    double ring_x[16], ring_y[16];
    for (int k = 0; k < 16; k++) ring_x[k] = cos(k * M_PI / 8), ring_y[k] = sin(k * M_PI / 8);
    int32_t rings[64];
    for (int k = 0; k < 64; k++) rings[k] = parallax_ring_test(blurred, W, H, 16.0 * (k % 16) + 40.3, 12.0 * (k / 16) + 60.7,
                                                              ring_x, ring_y, 16, level);
    printf("blur %016llx\n", (unsigned long long)hash_bytes(fnv_offset, blurred, sizeof(float) * W * H));
    printf("saddle_response %016llx\n", (unsigned long long)hash_bytes(fnv_offset, response, sizeof(float) * W * H));
    printf("response_peaks %016llx\n",
           (unsigned long long)hash_bytes(hash_bytes(fnv_offset, &peaks, sizeof peaks), found,
                                          sizeof(int32_t) * (size_t)(peaks < 4096 ? peaks : 4096)));
    printf("ring_test %016llx\n", (unsigned long long)hash_bytes(fnv_offset, rings, sizeof rings));
    // The detection inputs must exercise the kernels: some peaks, some rings passing, not all.
    int passing = 0;
    for (int k = 0; k < 64; k++) passing += rings[k] != 0;
    if (peaks == 0 || passing == 0 || passing == 64) {
        fprintf(stderr, "kernel_bits: degenerate detection input (%ld peaks, %d of 64 rings pass)\n", (long)peaks, passing);
        mismatches++;
    }
    printf("mismatches %ld\n", mismatches);
    return mismatches == 0 ? 0 : 1;
}
