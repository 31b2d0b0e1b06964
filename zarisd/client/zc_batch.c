/* zc_batch — batches: operations encoded as they are added (their wire
 * fields, so sending is copying), their results, and how a part's answer
 * folds into its operation's result (split MGET/MSET, INVALIDATE summed). */
#include <stdlib.h>
#include <string.h>

#include "zarisd/client/zc_int.h"
#include "zarisd/proto/native_wire.h"

_Static_assert((int)ZARIS_S_MOVED == (int)NW_MOVED && (int)ZARIS_S_ASK == (int)NW_ASK &&
		       (int)ZARIS_S_BUSYKEY == (int)NW_BUSYKEY && (int)ZARIS_S_OTHER == (int)NW_OTHER,
	       "zaris.h's statuses are the wire's");
_Static_assert(ZARIS_SET_NX == NW_SET_NX && ZARIS_SET_XX == NW_SET_XX && ZARIS_SET_GET == NW_SET_GET &&
		       ZARIS_SET_KEEPTTL == NW_SET_KEEPTTL,
	       "zaris.h's SET flags are the wire's");

struct zaris_batch *zaris_batch_new(void)
{
	struct zaris_batch *b = calloc(1, sizeof(*b));
	if (b)
		b->db = -1;
	return b;
}

void zaris_batch_free(struct zaris_batch *b)
{
	if (!b)
		return;
	free(b->ops);
	free(b->args);
	free(b->koff);
	zc_arena_free(&b->arena);
	free(b);
}

int zaris_batch_reset(struct zaris_batch *b)
{
	if (b->state == ZC_INFLIGHT || b->state == ZC_DONE)
		return ZARIS_E_BUSY;
	b->nops = b->alen = b->nkoff = 0;
	b->db = -1;
	b->state = ZC_IDLE;
	zc_arena_reset(&b->arena);
	return 0;
}

size_t zaris_batch_count(const struct zaris_batch *b)
{
	return b->nops;
}

void zaris_batch_db(struct zaris_batch *b, int db)
{
	b->db = db < 0 ? -1 : db;
}

/* --- encoding ------------------------------------------------------------------ */

static bool is_adding_allowed(const struct zaris_batch *b)
{
	return b->state != ZC_INFLIGHT && b->state != ZC_DONE && b->nops < NW_MAX_OPS;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return ZARIS_E_NOMEM;
	*p = q;
	*cap = n;
	return 0;
}

static int reserve(struct zaris_batch *b, size_t more)
{
	if (more > UINT32_MAX - b->alen)
		return ZARIS_E_INVAL;
	return grow((void **)&b->args, &b->acap, b->alen + more, 1);
}

static void put16(struct zaris_batch *b, uint16_t v)
{
	nw_put16(b->args + b->alen, v);
	b->alen += 2;
}
static void put64(struct zaris_batch *b, uint64_t v)
{
	nw_put64(b->args + b->alen, v);
	b->alen += 8;
}
static void put_str(struct zaris_batch *b, const void *s, size_t len)
{
	nw_put32(b->args + b->alen, (uint32_t)len);
	if (len)
		memcpy(b->args + b->alen + 4, s, len);
	b->alen += 4 + len;
}

static size_t meta_size(const struct zaris_meta *m, size_t *elen, size_t *clen)
{
	size_t n = 2 + 8;
	for (size_t i = 0; i < m->nlabels; i++)
		n += 4 + (m->label_lens ? m->label_lens[i] : strlen(m->labels[i]));
	*elen = !m->entity ? 0 : m->entity_len == SIZE_MAX ? strlen(m->entity) : m->entity_len;
	*clen = !m->content_type		  ? 0
		: m->content_type_len == SIZE_MAX ? strlen(m->content_type)
						  : m->content_type_len;
	return n + *elen + *clen;
}

static void put_meta(struct zaris_batch *b, const struct zaris_meta *m, size_t elen, size_t clen)
{
	put16(b, (uint16_t)m->nlabels);
	for (size_t i = 0; i < m->nlabels; i++)
		put_str(b, m->labels[i], m->label_lens ? m->label_lens[i] : strlen(m->labels[i]));
	put_str(b, m->entity, elen);
	put_str(b, m->content_type, clen);
}

/* Starts operation CODE whose fields take FIELDS bytes: its record, or
 * NULL (*RC says why). */
