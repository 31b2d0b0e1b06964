/* snap — a point-in-time image of the keyspace taken without fork (see
 * store_snap_begin in store.h), and the store helpers persistence needs.
 *
 * Model: at the instant every shard lock is held; each shard records its
 * clock (snap_version) and is marked pending. An entry whose version is
 * <= snap_version has not changed since the instant. Before the first
 * change to such an entry (or its deletion) the store's write paths call
 * store_snap_preserve / store_snap_retain, which put a pre-image into the
 * shard's snap_set, keyed by (db, key), at most one per key. The dump of
 * a shard then emits: every pre-image, plus every live entry that is
 * unchanged (version <= snap_version) and has no pre-image. Entries born
 * after the instant have a larger version and are skipped — except on a
 * replica, which gives each entry its primary's version back after the
 * write (store_entry_set_version_locked): that version is the primary's
 * clock when the primary ran the write, which with any replication lag is
 * below this shard's clock at the instant. So an entry born after the
 * instant that gets a version at or below snap_version gets an absent
 * marker in snap_set instead (a pre-image saying "no such key then"),
 * else the image would hold a key its seq says it does not. SWAPDB moves
 * whole dicts without new versions, so it preserves both databases fully
 * and marks them frozen: their dump uses pre-images only, and a later
 * change in a frozen database takes no pre-image (the entry it changes
 * may be another database's, moved there by the swap).
 *
 * Threads: everything here runs under the shard's lock, except the
 * counters (relaxed atomics, read by INFO).
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/meta.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

struct snap_pre {
	struct snap_pre *next; /* bucket chain */
	uint64_t h;	       /* key hash */
	unsigned db;
	struct entry *e; /* owned: a copy, or the deleted entry itself; NULL: absent marker */
	char *key;	 /* absent marker: its key (owned) */
	size_t klen;
};

struct snap_set {
	struct snap_pre **tab;
	size_t mask; /* buckets - 1 */
	size_t n;
	unsigned char *frozen; /* [ndb]: serve this db from pre-images only (SWAPDB) */
};

const struct store_type_ops *store_type_ops_of(const struct store *s, enum store_type t)
{
	return t < STORE_TYPE_COUNT ? s->ops[t] : NULL;
}

static void count_bytes(struct store *s, int64_t delta)
{
	int64_t now = atomic_fetch_add_explicit(&s->snap_bytes, delta, memory_order_relaxed) + delta;
	int64_t peak = atomic_load_explicit(&s->snap_peak, memory_order_relaxed);
	while (now > peak && !atomic_compare_exchange_weak_explicit(
				     &s->snap_peak, &peak, now, memory_order_relaxed, memory_order_relaxed))
		;
}

static struct snap_set *set_of(struct store *s, struct shard *sh)
{
	if (!sh->snap) {
		sh->snap = zr_calloc(1, sizeof(*sh->snap));
		sh->snap->mask = 15;
		sh->snap->tab = zr_calloc(16, sizeof(struct snap_pre *));
		sh->snap->frozen = zr_calloc(s->ndb, 1);
	}
	return sh->snap;
}

static struct snap_pre *set_find(const struct snap_set *set, unsigned db, uint64_t h, const char *key,
				 size_t klen)
{
	if (!set)
		return NULL;
	for (struct snap_pre *p = set->tab[h & set->mask]; p; p = p->next)
		if (p->h == h && p->db == db &&
		    (p->e ? entry_key_eq(p->e, key, klen) : p->klen == klen && !memcmp(p->key, key, klen)))
			return p;
	return NULL;
}

/* What P holds: its record, the entry and the entry's value object (a
 * copy, or the deleted key's own: either way the image's alone until the
 * shard is dumped). The same on filing and on freeing: nothing changes a
 * pre-image meanwhile. */
static size_t pre_bytes(const struct store *s, const struct snap_pre *p)
{
	size_t n = zr_usable(p) + (p->e ? zr_usable(p->e) : zr_usable(p->key));
	if (p->e) {
		unsigned t = entry_type_raw(p->e);
		void *obj = t != STORE_TYPE_STRING ? entry_obj_raw(p->e) : NULL;
		if (obj && s->ops[t] && s->ops[t]->memory)
			n += s->ops[t]->memory(obj);
	}
	return n;
}

