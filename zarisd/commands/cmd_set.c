/* cmd_set — the set commands, Redis 7.0's t_set.c semantics: SADD SREM
 * SISMEMBER SMISMEMBER SMEMBERS SCARD SPOP SRANDMEMBER SMOVE, the algebra
 * (SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE SDIFF SDIFFSTORE) and
 * SSCAN. The value structure is store/set.h.
 *
 * Every handler runs on the client's worker with the shard locks of all
 * the keys of its row's key spec held by the dispatcher (the multi-key
 * commands see a consistent snapshot of every source and write their
 * destination atomically), hence only *_locked store calls. A write that
 * creates a key builds the set first and stores it only when non-empty; a
 * set emptied by SREM / SPOP / SMOVE is deleted (Redis semantics). Results
 * of the algebra are built like 7.0 builds them (an intset-encoded set fed
 * member by member), so a stored result gets 7.0's encoding.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/server/client.h"
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
#include "zarisd/store/set.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"
#include "zarisd/store/strtab.h"

#define ERR_POSITIVE "ERR value is out of range, must be positive"
#define ERR_LONG_RANGE \
	"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
#define ERR_NUMKEYS "ERR numkeys should be greater than 0"
#define ERR_NUMKEYS_ARGS "ERR Number of keys can't be greater than number of args"
#define ERR_LIMIT "ERR LIMIT can't be negative"

/* SPOP: when the members left would be at most 1/5 of those popped, 7.0
 * rebuilds the set from the survivors (SPOP_MOVE_STRATEGY_MUL). */
#define SPOP_MOVE_STRATEGY_MUL 5
/* SRANDMEMBER: a count above 1/3 of the set copies the set instead of
 * drawing (SRANDMEMBER_SUB_STRATEGY_MUL). */
#define SRANDMEMBER_SUB_STRATEGY_MUL 3

/* --- helpers ------------------------------------------------------------------ */

static __thread uint64_t rnd_state;

/* Per-thread random state for SPOP / SRANDMEMBER (xorshift, never zero). */
static uint64_t *rnd(void)
{
	if (!rnd_state)
		rnd_state = ((uint64_t)zr_time_us() ^ (uint64_t)(uintptr_t)&rnd_state) | 1;
	return &rnd_state;
}

static uint64_t max_intset(const struct client *c)
{
	return (uint64_t)atomic_load_explicit(&c->srv->cfg->set_max_intset_entries, memory_order_relaxed);
}

/* Finds argv[ARGI]: *E and *S are set (NULL when missing). false after a
 * WRONGTYPE reply. WRITE lookups are not counted as hits/misses. */
static bool lookup(struct client *c, int argi, bool write, struct entry **e, struct set **s)
{
	*e = store_find_locked(c->srv->store, c->db, c->argv[argi].ptr, c->argv[argi].len, c->now_ms,
			       write ? STORE_LOOKUP_NOSTATS : 0);
	*s = NULL;
	if (!*e)
		return true;
	if (entry_type(*e) != STORE_TYPE_SET) {
		reply_error(&c->out, ERR_WRONGTYPE);
		return false;
	}
	*s = entry_obj(*e);
	return true;
}

/* Stores the new, non-empty set S under argv[ARGI] (replacing whatever is
 * there, TTL dropped). false after replying -OOM (S freed). */
