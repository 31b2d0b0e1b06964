/* store_int — the store's private state, shared by the files of store/
 * (store.c lifetime and locks, ops.c single-key operations, walk.c
 * whole-keyspace operations, expire.c, evict.c, entry.c). Nothing outside
 * store/ includes this.
 *
 * Memory: the shards are one block, each shard padded to whole cache lines
 * and holding its lock, its version clock, its counters and the dicts of
 * every database for its index — everything a command touches under one
 * lock sits together, and two shards never share a line.
 */
#ifndef ZR_STORE_INT_H
#define ZR_STORE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "zarisd/core/keyslot.h"
#include "zarisd/core/lock.h"
#include "zarisd/core/util.h"
#include "zarisd/store/dict.h"
#include "zarisd/store/entry_layout.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define STORE_CACHELINE 64
#define STORE_EXPIRE_SLOTS 64 /* active-expiry cursors, one per worker (mod) */

/* Shard locks are taken in ascending index (or all: store_lock_all);
 * where they stand among zarisd's other locks: core/lock_order.h. */
struct shard {
	struct zr_lock lock;   /* core/lock.h: inline when uncontended */
	uint64_t last_version; /* last version handed out; under the lock */
	uint64_t rnd;	       /* random state for sampling; under the lock */
	/* Counters: written under the lock with relaxed load+store (no RMW
	 * needed, the lock makes the writer unique), read by store_stats
	 * without it. Kept here, not global, so GETs on different shards
	 * never share a line. */
	_Atomic uint64_t hits;
	_Atomic uint64_t misses;
	_Atomic uint64_t expired;
	_Atomic uint64_t evicted;
	/* point-in-time snapshot (snap.c), under the lock: */
	bool snap_pending;     /* a snapshot runs and has not dumped this shard yet */
	uint64_t snap_version; /* last_version at the snapshot's instant */
	struct snap_set *snap; /* pre-images of entries changed since then, or NULL */
	struct dict db[];      /* [databases] */
};

struct expire_cursor {
	_Atomic unsigned next; /* next position in the worker's share of shards */
	char pad[STORE_CACHELINE - sizeof(unsigned)];
};

struct store {
	unsigned ndb;
	unsigned nshards;
	unsigned bits;	       /* log2(nshards) */
	size_t stride;	       /* bytes per shard, a multiple of the line size */
	unsigned char *shards; /* aligned first shard */
	void *shards_alloc;    /* what to free */
	const struct store_type_ops *ops[STORE_TYPE_COUNT];
	/* Settings mirrored from the server; relaxed, each read on its own. */
	_Atomic int policy;  /* enum store_evict_policy, decides LRU vs LFU touches */
	_Atomic int samples; /* maxmemory-samples */
	_Atomic int lfu_log_factor;
	_Atomic int lfu_decay_time;
	_Atomic int64_t clock_ms; /* wall clock of the last store_tick */
	struct dict_live *live;	  /* [ndb] */
	/* store_set_event_hook: ctx is written before fn (release), read after
	 * it (acquire), so a caller seeing fn sees its ctx. */
	_Atomic(store_event_fn) event_fn;
	void *_Atomic event_ctx;
	/* store_set_delete_hook (evict.c): same publication rule as event_fn */
	_Atomic(store_event_fn) delete_fn;
	void *_Atomic delete_ctx;
	_Atomic(store_overhead_fn) overhead_fn; /* store_set_overhead_hook */
	void *_Atomic overhead_ctx;
	/* store_set_replica_mode / store_set_active_expire; relaxed, read only
	 * where a key is found past its TTL, by the expiry cycle and eviction */
	_Atomic int replica;
	_Atomic int active_expire_off;
	struct expire_cursor expire[STORE_EXPIRE_SLOTS];
	/* snapshot (snap.c): 1 while one runs; relaxed, the hooks' fast check */
	_Atomic int snap_active;
	_Atomic int64_t snap_bytes;    /* bytes held by pre-images now */
	_Atomic int64_t snap_peak;     /* most held during the current / last snapshot */
	_Atomic int64_t snap_io_bytes; /* the running snapshot's writer buffer (store_snap_buffered) */
	_Atomic uint64_t snap_entries;
};

static inline struct shard *store_shard(const struct store *s, unsigned i)
{
	return (struct shard *)(s->shards + (size_t)i * s->stride);
}

static inline struct dict *store_dict(const struct store *s, unsigned db, unsigned shard)
{
	return &store_shard(s, shard)->db[db];
}

/* A key's hash, computed once per key and command: its cluster slot
 * (Redis's CRC16 with the hash-tag rule) in the top 14 bits, the seeded
 * xxh3 below. The shard is the slot's top bits (store_shard_index), so a
 * slot's keys share a shard and a same-slot multi-key command one lock;
 * the bucket is the low bits, which only the secret seed decides, so
 * flooding one bucket chain stays hard even though the shard does not. */
