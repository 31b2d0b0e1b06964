/* ops — single-key operations of the store: find (with lazy expiry), set,
 * delete, TTL changes, resize, rename and copy. The caller holds the shard
 * lock of every key named (see store.h). The hot paths: a GET is one hash,
 * one bucket walk, no allocation; a SET of a new key is one allocation; a
 * SET over an existing string whose new size fits the old block rewrites it
 * in place and allocates nothing. */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/meta.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"

static inline struct shard *shard_of_hash(const struct store *s, uint64_t h)
{
	return store_shard(s, store_shard_index(s, h));
}

static inline uint64_t key_hash_of(const struct entry *e)
{
	size_t klen;
	const char *k = entry_key_raw(e, &klen);
	return store_key_hash(k, klen);
}

static void free_value(struct store *s, const struct entry *e)
{
	unsigned t = entry_type_raw(e);
	if (t == STORE_TYPE_STRING)
		return;
	void *obj = entry_obj_raw(e);
	if (obj) {
		assert(s->ops[t] && s->ops[t]->free);
		s->ops[t]->free(obj);
	}
}

/* Frees E's metadata block, if any (not its index entries). */
static void free_meta(struct entry *e)
{
	if (entry_has_meta_raw(e))
		meta_free(entry_meta_ptr_raw(e)); /* NULL when handed on */
}

/* store_entry_free without counting a change: for an entry replaced by
 * a new block of the same key (that write is counted by its stamp). */
static void entry_release(struct store *s, struct dict *d, struct entry *e)
{
	dict_bytes_add(d, -(int64_t)zr_usable(e));
	if (store_snap_on(s) && store_snap_retain(s, d, e))
		return; /* the running snapshot keeps it (and its metadata) as its pre-image */
	free_value(s, e);
	free_meta(e);
	zr_free(e);
}

void store_entry_free(struct store *s, struct dict *d, struct entry *e)
{
	store_write_count("a delete");
	entry_release(s, d, e);
}

void store_unlink_free(struct store *s, struct dict *d, uint64_t h, struct entry **link)
{
	struct entry *e = *link;
	if (entry_has_meta_raw(e))
		meta_index_entry(d, e, false);
	dict_unlink(d, h, link);
	if (entry_has_ttl(e))
		dict_vol_del(d, e);
	store_entry_free(s, d, e);
}

void store_expire_locked(struct store *s, struct shard *sh, unsigned db, uint64_t h, struct entry **link)
{
	STORE_ASSERT_HELD(sh);
	store_write_require("an expiry");
	struct dict *d = &sh->db[db];
	struct entry *e = *link;
	store_event(s, STORE_EVENT_EXPIRED, db, e);
	store_deleted(s, STORE_EVENT_EXPIRED, db, e);
	if (entry_has_meta_raw(e))
		meta_index_entry(d, e, false);
	dict_unlink(d, h, link);
	dict_vol_del(d, e);
	entry_release(s, d, e);
	shard_count(&sh->expired, 1);
}

/* --- find ---------------------------------------------------------------------- */

struct entry *store_find_h_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t h,
				  int64_t now_ms, int flags)
{
	struct shard *sh = shard_of_hash(s, h);
	STORE_ASSERT_HELD(sh);
	struct dict *d = &sh->db[db];
	struct entry **link = dict_find(d, h, key, klen);
	struct entry *e = link ? *link : NULL;
	if (e && entry_has_ttl(e) && entry_ttl_raw(e) < now_ms) {
		/* Redis's keyIsExpired: a key is gone once now > its TTL. A
		 * replica hides it and waits for its primary's DEL (Redis's
		 * expireIfNeeded on a replica). */
		if (!(flags & STORE_LOOKUP_NOEXPIRE) && !store_is_replica(s))
			store_expire_locked(s, sh, db, h, link);
		e = NULL;
	}
	if (!(flags & STORE_LOOKUP_NOSTATS))
		shard_count(e ? &sh->hits : &sh->misses, 1);
	if (e && !(flags & STORE_LOOKUP_NOTOUCH))
		store_touch(s, e);
	/* a writing command may change the value in place after this */
	if (e && store_write_intends())
		store_snap_touch(s, sh, db, e);
	return e;
}

struct entry *store_find_locked(struct store *s, unsigned db, const char *key, size_t klen, int64_t now_ms,
				int flags)
{
	return store_find_h_locked(s, db, key, klen, store_key_hash(key, klen), now_ms, flags);
}