static bool store_new(struct client *c, int argi, struct set *s)
{
	if (store_set_object_locked(c->srv->store, c->db, c->argv[argi].ptr, c->argv[argi].len,
				    STORE_TYPE_SET, s, -1, 0, NULL) < 0) {
		set_free(s);
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	return true;
}

/* After removals from the stored set S of entry E (key argv[ARGI]): when
 * CHANGED, records the change, sends EVENT, and deletes the key (with its
 * "del" event) when S is empty. */
static void after_removal(struct client *c, int argi, struct entry *e, struct set *s, bool changed,
			  const char *event)
{
	if (!changed)
		return;
	bool emptied = set_size(s) == 0;
	if (emptied)
		store_delete_entry_locked(c->srv->store, c->db, e);
	else
		store_modified_locked(c->srv->store, c->db, e);
	notify_arg(c, NOTIFY_SET, event, argi);
	if (emptied)
		notify_arg(c, NOTIFY_GENERIC, "del", argi);
}

/* --- single-set commands ------------------------------------------------------- */

void cmd_sadd(struct client *c)
{
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, true, &e, &s))
		return;
	bool created = !s;
	if (created)
		s = set_create(c->argv[2].ptr, c->argv[2].len);
	uint64_t max = max_intset(c);
	long long added = 0;
	bool oom = false;
	for (int i = 2; i < c->argc && !oom; i++) {
		int rc = set_add(s, c->argv[i].ptr, c->argv[i].len, max);
		if (rc < 0)
			oom = true;
		else
			added += rc;
	}
	if (created) {
		if (set_size(s) == 0) {
			set_free(s);
		} else if (!store_new(c, 1, s)) {
			return;
		}
	} else if (added) {
		store_modified_locked(c->srv->store, c->db, e);
	}
	if (added) {
		store_write_changes_are((uint64_t)added); /* Redis counts each member */
		notify_arg(c, NOTIFY_SET, "sadd", 1);
	}
	if (oom)
		reply_error(&c->out, ERR_OOM);
	else
		reply_long(&c->out, added);
}

void cmd_srem(struct client *c)
{
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, true, &e, &s))
		return;
	long long removed = 0;
	for (int i = 2; s && i < c->argc && set_size(s); i++)
		removed += set_remove(s, c->argv[i].ptr, c->argv[i].len);
	if (s)
		after_removal(c, 1, e, s, removed > 0, "srem");
	if (removed)
		store_write_changes_are((uint64_t)removed);
	reply_long(&c->out, removed);
}

void cmd_sismember(struct client *c)
{
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, false, &e, &s))
		return;
	reply_long(&c->out, s && set_contains(s, c->argv[2].ptr, c->argv[2].len));
}

void cmd_smismember(struct client *c)
{
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, false, &e, &s))
		return;
	reply_array(&c->out, c->argc - 2);
	for (int i = 2; i < c->argc; i++)
		reply_long(&c->out, s && set_contains(s, c->argv[i].ptr, c->argv[i].len));
}

/* Replies every member of S as a RESP3 set (RESP2 array). */
static void reply_members(struct client *c, const struct set *s)
{
	reply_set(&c->out, s ? (long)set_size(s) : 0);
	if (!s)
		return;
	struct set_iter it;
	set_iter_init(&it, s);
	const char *m;
	size_t len;
	while (set_next(&it, &m, &len))
		reply_bulk(&c->out, m, len);
}

void cmd_smembers(struct client *c)
{
	struct entry *e;
	struct set *s;
	if (lookup(c, 1, false, &e, &s))
		reply_members(c, s);
}

void cmd_scard(struct client *c)
{
	struct entry *e;
	struct set *s;
	if (lookup(c, 1, false, &e, &s))
		reply_long(&c->out, s ? (long long)set_size(s) : 0);
}

/* --- SPOP / SRANDMEMBER ------------------------------------------------------ */

/* Replies one random member of S and removes it. */
static void pop_one(struct client *c, struct set *s)
{
	char buf[ZR_LONG_STR_SIZE];
	const char *m;
	size_t len;
	set_random(s, rnd(), buf, &m, &len);
	reply_bulk(&c->out, m, len);
	/* M may point into the node set_remove frees: it is only read
	 * before the free. */
	set_remove(s, m, len);
}

