/* cmd_zset — the sorted-set commands, Redis 7.0's t_zset.c semantics: ZADD
 * (NX XX GT LT CH INCR) and ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK,
 * ZREVRANK, ZCOUNT, ZLEXCOUNT, the ZRANGE family (ZRANGE with BYSCORE /
 * BYLEX / REV / LIMIT / WITHSCORES, ZRANGESTORE and the older ZREVRANGE,
 * Z[REV]RANGEBYSCORE, Z[REV]RANGEBYLEX), the ZREMRANGEBY* trio,
 * ZRANDMEMBER and ZSCAN. The pops (ZPOPMIN ZPOPMAX ZMPOP and the blocking
 * BZPOPMIN BZPOPMAX BZMPOP) are in cmd_zset_pop.c, the set operations
 * (ZUNION ZINTER ZDIFF, their STORE forms, ZINTERCARD) in
 * cmd_zset_setops.c.
 *
 * Every handler runs on the client's worker with the shard locks of its
 * row's keys held by the dispatcher, so only *_locked store calls here. The
 * data structure is store/zset.h; this file parses arguments in Redis's
 * order (so the same bad command gets the same error first), looks keys up
 * as lookupKeyRead / lookupKeyWrite do, and replies. Scores are replied
 * with reply_double (RESP2 bulk "%.17g", RESP3 double); a WITHSCORES reply
 * is a flat array in RESP2 and an array of [member, score] pairs in RESP3.
 */
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/commands/cmd_zset.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/commands/scanutil.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"
#include "zarisd/store/zset.h"

#define ERR_NAN "ERR resulting score is not a number (NaN)"
#define ERR_MINMAX_FLOAT "ERR min or max is not a float"
#define ERR_MINMAX_LEX "ERR min or max not valid string range item"

/* --- shared helpers (cmd_zset.h) ---------------------------------------------- */

void zcmd_limits(const struct client *c, struct zset_limits *lim)
{
	long long e = atomic_load_explicit(&c->srv->cfg->zset_max_listpack_entries, memory_order_relaxed);
	long long v = atomic_load_explicit(&c->srv->cfg->zset_max_listpack_value, memory_order_relaxed);
	lim->max_entries = e < 0 ? 0 : (size_t)e;
	lim->max_value = v < 0 ? 0 : (size_t)v;
}

bool zcmd_lookup(struct client *c, int argi, bool write, struct entry **e, struct zset **z)
{
	*e = store_find_locked(c->srv->store, c->db, c->argv[argi].ptr, c->argv[argi].len, c->now_ms,
			       write ? STORE_LOOKUP_NOSTATS : 0);
	*z = NULL;
	if (!*e)
		return true;
	if (entry_type(*e) != STORE_TYPE_ZSET) {
		reply_error(&c->out, ERR_WRONGTYPE);
		return false;
	}
	*z = entry_obj(*e);
	return true;
}

void zcmd_written(struct client *c, int keyi, struct entry *e, struct zset *z, const char *event)
{
	notify_arg(c, NOTIFY_ZSET, event, keyi);
	if (zset_card(z) == 0) {
		store_delete_entry_locked(c->srv->store, c->db, e);
		notify_arg(c, NOTIFY_GENERIC, "del", keyi);
	} else {
		store_modified_locked(c->srv->store, c->db, e);
	}
}

