/* thread — who the calling thread is, and the owner checks built on it:
 * "this lock is held by me" (SQLite's sqlite3_mutex_held) and "I am the
 * worker that owns this" (Valkey's inMainThread).
 *
 * Identity: the kernel thread id (gettid, read once per thread) and, for a
 * worker, its index, which net/worker.c records when the worker's thread
 * starts. After every worker has been joined, the main thread takes their
 * place (ZR_THREAD_ALL_WORKERS): shutdown frees the workers' connections
 * there, and a worker's things then belong to the one thread left.
 *
 * Checks: ZR_CHECK(cond) documents a contract the way assert() does, and
 * is compiled only when ZR_OWNER_CHECKS is defined — in the sanitizer
 * builds, which define ZR_SANITIZED (make asan / make tsan); a release
 * build evaluates nothing and pays nothing. A failed check prints the
 * condition, where it is and the call stack, and aborts.
 *   ZR_ASSERT_ON_WORKER(w)   the caller is worker W's thread;
 *   ZR_ASSERT_MUTEX_HELD(m)  the caller holds pthread mutex M;
 *   ZR_ASSERT_HELD(l)        the caller holds zr_lock L (core/lock.h).
 * Pthread locks carry no owner of their own that POSIX lets us read, but
 * glibc records the holder's thread id in every mutex it locks (the
 * normal kind, as all of zarisd's: __data.__owner) and in an rwlock held
 * for writing (__data.__cur_writer); zr_mutex_held and zr_rwlock_wrheld
 * read those. tests/unit/lock.c holds that assumption.
 *
 * The lock order itself is core/lock_order.h.
 *
 * Any thread.
 */
#ifndef ZR_THREAD_H
#define ZR_THREAD_H

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

#if defined(ZR_SANITIZED) && !defined(ZR_OWNER_CHECKS)
#define ZR_OWNER_CHECKS 1
#endif

#define ZR_THREAD_NOT_WORKER (-1)
#define ZR_THREAD_ALL_WORKERS (-2) /* the main thread, once every worker was joined */

/* The calling thread's kernel thread id (cached after the first call). */
pid_t zr_thread_id(void);

/* Records that the calling thread is worker INDEX (>= 0), or one of the
 * ZR_THREAD_* values above. worker_main, first thing; net_serve's caller
 * after the workers were joined. */
void zr_thread_set_worker(int index);
/* What zr_thread_set_worker recorded on this thread (ZR_THREAD_NOT_WORKER
 * when nothing). */
int zr_thread_worker(void);
/* Whether the calling thread may act as worker W: it is W, or every
 * worker has ended and this thread took their place. */
bool zr_thread_is_worker(unsigned w);

/* Whether the calling thread holds M / holds RW for writing (glibc's
 * owner fields; see the top). A read hold of RW cannot be told. */
bool zr_mutex_held(const pthread_mutex_t *m);
bool zr_rwlock_wrheld(const pthread_rwlock_t *rw);

/* A failed ZR_CHECK: prints WHAT at FILE:LINE (FUNC) and the call stack,
 * then aborts. */
__attribute__((noreturn, cold)) void zr_check_failed(const char *what, const char *file, int line,
						     const char *func);

#ifdef ZR_OWNER_CHECKS
#define ZR_CHECK(cond) ((cond) ? (void)0 : zr_check_failed(#cond, __FILE__, __LINE__, __func__))
#else
#define ZR_CHECK(cond) ((void)0)
#endif

#define ZR_ASSERT_ON_WORKER(w) ZR_CHECK(zr_thread_is_worker(w))
#define ZR_ASSERT_MUTEX_HELD(m) ZR_CHECK(zr_mutex_held(m))

#endif