/* Files E (or, E NULL, an absent marker for KEY) under (DB, KEY). */
static void set_add(struct store *s, struct shard *sh, unsigned db, uint64_t h, struct entry *e,
		    const char *key, size_t klen)
{
	struct snap_set *set = set_of(s, sh);
	if (set->n > set->mask) {
		size_t nsize = (set->mask + 1) * 2;
		struct snap_pre **nt = zr_calloc(nsize, sizeof(*nt));
		for (size_t i = 0; i <= set->mask; i++) {
			struct snap_pre *p = set->tab[i];
			while (p) {
				struct snap_pre *next = p->next;
				p->next = nt[p->h & (nsize - 1)];
				nt[p->h & (nsize - 1)] = p;
				p = next;
			}
		}
		zr_free(set->tab);
		set->tab = nt;
		set->mask = nsize - 1;
	}
	struct snap_pre *p = zr_malloc(sizeof(*p));
	p->h = h;
	p->db = db;
	p->e = e;
	p->key = NULL;
	p->klen = 0;
	if (!e) {
		p->key = zr_malloc(klen ? klen : 1);
		memcpy(p->key, key, klen);
		p->klen = klen;
	}
	p->next = set->tab[h & set->mask];
	set->tab[h & set->mask] = p;
	set->n++;
	atomic_fetch_add_explicit(&s->snap_entries, 1, memory_order_relaxed);
	count_bytes(s, (int64_t)pre_bytes(s, p));
}

void store_entry_set_version_locked(struct store *s, struct entry *e, uint64_t version)
{
	store_write_require("a version restored");
	size_t klen;
	const char *k = entry_key_raw(e, &klen);
	struct shard *sh = store_shard(s, store_shard_of_slot(s, zr_key_slot(k, klen)));
	STORE_ASSERT_HELD(sh);
	/* changed since the instant (a larger version), back to one the
	 * image would take for unchanged: unless a pre-image of the key is
	 * filed (it existed then), it was born since, so it gets an absent
	 * marker (the comment at the top) */
	if (sh->snap_pending && e->version > sh->snap_version && version <= sh->snap_version) {
		uint64_t dh = store_key_hash(k, klen), h = zr_hash(k, klen);
		for (unsigned db = 0; db < s->ndb; db++) {
			struct entry **link = dict_find(&sh->db[db], dh, k, klen);
			if (!link || *link != e)
				continue;
			if (!(sh->snap && sh->snap->frozen[db]) && !set_find(sh->snap, db, h, k, klen))
				set_add(s, sh, db, h, NULL, k, klen);
			break;
		}
	}
	e->version = version;
	if (sh->last_version < version)
		sh->last_version = version;
}

/* A private copy of E: the block, and a deep copy of a non-string value. */
static struct entry *entry_copy(const struct store *s, const struct entry *e)
{
	unsigned type = entry_type_raw(e);
	struct entry_shape shp = entry_shape_of_entry(e); /* a raw string's wider length field too */
	struct entry *c = zr_malloc(shp.size);
	memcpy(c, e, shp.size);
	c->next = NULL;
	if (entry_has_meta_raw(e))
		entry_set_meta_ptr_raw(c, meta_dup(entry_meta_ptr_raw(e)));
	if (type != STORE_TYPE_STRING) {
		void *obj = entry_obj_raw(e);
		void *dup = obj ? s->ops[type]->dup(obj) : NULL;
		memcpy((char *)c + shp.voff, &dup, sizeof(dup));
	}
	return c;
}

void store_snap_preserve(struct store *s, struct shard *sh, unsigned db, const struct entry *e)
{
	/* a frozen database's image is its pre-images, all taken when it was
	 * frozen; what it holds now came from elsewhere (SWAPDB) and must
	 * not be filed under it */
	if (sh->snap && sh->snap->frozen[db])
		return;
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	uint64_t h = zr_hash(key, klen);
	if (set_find(sh->snap, db, h, key, klen))
		return;
	set_add(s, sh, db, h, entry_copy(s, e), NULL, 0);
}

bool store_snap_retain(struct store *s, struct dict *d, struct entry *e)
{
	size_t idx = (size_t)((unsigned char *)d - s->shards) / s->stride;
	struct shard *sh = store_shard(s, (unsigned)idx);
	if (!sh->snap_pending || e->version > sh->snap_version)
		return false;
	unsigned db = (unsigned)(d - sh->db);
	if (sh->snap && sh->snap->frozen[db]) /* as store_snap_preserve */
		return false;
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	uint64_t h = zr_hash(key, klen);
	if (set_find(sh->snap, db, h, key, klen))
		return false;
	e->next = NULL;
	set_add(s, sh, db, h, e, NULL, 0);
	return true;
}

struct freeze_ctx {
	struct store *s;
	struct shard *sh;
	unsigned db;
};

static void freeze_one(struct entry *e, void *arg)
{
	struct freeze_ctx *fc = arg;
	if (e->version <= fc->sh->snap_version)
		store_snap_preserve(fc->s, fc->sh, fc->db, e);
}