bool zcmd_store_new(struct client *c, int keyi, struct zset *z)
{
	if (store_set_object_locked(c->srv->store, c->db, c->argv[keyi].ptr, c->argv[keyi].len,
				    STORE_TYPE_ZSET, z, -1, 0, NULL) < 0) {
		zset_free(z);
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	/* a client blocked in BZPOP* waits only on keys without a sorted set,
	 * so creating one is the event that may serve it (Redis's dbAdd) */
	blocking_signal_key(c->srv, c->db, c->argv[keyi].ptr, c->argv[keyi].len);
	return true;
}

void zcmd_store_result(struct client *c, int keyi, struct zset *z, const char *event)
{
	size_t card = zset_card(z);
	if (card == 0) {
		zset_free(z);
		bool existed = store_delete_locked(c->srv->store, c->db, c->argv[keyi].ptr, c->argv[keyi].len,
						   c->now_ms);
		reply_long(&c->out, 0);
		if (existed)
			notify_arg(c, NOTIFY_GENERIC, "del", keyi);
		return;
	}
	if (!zcmd_store_new(c, keyi, z))
		return;
	/* Redis replies before it notifies here */
	reply_long(&c->out, (long long)card);
	notify_arg(c, NOTIFY_ZSET, event, keyi);
}

void zcmd_reply_elems_header(struct client *c, long n, bool withscores)
{
	reply_array(&c->out, withscores && c->resp == 2 ? n * 2 : n);
}

void zcmd_reply_elem(struct client *c, const char *m, size_t mlen, double score, bool withscores)
{
	if (withscores && c->resp > 2)
		reply_array(&c->out, 2);
	reply_bulk(&c->out, m, mlen);
	if (withscores)
		reply_double(&c->out, score);
}

/* --- range parsing ------------------------------------------------------------ */

/* One end of a score range as zslParseRange reads it: an optional "(",
 * then strtod over the C string (so leading blanks, hex and "" are
 * accepted as Redis accepts them), no NaN. */
static bool parse_score_bound(const char *p, size_t len, double *v, bool *ex)
{
	*ex = false;
	if (len && p[0] == '(') {
		*ex = true;
		p++;
		len--;
	}
	char stack[64];
	char *buf = len < sizeof(stack) ? stack : zr_malloc(len + 1);
	memcpy(buf, p, len);
	buf[len] = '\0';
	char *end;
	*v = strtod(buf, &end);
	bool ok = *end == '\0' && !isnan(*v);
	if (buf != stack)
		zr_free(buf);
	return ok;
}

bool zcmd_parse_score_range(struct client *c, int mini, int maxi, struct zset_score_range *r)
{
	if (parse_score_bound(c->argv[mini].ptr, c->argv[mini].len, &r->min, &r->minex) &&
	    parse_score_bound(c->argv[maxi].ptr, c->argv[maxi].len, &r->max, &r->maxex))
		return true;
	reply_error(&c->out, ERR_MINMAX_FLOAT);
	return false;
}

/* zslParseLexRangeItem: "+" / "-" (checked like Redis, up to a NUL), or
 * "(" / "[" and a string. */
static bool parse_lex_bound(const char *p, size_t len, const char **s, size_t *slen, int *inf, bool *ex)
{
	if (len == 0)
		return false;
	*s = NULL;
	*slen = 0;
	*inf = 0;
	switch (p[0]) {
	case '+':
	case '-':
		if (len > 1 && p[1] != '\0')
			return false;
		*inf = p[0] == '+' ? 1 : -1;
		*ex = true;
		return true;
	case '(':
	case '[':
		*ex = p[0] == '(';
		*s = p + 1;
		*slen = len - 1;
		return true;
	default:
		return false;
	}
}

bool zcmd_parse_lex_range(struct client *c, int mini, int maxi, struct zset_lex_range *r)
{
	if (parse_lex_bound(c->argv[mini].ptr, c->argv[mini].len, &r->min, &r->minlen, &r->mininf,
			    &r->minex) &&
	    parse_lex_bound(c->argv[maxi].ptr, c->argv[maxi].len, &r->max, &r->maxlen, &r->maxinf, &r->maxex))
		return true;
	reply_error(&c->out, ERR_MINMAX_LEX);
	return false;
}

/* --- ZADD / ZINCRBY ------------------------------------------------------------ */

/* zaddGenericCommand: options from argv[2], then score/member pairs. */
static void zadd_generic(struct client *c, unsigned flags)
{
	bool ch = false;
	int si = 2;
	for (; si < c->argc; si++) {
		if (cmd_opt_is(c, si, "nx"))
			flags |= ZSET_ADD_NX;
		else if (cmd_opt_is(c, si, "xx"))
			flags |= ZSET_ADD_XX;
		else if (cmd_opt_is(c, si, "ch"))
			ch = true;
		else if (cmd_opt_is(c, si, "incr"))
			flags |= ZSET_ADD_INCR;
		else if (cmd_opt_is(c, si, "gt"))
			flags |= ZSET_ADD_GT;
		else if (cmd_opt_is(c, si, "lt"))
			flags |= ZSET_ADD_LT;
		else
			break;
	}
	int elements = c->argc - si;
	if (elements % 2 || !elements) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	elements /= 2;
	bool nx = flags & ZSET_ADD_NX, xx = flags & ZSET_ADD_XX, gt = flags & ZSET_ADD_GT,
	     lt = flags & ZSET_ADD_LT, incr = flags & ZSET_ADD_INCR;
	if (nx && xx) {
		reply_error(&c->out, "ERR XX and NX options at the same time are not compatible");
		return;
	}
	if ((gt && nx) || (lt && nx) || (gt && lt)) {
		reply_error(&c->out, "ERR GT, LT, and/or NX options at the same time are not compatible");
		return;
	}
	if (incr && elements > 1) {
		reply_error(&c->out, "ERR INCR option supports a single increment-element pair");
		return;
	}
	/* every score is parsed before anything changes: all or nothing */
	double stack_scores[16];
	double *scores = elements <= 16 ? stack_scores : zr_malloc(sizeof(double) * (size_t)elements);
	for (int j = 0; j < elements; j++)
		if (!cmd_arg_double(c, si + j * 2, &scores[j], NULL))
			goto out;

	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, true, &e, &z))
		goto out;
	struct zset_limits lim;
	zcmd_limits(c, &lim);
	long long added = 0, updated = 0, processed = 0;
	double score = 0;
	bool created = false;
	if (!z) {
		if (xx)
			goto reply;
		z = zset_create(c->argv[si + 1].len, &lim);
		created = true;
	}
	for (int j = 0; j < elements; j++) {
		double newscore = 0;
		unsigned r = zset_add(z, scores[j], c->argv[si + j * 2 + 1].ptr, c->argv[si + j * 2 + 1].len,
				      flags, &newscore, &lim);
		if (r & ZSET_OUT_NAN) {
			/* only INCR of a present member gets here: nothing was added */
			if (created)
				zset_free(z);
			reply_error(&c->out, ERR_NAN);
			goto out;
		}
		if (r & ZSET_OUT_ADDED)
			added++;
		if (r & ZSET_OUT_UPDATED)
			updated++;
		if (!(r & ZSET_OUT_NOP))
			processed++;
		score = newscore;
	}
	if (created) {
		if (!zcmd_store_new(c, 1, z))
			goto out;
	} else if (added || updated) {
		store_modified_locked(c->srv->store, c->db, e);
	}
	if (added || updated)
		store_write_changes_are((uint64_t)(added + updated)); /* Redis counts each member */
