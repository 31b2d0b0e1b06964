/* cmd_zset_setops — ZUNION, ZINTER, ZDIFF, their STORE forms and
 * ZINTERCARD: Redis 7.0's zunionInterDiffGenericCommand. Inputs may be
 * sorted sets or plain sets (every member of a set scores 1); a missing key
 * is an empty input. Inputs are looked up (and type-checked) before the
 * options are parsed, as in Redis, so WRONGTYPE wins over a syntax error.
 *
 * Union and intersection visit the inputs smallest first (a stable sort by
 * cardinality, like glibc's qsort) because floating-point SUM depends on
 * the order of the additions; the result is then ordered by (score,
 * member) as in Redis. The result is built in a full-encoding set and, for
 * the STORE forms, converted to the compact one when it fits (Redis's
 * zsetConvertToListpackIfNeeded).
 *
 * The dispatcher holds the shard locks of the destination and of the
 * numkeys inputs (the row's keynum spec, command.h) whenever numkeys is a
 * valid count whose keys are all present; otherwise the count check below
 * replies before any key is touched. So the inputs cannot change under us.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmd_zset.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/server/server.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/set.h"
#include "zarisd/store/store.h"
#include "zarisd/store/zset.h"

enum setop {
	OP_UNION,
	OP_INTER,
	OP_DIFF,
};

enum aggregate {
	AGG_SUM,
	AGG_MIN,
	AGG_MAX,
};

/* One input. At most one of z / s is set (neither: missing key). */
struct src {
	const struct zset *z;
	const struct set *s;
	double weight;
	size_t card;
	int pos; /* argument order, for the stable sort */
};

/* Walks a source's members with their (unweighted) scores. */
struct src_iter {
	const struct src *src;
	struct zset_iter zi;
	struct set_iter si;
};

static void src_iter_init(struct src_iter *it, const struct src *src)
{
	it->src = src;
	if (src->z)
		zset_iter_init(&it->zi, src->z, 0, false);
	else if (src->s)
		set_iter_init(&it->si, src->s);
}

static bool src_iter_next(struct src_iter *it, const char **m, size_t *mlen, double *score)
{
	if (it->src->z)
		return zset_iter_next(&it->zi, m, mlen, score);
	if (it->src->s) {
		*score = 1.0;
		return set_next(&it->si, m, mlen);
	}
	return false;
}

static void src_iter_release(struct src_iter *it)
{
	if (it->src->z)
		zset_iter_release(&it->zi);
}

static bool src_find(const struct src *src, const char *m, size_t mlen, double *score)
{
	if (src->z)
		return zset_score(src->z, m, mlen, score);
	if (src->s && set_contains(src->s, m, mlen)) {
		*score = 1.0;
		return true;
	}
	return false;
}

static int by_card(const void *a, const void *b)
{
	const struct src *x = a, *y = b;
	if (x->card != y->card)
		return x->card < y->card ? -1 : 1;
	return x->pos - y->pos;
}

/* zunionInterAggregate. */
static void aggregate(double *target, double val, enum aggregate agg)
{
	if (agg == AGG_SUM) {
		*target = *target + val;
		/* inf + -inf is NaN; Redis's convention is 0 */
		if (isnan(*target))
			*target = 0.0;
	} else if (agg == AGG_MIN) {
		*target = val < *target ? val : *target;
	} else {
		*target = val > *target ? val : *target;
	}
}

