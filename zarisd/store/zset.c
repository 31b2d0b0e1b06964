/* zset — see zset.h. Each operation dispatches on the encoding; the
 * conversion rules are Redis 7.0's (t_zset.c zsetAdd / zsetConvert /
 * zsetConvertToListpackIfNeeded). */
#include "zarisd/store/zset.h"

#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"

enum zset_enc {
	ZSET_ENC_COMPACT,
	ZSET_ENC_FULL,
};

/* 16 bytes, the size of the compact encoding's header: a small set costs
 * one 16-byte block plus its buffer. In the full encoding the same bytes
 * hold the skiplist's pointer and, over lp.count, the mark ZSET_FULL, a
 * count no compact set reaches (its buffer is limited to 4 GB). */
struct zset {
	union {
		struct zset_lp lp;
		struct {
			struct zset_sl *sl;
			uint32_t mark; /* ZSET_FULL, overlays lp.count */
			uint32_t unused;
		} full;
	};
};
#define ZSET_FULL UINT32_MAX

static inline bool is_full(const struct zset *z)
{
	return z->lp.count == ZSET_FULL;
}

static void set_full(struct zset *z, struct zset_sl *sl)
{
	z->full.sl = sl;
	z->full.mark = ZSET_FULL;
	z->full.unused = 0;
}

static struct zset *zset_alloc(enum zset_enc enc)
{
	struct zset *z = zr_malloc(sizeof(*z));
	if (enc == ZSET_ENC_COMPACT) {
		zset_lp_init(&z->lp);
	} else {
		struct zset_sl *sl = zr_malloc(sizeof(*sl));
		zset_sl_init(sl);
		set_full(z, sl);
	}
	return z;
}

struct zset *zset_create(size_t first_mlen, const struct zset_limits *lim)
{
	if (lim->max_entries == 0 || first_mlen > lim->max_value)
		return zset_alloc(ZSET_ENC_FULL);
	return zset_alloc(ZSET_ENC_COMPACT);
}

struct zset *zset_create_full(void)
{
	return zset_alloc(ZSET_ENC_FULL);
}

void zset_free(struct zset *z)
{
	if (!z)
		return;
	if (!is_full(z)) {
		zset_lp_free(&z->lp);
	} else {
		zset_sl_free(z->full.sl);
		zr_free(z->full.sl);
	}
	zr_free(z);
}

size_t zset_card(const struct zset *z)
{
	return !is_full(z) ? z->lp.count : z->full.sl->length;
}

bool zset_is_compact(const struct zset *z)
{
	return !is_full(z);
}

size_t zset_memory(const struct zset *z)
{
	size_t n = zr_usable(z);
	if (!is_full(z))
		n += zset_lp_bytes(&z->lp);
	else
		n += zr_usable(z->full.sl) + z->full.sl->bytes;
	return n;
}

/* --- conversions ----------------------------------------------------------- */

static void to_full(struct zset *z)
{
	assert(!is_full(z));
	struct zset_sl *sl = zr_malloc(sizeof(*sl));
	zset_sl_init(sl);
	struct zset_lp_elem el;
	for (uint32_t off = 0; off < z->lp.used;) {
		off = zset_lp_next(&z->lp, off, &el);
		zset_sl_insert(sl, el.score, el.member, el.mlen);
	}
	zset_lp_free(&z->lp);
	set_full(z, sl);
}

void zset_compact_if_fits(struct zset *z, const struct zset_limits *lim)
{
	if (!is_full(z) || z->full.sl->length > lim->max_entries)
		return;
	for (struct zset_sl_node *n = zset_sl_first(z->full.sl); n; n = n->level[0].forward)
		if (n->mlen > lim->max_value)
			return;
	struct zset_lp lp;
	zset_lp_init(&lp);
	for (struct zset_sl_node *n = zset_sl_first(z->full.sl); n; n = n->level[0].forward)
		zset_lp_append(&lp, zset_sl_member(n), n->mlen, n->score);
	zset_sl_free(z->full.sl);
	zr_free(z->full.sl);
	z->lp = lp;
}

