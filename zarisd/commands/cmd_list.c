/* cmd_list — the list commands (Redis's t_list.c) and the blocking pops
 * (BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP) on top of commands/blocking.h.
 *
 * Argument checks come in Redis 7.0's order (a bad index is reported
 * before or after the key lookup exactly where 7.0 does), replies are
 * 7.0's. Writes that add elements signal the key so blocked clients get
 * served after the command (blocking.h). A list emptied by a command is
 * deleted.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/list.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define ERR_RANGE_POSITIVE "ERR value is out of range, must be positive"

/* --- helpers shared by handlers and serve callbacks ------------------------- */

static int list_fill(struct server *srv)
{
	long long f = atomic_load_explicit(&srv->cfg->list_max_listpack_size, memory_order_relaxed);
	return f < INT_MIN ? INT_MIN : f > INT_MAX ? INT_MAX : (int)f;
}

/* Finds KEY; NULL when absent. *WRONG is set when it holds another type. */
static struct entry *find_list(struct store *s, unsigned db, const char *key, size_t klen, int64_t now_ms,
			       int flags, bool *wrong)
{
	struct entry *e = store_find_locked(s, db, key, klen, now_ms, flags);
	*wrong = e && entry_type(e) != STORE_TYPE_LIST;
	return *wrong ? NULL : e;
}

/* Finds argv[I]: *E set (NULL when missing); false after a WRONGTYPE reply.
 * Write lookups are not counted as hits/misses (lookupKeyWrite). */
static bool lookup(struct client *c, int i, bool write, struct entry **e)
{
	bool wrong;
	*e = find_list(c->srv->store, c->db, c->argv[i].ptr, c->argv[i].len, c->now_ms,
		       write ? STORE_LOOKUP_NOSTATS : 0, &wrong);
	if (wrong) {
		reply_error(&c->out, ERR_WRONGTYPE);
		return false;
	}
	return true;
}

/* Redis's listElementsRemoved: after elements left E's list (key KEY),
 * sends EVENT, then deletes the key when the list emptied (and sends
 * "del"), else records the change. */
static void list_removed(struct server *srv, unsigned db, struct entry *e, const char *key, size_t klen,
			 const char *event)
{
	notify_keyspace_event(srv, NOTIFY_LIST, event, key, klen, db);
	if (list_len(entry_obj(e)) == 0) {
		store_delete_entry_locked(srv->store, db, e);
		notify_keyspace_event(srv, NOTIFY_GENERIC, "del", key, klen, db);
	} else {
		store_modified_locked(srv->store, db, e);
	}
}

static const char *pop_event(enum list_where where)
{
	return where == LIST_HEAD ? "lpop" : "rpop";
}

static const char *push_event(enum list_where where)
{
	return where == LIST_HEAD ? "lpush" : "rpush";
}

/* The list of KEY, created empty when absent (*E updated). NULL on OOM. */
static struct list *ensure_list(struct server *srv, unsigned db, const char *key, size_t klen,
				struct entry **e)
{
	if (*e)
		return entry_obj(*e);
	struct list *l = list_create(list_fill(srv));
	if (store_set_object_locked(srv->store, db, key, klen, STORE_TYPE_LIST, l, -1, 0, e) < 0) {
		list_free(l);
		return NULL;
	}
	return l;
}

/* Pops up to COUNT elements at WHERE of E's list (key KEY) as an array of
 * bulks; the events follow the reply, as in Redis. */
static void pop_n(struct server *srv, unsigned db, struct entry *e, const char *key, size_t klen,
		  enum list_where where, long count, struct obuf *out)
{
	struct list *l = entry_obj(e);
	uint64_t n = list_len(l) < (uint64_t)count ? list_len(l) : (uint64_t)count;
	reply_array(out, (long)n);
	for (uint64_t i = 0; i < n; i++) {
		const char *p;
		size_t len;
		list_peek(l, where, &p, &len);
		reply_bulk(out, p, len);
		list_pop(l, where);
	}
	list_removed(srv, db, e, key, klen, pop_event(where));
	store_write_changes_are(n); /* Redis counts each element popped */
}