static void spop_with_count(struct client *c)
{
	long long l;
	if (!cmd_arg_ll(c, 2, &l, ERR_POSITIVE))
		return;
	if (l < 0) {
		reply_error(&c->out, ERR_POSITIVE);
		return;
	}
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, true, &e, &s))
		return;
	if (!s || l == 0) {
		reply_set(&c->out, 0);
		return;
	}
	uint64_t count = (uint64_t)l, size = set_size(s);
	if (count >= size) {
		reply_members(c, s);
		store_delete_entry_locked(c->srv->store, c->db, e);
		store_write_changes_are(size); /* Redis counts each member */
		notify_arg(c, NOTIFY_SET, "spop", 1);
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
		return;
	}
	reply_set(&c->out, (long)count);
	for (uint64_t i = 0; i < count; i++)
		pop_one(c, s);
	if ((size - count) * SPOP_MOVE_STRATEGY_MUL <= count)
		set_recompact(s, max_intset(c));
	store_modified_locked(c->srv->store, c->db, e);
	store_write_changes_are(count);
	notify_arg(c, NOTIFY_SET, "spop", 1);
}

void cmd_spop(struct client *c)
{
	if (c->argc == 3) {
		spop_with_count(c);
		return;
	}
	if (c->argc > 3) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, true, &e, &s))
		return;
	if (!s) {
		reply_null(&c->out);
		return;
	}
	pop_one(c, s);
	after_removal(c, 1, e, s, true, "spop");
}

/* COUNT distinct random members of S, 0 < COUNT < size, as an array. */
static void srandmember_unique(struct client *c, const struct set *s, uint64_t count)
{
	uint64_t size = set_size(s);
	reply_array(&c->out, (long)count);
	if (count * SRANDMEMBER_SUB_STRATEGY_MUL <= size) {
		/* Few of them: draw until COUNT distinct members were seen. */
		struct strtab seen;
		strtab_init(&seen);
		for (uint64_t n = 0; n < count;) {
			char buf[ZR_LONG_STR_SIZE];
			const char *m;
			size_t len;
			set_random(s, rnd(), buf, &m, &len);
			if (strtab_add(&seen, m, len) > 0) {
				reply_bulk(&c->out, m, len);
				n++;
			}
		}
		strtab_clear(&seen);
		return;
	}
	/* Many of them: a partial Fisher-Yates over every member. Hashtable
	 * members are not moved meanwhile; intset ones are formatted into
	 * one text buffer first. */
	struct ref {
		const char *p;
		size_t len;
	} *all = zr_malloc(sizeof(*all) * size);
	char *text = NULL;
	struct set_iter it;
	set_iter_init(&it, s);
	const char *m;
	size_t len;
	if (s->enc == SET_ENC_INTSET) {
		text = zr_malloc(size * ZR_LONG_STR_SIZE);
		for (uint64_t i = 0; set_next(&it, &m, &len); i++) {
			memcpy(text + i * ZR_LONG_STR_SIZE, m, len);
			all[i] = (struct ref){ text + i * ZR_LONG_STR_SIZE, len };
		}
	} else {
		for (uint64_t i = 0; set_next(&it, &m, &len); i++)
			all[i] = (struct ref){ m, len };
	}
	for (uint64_t n = 0; n < count; n++) {
		uint64_t j = n + strtab_rand(rnd()) % (size - n);
		struct ref t = all[n];
		all[n] = all[j];
		all[j] = t;
		reply_bulk(&c->out, all[n].p, all[n].len);
	}
	zr_free(text);
	zr_free(all);
}

static void srandmember_with_count(struct client *c)
{
	long long l;
	if (!cmd_arg_ll(c, 2, &l, NULL))
		return;
	if (l == LLONG_MIN) {
		reply_error(&c->out, ERR_LONG_RANGE);
		return;
	}
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, false, &e, &s))
		return;
	if (!s || l == 0) {
		reply_array(&c->out, 0);
		return;
	}
	if (l < 0) {
		/* Repeats allowed: |COUNT| independent draws. */
		uint64_t count = (uint64_t)-l;
		reply_array(&c->out, (long)count);
		while (count--) {
			char buf[ZR_LONG_STR_SIZE];
			const char *m;
			size_t len;
			set_random(s, rnd(), buf, &m, &len);
			reply_bulk(&c->out, m, len);
		}
		return;
	}
	uint64_t count = (uint64_t)l, size = set_size(s);
	if (count >= size) {
		/* The whole set, in its order, as an array (7.0). */
		reply_array(&c->out, (long)size);
		struct set_iter it;
		set_iter_init(&it, s);
		const char *m;
		size_t len;
		while (set_next(&it, &m, &len))
			reply_bulk(&c->out, m, len);
		return;
	}
	srandmember_unique(c, s, count);
}