static struct zc_op *op_begin(struct zaris_batch *b, uint8_t code, uint8_t flags, size_t fields, int *rc)
{
	*rc = ZARIS_E_INVAL;
	if (!is_adding_allowed(b) || fields > UINT32_MAX)
		return NULL;
	if ((*rc = reserve(b, fields)) ||
	    (*rc = grow((void **)&b->ops, &b->ops_cap, b->nops + 1, sizeof(*b->ops))))
		return NULL;
	if (b->state == ZC_RETURNED) { /* adding to a returned batch starts a new one's results */
		b->state = ZC_IDLE;
	}
	struct zc_op *o = &b->ops[b->nops];
	memset(o, 0, sizeof(*o));
	o->code = code;
	o->flags = flags;
	o->db = b->db;
	o->off = (uint32_t)b->alen;
	return o;
}

static int op_end(struct zaris_batch *b, struct zc_op *o)
{
	o->len = (uint32_t)(b->alen - o->off);
	return (int)b->nops++;
}

/* An operation of one key and optional trailing fields. */
static int add_key_op(struct zaris_batch *b, uint8_t code, const void *key, size_t klen, const void *val,
		      size_t vlen, bool has_val, bool has_i64, int64_t i64)
{
	int rc;
	if (!key && klen)
		return ZARIS_E_INVAL;
	size_t fields = 4 + klen + (has_val ? 4 + vlen : 0) + (has_i64 ? 8 : 0);
	if (klen > UINT32_MAX || vlen > UINT32_MAX)
		return ZARIS_E_INVAL;
	struct zc_op *o = op_begin(b, code, 0, fields, &rc);
	if (!o)
		return rc;
	o->has_key = true;
	o->key_off = (uint32_t)b->alen + 4;
	o->key_len = (uint32_t)klen;
	put_str(b, key, klen);
	if (has_val)
		put_str(b, val, vlen);
	if (has_i64)
		put64(b, (uint64_t)i64);
	return op_end(b, o);
}

int zaris_add_get(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_GET, key, klen, NULL, 0, false, false, 0);
}
int zaris_add_del(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_DEL, key, klen, NULL, 0, false, false, 0);
}
int zaris_add_exists(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_EXISTS, key, klen, NULL, 0, false, false, 0);
}
int zaris_add_incrby(struct zaris_batch *b, const void *key, size_t klen, int64_t delta)
{
	return add_key_op(b, NW_OP_INCRBY, key, klen, NULL, 0, false, true, delta);
}
int zaris_add_getset(struct zaris_batch *b, const void *key, size_t klen, const void *val, size_t vlen)
{
	return add_key_op(b, NW_OP_GETSET, key, klen, val, vlen, true, false, 0);
}
int zaris_add_getdel(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_GETDEL, key, klen, NULL, 0, false, false, 0);
}
int zaris_add_pttl(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_PTTL, key, klen, NULL, 0, false, false, 0);
}
int zaris_add_pexpire(struct zaris_batch *b, const void *key, size_t klen, int64_t ttl_ms)
{
	return add_key_op(b, NW_OP_PEXPIRE, key, klen, NULL, 0, false, true, ttl_ms);
}
int zaris_add_persist(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_PERSIST, key, klen, NULL, 0, false, false, 0);
}
int zaris_add_metaget(struct zaris_batch *b, const void *key, size_t klen)
{
	return add_key_op(b, NW_OP_METAGET, key, klen, NULL, 0, false, false, 0);
}

int zaris_add_set(struct zaris_batch *b, const void *key, size_t klen, const void *val, size_t vlen,
		  const struct zaris_set_opts *opts)
{
	static const struct zaris_set_opts plain;
	if (!opts)
		opts = &plain;
	if ((opts->flags & ~(unsigned)(ZARIS_SET_NX | ZARIS_SET_XX | ZARIS_SET_GET | ZARIS_SET_KEEPTTL)) ||
	    klen > UINT32_MAX || vlen > UINT32_MAX || (!key && klen) || (!val && vlen) ||
	    (opts->meta && opts->meta->nlabels > UINT16_MAX))
		return ZARIS_E_INVAL;
	size_t elen = 0, clen = 0;
	size_t msize = opts->meta ? meta_size(opts->meta, &elen, &clen) : 0;
	uint8_t flags = (uint8_t)opts->flags | (opts->meta ? NW_SET_META : 0);
	int rc;
	struct zc_op *o = op_begin(b, NW_OP_SET, flags, 4 + klen + 4 + vlen + 8 + msize, &rc);
	if (!o)
		return rc;
	o->has_key = true;
	o->key_off = (uint32_t)b->alen + 4;
	o->key_len = (uint32_t)klen;
	put_str(b, key, klen);
	put_str(b, val, vlen);
	put64(b, (uint64_t)opts->ttl_ms);
	if (opts->meta)
		put_meta(b, opts->meta, elen, clen);
	return op_end(b, o);
}