/* --- set ----------------------------------------------------------------------- */

/* Rewrites OLD in place with shape SH (OLD's block is big enough). */
static void rewrite_in_place(struct store *s, struct dict *d, struct entry *old, const struct entry_shape *sh,
			     uint32_t lru, size_t klen, const void *val, size_t vlen, void *obj, bool has_ttl,
			     int64_t ttl)
{
	bool old_ttl = entry_has_ttl(old);
	if (old_ttl && !has_ttl)
		dict_vol_del(d, old);
	free_value(s, old);
	/* the metadata stays (a value rewrite keeps it); its pointer follows
	 * the value, which may change length */
	struct store_meta *m = entry_has_meta_raw(old) ? entry_meta_ptr_raw(old) : NULL;
	size_t okoff = entry_koff(old);
	if (okoff != sh->koff)
		memmove((char *)old + sh->koff, (char *)old + okoff, klen);
	entry_write_header(old, sh, lru, klen, vlen);
	if (m)
		entry_set_meta_ptr_raw(old, m);
	if (obj)
		memcpy((char *)old + sh->voff, &obj, sizeof(obj));
	else if (vlen)
		memcpy((char *)old + sh->voff, val, vlen);
	if (has_ttl) {
		entry_set_ttl_raw(old, ttl);
		if (!old_ttl)
			dict_vol_add(d, old); /* writes vidx */
	}
}

/* Creates or replaces KEY with a string (OBJ NULL) or an object of TYPE. */
static int set_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t h, unsigned type,
		      const void *val, size_t vlen, void *obj, int64_t expire_ms, int flags,
		      struct entry **out)
{
	struct shard *shd = shard_of_hash(s, h);
	STORE_ASSERT_HELD(shd);
	struct dict *d = &shd->db[db];
	struct entry **link = dict_find(d, h, key, klen);
	struct entry *old = link ? *link : NULL;
	if (old && entry_has_ttl(old) && entry_ttl_raw(old) < store_write_now() && !store_is_replica(s)) {
		/* Redis's setKey looks the key up for writing: an expired one
		 * is expired first (counted, notified, its DEL journaled before
		 * this write's record), then the key is new */
		store_expire_locked(s, shd, db, h, link);
		old = NULL;
	}
	bool keep = (flags & STORE_SET_KEEPTTL) && old && entry_has_ttl(old);
	int64_t ttl = keep ? entry_ttl_raw(old) : expire_ms;
	bool has_ttl = keep || expire_ms >= 0;
	/* a value rewrite keeps the key's metadata (store.h) */
	bool md = old && entry_has_meta_raw(old);
	struct entry_shape sh = entry_shape_of_md(type, has_ttl, md, klen, vlen, flags & STORE_SET_RAW);

