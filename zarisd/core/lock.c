/* lock — see lock.h: the contended paths. */
#include "zarisd/core/lock.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void futex(_Atomic uint32_t *word, int op, uint32_t val, const struct timespec *timeout)
{
	/* EINTR / EAGAIN (the word changed before the kernel looked) and
	 * ETIMEDOUT only mean "look again", which the callers' loops do */
	syscall(SYS_futex, (uint32_t *)word, op | FUTEX_PRIVATE_FLAG, val, timeout, NULL, 0);
}

void zr_lock_wait(struct zr_lock *l)
{
	/* From here on the word says 2 while we may sleep, so the holder's
	 * unlock knows to wake somebody. */
	uint32_t c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	while (c != 0) {
		futex(&l->word, FUTEX_WAIT, 2, NULL);
		c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	}
}

void zr_lock_wake(struct zr_lock *l)
{
	/* The word was 2 (it is 1 now after the decrement): free it and wake
	 * one sleeper, which takes it with 2 again. */
	atomic_store_explicit(&l->word, 0, memory_order_release);
	futex(&l->word, FUTEX_WAKE, 1, NULL);
}

bool zr_lock_wait_unless(struct zr_lock *l, bool (*give_up)(void *), void *arg)
{
	static const struct timespec step = { 0, 1000000 }; /* 1 ms */
	uint32_t c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	while (c != 0) {
		/* leaving with the word at 2 costs the holder's unlock one
		 * needless wake, nothing more: 2 only says "maybe a sleeper" */
		if (give_up(arg))
			return false;
		futex(&l->word, FUTEX_WAIT, 2, &step);
		c = atomic_exchange_explicit(&l->word, 2, memory_order_acquire);
	}
	return true;
}

/* Per thread, for zr_locks_held (owner-check builds only: lock.h). */
_Thread_local unsigned zr_lock_count;