void cmd_srandmember(struct client *c)
{
	if (c->argc == 3) {
		srandmember_with_count(c);
		return;
	}
	if (c->argc > 3) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, false, &e, &s))
		return;
	if (!s) {
		reply_null(&c->out);
		return;
	}
	char buf[ZR_LONG_STR_SIZE];
	const char *m;
	size_t len;
	set_random(s, rnd(), buf, &m, &len);
	reply_bulk(&c->out, m, len);
}

/* --- SMOVE --------------------------------------------------------------------- */

void cmd_smove(struct client *c)
{
	struct entry *se, *de;
	struct set *src, *dst;
	/* 7.0 looks both up before any type check: a missing source answers
	 * 0 even when the destination has the wrong type. */
	se = store_find_locked(c->srv->store, c->db, c->argv[1].ptr, c->argv[1].len, c->now_ms,
			       STORE_LOOKUP_NOSTATS);
	if (!se) {
		reply_long(&c->out, 0);
		return;
	}
	if (!lookup(c, 1, true, &se, &src) || !lookup(c, 2, true, &de, &dst))
		return;
	const char *m = c->argv[3].ptr;
	size_t len = c->argv[3].len;
	if (se == de) {
		reply_long(&c->out, set_contains(src, m, len));
		return;
	}
	if (!set_remove(src, m, len)) {
		reply_long(&c->out, 0);
		return;
	}
	/* Deleting the source leaves the destination's entry where it is. */
	after_removal(c, 1, se, src, true, "srem");
	if (!dst) {
		dst = set_create(m, len);
		if (set_add(dst, m, len, max_intset(c)) < 0) {
			set_free(dst);
			reply_error(&c->out, ERR_OOM);
			return;
		}
		if (!store_new(c, 2, dst))
			return;
		notify_arg(c, NOTIFY_SET, "sadd", 2);
	} else {
		int rc = set_add(dst, m, len, max_intset(c));
		if (rc < 0) {
			reply_error(&c->out, ERR_OOM);
			return;
		}
		if (rc) {
			store_modified_locked(c->srv->store, c->db, de);
			notify_arg(c, NOTIFY_SET, "sadd", 2);
		}
	}
	reply_long(&c->out, 1);
}

/* --- algebra ------------------------------------------------------------------- */

/* Looks up NKEYS keys from argv[FIRST] into SETS (NULL when missing).
 * Returns the number missing, or -1 after a WRONGTYPE reply. 7.0 checks
 * every key's type before looking at the result. */
static int lookup_sources(struct client *c, int first, int nkeys, struct set **sets)
{
	int missing = 0;
	for (int j = 0; j < nkeys; j++) {
		struct entry *e;
		if (!lookup(c, first + j, false, &e, &sets[j]))
			return -1;
		if (!sets[j])
			missing++;
	}
	return missing;
}

/* Stores RESULT under argv[DST] (deleting the key when RESULT is empty)
 * and replies its cardinality; EVENT is the command's notification.
 * Consumes RESULT. */
static void store_result(struct client *c, int dst, struct set *result, const char *event)
{
	uint64_t n = set_size(result);
	if (n == 0) {
		set_free(result);
		if (store_delete_locked(c->srv->store, c->db, c->argv[dst].ptr, c->argv[dst].len, c->now_ms))
			notify_arg(c, NOTIFY_GENERIC, "del", dst);
	} else if (!store_new(c, dst, result)) {
		return;
	} else {
		notify_arg(c, NOTIFY_SET, event, dst);
	}
	reply_long(&c->out, (long long)n);
}

