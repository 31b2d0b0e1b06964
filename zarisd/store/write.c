/* write — the write bracket (write.h) and the store's check of it. */
#include "zarisd/store/write.h"

#include <assert.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "zarisd/core/log.h"
#include "zarisd/store/store_int.h"

#ifdef ZR_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

/* The calling thread's open bracket: set by begin and end only. The
 * store's inline write paths read it (store_int.h). */
_Thread_local struct store_write *store_write_cur;

/* relaxed: a count for INFO, ordered with nothing */
static _Atomic uint64_t breaches;

void store_write_begin(struct store_write *w, enum store_write_origin origin, const char *what, bool intent,
		       int64_t now_ms)
{
	assert(origin < STORE_WRITE_ORIGINS);
	*w = (struct store_write){
		.origin = origin, .what = what, .now_ms = now_ms, .intent = intent, .outer = store_write_cur
	};
	store_write_cur = w;
}

void store_write_end(struct store_write *w)
{
	/* begin and end pair innermost first: anything else leaves a
	 * pointer to a dead stack frame as the thread's bracket */
	assert(store_write_cur == w);
	store_write_cur = w->outer;
	if (w->outer)
		w->outer->dirty += w->dirty;
}

struct store_write *store_write_open(void)
{
	return store_write_cur;
}

struct store_write *store_write_txn(void)
{
	struct store_write *found = NULL;
	for (struct store_write *w = store_write_cur; w; w = w->outer)
		if (w->txn_open)
			found = w;
	return found;
}

uint64_t store_write_dirty(void)
{
	return store_write_cur ? store_write_cur->dirty : 0;
}

void store_write_changes_are(uint64_t n)
{
	struct store_write *w = store_write_cur;
	if (!w)
		return;
	w->said = true;
	w->said_n = n;
}

uint64_t store_write_changes(const struct store_write *w)
{
	return w->said ? w->said_n : w->dirty;
}

uint64_t store_write_breaches(void)
{
	return atomic_load_explicit(&breaches, memory_order_relaxed);
}

#ifndef ZR_SANITIZED
static atomic_flag breach_logged = ATOMIC_FLAG_INIT;

/* The first breach's call stack, as file+offset (symbol) per frame: a
 * release build has no symbols for its statics, and addr2line -e zarisd
 * reads the offsets. */
static void log_stack(void)
{
	void *frames[16];
	int n = backtrace(frames, 16);
	for (int i = 1; i < n; i++) {
		Dl_info info;
		if (dladdr(frames[i], &info) && info.dli_fname) {
			zr_log(ZR_LOG_WARNING, "  #%d %s+0x%lx (%s)", i, info.dli_fname,
			       (unsigned long)((char *)frames[i] - (char *)info.dli_fbase),
			       info.dli_sname ? info.dli_sname : "?");
		} else {
			zr_log(ZR_LOG_WARNING, "  #%d %p", i, frames[i]);
		}
	}
}
#endif

void store_write_breach(const char *what)
{
	const struct store_write *w = store_write_cur;
	atomic_fetch_add_explicit(&breaches, 1, memory_order_relaxed);
#ifdef ZR_SANITIZED
	fprintf(stderr, "zarisd: %s %s (a write bracket is required: store/write.h)\n", what,
		w ? "inside a read-only bracket" : "outside any write bracket");
	__sanitizer_print_stack_trace();
	abort();
#else
	if (atomic_flag_test_and_set_explicit(&breach_logged, memory_order_relaxed))
		return;
	zr_log(ZR_LOG_WARNING,
	       "BUG: %s %s%s%s: a snapshot may miss it (logged once; INFO stats write_outside_bracket counts all)",
	       what, w ? "inside the read-only bracket of " : "outside any write bracket", w ? w->what : "",
	       "");
	log_stack();
#endif
}
