/* walk — whole-keyspace operations: counts, SCAN, KEYS-style visits,
 * flush, SWAPDB, random key. Each takes shard locks itself, one shard at a
 * time (SWAPDB: all of them, in ascending order); call holding none. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/keyslot.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/meta.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

uint64_t store_dbsize(struct store *s, unsigned db)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < s->nshards; i++)
		n += dict_keys(store_dict(s, db, i));
	return n;
}

uint64_t store_expires_count(struct store *s, unsigned db)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < s->nshards; i++)
		n += dict_vkeys(store_dict(s, db, i));
	return n;
}

uint64_t store_db_bytes(struct store *s, unsigned db)
{
	int64_t n = 0;
	for (unsigned i = 0; i < s->nshards; i++)
		n += atomic_load_explicit(&store_dict(s, db, i)->bytes, memory_order_relaxed);
	return n > 0 ? (uint64_t)n : 0;
}

/* Calls the user's visitor on live entries only. */
struct live_visit {
	int64_t now_ms;
	store_visit_fn fn;
	void *ctx;
};

static void visit_live(struct entry *e, void *arg)
{
	struct live_visit *lv = arg;
	if (entry_has_ttl(e) && entry_ttl_raw(e) < lv->now_ms)
		return;
	lv->fn(e, lv->ctx);
}

struct slot_visit {
	unsigned slot;
	struct live_visit lv;
};

static void visit_slot(struct entry *e, void *arg)
{
	struct slot_visit *sv = arg;
	size_t klen;
	const char *key = entry_key(e, &klen);
	if (zr_key_slot(key, klen) == sv->slot)
		visit_live(e, &sv->lv);
}

int store_foreach_slot(struct store *s, unsigned db, unsigned slot, int64_t now_ms, store_visit_fn fn,
		       void *ctx)
{
	unsigned i = store_slot_shard(s, slot);
	struct dict *d = store_dict(s, db, i);
	if (!dict_keys(d))
		return 0;
	struct slot_visit sv = { slot, { now_ms, fn, ctx } };
	struct shard *sh = store_shard(s, i);
	if (!shard_lock_walk(sh))
		return -EBUSY;
	dict_foreach(d, visit_slot, &sv);
	shard_unlock(sh);
	return 0;
}

/* Cursor = (bucket cursor << shard bits) | shard: shards are walked in
 * order, each with Redis's reverse-binary cursor over its table. */
int store_scan(struct store *s, unsigned db, uint64_t *cursor, int64_t now_ms, store_visit_fn fn, void *ctx)
{
	unsigned shard = (unsigned)(*cursor & (s->nshards - 1));
	uint64_t v = *cursor >> s->bits;
	struct live_visit lv = { now_ms, fn, ctx };
	for (;;) {
		struct dict *d = store_dict(s, db, shard);
		/* An empty dict is skipped without its lock: keys added to it
		 * now were not present for the whole scan. */
		if (dict_keys(d)) {
			struct shard *sh = store_shard(s, shard);
			if (!shard_lock_walk(sh))
				return -EBUSY;
			v = dict_scan(d, v, visit_live, &lv);
			shard_unlock(sh);
			if (v)
				*cursor = (v << s->bits) | shard;
			else
				*cursor = ++shard == s->nshards ? 0 : shard;
			return 0;
		}
		v = 0;
		if (++shard == s->nshards) {
			*cursor = 0;
			return 0;
		}
	}
}

int store_foreach(struct store *s, unsigned db, int64_t now_ms, store_visit_fn fn, void *ctx)
{
	struct live_visit lv = { now_ms, fn, ctx };
	for (unsigned i = 0; i < s->nshards; i++) {
		struct dict *d = store_dict(s, db, i);
		if (!dict_keys(d))
			continue;
		struct shard *sh = store_shard(s, i);
		if (!shard_lock_walk(sh))
			return -EBUSY;
		dict_foreach(d, visit_live, &lv);
		shard_unlock(sh);
	}
	return 0;
}

struct flush_ctx {
	struct store *s;
	struct dict *d;
};

static void flush_one(struct entry *e, void *arg)
{
	struct flush_ctx *fc = arg;
	store_entry_free(fc->s, fc->d, e);
}