#define STORE_SLOT_SHIFT DICT_SLOT_SHIFT
_Static_assert(STORE_SLOT_SHIFT + ZR_KEY_SLOT_BITS == 64, "the slot is the hash's top bits");

static inline uint64_t store_key_hash(const char *key, size_t klen)
{
	return ((uint64_t)zr_key_slot(key, klen) << STORE_SLOT_SHIFT) |
	       (zr_hash(key, klen) & ((1ull << STORE_SLOT_SHIFT) - 1));
}

static inline unsigned store_hash_slot(uint64_t h)
{
	return (unsigned)(h >> STORE_SLOT_SHIFT);
}

/* Top bits of the hash choose the shard: slot >> (14 - bits). */
static inline unsigned store_shard_index(const struct store *s, uint64_t h)
{
	return s->bits ? (unsigned)(h >> (64 - s->bits)) : 0;
}

static inline unsigned store_shard_of_slot(const struct store *s, unsigned slot)
{
	return slot >> (ZR_KEY_SLOT_BITS - s->bits);
}

static inline void shard_count(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n, memory_order_relaxed);
}

/* The calling thread's open write bracket (write.c; write.h): set by
 * store_write_begin/end only, read by the write paths below. */
extern _Thread_local struct store_write *store_write_cur;

/* A write outside any bracket, or a change inside a read-only one
 * (WHAT: "a stamp", "a delete" ...): counted, logged once; sanitizer
 * builds abort with the call stack (write.c). */
void store_write_breach(const char *what) __attribute__((cold, noinline));

/* The open bracket of a writer about to change an entry: counts the
 * change there. Breach without one, or in a read-only one. */
static inline void store_write_count(const char *what)
{
	struct store_write *w = store_write_cur;
	if (__builtin_expect(!w || !w->intent, 0))
		store_write_breach(what);
	else
		w->dirty++;
}

/* A deletion no writer counts (an expiry, a version restored): a bracket
 * must be open all the same, of any intent (a read meets expired keys). */
static inline void store_write_require(const char *what)
{
	if (__builtin_expect(!store_write_cur, 0))
		store_write_breach(what);
}

/* The open bracket's clock (0: none, or no bracket). */
static inline int64_t store_write_now(void)
{
	return store_write_cur ? store_write_cur->now_ms : 0;
}

/* The open bracket may change what it looks up (snapshot pre-images). */
static inline bool store_write_intends(void)
{
	return store_write_cur && store_write_cur->intent;
}

/* Set while this thread holds every shard lock (store_lock_all): the
 * whole-keyspace functions, which lock shard by shard, then skip locking. */
extern _Thread_local bool store_all_locked;

/* Owner check (core/thread.h, sanitizer builds): the calling thread holds
 * SH's lock, or every shard's (store_lock_all, which skips re-locking). */
#define STORE_ASSERT_HELD(sh) ZR_CHECK(store_all_locked || zr_lock_held(&(sh)->lock))

/* A new version for a write on shard SH (lock held): a hybrid clock —
 * wall-clock milliseconds << 16, or last + 1 when that is not larger, so it
 * is strictly monotonic per shard and roughly time-ordered across them.
 * Counts one change in the open bracket. */
static inline uint64_t shard_next_version(const struct store *s, struct shard *sh)
{
	STORE_ASSERT_HELD(sh); /* every write stamps its entry: under the lock */
	store_write_count("a stamp");
	uint64_t wall = (uint64_t)atomic_load_explicit(&s->clock_ms, memory_order_relaxed) << 16;
	sh->last_version = wall > sh->last_version ? wall : sh->last_version + 1;
	return sh->last_version;
}

/* The contended path of shard_lock: waits, calling the thread's wait
 * hook (store_set_wait_hook) meanwhile. */
void shard_lock_wait(struct shard *sh);
/* shard_lock for a walk that may stop: false, without the lock, when the
 * thread's wait hook said to give the wait up. */
bool shard_lock_walk(struct shard *sh);

/* Takes SH's lock for work that may pass over a shard this time (active
 * expiry, eviction's samples and victims): false, without the lock, once
 * another thread has held it for about a millisecond. A busy script holds
 * its shards for seconds, and a worker must not wait that out in its
 * timer or in front of a client's write. Ignores store_all_locked (as
 * zr_lock): call holding no shard lock. */
bool shard_lock_briefly(struct shard *sh);

static inline void shard_lock(struct shard *sh)
{
	if (!store_all_locked && !zr_trylock(&sh->lock))
		shard_lock_wait(sh);
}

static inline void shard_unlock(struct shard *sh)
{
	if (!store_all_locked)
		zr_unlock(&sh->lock);
}

