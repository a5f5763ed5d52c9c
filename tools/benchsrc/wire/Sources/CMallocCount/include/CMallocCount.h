#ifndef LIVEBUS_CMALLOCCOUNT_H
#define LIVEBUS_CMALLOCCOUNT_H
/* Heap allocations made by this process so far: every call of malloc, calloc, realloc, posix_memalign,
 * aligned_alloc and memalign (the Swift runtime allocates through these). */
unsigned long long livebus_malloc_count(void);
#endif