void store_flush_dict_locked(struct store *s, struct dict *d)
{
	struct flush_ctx fc = { s, d };
	dict_clear(d, flush_one, &fc);
	meta_index_free(d);
}

void store_flushdb(struct store *s, unsigned db)
{
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		shard_lock(sh);
		store_flush_dict_locked(s, &sh->db[db]);
		shard_unlock(sh);
	}
}

void store_flushall(struct store *s)
{
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		shard_lock(sh);
		for (unsigned db = 0; db < s->ndb; db++)
			store_flush_dict_locked(s, &sh->db[db]);
		shard_unlock(sh);
	}
}

/* Swaps two dicts field by field: the counters are atomics that readers
 * load without the lock, so they are moved with atomic stores. */
static void dict_swap(struct dict *a, struct dict *b)
{
	/* The live counters belong to the database slot: move the "non-empty"
	 * marks along with the contents. */
	long ka_ne = dict_keys(a) > 0, kb_ne = dict_keys(b) > 0;
	long va_ne = dict_vkeys(a) > 0, vb_ne = dict_vkeys(b) > 0;
	if (ka_ne != kb_ne) {
		dict_live_add(&a->live->keys, kb_ne - ka_ne);
		dict_live_add(&b->live->keys, ka_ne - kb_ne);
	}
	if (va_ne != vb_ne) {
		dict_live_add(&a->live->vols, vb_ne - va_ne);
		dict_live_add(&b->live->vols, va_ne - vb_ne);
	}
	struct dict t = *a;
	uint64_t ka = dict_keys(a), kb = dict_keys(b);
	int64_t ba = atomic_load_explicit(&a->bytes, memory_order_relaxed);
	int64_t bb = atomic_load_explicit(&b->bytes, memory_order_relaxed);
	uint32_t na = dict_vkeys(a), nb = dict_vkeys(b);
	memcpy(a->tab, b->tab, sizeof(a->tab));
	memcpy(a->size, b->size, sizeof(a->size));
	dict_set_rehash(a, b->rehash);
	a->vol = b->vol;
	a->volcap = b->volcap;
	memcpy(b->tab, t.tab, sizeof(b->tab));
	memcpy(b->size, t.size, sizeof(b->size));
	dict_set_rehash(b, t.rehash);
	b->vol = t.vol;
	b->volcap = t.volcap;
	__atomic_store_n(&a->nvol, nb, __ATOMIC_RELAXED);
	__atomic_store_n(&b->nvol, na, __ATOMIC_RELAXED);
	atomic_store_explicit(&a->keys, kb, memory_order_relaxed);
	atomic_store_explicit(&b->keys, ka, memory_order_relaxed);
	atomic_store_explicit(&a->bytes, bb, memory_order_relaxed);
	atomic_store_explicit(&b->bytes, ba, memory_order_relaxed);
	a->slots = b->slots; /* the slot counts go with the keys they count */
	b->slots = t.slots;
	a->mx = b->mx; /* and the indexes with the keys they index */
	b->mx = t.mx;
}

void store_swapdb(struct store *s, unsigned a, unsigned b)
{
	/* one change, as Redis's swapdbCommand counts (server.dirty++, also
	 * for a == b); it is also what gets the command journaled, as it
	 * stamps and frees nothing */
	store_write_count("a swap");
	if (a == b)
		return;
	/* All locks at once so that no multi-key command sees one database
	 * half swapped. Ascending order, as everywhere. */
	for (unsigned i = 0; i < s->nshards; i++)
		shard_lock(store_shard(s, i));
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		if (store_snap_on(s)) /* the running snapshot keeps both as they were */
			store_snap_freeze_dbs(s, sh, a, b);
		dict_swap(&sh->db[a], &sh->db[b]);
	}
	for (unsigned i = s->nshards; i-- > 0;)
		shard_unlock(store_shard(s, i));
}

/* A shard index whose dict of DB (or its volatile array when VOLATILE)
 * looks non-empty, or -1. Random probes first, then a full sweep from a
 * random start, so a sparse keyspace is still found. */
