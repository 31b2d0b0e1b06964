/* evict — the LRU/LFU clock of entries and maxmemory eviction.
 *
 * Redis's approximations, per thread: each caller of store_evict keeps its
 * own eviction pool (thread-local, so evicting workers never contend on
 * it) of the 16 best candidates seen so far; each round samples
 * maxmemory-samples keys from one random non-empty shard of every database
 * (the volatile array for volatile-*), merges them into the pool by score
 * (idle time, 255 - LFU counter, or the nearness of the TTL), and evicts
 * the best candidate that still exists. The pool holds key copies, never
 * entry pointers: an entry is only valid under its shard lock.
 *
 * LRU field: seconds of the store clock, 23 bits (Redis's LRU_CLOCK has
 * 24, resolution 1 s; the 24th is the entry's metadata flag). LFU field:
 * minutes:15 << 8 | counter:8 (Redis: 16 bits of minutes), with Redis's
 * logarithmic increment (lfu-log-factor) and decay (lfu-decay-time).
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

#define LRU_CLOCK_MAX ENTRY_LRU_MASK
/* minutes of an LFU field: the 15 bits above the counter (entry_layout.h) */
#define LFU_MINUTES_MAX (ENTRY_LRU_MASK >> 8)
#define LFU_INIT_VAL 5
#define EVPOOL_SIZE 16
#define EVPOOL_KEY_CACHE 255 /* Redis's EVPOOL_CACHED_SDS_SIZE */
#define EVICT_MAX_SAMPLES 64

static const char *const policy_names[] = {
	[STORE_EVICT_NOEVICTION] = "noeviction",	   [STORE_EVICT_ALLKEYS_LRU] = "allkeys-lru",
	[STORE_EVICT_ALLKEYS_LFU] = "allkeys-lfu",	   [STORE_EVICT_ALLKEYS_RANDOM] = "allkeys-random",
	[STORE_EVICT_VOLATILE_LRU] = "volatile-lru",	   [STORE_EVICT_VOLATILE_LFU] = "volatile-lfu",
	[STORE_EVICT_VOLATILE_RANDOM] = "volatile-random", [STORE_EVICT_VOLATILE_TTL] = "volatile-ttl",
};

int store_evict_policy_parse(const char *name)
{
	for (unsigned i = 0; i < sizeof(policy_names) / sizeof(policy_names[0]); i++)
		if (zr_eq_nocase(name, strlen(name), policy_names[i]))
			return (int)i;
	return -EINVAL;
}

const char *store_evict_policy_name(enum store_evict_policy p)
{
	if ((unsigned)p >= sizeof(policy_names) / sizeof(policy_names[0]))
		return "unknown";
	return policy_names[p];
}

bool store_policy_is_lfu(enum store_evict_policy p)
{
	return p == STORE_EVICT_ALLKEYS_LFU || p == STORE_EVICT_VOLATILE_LFU;
}

static bool policy_is_volatile(enum store_evict_policy p)
{
	return p >= STORE_EVICT_VOLATILE_LRU;
}

/* --- clocks ----------------------------------------------------------------- */

static inline int64_t clock_ms(const struct store *s)
{
	return atomic_load_explicit(&s->clock_ms, memory_order_relaxed);
}

static inline uint32_t lru_clock(const struct store *s)
{
	return (uint32_t)(clock_ms(s) / 1000) & LRU_CLOCK_MAX;
}

static inline uint32_t lfu_minutes(const struct store *s)
{
	return (uint32_t)(clock_ms(s) / 60000) & LFU_MINUTES_MAX;
}

static inline bool lfu_active(const struct store *s)
{
	return store_policy_is_lfu(
		(enum store_evict_policy)atomic_load_explicit(&s->policy, memory_order_relaxed));
}

/* Redis's LFUDecrAndReturn: the counter less one per decay period elapsed. */
static unsigned lfu_decayed(const struct store *s, uint32_t field)
{
	uint32_t ldt = field >> 8, counter = field & 0xff, now = lfu_minutes(s);
	uint32_t elapsed = now >= ldt ? now - ldt : LFU_MINUTES_MAX - ldt + now;
	int decay = atomic_load_explicit(&s->lfu_decay_time, memory_order_relaxed);
	uint32_t periods = decay ? elapsed / (uint32_t)decay : 0;
	return periods >= counter ? 0 : counter - periods;
}

