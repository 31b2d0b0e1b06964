/* store — lifetime, shard locks, settings and counters of the keyspace.
 * See store.h for the model and store_int.h for the memory layout. */
#include "zarisd/store/store.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/store_int.h"

/* A shard holds whole cluster slots: at most one shard per slot. */
#define STORE_MAX_SHARD_BITS ZR_KEY_SLOT_BITS
#define STORE_MAX_DATABASES 65536

struct store *store_create(unsigned databases, unsigned shard_bits)
{
	if (databases == 0 || databases > STORE_MAX_DATABASES || shard_bits > STORE_MAX_SHARD_BITS)
		return NULL;
	struct store *s = zr_calloc(1, sizeof(*s));
	s->ndb = databases;
	s->nshards = 1u << shard_bits;
	s->bits = shard_bits;
	size_t raw = sizeof(struct shard) + (size_t)databases * sizeof(struct dict);
	s->stride = (raw + STORE_CACHELINE - 1) & ~(size_t)(STORE_CACHELINE - 1);
	s->shards_alloc = zr_calloc(1, s->stride * s->nshards + STORE_CACHELINE);
	uintptr_t base =
		((uintptr_t)s->shards_alloc + STORE_CACHELINE - 1) & ~(uintptr_t)(STORE_CACHELINE - 1);
	s->shards = (unsigned char *)base;
	s->live = zr_calloc(databases, sizeof(*s->live));
	for (unsigned db = 0; db < databases; db++)
		s->live[db].slot_mask = (1u << (ZR_KEY_SLOT_BITS - shard_bits)) - 1;
	uint64_t seed = (uint64_t)zr_mono_us() ^ (uint64_t)(uintptr_t)s;
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		zr_lock_init(&sh->lock);
		sh->rnd = (seed + i) * 0x9E3779B97F4A7C15ULL | 1;
		for (unsigned db = 0; db < databases; db++)
			dict_init(&sh->db[db], &s->live[db]);
	}
	for (int t = 0; t < STORE_TYPE_COUNT; t++)
		s->ops[t] = store_builtin_types[t];
	atomic_init(&s->policy, STORE_EVICT_NOEVICTION);
	atomic_init(&s->samples, 5);
	atomic_init(&s->lfu_log_factor, 10);
	atomic_init(&s->lfu_decay_time, 1);
	atomic_init(&s->clock_ms, zr_time_ms());
	return s;
}

void store_destroy(struct store *s)
{
	if (!s)
		return;
	/* the teardown frees through the flush's write path: a bracket of
	 * its own (no thread runs; nothing else is open) */
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_TEARDOWN, "the store's teardown", true, 0);
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		for (unsigned db = 0; db < s->ndb; db++)
			store_flush_dict_locked(s, &sh->db[db]);
	}
	store_write_end(&w);
	zr_free(s->shards_alloc);
	zr_free(s->live);
	zr_free(s);
}

void store_register_type(struct store *s, enum store_type t, const struct store_type_ops *ops)
{
	assert(t > STORE_TYPE_STRING && t < STORE_TYPE_COUNT);
	s->ops[t] = ops;
}

void store_set_event_hook(struct store *s, store_event_fn fn, void *ctx)
{
	atomic_store_explicit(&s->event_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&s->event_fn, fn, memory_order_release);
}

unsigned store_databases(const struct store *s)
{
	return s->ndb;
}

unsigned store_shard_count(const struct store *s)
{
	return s->nshards;
}

uint64_t store_hash(const char *key, size_t klen)
{
	return store_key_hash(key, klen);
}

unsigned store_shard_of_hash(const struct store *s, uint64_t hash)
{
	return store_shard_index(s, hash);
}

unsigned store_slot_of_hash(uint64_t hash)
{
	return store_hash_slot(hash);
}

unsigned store_slot_shard(const struct store *s, unsigned slot)
{
	return store_shard_of_slot(s, slot & (ZR_KEY_SLOTS - 1));
}

uint64_t store_slot_count_locked(const struct store *s, unsigned db, unsigned slot)
{
	slot &= ZR_KEY_SLOTS - 1;
	STORE_ASSERT_HELD(store_shard(s, store_shard_of_slot(s, slot)));
	return dict_slot_keys(store_dict(s, db, store_shard_of_slot(s, slot)), slot);
}

uint64_t store_slot_count(struct store *s, unsigned db, unsigned slot)
{
	struct shard *sh = store_shard(s, store_shard_of_slot(s, slot & (ZR_KEY_SLOTS - 1)));
	shard_lock(sh);
	uint64_t n = store_slot_count_locked(s, db, slot);
	shard_unlock(sh);
	return n;
}

bool store_prefetch(struct store *s, unsigned db, const char *key, size_t klen, uint64_t *hash)
{
	if (atomic_load_explicit(&s->live[db].keys, memory_order_relaxed) == 0)
		return false;
	uint64_t h = store_key_hash(key, klen);
	*hash = h;
	struct shard *sh = store_shard(s, store_shard_index(s, h));
	__builtin_prefetch(&sh->lock);
	__builtin_prefetch(&sh->db[db]);
	return true;
}

