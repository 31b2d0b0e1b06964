/* set — see set.h. */
#include "zarisd/store/set.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"

static bool as_int(const char *m, size_t len, long long *v)
{
	return zr_str_to_ll(m, len, v);
}

struct set *set_new_intset(void)
{
	struct set *s = zr_malloc(sizeof(*s));
	s->enc = SET_ENC_INTSET;
	s->u.is = intset_new();
	return s;
}

static struct set *new_hashtable(void)
{
	struct set *s = zr_malloc(sizeof(*s));
	s->enc = SET_ENC_HASHTABLE;
	s->u.ht = zr_malloc(sizeof(*s->u.ht));
	strtab_init(s->u.ht);
	return s;
}

struct set *set_create(const char *first, size_t len)
{
	long long v;
	return as_int(first, len, &v) ? set_new_intset() : new_hashtable();
}

void set_free(struct set *s)
{
	if (!s)
		return;
	if (s->enc == SET_ENC_INTSET)
		zr_free(s->u.is);
	else
		strtab_free(s->u.ht);
	zr_free(s);
}

struct set *set_dup(const struct set *s)
{
	if (s->enc == SET_ENC_INTSET) {
		struct set *d = zr_malloc(sizeof(*d));
		d->enc = SET_ENC_INTSET;
		d->u.is = intset_dup(s->u.is);
		return d;
	}
	struct set *d = new_hashtable();
	strtab_expand(d->u.ht, s->u.ht->count);
	struct strtab_iter it;
	strtab_iter_init(&it, s->u.ht);
	for (struct strtab_node *n; (n = strtab_next(&it));) {
		if (strtab_add(d->u.ht, n->data, n->klen) < 0) {
			set_free(d);
			return NULL;
		}
	}
	return d;
}

uint64_t set_size(const struct set *s)
{
	return s->enc == SET_ENC_INTSET ? intset_len(s->u.is) : s->u.ht->count;
}

bool set_contains(const struct set *s, const char *m, size_t len)
{
	if (s->enc == SET_ENC_HASHTABLE)
		return strtab_find(s->u.ht, m, len) != NULL;
	long long v;
	return as_int(m, len, &v) && intset_contains(s->u.is, v);
}

/* Rebuilds an intset set as a hashtable (setTypeConvert). -ENOMEM leaves
 * S as it was. */
static int to_hashtable(struct set *s)
{
	struct strtab *ht = zr_malloc(sizeof(*ht));
	strtab_init(ht);
	strtab_expand(ht, intset_len(s->u.is) + 1);
	for (uint32_t i = 0; i < intset_len(s->u.is); i++) {
		char buf[ZR_LONG_STR_SIZE];
		size_t n = zr_ll_to_str(buf, intset_get(s->u.is, i));
		if (strtab_add(ht, buf, n) < 0) {
			strtab_free(ht);
			return -ENOMEM;
		}
	}
	zr_free(s->u.is);
	s->enc = SET_ENC_HASHTABLE;
	s->u.ht = ht;
	return 0;
}

int set_add(struct set *s, const char *m, size_t len, uint64_t max_intset)
{
	if (s->enc == SET_ENC_INTSET) {
		long long v;
		if (as_int(m, len, &v)) {
			if (!intset_add(&s->u.is, v))
				return 0;
			/* 7.0 converts once the intset holds more than the limit */
			if (intset_len(s->u.is) > max_intset && to_hashtable(s) < 0) {
				intset_remove(&s->u.is, v);
				return -ENOMEM;
			}
			return 1;
		}
		if (to_hashtable(s) < 0)
			return -ENOMEM;
	}
	return strtab_add(s->u.ht, m, len);
}

bool set_remove(struct set *s, const char *m, size_t len)
{
	if (s->enc == SET_ENC_HASHTABLE)
		return strtab_delete(s->u.ht, m, len);
	long long v;
	return as_int(m, len, &v) && intset_remove(&s->u.is, v);
}

void set_recompact(struct set *s, uint64_t max_intset)
{
	if (s->enc != SET_ENC_HASHTABLE || s->u.ht->count == 0 || s->u.ht->count > max_intset)
		return;
	struct intset *is = intset_new();
	struct strtab_iter it;
	strtab_iter_init(&it, s->u.ht);
	for (struct strtab_node *n; (n = strtab_next(&it));) {
		long long v;
		if (!as_int(n->data, n->klen, &v)) {
			zr_free(is);
			return;
		}
		intset_add(&is, v);
	}
	strtab_free(s->u.ht);
	s->enc = SET_ENC_INTSET;
	s->u.is = is;
}