	if (old) {
		uint32_t lru = store_lru_overwrite(s, old);
		/* entry_shape_of_entry(old).size, from the offsets already there */
		size_t osize =
			(size_t)(entry_val_raw(old) - (const char *)old) +
			(entry_type_raw(old) == STORE_TYPE_STRING ? entry_vlen_raw(old) : sizeof(void *));
		bool aliased = (const char *)val >= (const char *)old &&
			       (const char *)val < (const char *)old + osize;
		bool same_obj =
			type != STORE_TYPE_STRING && entry_type_raw(old) == type && entry_obj_raw(old) == obj;
		/* Reuse the block when the new entry fits without wasting more
		 * than half of it (same or next jemalloc class). A shape of the
		 * old entry's size passes without asking the allocator (a lookup
		 * per SET): every block is at most twice its entry's shape, as
		 * each allocation and reuse here and in string_resize keeps. */
		size_t usable = 0;
		if (!aliased && !same_obj &&
		    (sh.size == osize || (sh.size <= (usable = zr_usable(old)) && sh.size * 2 >= usable))) {
			store_snap_touch(s, shd, db, old);
			rewrite_in_place(s, d, old, &sh, lru, klen, val, vlen, obj, has_ttl, ttl);
			old->version = shard_next_version(s, shd);
			if (out)
				*out = old;
			return 0;
		}
		struct entry *ne = zr_try_malloc(sh.size);
		if (!ne)
			return -ENOMEM;
		entry_init(ne, &sh, lru, klen, vlen, key);
		if (obj)
			memcpy((char *)ne + sh.voff, &obj, sizeof(obj));
		else if (vlen)
			memcpy((char *)ne + sh.voff, val, vlen);
		dict_bytes_add(d, (int64_t)zr_usable(ne));
		ne->next = old->next;
		*link = ne;
		if (entry_has_ttl(old)) {
			if (has_ttl) {
				entry_set_vidx(ne, entry_vidx(old));
				dict_vol_moved(d, ne);
			} else {
				dict_vol_del(d, old);
			}
		} else if (has_ttl) {
			dict_vol_add(d, ne);
		}
		if (has_ttl)
			entry_set_ttl_raw(ne, ttl);
		if (md) {
			/* the block moves to NE; a running snapshot may keep OLD
			 * as its pre-image, with a copy of its own */
			struct store_meta *m = entry_meta_ptr_raw(old);
			if (store_snap_on(s) && !same_obj) {
				entry_set_meta_ptr_raw(ne, meta_dup(m));
			} else {
				entry_set_meta_ptr_raw(ne, m);
				entry_set_meta_ptr_raw(old, NULL);
			}
		}
		if (same_obj) {
			/* The new entry owns OBJ now: free only the old block. */
			dict_bytes_add(d, -(int64_t)zr_usable(old));
			zr_free(old);
		} else {
			entry_release(s, d, old); /* a replacement: one change, stamped below */
		}
		ne->version = shard_next_version(s, shd);
		if (out)
			*out = ne;
		return 0;
	}

	struct entry *ne = zr_try_malloc(sh.size);
	if (!ne)
		return -ENOMEM;
	entry_init(ne, &sh, store_lru_new(s), klen, vlen, key);
	if (obj)
		memcpy((char *)ne + sh.voff, &obj, sizeof(obj));
	else if (vlen)
		memcpy((char *)ne + sh.voff, val, vlen);
	dict_bytes_add(d, (int64_t)zr_usable(ne));
	dict_add(d, h, ne);
	if (has_ttl) {
		entry_set_ttl_raw(ne, ttl);
		dict_vol_add(d, ne);
	}
	store_event(s, STORE_EVENT_NEW, db, ne);
	ne->version = shard_next_version(s, shd);
	if (out)
		*out = ne;
	return 0;
}

int store_set_string_h_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t h,
			      const char *val, size_t vlen, int64_t expire_ms, int flags, struct entry **out)
{
	return set_locked(s, db, key, klen, h, STORE_TYPE_STRING, val, vlen, NULL, expire_ms, flags, out);
}

int store_set_string_locked(struct store *s, unsigned db, const char *key, size_t klen, const char *val,
			    size_t vlen, int64_t expire_ms, int flags, struct entry **out)
{
	return set_locked(s, db, key, klen, store_key_hash(key, klen), STORE_TYPE_STRING, val, vlen, NULL,
			  expire_ms, flags, out);
}

int store_set_object_locked(struct store *s, unsigned db, const char *key, size_t klen, enum store_type type,
			    void *obj, int64_t expire_ms, int flags, struct entry **out)
{
	assert(type > STORE_TYPE_STRING && type < STORE_TYPE_COUNT && obj);
	return set_locked(s, db, key, klen, store_key_hash(key, klen), type, NULL, 0, obj, expire_ms, flags,
			  out);
}

/* --- reshaping an entry ---------------------------------------------------------- */

/* Rebuilds E0 (in D, hash H) into a new block with TTL presence TTL (value
 * AT) and, for strings, value length NEWVLEN (value kept up to the shorter
 * length, the rest zero), marked raw when RAW (entry_layout.h). Returns
 * the new entry, or NULL (E0 untouched) when the allocation failed. */
