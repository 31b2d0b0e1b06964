/* core/lock: mutual exclusion under contention (threads sleeping in the
 * futex path), trylock, and the word returning to free; zr_lock_unless
 * giving up on a held lock when its question says so (asked again while
 * it sleeps), taking the lock when the holder lets go, and a lock left
 * that way still working for the others. */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

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

/* zr_lock_unless's question: counts the askings, says true once *ARG is set. */
static _Atomic int asked;
static bool give_up_when(void *arg)
{
	atomic_fetch_add(&asked, 1);
	return atomic_load((_Atomic bool *)arg);
}

struct unless_run {
	_Atomic bool stop;
	_Atomic int result; /* -1 running, 0 gave up, 1 took it */
};

static void *unless_waiter(void *arg)
{
	struct unless_run *u = arg;
	bool got = zr_lock_unless(&lk, give_up_when, &u->stop);
	if (got)
		zr_unlock(&lk);
	atomic_store(&u->result, got ? 1 : 0);
	return NULL;
}

/* Waits (bounded) until the waiter has asked at least N times. */
static bool asked_at_least(int n)
{
	for (int i = 0; i < 10000 && atomic_load(&asked) < n; i++)
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	return atomic_load(&asked) >= n;
}

static void test_unless(void)
{
	_Atomic bool never = false;
	ok(zr_lock_unless(&lk, give_up_when, &never), "unless: takes a free lock");
	zr_unlock(&lk);

	/* held: the waiter asks, sleeps, asks again; told to, it gives up */
	struct unless_run u = { .result = -1 };
	zr_lock(&lk);
	atomic_store(&asked, 0);
	pthread_t t;
	pthread_create(&t, NULL, unless_waiter, &u);
	bool again = asked_at_least(3);
	ok(again, "unless: asked again while it waits (%d)", atomic_load(&asked));
	ok(atomic_load(&u.result) == -1, "unless: still waiting while the answer is no");
	atomic_store(&u.stop, true);
	pthread_join(t, NULL);
	ok(atomic_load(&u.result) == 0, "unless: gave up when told to, without the lock");
	zr_unlock(&lk);
	ok(atomic_load(&lk.word) == 0, "free after the holder's unlock (the waiter left it at 2)");

	/* held, then let go: the waiter takes it */
	struct unless_run v = { .result = -1 };
	zr_lock(&lk);
	atomic_store(&asked, 0);
	pthread_create(&t, NULL, unless_waiter, &v);
	ok(asked_at_least(1), "unless: the waiter is waiting");
	zr_unlock(&lk);
	pthread_join(t, NULL);
	ok(atomic_load(&v.result) == 1, "unless: took the lock once it was let go");
	ok(atomic_load(&lk.word) == 0, "free again");
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
	test_unless();
	return done_testing();
}
