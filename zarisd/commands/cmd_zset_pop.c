/* cmd_zset_pop — the sorted-set pops, Redis 7.0's genericZpopCommand and
 * blockingGenericZpopCommand: ZPOPMIN, ZPOPMAX, ZMPOP and the blocking
 * BZPOPMIN, BZPOPMAX, BZMPOP.
 *
 * A blocking pop that finds every key missing blocks through
 * commands/blocking.h while the dispatcher still holds its keys' shard
 * locks; a later write that creates one of the keys signals it
 * (zcmd_store_new), and serve_zpop() then pops for the waiter on the
 * signalling worker, under that key's lock, writing the reply in the
 * waiter's protocol. The reply shapes are genericZpopCommand's:
 *   ZPOP*            [m, s, m, s ...]      (RESP3 with a count: [[m, s] ...])
 *   BZPOPMIN/MAX     [key, m, s]
 *   ZMPOP / BZMPOP   [key, [[m, s] ...]]
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/commands/cmd_zset.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/server/server.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"
#include "zarisd/store/zset.h"

#define ERR_POSITIVE "ERR value is out of range, must be positive"

/* Pops up to COUNT (>= 1) elements from the non-empty Z of KEY (entry E)
 * into OUT; EMITKEY puts the key first, NESTED makes [member, score]
 * pairs. Deletes the key when emptied. The caller holds KEY's lock. */
static void pop_reply(struct obuf *out, struct server *srv, unsigned db, const char *key, size_t klen,
		      struct entry *e, struct zset *z, bool max, long long count, bool emitkey, bool nested)
{
	size_t card = zset_card(z);
	size_t n = (unsigned long long)count > card ? card : (size_t)count;
	if (!nested && !emitkey) {
		reply_array(out, (long)n * 2);
	} else if (nested && !emitkey) {
		reply_array(out, (long)n);
	} else if (!nested) {
		reply_array(out, (long)n * 2 + 1);
		reply_bulk(out, key, klen);
	} else {
		reply_array(out, 2);
		reply_bulk(out, key, klen);
		reply_array(out, (long)n);
	}
	/* Redis notifies in its pop loop's first turn, after the headers: a
	 * RESP3 client subscribed to its own events gets the push inside the
	 * reply, and so it does here */
	notify_keyspace_event(srv, NOTIFY_ZSET, max ? "zpopmax" : "zpopmin", key, klen, db);
	struct zset_iter it;
	zset_iter_init(&it, z, max ? card - 1 : 0, max);
	const char *m;
	size_t mlen;
	double score;
	for (size_t i = 0; i < n && zset_iter_next(&it, &m, &mlen, &score); i++) {
		if (nested)
			reply_array(out, 2);
		reply_bulk(out, m, mlen);
		reply_double(out, score);
	}
	zset_iter_release(&it);
	zset_remove_ranks(z, max ? card - n : 0, n);
	if (zset_card(z) == 0) {
		store_delete_entry_locked(srv->store, db, e);
		notify_keyspace_event(srv, NOTIFY_GENERIC, "del", key, klen, db);
	} else {
		store_modified_locked(srv->store, db, e);
	}
	store_write_changes_are(n); /* Redis counts each member popped */
}

/* The first key of argv[FIRST .. FIRST + NKEYS) holding a sorted set: its
 * index, or -1 when none does. -2 after replying WRONGTYPE (the first
 * existing key of another type stops the search, as in Redis). */
static int first_zset(struct client *c, int first, int nkeys, struct entry **e, struct zset **z)
{
	for (int i = first; i < first + nkeys; i++) {
		if (!zcmd_lookup(c, i, true, e, z))
			return -2;
		if (*z)
			return i;
	}
	return -1;
}

static void pop_client(struct client *c, int keyi, struct entry *e, struct zset *z, bool max, long long count,
		       bool emitkey, bool nested)
{
	pop_reply(&c->out, c->srv, c->db, c->argv[keyi].ptr, c->argv[keyi].len, e, z, max, count, emitkey,
		  nested);
}

/* genericZpopCommand over argv[FIRST .. FIRST + NKEYS). COUNT -1 is the
 * plain single pop. */
static void zpop_generic(struct client *c, int first, int nkeys, bool max, long long count, bool emitkey,
			 bool nested, bool nil_when_empty)
{
	struct entry *e;
	struct zset *z;
	int keyi = first_zset(c, first, nkeys, &e, &z);
	if (keyi == -2)
		return;
	if (keyi < 0) {
		if (nil_when_empty)
			reply_null_array(&c->out);
		else
			reply_array(&c->out, 0);
		return;
	}
	if (count == 0) {
		reply_array(&c->out, 0);
		return;
	}
	pop_client(c, keyi, e, z, max, count == -1 ? 1 : count, emitkey, nested);
}