int store_pick_shard(struct store *s, unsigned db, bool volatile_only)
{
	struct dict_live *lv = &s->live[db];
	if (atomic_load_explicit(volatile_only ? &lv->vols : &lv->keys, memory_order_relaxed) <= 0)
		return -1;
	for (int i = 0; i < 32; i++) {
		unsigned sh = (unsigned)(store_rand() & (s->nshards - 1));
		struct dict *d = store_dict(s, db, sh);
		if (volatile_only ? dict_vkeys(d) > 0 : dict_keys(d) > 0)
			return (int)sh;
	}
	unsigned start = (unsigned)(store_rand() & (s->nshards - 1));
	for (unsigned i = 0; i < s->nshards; i++) {
		unsigned sh = (start + i) & (s->nshards - 1);
		struct dict *d = store_dict(s, db, sh);
		if (volatile_only ? dict_vkeys(d) > 0 : dict_keys(d) > 0)
			return (int)sh;
	}
	return -1;
}

#define RANDOM_KEY_TRIES 100

/* A replica's RANDOMKEY when RANDOM_KEY_TRIES draws met only hidden keys
 * and the database holds keys without a TTL: the first live key from a
 * random shard on (a primary deletes what it draws, so its draws end). */
struct first_live {
	int64_t now_ms;
	const struct entry *e;
};

static void find_live(struct entry *e, void *arg)
{
	struct first_live *fl = arg;
	if (!fl->e && !(entry_has_ttl(e) && entry_ttl_raw(e) < fl->now_ms))
		fl->e = e;
}

static int random_live_sweep(struct store *s, unsigned db, int64_t now_ms, store_visit_fn fn, void *ctx)
{
	unsigned start = (unsigned)(store_rand() & (s->nshards - 1));
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, (start + i) & (s->nshards - 1));
		if (!dict_keys(&sh->db[db]))
			continue;
		struct first_live fl = { now_ms, NULL };
		if (!shard_lock_walk(sh))
			return -EBUSY;
		dict_foreach(&sh->db[db], find_live, &fl);
		if (fl.e)
			fn(fl.e, ctx);
		shard_unlock(sh);
		if (fl.e)
			return 1;
	}
	return 0;
}

int store_random_key(struct store *s, unsigned db, int64_t now_ms, store_visit_fn fn, void *ctx)
{
	/* Expired keys met on the way are deleted, like Redis's RANDOMKEY;
	 * the bound keeps a keyspace full of expired keys from looping. A
	 * replica skips them without deleting, and when every key has a TTL
	 * answers the last one drawn, expired or not (Redis's dbRandomKey on
	 * a replica, which would loop forever otherwise). */
	bool replica = store_is_replica(s);
	for (int tries = 0; tries < RANDOM_KEY_TRIES; tries++) {
		int idx = store_pick_shard(s, db, false);
		if (idx < 0)
			return 0;
		struct shard *sh = store_shard(s, (unsigned)idx);
		struct dict *d = &sh->db[db];
		if (!shard_lock_walk(sh))
			return -EBUSY;
		struct entry *e = dict_random(d, &sh->rnd);
		if (e && entry_has_ttl(e) && entry_ttl_raw(e) < now_ms) {
			if (!replica) {
				size_t klen;
				const char *k = entry_key_raw(e, &klen);
				uint64_t h = store_key_hash(k, klen);
				store_expire_locked(s, sh, db, h, dict_link_of(d, h, e));
				e = NULL;
			} else if (tries < RANDOM_KEY_TRIES - 1 ||
				   store_dbsize(s, db) != store_expires_count(s, db)) {
				e = NULL;
			}
		}
		if (e)
			fn(e, ctx);
		shard_unlock(sh);
		if (e)
			return 1;
	}
	return replica ? random_live_sweep(s, db, now_ms, fn, ctx) : 0;
}

void store_db_overhead(struct store *s, unsigned db, uint64_t *main_bytes, uint64_t *expires_bytes)
{
	uint64_t m = 0, x = 0;
	for (unsigned i = 0; i < s->nshards; i++) {
		struct dict *d = store_dict(s, db, i);
		if (!dict_keys(d))
			continue;
		struct shard *sh = store_shard(s, i);
		shard_lock(sh);
		m += (d->size[0] + d->size[1]) * sizeof(struct entry *);
		x += (uint64_t)d->volcap * sizeof(struct entry *);
		shard_unlock(sh);
	}
	*main_bytes = m;
	*expires_bytes = x;
}
