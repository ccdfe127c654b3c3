// Which tests reach OpenBLAS: preloaded into a test run (LD_PRELOAD), this library stands in
// front of the five LAPACKE routines Parallax calls (LinearAlgebra.swift), forwards each call
// to the real one, and writes the call stack of every call path it has not seen before to
// $PARALLAX_OPENBLAS_CENSUS/stacks-PID.txt: one line per stack, the test that ran it when the
// process was started by one (PARALLAX_TEST_ID, which the CLI tests' harness sets for the
// parallax commands they run) or "-", then each frame as FILE+0xOFFSET. Tests/CPUs/census
// names the suites from those frames. Without PARALLAX_OPENBLAS_CENSUS it only forwards.
//
//   clang -O2 -shared -fPIC -o openblas-census.so openblas_census.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <lapacke.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { max_frames = 64, max_stacks = 1 << 14 };
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t seen[max_stacks];  // open addressing; 0 is empty
static size_t seen_count;
static int output = -1;

static uint64_t hash_frames(void *const *frames, int count) {
    uint64_t hash = 0xCBF29CE484222325u;
    for (int i = 0; i < count; i++) {
        uintptr_t pc = (uintptr_t)frames[i];
        for (int b = 0; b < (int)sizeof pc; b++) { hash ^= (pc >> (8 * b)) & 0xFF; hash *= 0x100000001B3u; }
    }
    return hash ? hash : 1;
}

// Whether the stack is new; the table only grows, and past its size every stack counts as new.
static int first_time(uint64_t hash) {
    if (seen_count >= max_stacks / 2) return 1;
    size_t slot = hash & (max_stacks - 1);
    while (seen[slot]) {
        if (seen[slot] == hash) return 0;
        slot = (slot + 1) & (max_stacks - 1);
    }
    seen[slot] = hash;
    seen_count++;
    return 1;
}

static void record(void) {
    const char *folder = getenv("PARALLAX_OPENBLAS_CENSUS");
    if (!folder || !*folder) return;
    void *frames[max_frames];
    int count = backtrace(frames, max_frames);
    uint64_t hash = hash_frames(frames, count);
    pthread_mutex_lock(&lock);
    if (first_time(hash)) {
        if (output < 0) {
            char path[4096];
            snprintf(path, sizeof path, "%s/stacks-%d.txt", folder, (int)getpid());
            output = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        }
        if (output >= 0) {
            static char line[max_frames * 300 + 600];
            const char *test = getenv("PARALLAX_TEST_ID");
            size_t used = (size_t)snprintf(line, 512, "%.500s", test && *test ? test : "-");
            for (int i = 1; i < count && used + 300 < sizeof line; i++) {  // frame 0 is record() itself
                Dl_info info;
                if (dladdr(frames[i], &info) && info.dli_fname) {
                    used += (size_t)snprintf(line + used, 300, "\t%.250s+0x%lx", info.dli_fname,
                                             (unsigned long)((uintptr_t)frames[i] - (uintptr_t)info.dli_fbase - 1));
                }
            }
            line[used++] = '\n';
            ssize_t written = write(output, line, used);
            (void)written;  // a census that cannot write is a smaller census, never a failed call
        }
    }
    pthread_mutex_unlock(&lock);
}

// The real routine, looked up once.
#define REAL(name) \
    static __typeof__(&name) real; \
    if (!real) real = (__typeof__(&name))dlsym(RTLD_NEXT, #name); \
    record();

lapack_int LAPACKE_dgesvd(int layout, char jobu, char jobvt, lapack_int m, lapack_int n, double *a,
                          lapack_int lda, double *s, double *u, lapack_int ldu, double *vt, lapack_int ldvt,
                          double *superb) {
    REAL(LAPACKE_dgesvd)
    return real(layout, jobu, jobvt, m, n, a, lda, s, u, ldu, vt, ldvt, superb);
}

lapack_int LAPACKE_dgels(int layout, char trans, lapack_int m, lapack_int n, lapack_int nrhs, double *a,
                         lapack_int lda, double *b, lapack_int ldb) {
    REAL(LAPACKE_dgels)
    return real(layout, trans, m, n, nrhs, a, lda, b, ldb);
}

lapack_int LAPACKE_dpotrf(int layout, char uplo, lapack_int n, double *a, lapack_int lda) {
    REAL(LAPACKE_dpotrf)
    return real(layout, uplo, n, a, lda);
}

lapack_int LAPACKE_dpotrs(int layout, char uplo, lapack_int n, lapack_int nrhs, const double *a,
                          lapack_int lda, double *b, lapack_int ldb) {
    REAL(LAPACKE_dpotrs)
    return real(layout, uplo, n, nrhs, a, lda, b, ldb);
}

lapack_int LAPACKE_dpotri(int layout, char uplo, lapack_int n, double *a, lapack_int lda) {
    REAL(LAPACKE_dpotri)
    return real(layout, uplo, n, a, lda);
}