int zaris_add_metaset(struct zaris_batch *b, const void *key, size_t klen, const struct zaris_meta *meta)
{
	static const struct zaris_meta none;
	if (!meta)
		meta = &none;
	if (klen > UINT32_MAX || (!key && klen) || meta->nlabels > UINT16_MAX)
		return ZARIS_E_INVAL;
	size_t elen, clen;
	size_t msize = meta_size(meta, &elen, &clen);
	int rc;
	struct zc_op *o = op_begin(b, NW_OP_METASET, 0, 4 + klen + msize, &rc);
	if (!o)
		return rc;
	o->has_key = true;
	o->key_off = (uint32_t)b->alen + 4;
	o->key_len = (uint32_t)klen;
	put_str(b, key, klen);
	put_meta(b, meta, elen, clen);
	return op_end(b, o);
}

/* MGET (VALS NULL) or MSET. */
static int add_multi(struct zaris_batch *b, uint8_t code, size_t n, const void *const *keys,
		     const size_t *klens, const void *const *vals, const size_t *vlens)
{
	if (n == 0 || n > UINT16_MAX || !keys || !klens || (code == NW_OP_MSET && (!vals || !vlens)))
		return ZARIS_E_INVAL;
	size_t fields = 2;
	for (size_t i = 0; i < n; i++) {
		size_t v = vals ? vlens[i] : 0;
		if (klens[i] > UINT32_MAX || v > UINT32_MAX)
			return ZARIS_E_INVAL;
		fields += 4 + klens[i] + (vals ? 4 + v : 0);
	}
	int rc;
	struct zc_op *o = op_begin(b, code, 0, fields, &rc);
	if (!o)
		return rc;
	if (grow((void **)&b->koff, &b->koff_cap, b->nkoff + n, sizeof(*b->koff)))
		return ZARIS_E_NOMEM;
	o->nkeys = (uint32_t)n;
	o->koffs = (uint32_t)b->nkoff;
	o->has_key = true;
	o->key_off = (uint32_t)b->alen + 2 + 4;
	o->key_len = (uint32_t)klens[0];
	put16(b, (uint16_t)n);
	for (size_t i = 0; i < n; i++) {
		b->koff[b->nkoff++] = (uint32_t)b->alen;
		put_str(b, keys[i], klens[i]);
		if (vals)
			put_str(b, vals[i], vlens[i]);
	}
	return op_end(b, o);
}

int zaris_add_mget(struct zaris_batch *b, size_t n, const void *const *keys, const size_t *klens)
{
	return add_multi(b, NW_OP_MGET, n, keys, klens, NULL, NULL);
}
int zaris_add_mset(struct zaris_batch *b, size_t n, const void *const *keys, const size_t *klens,
		   const void *const *vals, const size_t *vlens)
{
	return add_multi(b, NW_OP_MSET, n, keys, klens, vals, vlens);
}

int zaris_add_invalidate(struct zaris_batch *b, const void *label, size_t llen, const void *entity,
			 size_t elen)
{
	int rc;
	if (llen > UINT32_MAX || elen > UINT32_MAX || (!label && llen) || (!entity && elen))
		return ZARIS_E_INVAL;
	struct zc_op *o = op_begin(b, NW_OP_INVALIDATE, 0, 8 + llen + elen, &rc);
	if (!o)
		return rc;
	put_str(b, label, llen);
	put_str(b, entity, elen);
	return op_end(b, o);
}

int zaris_add_topology(struct zaris_batch *b)
{
	int rc;
	struct zc_op *o = op_begin(b, NW_OP_TOPOLOGY, 0, 0, &rc);
	return o ? op_end(b, o) : rc;
}

int zaris_add_command(struct zaris_batch *b, int argc, const char *const *argv, const size_t *lens)
{
	if (argc <= 0 || argc > UINT16_MAX || !argv)
		return ZARIS_E_INVAL;
	size_t fields = 2;
	for (int i = 0; i < argc; i++) {
		size_t l = lens ? lens[i] : strlen(argv[i]);
		if (l > UINT32_MAX)
			return ZARIS_E_INVAL;
		fields += 4 + l;
	}
	int rc;
	struct zc_op *o = op_begin(b, NW_OP_COMMAND, 0, fields, &rc);
	if (!o)
		return rc;
	put16(b, (uint16_t)argc);
	for (int i = 0; i < argc; i++) {
		size_t l = lens ? lens[i] : strlen(argv[i]);
		if (i == 1) { /* most commands' first key: the routing guess */
			o->has_key = true;
			o->key_off = (uint32_t)b->alen + 4;
			o->key_len = (uint32_t)l;
		}
		put_str(b, argv[i], l);
	}
	return op_end(b, o);
}

/* --- results ----------------------------------------------------------------- */

const struct zaris_result *zaris_batch_result(const struct zaris_batch *b, size_t i)
{
	if (i >= b->nops || (b->state != ZC_DONE && b->state != ZC_RETURNED))
		return NULL;
	return &b->ops[i].res;
}

