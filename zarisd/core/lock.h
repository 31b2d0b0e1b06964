/* lock — a small mutex (futex based) for the keyspace's shard locks.
 *
 * The shard lock is taken and released around every single-key command,
 * so its cost is part of every GET and SET: here the uncontended lock is
 * one compare-and-swap and the unlock one atomic decrement, both inline,
 * where pthread_mutex_lock/unlock are calls that also dispatch on the
 * mutex type. Contended, it sleeps in the kernel like a pthread mutex
 * (Drepper's "Futexes Are Tricky", mutex 2): the word is 0 free, 1 held,
 * 2 held with maybe a sleeper; an unlock that finds 2 wakes one sleeper.
 * Not recursive, not fair. The acquire on lock and the release on unlock
 * order the protected data, which TSan understands. Any thread.
 *
 * Owner checks (core/thread.h; the sanitizer builds): a lock records its
 * holder's thread id, so zr_lock_held(l) / ZR_ASSERT_HELD(l) can state a
 * "caller holds L" contract; taking a lock the caller already holds (it
 * would wait for itself for ever) and releasing one it does not hold
 * abort; and each thread counts the locks it holds (zr_locks_held), for
 * "holds no shard lock" contracts. Release builds keep none of it: the
 * lock is its word alone.
 *
 * Where these locks stand among zarisd's others: core/lock_order.h.
 */
#ifndef ZR_LOCK_H
#define ZR_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "zarisd/core/thread.h"

struct zr_lock {
	_Atomic uint32_t word; /* 0 free, 1 held, 2 held and contended */
#ifdef ZR_OWNER_CHECKS
	_Atomic pid_t owner; /* the holder's thread id, 0 when free */
#endif
};

#ifdef ZR_OWNER_CHECKS
/* zr_lock's held by the calling thread (lock.c). */
extern _Thread_local unsigned zr_lock_count;

/* Whether the calling thread holds L. Relaxed: only the holder writes its
 * own id (after taking L) and clears it (before letting go), so a thread
 * reads its own id there exactly while it holds L. */
static inline bool zr_lock_held(const struct zr_lock *l)
{
	return atomic_load_explicit(&l->owner, memory_order_relaxed) == zr_thread_id();
}

/* How many zr_lock's the calling thread holds. */
static inline unsigned zr_locks_held(void)
{
	return zr_lock_count;
}

static inline void zr_lock_taken(struct zr_lock *l)
{
	atomic_store_explicit(&l->owner, zr_thread_id(), memory_order_relaxed);
	zr_lock_count++;
}

static inline void zr_lock_leaving(struct zr_lock *l)
{
	ZR_CHECK(zr_lock_held(l));
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	zr_lock_count--;
}

#define ZR_ASSERT_HELD(l) ZR_CHECK(zr_lock_held(l))
#else
static inline void zr_lock_taken(struct zr_lock *l)
{
	(void)l;
}

static inline void zr_lock_leaving(struct zr_lock *l)
{
	(void)l;
}

#define ZR_ASSERT_HELD(l) ((void)0)
#endif

static inline void zr_lock_init(struct zr_lock *l)
{
	atomic_init(&l->word, 0);
#ifdef ZR_OWNER_CHECKS
	atomic_init(&l->owner, 0);
#endif
}

/* The contended paths (lock.c), the bare futex waits: zr_lock and
 * zr_lock_unless call them after a failed compare-and-swap, and a caller
 * that tried zr_trylock first waits through zr_lock_contended* below. */
void zr_lock_wait(struct zr_lock *l);
void zr_lock_wake(struct zr_lock *l);
bool zr_lock_wait_unless(struct zr_lock *l, bool (*give_up)(void *), void *arg);

/* After a failed zr_trylock: waits for L and holds it, as zr_lock. */
static inline void zr_lock_contended(struct zr_lock *l)
{
	ZR_CHECK(!zr_lock_held(l)); /* not recursive: it would wait for itself */
	zr_lock_wait(l);
	zr_lock_taken(l);
}

/* After a failed zr_trylock: as zr_lock_unless (false: given up, not held). */
static inline bool zr_lock_contended_unless(struct zr_lock *l, bool (*give_up)(void *), void *arg)
{
	ZR_CHECK(!zr_lock_held(l));
	if (!zr_lock_wait_unless(l, give_up, arg))
		return false;
	zr_lock_taken(l);
	return true;
}

/* Takes L, sleeping while another thread holds it. */
static inline void zr_lock(struct zr_lock *l)
{
	ZR_CHECK(!zr_lock_held(l)); /* not recursive: it would wait for itself */
	uint32_t expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						     memory_order_relaxed))
		zr_lock_wait(l);
	zr_lock_taken(l);
}

/* Takes L as zr_lock does, unless GIVE_UP(ARG) says true while it waits:
 * asked before the first sleep and then about every millisecond (a
 * sleep is cut short at each unlock too). False then, without L. For
 * a waiter that must not wait out a holder that can hold it for seconds
 * (a busy script's shard, in the dispatcher). */
static inline bool zr_lock_unless(struct zr_lock *l, bool (*give_up)(void *), void *arg)
{
	ZR_CHECK(!zr_lock_held(l));
	uint32_t expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						     memory_order_relaxed) &&
	    !zr_lock_wait_unless(l, give_up, arg))
		return false;
	zr_lock_taken(l);
	return true;
}

/* Takes L only if it is free now; true when taken. */
static inline bool zr_trylock(struct zr_lock *l)
{
	uint32_t expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						     memory_order_relaxed))
		return false;
	zr_lock_taken(l);
	return true;
}

/* Releases L (held by the caller). */
static inline void zr_unlock(struct zr_lock *l)
{
	zr_lock_leaving(l);
	if (atomic_fetch_sub_explicit(&l->word, 1, memory_order_release) != 1)
		zr_lock_wake(l);
}

#endif
