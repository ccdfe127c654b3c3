// Counts the heap allocations of a process while counting is on: loaded with LD_PRELOAD
// (`make allocations`), it defines the allocator's entry points over glibc's own
// (__libc_malloc and its siblings; glibc supports replacing malloc this way), and
// AllocationTests reads it through dlsym. Not loaded, the tests that need it skip.
//
//   clang -O2 -shared -fPIC -o allocation-counter.so allocation_counter.c
//
// Every allocation on every thread counts, as package-benchmark's malloc counters do: a
// test that measures a window must leave nothing else running in the process. Or only the
// calling thread's (`..._start_this_thread`), for work that runs on it alone: then nothing
// else the process does (the test runner's own threads) can add to the count.
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);
extern void *__libc_valloc(size_t size);
extern void *__libc_pvalloc(size_t size);
extern void __libc_free(void *pointer);

static atomic_int counting;
static atomic_uint_fast64_t allocations;
// Initial-exec: the preloaded library's thread-local lives in the static TLS block, so
// reading it never calls the allocator it is counting for.
static _Thread_local int counting_this_thread __attribute__((tls_model("initial-exec")));

static inline void count(void) {
    if (atomic_load_explicit(&counting, memory_order_relaxed) || counting_this_thread) {
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    }
}

/// Starts counting from zero the calling thread's allocations alone.
void parallax_allocation_counter_start_this_thread(void) {
    atomic_store(&allocations, 0);
    counting_this_thread = 1;
}

/// Stops counting the calling thread's; returns its allocations since the start.
uint64_t parallax_allocation_counter_stop_this_thread(void) {
    counting_this_thread = 0;
    return atomic_load(&allocations);
}

/// Starts counting from zero.
void parallax_allocation_counter_start(void) {
    atomic_store(&allocations, 0);
    atomic_store(&counting, 1);
}

/// Stops counting; returns the allocations since the start.
uint64_t parallax_allocation_counter_stop(void) {
    atomic_store(&counting, 0);
    return atomic_load(&allocations);
}

void *malloc(size_t size) { count(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count(); return __libc_calloc(n, size); }
void *realloc(void *pointer, size_t size) { count(); return __libc_realloc(pointer, size); }
void free(void *pointer) { __libc_free(pointer); }
void *memalign(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count(); return __libc_memalign(alignment, size); }
void *valloc(size_t size) { count(); return __libc_valloc(size); }
void *pvalloc(size_t size) { count(); return __libc_pvalloc(size); }

int posix_memalign(void **out, size_t alignment, size_t size) {
    // POSIX: a power of two and a multiple of sizeof(void *); the result left alone on failure.
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL && size != 0) return ENOMEM;
    *out = pointer;
    return 0;
}
