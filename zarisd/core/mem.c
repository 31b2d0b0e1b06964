/* mem — see mem.h. */
#include "zarisd/core/mem.h"

#include <errno.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MEM_SLOTS 64

/* One counter per thread slot, each on its own cache line so workers never
 * share a line on the allocation path. Signed: a slot goes negative when
 * its thread frees blocks that another thread allocated. */
struct mem_slot {
	_Atomic long long bytes;
	char pad[64 - sizeof(long long)];
};

static struct mem_slot mem_slots[MEM_SLOTS];
static _Atomic size_t mem_peak;
static _Thread_local unsigned mem_my_slot;

void zr_mem_thread_slot(unsigned slot)
{
	mem_my_slot = slot % MEM_SLOTS;
}

static inline void mem_account(long long delta)
{
	/* relaxed: the counters are statistics, read as a sum without any
	 * ordering against the blocks they describe. */
	atomic_fetch_add_explicit(&mem_slots[mem_my_slot].bytes, delta, memory_order_relaxed);
}

static void mem_oom(size_t size)
{
	fprintf(stderr, "zarisd: out of memory allocating %zu bytes\n", size);
	abort();
}

void *zr_try_malloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (p)
		mem_account((long long)malloc_usable_size(p));
	return p;
}

void *zr_malloc(size_t size)
{
	void *p = zr_try_malloc(size);
	if (!p)
		mem_oom(size);
	return p;
}

void *zr_calloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		mem_oom(n * size);
	mem_account((long long)malloc_usable_size(p));
	return p;
}

void *zr_try_realloc(void *p, size_t size)
{
	size_t old = p ? malloc_usable_size(p) : 0;
	void *np = realloc(p, size ? size : 1);
	if (!np)
		return NULL;
	mem_account((long long)malloc_usable_size(np) - (long long)old);
	return np;
}

void *zr_realloc(void *p, size_t size)
{
	void *np = zr_try_realloc(p, size);
	if (!np)
		mem_oom(size);
	return np;
}

char *zr_strndup(const char *s, size_t n)
{
	char *d = zr_malloc(n + 1);
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *zr_strdup(const char *s)
{
	return zr_strndup(s, strlen(s));
}

void zr_free(void *p)
{
	if (!p)
		return;
	mem_account(-(long long)malloc_usable_size(p));
	free(p);
}

size_t zr_usable(const void *p)
{
	return p ? malloc_usable_size((void *)p) : 0;
}

size_t zr_mem_used(void)
{
	long long sum = 0;
	for (int i = 0; i < MEM_SLOTS; i++)
		sum += atomic_load_explicit(&mem_slots[i].bytes, memory_order_relaxed);
	size_t used = sum > 0 ? (size_t)sum : 0;
	size_t peak = atomic_load_explicit(&mem_peak, memory_order_relaxed);
	while (used > peak && !atomic_compare_exchange_weak_explicit(
				      &mem_peak, &peak, used, memory_order_relaxed, memory_order_relaxed))
		;
	return used;
}

size_t zr_mem_peak(void)
{
	zr_mem_used();
	return atomic_load_explicit(&mem_peak, memory_order_relaxed);
}

size_t zr_mem_rss(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	unsigned long size = 0, resident = 0;
	int n = fscanf(f, "%lu %lu", &size, &resident);
	fclose(f);
	if (n != 2)
		return 0;
	return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

const char *zr_mem_allocator(void)
{
#ifdef ZR_SANITIZED
	return "libc";
#else
	return "jemalloc-5.3.0";
#endif
}

/* jemalloc's entry points. A sanitizer build (ZR_SANITIZED) links no
 * jemalloc (the sanitizers bring their own malloc), so there the build
 * chooses libc's answers instead: nothing to purge, no stats text, no
 * background thread. */
#ifndef ZR_SANITIZED
extern int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);
extern void malloc_stats_print(void (*write_cb)(void *, const char *), void *opaque, const char *opts);

void zr_mem_purge(void)
{
	/* MALLCTL_ARENAS_ALL is 4096 in jemalloc 5 */
	(void)mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
}

bool zr_mem_stats_text(void (*write_cb)(void *opaque, const char *text), void *opaque)
{
	malloc_stats_print(write_cb, opaque, NULL);
	return true;
}

int zr_mem_background_purge(int on)
{
	bool enable = on != 0;
	int rc = mallctl("background_thread", NULL, NULL, &enable, sizeof(enable));
	return rc ? -rc : 0; /* mallctl returns an errno value */
}
#else
void zr_mem_purge(void)
{
}

bool zr_mem_stats_text(void (*write_cb)(void *opaque, const char *text), void *opaque)
{
	(void)write_cb;
	(void)opaque;
	return false;
}

int zr_mem_background_purge(int on)
{
	(void)on;
	return -ENOTSUP;
}
#endif