void store_prefetch_bucket(struct store *s, unsigned db, uint64_t h)
{
#ifndef ZR_SANITIZED
	/* Unlocked relaxed reads of fields written under the shard lock: the
	 * pair may be torn or stale (a rehash elsewhere), which costs only a
	 * useless prefetch, as the address is never loaded from. Sanitizer
	 * builds skip it so that TSan sees no racy access. */
	struct dict *d = store_dict(s, db, store_shard_index(s, h));
	struct entry **tab = __atomic_load_n(&d->tab[0], __ATOMIC_RELAXED);
	uint64_t size = __atomic_load_n(&d->size[0], __ATOMIC_RELAXED);
	if (tab && size)
		__builtin_prefetch(&tab[h & (size - 1)]);
#else
	(void)s, (void)db, (void)h;
#endif
}

/* Header, key and (for a small string) the value: a GET copies it out, a
 * SET overwrites it. */
static void prefetch_entry_lines(const struct entry *e)
{
	__builtin_prefetch(e);
	__builtin_prefetch((const char *)e + 64);
	__builtin_prefetch((const char *)e + 128);
}

void store_prefetch_entry(struct store *s, unsigned db, uint64_t h)
{
	struct shard *sh = store_shard(s, store_shard_index(s, h));
	if (store_all_locked || !zr_trylock(&sh->lock))
		return;
	struct entry *e = dict_bucket_head(&sh->db[db], h);
	if (e)
		prefetch_entry_lines(e);
	zr_unlock(&sh->lock);
}

void store_prefetch_next(struct store *s, unsigned db, uint64_t h, const char *key, size_t klen)
{
	struct shard *sh = store_shard(s, store_shard_index(s, h));
	if (store_all_locked || !zr_trylock(&sh->lock))
		return;
	struct entry *e = dict_bucket_head(&sh->db[db], h);
	/* one step down the chain: a lookup's first entry is KEY's about
	 * two times in three at the tables' load, and the rest is mostly
	 * the second */
	if (e && !entry_key_eq(e, key, klen) && e->next)
		prefetch_entry_lines(e->next);
	zr_unlock(&sh->lock);
}

unsigned store_shard_of(const struct store *s, const char *key, size_t klen)
{
	return store_shard_of_slot(s, zr_key_slot(key, klen));
}

/* --- locking ---------------------------------------------------------------- */

_Thread_local bool store_all_locked;
static _Thread_local struct store_wait_hook tl_wait_hook;

struct store_wait_hook store_set_wait_hook(store_wait_fn fn, void *arg)
{
	struct store_wait_hook prev = tl_wait_hook;
	tl_wait_hook.fn = fn;
	tl_wait_hook.arg = arg;
	return prev;
}

/* zr_lock_wait_unless's question, put to the hook: a waiter that cannot
 * give up (ARG NULL) asks and goes on. */
static bool ask_wait_hook(void *arg)
{
	bool give_up = tl_wait_hook.fn(tl_wait_hook.arg);
	return arg && give_up;
}

bool shard_lock_walk(struct shard *sh)
{
	if (store_all_locked || zr_trylock(&sh->lock))
		return true;
	if (!tl_wait_hook.fn) {
		zr_lock_contended(&sh->lock);
		return true;
	}
	return zr_lock_contended_unless(&sh->lock, ask_wait_hook, sh);
}

/* zr_lock_wait_unless's question for shard_lock_briefly: no before the
 * first sleep, yes at the first look after it (about a millisecond). */
static bool after_one_sleep(void *arg)
{
	unsigned *looks = arg;
	return ++*looks > 1;
}

bool shard_lock_briefly(struct shard *sh)
{
	ZR_CHECK(zr_locks_held() == 0);
	unsigned looks = 0;
	return zr_lock_unless(&sh->lock, after_one_sleep, &looks);
}

void shard_lock_wait(struct shard *sh)
{
	if (tl_wait_hook.fn)
		zr_lock_contended_unless(&sh->lock, ask_wait_hook, NULL);
	else
		zr_lock_contended(&sh->lock);
}

void store_lock(struct store *s, unsigned shard)
{
	shard_lock(store_shard(s, shard));
}

void store_unlock(struct store *s, unsigned shard)
{
	shard_unlock(store_shard(s, shard));
}

bool store_lock_all(struct store *s)
{
	assert(!store_all_locked);
	for (unsigned i = 0; i < s->nshards; i++)
		shard_lock(store_shard(s, i));
	store_all_locked = true;
	return true;
}

bool store_thread_all_locked(void)
{
	return store_all_locked;
}

#ifdef ZR_OWNER_CHECKS
bool store_shard_held(const struct store *s, unsigned shard)
{
	return store_all_locked || zr_lock_held(&store_shard(s, shard)->lock);
}
#endif

