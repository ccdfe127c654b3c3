// The bits OpenBLAS gives for the five LAPACK routines Parallax calls (LinearAlgebra.swift:
// dgesvd, dgels, dpotrf, dpotrs, dpotri), on matrices of the shapes the calibration solves
// (homographies and Zhang's systems: tall and 9 or 6 wide; Levenberg–Marquardt's normal
// equations: 6 to 400 unknowns, across OpenBLAS's switch from unblocked to blocked Cholesky),
// folded into one 64-bit hash per routine (FNV-1a over every output double's bits).
//
// Two OPENBLAS_CORETYPE values that print the same hashes take the same kernels for every
// operation Parallax asks of OpenBLAS: the suites whose results go through OpenBLAS cannot
// tell them apart, so Tests/CPUs/run runs those suites once for both. One that prints other
// hashes gets a run of its own.
//
//   cc -O1 -o fingerprint openblas_fingerprint.c -llapacke -lopenblas && ./fingerprint
//
// Single-threaded, as Parallax runs OpenBLAS (LinearAlgebra's serialBLAS).
#include <lapacke.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void openblas_set_num_threads(int);

static uint64_t state = 0x9E3779B97F4A7C15u;
// Deterministic values in [-1, 1): the same matrices on every machine.
static double next_value(void) {
    state = state * 6364136223846793005u + 1442695040888963407u;
    return (double)(state >> 11) / 4503599627370496.0 - 1.0;
}

static void fold(uint64_t *hash, const double *values, size_t count) {
    const unsigned char *bytes = (const unsigned char *)values;
    for (size_t i = 0; i < count * sizeof(double); i++) {
        *hash ^= bytes[i];
        *hash *= 0x100000001B3u;
    }
}

static double *random_matrix(int rows, int columns) {
    double *m = malloc(sizeof(double) * (size_t)rows * (size_t)columns);
    if (!m) { perror("malloc"); exit(2); }
    for (size_t i = 0; i < (size_t)rows * (size_t)columns; i++) m[i] = next_value();
    return m;
}

// JᵀJ + λI of a random tall J: the shape of Levenberg–Marquardt's normal equations.
static double *normal_equations(int n) {
    int m = 3 * n;
    double *j = random_matrix(m, n);
    double *a = calloc((size_t)n * (size_t)n, sizeof(double));
    if (!a) { perror("calloc"); exit(2); }
    for (int c = 0; c < n; c++)
        for (int r = 0; r < n; r++) {
            double sum = 0;
            for (int k = 0; k < m; k++) sum += j[r * m + k] * j[c * m + k];
            a[c * n + r] = sum + (r == c ? 1e-3 : 0);
        }
    free(j);
    return a;
}

static void check(lapack_int info, const char *routine) {
    if (info != 0) { fprintf(stderr, "%s failed: info %d\n", routine, (int)info); exit(2); }
}

int main(void) {
    openblas_set_num_threads(1);
    uint64_t svd = 0xCBF29CE484222325u, gels = svd, potrf = svd, potrs = svd, potri = svd;

    static const int svd_shapes[][2] = {{3, 3}, {9, 9}, {12, 9}, {54, 9}, {108, 9}, {200, 9}, {400, 12}, {96, 96}, {26, 6}};
    for (size_t s = 0; s < sizeof svd_shapes / sizeof svd_shapes[0]; s++) {
        int m = svd_shapes[s][0], n = svd_shapes[s][1], k = m < n ? m : n;
        double *a = random_matrix(m, n), *sv = malloc(sizeof(double) * (size_t)k);
        double *u = malloc(sizeof(double) * (size_t)m * (size_t)k), *vt = malloc(sizeof(double) * (size_t)k * (size_t)n);
        double *superb = malloc(sizeof(double) * (size_t)k);
        check(LAPACKE_dgesvd(LAPACK_COL_MAJOR, 'S', 'S', m, n, a, m, sv, u, m, vt, k, superb), "dgesvd");
        fold(&svd, sv, (size_t)k);
        fold(&svd, u, (size_t)m * (size_t)k);
        fold(&svd, vt, (size_t)k * (size_t)n);
        free(a); free(sv); free(u); free(vt); free(superb);
    }

    static const int gels_shapes[][2] = {{6, 6}, {12, 6}, {26, 6}, {100, 5}, {300, 12}, {2000, 9}, {80, 40}};
    for (size_t s = 0; s < sizeof gels_shapes / sizeof gels_shapes[0]; s++) {
        int m = gels_shapes[s][0], n = gels_shapes[s][1];
        double *a = random_matrix(m, n), *b = random_matrix(m, 1);
        check(LAPACKE_dgels(LAPACK_COL_MAJOR, 'N', m, n, 1, a, m, b, m), "dgels");
        fold(&gels, a, (size_t)m * (size_t)n);
        fold(&gels, b, (size_t)m);
        free(a); free(b);
    }

    static const int sizes[] = {6, 9, 15, 33, 64, 87, 102, 130, 200, 264, 400};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        int n = sizes[s];
        double *a = normal_equations(n), *b = random_matrix(n, 1);
        check(LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', n, a, n), "dpotrf");
        fold(&potrf, a, (size_t)n * (size_t)n);
        check(LAPACKE_dpotrs(LAPACK_COL_MAJOR, 'L', n, 1, a, n, b, n), "dpotrs");
        fold(&potrs, b, (size_t)n);
        check(LAPACKE_dpotri(LAPACK_COL_MAJOR, 'L', n, a, n), "dpotri");
        fold(&potri, a, (size_t)n * (size_t)n);
        free(a); free(b);
    }
    printf("dgesvd %016llx dgels %016llx dpotrf %016llx dpotrs %016llx dpotri %016llx\n",
           (unsigned long long)svd, (unsigned long long)gels, (unsigned long long)potrf,
           (unsigned long long)potrs, (unsigned long long)potri);
    return 0;
}
