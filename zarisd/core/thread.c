/* thread — see thread.h. */
#include "zarisd/core/thread.h"

#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#ifdef ZR_SANITIZED
#include <sanitizer/common_interface_defs.h>
#endif

/* The calling thread's identity: its kernel id (0 until first asked) and
 * the worker it is (thread.h). */
static _Thread_local pid_t tl_tid;
static _Thread_local int tl_worker = ZR_THREAD_NOT_WORKER;

/* A forked child's one thread has an id of its own (glibc's owner fields
 * hold it), not the cached one of the thread that forked. */
static pthread_once_t fork_watch = PTHREAD_ONCE_INIT;

static void forget_tid(void)
{
	tl_tid = 0;
}

static void watch_forks(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

pid_t zr_thread_id(void)
{
	if (!tl_tid) {
		pthread_once(&fork_watch, watch_forks);
		tl_tid = gettid();
	}
	return tl_tid;
}

void zr_thread_set_worker(int index)
{
	tl_worker = index;
}

int zr_thread_worker(void)
{
	return tl_worker;
}

bool zr_thread_is_worker(unsigned w)
{
	return tl_worker == ZR_THREAD_ALL_WORKERS || (tl_worker >= 0 && (unsigned)tl_worker == w);
}

/* Relaxed loads of fields glibc writes: only the holder itself writes its
 * own id there (taking the lock) and clears it (releasing), so the value
 * a thread reads equals its id exactly when it holds the lock, whatever
 * the other threads do meanwhile. */
bool zr_mutex_held(const pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == zr_thread_id();
}

bool zr_rwlock_wrheld(const pthread_rwlock_t *rw)
{
	return __atomic_load_n(&rw->__data.__cur_writer, __ATOMIC_RELAXED) == zr_thread_id();
}

void zr_check_failed(const char *what, const char *file, int line, const char *func)
{
	fprintf(stderr, "zarisd: owner check failed: %s at %s:%d (%s), thread %d, worker %d\n", what, file,
		line, func, (int)zr_thread_id(), tl_worker);
#ifdef ZR_SANITIZED
	__sanitizer_print_stack_trace();
#else
	void *frames[32];
	backtrace_symbols_fd(frames, backtrace(frames, 32), STDERR_FILENO);
#endif
	abort();
}