void store_unlock_all(struct store *s)
{
	store_all_locked = false;
	for (unsigned i = s->nshards; i-- > 0;)
		zr_unlock(&store_shard(s, i)->lock);
}

static int shard_cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

int store_shards_normalize(unsigned *shards, int n)
{
	/* Insertion sort for the usual few keys; a client may name 100k keys
	 * (BLPOP, MSET, an EXEC's queue) and then n² would stall the worker. */
	if (n > 32)
		qsort(shards, (size_t)n, sizeof(*shards), shard_cmp);
	for (int i = 1; i < n; i++) {
		unsigned v = shards[i];
		int j = i - 1;
		while (j >= 0 && shards[j] > v) {
			shards[j + 1] = shards[j];
			j--;
		}
		shards[j + 1] = v;
	}
	int out = 0;
	for (int i = 0; i < n; i++) {
		if (out == 0 || shards[out - 1] != shards[i])
			shards[out++] = shards[i];
	}
	return out;
}

void store_lock_set(struct store *s, const unsigned *shards, int n)
{
	for (int i = 0; i < n; i++) {
		assert(i == 0 || shards[i - 1] < shards[i]);
		store_lock(s, shards[i]);
	}
}

void store_unlock_set(struct store *s, const unsigned *shards, int n)
{
	for (int i = n - 1; i >= 0; i--)
		store_unlock(s, shards[i]);
}

bool store_lock_unless(struct store *s, unsigned shard, store_give_up_fn give_up, void *arg)
{
	return store_all_locked || zr_lock_unless(&store_shard(s, shard)->lock, give_up, arg);
}

bool store_lock_set_unless(struct store *s, const unsigned *shards, int n, store_give_up_fn give_up,
			   void *arg)
{
	for (int i = 0; i < n; i++) {
		assert(i == 0 || shards[i - 1] < shards[i]);
		if (!store_lock_unless(s, shards[i], give_up, arg)) {
			store_unlock_set(s, shards, i);
			return false;
		}
	}
	return true;
}

bool store_lock_all_unless(struct store *s, store_give_up_fn give_up, void *arg)
{
	for (unsigned i = 0; i < s->nshards; i++) {
		if (!zr_lock_unless(&store_shard(s, i)->lock, give_up, arg)) {
			while (i-- > 0)
				zr_unlock(&store_shard(s, i)->lock);
			return false;
		}
	}
	store_all_locked = true;
	return true;
}

/* --- settings and counters --------------------------------------------------- */

void store_tick(struct store *s, int64_t now_ms)
{
	atomic_store_explicit(&s->clock_ms, now_ms, memory_order_relaxed);
}

void store_set_lfu_params(struct store *s, int log_factor, int decay_time)
{
	atomic_store_explicit(&s->lfu_log_factor, log_factor < 0 ? 0 : log_factor, memory_order_relaxed);
	atomic_store_explicit(&s->lfu_decay_time, decay_time < 0 ? 0 : decay_time, memory_order_relaxed);
}

void store_set_evict_policy(struct store *s, enum store_evict_policy policy)
{
	atomic_store_explicit(&s->policy, (int)policy, memory_order_relaxed);
}

void store_set_replica_mode(struct store *s, bool on)
{
	atomic_store_explicit(&s->replica, on, memory_order_relaxed);
}

bool store_replica_mode(const struct store *s)
{
	return store_is_replica(s);
}

void store_set_active_expire(struct store *s, bool on)
{
	atomic_store_explicit(&s->active_expire_off, !on, memory_order_relaxed);
}

void store_set_maxmemory_samples(struct store *s, int samples)
{
	if (samples < 1)
		samples = 1;
	if (samples > 64)
		samples = 64;
	atomic_store_explicit(&s->samples, samples, memory_order_relaxed);
}

void store_stats(const struct store *s, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		out->expired_keys += atomic_load_explicit(&sh->expired, memory_order_relaxed);
		out->evicted_keys += atomic_load_explicit(&sh->evicted, memory_order_relaxed);
		out->keyspace_hits += atomic_load_explicit(&sh->hits, memory_order_relaxed);
		out->keyspace_misses += atomic_load_explicit(&sh->misses, memory_order_relaxed);
	}
}

void store_reset_stats(struct store *s)
{
	/* Takes each lock so that a concurrent load+store increment cannot
	 * resurrect the old value right after the reset. */
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		shard_lock(sh);
		atomic_store_explicit(&sh->expired, 0, memory_order_relaxed);
		atomic_store_explicit(&sh->evicted, 0, memory_order_relaxed);
		atomic_store_explicit(&sh->hits, 0, memory_order_relaxed);
		atomic_store_explicit(&sh->misses, 0, memory_order_relaxed);
		shard_unlock(sh);
	}
}

uint64_t store_rand(void)
{
	static _Thread_local uint64_t state;
	if (!state)
		state = ((uint64_t)zr_mono_us() * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)(uintptr_t)&state;
	if (!state)
		state = 1;
	return dict_rand(&state);
}