/* Pops one element at WHERE of E's list (not empty, key KEY) as a bulk. */
static void pop_one(struct server *srv, unsigned db, struct entry *e, const char *key, size_t klen,
		    enum list_where where, struct obuf *out)
{
	struct list *l = entry_obj(e);
	const char *p;
	size_t len;
	list_peek(l, where, &p, &len);
	reply_bulk(out, p, len);
	list_pop(l, where);
	list_removed(srv, db, e, key, klen, pop_event(where));
}

/* LMOVE's core: moves the element at FROM of SRC (a non-empty list) to TO
 * of DST and replies it as a bulk; WRONGTYPE when DST holds another type. */
static void move_one(struct server *srv, unsigned db, int64_t now_ms, const char *src, size_t slen,
		     const char *dst, size_t dlen, enum list_where from, enum list_where to, struct obuf *out)
{
	struct store *s = srv->store;
	bool wrong;
	struct entry *de = find_list(s, db, dst, dlen, now_ms, STORE_LOOKUP_NOSTATS, &wrong);
	if (wrong) {
		reply_error(out, ERR_WRONGTYPE);
		return;
	}
	struct entry *se = find_list(s, db, src, slen, now_ms, STORE_LOOKUP_NOSTATS, &wrong);
	const char *p;
	size_t len;
	list_peek(entry_obj(se), from, &p, &len);
	/* a copy: pushing to the same list moves its bytes */
	char small[128];
	char *v = len <= sizeof(small) ? small : zr_try_malloc(len);
	if (!v) {
		reply_error(out, ERR_OOM);
		return;
	}
	memcpy(v, p, len);
	struct list *dl = ensure_list(srv, db, dst, dlen, &de);
	if (!dl || list_push(dl, to, v, len) < 0) {
		if (dl && list_len(dl) == 0)
			store_delete_entry_locked(s, db, de);
		reply_error(out, ERR_OOM);
		goto out_free;
	}
	store_modified_locked(s, db, de);
	/* Redis's order: the push's event, the reply, the pop's events */
	notify_keyspace_event(srv, NOTIFY_LIST, push_event(to), dst, dlen, db);
	reply_bulk(out, v, len);
	/* pushed first, popped second: for SRC == DST that is the same as
	 * Redis's pop-then-push, and an OOM leaves SRC untouched */
	se = find_list(s, db, src, slen, now_ms, STORE_LOOKUP_NOSTATS, &wrong);
	list_pop(entry_obj(se), from);
	list_removed(srv, db, se, src, slen, pop_event(from));
	store_write_changes_are(1); /* one change for Redis, whatever was stamped */
	blocking_signal_key(srv, db, dst, dlen);
out_free:
	if (v != small)
		zr_free(v);
}

/* "LEFT"/"RIGHT" of argv[I]; false after a syntax error reply. */
static bool parse_where(struct client *c, int i, enum list_where *w)
{
	if (cmd_opt_is(c, i, "left"))
		*w = LIST_HEAD;
	else if (cmd_opt_is(c, i, "right"))
		*w = LIST_TAIL;
	else {
		reply_error(&c->out, ERR_SYNTAX);
		return false;
	}
	return true;
}

/* --- pushes ---------------------------------------------------------------- */