static struct entry *reshape_md(struct dict *d, uint64_t h, struct entry *e0, bool ttl, int64_t at,
				size_t newvlen, bool raw, bool md, struct store_meta *m)
{
	unsigned type = entry_type_raw(e0);
	size_t klen;
	const char *key = entry_key_raw(e0, &klen);
	struct entry_shape sh = entry_shape_of_md(type, ttl, md, klen, newvlen, raw);
	struct entry *ne = zr_try_malloc(sh.size);
	if (!ne)
		return NULL;
	entry_init(ne, &sh, entry_lru_raw(e0), klen, newvlen, key);
	if (md)
		entry_set_meta_ptr_raw(ne, m);
	ne->version = e0->version;
	const char *ov = entry_val_raw(e0);
	if (type == STORE_TYPE_STRING) {
		size_t ovlen = entry_vlen_raw(e0);
		size_t keep = ovlen < newvlen ? ovlen : newvlen;
		memcpy((char *)ne + sh.voff, ov, keep);
		memset((char *)ne + sh.voff + keep, 0, newvlen - keep);
	} else {
		memcpy((char *)ne + sh.voff, ov, sizeof(void *));
	}
	struct entry **link = dict_link_of(d, h, e0);
	ne->next = e0->next;
	*link = ne;
	bool old_ttl = entry_has_ttl(e0);
	if (ttl) {
		entry_set_ttl_raw(ne, at);
		if (old_ttl) {
			entry_set_vidx(ne, entry_vidx(e0));
			dict_vol_moved(d, ne);
		} else {
			dict_vol_add(d, ne);
		}
	} else if (old_ttl) {
		dict_vol_del(d, e0);
	}
	dict_bytes_add(d, (int64_t)zr_usable(ne) - (int64_t)zr_usable(e0));
	zr_free(e0);
	return ne;
}

/* reshape_md keeping E0's metadata block (handed on to the new entry). */
static struct entry *reshape(struct dict *d, uint64_t h, struct entry *e0, bool ttl, int64_t at,
			     size_t newvlen, bool raw)
{
	bool md = entry_has_meta_raw(e0);
	return reshape_md(d, h, e0, ttl, at, newvlen, raw, md, md ? entry_meta_ptr_raw(e0) : NULL);
}

struct entry *store_reshape_meta_locked(struct dict *d, uint64_t h, struct entry *e, struct store_meta *m)
{
	size_t vlen = entry_type_raw(e) == STORE_TYPE_STRING ? entry_vlen_raw(e) : 0;
	return reshape_md(d, h, e, entry_has_ttl(e), entry_has_ttl(e) ? entry_ttl_raw(e) : -1, vlen,
			  entry_string_is_raw(e), m != NULL, m);
}

/* store_string_resize_locked (RAW: an in-place edit, marked raw) and
 * store_string_overwrite_locked (a whole new value: unmarked). */
static char *string_resize(struct store *s, unsigned db, struct entry **ep, size_t newlen, bool raw)
{
	struct entry *e = *ep;
	assert(entry_type_raw(e) == STORE_TYPE_STRING);
	uint64_t h = key_hash_of(e);
	struct shard *shd = shard_of_hash(s, h);
	struct dict *d = &shd->db[db];
	store_snap_touch(s, shd, db, e);
	size_t klen = entry_klen_raw(e), oldlen = entry_vlen_raw(e);
	struct entry_shape sh = entry_shape_of_md(STORE_TYPE_STRING, entry_has_ttl(e), entry_has_meta_raw(e),
						  klen, newlen, raw);
	/* the metadata pointer follows the value: read before the block
	 * changes, put back after the new length (entry_layout.h) */
	struct store_meta *m = entry_has_meta_raw(e) ? entry_meta_ptr_raw(e) : NULL;
	if (sh.meta != (e->meta & ~ENTRY_LRU_MASK)) {
		/* The length field changes size (or the raw mark): key and value move. */
		e = reshape(d, h, e, entry_has_ttl(e), entry_has_ttl(e) ? entry_ttl_raw(e) : -1, newlen, raw);
		if (!e)
			return NULL;
	} else {
		size_t usable = zr_usable(e);
		if (sh.size > usable || sh.size * 2 < usable) {
			struct entry **link = dict_link_of(d, h, e);
			struct entry *ne = zr_try_realloc(e, sh.size);
			if (!ne)
				return NULL;
			dict_bytes_add(d, (int64_t)zr_usable(ne) - (int64_t)usable);
			if (ne != e) {
				*link = ne;
				if (entry_has_ttl(ne))
					dict_vol_moved(d, ne);
			}
			e = ne;
		}
		if (newlen > oldlen)
			memset((char *)e + sh.voff + oldlen, 0, newlen - oldlen);
		entry_write_header(e, &sh, entry_lru_raw(e), klen, newlen);
		if (m)
			entry_set_meta_ptr_raw(e, m);
	}
	e->version = shard_next_version(s, shd);
	*ep = e;
	return entry_val_raw(e);
}

