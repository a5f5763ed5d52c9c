/* The counters file shared by alloccount.so (the LD_PRELOAD shim in the measured process) and the harness. */
#ifndef LIVEBUS_BENCH_ALLOCCOUNT_H
#define LIVEBUS_BENCH_ALLOCCOUNT_H

#include <stdatomic.h>
#include <stdint.h>

struct lb_alloc_counters {
    _Atomic uint64_t allocations; /* malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign, valloc */
    _Atomic uint64_t bytes;       /* bytes requested by those calls */
    _Atomic uint64_t frees;       /* free of a non-NULL pointer */
    _Atomic uint64_t attached;    /* set to 1 by the shim once it mapped the file */
    _Atomic uint64_t sampling;    /* set by the harness during its measured window: stacks are sampled */
    _Atomic uint64_t seen;        /* allocations while sampling (every $LIVEBUS_ALLOC_SAMPLE-th is written) */
};

#endif