struct by_size {
	struct set *s;
	int idx;
};

static int cmp_by_size(const void *a, const void *b)
{
	const struct by_size *x = a, *y = b;
	uint64_t sx = set_size(x->s), sy = set_size(y->s);
	if (sx != sy)
		return sx < sy ? -1 : 1;
	return x->idx - y->idx;
}

enum inter_mode {
	INTER_REPLY,
	INTER_STORE,
	INTER_CARD
};

/* sinterGenericCommand: the intersection of NKEYS sets from argv[FIRST],
 * replied (INTER_REPLY), stored under argv[DST] (INTER_STORE) or counted up
 * to LIMIT (INTER_CARD, 0 = no limit). */
static void sinter_generic(struct client *c, int first, int nkeys, int dst, enum inter_mode mode,
			   uint64_t limit)
{
	struct set **sets = zr_malloc(sizeof(*sets) * (size_t)nkeys);
	int missing = lookup_sources(c, first, nkeys, sets);
	if (missing < 0)
		goto out;
	if (missing > 0) {
		/* an intersection with an empty set is empty */
		if (mode == INTER_STORE)
			store_result(c, dst, set_new_intset(), "sinterstore");
		else if (mode == INTER_CARD)
			reply_long(&c->out, 0);
		else
			reply_set(&c->out, 0);
		goto out;
	}
	/* Walk the smallest set, probe the others (smallest first: they
	 * reject soonest). */
	struct by_size *order = zr_malloc(sizeof(*order) * (size_t)nkeys);
	for (int j = 0; j < nkeys; j++)
		order[j] = (struct by_size){ sets[j], j };
	qsort(order, (size_t)nkeys, sizeof(*order), cmp_by_size);

	struct set *result = mode == INTER_STORE ? set_new_intset() : NULL;
	struct reply_deferred d;
	if (mode == INTER_REPLY)
		reply_deferred(&c->out, &d);
	uint64_t n = 0, max = max_intset(c);
	bool oom = false;
	struct set_iter it;
	set_iter_init(&it, order[0].s);
	const char *m;
	size_t len;
	while (!oom && set_next(&it, &m, &len)) {
		int j = 1;
		while (j < nkeys && (order[j].s == order[0].s || set_contains(order[j].s, m, len)))
			j++;
		if (j < nkeys)
			continue;
		n++;
		if (mode == INTER_REPLY)
			reply_bulk(&c->out, m, len);
		else if (mode == INTER_STORE)
			oom = set_add(result, m, len, max) < 0;
		else if (limit && n >= limit)
			break;
	}
	zr_free(order);
	if (mode == INTER_REPLY) {
		reply_set_deferred(&c->out, &d, REPLY_AGG_SET, (long)n);
	} else if (mode == INTER_CARD) {
		reply_long(&c->out, (long long)n);
	} else if (oom) {
		set_free(result);
		reply_error(&c->out, ERR_OOM);
	} else {
		store_result(c, dst, result, "sinterstore");
	}
out:
	zr_free(sets);
}

void cmd_sinter(struct client *c)
{
	sinter_generic(c, 1, c->argc - 1, 0, INTER_REPLY, 0);
}

void cmd_sinterstore(struct client *c)
{
	sinter_generic(c, 2, c->argc - 2, 1, INTER_STORE, 0);
}