const struct zaris_value *zaris_map_get(const struct zaris_value *m, const char *key)
{
	if (!m || m->type != ZARIS_T_MAP)
		return NULL;
	size_t klen = strlen(key);
	for (size_t i = 0; i + 1 < m->n; i += 2) {
		const struct zaris_value *k = &m->elements[i];
		if ((k->type == ZARIS_T_SIMPLE || k->type == ZARIS_T_BULK) && k->len == klen &&
		    !memcmp(k->str, key, klen))
			return &m->elements[i + 1];
	}
	return NULL;
}

bool zc_op_is_read(uint8_t code)
{
	return code == NW_OP_GET || code == NW_OP_EXISTS || code == NW_OP_MGET || code == NW_OP_PTTL ||
	       code == NW_OP_METAGET || code == NW_OP_TOPOLOGY;
}

void zc_batch_prepare(struct zaris_batch *b)
{
	zc_arena_reset(&b->arena);
	for (size_t i = 0; i < b->nops; i++) {
		struct zc_op *o = &b->ops[i];
		o->pending = o->parts = 0;
		o->err = 0;
		o->err_value = NULL;
		o->gathered = NULL;
		o->sum = 0;
		o->res.status = ZARIS_E_IO;
		o->res.value = NULL;
	}
	b->unanswered = b->nops;
	b->rc = 0;
}

static void batch_complete(struct zaris *z, struct zaris_batch *b)
{
	b->state = ZC_DONE;
	if (b->on_done) {
		b->on_done(z, b);
		return;
	}
	b->next_done = NULL;
	if (z->done_tail)
		z->done_tail->next_done = b;
	else
		z->done_head = b;
	z->done_tail = b;
}

/* The operation's result once its last part answered. */
static void op_finish(struct zaris_batch *b, struct zc_op *o, const struct zaris_value *last)
{
	if (o->err) {
		o->res.status = o->err;
		o->res.value = o->err < 0 ? NULL : o->err_value;
		if (!b->rc && o->err < 0)
			b->rc = o->err;
		return;
	}
	o->res.status = ZARIS_S_OK;
	o->res.value = last;
	if (o->parts <= 1 && o->code != NW_OP_INVALIDATE)
		return;
	struct zaris_value *v = zc_arena_alloc(&b->arena, sizeof(*v));
	if (!v) {
		o->res.status = ZARIS_E_NOMEM;
		o->res.value = NULL;
		b->rc = b->rc ? b->rc : ZARIS_E_NOMEM;
		return;
	}
	memset(v, 0, sizeof(*v));
	if (o->code == NW_OP_MGET) {
		v->type = ZARIS_T_ARRAY;
		v->elements = o->gathered;
		v->n = o->nkeys;
	} else if (o->code == NW_OP_INVALIDATE) {
		v->type = ZARIS_T_INTEGER;
		v->integer = o->sum;
	} else {
		*v = *last; /* MSET: +OK from one part */
	}
	o->res.value = v;
}

void zc_op_answer(struct zaris *z, struct zaris_batch *b, const struct zc_part *pt, int status,
		  const struct zaris_value *value)
{
	struct zc_op *o = &b->ops[pt->op];
	if (status != ZARIS_S_OK) {
		if (!o->err) {
			o->err = status;
			o->err_value = value;
		}
	} else if (o->parts > 1 && o->code == NW_OP_MGET) {
		if (!o->gathered) {
			o->gathered = zc_arena_alloc(&b->arena, o->nkeys * sizeof(*o->gathered));
			if (o->gathered)
				memset(o->gathered, 0, o->nkeys * sizeof(*o->gathered));
		}
		if (!o->gathered) {
			o->err = ZARIS_E_NOMEM;
		} else if (!value || value->type != ZARIS_T_ARRAY || value->n != pt->npos) {
			o->err = ZARIS_E_PROTO;
		} else {
			for (uint32_t i = 0; i < pt->npos; i++)
				o->gathered[pt->pos[i]] = value->elements[i];
		}
	} else if (o->code == NW_OP_INVALIDATE) {
		/* an integer as PROTOCOL.md 4 says, or METAINVALIDATE's cluster
		 * reply (a map whose "deleted" is the count), which zarisd sends */
		const struct zaris_value *n =
			value && value->type == ZARIS_T_MAP ? zaris_map_get(value, "deleted") : value;
		if (!n || n->type != ZARIS_T_INTEGER)
			o->err = ZARIS_E_PROTO;
		else
			o->sum += n->integer;
	}
	if (--o->pending)
		return;
	op_finish(b, o, value);
	if (--b->unanswered == 0)
		batch_complete(z, b);
}
