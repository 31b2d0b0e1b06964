/* meta — entries' metadata blocks and the label / entity indexes (see
 * meta.h and store.h). Everything runs under the shard lock of the keys
 * concerned. */
#include "zarisd/store/meta.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"
#include "zarisd/store/strtab.h"

#define META_ENTITY 0x1
#define META_CTYPE 0x2

/* One allocation: the entity bytes, the content-type bytes, then each
 * label as a u32 length and its bytes. Invariants: labels are distinct
 * and non-empty; a block always holds at least one field (an entry with
 * nothing has no block and no md bit). */
struct store_meta {
	uint32_t size;	  /* bytes of data[] */
	uint16_t nlabels; /* labels in data[] */
	uint8_t flags;	  /* META_ENTITY, META_CTYPE */
	uint32_t elen;	  /* entity bytes (0 without META_ENTITY) */
	uint32_t clen;	  /* content-type bytes */
	char data[];
};

/* The index of one dict: for each kind, name -> (struct strtab * of keys),
 * the pointer kept as the node's 8-byte value. */
struct meta_index {
	struct strtab by[2]; /* [enum store_meta_kind] */
};

/* --- the block -------------------------------------------------------------- */

static bool labels_seen(const struct store_meta_fields *f, unsigned i)
{
	for (unsigned j = 0; j < i; j++)
		if (f->label_lens[j] == f->label_lens[i] &&
		    !memcmp(f->labels[j], f->labels[i], f->label_lens[i]))
			return true;
	return false;
}

int meta_build(const struct store_meta_fields *f, struct store_meta **out)
{
	*out = NULL;
	if (!f || (!f->nlabels && !f->entity && !f->ctype))
		return 0;
	size_t size = (f->entity ? f->entity_len : 0) + (f->ctype ? f->ctype_len : 0);
	unsigned n = 0;
	for (unsigned i = 0; i < f->nlabels; i++)
		if (!labels_seen(f, i)) {
			size += 4 + f->label_lens[i];
			n++;
		}
	assert(n <= UINT16_MAX && size <= UINT32_MAX);
	struct store_meta *m = zr_try_malloc(sizeof(*m) + size);
	if (!m)
		return -ENOMEM;
	m->size = (uint32_t)size;
	m->nlabels = (uint16_t)n;
	m->flags = (f->entity ? META_ENTITY : 0) | (f->ctype ? META_CTYPE : 0);
	m->elen = f->entity ? (uint32_t)f->entity_len : 0;
	m->clen = f->ctype ? (uint32_t)f->ctype_len : 0;
	char *p = m->data;
	if (m->elen)
		memcpy(p, f->entity, m->elen);
	p += m->elen;
	if (m->clen)
		memcpy(p, f->ctype, m->clen);
	p += m->clen;
	for (unsigned i = 0; i < f->nlabels; i++) {
		if (labels_seen(f, i))
			continue;
		uint32_t l = (uint32_t)f->label_lens[i];
		memcpy(p, &l, 4);
		memcpy(p + 4, f->labels[i], l);
		p += 4 + l;
	}
	*out = m;
	return 0;
}

struct store_meta *meta_dup(const struct store_meta *m)
{
	if (!m)
		return NULL;
	struct store_meta *c = zr_malloc(sizeof(*m) + m->size);
	memcpy(c, m, sizeof(*m) + m->size);
	return c;
}

void meta_free(struct store_meta *m)
{
	zr_free(m);
}

size_t meta_bytes(const struct store_meta *m)
{
	return m ? zr_usable((void *)m) : 0;
}

/* Walks M's labels: *AT (start 0) is the offset in data[] of the next. */
static const char *label_at(const struct store_meta *m, size_t *at, size_t *len)
{
	uint32_t l;
	memcpy(&l, m->data + *at, 4);
	*len = l;
	const char *p = m->data + *at + 4;
	*at += 4 + l;
	return p;
}

static size_t labels_off(const struct store_meta *m)
{
	return m->elen + m->clen;
}

/* --- accessors (store.h) ---------------------------------------------------- */

bool entry_has_meta(const struct entry *e)
{
	return entry_has_meta_raw(e);
}

static const struct store_meta *meta_of(const struct entry *e)
{
	return entry_has_meta_raw(e) ? entry_meta_ptr_raw(e) : NULL;
}

unsigned entry_meta_nlabels(const struct entry *e)
{
	const struct store_meta *m = meta_of(e);
	return m ? m->nlabels : 0;
}

const char *entry_meta_label(const struct entry *e, unsigned i, size_t *len)
{
	const struct store_meta *m = meta_of(e);
	assert(m && i < m->nlabels);
	size_t at = labels_off(m);
	const char *p = NULL;
	for (unsigned j = 0; j <= i; j++)
		p = label_at(m, &at, len);
	return p;
}