static void push_generic(struct client *c, enum list_where where, bool only_existing)
{
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e && only_existing) {
		reply_long(&c->out, 0);
		return;
	}
	struct list *l = ensure_list(c->srv, c->db, c->argv[1].ptr, c->argv[1].len, &e);
	if (!l) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	for (int i = 2; i < c->argc; i++) {
		if (list_push(l, where, c->argv[i].ptr, c->argv[i].len) < 0) {
			reply_error(&c->out, ERR_OOM);
			if (list_len(l) == 0) {
				store_delete_entry_locked(c->srv->store, c->db, e);
				return;
			}
			store_modified_locked(c->srv->store, c->db, e);
			store_write_changes_are((uint64_t)(i - 2));
			notify_keyspace_event(c->srv, NOTIFY_LIST, push_event(where), c->argv[1].ptr,
					      c->argv[1].len, c->db);
			blocking_signal_key(c->srv, c->db, c->argv[1].ptr, c->argv[1].len);
			return;
		}
	}
	store_modified_locked(c->srv->store, c->db, e);
	store_write_changes_are((uint64_t)(c->argc - 2)); /* Redis counts each element */
	reply_long(&c->out, (long long)list_len(l));
	/* after the reply, as Redis's pushGenericCommand */
	notify_keyspace_event(c->srv, NOTIFY_LIST, push_event(where), c->argv[1].ptr, c->argv[1].len, c->db);
	blocking_signal_key(c->srv, c->db, c->argv[1].ptr, c->argv[1].len);
}

void cmd_lpush(struct client *c)
{
	push_generic(c, LIST_HEAD, false);
}

void cmd_rpush(struct client *c)
{
	push_generic(c, LIST_TAIL, false);
}

void cmd_lpushx(struct client *c)
{
	push_generic(c, LIST_HEAD, true);
}

void cmd_rpushx(struct client *c)
{
	push_generic(c, LIST_TAIL, true);
}