reply:
	if (incr) {
		if (processed)
			reply_double(&c->out, score);
		else
			reply_null(&c->out);
	} else {
		reply_long(&c->out, ch ? added + updated : added);
	}
	/* Redis notifies after the reply here (a RESP3 subscriber of its own
	 * events sees the reply first) */
	if (added || updated)
		notify_arg(c, NOTIFY_ZSET, incr ? "zincr" : "zadd", 1);
out:
	if (scores != stack_scores)
		zr_free(scores);
}

void cmd_zadd(struct client *c)
{
	zadd_generic(c, 0);
}

void cmd_zincrby(struct client *c)
{
	zadd_generic(c, ZSET_ADD_INCR);
}

/* --- single-member reads and ZREM ------------------------------------------------ */

void cmd_zrem(struct client *c)
{
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, true, &e, &z))
		return;
	long long deleted = 0;
	if (z) {
		for (int j = 2; j < c->argc; j++) {
			deleted += zset_remove(z, c->argv[j].ptr, c->argv[j].len);
			if (zset_card(z) == 0)
				break;
		}
		if (deleted) {
			zcmd_written(c, 1, e, z, "zrem");
			store_write_changes_are((uint64_t)deleted);
		}
	}
	reply_long(&c->out, deleted);
}

void cmd_zcard(struct client *c)
{
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	reply_long(&c->out, z ? (long long)zset_card(z) : 0);
}

void cmd_zscore(struct client *c)
{
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	double score;
	if (z && zset_score(z, c->argv[2].ptr, c->argv[2].len, &score))
		reply_double(&c->out, score);
	else
		reply_null(&c->out);
}

void cmd_zmscore(struct client *c)
{
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	reply_array(&c->out, c->argc - 2);
	for (int j = 2; j < c->argc; j++) {
		double score;
		if (z && zset_score(z, c->argv[j].ptr, c->argv[j].len, &score))
			reply_double(&c->out, score);
		else
			reply_null(&c->out);
	}
}

