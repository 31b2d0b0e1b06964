/* lock — a small mutex (futex based) for the keyspace's shard locks.
 *
 * The shard lock is taken and released around every single-key command,
 * so its cost is part of every GET and SET: here the uncontended lock is
 * one compare-and-swap and the unlock one atomic decrement, both inline,
 * where pthread_mutex_lock/unlock are calls that also dispatch on the
 * mutex type. Contended, it sleeps in the kernel like a pthread mutex
 * (Drepper's "Futexes Are Tricky", mutex 2): the word is 0 free, 1 held,
 * 2 held with maybe a sleeper; an unlock that finds 2 wakes one sleeper.
 * Not recursive, no owner checks, not fair. The acquire on lock and the
 * release on unlock order the protected data, which TSan understands.
 * Any thread.
 */
#ifndef ZR_LOCK_H
#define ZR_LOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct zr_lock {
	_Atomic uint32_t word; /* 0 free, 1 held, 2 held and contended */
};

static inline void zr_lock_init(struct zr_lock *l)
{
	atomic_init(&l->word, 0);
}

/* The contended paths (lock.c). */
void zr_lock_wait(struct zr_lock *l);
void zr_lock_wake(struct zr_lock *l);
bool zr_lock_wait_unless(struct zr_lock *l, bool (*give_up)(void *), void *arg);

/* Takes L, sleeping while another thread holds it. */
static inline void zr_lock(struct zr_lock *l)
{
	uint32_t expect = 0;
	if (!atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						     memory_order_relaxed))
		zr_lock_wait(l);
}

/* Takes L as zr_lock does, unless GIVE_UP(ARG) says true while it waits:
 * asked before the first sleep and then about every millisecond (a
 * sleep is cut short at each unlock too). False then, without L. For
 * a waiter that must not wait out a holder that can hold it for seconds
 * (a busy script's shard, in the dispatcher). */
static inline bool zr_lock_unless(struct zr_lock *l, bool (*give_up)(void *), void *arg)
{
	uint32_t expect = 0;
	if (atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						    memory_order_relaxed))
		return true;
	return zr_lock_wait_unless(l, give_up, arg);
}

/* Takes L only if it is free now; true when taken. */
static inline bool zr_trylock(struct zr_lock *l)
{
	uint32_t expect = 0;
	return atomic_compare_exchange_strong_explicit(&l->word, &expect, 1, memory_order_acquire,
						       memory_order_relaxed);
}

/* Releases L (held by the caller). */
static inline void zr_unlock(struct zr_lock *l)
{
	if (atomic_fetch_sub_explicit(&l->word, 1, memory_order_release) != 1)
		zr_lock_wake(l);
}

#endif