/* Options after the keys (from argv[J]); false after replying. */
static bool parse_options(struct client *c, int j, struct src *src, long long setnum, enum setop op,
			  bool store, bool card_only, enum aggregate *agg, bool *withscores, long long *limit)
{
	while (j < c->argc) {
		long long remaining = c->argc - j;
		if (op != OP_DIFF && !card_only && remaining >= setnum + 1 && cmd_opt_is(c, j, "weights")) {
			j++;
			for (long long i = 0; i < setnum; i++, j++)
				if (!cmd_arg_double(c, j, &src[i].weight, "ERR weight value is not a float"))
					return false;
		} else if (op != OP_DIFF && !card_only && remaining >= 2 && cmd_opt_is(c, j, "aggregate")) {
			j++;
			if (cmd_opt_is(c, j, "sum")) {
				*agg = AGG_SUM;
			} else if (cmd_opt_is(c, j, "min")) {
				*agg = AGG_MIN;
			} else if (cmd_opt_is(c, j, "max")) {
				*agg = AGG_MAX;
			} else {
				reply_error(&c->out, ERR_SYNTAX);
				return false;
			}
			j++;
		} else if (!store && !card_only && cmd_opt_is(c, j, "withscores")) {
			j++;
			*withscores = true;
		} else if (card_only && remaining >= 2 && cmd_opt_is(c, j, "limit")) {
			j++;
			if (!cmd_arg_ll(c, j, limit, "ERR LIMIT can't be negative"))
				return false;
			if (*limit < 0) {
				reply_error(&c->out, "ERR LIMIT can't be negative");
				return false;
			}
			j++;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

static void do_union(struct zset *dst, struct src *src, long long setnum, enum aggregate agg,
		     const struct zset_limits *full)
{
	for (long long i = 0; i < setnum; i++) {
		if (!src[i].card)
			continue;
		struct src_iter it;
		src_iter_init(&it, &src[i]);
		const char *m;
		size_t mlen;
		double v;
		while (src_iter_next(&it, &m, &mlen, &v)) {
			double score = src[i].weight * v;
			if (isnan(score))
				score = 0;
			double cur;
			if (zset_score(dst, m, mlen, &cur)) {
				aggregate(&cur, score, agg);
				score = cur;
			}
			zset_add(dst, score, m, mlen, 0, NULL, full);
		}
		src_iter_release(&it);
	}
}

/* Intersection into DST, or (DST NULL) its cardinality up to LIMIT (0 =
 * no limit). */
static size_t do_inter(struct zset *dst, struct src *src, long long setnum, enum aggregate agg,
		       long long limit, const struct zset_limits *full)
{
	size_t card = 0;
	if (!src[0].card)
		return 0;
	struct src_iter it;
	src_iter_init(&it, &src[0]);
	const char *m;
	size_t mlen;
	double v;
	while (src_iter_next(&it, &m, &mlen, &v)) {
		double score = src[0].weight * v;
		if (isnan(score))
			score = 0;
		long long j;
		for (j = 1; j < setnum; j++) {
			double value;
			if (!src_find(&src[j], m, mlen, &value))
				break;
			aggregate(&score, value * src[j].weight, agg);
		}
		if (j < setnum)
			continue;
		if (!dst) {
			if (++card >= (unsigned long long)limit && limit)
				break;
		} else {
			zset_add(dst, isnan(score) ? 0 : score, m, mlen, 0, NULL, full);
		}
	}
	src_iter_release(&it);
	return card;
}

static void do_diff(struct zset *dst, struct src *src, long long setnum, const struct zset_limits *full)
{
	if (!src[0].card)
		return;
	struct src_iter it;
	src_iter_init(&it, &src[0]);
	const char *m;
	size_t mlen;
	double v;
	while (src_iter_next(&it, &m, &mlen, &v)) {
		long long j;
		double value;
		for (j = 1; j < setnum; j++)
			if (src_find(&src[j], m, mlen, &value))
				break;
		if (j == setnum)
			zset_add(dst, v, m, mlen, 0, NULL, full);
	}
	src_iter_release(&it);
}

/* zunionInterDiffGenericCommand: DSTI is the destination's argv index (0
 * for the forms that reply the result), NUMKEYS_I the numkeys argument. */
static void setop_generic(struct client *c, int dsti, int numkeys_i, enum setop op, bool card_only)
{
	long long setnum;
	if (!cmd_arg_ll(c, numkeys_i, &setnum, NULL))
		return;
	if (setnum < 1) {
		reply_errorf(&c->out, "ERR at least 1 input key is needed for '%s' command", c->cmd->name);
		return;
	}
	if (setnum > c->argc - (numkeys_i + 1)) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	struct src *src = zr_calloc((size_t)setnum, sizeof(*src));
	int j = numkeys_i + 1;
	for (long long i = 0; i < setnum; i++, j++) {
		struct entry *e =
			store_find_locked(c->srv->store, c->db, c->argv[j].ptr, c->argv[j].len, c->now_ms, 0);
		src[i].weight = 1.0;
		src[i].pos = (int)i;
		if (!e)
			continue;
		if (entry_type(e) == STORE_TYPE_ZSET) {
			src[i].z = entry_obj(e);
			src[i].card = zset_card(src[i].z);
		} else if (entry_type(e) == STORE_TYPE_SET) {
			src[i].s = entry_obj(e);
			src[i].card = (size_t)set_size(src[i].s);
		} else {
			reply_error(&c->out, ERR_WRONGTYPE);
			goto out;
		}
	}
	enum aggregate agg = AGG_SUM;
	bool withscores = false;
	long long limit = 0;
	if (!parse_options(c, j, src, setnum, op, dsti > 0, card_only, &agg, &withscores, &limit))
		goto out;
	if (op != OP_DIFF)
		qsort(src, (size_t)setnum, sizeof(*src), by_card);

	/* the accumulator never converts: it stays a skiplist, as in Redis */
	const struct zset_limits full = { 0, 0 };
	if (card_only) {
		reply_long(&c->out, (long long)do_inter(NULL, src, setnum, agg, limit, &full));
		goto out;
	}
	struct zset *dst = zset_create_full();
	if (op == OP_UNION)
		do_union(dst, src, setnum, agg, &full);
	else if (op == OP_INTER)
		do_inter(dst, src, setnum, agg, 0, &full);
	else
		do_diff(dst, src, setnum, &full);

	if (dsti) {
		struct zset_limits lim;
		zcmd_limits(c, &lim);
		zset_compact_if_fits(dst, &lim);
		static const char *const events[] = {
			[OP_UNION] = "zunionstore",
			[OP_INTER] = "zinterstore",
			[OP_DIFF] = "zdiffstore",
		};
		zcmd_store_result(c, dsti, dst, events[op]);
		goto out;
	}
	size_t n = zset_card(dst);
	zcmd_reply_elems_header(c, (long)n, withscores);
	struct zset_iter it;
	zset_iter_init(&it, dst, 0, false);
	const char *m;
	size_t mlen;
	double score;
	while (zset_iter_next(&it, &m, &mlen, &score))
		zcmd_reply_elem(c, m, mlen, score, withscores);
	zset_iter_release(&it);
	zset_free(dst);
out:
	zr_free(src);
}

void cmd_zunion(struct client *c)
{
	setop_generic(c, 0, 1, OP_UNION, false);
}

void cmd_zinter(struct client *c)
{
	setop_generic(c, 0, 1, OP_INTER, false);
}

void cmd_zdiff(struct client *c)
{
	setop_generic(c, 0, 1, OP_DIFF, false);
}

void cmd_zunionstore(struct client *c)
{
	setop_generic(c, 1, 2, OP_UNION, false);
}

void cmd_zinterstore(struct client *c)
{
	setop_generic(c, 1, 2, OP_INTER, false);
}

void cmd_zdiffstore(struct client *c)
{
	setop_generic(c, 1, 2, OP_DIFF, false);
}

void cmd_zintercard(struct client *c)
{
	setop_generic(c, 0, 1, OP_INTER, true);
}
