/* alloccount.so: an LD_PRELOAD shim that counts heap allocations of the process it is loaded into
 * (tools/bench builds it with cc -O2 -shared -fPIC and starts livebusd under it for the "allocs" workload).
 *
 * It interposes malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc, pvalloc and free, and
 * forwards each to glibc's own entry points (__libc_malloc …: no dlsym, so no recursion at start-up). Swift's
 * runtime allocates through these (swift_slowAlloc → malloc, or aligned_alloc/posix_memalign for alignments
 * above 16), as do Foundation, libuv and SQLite.
 *
 * The counters live in a file mapped MAP_SHARED: the path comes from $LIVEBUS_ALLOC_COUNTERS (created by the
 * harness, at least one page). The harness maps the same file and reads the counters before and after its
 * measured window, so nothing in the measured process changes (no signal handler, no thread, no extra syscall
 * per allocation); allocations made before the file is mapped go to a private fallback and are not seen.
 * Layout of the file: struct lb_alloc_counters below (little-endian u64s, as the machine).
 *
 * Allocation sites (optional): with $LIVEBUS_ALLOC_STACKS=FILE and $LIVEBUS_ALLOC_SAMPLE=K, while the harness has
 * set `sampling` in the shared counters (its measured window only), every K-th allocation's call stack is appended
 * to FILE as one line: `bytes;frame;frame;…`, each frame `module+0xoffset` (dladdr: the module's path and the
 * offset from its load address, which addr2line resolves) or `=symbol` when the module exports one.
 * tools/benchsrc/allocsites.py turns that into the table of sites.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloccount.h"

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static struct lb_alloc_counters fallback;
static struct lb_alloc_counters *counters = &fallback;
static int stacks_fd = -1;
static uint64_t sample_every;
static __thread int in_sample; /* backtrace/dladdr may allocate: not sampled again, still counted */

__attribute__((constructor)) static void lb_alloc_init(void) {
    const char *path = getenv("LIVEBUS_ALLOC_COUNTERS");
    if (!path || !*path) return;
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return;
    void *p = mmap(NULL, sizeof(struct lb_alloc_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return;
    counters = p;
    const char *stacks = getenv("LIVEBUS_ALLOC_STACKS"), *every = getenv("LIVEBUS_ALLOC_SAMPLE");
    if (stacks && *stacks && every && atoi(every) > 0) {
        sample_every = (uint64_t)atoi(every);
        void *warm[4];
        backtrace(warm, 4); /* loads libgcc's unwinder now, outside any measured window */
        stacks_fd = open(stacks, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    }
    atomic_store(&counters->attached, 1);
}

static void sample(size_t n) {
    in_sample = 1;
    void *bt[32];
    int depth = backtrace(bt, 32);
    char line[8192];
    int len = snprintf(line, sizeof line, "%zu", n);
    for (int i = 2; i < depth && len < (int)sizeof line - 600; i++) { /* 0: sample, 1: count */
        Dl_info info;
        if (dladdr(bt[i], &info) && info.dli_fname) {
            if (info.dli_sname && info.dli_saddr)
                len += snprintf(line + len, sizeof line - (size_t)len, ";=%s", info.dli_sname);
            else
                len += snprintf(line + len, sizeof line - (size_t)len, ";%s+0x%lx", info.dli_fname,
                                (unsigned long)((char *)bt[i] - (char *)info.dli_fbase - 1));
        } else
            len += snprintf(line + len, sizeof line - (size_t)len, ";?");
    }
    line[len++] = '\n';
    if (write(stacks_fd, line, (size_t)len) < 0) {}
    in_sample = 0;
}

static inline void count(size_t n) {
    atomic_fetch_add_explicit(&counters->allocations, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&counters->bytes, n, memory_order_relaxed);
    if (stacks_fd >= 0 && !in_sample && atomic_load_explicit(&counters->sampling, memory_order_relaxed) &&
        atomic_fetch_add_explicit(&counters->seen, 1, memory_order_relaxed) % sample_every == 0)
        sample(n);
}

void *malloc(size_t n) {
    count(n);
    return __libc_malloc(n);
}

void *calloc(size_t k, size_t n) {
    count(k * n);
    return __libc_calloc(k, n);
}

void *realloc(void *p, size_t n) {
    /* a realloc may move (a new block) or grow in place; either way the program asked for memory */
    count(n);
    return __libc_realloc(p, n);
}

void free(void *p) {
    if (p) atomic_fetch_add_explicit(&counters->frees, 1, memory_order_relaxed);
    __libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n) {
    count(n);
    void *p = __libc_memalign(align, n);
    if (!p) return 12; /* ENOMEM */
    *out = p;
    return 0;
}

void *aligned_alloc(size_t align, size_t n) {
    count(n);
    return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n) {
    count(n);
    return __libc_memalign(align, n);
}

void *valloc(size_t n) {
    count(n);
    return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), n);
}

void *pvalloc(size_t n) {
    size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    count(n);
    return __libc_memalign(pg, (n + pg - 1) / pg * pg);
}