struct zset *zset_dup(const struct zset *z)
{
	struct zset *d = zset_alloc(is_full(z) ? ZSET_ENC_FULL : ZSET_ENC_COMPACT);
	if (!is_full(z)) {
		if (z->lp.used) {
			d->lp.buf = zr_malloc(z->lp.used);
			memcpy(d->lp.buf, z->lp.buf, z->lp.used);
		}
		d->lp.used = z->lp.used;
		d->lp.count = z->lp.count;
	} else {
		/* inserting from the tail keeps each insertion at the head end */
		for (struct zset_sl_node *n = z->full.sl->tail; n; n = n->backward)
			zset_sl_insert(d->full.sl, n->score, zset_sl_member(n), n->mlen);
	}
	return d;
}

/* --- single members ---------------------------------------------------------- */

bool zset_score(const struct zset *z, const char *member, size_t mlen, double *score)
{
	if (!is_full(z))
		return zset_lp_find(&z->lp, member, mlen, score, NULL, NULL);
	struct zset_sl_node *n = zset_sl_find(z->full.sl, member, mlen);
	if (n && score)
		*score = n->score;
	return n != NULL;
}

/* Redis's GT/LT/INCR rules for a member already at CUR. Returns the
 * result flags; *SCORE becomes the new score. */
static unsigned existing_rule(double cur, double *score, unsigned flags)
{
	if (flags & ZSET_ADD_NX)
		return ZSET_OUT_NOP;
	if (flags & ZSET_ADD_INCR) {
		*score += cur;
		if (isnan(*score))
			return ZSET_OUT_NAN;
	}
	if (((flags & ZSET_ADD_LT) && *score >= cur) || ((flags & ZSET_ADD_GT) && *score <= cur))
		return ZSET_OUT_NOP;
	return *score != cur ? ZSET_OUT_UPDATED : 0;
}

unsigned zset_add(struct zset *z, double score, const char *member, size_t mlen, unsigned flags,
		  double *newscore, const struct zset_limits *lim)
{
	assert(!isnan(score));
	double cur;
	if (!is_full(z)) {
		size_t rank;
		if (zset_lp_find(&z->lp, member, mlen, &cur, NULL, &rank)) {
			unsigned r = existing_rule(cur, &score, flags);
			if (r & (ZSET_OUT_NOP | ZSET_OUT_NAN)) {
				if (newscore && (r & ZSET_OUT_NOP))
					*newscore = cur;
				return r;
			}
			if (newscore)
				*newscore = score;
			if (r & ZSET_OUT_UPDATED) {
				/* MEMBER may point into the buffer (an element of this
				 * very set): copy it before the delete moves bytes. */
				char stack[128];
				char *copy = mlen <= sizeof(stack) ? stack : zr_malloc(mlen);
				memcpy(copy, member, mlen);
				zset_lp_delete_ranks(&z->lp, rank, 1);
				zset_lp_insert(&z->lp, copy, mlen, score);
				if (copy != stack)
					zr_free(copy);
			}
			return r;
		}
		if (flags & ZSET_ADD_XX)
			return ZSET_OUT_NOP;
		if (z->lp.count + 1 <= lim->max_entries && mlen <= lim->max_value) {
			zset_lp_insert(&z->lp, member, mlen, score);
			if (newscore)
				*newscore = score;
			return ZSET_OUT_ADDED;
		}
		to_full(z);
		/* fall through to the full encoding: the member is absent */
	}
	struct zset_sl_node *n = zset_sl_find(z->full.sl, member, mlen);
	if (n) {
		cur = n->score;
		unsigned r = existing_rule(cur, &score, flags);
		if (r & (ZSET_OUT_NOP | ZSET_OUT_NAN)) {
			if (newscore && (r & ZSET_OUT_NOP))
				*newscore = cur;
			return r;
		}
		if (newscore)
			*newscore = score;
		if (r & ZSET_OUT_UPDATED)
			zset_sl_update_score(z->full.sl, n, score);
		return r;
	}
	if (flags & ZSET_ADD_XX)
		return ZSET_OUT_NOP;
	zset_sl_insert(z->full.sl, score, member, mlen);
	if (newscore)
		*newscore = score;
	return ZSET_OUT_ADDED;
}