static void zrank_generic(struct client *c, bool rev)
{
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	size_t rank;
	if (z && zset_rank(z, c->argv[2].ptr, c->argv[2].len, rev, &rank))
		reply_long(&c->out, (long long)rank);
	else
		reply_null(&c->out);
}

void cmd_zrank(struct client *c)
{
	zrank_generic(c, false);
}

void cmd_zrevrank(struct client *c)
{
	zrank_generic(c, true);
}

void cmd_zcount(struct client *c)
{
	struct zset_score_range r;
	if (!zcmd_parse_score_range(c, 2, 3, &r))
		return;
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	size_t first;
	reply_long(&c->out, z ? (long long)zset_score_span(z, &r, &first) : 0);
}

void cmd_zlexcount(struct client *c)
{
	struct zset_lex_range r;
	if (!zcmd_parse_lex_range(c, 2, 3, &r))
		return;
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	size_t first;
	reply_long(&c->out, z ? (long long)zset_lex_span(z, &r, &first) : 0);
}

/* --- the ZRANGE family ----------------------------------------------------------- */

enum range_type {
	RANGE_AUTO,
	RANGE_RANK,
	RANGE_SCORE,
	RANGE_LEX,
};

enum range_dir {
	DIR_AUTO,
	DIR_FORWARD,
	DIR_REVERSE,
};

/* Where the elements of a range go: the client, or a new set (ZRANGESTORE). */
struct range_out {
	struct client *c;
	bool withscores;
	struct zset *dst;
	struct zset_limits lim;
};

/* Emits COUNT elements of Z from rank START, walking backward when REV. */
static void range_emit(struct range_out *o, const struct zset *z, size_t start, size_t count, bool rev)
{
	if (!o->dst)
		zcmd_reply_elems_header(o->c, (long)count, o->withscores);
	if (!count)
		return;
	struct zset_iter it;
	zset_iter_init(&it, z, start, rev);
	const char *m;
	size_t mlen;
	double score;
	while (count-- && zset_iter_next(&it, &m, &mlen, &score)) {
		if (o->dst)
			zset_add(o->dst, score, m, mlen, 0, NULL, &o->lim);
		else
			zcmd_reply_elem(o->c, m, mlen, score, o->withscores);
	}
	zset_iter_release(&it);
}

/* genericZrangebyrankCommand's index sanitizing. */
static void range_by_rank(struct range_out *o, const struct zset *z, long long start, long long end, bool rev)
{
	long long llen = (long long)zset_card(z);
	if (start < 0)
		start += llen;
	if (end < 0)
		end += llen;
	if (start < 0)
		start = 0;
	if (start > end || start >= llen) {
		range_emit(o, z, 0, 0, false);
		return;
	}
	if (end >= llen)
		end = llen - 1;
	size_t n = (size_t)(end - start + 1);
	range_emit(o, z, rev ? (size_t)(llen - 1 - start) : (size_t)start, n, rev);
}

/* A rank span [FIRST, FIRST + N) narrowed by LIMIT OFFSET COUNT the way
 * Redis's walks do: a negative offset skips past the end (empty), a
 * negative count means no limit. */
static void range_by_span(struct range_out *o, const struct zset *z, size_t first, size_t n, long long offset,
			  long long limit, bool rev)
{
	if (offset < 0 || (unsigned long long)offset >= n) {
		range_emit(o, z, 0, 0, false);
		return;
	}
	size_t avail = n - (size_t)offset;
	size_t count = limit < 0 || (unsigned long long)limit > avail ? avail : (size_t)limit;
	size_t start = rev ? first + n - 1 - (size_t)offset : first + (size_t)offset;
	range_emit(o, z, start, count, rev);
}

/* zrangeGenericCommand: the key at argv[ARGC_START], min and max after it,
 * then options. STORE: ZRANGESTORE (argv[1] is the destination). */
