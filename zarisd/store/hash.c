/* hash — see hash.h. */
#include "zarisd/store/hash.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"

struct hash *hash_new(void)
{
	struct hash *h = zr_malloc(sizeof(*h));
	h->enc = HASH_ENC_LISTPACK;
	strpack_init(&h->u.lp);
	return h;
}

void hash_free(struct hash *h)
{
	if (!h)
		return;
	if (h->enc == HASH_ENC_LISTPACK)
		strpack_clear(&h->u.lp);
	else
		strtab_free(h->u.ht);
	zr_free(h);
}

struct hash *hash_dup(const struct hash *h)
{
	struct hash *d = zr_malloc(sizeof(*d));
	d->enc = h->enc;
	if (h->enc == HASH_ENC_LISTPACK) {
		if (!strpack_dup(&d->u.lp, &h->u.lp)) {
			zr_free(d);
			return NULL;
		}
		return d;
	}
	d->u.ht = zr_malloc(sizeof(*d->u.ht));
	strtab_init(d->u.ht);
	strtab_expand(d->u.ht, h->u.ht->count);
	struct strtab_iter it;
	strtab_iter_init(&it, h->u.ht);
	for (struct strtab_node *n; (n = strtab_next(&it));) {
		size_t klen, vlen;
		const char *k = strtab_key(n, &klen), *v = strtab_val(n, &vlen);
		if (strtab_set(d->u.ht, k, klen, v, vlen) < 0) {
			hash_free(d);
			return NULL;
		}
	}
	return d;
}

uint64_t hash_len(const struct hash *h)
{
	return h->enc == HASH_ENC_LISTPACK ? h->u.lp.count / 2 : h->u.ht->count;
}

bool hash_get(const struct hash *h, const char *f, size_t flen, const char **v, size_t *vlen)
{
	if (h->enc == HASH_ENC_HASHTABLE) {
		struct strtab_node *n = strtab_find(h->u.ht, f, flen);
		if (!n)
			return false;
		*v = strtab_val(n, vlen);
		return true;
	}
	size_t off = strpack_find_pair(&h->u.lp, f, flen);
	if (off == STRPACK_END)
		return false;
	const char *s;
	size_t len;
	off = strpack_get(&h->u.lp, off, &s, &len);
	strpack_get(&h->u.lp, off, v, vlen);
	return true;
}

/* hashTypeConvert: listpack -> hashtable. -ENOMEM leaves H as it was. */
static int to_hashtable(struct hash *h)
{
	struct strtab *ht = zr_malloc(sizeof(*ht));
	strtab_init(ht);
	strtab_expand(ht, h->u.lp.count / 2 + 1);
	for (size_t off = 0; off < h->u.lp.bytes;) {
		const char *f, *v;
		size_t flen, vlen;
		off = strpack_get(&h->u.lp, off, &f, &flen);
		off = strpack_get(&h->u.lp, off, &v, &vlen);
		if (strtab_set(ht, f, flen, v, vlen) < 0) {
			strtab_free(ht);
			return -ENOMEM;
		}
	}
	strpack_clear(&h->u.lp);
	h->enc = HASH_ENC_HASHTABLE;
	h->u.ht = ht;
	return 0;
}

/* Sets a field of a listpack in place: 1 added, 0 replaced, -ENOMEM. */
static int pack_set(struct strpack *p, const char *f, size_t flen, const char *v, size_t vlen)
{
	size_t off = strpack_find_pair(p, f, flen);
	if (off != STRPACK_END) {
		const char *s;
		size_t len;
		off = strpack_get(p, off, &s, &len);
		return strpack_replace(p, off, v, vlen);
	}
	size_t bytes = p->bytes;
	uint32_t count = p->count;
	if (strpack_append(p, f, flen) < 0)
		return -ENOMEM;
	if (strpack_append(p, v, vlen) < 0) {
		/* drop the lone field again; the buffer keeps its size */
		p->bytes = bytes;
		p->count = count;
		return -ENOMEM;
	}
	return 1;
}

/* However the limits are configured, a listpack never grows past 1GB
 * (Redis's lpSafeToAdd): a linear pack that big would be absurd. */
#define LISTPACK_SAFETY (1ULL << 30)

/* 7.0's hashTypeTryConversion: a listpack turns into a hashtable before it
 * would take a too-long field or value. */
static int try_conversion(struct hash *h, size_t flen, size_t vlen, const struct hash_limits *lim)
{
	if (h->enc == HASH_ENC_LISTPACK &&
	    (flen > lim->max_value || vlen > lim->max_value || h->u.lp.bytes + flen + vlen > LISTPACK_SAFETY))
		return to_hashtable(h);
	return 0;
}

int hash_set(struct hash *h, const char *f, size_t flen, const char *v, size_t vlen,
	     const struct hash_limits *lim)
{
	if (try_conversion(h, flen, vlen, lim) < 0)
		return -ENOMEM;
	if (h->enc == HASH_ENC_HASHTABLE)
		return strtab_set(h->u.ht, f, flen, v, vlen);
	int rc = pack_set(&h->u.lp, f, flen, v, vlen);
	if (rc == 1 && hash_len(h) > lim->max_entries && to_hashtable(h) < 0) {
		hash_delete(h, f, flen);
		return -ENOMEM;
	}
	return rc;
}