/* Reports EV for entry E of DB to the event hook, if any (lock held). */
static inline void store_event(const struct store *s, enum store_event ev, unsigned db, const struct entry *e)
{
	store_event_fn fn = atomic_load_explicit(&((struct store *)s)->event_fn, memory_order_acquire);
	if (fn) {
		size_t klen;
		const char *key = entry_key_raw(e, &klen);
		fn(atomic_load_explicit(&((struct store *)s)->event_ctx, memory_order_relaxed), ev, db, key,
		   klen);
	}
}

/* Reports EV (expired or evicted) for entry E of DB to the deletion hook,
 * if any (lock held): a deletion no command made (store_set_delete_hook). */
static inline void store_deleted(const struct store *s, enum store_event ev, unsigned db,
				 const struct entry *e)
{
	store_event_fn fn = atomic_load_explicit(&((struct store *)s)->delete_fn, memory_order_acquire);
	if (fn) {
		size_t klen;
		const char *key = entry_key_raw(e, &klen);
		fn(atomic_load_explicit(&((struct store *)s)->delete_ctx, memory_order_relaxed), ev, db, key,
		   klen);
	}
}

static inline bool store_is_replica(const struct store *s)
{
	return atomic_load_explicit(&((struct store *)s)->replica, memory_order_relaxed);
}

/* Deletes the expired entry *LINK (key hash H) of database DB of shard SH
 * (lock held)
 * the way every expiry does (ops.c): the "expired" event, the deletion
 * hook (which journals a DEL), then unlink and free, counted in INFO's
 * expired_keys but not as a change the running command made: Redis's
 * server.dirty leaves expiries out, and the DEL record stands for it, so
 * a read that met an expired key is no write. Never in replica mode. */
void store_expire_locked(struct store *s, struct shard *sh, unsigned db, uint64_t h, struct entry **link);

/* The ops of every non-string type, indexed by enum store_type (types.c);
 * NULL for strings. */
extern const struct store_type_ops *const store_builtin_types[STORE_TYPE_COUNT];

/* Rebuilds E (in D, hash H) with metadata block M (NULL: none, no md
 * bit), keeping value and TTL; E's old metadata block, if any, is not freed
 * (the caller's).
 * Returns the new entry, or NULL (E untouched) when allocation failed. */
struct store_meta;
struct entry *store_reshape_meta_locked(struct dict *d, uint64_t h, struct entry *e, struct store_meta *m);
/* Frees E's value and E, adjusting D's byte count. E is already unlinked. */
void store_entry_free(struct store *s, struct dict *d, struct entry *e);
/* Unlinks *LINK, whose key hash is H, from D (table and vol) and frees it. */
void store_unlink_free(struct store *s, struct dict *d, uint64_t h, struct entry **link);
/* Frees every entry of D and its tables (walk.c). Lock held (or no
 * thread running, in store_destroy). */
void store_flush_dict_locked(struct store *s, struct dict *d);

/* walk.c: a shard whose dict of DB (or its volatile array) looks
 * non-empty, or -1 when every one is empty. No lock needed. */
int store_pick_shard(struct store *s, unsigned db, bool volatile_only);

/* evict.c: LRU/LFU bookkeeping. */
/* The lru field of a new entry under the current policy. */
uint32_t store_lru_new(const struct store *s);
/* An access to E (LRU: now; LFU: decay then log-increment). */
void store_touch(const struct store *s, struct entry *e);
/* The lru field for an overwritten entry (LFU keeps the old counter, as
 * Redis's dbOverwrite does; LRU restarts). */
uint32_t store_lru_overwrite(const struct store *s, const struct entry *old);

/* snap.c: copy-before-write of a point-in-time snapshot. Each hook is a
 * relaxed load of s->snap_active when no snapshot runs. */
/* Keeps a copy of E (of DB in shard SH, lock held) as it was at the
 * snapshot's instant, before the caller changes it. */
void store_snap_preserve(struct store *s, struct shard *sh, unsigned db, const struct entry *e);
/* E (of dict D, unlinked) is about to be freed: keeps it as its own
 * pre-image instead when the snapshot still needs it. True when kept. */
bool store_snap_retain(struct store *s, struct dict *d, struct entry *e);
/* SWAPDB: keeps copies of every entry of dbs A and B of SH and serves
 * those dbs from the copies only. */
void store_snap_freeze_dbs(struct store *s, struct shard *sh, unsigned a, unsigned b);

static inline bool store_snap_on(const struct store *s)
{
	return __builtin_expect(atomic_load_explicit(&s->snap_active, memory_order_relaxed), 0);
}

static inline void store_snap_touch(struct store *s, struct shard *sh, unsigned db, const struct entry *e)
{
	if (store_snap_on(s) && sh->snap_pending && e->version <= sh->snap_version)
		store_snap_preserve(s, sh, db, e);
}

/* A thread-local random number (no lock needed). */
uint64_t store_rand(void);

#endif
