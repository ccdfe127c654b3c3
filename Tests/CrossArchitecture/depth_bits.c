// The semi-global matcher's disparities as hashes, for comparing architectures and vector
// levels: Sources/CDepthKernels promises the same disparities at every level and on one or
// two threads. Tests/CrossArchitecture/run builds this for x86-64 and for arm64 (run under
// qemu) and compares the lines.
//
//   depth_bits LEVEL    (0 baseline, 1 AVX2, 2 AVX-512; capped at what the CPU has)
//
// Prints one line per configuration, "name hash valid", hashing the fixed-point map, the
// Float32 map and the invalid counts. Exits 1 when the two-thread match differs from the
// one-thread match.
#include "CDepthKernels.h"
#include "CRemapKernels.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_bytes(uint64_t h, const void *data, size_t count) {
    const unsigned char *p = data;
    for (size_t i = 0; i < count; i++) h = (h ^ p[i]) * 1099511628211ull;  // FNV-1a
    return h;
}

typedef struct {
    void *work;
    int level;
    parallax_sgm_luma left, right;
    int16_t *fixed;
    float *values;
    int width;
} stage_job;

static void *first_stage(void *argument) {
    stage_job *job = argument;
    parallax_sgm_match(job->work, job->level, 1, job->left, job->right, job->fixed, job->width, job->values, job->width);
    return NULL;
}

int main(int argc, char **argv) {
    int requested = argc > 1 ? atoi(argv[1]) : 0;
    int widest = (int)parallax_map_simd_level();
    int level = requested < widest ? requested : widest;
    // A textured pair: smoothed LCG noise, the right image the left shifted by 6 px, 17 px in a
    // box (occlusions and edges), with a faint gradient.
    enum { W = 173, H = 61 };
    static uint8_t left[W * H], right[W * H];
    uint64_t state = 12345;
    for (int i = 0; i < W * H; i++) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        left[i] = (uint8_t)(state >> 56);
    }
    for (int y = 0; y < H; y++)
        for (int x = W - 1; x > 0; x--) left[y * W + x] = (uint8_t)((left[y * W + x] + left[y * W + x - 1]) / 2 + y / 8);
    memcpy(right, left, sizeof right);
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            const int d = (x >= 60 && x < 110 && y >= 15 && y < 45) ? 17 : 6;
            if (x - d >= 0) right[y * W + x - d] = left[y * W + x];
        }
    struct { const char *name; int min, count, cw, ch, paths, uniqueness, lr, speckle; } configs[] = {
        {"five_9x7", 0, 32, 9, 7, PARALLAX_SGM_FIRST_PASS, 5, 1, 20},
        {"eight_5x5_negative", -8, 48, 5, 5, PARALLAX_SGM_FIRST_PASS | PARALLAX_SGM_SECOND_PASS, 10, 0, 50},
        {"four_unchecked", 2, 16, 7, 5, 0x27, 0, -1, 0},
        // 128 disparities: two vectors of 64 with AVX-512, four of 32 with AVX2, eight of 16 below.
        {"five_128_negative", -20, 128, 9, 7, PARALLAX_SGM_FIRST_PASS, 5, 1, 100},
    };
    int status = 0;
    for (size_t c = 0; c < sizeof configs / sizeof configs[0]; c++) {
        parallax_sgm_plan plan;
        memset(&plan, 0, sizeof plan);
        plan.width = W, plan.height = H, plan.min_disparity = configs[c].min, plan.disparities = configs[c].count;
        plan.census_width = configs[c].cw, plan.census_height = configs[c].ch, plan.p1 = 7;
        for (int i = 0; i < 256; i++) plan.p2_for_step[i] = (uint16_t)(7 + 90 * 16 / (16 + i));
        plan.paths = (uint32_t)configs[c].paths, plan.uniqueness_percent = configs[c].uniqueness;
        plan.lr_max_difference = configs[c].lr, plan.speckle_max_size = configs[c].speckle, plan.speckle_max_difference16 = 32;
        if (parallax_sgm_plan_check(&plan) != 0) { printf("%s refused\n", configs[c].name); return 1; }
        const size_t bytes = parallax_sgm_work_bytes(&plan);
        void *work = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
        parallax_sgm_prepare(&plan, work);
        int16_t *fixed = malloc(sizeof(int16_t) * W * H), *fixed2 = malloc(sizeof(int16_t) * W * H);
        float *values = malloc(sizeof(float) * W * H), *values2 = malloc(sizeof(float) * W * H);
        parallax_sgm_luma l = {left, W, 1}, r = {right, W, 1};
        parallax_sgm_match(work, level, 0, l, r, fixed, W, values, W);
        parallax_sgm_invalid_counts counts = parallax_sgm_counts(work);
        // The two stages on two threads.
        parallax_sgm_begin(work);
        stage_job job = {work, level, l, r, fixed2, values2, W};
        pthread_t thread;
        pthread_create(&thread, NULL, first_stage, &job);
        parallax_sgm_match(work, level, 2, l, r, fixed2, W, values2, W);
        pthread_join(thread, NULL);
        parallax_sgm_invalid_counts counts2 = parallax_sgm_counts(work);
        if (memcmp(fixed, fixed2, sizeof(int16_t) * W * H) || memcmp(values, values2, sizeof(float) * W * H) ||
            memcmp(&counts, &counts2, sizeof counts)) {
            printf("%s: two threads differ from one\n", configs[c].name);
            status = 1;
        }
        uint64_t h = 14695981039346656037ull;
        h = hash_bytes(hash_bytes(hash_bytes(h, fixed, sizeof(int16_t) * W * H), values, sizeof(float) * W * H), &counts, sizeof counts);
        long valid = 0;
        for (int i = 0; i < W * H; i++) valid += fixed[i] != PARALLAX_SGM_INVALID;
        printf("sgm_%s %016llx valid %ld\n", configs[c].name, (unsigned long long)h, valid);
        free(work), free(fixed), free(fixed2), free(values), free(values2);
    }
    return status;
}