bool entry_meta_has_label(const struct entry *e, const char *l, size_t llen)
{
	const struct store_meta *m = meta_of(e);
	if (!m)
		return false;
	size_t at = labels_off(m), n;
	for (unsigned j = 0; j < m->nlabels; j++) {
		const char *p = label_at(m, &at, &n);
		if (n == llen && !memcmp(p, l, n))
			return true;
	}
	return false;
}

const char *entry_meta_entity(const struct entry *e, size_t *len)
{
	const struct store_meta *m = meta_of(e);
	if (!m || !(m->flags & META_ENTITY))
		return NULL;
	*len = m->elen;
	return m->data;
}

const char *entry_meta_ctype(const struct entry *e, size_t *len)
{
	const struct store_meta *m = meta_of(e);
	if (!m || !(m->flags & META_CTYPE))
		return NULL;
	*len = m->clen;
	return m->data + m->elen;
}

void entry_meta_fields(const struct entry *e, struct store_meta_fields *f, const char **labels, size_t *lens)
{
	memset(f, 0, sizeof(*f));
	const struct store_meta *m = meta_of(e);
	if (!m)
		return;
	size_t at = labels_off(m);
	for (unsigned j = 0; j < m->nlabels; j++)
		labels[j] = label_at(m, &at, &lens[j]);
	f->nlabels = m->nlabels;
	f->labels = labels;
	f->label_lens = lens;
	f->entity = entry_meta_entity(e, &f->entity_len);
	f->ctype = entry_meta_ctype(e, &f->ctype_len);
}

/* --- the index ---------------------------------------------------------------- */

static struct strtab *keys_of_node(const struct strtab_node *n)
{
	size_t vlen;
	const char *v = strtab_val(n, &vlen);
	struct strtab *t;
	assert(vlen == sizeof(t));
	memcpy(&t, v, sizeof(t));
	return t;
}

/* The key table of NAME in D's index of KIND, or NULL. */
static struct strtab *index_keys(const struct dict *d, enum store_meta_kind kind, const char *name,
				 size_t nlen)
{
	if (!d->mx)
		return NULL;
	struct strtab_node *n = strtab_find(&d->mx->by[kind], name, nlen);
	return n ? keys_of_node(n) : NULL;
}

static void index_add(struct dict *d, enum store_meta_kind kind, const char *name, size_t nlen,
		      const char *key, size_t klen)
{
	if (!d->mx) {
		d->mx = zr_malloc(sizeof(*d->mx));
		strtab_init(&d->mx->by[0]);
		strtab_init(&d->mx->by[1]);
	}
	struct strtab *t = index_keys(d, kind, name, nlen);
	if (!t) {
		t = zr_malloc(sizeof(*t));
		strtab_init(t);
		/* the index is the store's own bookkeeping: an allocation
		 * failure here is an internal one (abort), as for buckets */
		int r = strtab_set(&d->mx->by[kind], name, nlen, (const char *)&t, sizeof(t));
		assert(r == 1);
		(void)r;
	}
	int r = strtab_add(t, key, klen);
	assert(r >= 0);
	(void)r;
}

static void index_del(struct dict *d, enum store_meta_kind kind, const char *name, size_t nlen,
		      const char *key, size_t klen)
{
	struct strtab *t = index_keys(d, kind, name, nlen);
	assert(t);
	bool was = strtab_delete(t, key, klen);
	assert(was);
	(void)was;
	if (t->count)
		return;
	strtab_free(t);
	strtab_delete(&d->mx->by[kind], name, nlen);
	if (!d->mx->by[0].count && !d->mx->by[1].count) {
		strtab_clear(&d->mx->by[0]);
		strtab_clear(&d->mx->by[1]);
		ZR_FREE(d->mx);
	}
}

void meta_index_entry(struct dict *d, const struct entry *e, bool add)
{
	const struct store_meta *m = entry_meta_ptr_raw(e);
	assert(entry_has_meta_raw(e) && m);
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	if (m->flags & META_ENTITY)
		(add ? index_add : index_del)(d, STORE_META_ENTITY, m->data, m->elen, key, klen);
	size_t at = labels_off(m), n;
	for (unsigned j = 0; j < m->nlabels; j++) {
		const char *l = label_at(m, &at, &n);
		(add ? index_add : index_del)(d, STORE_META_LABEL, l, n, key, klen);
	}
}

void meta_index_free(struct dict *d)
{
	if (!d->mx)
		return;
	for (int k = 0; k < 2; k++) {
		struct strtab_iter it;
		strtab_iter_init(&it, &d->mx->by[k]);
		for (struct strtab_node *n; (n = strtab_next(&it));)
			strtab_free(keys_of_node(n));
		strtab_clear(&d->mx->by[k]);
	}
	ZR_FREE(d->mx);
}

/* --- setting metadata ------------------------------------------------------------- */