bool zset_remove(struct zset *z, const char *member, size_t mlen)
{
	if (!is_full(z)) {
		size_t rank;
		if (!zset_lp_find(&z->lp, member, mlen, NULL, NULL, &rank))
			return false;
		zset_lp_delete_ranks(&z->lp, rank, 1);
		return true;
	}
	struct zset_sl_node *n = zset_sl_find(z->full.sl, member, mlen);
	if (!n)
		return false;
	zset_sl_delete(z->full.sl, n);
	return true;
}

bool zset_rank(const struct zset *z, const char *member, size_t mlen, bool rev, size_t *rank)
{
	size_t r;
	if (!is_full(z)) {
		if (!zset_lp_find(&z->lp, member, mlen, NULL, NULL, &r))
			return false;
	} else {
		struct zset_sl_node *n = zset_sl_find(z->full.sl, member, mlen);
		if (!n)
			return false;
		r = zset_sl_rank(z->full.sl, n);
	}
	*rank = rev ? zset_card(z) - 1 - r : r;
	return true;
}

/* --- ranges -------------------------------------------------------------------- */

static bool score_gte_min(double v, const struct zset_score_range *r)
{
	return r->minex ? v > r->min : v >= r->min;
}

static bool score_lte_max(double v, const struct zset_score_range *r)
{
	return r->maxex ? v < r->max : v <= r->max;
}

/* Redis's sdscmplex of a member against a bound. */
static int lex_cmp(const char *v, size_t vlen, const char *b, size_t blen, int binf)
{
	if (binf)
		return binf < 0 ? 1 : -1;
	return zset_lp_member_cmp(v, vlen, b, blen);
}

static bool lex_gte_min(const char *v, size_t vlen, const struct zset_lex_range *r)
{
	int c = lex_cmp(v, vlen, r->min, r->minlen, r->mininf);
	return r->minex ? c > 0 : c >= 0;
}

static bool lex_lte_max(const char *v, size_t vlen, const struct zset_lex_range *r)
{
	int c = lex_cmp(v, vlen, r->max, r->maxlen, r->maxinf);
	return r->maxex ? c < 0 : c <= 0;
}

static bool sl_below_min(const struct zset_sl_node *n, const void *ctx)
{
	return !score_gte_min(n->score, ctx);
}

static bool sl_within_max(const struct zset_sl_node *n, const void *ctx)
{
	return score_lte_max(n->score, ctx);
}

static bool sl_below_lexmin(const struct zset_sl_node *n, const void *ctx)
{
	return !lex_gte_min(zset_sl_member(n), n->mlen, ctx);
}

static bool sl_within_lexmax(const struct zset_sl_node *n, const void *ctx)
{
	return lex_lte_max(zset_sl_member(n), n->mlen, ctx);
}

size_t zset_score_span(const struct zset *z, const struct zset_score_range *r, size_t *first)
{
	size_t lo = 0, hi = 0;
	if (!is_full(z)) {
		struct zset_lp_elem el;
		size_t rank = 0;
		for (uint32_t off = 0; off < z->lp.used; rank++) {
			off = zset_lp_next(&z->lp, off, &el);
			if (!score_gte_min(el.score, r))
				lo = rank + 1;
			if (score_lte_max(el.score, r))
				hi = rank + 1;
			else
				break;
		}
	} else {
		lo = zset_sl_count_prefix(z->full.sl, sl_below_min, r);
		hi = zset_sl_count_prefix(z->full.sl, sl_within_max, r);
	}
	*first = lo;
	return hi > lo ? hi - lo : 0;
}

/* Redis's zzlIsInLexRange / zslIsInLexRange, which its lex walks ask
 * first: the last member must be >= min and the first <= max. A set whose
 * members have different scores is not in lex order, so without this
 * check the walk below counts members Redis never reaches (ZLEXCOUNT z
 * "(a" + answered 2 where Redis answers 0). */
static bool lex_range_reachable(const struct zset *z, const struct zset_lex_range *r)
{
	size_t card = zset_card(z);
	if (!card)
		return false;
	const char *m;
	size_t mlen;
	double score;
	zset_at(z, card - 1, &m, &mlen, &score);
	if (!lex_gte_min(m, mlen, r))
		return false;
	zset_at(z, 0, &m, &mlen, &score);
	return lex_lte_max(m, mlen, r);
}

