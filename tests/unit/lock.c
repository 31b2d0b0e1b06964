/* core/lock: mutual exclusion under contention (threads sleeping in the
 * futex path), trylock, and the word returning to free. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>

#include "tests/tap.h"
#include "zarisd/core/lock.h"

#define THREADS 4
#define ROUNDS 200000

static struct zr_lock lk;
static uint64_t counter; /* guarded by lk; a plain (non-atomic) add on purpose */

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		zr_lock(&lk);
		uint64_t v = counter;
		if ((i & 1023) == 0)
			sched_yield(); /* hold it across a yield now and then: waiters sleep */
		counter = v + 1;
		zr_unlock(&lk);
	}
	return NULL;
}

int main(void)
{
	zr_lock_init(&lk);
	ok(zr_trylock(&lk), "trylock takes a free lock");
	ok(!zr_trylock(&lk), "trylock fails on a held lock");
	zr_unlock(&lk);
	ok(atomic_load(&lk.word) == 0, "unlock frees it");

	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	ok(counter == (uint64_t)THREADS * ROUNDS, "%d threads x %d increments under the lock: %llu", THREADS,
	   ROUNDS, (unsigned long long)counter);
	ok(atomic_load(&lk.word) == 0, "free after contention");
	return done_testing();
}
