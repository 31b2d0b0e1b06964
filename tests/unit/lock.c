/* core/lock: mutual exclusion under contention (threads sleeping in the
 * futex path), trylock, and the word returning to free; zr_lock_unless
 * giving up on a held lock when its question says so (asked again while
 * it sleeps), taking the lock when the holder lets go, and a lock left
 * that way still working for the others.
 *
 * The owner checks (core/thread.h): compiled here in every build
 * (ZR_OWNER_CHECKS below), so a release run tests them too. zr_lock_held
 * and the per-thread count through every way of taking and letting go;
 * glibc's owner fields as zr_mutex_held / zr_rwlock_wrheld read them
 * (a plain mutex, one given back and retaken by a condition wait, an
 * rwlock held for writing or reading, all seen from another thread too);
 * the worker identity; a failing check aborting (a lock taken twice, one
 * released unheld, the wrong worker, a mutex not held), in a child; and,
 * in the sanitizer builds whose store records owners, store_shard_held
 * with one shard's lock and with every lock (store_lock_all). */
#define ZR_OWNER_CHECKS 1

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/core/lock.h"
#include "zarisd/core/thread.h"
#include "zarisd/store/store.h"

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

/* --- owner checks ------------------------------------------------------------ */

/* What another thread sees: runs FN(ARG) there and returns its answer. */
struct probe {
	bool (*fn)(void *);
	void *arg;
	bool answer;
};

static void *probe_main(void *arg)
{
	struct probe *p = arg;
	p->answer = p->fn(p->arg);
	return NULL;
}

static bool elsewhere(bool (*fn)(void *), void *arg)
{
	struct probe p = { fn, arg, false };
	pthread_t t;
	pthread_create(&t, NULL, probe_main, &p);
	pthread_join(t, NULL);
	return p.answer;
}

static bool zr_held_q(void *l)
{
	return zr_lock_held(l);
}

static bool mutex_held_q(void *m)
{
	return zr_mutex_held(m);
}

static bool rwlock_held_q(void *rw)
{
	return zr_rwlock_wrheld(rw);
}

static bool worker0_q(void *arg)
{
	(void)arg;
	return zr_thread_is_worker(0);
}

static bool no_give_up(void *arg)
{
	(void)arg;
	return false;
}

static void test_zr_lock_owner(void)
{
	struct zr_lock l;
	zr_lock_init(&l);
	ok(!zr_lock_held(&l) && zr_locks_held() == 0, "owner: a free lock is not held");
	zr_lock(&l);
	ok(zr_lock_held(&l) && zr_locks_held() == 1, "owner: zr_lock records the holder, counted");
	ok(!elsewhere(zr_held_q, &l), "owner: another thread does not hold it");
	zr_unlock(&l);
	ok(!zr_lock_held(&l) && zr_locks_held() == 0, "owner: zr_unlock clears it");
	ok(zr_trylock(&l) && zr_lock_held(&l), "owner: trylock records the holder");
	ok(!zr_trylock(&l) && zr_locks_held() == 1, "owner: a failed trylock changes nothing");
	zr_unlock(&l);
	ok(zr_lock_unless(&l, no_give_up, NULL) && zr_lock_held(&l),
	   "owner: zr_lock_unless records the holder");
	struct zr_lock m;
	zr_lock_init(&m);
	zr_lock(&m);
	ok(zr_locks_held() == 2 && zr_lock_held(&m), "owner: two held, both counted");
	zr_unlock(&l);
	zr_unlock(&m);
	ok(zr_locks_held() == 0, "owner: none held after both unlocks");
}

/* A condition wait gives the mutex back and takes it again. */
static pthread_mutex_t cv_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static bool cv_seen_free;

static void *cv_signaller(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cv_mu);
	cv_seen_free = true;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&cv_mu);
	return NULL;
}