size_t zset_lex_span(const struct zset *z, const struct zset_lex_range *r, size_t *first)
{
	size_t lo = 0, n = 0;
	if (!lex_range_reachable(z, r)) {
		*first = 0;
		return 0;
	}
	if (!is_full(z)) {
		/* Redis's listpack walk: the first member >= min, then on while
		 * <= max. */
		struct zset_lp_elem el;
		uint32_t off = 0;
		while (off < z->lp.used) {
			uint32_t next = zset_lp_next(&z->lp, off, &el);
			if (lex_gte_min(el.member, el.mlen, r))
				break;
			off = next;
			lo++;
		}
		while (off < z->lp.used) {
			off = zset_lp_next(&z->lp, off, &el);
			if (!lex_lte_max(el.member, el.mlen, r))
				break;
			n++;
		}
	} else {
		lo = zset_sl_count_prefix(z->full.sl, sl_below_lexmin, r);
		size_t hi = zset_sl_count_prefix(z->full.sl, sl_within_lexmax, r);
		n = hi > lo ? hi - lo : 0;
	}
	*first = lo;
	return n;
}

void zset_remove_ranks(struct zset *z, size_t first, size_t count)
{
	if (!is_full(z))
		zset_lp_delete_ranks(&z->lp, first, count);
	else
		zset_sl_delete_ranks(z->full.sl, first, count);
}

void zset_at(const struct zset *z, size_t rank, const char **member, size_t *mlen, double *score)
{
	if (!is_full(z)) {
		struct zset_lp_elem el;
		zset_lp_next(&z->lp, zset_lp_offset_of(&z->lp, rank), &el);
		*member = el.member;
		*mlen = el.mlen;
		*score = el.score;
	} else {
		const struct zset_sl_node *n = zset_sl_at(z->full.sl, rank);
		*member = zset_sl_member(n);
		*mlen = n->mlen;
		*score = n->score;
	}
}

/* --- iteration ----------------------------------------------------------------- */

void zset_iter_init(struct zset_iter *it, const struct zset *z, size_t rank, bool rev)
{
	size_t card = zset_card(z);
	it->z = z;
	it->rev = rev;
	it->node = NULL;
	it->offs = NULL;
	it->off = 0;
	it->offs_next = 0;
	if (rank >= card) {
		it->left = 0;
		return;
	}
	it->left = rev ? rank + 1 : card - rank;
	if (is_full(z)) {
		it->node = zset_sl_at(z->full.sl, rank);
		return;
	}
	if (!rev) {
		it->off = zset_lp_offset_of(&z->lp, rank);
		return;
	}
	/* Walking backward needs the offsets of ranks 0..rank, found forward. */
	it->offs = rank + 1 <= sizeof(it->offs_buf) / sizeof(it->offs_buf[0])
			   ? it->offs_buf
			   : zr_malloc((rank + 1) * sizeof(*it->offs));
	struct zset_lp_elem el;
	uint32_t off = 0;
	for (size_t i = 0; i <= rank; i++) {
		it->offs[i] = off;
		off = zset_lp_next(&z->lp, off, &el);
	}
	it->offs_next = rank;
}

bool zset_iter_next(struct zset_iter *it, const char **member, size_t *mlen, double *score)
{
	if (!it->left)
		return false;
	it->left--;
	if (is_full(it->z)) {
		struct zset_sl_node *n = it->node;
		*member = zset_sl_member(n);
		*mlen = n->mlen;
		*score = n->score;
		it->node = it->rev ? n->backward : n->level[0].forward;
		return true;
	}
	struct zset_lp_elem el;
	if (it->rev) {
		zset_lp_next(&it->z->lp, it->offs[it->offs_next], &el);
		if (it->offs_next)
			it->offs_next--;
	} else {
		it->off = zset_lp_next(&it->z->lp, it->off, &el);
	}
	*member = el.member;
	*mlen = el.mlen;
	*score = el.score;
	return true;
}

void zset_iter_release(struct zset_iter *it)
{
	if (it->offs && it->offs != it->offs_buf)
		zr_free(it->offs);
	it->offs = NULL;
	it->left = 0;
}