static void zrange_generic(struct client *c, int argc_start, bool store, enum range_type type,
			   enum range_dir dir)
{
	int mini = argc_start + 1, maxi = argc_start + 2;
	bool withscores = false;
	long long offset = 0, limit = -1;
	for (int j = argc_start + 3; j < c->argc; j++) {
		int left = c->argc - j - 1;
		if (!store && cmd_opt_is(c, j, "withscores")) {
			withscores = true;
		} else if (cmd_opt_is(c, j, "limit") && left >= 2) {
			if (!cmd_arg_ll(c, j + 1, &offset, NULL) || !cmd_arg_ll(c, j + 2, &limit, NULL))
				return;
			j += 2;
		} else if (dir == DIR_AUTO && cmd_opt_is(c, j, "rev")) {
			dir = DIR_REVERSE;
		} else if (type == RANGE_AUTO && cmd_opt_is(c, j, "bylex")) {
			type = RANGE_LEX;
		} else if (type == RANGE_AUTO && cmd_opt_is(c, j, "byscore")) {
			type = RANGE_SCORE;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	if (dir == DIR_AUTO)
		dir = DIR_FORWARD;
	if (type == RANGE_AUTO)
		type = RANGE_RANK;
	if (limit != -1 && type == RANGE_RANK) {
		reply_error(
			&c->out,
			"ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX");
		return;
	}
	if (withscores && type == RANGE_LEX) {
		reply_error(&c->out, "ERR syntax error, WITHSCORES not supported in combination with BYLEX");
		return;
	}
	bool rev = dir == DIR_REVERSE;
	if (rev && type != RANGE_RANK) {
		/* the range is given as max, min */
		int t = mini;
		mini = maxi;
		maxi = t;
	}
	long long start = 0, end = 0;
	struct zset_score_range sr;
	struct zset_lex_range lr;
	switch (type) {
	case RANGE_SCORE:
		if (!zcmd_parse_score_range(c, mini, maxi, &sr))
			return;
		break;
	case RANGE_LEX:
		if (!zcmd_parse_lex_range(c, mini, maxi, &lr))
			return;
		break;
	default:
		if (!cmd_arg_ll(c, mini, &start, NULL) || !cmd_arg_ll(c, maxi, &end, NULL))
			return;
		break;
	}

	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, argc_start, false, &e, &z))
		return;
	struct range_out o = { .c = c, .withscores = withscores || store };
	if (store) {
		zcmd_limits(c, &o.lim);
		o.dst = zset_create(0, &o.lim);
	}
	if (z) {
		size_t first, n;
		switch (type) {
		case RANGE_SCORE:
			n = zset_score_span(z, &sr, &first);
			range_by_span(&o, z, first, n, offset, limit, rev);
			break;
		case RANGE_LEX:
			n = zset_lex_span(z, &lr, &first);
			range_by_span(&o, z, first, n, offset, limit, rev);
			break;
		default:
			range_by_rank(&o, z, start, end, rev);
			break;
		}
	} else if (!store) {
		reply_array(&c->out, 0);
	}
	if (store) {
		zcmd_store_result(c, 1, o.dst, "zrangestore");
	}
}

void cmd_zrange(struct client *c)
{
	zrange_generic(c, 1, false, RANGE_AUTO, DIR_AUTO);
}

void cmd_zrangestore(struct client *c)
{
	zrange_generic(c, 2, true, RANGE_AUTO, DIR_AUTO);
}

void cmd_zrevrange(struct client *c)
{
	zrange_generic(c, 1, false, RANGE_RANK, DIR_REVERSE);
}

void cmd_zrangebyscore(struct client *c)
{
	zrange_generic(c, 1, false, RANGE_SCORE, DIR_FORWARD);
}

void cmd_zrevrangebyscore(struct client *c)
{
	zrange_generic(c, 1, false, RANGE_SCORE, DIR_REVERSE);
}

void cmd_zrangebylex(struct client *c)
{
	zrange_generic(c, 1, false, RANGE_LEX, DIR_FORWARD);
}

void cmd_zrevrangebylex(struct client *c)
{
	zrange_generic(c, 1, false, RANGE_LEX, DIR_REVERSE);
}

/* --- ZREMRANGEBY* ---------------------------------------------------------------- */