void cmd_sintercard(struct client *c)
{
	long long numkeys, limit = 0;
	if (!cmd_arg_ll(c, 1, &numkeys, ERR_NUMKEYS))
		return;
	if (numkeys < 1) {
		reply_error(&c->out, ERR_NUMKEYS);
		return;
	}
	if (numkeys > c->argc - 2) {
		reply_error(&c->out, ERR_NUMKEYS_ARGS);
		return;
	}
	for (int j = 2 + (int)numkeys; j < c->argc; j++) {
		if (cmd_arg_is(c, j, "limit") && j + 1 < c->argc) {
			j++;
			if (!cmd_arg_ll(c, j, &limit, ERR_LIMIT))
				return;
			if (limit < 0) {
				reply_error(&c->out, ERR_LIMIT);
				return;
			}
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	sinter_generic(c, 2, (int)numkeys, 0, INTER_CARD, (uint64_t)limit);
}

enum algebra_op {
	OP_UNION,
	OP_DIFF
};

/* Adds every member of FROM to TO; false on OOM. */
static bool add_all(struct set *to, const struct set *from, uint64_t max)
{
	struct set_iter it;
	set_iter_init(&it, from);
	const char *m;
	size_t len;
	while (set_next(&it, &m, &len))
		if (set_add(to, m, len, max) < 0)
			return false;
	return true;
}

/* sunionDiffGenericCommand: union or difference (first minus the rest) of
 * NKEYS sets from argv[FIRST], replied as a set or stored under argv[DST]
 * (DST 0 = reply). */
static void sunion_diff_generic(struct client *c, int first, int nkeys, int dst, enum algebra_op op)
{
	struct set **sets = zr_malloc(sizeof(*sets) * (size_t)nkeys);
	if (lookup_sources(c, first, nkeys, sets) < 0)
		goto out;
	uint64_t max = max_intset(c);
	struct set *result = set_new_intset();
	bool ok = true;
	if (op == OP_UNION) {
		for (int j = 0; j < nkeys && ok; j++)
			if (sets[j])
				ok = add_all(result, sets[j], max);
	} else if (sets[0]) {
		/* Members of the first set found in none of the others. */
		struct set_iter it;
		set_iter_init(&it, sets[0]);
		const char *m;
		size_t len;
		while (ok && set_next(&it, &m, &len)) {
			int j = 1;
			while (j < nkeys &&
			       !(sets[j] && (sets[j] == sets[0] || set_contains(sets[j], m, len))))
				j++;
			if (j == nkeys)
				ok = set_add(result, m, len, max) >= 0;
		}
	}
	if (!ok) {
		set_free(result);
		reply_error(&c->out, ERR_OOM);
	} else if (dst) {
		store_result(c, dst, result, op == OP_UNION ? "sunionstore" : "sdiffstore");
	} else {
		reply_members(c, result);
		set_free(result);
	}
out:
	zr_free(sets);
}

void cmd_sunion(struct client *c)
{
	sunion_diff_generic(c, 1, c->argc - 1, 0, OP_UNION);
}

void cmd_sunionstore(struct client *c)
{
	sunion_diff_generic(c, 2, c->argc - 2, 1, OP_UNION);
}

void cmd_sdiff(struct client *c)
{
	sunion_diff_generic(c, 1, c->argc - 1, 0, OP_DIFF);
}

void cmd_sdiffstore(struct client *c)
{
	sunion_diff_generic(c, 2, c->argc - 2, 1, OP_DIFF);
}

/* --- SSCAN --------------------------------------------------------------------- */

static void scan_visit(const char *m, size_t len, void *arg)
{
	scan_offer(arg, m, len);
}

void cmd_sscan(struct client *c)
{
	uint64_t cursor;
	if (!scan_arg_cursor(c, 2, &cursor))
		return;
	struct entry *e;
	struct set *s;
	if (!lookup(c, 1, false, &e, &s))
		return;
	if (!s) {
		scan_reply_empty(c);
		return;
	}
	struct scan_out so;
	if (!scan_arg_opts(c, 3, false, &so))
		return;
	/* an intset returns everything in one step, with cursor 0 */
	do
		cursor = set_scan(s, cursor, scan_visit, &so);
	while (scan_more(&so, cursor));
	scan_reply(c, cursor, &so);
}