/* --- scan ------------------------------------------------------------------------ */

struct scan_ctx {
	zset_visit_fn fn;
	void *ctx;
};

static void scan_node(const struct zset_sl_node *n, void *ctx)
{
	struct scan_ctx *sc = ctx;
	sc->fn(zset_sl_member(n), n->mlen, n->score, sc->ctx);
}

uint64_t zset_scan(const struct zset *z, uint64_t cursor, zset_visit_fn fn, void *ctx)
{
	if (!is_full(z)) {
		struct zset_lp_elem el;
		for (uint32_t off = 0; off < z->lp.used;) {
			off = zset_lp_next(&z->lp, off, &el);
			fn(el.member, el.mlen, el.score, ctx);
		}
		return 0;
	}
	struct scan_ctx sc = { fn, ctx };
	return zset_sl_scan(z->full.sl, cursor, scan_node, &sc);
}

/* --- store_type_ops ------------------------------------------------------------------ */

size_t zset_score_str(char *buf, size_t size, double score)
{
	int n;
	if (isinf(score))
		n = snprintf(buf, size, "%s", score > 0 ? "inf" : "-inf");
	else
		n = snprintf(buf, size, "%.17g", score);
	return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

static void ops_free(void *obj)
{
	zset_free(obj);
}

static void *ops_dup(const void *obj)
{
	return zset_dup(obj);
}

static size_t ops_memory(const void *obj)
{
	return zset_memory(obj);
}

static const char *ops_encoding(const void *obj)
{
	return zset_is_compact(obj) ? "listpack" : "skiplist";
}

#define REWRITE_BATCH 64

/* ZADD key score member ... in batches of REWRITE_BATCH members.
 *
 * A full set's members scored -0 come last. The compact encoding keeps a
 * zero score without its sign (as Redis's listpack does), so a rebuild
 * (snapshot load, full sync) that starts compact and converts would turn
 * them into 0 where this set says -0; after every other member the
 * rebuilt set is full again whenever the size made this one full. */
static int rewrite_pass(const struct zset *z, const char **argv, size_t *lens, char (*scores)[32], int pass,
			store_emit_fn emit, void *ctx)
{
	struct zset_iter it;
	zset_iter_init(&it, z, 0, false);
	const char *m;
	size_t mlen;
	double score;
	int batch = 0, rc = 0;
	while (zset_iter_next(&it, &m, &mlen, &score)) {
		bool negzero = score == 0 && signbit(score);
		if (pass != (negzero ? 2 : 1) && pass != 0)
			continue;
		lens[2 + 2 * batch] = zset_score_str(scores[batch], 32, score);
		argv[2 + 2 * batch] = scores[batch];
		argv[3 + 2 * batch] = m;
		lens[3 + 2 * batch] = mlen;
		if (++batch == REWRITE_BATCH) {
			rc = emit(2 + 2 * batch, argv, lens, ctx);
			batch = 0;
			if (rc)
				break;
		}
	}
	if (!rc && batch)
		rc = emit(2 + 2 * batch, argv, lens, ctx);
	zset_iter_release(&it);
	return rc;
}

static int ops_rewrite(const void *obj, const char *key, size_t klen, store_emit_fn emit, void *ctx)
{
	const struct zset *z = obj;
	const char *argv[2 + 2 * REWRITE_BATCH];
	size_t lens[2 + 2 * REWRITE_BATCH];
	char scores[REWRITE_BATCH][32];
	argv[0] = "ZADD";
	lens[0] = 4;
	argv[1] = key;
	lens[1] = klen;
	if (zset_is_compact(z)) /* pass 0: every member, in order */
		return rewrite_pass(z, argv, lens, scores, 0, emit, ctx);
	int rc = rewrite_pass(z, argv, lens, scores, 1, emit, ctx);
	return rc ? rc : rewrite_pass(z, argv, lens, scores, 2, emit, ctx);
}

const struct store_type_ops store_zset_ops = {
	.free = ops_free,
	.dup = ops_dup,
	.memory = ops_memory,
	.encoding = ops_encoding,
	.rewrite = ops_rewrite,
};