static void test_pthread_owner(void)
{
	static pthread_mutex_t st = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_t dyn;
	pthread_mutex_init(&dyn, NULL);
	ok(!zr_mutex_held(&st) && !zr_mutex_held(&dyn), "mutex: free ones are not held");
	pthread_mutex_lock(&st);
	pthread_mutex_lock(&dyn);
	ok(zr_mutex_held(&st) && zr_mutex_held(&dyn),
	   "mutex: glibc records the holder (static, initialised)");
	ok(!elsewhere(mutex_held_q, &st), "mutex: another thread does not hold it");
	pthread_mutex_unlock(&dyn);
	pthread_mutex_unlock(&st);
	ok(!zr_mutex_held(&st) && !zr_mutex_held(&dyn), "mutex: unlocked, not held");
	ok(pthread_mutex_trylock(&dyn) == 0 && zr_mutex_held(&dyn), "mutex: trylock records the holder");
	pthread_mutex_unlock(&dyn);
	pthread_mutex_destroy(&dyn);

	pthread_mutex_lock(&cv_mu);
	pthread_t t;
	pthread_create(&t, NULL, cv_signaller, NULL);
	while (!cv_seen_free)
		pthread_cond_wait(&cv, &cv_mu);
	ok(zr_mutex_held(&cv_mu), "mutex: held again after a condition wait");
	pthread_mutex_unlock(&cv_mu);
	pthread_join(t, NULL);

	pthread_rwlock_t rw;
	pthread_rwlock_init(&rw, NULL);
	ok(!zr_rwlock_wrheld(&rw), "rwlock: a free one is not held");
	pthread_rwlock_wrlock(&rw);
	ok(zr_rwlock_wrheld(&rw) && !elsewhere(rwlock_held_q, &rw), "rwlock: the writer is recorded");
	pthread_rwlock_unlock(&rw);
	pthread_rwlock_rdlock(&rw);
	ok(!zr_rwlock_wrheld(&rw), "rwlock: a reader is not a writer");
	pthread_rwlock_unlock(&rw);
	ok(!zr_rwlock_wrheld(&rw), "rwlock: unlocked, not held");
	pthread_rwlock_destroy(&rw);
}

static void test_worker_identity(void)
{
	ok(zr_thread_worker() == ZR_THREAD_NOT_WORKER && !zr_thread_is_worker(0),
	   "worker: none until recorded");
	zr_thread_set_worker(3);
	ok(zr_thread_is_worker(3) && !zr_thread_is_worker(2), "worker: only its own index");
	zr_thread_set_worker(0);
	ok(zr_thread_is_worker(0) && !elsewhere(worker0_q, NULL), "worker: the identity is per thread");
	zr_thread_set_worker(ZR_THREAD_ALL_WORKERS);
	ok(zr_thread_is_worker(0) && zr_thread_is_worker(7), "worker: after the join, every worker's");
	zr_thread_set_worker(ZR_THREAD_NOT_WORKER);
}

/* Runs FN in a child (stderr silenced): true when it died of SIGABRT. */
static bool aborts(void (*fn)(void))
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stderr))
			_exit(2);
		fn();
		_exit(0);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}

static void lock_twice(void)
{
	struct zr_lock l;
	zr_lock_init(&l);
	zr_lock(&l);
	zr_lock(&l); /* would wait for itself for ever */
}

static void unlock_unheld(void)
{
	struct zr_lock l;
	zr_lock_init(&l);
	zr_unlock(&l);
}

static void wrong_worker(void)
{
	zr_thread_set_worker(0);
	ZR_ASSERT_ON_WORKER(1);
}

static void mutex_not_held(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	ZR_ASSERT_MUTEX_HELD(&m);
}

static void right_everything(void)
{
	struct zr_lock l;
	zr_lock_init(&l);
	zr_lock(&l);
	ZR_ASSERT_HELD(&l);
	zr_unlock(&l);
	zr_thread_set_worker(1);
	ZR_ASSERT_ON_WORKER(1);
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	ZR_ASSERT_MUTEX_HELD(&m);
	pthread_mutex_unlock(&m);
}

static void test_checks_abort(void)
{
	ok(aborts(lock_twice), "check: a lock taken twice by one thread aborts");
	ok(aborts(unlock_unheld), "check: releasing a lock not held aborts");
	ok(aborts(wrong_worker), "check: ZR_ASSERT_ON_WORKER on another worker aborts");
	ok(aborts(mutex_not_held), "check: ZR_ASSERT_MUTEX_HELD of a free mutex aborts");
	ok(!aborts(right_everything), "check: the same checks pass when they hold");
}

static void test_store_held(void)
{
#ifdef ZR_SANITIZED
	struct store *s = store_create(1, 4);
	store_lock(s, 3);
	ok(store_shard_held(s, 3) && !store_shard_held(s, 2), "store: the one shard locked is held");
	store_unlock(s, 3);
	ok(!store_shard_held(s, 3), "store: not after its unlock");
	store_lock_all(s);
	store_lock(s, 5); /* a no-op under store_lock_all */
	ok(store_shard_held(s, 0) && store_shard_held(s, 15), "store: every shard under store_lock_all");
	store_unlock(s, 5);
	ok(store_shard_held(s, 5), "store: still held: store_unlock under store_lock_all is a no-op");
	store_unlock_all(s);
	ok(!store_shard_held(s, 0) && zr_locks_held() == 0, "store: none after store_unlock_all");
	store_destroy(s);
#else
	for (int i = 0; i < 5; i++)
		ok(1, "# SKIP the store records lock owners in the sanitizer builds only");
#endif
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
	test_zr_lock_owner();
	test_pthread_owner();
	test_worker_identity();
	test_checks_abort();
	test_store_held();
	return done_testing();
}