static void zremrange_generic(struct client *c, enum range_type type)
{
	long long start = 0, end = 0;
	struct zset_score_range sr;
	struct zset_lex_range lr;
	if (type == RANGE_RANK) {
		if (!cmd_arg_ll(c, 2, &start, NULL) || !cmd_arg_ll(c, 3, &end, NULL))
			return;
	} else if (type == RANGE_SCORE) {
		if (!zcmd_parse_score_range(c, 2, 3, &sr))
			return;
	} else if (!zcmd_parse_lex_range(c, 2, 3, &lr)) {
		return;
	}
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, true, &e, &z))
		return;
	if (!z) {
		reply_long(&c->out, 0);
		return;
	}
	size_t first = 0, n = 0;
	if (type == RANGE_RANK) {
		long long llen = (long long)zset_card(z);
		if (start < 0)
			start += llen;
		if (end < 0)
			end += llen;
		if (start < 0)
			start = 0;
		if (start > end || start >= llen) {
			reply_long(&c->out, 0);
			return;
		}
		if (end >= llen)
			end = llen - 1;
		first = (size_t)start;
		n = (size_t)(end - start + 1);
	} else if (type == RANGE_SCORE) {
		n = zset_score_span(z, &sr, &first);
	} else {
		n = zset_lex_span(z, &lr, &first);
	}
	if (n) {
		static const char *const events[] = {
			[RANGE_RANK] = "zremrangebyrank",
			[RANGE_SCORE] = "zremrangebyscore",
			[RANGE_LEX] = "zremrangebylex",
		};
		zset_remove_ranks(z, first, n);
		zcmd_written(c, 1, e, z, events[type]);
		store_write_changes_are(n);
	}
	reply_long(&c->out, (long long)n);
}

void cmd_zremrangebyrank(struct client *c)
{
	zremrange_generic(c, RANGE_RANK);
}

void cmd_zremrangebyscore(struct client *c)
{
	zremrange_generic(c, RANGE_SCORE);
}

void cmd_zremrangebylex(struct client *c)
{
	zremrange_generic(c, RANGE_LEX);
}

/* --- ZRANDMEMBER -------------------------------------------------------------------- */

static uint64_t rnd_next(void)
{
	static _Thread_local uint64_t state;
	if (!state)
		state = ((uint64_t)zr_time_us() ^ ((uint64_t)(uintptr_t)&state << 12)) | 1;
	state ^= state >> 12;
	state ^= state << 25;
	state ^= state >> 27;
	return state * 0x2545f4914f6cdd1dull;
}

/* Uniform in [0, n). */
static size_t rnd_below(size_t n)
{
	return (size_t)(rnd_next() % n);
}

/* Random access by rank: the compact encoding is walked once into an
 * array so that picking is O(1) instead of O(N) per pick. */
struct picker {
	const struct zset *z;
	struct zset_lp_elem *elems;
};

static void picker_init(struct picker *p, const struct zset *z)
{
	p->z = z;
	p->elems = NULL;
	if (!zset_is_compact(z))
		return;
	size_t n = zset_card(z);
	p->elems = zr_malloc(sizeof(*p->elems) * n);
	struct zset_iter it;
	zset_iter_init(&it, z, 0, false);
	for (size_t i = 0; i < n; i++)
		zset_iter_next(&it, &p->elems[i].member, &p->elems[i].mlen, &p->elems[i].score);
	zset_iter_release(&it);
}

static void picker_get(const struct picker *p, size_t rank, const char **m, size_t *mlen, double *score)
{
	if (p->elems) {
		*m = p->elems[rank].member;
		*mlen = p->elems[rank].mlen;
		*score = p->elems[rank].score;
	} else {
		zset_at(p->z, rank, m, mlen, score);
	}
}

static void picker_free(struct picker *p)
{
	ZR_FREE(p->elems);
}

/* COUNT distinct ranks below SIZE (COUNT < SIZE), in random order: a
 * partial Fisher-Yates over all ranks when COUNT is a large share of SIZE
 * (Redis's case 3), else random draws rejected on repeat through a small
 * open-addressing set (case 4). */
