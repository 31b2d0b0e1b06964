/* mem — the one heap wrapper of zarisd (jemalloc underneath).
 *
 * Every allocation in zarisd goes through these functions so that
 * used_memory (what maxmemory compares against) is the sum of the real
 * usable sizes the allocator handed out. Internal allocations abort on
 * out-of-memory (there is no sane recovery from a failed 64-byte malloc
 * inside the event loop); the zr_try_* variants return NULL so that a
 * client-sized value can be answered with -OOM instead.
 *
 * Accounting is per thread: each thread adds to its own cache-line-sized
 * slot (relaxed atomics, no shared line on the hot path) and
 * zr_mem_used() sums the slots. A block freed on another thread than the
 * one that allocated it makes one slot go down and another up; the sum
 * stays right. Any thread may call anything here.
 */
#ifndef ZR_MEM_H
#define ZR_MEM_H

#include <stdbool.h>
#include <stddef.h>

void *zr_malloc(size_t size);
void *zr_calloc(size_t n, size_t size);
void *zr_realloc(void *p, size_t size);
char *zr_strdup(const char *s);
char *zr_strndup(const char *s, size_t n);
/* NULL on failure instead of aborting; for client-sized values. */
void *zr_try_malloc(size_t size);
void *zr_try_realloc(void *p, size_t size);
void zr_free(void *p);
/* The allocator's usable size of a live block (0 for NULL). */
size_t zr_usable(const void *p);

/* Bytes currently allocated through this module, all threads. */
size_t zr_mem_used(void);
/* Peak of zr_mem_used() as observed by zr_mem_used() calls. */
size_t zr_mem_peak(void);
/* Selects the calling thread's accounting slot (0 = main, 1.. = workers). */
void zr_mem_thread_slot(unsigned slot);
/* The process's resident set size in bytes, from /proc/self/statm. */
size_t zr_mem_rss(void);
/* Name of the allocator in use ("jemalloc-5.3.0" or "libc"). */
const char *zr_mem_allocator(void);
/* Starts (ON != 0) or stops jemalloc's background threads, which return
 * freed pages to the system as they age instead of on later allocation
 * calls (Redis's jemalloc-bg-thread). 0, -ENOTSUP without jemalloc, or
 * another -errno from jemalloc. */
int zr_mem_background_purge(int on);
/* Returns every arena's unused dirty pages to the system now (MEMORY
 * PURGE); nothing without jemalloc. */
void zr_mem_purge(void);
/* jemalloc's statistics report, passed to WRITE_CB in pieces (MEMORY
 * MALLOC-STATS); false without jemalloc. */
bool zr_mem_stats_text(void (*write_cb)(void *opaque, const char *text), void *opaque);

#define ZR_FREE(p)          \
	do {                \
		zr_free(p); \
		(p) = NULL; \
	} while (0)

#endif