/* Redis's LFULogIncr: the higher the counter, the less likely a hit
 * increments it. */
static unsigned lfu_log_incr(const struct store *s, unsigned counter)
{
	if (counter == 255)
		return 255;
	double r = (double)(store_rand() >> 11) / (double)(1ull << 53);
	double base = counter > LFU_INIT_VAL ? counter - LFU_INIT_VAL : 0;
	int factor = atomic_load_explicit(&s->lfu_log_factor, memory_order_relaxed);
	double p = 1.0 / (base * factor + 1);
	return r < p ? counter + 1 : counter;
}

uint32_t store_lru_new(const struct store *s)
{
	if (lfu_active(s))
		return (lfu_minutes(s) << 8) | LFU_INIT_VAL;
	return lru_clock(s);
}

void store_touch(const struct store *s, struct entry *e)
{
	if (lfu_active(s)) {
		unsigned c = lfu_log_incr(s, lfu_decayed(s, entry_lru_raw(e)));
		entry_set_lru_raw(e, (lfu_minutes(s) << 8) | c);
	} else {
		entry_set_lru_raw(e, lru_clock(s));
	}
}

uint32_t store_lru_overwrite(const struct store *s, const struct entry *old)
{
	return lfu_active(s) ? entry_lru_raw(old) : lru_clock(s);
}

/* Redis's estimateObjectIdleTime, in ms. */
static uint64_t idle_ms(const struct store *s, const struct entry *e)
{
	uint32_t now = lru_clock(s), lru = entry_lru_raw(e);
	uint64_t secs = now >= lru ? now - lru : (uint64_t)now + (LRU_CLOCK_MAX - lru);
	return secs * 1000;
}

uint64_t entry_idle_seconds(const struct store *s, const struct entry *e)
{
	return idle_ms(s, e) / 1000;
}

unsigned entry_lfu(const struct store *s, const struct entry *e)
{
	return lfu_decayed(s, entry_lru_raw(e));
}

/* --- eviction pool ------------------------------------------------------------ */

struct evpool_cand {
	uint64_t score; /* larger = better victim */
	uint64_t hash;
	unsigned db;
	size_t klen;
	char *key; /* cached[] or a heap copy for long keys */
	char cached[EVPOOL_KEY_CACHE];
};

struct evpool {
	const struct store *s;
	int policy; /* scores are only comparable under one policy */
	int n;	    /* candidates in c[0..n), ascending score */
	struct evpool_cand c[EVPOOL_SIZE];
};

static _Thread_local struct evpool evpool;

static void cand_release(struct evpool_cand *c)
{
	if (c->key && c->key != c->cached)
		zr_free(c->key);
	c->key = NULL;
}

static void pool_reset(const struct store *s)
{
	for (int i = 0; i < evpool.n; i++)
		cand_release(&evpool.c[i]);
	evpool.n = 0;
	evpool.s = s;
}

static void pool_insert(unsigned db, uint64_t h, const char *key, size_t klen, uint64_t score)
{
	struct evpool *p = &evpool;
	for (int i = 0; i < p->n; i++)
		if (p->c[i].hash == h && p->c[i].db == db && p->c[i].klen == klen &&
		    !memcmp(p->c[i].key, key, klen))
			return;
	if (p->n == EVPOOL_SIZE) {
		if (score <= p->c[0].score)
			return;
		/* Drop the worst, shift down. */
		cand_release(&p->c[0]);
		memmove(&p->c[0], &p->c[1], sizeof(p->c[0]) * (EVPOOL_SIZE - 1));
		p->n--;
		/* key pointers that pointed into cached[] moved with memmove */
		for (int i = 0; i < p->n; i++)
			if (p->c[i].klen <= EVPOOL_KEY_CACHE && p->c[i].key)
				p->c[i].key = p->c[i].cached;
	}
	int pos = p->n;
	while (pos > 0 && p->c[pos - 1].score > score)
		pos--;
	memmove(&p->c[pos + 1], &p->c[pos], sizeof(p->c[0]) * (size_t)(p->n - pos));
	p->n++;
	for (int i = pos + 1; i < p->n; i++)
		if (p->c[i].klen <= EVPOOL_KEY_CACHE && p->c[i].key)
			p->c[i].key = p->c[i].cached;
	struct evpool_cand *c = &p->c[pos];
	c->score = score;
	c->hash = h;
	c->db = db;
	c->klen = klen;
	c->key = klen <= EVPOOL_KEY_CACHE ? c->cached : zr_malloc(klen);
	memcpy(c->key, key, klen);
}