char *store_string_resize_locked(struct store *s, unsigned db, struct entry **ep, size_t newlen)
{
	return string_resize(s, db, ep, newlen, true);
}

char *store_string_overwrite_locked(struct store *s, unsigned db, struct entry **ep, size_t newlen)
{
	return string_resize(s, db, ep, newlen, false);
}

void store_modified_locked(struct store *s, unsigned db, struct entry *e)
{
	(void)db;
	size_t klen;
	const char *k = entry_key_raw(e, &klen);
	/* the shard is the slot's: no need for the bucket part of the hash */
	e->version = shard_next_version(s, store_shard(s, store_shard_of_slot(s, zr_key_slot(k, klen))));
}

/* --- delete ---------------------------------------------------------------------- */

bool store_delete_h_locked(struct store *s, unsigned db, const char *key, size_t klen, uint64_t h,
			   int64_t now_ms)
{
	struct shard *sh = shard_of_hash(s, h);
	STORE_ASSERT_HELD(sh);
	struct dict *d = &sh->db[db];
	struct entry **link = dict_find(d, h, key, klen);
	if (!link)
		return false;
	/* On a replica an expired key is deleted as a live one: its
	 * primary's DEL (Redis's replica: the master client's lookups never
	 * see a key expired, and dbSyncDelete counts it) */
	if (entry_has_ttl(*link) && entry_ttl_raw(*link) < now_ms && !store_is_replica(s)) {
		store_expire_locked(s, sh, db, h, link);
		return false;
	}
	store_unlink_free(s, d, h, link);
	return true;
}

bool store_delete_locked(struct store *s, unsigned db, const char *key, size_t klen, int64_t now_ms)
{
	return store_delete_h_locked(s, db, key, klen, store_key_hash(key, klen), now_ms);
}

void store_delete_entry_locked(struct store *s, unsigned db, struct entry *e)
{
	uint64_t h = key_hash_of(e);
	STORE_ASSERT_HELD(shard_of_hash(s, h));
	struct dict *d = &shard_of_hash(s, h)->db[db];
	store_unlink_free(s, d, h, dict_link_of(d, h, e));
}

/* --- TTL --------------------------------------------------------------------------- */

int store_set_expire_locked(struct store *s, unsigned db, struct entry **ep, int64_t at_ms)
{
	struct entry *e = *ep;
	uint64_t h = key_hash_of(e);
	struct shard *shd = shard_of_hash(s, h);
	struct dict *d = &shd->db[db];
	if (at_ms < 0 && !entry_has_ttl(e))
		return 0;
	store_snap_touch(s, shd, db, e);
	if (at_ms >= 0 && entry_has_ttl(e)) {
		entry_set_ttl_raw(e, at_ms);
	} else {
		size_t vlen = entry_type_raw(e) == STORE_TYPE_STRING ? entry_vlen_raw(e) : 0;
		struct entry *ne = reshape(d, h, e, at_ms >= 0, at_ms, vlen, entry_string_is_raw(e));
		if (!ne)
			return -ENOMEM;
		e = ne;
	}
	e->version = shard_next_version(s, shd);
	*ep = e;
	return 0;
}

/* --- rename, move, copy --------------------------------------------------------- */

/* Builds a copy of E under NEWKEY with value bytes VAL (strings) or OBJ. */
static struct entry *entry_clone(const struct entry *e, const char *newkey, size_t newklen, void *obj,
				 uint32_t lru, struct store_meta *m)
{
	unsigned type = entry_type_raw(e);
	bool ttl = entry_has_ttl(e);
	size_t vlen = type == STORE_TYPE_STRING ? entry_vlen_raw(e) : 0;
	/* RENAME and MOVE keep Redis's object, COPY dups a raw one as raw */
	struct entry_shape sh =
		entry_shape_of_md(type, ttl, entry_has_meta_raw(e), newklen, vlen, entry_string_is_raw(e));
	struct entry *ne = zr_try_malloc(sh.size);
	if (!ne)
		return NULL;
	entry_init(ne, &sh, lru, newklen, vlen, newkey);
	if (type == STORE_TYPE_STRING)
		memcpy((char *)ne + sh.voff, entry_val_raw(e), vlen);
	else
		memcpy((char *)ne + sh.voff, &obj, sizeof(obj));
	if (ttl)
		entry_set_ttl_raw(ne, entry_ttl_raw(e));
	if (entry_has_meta_raw(e))
		entry_set_meta_ptr_raw(ne, m);
	return ne;
}

