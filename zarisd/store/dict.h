/* dict — the hash table of one (database, shard) pair, private to store/.
 *
 * A chained table of struct entry (the chain link lives in the entry), with
 * Redis's incremental rehash: growing or shrinking allocates a second table
 * and every later add / unlink / find moves a bucket or so, until the old
 * table is empty. A bucket index is the low bits of the key's 64-bit hash
 * (store_int.h: the seeded xxh3; its top 14 bits are the key's cluster slot,
 * whose top bits are the shard index, so bucket and shard never correlate).
 * Beside the table sits a dense array of the entries that carry a TTL (each
 * such entry stores its own index into it), for active expiry sampling and
 * the volatile-* eviction policies, and the key count of each cluster slot
 * the shard holds (CLUSTER COUNTKEYSINSLOT).
 *
 * Every function needs the owning shard's lock. `keys`, `vkeys` and `bytes`
 * are relaxed atomics written only under that lock, so that DBSIZE / INFO
 * may read them without it; the slot counts are read under the lock.
 *
 * Invariants: size[0] is 0 or a power of two >= DICT_MIN_SIZE; rehash >= 0
 * iff tab[1] != NULL; buckets of tab[0] below `rehash` are empty;
 * vol[i] has a TTL and entry_vidx(vol[i]) == i for every i < nvol;
 * slots[j] is the number of entries whose slot & live->slot_mask is j (the sum
 * is `keys`), and slots is NULL iff the dict is empty.
 */
#ifndef ZR_STORE_DICT_H
#define ZR_STORE_DICT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/store/entry_layout.h"

#define DICT_MIN_SIZE 4
/* A key hash (store_int.h store_key_hash) carries the key's cluster slot
 * in its top 14 bits; the bits below are the seeded xxh3's. */
#define DICT_SLOT_SHIFT 50

/* Per database: how many of its shard dicts hold any key / any volatile
 * key. Changed only when a dict turns empty or non-empty (rare), read by
 * whoever wants a random non-empty shard (eviction, RANDOMKEY) so that an
 * empty database costs one load instead of a sweep of every shard. */
struct dict_live {
	_Atomic long keys;
	_Atomic long vols;
	uint32_t slot_mask; /* cluster slots of one shard minus one: 2^(14 - shard bits) - 1 */
	char pad[64 - 2 * sizeof(long) - sizeof(uint32_t)];
};

struct dict {
	struct entry **tab[2]; /* [0] main, [1] rehash target */
	uint64_t size[2];      /* bucket counts (0 = no table) */
	int64_t rehash;	       /* next tab[0] bucket to move, -1 when not rehashing */
	struct entry **vol;    /* entries with a TTL, dense */
	uint32_t nvol, volcap;
	_Atomic uint64_t keys;	/* entries in the table */
	_Atomic int64_t bytes;	/* usable bytes of entries + tables + vol array */
	struct dict_live *live; /* the database's counters (stays with the slot on SWAPDB) */
	/* [live->slot_mask + 1] keys per cluster slot of this shard, indexed
	 * by the slot's low bits: allocated with the first key, freed with the
	 * last, so an empty dict holds no memory. Moves with the keys on
	 * SWAPDB. */
	uint64_t *slots;
	/* label and entity indexes of the entries with metadata (store/meta.h),
	 * NULL until the first; moves with the keys on SWAPDB */
	struct meta_index *mx;
};

static inline uint64_t dict_keys(const struct dict *d)
{
	return atomic_load_explicit(&d->keys, memory_order_relaxed);
}

/* Number of volatile entries; safe without the lock (a racy but untorn read
 * is all active expiry needs to skip empty dicts). */
static inline uint32_t dict_vkeys(const struct dict *d)
{
	return __atomic_load_n(&d->nvol, __ATOMIC_RELAXED);
}

static inline void dict_bytes_add(struct dict *d, int64_t delta)
{
	atomic_store_explicit(&d->bytes, atomic_load_explicit(&d->bytes, memory_order_relaxed) + delta,
			      memory_order_relaxed);
}