static void zpop_minmax(struct client *c, bool max)
{
	if (c->argc > 3) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	long long count = -1;
	/* getPositiveLongFromObjectOrReply: one message for both failures */
	if (c->argc == 3 && !cmd_arg_ll_range(c, 2, 0, LONG_MAX, &count, ERR_POSITIVE))
		return;
	/* RESP3 nests the pairs when a count was given */
	zpop_generic(c, 1, 1, max, count, false, c->resp > 2 && count != -1, false);
}

void cmd_zpopmin(struct client *c)
{
	zpop_minmax(c, false);
}

void cmd_zpopmax(struct client *c)
{
	zpop_minmax(c, true);
}

/* ZMPOP / BZMPOP arguments from NUMKEYS_IDX: numkeys, MIN|MAX, [COUNT n]
 * (count 1 when absent). false after replying the error. */
static bool parse_mpop(struct client *c, int numkeys_idx, long long *numkeys, bool *max, long long *count)
{
	int where;
	if (!cmd_arg_mpop(c, numkeys_idx, "min", "max", numkeys, &where, count))
		return false;
	*max = where == 1;
	return true;
}

void cmd_zmpop(struct client *c)
{
	long long numkeys, count;
	bool max;
	if (!parse_mpop(c, 1, &numkeys, &max, &count))
		return;
	zpop_generic(c, 2, (int)numkeys, max, count, true, true, true);
}

/* --- blocking pops ---------------------------------------------------------------- */

struct bzpop_arg {
	bool max;
	bool nested;	 /* BZMPOP's [key, [[m, s] ...]] */
	long long count; /* elements per serve */
};

static enum blocking_serve_result serve_zpop(struct blocking_serve *bs)
{
	const struct bzpop_arg *a = bs->arg;
	struct store *s = bs->srv->store;
	struct entry *e = store_find_locked(s, bs->db, bs->key, bs->klen, bs->now_ms, STORE_LOOKUP_NOSTATS);
	if (!e || entry_type(e) != STORE_TYPE_ZSET)
		return BLOCKING_NOT_READY;
	if (!blocking_claim(bs))
		return BLOCKING_LOST;
	pop_reply(bs->out, bs->srv, bs->db, bs->key, bs->klen, e, entry_obj(e), a->max, a->count, true,
		  a->nested);
	return BLOCKING_SERVED;
}

static int effect_zpop(const void *arg, const char *key, size_t klen, const char **argv, size_t *lens,
		       char *num, int *nkeys)
{
	const struct bzpop_arg *a = arg;
	argv[0] = a->max ? "ZPOPMAX" : "ZPOPMIN";
	lens[0] = 7;
	argv[1] = key;
	lens[1] = klen;
	*nkeys = 1;
	if (!a->nested)
		return 2;
	lens[2] = (size_t)snprintf(num, 32, "%lld", a->count);
	argv[2] = num;
	return 3;
}

static const struct blocking_ops bzpop_ops = {
	.serve = serve_zpop,
	.effect = effect_zpop,
	.second_key = NULL,
	.timeout_reply = blocking_timeout_null_array,
	.free_arg = blocking_free_zr,
};

/* blockingGenericZpopCommand: the timeout at TIMEOUT_I, keys at argv[FIRST
 * .. FIRST + NKEYS). Pops now like the non-blocking form when a key holds
 * a sorted set, else blocks (or answers the timeout's null inside EXEC). */
static void bzpop_generic(struct client *c, int first, int nkeys, int timeout_i, bool max, long long count,
			  bool nested)
{
	int64_t deadline;
	if (!blocking_parse_timeout(c, timeout_i, &deadline))
		return;
	struct entry *e;
	struct zset *z;
	int keyi = first_zset(c, first, nkeys, &e, &z);
	if (keyi == -2)
		return;
	if (keyi >= 0) {
		pop_client(c, keyi, e, z, max, count, true, nested);
		return;
	}
	if (!blocking_allowed(c)) {
		reply_null_array(&c->out);
		return;
	}
	struct bzpop_arg *a = zr_malloc(sizeof(*a));
	a->max = max;
	a->nested = nested;
	a->count = count;
	blocking_block(c, &c->argv[first], nkeys, deadline, &bzpop_ops, a);
}

void cmd_bzpopmin(struct client *c)
{
	bzpop_generic(c, 1, c->argc - 2, c->argc - 1, false, 1, false);
}

void cmd_bzpopmax(struct client *c)
{
	bzpop_generic(c, 1, c->argc - 2, c->argc - 1, true, 1, false);
}

void cmd_bzmpop(struct client *c)
{
	long long numkeys, count;
	bool max;
	if (!parse_mpop(c, 2, &numkeys, &max, &count))
		return;
	bzpop_generic(c, 3, (int)numkeys, 1, max, count, true);
}