/* Inserts NE (key hash HD) into DD (database DB), replacing any entry with
 * its key. Reported as a new key even when one was replaced: Redis's
 * RENAME / COPY REPLACE delete the target, then dbAdd. */
static void insert_replacing(struct store *s, unsigned db, struct dict *dd, uint64_t hd, struct entry *ne)
{
	size_t klen;
	const char *key = entry_key_raw(ne, &klen);
	struct entry **dl = dict_find(dd, hd, key, klen);
	if (dl)
		store_unlink_free(s, dd, hd, dl);
	dict_bytes_add(dd, (int64_t)zr_usable(ne));
	dict_add(dd, hd, ne);
	if (entry_has_ttl(ne))
		dict_vol_add(dd, ne);
	store_event(s, STORE_EVENT_NEW, db, ne);
}

int store_rename_locked(struct store *s, unsigned src_db, struct entry *e, unsigned dst_db,
			const char *newkey, size_t newklen)
{
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	uint64_t hs = store_key_hash(key, klen), hd = store_key_hash(newkey, newklen);
	struct dict *ds = &shard_of_hash(s, hs)->db[src_db];
	struct shard *shd = shard_of_hash(s, hd);
	STORE_ASSERT_HELD(shard_of_hash(s, hs));
	STORE_ASSERT_HELD(shd);
	struct dict *dd = &shd->db[dst_db];
	bool samekey = klen == newklen && memcmp(key, newkey, klen) == 0;
	store_snap_touch(s, shard_of_hash(s, hs), src_db, e);

	if (samekey && src_db == dst_db) {
		e->version = shard_next_version(s, shd);
		return 0;
	}
	struct entry *ne = e;
	if (!samekey) {
		ne = entry_clone(e, newkey, newklen,
				 entry_type_raw(e) == STORE_TYPE_STRING ? NULL : entry_obj_raw(e),
				 entry_lru_raw(e), entry_has_meta_raw(e) ? entry_meta_ptr_raw(e) : NULL);
		if (!ne)
			return -ENOMEM;
	}
	/* Take E out of its dict (the value, if an object, and the metadata
	 * now belong to NE). */
	if (entry_has_meta_raw(e))
		meta_index_entry(ds, e, false);
	struct entry **link = dict_link_of(ds, hs, e);
	dict_unlink(ds, hs, link);
	if (entry_has_ttl(e))
		dict_vol_del(ds, e);
	dict_bytes_add(ds, -(int64_t)zr_usable(e));
	if (ne != e)
		zr_free(e);
	insert_replacing(s, dst_db, dd, hd, ne);
	if (entry_has_meta_raw(ne))
		meta_index_entry(dd, ne, true);
	ne->version = shard_next_version(s, shd);
	return 0;
}

int store_copy_locked(struct store *s, unsigned src_db, const struct entry *e, unsigned dst_db,
		      const char *newkey, size_t newklen)
{
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	if (src_db == dst_db && klen == newklen && memcmp(key, newkey, klen) == 0)
		return -EINVAL;
	STORE_ASSERT_HELD(shard_of_hash(s, store_key_hash(key, klen)));
	unsigned type = entry_type_raw(e);
	void *obj = NULL;
	if (type != STORE_TYPE_STRING) {
		assert(s->ops[type] && s->ops[type]->dup);
		obj = s->ops[type]->dup(entry_obj_raw(e));
		if (!obj)
			return -ENOMEM;
	}
	struct store_meta *m = entry_has_meta_raw(e) ? meta_dup(entry_meta_ptr_raw(e)) : NULL;
	struct entry *ne = entry_clone(e, newkey, newklen, obj, store_lru_new(s), m);
	if (!ne) {
		if (obj)
			s->ops[type]->free(obj);
		meta_free(m);
		return -ENOMEM;
	}
	uint64_t hd = store_key_hash(newkey, newklen);
	struct shard *shd = shard_of_hash(s, hd);
	insert_replacing(s, dst_db, &shd->db[dst_db], hd, ne);
	if (m)
		meta_index_entry(&shd->db[dst_db], ne, true);
	ne->version = shard_next_version(s, shd);
	return 0;
}
