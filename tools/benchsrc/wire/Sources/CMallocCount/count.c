/* Counts heap allocations by interposing glibc's allocation functions in the executable that links this file.
 * A shared library's call of malloc binds to the executable's definition, so the Swift runtime's allocations are
 * counted too; each wrapper forwards to glibc's own implementation (__libc_malloc & co., exported by glibc for
 * this purpose), so free() needs no wrapper. The same approach as swift-nio's malloc-counting benchmarks
 * (swift-nio IntegrationTests/tests_04_performance, "hooked" allocation functions). */
#include <errno.h>
#include <stddef.h>
#include "CMallocCount.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static unsigned long long count;

static inline void counted(void) { __atomic_fetch_add(&count, 1, __ATOMIC_RELAXED); }

void *malloc(size_t n) { counted(); return __libc_malloc(n); }
void *calloc(size_t a, size_t n) { counted(); return __libc_calloc(a, n); }
void *realloc(void *p, size_t n) { counted(); return __libc_realloc(p, n); }
void *memalign(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
void *aligned_alloc(size_t a, size_t n) { counted(); return __libc_memalign(a, n); }
int posix_memalign(void **out, size_t a, size_t n) {
    counted();
    void *p = __libc_memalign(a, n);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}

unsigned long long livebus_malloc_count(void) { return __atomic_load_n(&count, __ATOMIC_RELAXED); }