int store_meta_set_locked(struct store *s, unsigned db, struct entry **ep, const struct store_meta_fields *f)
{
	struct entry *e = *ep;
	size_t klen;
	const char *key = entry_key_raw(e, &klen);
	uint64_t h = store_key_hash(key, klen);
	struct shard *shd = store_shard(s, store_shard_index(s, h));
	struct dict *d = &shd->db[db];
	struct store_meta *m;
	int r = meta_build(f, &m);
	if (r < 0)
		return r;
	store_snap_touch(s, shd, db, e);
	if (entry_has_meta_raw(e) && m) {
		/* same shape: swap the block */
		meta_index_entry(d, e, false);
		meta_free(entry_meta_ptr_raw(e));
		entry_set_meta_ptr_raw(e, m);
		meta_index_entry(d, e, true);
	} else if (entry_has_meta_raw(e) || m) {
		struct store_meta *old = entry_has_meta_raw(e) ? entry_meta_ptr_raw(e) : NULL;
		if (old)
			meta_index_entry(d, e, false);
		struct entry *ne = store_reshape_meta_locked(d, h, e, m);
		if (!ne) {
			if (old)
				meta_index_entry(d, e, true);
			meta_free(m);
			return -ENOMEM;
		}
		meta_free(old);
		e = ne;
		if (m)
			meta_index_entry(d, e, true);
	}
	e->version = shard_next_version(s, shd);
	*ep = e;
	return 0;
}

/* --- scan and invalidation ----------------------------------------------------------- */

struct meta_visit {
	struct dict *d;
	int64_t now_ms;
	store_visit_fn fn;
	void *ctx;
};

static void visit_key(const struct strtab_node *n, void *arg)
{
	struct meta_visit *mv = arg;
	size_t klen;
	const char *key = strtab_key(n, &klen);
	struct entry **link = dict_find(mv->d, store_key_hash(key, klen), key, klen);
	assert(link);
	struct entry *e = *link;
	if (entry_has_ttl(e) && entry_ttl_raw(e) < mv->now_ms)
		return;
	mv->fn(e, mv->ctx);
}

int store_meta_scan(struct store *s, unsigned db, enum store_meta_kind kind, const char *name, size_t nlen,
		    uint64_t *cursor, int64_t now_ms, store_visit_fn fn, void *ctx)
{
	unsigned shard = (unsigned)(*cursor & (s->nshards - 1));
	uint64_t v = *cursor >> s->bits;
	for (;;) {
		struct dict *d = store_dict(s, db, shard);
		if (dict_keys(d)) {
			struct shard *sh = store_shard(s, shard);
			if (!shard_lock_walk(sh))
				return -EBUSY;
			struct strtab *t = index_keys(d, kind, name, nlen);
			struct meta_visit mv = { d, now_ms, fn, ctx };
			v = t ? strtab_scan(t, v, visit_key, &mv) : 0;
			shard_unlock(sh);
			if (v) {
				*cursor = (v << s->bits) | shard;
				return 0;
			}
			if (t) {
				*cursor = ++shard == s->nshards ? 0 : shard;
				return 0;
			}
		}
		v = 0;
		if (++shard == s->nshards) {
			*cursor = 0;
			return 0;
		}
	}
}

uint64_t store_meta_invalidate_locked(struct store *s, unsigned db, unsigned shard, const char *label,
				      size_t llen, const char *entity, size_t elen, int64_t now_ms,
				      store_key_fn fn, void *ctx)
{
	STORE_ASSERT_HELD(store_shard(s, shard));
	struct dict *d = store_dict(s, db, shard);
	struct strtab *t = index_keys(d, STORE_META_LABEL, label, llen);
	if (!t)
		return 0;
	/* Copy the keys out first: each deletion edits this very table (and
	 * frees it with the last key). */
	uint64_t n = t->count;
	struct keyref {
		char *key;
		size_t klen;
	} *keys = zr_malloc(n * sizeof(*keys));
	uint64_t k = 0;
	struct strtab_iter it;
	strtab_iter_init(&it, t);
	for (struct strtab_node *node; (node = strtab_next(&it));) {
		size_t kl;
		const char *key = strtab_key(node, &kl);
		if (entity) {
			struct entry **link = dict_find(d, store_key_hash(key, kl), key, kl);
			size_t el;
			const char *en = link ? entry_meta_entity(*link, &el) : NULL;
			if (!en || el != elen || memcmp(en, entity, elen))
				continue;
		}
		keys[k].key = zr_malloc(kl ? kl : 1);
		memcpy(keys[k].key, key, kl);
		keys[k].klen = kl;
		k++;
	}
	uint64_t deleted = 0;
	for (uint64_t i = 0; i < k; i++) {
		if (store_delete_locked(s, db, keys[i].key, keys[i].klen, now_ms)) {
			deleted++;
			if (fn)
				fn(db, keys[i].key, keys[i].klen, ctx);
		}
		zr_free(keys[i].key);
	}
	zr_free(keys);
	return deleted;
}