static uint64_t score_of(const struct store *s, enum store_evict_policy policy, const struct entry *e)
{
	switch (policy) {
	case STORE_EVICT_ALLKEYS_LFU:
	case STORE_EVICT_VOLATILE_LFU:
		return 255 - entry_lfu(s, e);
	case STORE_EVICT_VOLATILE_TTL:
		return UINT64_MAX - (uint64_t)entry_ttl_raw(e);
	default:
		return idle_ms(s, e);
	}
}

/* Samples every database once into the pool; returns keys sampled. */
static unsigned pool_populate(struct store *s, enum store_evict_policy policy, int samples)
{
	bool vol = policy_is_volatile(policy);
	struct entry *pick[EVICT_MAX_SAMPLES];
	unsigned total = 0;
	for (unsigned db = 0; db < s->ndb; db++) {
		int idx = store_pick_shard(s, db, vol);
		if (idx < 0)
			continue;
		struct shard *sh = store_shard(s, (unsigned)idx);
		struct dict *d = &sh->db[db];
		if (!shard_lock_briefly(sh)) /* a busy script's: sampled elsewhere */
			continue;
		unsigned n = 0;
		if (vol) {
			for (int i = 0; i < samples && d->nvol; i++)
				pick[n++] = d->vol[dict_rand(&sh->rnd) % d->nvol];
		} else {
			n = dict_sample(d, pick, (unsigned)samples, &sh->rnd);
		}
		for (unsigned i = 0; i < n; i++) {
			size_t klen;
			const char *key = entry_key_raw(pick[i], &klen);
			pool_insert(db, store_key_hash(key, klen), key, klen, score_of(s, policy, pick[i]));
		}
		zr_unlock(&sh->lock);
		total += n;
	}
	return total;
}

void store_set_delete_hook(struct store *s, store_event_fn fn, void *ctx)
{
	atomic_store_explicit(&s->delete_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&s->delete_fn, fn, memory_order_release);
}

void store_set_overhead_hook(struct store *s, store_overhead_fn fn, void *ctx)
{
	atomic_store_explicit(&s->overhead_ctx, ctx, memory_order_relaxed);
	atomic_store_explicit(&s->overhead_fn, fn, memory_order_release); /* publishes ctx */
}

uint64_t store_mem_not_counted(const struct store *s)
{
	struct store *m = (struct store *)s;
	int64_t pre = atomic_load_explicit(&m->snap_bytes, memory_order_relaxed) +
		      atomic_load_explicit(&m->snap_io_bytes, memory_order_relaxed);
	uint64_t n = pre > 0 ? (uint64_t)pre : 0;
	store_overhead_fn fn = atomic_load_explicit(&m->overhead_fn, memory_order_acquire);
	if (fn)
		n += fn(atomic_load_explicit(&m->overhead_ctx, memory_order_relaxed));
	return n;
}

void store_snap_buffered(struct store *s, size_t bytes)
{
	atomic_store_explicit(&s->snap_io_bytes, (int64_t)bytes, memory_order_relaxed);
}

size_t store_mem_for_eviction(const struct store *s)
{
	size_t used = zr_mem_used();
	uint64_t out = store_mem_not_counted(s);
	return used > out ? used - (size_t)out : 0;
}