void set_iter_init(struct set_iter *it, const struct set *s)
{
	it->s = s;
	it->i = 0;
	if (s->enc == SET_ENC_HASHTABLE)
		strtab_iter_init(&it->ti, s->u.ht);
}

bool set_next(struct set_iter *it, const char **m, size_t *len)
{
	if (it->s->enc == SET_ENC_INTSET) {
		if (it->i >= intset_len(it->s->u.is))
			return false;
		*len = zr_ll_to_str(it->buf, intset_get(it->s->u.is, it->i++));
		*m = it->buf;
		return true;
	}
	struct strtab_node *n = strtab_next(&it->ti);
	if (!n)
		return false;
	*m = strtab_key(n, len);
	return true;
}

void set_random(const struct set *s, uint64_t *rnd, char buf[ZR_LONG_STR_SIZE], const char **m, size_t *len)
{
	assert(set_size(s) > 0);
	if (s->enc == SET_ENC_INTSET) {
		uint32_t i = (uint32_t)(strtab_rand(rnd) % intset_len(s->u.is));
		*len = zr_ll_to_str(buf, intset_get(s->u.is, i));
		*m = buf;
		return;
	}
	*m = strtab_key(strtab_random(s->u.ht, rnd), len);
}

struct scan_adapter {
	set_visit_fn fn;
	void *ctx;
};

static void scan_node(const struct strtab_node *n, void *ctx)
{
	struct scan_adapter *a = ctx;
	a->fn(n->data, n->klen, a->ctx);
}

uint64_t set_scan(const struct set *s, uint64_t cursor, set_visit_fn fn, void *ctx)
{
	if (s->enc == SET_ENC_HASHTABLE) {
		struct scan_adapter a = { fn, ctx };
		return strtab_scan(s->u.ht, cursor, scan_node, &a);
	}
	for (uint32_t i = 0; i < intset_len(s->u.is); i++) {
		char buf[ZR_LONG_STR_SIZE];
		size_t n = zr_ll_to_str(buf, intset_get(s->u.is, i));
		fn(buf, n, ctx);
	}
	return 0;
}

size_t set_memory(const struct set *s)
{
	size_t n = zr_usable(s);
	if (s->enc == SET_ENC_INTSET)
		return n + intset_memory(s->u.is);
	return n + zr_usable(s->u.ht) + s->u.ht->bytes;
}

/* --- store_type_ops ---------------------------------------------------------- */

static void ops_free(void *obj)
{
	set_free(obj);
}

static void *ops_dup(const void *obj)
{
	return set_dup(obj);
}

static size_t ops_memory(const void *obj)
{
	return set_memory(obj);
}

static const char *ops_encoding(const void *obj)
{
	const struct set *s = obj;
	return s->enc == SET_ENC_INTSET ? "intset" : "hashtable";
}

#define REWRITE_BATCH 64

/* SADD key m1 .. m64, repeated. */
static int ops_rewrite(const void *obj, const char *key, size_t klen, store_emit_fn emit, void *ctx)
{
	const char *argv[2 + REWRITE_BATCH];
	size_t lens[2 + REWRITE_BATCH];
	/* intset members are formatted, so each needs its own buffer */
	char nums[REWRITE_BATCH][ZR_LONG_STR_SIZE];
	argv[0] = "SADD";
	lens[0] = 4;
	argv[1] = key;
	lens[1] = klen;
	int n = 0, rc = 0;
	struct set_iter it;
	set_iter_init(&it, obj);
	const char *m;
	size_t len;
	while (set_next(&it, &m, &len)) {
		if (m == it.buf) {
			memcpy(nums[n], m, len);
			m = nums[n];
		}
		argv[2 + n] = m;
		lens[2 + n] = len;
		if (++n == REWRITE_BATCH) {
			if ((rc = emit(2 + n, argv, lens, ctx)))
				return rc;
			n = 0;
		}
	}
	if (n)
		rc = emit(2 + n, argv, lens, ctx);
	return rc;
}

const struct store_type_ops store_set_ops = {
	.free = ops_free,
	.dup = ops_dup,
	.memory = ops_memory,
	.encoding = ops_encoding,
	.rewrite = ops_rewrite,
};