void store_snap_freeze_dbs(struct store *s, struct shard *sh, unsigned a, unsigned b)
{
	if (!sh->snap_pending)
		return;
	struct snap_set *set = set_of(s, sh);
	unsigned dbs[2] = { a, b };
	for (int i = 0; i < 2; i++) {
		if (set->frozen[dbs[i]])
			continue;
		struct freeze_ctx fc = { s, sh, dbs[i] };
		dict_foreach(&sh->db[dbs[i]], freeze_one, &fc);
		set->frozen[dbs[i]] = 1;
	}
}

static void set_free(struct store *s, struct shard *sh)
{
	struct snap_set *set = sh->snap;
	if (!set)
		return;
	for (size_t i = 0; i <= set->mask; i++) {
		struct snap_pre *p = set->tab[i];
		while (p) {
			struct snap_pre *next = p->next;
			count_bytes(s, -(int64_t)pre_bytes(s, p));
			if (p->e) {
				unsigned t = entry_type_raw(p->e);
				if (t != STORE_TYPE_STRING && entry_obj_raw(p->e))
					s->ops[t]->free(entry_obj_raw(p->e));
				if (entry_has_meta_raw(p->e))
					meta_free(entry_meta_ptr_raw(p->e));
				zr_free(p->e);
			}
			zr_free(p->key);
			zr_free(p);
			p = next;
		}
	}
	zr_free(set->tab);
	zr_free(set->frozen);
	ZR_FREE(sh->snap);
}

int store_snap_begin(struct store *s, void (*at_instant)(void *ctx), void *ctx)
{
	if (atomic_load_explicit(&s->snap_active, memory_order_relaxed))
		return -EBUSY;
	for (unsigned i = 0; i < s->nshards; i++)
		shard_lock(store_shard(s, i));
	if (at_instant)
		at_instant(ctx);
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		sh->snap_pending = true;
		sh->snap_version = sh->last_version;
	}
	atomic_store_explicit(&s->snap_peak, 0, memory_order_relaxed);
	atomic_store_explicit(&s->snap_entries, 0, memory_order_relaxed);
	/* Relaxed is enough: every reader of the flag checks it under a shard
	 * lock, and releasing the locks below publishes it. */
	atomic_store_explicit(&s->snap_active, 1, memory_order_relaxed);
	for (unsigned i = s->nshards; i-- > 0;)
		shard_unlock(store_shard(s, i));
	return 0;
}

struct dump_ctx {
	const struct shard *sh;
	unsigned db;
	store_snap_fn fn;
	void *ctx;
};

static void dump_live(struct entry *e, void *arg)
{
	struct dump_ctx *dc = arg;
	if (e->version > dc->sh->snap_version)
		return;
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	if (dc->sh->snap && set_find(dc->sh->snap, dc->db, zr_hash(key, klen), key, klen))
		return;
	dc->fn(dc->db, e, dc->ctx);
}

void store_snap_dump(struct store *s, unsigned shard, store_snap_fn fn, void *ctx)
{
	struct shard *sh = store_shard(s, shard);
	shard_lock(sh);
	if (sh->snap_pending) {
		for (unsigned db = 0; db < s->ndb; db++) {
			struct snap_set *set = sh->snap;
			for (size_t i = 0; set && i <= set->mask; i++)
				for (struct snap_pre *p = set->tab[i]; p; p = p->next)
					if (p->db == db && p->e)
						fn(db, p->e, ctx);
			if (set && set->frozen[db])
				continue;
			struct dump_ctx dc = { sh, db, fn, ctx };
			dict_foreach(&sh->db[db], dump_live, &dc);
		}
		sh->snap_pending = false;
		set_free(s, sh);
	}
	shard_unlock(sh);
}

void store_snap_end(struct store *s)
{
	for (unsigned i = 0; i < s->nshards; i++) {
		struct shard *sh = store_shard(s, i);
		shard_lock(sh);
		sh->snap_pending = false;
		set_free(s, sh);
		shard_unlock(sh);
	}
	atomic_store_explicit(&s->snap_active, 0, memory_order_relaxed);
}

void store_snap_stats(struct store *s, struct store_snap_stats *out)
{
	int64_t b = atomic_load_explicit(&s->snap_bytes, memory_order_relaxed);
	out->bytes = b > 0 ? (uint64_t)b : 0;
	int64_t p = atomic_load_explicit(&s->snap_peak, memory_order_relaxed);
	out->peak = p > 0 ? (uint64_t)p : 0;
	out->entries = atomic_load_explicit(&s->snap_entries, memory_order_relaxed);
}