static size_t *distinct_ranks(size_t size, size_t count)
{
	size_t *out = zr_malloc(sizeof(size_t) * count);
	if (count * 3 > size) {
		size_t *all = zr_malloc(sizeof(size_t) * size);
		for (size_t i = 0; i < size; i++)
			all[i] = i;
		for (size_t i = 0; i < count; i++) {
			size_t j = i + rnd_below(size - i);
			size_t t = all[i];
			all[i] = all[j];
			all[j] = t;
			out[i] = all[i];
		}
		zr_free(all);
		return out;
	}
	size_t cap = 16;
	while (cap < count * 2)
		cap *= 2;
	size_t *seen = zr_malloc(sizeof(size_t) * cap);
	memset(seen, 0xff, sizeof(size_t) * cap); /* SIZE_MAX = empty slot */
	size_t n = 0;
	while (n < count) {
		size_t r = rnd_below(size);
		size_t h = (r * 0x9e3779b97f4a7c15ull) & (cap - 1);
		while (seen[h] != SIZE_MAX && seen[h] != r)
			h = (h + 1) & (cap - 1);
		if (seen[h] == r)
			continue;
		seen[h] = r;
		out[n++] = r;
	}
	zr_free(seen);
	return out;
}

static void zrandmember_count(struct client *c, long long l, bool withscores)
{
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	if (!z) {
		reply_array(&c->out, 0);
		return;
	}
	size_t size = zset_card(z);
	bool uniq = l >= 0;
	unsigned long long count = uniq ? (unsigned long long)l : (unsigned long long)-l;
	if (count == 0) {
		reply_array(&c->out, 0);
		return;
	}
	const char *m;
	size_t mlen;
	double score;
	struct picker p;
	if (!uniq || count == 1) {
		/* case 1: repetitions allowed */
		picker_init(&p, z);
		zcmd_reply_elems_header(c, (long)count, withscores);
		for (unsigned long long i = 0; i < count; i++) {
			picker_get(&p, rnd_below(size), &m, &mlen, &score);
			zcmd_reply_elem(c, m, mlen, score, withscores);
		}
		picker_free(&p);
		return;
	}
	if (count >= size) {
		/* case 2: the whole set */
		range_by_rank(&(struct range_out){ .c = c, .withscores = withscores }, z, 0, -1, false);
		return;
	}
	picker_init(&p, z);
	size_t *ranks = distinct_ranks(size, (size_t)count);
	zcmd_reply_elems_header(c, (long)count, withscores);
	for (size_t i = 0; i < count; i++) {
		picker_get(&p, ranks[i], &m, &mlen, &score);
		zcmd_reply_elem(c, m, mlen, score, withscores);
	}
	zr_free(ranks);
	picker_free(&p);
}

void cmd_zrandmember(struct client *c)
{
	if (c->argc >= 3) {
		long long l;
		if (!cmd_arg_ll(c, 2, &l, NULL))
			return;
		if (l < -LONG_MAX) {
			reply_errorf(&c->out, "ERR value is out of range, value must between %ld and %ld",
				     -LONG_MAX, LONG_MAX);
			return;
		}
		bool withscores = false;
		if (c->argc > 4 || (c->argc == 4 && !cmd_opt_is(c, 3, "withscores"))) {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
		if (c->argc == 4) {
			withscores = true;
			if (l < -LONG_MAX / 2 || l > LONG_MAX / 2) {
				reply_error(&c->out, "ERR value is out of range");
				return;
			}
		}
		zrandmember_count(c, l, withscores);
		return;
	}
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	if (!z) {
		reply_null(&c->out);
		return;
	}
	const char *m;
	size_t mlen;
	double score;
	zset_at(z, rnd_below(zset_card(z)), &m, &mlen, &score);
	reply_bulk(&c->out, m, mlen);
}

/* --- ZSCAN ------------------------------------------------------------------------------ */

static void scan_visit(const char *m, size_t mlen, double score, void *arg)
{
	char buf[64];
	/* ZSCAN replies scores as bulk strings even in RESP3 */
	scan_offer_pair(arg, m, mlen, buf, zset_score_str(buf, sizeof(buf), score));
}

void cmd_zscan(struct client *c)
{
	uint64_t cursor;
	if (!scan_arg_cursor(c, 2, &cursor))
		return;
	struct entry *e;
	struct zset *z;
	if (!zcmd_lookup(c, 1, false, &e, &z))
		return;
	if (!z) {
		scan_reply_empty(c);
		return;
	}
	struct scan_out so;
	if (!scan_arg_opts(c, 3, false, &so))
		return;
	/* a listpack returns everything in one step, with cursor 0 */
	do
		cursor = zset_scan(z, cursor, scan_visit, &so);
	while (scan_more(&so, cursor));
	scan_reply(c, cursor, &so);
}