bool hash_delete(struct hash *h, const char *f, size_t flen)
{
	if (h->enc == HASH_ENC_HASHTABLE)
		return strtab_delete(h->u.ht, f, flen);
	size_t off = strpack_find_pair(&h->u.lp, f, flen);
	if (off == STRPACK_END)
		return false;
	strpack_delete(&h->u.lp, off, 2);
	return true;
}

void hash_iter_init(struct hash_iter *it, const struct hash *h)
{
	it->h = h;
	it->off = 0;
	if (h->enc == HASH_ENC_HASHTABLE)
		strtab_iter_init(&it->ti, h->u.ht);
}

bool hash_next(struct hash_iter *it, const char **f, size_t *flen, const char **v, size_t *vlen)
{
	if (it->h->enc == HASH_ENC_LISTPACK) {
		const struct strpack *p = &it->h->u.lp;
		if (it->off >= p->bytes)
			return false;
		it->off = strpack_get(p, it->off, f, flen);
		it->off = strpack_get(p, it->off, v, vlen);
		return true;
	}
	struct strtab_node *n = strtab_next(&it->ti);
	if (!n)
		return false;
	*f = strtab_key(n, flen);
	*v = strtab_val(n, vlen);
	return true;
}

void hash_random(const struct hash *h, uint64_t *rnd, const char **f, size_t *flen, const char **v,
		 size_t *vlen)
{
	assert(hash_len(h) > 0);
	if (h->enc == HASH_ENC_HASHTABLE) {
		struct strtab_node *n = strtab_random(h->u.ht, rnd);
		*f = strtab_key(n, flen);
		*v = strtab_val(n, vlen);
		return;
	}
	uint32_t pair = (uint32_t)(strtab_rand(rnd) % hash_len(h));
	size_t off = strpack_offset_of(&h->u.lp, pair * 2);
	off = strpack_get(&h->u.lp, off, f, flen);
	strpack_get(&h->u.lp, off, v, vlen);
}

struct scan_adapter {
	hash_visit_fn fn;
	void *ctx;
};

static void scan_node(const struct strtab_node *n, void *ctx)
{
	struct scan_adapter *a = ctx;
	size_t flen, vlen;
	const char *f = strtab_key(n, &flen), *v = strtab_val(n, &vlen);
	a->fn(f, flen, v, vlen, a->ctx);
}

uint64_t hash_scan(const struct hash *h, uint64_t cursor, hash_visit_fn fn, void *ctx)
{
	if (h->enc == HASH_ENC_HASHTABLE) {
		struct scan_adapter a = { fn, ctx };
		return strtab_scan(h->u.ht, cursor, scan_node, &a);
	}
	struct hash_iter it;
	hash_iter_init(&it, h);
	const char *f, *v;
	size_t flen, vlen;
	while (hash_next(&it, &f, &flen, &v, &vlen))
		fn(f, flen, v, vlen, ctx);
	return 0;
}

size_t hash_memory(const struct hash *h)
{
	size_t n = zr_usable(h);
	if (h->enc == HASH_ENC_LISTPACK)
		return n + strpack_memory(&h->u.lp);
	return n + zr_usable(h->u.ht) + h->u.ht->bytes;
}

/* --- store_type_ops ---------------------------------------------------------- */

static void ops_free(void *obj)
{
	hash_free(obj);
}

static void *ops_dup(const void *obj)
{
	return hash_dup(obj);
}

static size_t ops_memory(const void *obj)
{
	return hash_memory(obj);
}

static const char *ops_encoding(const void *obj)
{
	const struct hash *h = obj;
	return h->enc == HASH_ENC_LISTPACK ? "listpack" : "hashtable";
}

#define REWRITE_BATCH 64 /* fields per HSET */

/* HSET key f1 v1 .. f64 v64, repeated. */
static int ops_rewrite(const void *obj, const char *key, size_t klen, store_emit_fn emit, void *ctx)
{
	const char *argv[2 + 2 * REWRITE_BATCH];
	size_t lens[2 + 2 * REWRITE_BATCH];
	argv[0] = "HSET";
	lens[0] = 4;
	argv[1] = key;
	lens[1] = klen;
	int n = 0, rc = 0;
	struct hash_iter it;
	hash_iter_init(&it, obj);
	const char *f, *v;
	size_t flen, vlen;
	while (hash_next(&it, &f, &flen, &v, &vlen)) {
		argv[2 + 2 * n] = f;
		lens[2 + 2 * n] = flen;
		argv[3 + 2 * n] = v;
		lens[3 + 2 * n] = vlen;
		if (++n == REWRITE_BATCH) {
			if ((rc = emit(2 + 2 * n, argv, lens, ctx)))
				return rc;
			n = 0;
		}
	}
	if (n)
		rc = emit(2 + 2 * n, argv, lens, ctx);
	return rc;
}

const struct store_type_ops store_hash_ops = {
	.free = ops_free,
	.dup = ops_dup,
	.memory = ops_memory,
	.encoding = ops_encoding,
	.rewrite = ops_rewrite,
};