/* LIVE is the database's (its slot_mask set by store_create). */
void dict_init(struct dict *d, struct dict_live *live);
static inline void dict_live_add(_Atomic long *c, long delta)
{
	atomic_fetch_add_explicit(c, delta, memory_order_relaxed);
}
/* Frees every entry through FREE_FN, then the tables, the vol array and
 * the slot counts; the dict is empty (and holds no memory) afterwards. */
void dict_clear(struct dict *d, void (*free_fn)(struct entry *e, void *ctx), void *ctx);

/* The link (bucket head or a ->next) that points at KEY's entry, or NULL.
 * Does one rehash step first when rehashing. */
struct entry **dict_find(struct dict *d, uint64_t h, const char *key, size_t klen);
/* The link that points at E (which must be in D; H is its key's hash). */
struct entry **dict_link_of(struct dict *d, uint64_t h, const struct entry *e);
/* Adds E (whose key is absent) with hash H (the store's key hash: its slot
 * is counted); may start a grow. */
void dict_add(struct dict *d, uint64_t h, struct entry *e);
/* Removes the entry *LINK points at, whose key's hash is H, from the table
 * (not from vol, not freed); may start a shrink. */
void dict_unlink(struct dict *d, uint64_t h, struct entry **link);
/* Keys in D whose slot has the low bits of SLOT (D holds one shard's
 * slots, so: the keys of slot SLOT). */
static inline uint64_t dict_slot_keys(const struct dict *d, unsigned slot)
{
	return d->slots ? d->slots[slot & d->live->slot_mask] : 0;
}
/* Moves up to N buckets to the new table. */
void dict_rehash_step(struct dict *d, int n);
static inline bool dict_is_rehashing(const struct dict *d)
{
	return d->rehash >= 0;
}

/* dict_is_rehashing() without the shard's lock, for background work that
 * looks for tables to move before it locks: racy but untorn (every store
 * of `rehash` is atomic, dict_set_rehash). */
static inline bool dict_rehashing_unlocked(const struct dict *d)
{
	return __atomic_load_n(&d->rehash, __ATOMIC_RELAXED) >= 0;
}

/* The one way `rehash` is written (lock held). */
static inline void dict_set_rehash(struct dict *d, int64_t v)
{
	__atomic_store_n(&d->rehash, v, __ATOMIC_RELAXED);
}

/* The first entry of the bucket where a lookup of hash H starts (rehash
 * aware, no rehash step), or NULL: for prefetching, the lookup itself is
 * dict_find. */
static inline struct entry *dict_bucket_head(const struct dict *d, uint64_t h)
{
	if (!d->size[0])
		return NULL;
	uint64_t i = h & (d->size[0] - 1);
	/* buckets below `rehash` have moved to tab[1] */
	if (dict_is_rehashing(d) && (int64_t)i < d->rehash)
		return d->tab[1][h & (d->size[1] - 1)];
	return d->tab[0][i];
}

/* Visits the bucket(s) of cursor V (Redis's reverse-binary dictScan) and
 * returns the next cursor, 0 when the table has been covered. */
typedef void (*dict_visit_fn)(struct entry *e, void *ctx);
uint64_t dict_scan(struct dict *d, uint64_t v, dict_visit_fn fn, void *ctx);
/* Calls FN on every entry (FN must not modify the dict). */
void dict_foreach(struct dict *d, dict_visit_fn fn, void *ctx);
/* A random entry, NULL when empty. RND is the caller's random state. */
struct entry *dict_random(struct dict *d, uint64_t *rnd);
/* Up to N entries from consecutive buckets starting at a random one (Redis's
 * dictGetSomeKeys); returns how many were written to OUT. */
unsigned dict_sample(struct dict *d, struct entry **out, unsigned n, uint64_t *rnd);

/* Volatile array. */
void dict_vol_add(struct dict *d, struct entry *e);
void dict_vol_del(struct dict *d, struct entry *e);
/* E (with a TTL) moved in memory: fixes its vol slot. */
static inline void dict_vol_moved(struct dict *d, struct entry *e)
{
	d->vol[entry_vidx(e)] = e;
}

/* xorshift64* step; RND must be non-zero. */
static inline uint64_t dict_rand(uint64_t *rnd)
{
	uint64_t x = *rnd;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rnd = x;
	return x * 0x2545F4914F6CDD1DULL;
}

#endif