void cmd_linsert(struct client *c)
{
	bool after;
	if (cmd_arg_is(c, 2, "after"))
		after = true;
	else if (cmd_arg_is(c, 2, "before"))
		after = false;
	else {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	struct list *l = entry_obj(e);
	int rc = list_insert(l, c->argv[3].ptr, c->argv[3].len, after, c->argv[4].ptr, c->argv[4].len);
	if (rc < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	if (rc == 0) {
		reply_long(&c->out, -1);
		return;
	}
	store_modified_locked(c->srv->store, c->db, e);
	notify_arg(c, NOTIFY_LIST, "linsert", 1);
	reply_long(&c->out, (long long)list_len(l));
}

/* --- reads ----------------------------------------------------------------- */

void cmd_llen(struct client *c)
{
	struct entry *e;
	if (!lookup(c, 1, false, &e))
		return;
	reply_long(&c->out, e ? (long long)list_len(entry_obj(e)) : 0);
}

void cmd_lindex(struct client *c)
{
	struct entry *e;
	if (!lookup(c, 1, false, &e))
		return;
	if (!e) {
		reply_null(&c->out);
		return;
	}
	long long idx;
	if (!cmd_arg_ll(c, 2, &idx, NULL))
		return;
	struct list *l = entry_obj(e);
	long long len = (long long)list_len(l);
	if (idx < 0)
		idx += len;
	const char *p;
	size_t plen;
	if (idx < 0 || idx >= len || !list_index(l, (uint64_t)idx, &p, &plen))
		reply_null(&c->out);
	else
		reply_bulk(&c->out, p, plen);
}

/* Redis's range normalisation for LRANGE/LTRIM: false when empty. */
static bool norm_range(long long llen, long long *start, long long *end)
{
	if (*start < 0)
		*start += llen;
	if (*end < 0)
		*end += llen;
	if (*start < 0)
		*start = 0;
	if (*start > *end || *start >= llen)
		return false;
	if (*end >= llen)
		*end = llen - 1;
	return true;
}

void cmd_lrange(struct client *c)
{
	long long start, end;
	if (!cmd_arg_ll(c, 2, &start, NULL) || !cmd_arg_ll(c, 3, &end, NULL))
		return;
	struct entry *e;
	if (!lookup(c, 1, false, &e))
		return;
	if (!e) {
		reply_array(&c->out, 0);
		return;
	}
	struct list *l = entry_obj(e);
	if (!norm_range((long long)list_len(l), &start, &end)) {
		reply_array(&c->out, 0);
		return;
	}
	long long n = end - start + 1;
	reply_array(&c->out, (long)n);
	struct list_iter it;
	list_iter_init(&it, l, (uint64_t)start, true);
	const char *p;
	size_t plen;
	while (n-- > 0 && list_iter_next(&it, &p, &plen))
		reply_bulk(&c->out, p, plen);
}

void cmd_lpos(struct client *c)
{
	long long rank = 1, count = -1, maxlen = 0;
	for (int j = 3; j < c->argc; j++) {
		bool more = j + 1 < c->argc;
		if (more && cmd_arg_is(c, j, "rank")) {
			if (!cmd_arg_ll(c, ++j, &rank, NULL))
				return;
			if (rank == 0) {
				reply_error(
					&c->out,
					"ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list");
				return;
			}
		} else if (more && cmd_arg_is(c, j, "count")) {
			if (!cmd_arg_ll_range(c, ++j, 0, LLONG_MAX, &count, "ERR COUNT can't be negative"))
				return;
		} else if (more && cmd_arg_is(c, j, "maxlen")) {
			if (!cmd_arg_ll_range(c, ++j, 0, LLONG_MAX, &maxlen, "ERR MAXLEN can't be negative"))
				return;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	bool forward = rank > 0;
	/* 7.0 negates with wrap-around: LLONG_MIN stays negative, so every
	 * match qualifies and the COUNT test below never fires */
	if (rank < 0)
		rank = (long long)(0 - (unsigned long long)rank);
	struct entry *e;
	if (!lookup(c, 1, false, &e))
		return;
	if (!e) {
		if (count != -1)
			reply_array(&c->out, 0);
		else
			reply_null(&c->out);
		return;
	}
	struct list *l = entry_obj(e);
	long long llen = (long long)list_len(l);
	struct reply_deferred d;
	if (count != -1)
		reply_deferred(&c->out, &d);
	struct list_iter it;
	list_iter_init(&it, l, forward ? 0 : (uint64_t)(llen - 1), forward);
	const char *ele = c->argv[2].ptr;
	size_t elen = c->argv[2].len;
	long long index = 0, matches = 0, found = -1, emitted = 0;
	const char *p;
	size_t plen;
	while ((maxlen == 0 || index < maxlen) && list_iter_next(&it, &p, &plen)) {
		if (plen == elen && memcmp(p, ele, elen) == 0) {
			matches++;
			if (matches >= rank) {
				long long at = forward ? index : llen - index - 1;
				if (count == -1) {
					found = at;
					break;
				}
				reply_long(&c->out, at);
				emitted++;
				if (count && (long long)((unsigned long long)matches -
							 (unsigned long long)rank + 1) >= count)
					break;
			}
		}
		index++;
	}
	if (count != -1)
		reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, (long)emitted);
	else if (found >= 0)
		reply_long(&c->out, found);
	else
		reply_null(&c->out);
}

/* --- in-place writes ---------------------------------------------------------- */

void cmd_lset(struct client *c)
{
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_error(&c->out, ERR_NO_KEY);
		return;
	}
	long long idx;
	if (!cmd_arg_ll(c, 2, &idx, NULL))
		return;
	struct list *l = entry_obj(e);
	long long len = (long long)list_len(l);
	if (idx < 0)
		idx += len;
	if (idx < 0 || idx >= len) {
		reply_error(&c->out, "ERR index out of range");
		return;
	}
	if (list_set(l, (uint64_t)idx, c->argv[3].ptr, c->argv[3].len) < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	store_modified_locked(c->srv->store, c->db, e);
	reply_ok(&c->out);
	notify_arg(c, NOTIFY_LIST, "lset", 1);
}

void cmd_lrem(struct client *c)
{
	long long count;
	if (!cmd_arg_ll(c, 2, &count, NULL))
		return;
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	uint64_t removed = list_remove(entry_obj(e), c->argv[3].ptr, c->argv[3].len, count);
	if (removed) {
		list_removed(c->srv, c->db, e, c->argv[1].ptr, c->argv[1].len, "lrem");
		store_write_changes_are(removed);
	}
	reply_long(&c->out, (long long)removed);
}

void cmd_ltrim(struct client *c)
{
	long long start, end;
	if (!cmd_arg_ll(c, 2, &start, NULL) || !cmd_arg_ll(c, 3, &end, NULL))
		return;
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_ok(&c->out);
		return;
	}
	struct list *l = entry_obj(e);
	long long llen = (long long)list_len(l);
	uint64_t head_n, tail_n;
	if (!norm_range(llen, &start, &end)) {
		head_n = (uint64_t)llen;
		tail_n = 0;
	} else {
		head_n = (uint64_t)start;
		tail_n = (uint64_t)(llen - end - 1);
	}
	list_trim(l, head_n, tail_n);
	/* Redis sends "ltrim" even when nothing was trimmed */
	list_removed(c->srv, c->db, e, c->argv[1].ptr, c->argv[1].len, "ltrim");
	store_write_changes_are(head_n + tail_n); /* Redis: the elements removed */
	reply_ok(&c->out);
}

/* --- pops ------------------------------------------------------------------ */

static void pop_generic(struct client *c, enum list_where where)
{
	long long count = 0;
	bool has_count = c->argc == 3;
	if (c->argc > 3) {
		cmd_reply_arity(c);
		return;
	}
	if (has_count && !cmd_arg_ll_range(c, 2, 0, LONG_MAX, &count, ERR_RANGE_POSITIVE))
		return;
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e) {
		if (has_count)
			reply_null_array(&c->out);
		else
			reply_null(&c->out);
		return;
	}
	if (has_count && count == 0) {
		reply_array(&c->out, 0);
		return;
	}
	if (has_count)
		pop_n(c->srv, c->db, e, c->argv[1].ptr, c->argv[1].len, where, (long)count, &c->out);
	else
		pop_one(c->srv, c->db, e, c->argv[1].ptr, c->argv[1].len, where, &c->out);
}

void cmd_lpop(struct client *c)
{
	pop_generic(c, LIST_HEAD);
}

void cmd_rpop(struct client *c)
{
	pop_generic(c, LIST_TAIL);
}

static void lmove_generic(struct client *c, enum list_where from, enum list_where to)
{
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (!e) {
		reply_null(&c->out);
		return;
	}
	move_one(c->srv, c->db, c->now_ms, c->argv[1].ptr, c->argv[1].len, c->argv[2].ptr, c->argv[2].len,
		 from, to, &c->out);
}

void cmd_lmove(struct client *c)
{
	enum list_where from, to;
	if (!parse_where(c, 3, &from) || !parse_where(c, 4, &to))
		return;
	lmove_generic(c, from, to);
}

void cmd_rpoplpush(struct client *c)
{
	lmove_generic(c, LIST_TAIL, LIST_HEAD);
}

/* LMPOP/BLMPOP arguments: numkeys at NK, keys, LEFT|RIGHT, [COUNT n].
 * False after replying the error. */
static bool parse_mpop(struct client *c, int nk, long long *numkeys, enum list_where *where, long long *count)
{
	int w;
	if (!cmd_arg_mpop(c, nk, "left", "right", numkeys, &w, count))
		return false;
	*where = w ? LIST_TAIL : LIST_HEAD;
	return true;
}

/* Pops from the first non-empty list of KEYS as [key, [elements]]; false
 * when every key is empty (nothing replied) or after a WRONGTYPE reply
 * (*REPLIED set). */
static bool mpop_first(struct client *c, int first, int nkeys, enum list_where where, long count,
		       bool *replied)
{
	*replied = false;
	for (int i = first; i < first + nkeys; i++) {
		struct entry *e;
		if (!lookup(c, i, true, &e)) {
			*replied = true;
			return false;
		}
		if (!e)
			continue;
		reply_array(&c->out, 2);
		reply_bulk(&c->out, c->argv[i].ptr, c->argv[i].len);
		pop_n(c->srv, c->db, e, c->argv[i].ptr, c->argv[i].len, where, count, &c->out);
		*replied = true;
		return true;
	}
	return false;
}

void cmd_lmpop(struct client *c)
{
	long long numkeys, count;
	enum list_where where;
	if (!parse_mpop(c, 1, &numkeys, &where, &count))
		return;
	bool replied;
	if (!mpop_first(c, 2, (int)numkeys, where, (long)count, &replied) && !replied)
		reply_null_array(&c->out);
}

/* --- blocking pops ------------------------------------------------------------- */

struct bpop_arg {
	enum list_where where;
	long count; /* BLMPOP's COUNT; 0 = BLPOP/BRPOP (one element, flat reply) */
};

static enum blocking_serve_result serve_pop(struct blocking_serve *bs)
{
	struct bpop_arg *a = bs->arg;
	struct store *s = bs->srv->store;
	bool wrong;
	struct entry *e = find_list(s, bs->db, bs->key, bs->klen, bs->now_ms, STORE_LOOKUP_NOSTATS, &wrong);
	if (!e)
		return BLOCKING_NOT_READY;
	if (!blocking_claim(bs))
		return BLOCKING_LOST;
	reply_array(bs->out, 2);
	reply_bulk(bs->out, bs->key, bs->klen);
	if (a->count)
		pop_n(bs->srv, bs->db, e, bs->key, bs->klen, a->where, a->count, bs->out);
	else
		pop_one(bs->srv, bs->db, e, bs->key, bs->klen, a->where, bs->out);
	return BLOCKING_SERVED;
}

static int effect_pop(const void *arg, const char *key, size_t klen, const char **argv, size_t *lens,
		      char *num, int *nkeys)
{
	const struct bpop_arg *a = arg;
	argv[0] = a->where == LIST_HEAD ? "LPOP" : "RPOP";
	lens[0] = 4;
	argv[1] = key;
	lens[1] = klen;
	*nkeys = 1;
	if (!a->count)
		return 2;
	lens[2] = (size_t)snprintf(num, 32, "%ld", a->count);
	argv[2] = num;
	return 3;
}

static const struct blocking_ops bpop_ops = {
	.serve = serve_pop,
	.effect = effect_pop,
	.second_key = NULL,
	.timeout_reply = blocking_timeout_null_array,
	.free_arg = blocking_free_zr,
};

static void block_pop(struct client *c, int first, int nkeys, int64_t deadline, enum list_where where,
		      long count)
{
	struct bpop_arg *a = zr_malloc(sizeof(*a));
	a->where = where;
	a->count = count;
	blocking_block(c, &c->argv[first], nkeys, deadline, &bpop_ops, a);
}

static void bpop_generic(struct client *c, enum list_where where)
{
	int64_t deadline;
	if (!blocking_parse_timeout(c, c->argc - 1, &deadline))
		return;
	for (int i = 1; i < c->argc - 1; i++) {
		struct entry *e;
		if (!lookup(c, i, true, &e))
			return;
		if (!e)
			continue;
		reply_array(&c->out, 2);
		reply_bulk(&c->out, c->argv[i].ptr, c->argv[i].len);
		pop_one(c->srv, c->db, e, c->argv[i].ptr, c->argv[i].len, where, &c->out);
		return;
	}
	if (!blocking_allowed(c)) {
		reply_null_array(&c->out);
		return;
	}
	block_pop(c, 1, c->argc - 2, deadline, where, 0);
}

void cmd_blpop(struct client *c)
{
	bpop_generic(c, LIST_HEAD);
}

void cmd_brpop(struct client *c)
{
	bpop_generic(c, LIST_TAIL);
}

void cmd_blmpop(struct client *c)
{
	long long numkeys, count;
	enum list_where where;
	if (!parse_mpop(c, 2, &numkeys, &where, &count))
		return;
	int64_t deadline;
	if (!blocking_parse_timeout(c, 1, &deadline))
		return;
	bool replied;
	if (mpop_first(c, 3, (int)numkeys, where, (long)count, &replied) || replied)
		return;
	if (!blocking_allowed(c)) {
		reply_null_array(&c->out);
		return;
	}
	block_pop(c, 3, (int)numkeys, deadline, where, (long)count);
}

struct bmove_arg {
	enum list_where from, to;
	size_t dlen;
	char dst[];
};

static const char *bmove_second_key(const void *arg, size_t *klen)
{
	const struct bmove_arg *a = arg;
	*klen = a->dlen;
	return a->dst;
}

static enum blocking_serve_result serve_move(struct blocking_serve *bs)
{
	struct bmove_arg *a = bs->arg;
	bool wrong;
	struct entry *e = find_list(bs->srv->store, bs->db, bs->key, bs->klen, bs->now_ms,
				    STORE_LOOKUP_NOSTATS, &wrong);
	if (!e)
		return BLOCKING_NOT_READY;
	if (!blocking_claim(bs))
		return BLOCKING_LOST;
	/* a destination of another type: the waiter gets WRONGTYPE and
	 * nothing moves (Redis 7.0's serveClientBlockedOnList) */
	move_one(bs->srv, bs->db, bs->now_ms, bs->key, bs->klen, a->dst, a->dlen, a->from, a->to, bs->out);
	return BLOCKING_SERVED;
}

static int effect_move(const void *arg, const char *key, size_t klen, const char **argv, size_t *lens,
		       char *num, int *nkeys)
{
	const struct bmove_arg *a = arg;
	argv[0] = "LMOVE";
	argv[1] = key;
	lens[1] = klen;
	argv[2] = a->dst;
	lens[2] = a->dlen;
	argv[3] = a->from == LIST_HEAD ? "LEFT" : "RIGHT";
	argv[4] = a->to == LIST_HEAD ? "LEFT" : "RIGHT";
	lens[0] = 5;
	lens[3] = strlen(argv[3]);
	lens[4] = strlen(argv[4]);
	*nkeys = 2;
	(void)num;
	return 5;
}

static const struct blocking_ops bmove_ops = {
	.serve = serve_move,
	.effect = effect_move,
	.second_key = bmove_second_key,
	/* Redis 7.0 times out every list pop with a null array, BLMOVE too
	 * (RESP2 *-1), though its non-blocking form answers a null bulk */
	.timeout_reply = blocking_timeout_null_array,
	.free_arg = blocking_free_zr,
};

static void bmove_generic(struct client *c, enum list_where from, enum list_where to, int timeout_arg)
{
	int64_t deadline;
	if (!blocking_parse_timeout(c, timeout_arg, &deadline))
		return;
	struct entry *e;
	if (!lookup(c, 1, true, &e))
		return;
	if (e) {
		move_one(c->srv, c->db, c->now_ms, c->argv[1].ptr, c->argv[1].len, c->argv[2].ptr,
			 c->argv[2].len, from, to, &c->out);
		return;
	}
	if (!blocking_allowed(c)) {
		reply_null(&c->out);
		return;
	}
	struct bmove_arg *a = zr_malloc(sizeof(*a) + c->argv[2].len);
	a->from = from;
	a->to = to;
	a->dlen = c->argv[2].len;
	memcpy(a->dst, c->argv[2].ptr, a->dlen);
	blocking_block(c, &c->argv[1], 1, deadline, &bmove_ops, a);
}

void cmd_blmove(struct client *c)
{
	enum list_where from, to;
	if (!parse_where(c, 3, &from) || !parse_where(c, 4, &to))
		return;
	bmove_generic(c, from, to, 5);
}

void cmd_brpoplpush(struct client *c)
{
	bmove_generic(c, LIST_TAIL, LIST_HEAD, 3);
}