/* Deletes the best pool candidate that still exists; false when none. */
static bool evict_from_pool(struct store *s, enum store_evict_policy policy)
{
	while (evpool.n > 0) {
		struct evpool_cand *c = &evpool.c[--evpool.n];
		struct shard *sh = store_shard(s, store_shard_index(s, c->hash));
		struct dict *d = &sh->db[c->db];
		bool done = false;
		if (!shard_lock_briefly(sh)) { /* a busy script's: the next candidate */
			cand_release(c);
			continue;
		}
		struct entry **link = dict_find(d, c->hash, c->key, c->klen);
		if (link && (!policy_is_volatile(policy) || entry_has_ttl(*link))) {
			store_event(s, STORE_EVENT_EVICTED, c->db, *link);
			store_deleted(s, STORE_EVENT_EVICTED, c->db, *link);
			store_unlink_free(s, d, c->hash, link);
			shard_count(&sh->evicted, 1);
			done = true;
		}
		zr_unlock(&sh->lock);
		cand_release(c);
		if (done)
			return true;
	}
	return false;
}

static bool evict_random(struct store *s, enum store_evict_policy policy)
{
	bool vol = policy_is_volatile(policy);
	unsigned start = (unsigned)(store_rand() % s->ndb);
	for (unsigned k = 0; k < s->ndb; k++) {
		unsigned db = (start + k) % s->ndb;
		int idx = store_pick_shard(s, db, vol);
		if (idx < 0)
			continue;
		struct shard *sh = store_shard(s, (unsigned)idx);
		struct dict *d = &sh->db[db];
		bool done = false;
		if (!shard_lock_briefly(sh)) /* a busy script's: another database */
			continue;
		struct entry *e = NULL;
		if (vol)
			e = d->nvol ? d->vol[dict_rand(&sh->rnd) % d->nvol] : NULL;
		else
			e = dict_random(d, &sh->rnd);
		if (e) {
			store_event(s, STORE_EVENT_EVICTED, db, e);
			store_deleted(s, STORE_EVENT_EVICTED, db, e);
			store_delete_entry_locked(s, db, e);
			shard_count(&sh->evicted, 1);
			done = true;
		}
		zr_unlock(&sh->lock);
		if (done)
			return true;
	}
	return false;
}

int store_evict(struct store *s, size_t maxmemory, enum store_evict_policy policy, int64_t now_ms)
{
	/* Mirror the policy first: it decides how accesses are recorded even
	 * while under the limit. */
	if (atomic_load_explicit(&s->policy, memory_order_relaxed) != (int)policy)
		store_set_evict_policy(s, policy);
	/* a replica keeps what its primary keeps (Redis's
	 * replica-ignore-maxmemory yes) */
	if (store_mem_for_eviction(s) <= maxmemory || store_is_replica(s))
		return 0;
	if (policy == STORE_EVICT_NOEVICTION)
		return -ENOMEM;
	int samples = atomic_load_explicit(&s->samples, memory_order_relaxed);
	if (samples > EVICT_MAX_SAMPLES)
		samples = EVICT_MAX_SAMPLES;
	if (evpool.s != s || evpool.policy != (int)policy) {
		pool_reset(s);
		evpool.policy = (int)policy;
	}
	/* eviction is a writer of its own, whoever calls it: its deletes
	 * are no change of the command that made room (Redis's server.dirty
	 * leaves evictions out; each has its DEL record) */
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_EVICTION, "eviction", true, now_ms);
	int r = 0;
	/* a key the running snapshot needs is kept as its pre-image when
	 * evicted: store_mem_for_eviction leaves it out, else every key would
	 * go before the figure fell */
	while (store_mem_for_eviction(s) > maxmemory) {
		bool ok;
		if (policy == STORE_EVICT_ALLKEYS_RANDOM || policy == STORE_EVICT_VOLATILE_RANDOM) {
			ok = evict_random(s, policy);
		} else {
			/* Refill, then take the best; a candidate deleted meanwhile is
			 * skipped. A round that finds no key at all ends it. */
			ok = false;
			for (int round = 0; round < 8 && !ok; round++) {
				if (pool_populate(s, policy, samples) == 0 && evpool.n == 0)
					break;
				ok = evict_from_pool(s, policy);
			}
		}
		if (!ok) {
			r = -ENOMEM;
			break;
		}
	}
	store_write_end(&w);
	return r;
}

void store_evict_pool_clear(void)
{
	pool_reset(NULL);
}
