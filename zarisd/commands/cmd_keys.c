/* cmd_keys — the generic key commands, Redis 7.0's db.c / expire.c /
 * object.c semantics: DEL UNLINK EXISTS TYPE TOUCH, the EXPIRE family with
 * NX/XX/GT/LT, TTL PTTL EXPIRETIME PEXPIRETIME PERSIST, RENAME RENAMENX
 * COPY MOVE, KEYS SCAN RANDOMKEY DBSIZE FLUSHDB FLUSHALL SWAPDB, and the
 * OBJECT and MEMORY introspection subcommands.
 *
 * Key commands run with the shard locks of their row's keys held by the
 * dispatcher (COPY ... DB n and MOVE: the destination key has the same
 * shard index in every database, so its lock is held too) and use the
 * *_locked store calls. Rows flagged CMD_WHOLEDB (KEYS SCAN RANDOMKEY
 * DBSIZE FLUSHDB FLUSHALL SWAPDB) hold no lock and call the store's
 * whole-keyspace functions, which lock shard by shard. Entry pointers die
 * with the locks and when the store says an entry may move.
 */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/dispatch.h"
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

#define ERR_SAME_OBJECT "ERR source and destination objects are the same"
#define ERR_LFU_NOT_SELECTED                                                                                \
	"ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when " \
	"switching between policies at runtime LRU and LFU data will take some time to adjust."
#define ERR_LFU_SELECTED                                                                                   \
	"ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching " \
	"between policies at runtime LRU and LFU data will take some time to adjust."

/* --- helpers ------------------------------------------------------------------ */

static const char *const type_names[STORE_TYPE_COUNT] = {
	[STORE_TYPE_STRING] = "string", [STORE_TYPE_LIST] = "list", [STORE_TYPE_SET] = "set",
	[STORE_TYPE_ZSET] = "zset",	[STORE_TYPE_HASH] = "hash",
};

static struct entry *lookup(struct client *c, unsigned db, int argi, int flags)
{
	return store_find_locked(c->srv->store, db, c->argv[argi].ptr, c->argv[argi].len, c->now_ms, flags);
}

static bool policy_is_lfu(struct client *c)
{
	int p = atomic_load_explicit(&c->srv->cfg->maxmemory_policy, memory_order_relaxed);
	return store_policy_is_lfu((enum store_evict_policy)p);
}

/* --- DEL UNLINK EXISTS TOUCH TYPE ------------------------------------------------ */

static void del_generic(struct client *c)
{
	long long n = 0;
	for (int i = 1; i < c->argc; i++) {
		if (store_delete_locked(c->srv->store, c->db, c->argv[i].ptr, c->argv[i].len, c->now_ms)) {
			notify_arg(c, NOTIFY_GENERIC, "del", i);
			n++;
		}
	}
	reply_long(&c->out, n);
}

void cmd_del(struct client *c)
{
	del_generic(c);
}

/* Values are freed inline: one entry's free is cheap, and an object's
 * free function may defer big structures itself. */
void cmd_unlink(struct client *c)
{
	del_generic(c);
}

void cmd_exists(struct client *c)
{
	long long n = 0;
	for (int i = 1; i < c->argc; i++)
		n += lookup(c, c->db, i, STORE_LOOKUP_NOTOUCH) != NULL;
	reply_long(&c->out, n);
}

void cmd_touch(struct client *c)
{
	long long n = 0;
	for (int i = 1; i < c->argc; i++)
		n += lookup(c, c->db, i, 0) != NULL;
	reply_long(&c->out, n);
}

void cmd_type(struct client *c)
{
	struct entry *e = lookup(c, c->db, 1, STORE_LOOKUP_NOTOUCH);
	reply_simple(&c->out, e ? type_names[entry_type(e)] : "none");
}

/* --- EXPIRE family --------------------------------------------------------------- */

#define EXPIRE_NX 1
#define EXPIRE_XX 2
#define EXPIRE_GT 4
#define EXPIRE_LT 8

/* Redis's parseExtendedExpireArgumentsOrReply. */
static bool expire_flags(struct client *c, int *flags)
{
	int f = 0;
	for (int i = 3; i < c->argc; i++) {
		if (cmd_arg_is(c, i, "nx"))
			f |= EXPIRE_NX;
		else if (cmd_arg_is(c, i, "xx"))
			f |= EXPIRE_XX;
		else if (cmd_arg_is(c, i, "gt"))
			f |= EXPIRE_GT;
		else if (cmd_arg_is(c, i, "lt"))
			f |= EXPIRE_LT;
		else {
			reply_errorf(&c->out, "ERR Unsupported option %.*s", (int)c->argv[i].len,
				     c->argv[i].ptr);
			return false;
		}
	}
	if ((f & EXPIRE_NX) && (f & (EXPIRE_XX | EXPIRE_GT | EXPIRE_LT))) {
		reply_error(&c->out, "ERR NX and XX, GT or LT options at the same time are not compatible");
		return false;
	}
	if ((f & EXPIRE_GT) && (f & EXPIRE_LT)) {
		reply_error(&c->out, "ERR GT and LT options at the same time are not compatible");
		return false;
	}
	*flags = f;
	return true;
}

/* expireGenericCommand: BASETIME is now (relative) or 0 (absolute); SECONDS
 * scales the argument. */
static void expire_generic(struct client *c, long long basetime, bool seconds)
{
	int flags;
	long long when;
	if (!expire_flags(c, &flags) || !cmd_arg_ll(c, 2, &when, NULL))
		return;
	/* Negative times are allowed; only overflow is an error. */
	if (seconds) {
		if (when > LLONG_MAX / 1000 || when < LLONG_MIN / 1000)
			goto invalid;
		when *= 1000;
	}
	if (when > LLONG_MAX - basetime)
		goto invalid;
	when += basetime;

	struct entry *e = lookup(c, c->db, 1, STORE_LOOKUP_NOSTATS);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	if (flags) {
		int64_t cur = entry_expire(e);
		/* A key without TTL counts as an infinite TTL for GT and LT. */
		if (((flags & EXPIRE_NX) && cur != -1) || ((flags & EXPIRE_XX) && cur == -1) ||
		    ((flags & EXPIRE_GT) && (cur == -1 || when <= cur)) ||
		    ((flags & EXPIRE_LT) && cur != -1 && when >= cur)) {
			reply_long(&c->out, 0);
			return;
		}
	}
	if (when <= c->now_ms) {
		/* checkAlreadyExpired: a time in the past deletes the key. */
		store_delete_entry_locked(c->srv->store, c->db, e);
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
		reply_long(&c->out, 1);
		return;
	}
	if (store_set_expire_locked(c->srv->store, c->db, &e, when) < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	reply_long(&c->out, 1);
	notify_arg(c, NOTIFY_GENERIC, "expire", 1); /* after the reply, as Redis */
	return;
invalid:
	reply_errorf(&c->out, "ERR invalid expire time in '%s' command", c->cmd ? c->cmd->name : "expire");
}

void cmd_expire(struct client *c)
{
	expire_generic(c, c->now_ms, true);
}

void cmd_pexpire(struct client *c)
{
	expire_generic(c, c->now_ms, false);
}

void cmd_expireat(struct client *c)
{
	expire_generic(c, 0, true);
}

void cmd_pexpireat(struct client *c)
{
	expire_generic(c, 0, false);
}

/* ttlGenericCommand: -2 no key, -1 no TTL; seconds are rounded. */
static void ttl_generic(struct client *c, bool ms, bool absolute)
{
	struct entry *e = lookup(c, c->db, 1, STORE_LOOKUP_NOTOUCH);
	if (!e) {
		reply_long(&c->out, -2);
		return;
	}
	int64_t at = entry_expire(e);
	if (at == -1) {
		reply_long(&c->out, -1);
		return;
	}
	long long ttl = absolute ? at : at - c->now_ms;
	if (ttl < 0)
		ttl = 0;
	/* ttl >= 0 here; rounding in unsigned arithmetic cannot overflow for an
	 * expiry near LLONG_MAX (redis-server's build answers the same). */
	reply_long(&c->out, ms ? ttl : (long long)(((unsigned long long)ttl + 500ULL) / 1000ULL));
}

void cmd_ttl(struct client *c)
{
	ttl_generic(c, false, false);
}

void cmd_pttl(struct client *c)
{
	ttl_generic(c, true, false);
}

void cmd_expiretime(struct client *c)
{
	ttl_generic(c, false, true);
}

void cmd_pexpiretime(struct client *c)
{
	ttl_generic(c, true, true);
}

void cmd_persist(struct client *c)
{
	struct entry *e = lookup(c, c->db, 1, STORE_LOOKUP_NOSTATS);
	if (!e || entry_expire(e) == -1) {
		reply_long(&c->out, 0);
		return;
	}
	if (store_set_expire_locked(c->srv->store, c->db, &e, -1) < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	notify_arg(c, NOTIFY_GENERIC, "persist", 1);
	reply_long(&c->out, 1);
}

/* --- RENAME RENAMENX COPY MOVE ------------------------------------------------- */

static bool same_arg(const struct client *c, int a, int b)
{
	return c->argv[a].len == c->argv[b].len &&
	       memcmp(c->argv[a].ptr, c->argv[b].ptr, c->argv[a].len) == 0;
}

/* dbAdd's signalKeyAsReady: a list or sorted set that lands on argv[ARGI]
 * of DB may serve clients blocked on that key (after the command). */
static void signal_ready(struct client *c, enum store_type type, unsigned db, int argi)
{
	if (type == STORE_TYPE_LIST || type == STORE_TYPE_ZSET)
		blocking_signal_key(c->srv, db, c->argv[argi].ptr, c->argv[argi].len);
}

static void rename_generic(struct client *c, bool nx)
{
	struct entry *e = lookup(c, c->db, 1, STORE_LOOKUP_NOSTATS);
	if (!e) {
		reply_error(&c->out, ERR_NO_KEY);
		return;
	}
	/* Redis 7.0: renaming a key to itself succeeds (RENAMENX says 0). */
	if (same_arg(c, 1, 2)) {
		if (nx)
			reply_long(&c->out, 0);
		else
			reply_ok(&c->out);
		return;
	}
	if (nx && lookup(c, c->db, 2, STORE_LOOKUP_NOSTATS | STORE_LOOKUP_NOTOUCH)) {
		reply_long(&c->out, 0);
		return;
	}
	/* The lookup of the destination may have deleted an expired key in
	 * the same shard; E itself stays valid (entries never move on a
	 * table change). */
	enum store_type type = entry_type(e);
	if (store_rename_locked(c->srv->store, c->db, e, c->db, c->argv[2].ptr, c->argv[2].len) < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	signal_ready(c, type, c->db, 2);
	notify_arg(c, NOTIFY_GENERIC, "rename_from", 1);
	notify_arg(c, NOTIFY_GENERIC, "rename_to", 2);
	if (nx)
		reply_long(&c->out, 1);
	else
		reply_ok(&c->out);
}

void cmd_rename(struct client *c)
{
	rename_generic(c, false);
}

void cmd_renamenx(struct client *c)
{
	rename_generic(c, true);
}

void cmd_copy(struct client *c)
{
	unsigned dst = c->db;
	bool replace = false;
	for (int i = 3; i < c->argc; i++) {
		if (cmd_arg_is(c, i, "replace")) {
			replace = true;
		} else if (cmd_arg_is(c, i, "db") && i + 1 < c->argc) {
			if (!cmd_arg_db(c, i + 1, &dst))
				return;
			i++;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	if (c->srv->cluster && (c->db != 0 || dst != 0)) {
		reply_error(&c->out, "ERR Copying to another database is not allowed in cluster mode");
		return;
	}
	if (dst == c->db && same_arg(c, 1, 2)) {
		reply_error(&c->out, ERR_SAME_OBJECT);
		return;
	}
	struct entry *e = lookup(c, c->db, 1, 0);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	if (!replace && lookup(c, dst, 2, STORE_LOOKUP_NOSTATS | STORE_LOOKUP_NOTOUCH)) {
		reply_long(&c->out, 0);
		return;
	}
	enum store_type type = entry_type(e);
	if (store_copy_locked(c->srv->store, c->db, e, dst, c->argv[2].ptr, c->argv[2].len) < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	store_write_changes_are(1); /* REPLACE's delete of the old value too: one, as Redis */
	signal_ready(c, type, dst, 2);
	notify_keyspace_event(c->srv, NOTIFY_GENERIC, "copy_to", c->argv[2].ptr, c->argv[2].len, dst);
	reply_long(&c->out, 1);
}

void cmd_move(struct client *c)
{
	unsigned dst;
	if (c->srv->cluster) {
		reply_error(&c->out, "ERR MOVE is not allowed in cluster mode"); /* one database */
		return;
	}
	if (!cmd_arg_db(c, 2, &dst))
		return;
	if (dst == c->db) {
		reply_error(&c->out, ERR_SAME_OBJECT);
		return;
	}
	struct entry *e = lookup(c, c->db, 1, STORE_LOOKUP_NOSTATS);
	if (!e || lookup(c, dst, 1, STORE_LOOKUP_NOSTATS | STORE_LOOKUP_NOTOUCH)) {
		reply_long(&c->out, 0);
		return;
	}
	enum store_type type = entry_type(e);
	if (store_rename_locked(c->srv->store, c->db, e, dst, c->argv[1].ptr, c->argv[1].len) < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	signal_ready(c, type, dst, 1);
	notify_arg(c, NOTIFY_GENERIC, "move_from", 1);
	notify_keyspace_event(c->srv, NOTIFY_GENERIC, "move_to", c->argv[1].ptr, c->argv[1].len, dst);
	reply_long(&c->out, 1);
}

/* --- KEYS SCAN RANDOMKEY DBSIZE ------------------------------------------------ */

static bool has_glob(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] == '*' || p[i] == '?' || p[i] == '[' || p[i] == '\\')
			return true;
	return false;
}

struct keys_ctx {
	struct client *c;
	const char *pat;
	size_t plen;
	bool all;
	long n;
};

static void keys_visit(const struct entry *e, void *arg)
{
	struct keys_ctx *k = arg;
	size_t klen;
	const char *key = entry_key(e, &klen);
	if (k->all || zr_glob_match(k->pat, k->plen, key, klen, false)) {
		reply_bulk(&k->c->out, key, klen);
		k->n++;
	}
}

void cmd_keys(struct client *c)
{
	struct store *s = c->srv->store;
	size_t plen;
	const char *pat = cmd_arg(c, 1, &plen);
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	struct keys_ctx k = { c, pat, plen, plen == 1 && pat[0] == '*', 0 };
	if (!has_glob(pat, plen)) {
		/* A literal pattern names at most one key: look at its shard only. */
		unsigned sh = store_shard_of(s, pat, plen);
		if (!dispatch_lock_shards(c, &sh, 1, false)) { /* a busy script holds it */
			reply_deferred_cancel(&c->out, &d);
			dispatch_refuse_busy_here(c);
			return;
		}
		struct entry *e = store_find_locked(s, c->db, pat, plen, c->now_ms,
						    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
		if (e)
			keys_visit(e, &k);
		store_unlock(s, sh);
	} else if (store_foreach(s, c->db, c->now_ms, keys_visit, &k) < 0) {
		/* a busy script holds a shard: -BUSY, not half the keys */
		reply_deferred_cancel(&c->out, &d);
		dispatch_refuse_busy_here(c);
		return;
	}
	reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, k.n);
}

/* SCAN: the keys are copied out by scan_offer (entries die with the
 * shard lock). */
static void scan_visit(const struct entry *e, void *arg)
{
	struct scan_out *so = arg;
	size_t klen;
	const char *key = entry_key(e, &klen);
	if (!scan_type_ok(so, type_names[entry_type(e)]))
		scan_skip(so);
	else
		scan_offer(so, key, klen);
}

void cmd_scan(struct client *c)
{
	uint64_t cursor;
	struct scan_out so;
	if (!scan_arg_cursor(c, 1, &cursor) || !scan_arg_opts(c, 2, true, &so))
		return;
	do {
		if (store_scan(c->srv->store, c->db, &cursor, c->now_ms, scan_visit, &so) < 0) {
			scan_discard(&so); /* a busy script holds a shard */
			dispatch_refuse_busy_here(c);
			return;
		}
	} while (scan_more(&so, cursor));
	scan_reply(c, cursor, &so);
}

struct random_ctx {
	char small[128];
	char *key;
	size_t klen;
};

static void random_visit(const struct entry *e, void *arg)
{
	struct random_ctx *r = arg;
	const char *key = entry_key(e, &r->klen);
	r->key = r->klen <= sizeof(r->small) ? r->small : zr_malloc(r->klen);
	memcpy(r->key, key, r->klen);
}

void cmd_randomkey(struct client *c)
{
	struct random_ctx r = { .key = NULL };
	int found = store_random_key(c->srv->store, c->db, c->now_ms, random_visit, &r);
	if (found < 0) { /* a busy script holds the shard drawn */
		dispatch_refuse_busy_here(c);
		return;
	}
	if (!found) {
		reply_null(&c->out);
		return;
	}
	reply_bulk(&c->out, r.key, r.klen);
	if (r.key != r.small)
		zr_free(r.key);
}

void cmd_dbsize(struct client *c)
{
	reply_long(&c->out, (long long)store_dbsize(c->srv->store, c->db));
}

/* --- FLUSHDB FLUSHALL SWAPDB ---------------------------------------------------- */

/* getFlushCommandFlags: [ASYNC|SYNC]. Both flush inline: entries are
 * freed shard by shard, each lock held only for its own shard. */
static bool flush_flags(struct client *c)
{
	if (c->argc > 2 || (c->argc == 2 && !cmd_arg_is(c, 1, "sync") && !cmd_arg_is(c, 1, "async"))) {
		reply_error(&c->out, ERR_SYNTAX);
		return false;
	}
	return true;
}

void cmd_flushdb(struct client *c)
{
	if (!flush_flags(c))
		return;
	store_flushdb(c->srv->store, c->db);
	reply_ok(&c->out);
}

void cmd_flushall(struct client *c)
{
	if (!flush_flags(c))
		return;
	store_flushall(c->srv->store);
	reply_ok(&c->out);
}

void cmd_swapdb(struct client *c)
{
	long long a, b;
	if (c->srv->cluster) {
		reply_error(&c->out, "ERR SWAPDB is not allowed in cluster mode");
		return;
	}
	if (!cmd_arg_ll_range(c, 1, INT_MIN, INT_MAX, &a, "ERR invalid first DB index") ||
	    !cmd_arg_ll_range(c, 2, INT_MIN, INT_MAX, &b, "ERR invalid second DB index"))
		return;
	long long n = store_databases(c->srv->store);
	if (a < 0 || a >= n || b < 0 || b >= n) {
		reply_error(&c->out, ERR_DB_INDEX);
		return;
	}
	store_swapdb(c->srv->store, (unsigned)a, (unsigned)b);
	/* clients blocked in either database may find their key filled now */
	blocking_signal_db(c->srv, (unsigned)a);
	if (b != a)
		blocking_signal_db(c->srv, (unsigned)b);
	reply_ok(&c->out);
}

/* --- OBJECT ------------------------------------------------------------------------ */

/* objectCommandLookupOrReply: no touch, no stats; a missing key is a null. */
static struct entry *object_lookup(struct client *c)
{
	struct entry *e = lookup(c, c->db, 2, STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
	if (!e)
		reply_null(&c->out);
	return e;
}

void cmd_object_encoding(struct client *c)
{
	struct entry *e = object_lookup(c);
	if (e)
		reply_bulk_cstr(&c->out, entry_encoding(c->srv->store, e));
}

void cmd_object_freq(struct client *c)
{
	struct entry *e = object_lookup(c);
	if (!e)
		return;
	if (!policy_is_lfu(c)) {
		reply_error(&c->out, ERR_LFU_NOT_SELECTED);
		return;
	}
	reply_long(&c->out, entry_lfu(c->srv->store, e));
}

void cmd_object_idletime(struct client *c)
{
	struct entry *e = object_lookup(c);
	if (!e)
		return;
	if (policy_is_lfu(c)) {
		reply_error(&c->out, ERR_LFU_SELECTED);
		return;
	}
	reply_long(&c->out, (long long)entry_idle_seconds(c->srv->store, e));
}

void cmd_object_refcount(struct client *c)
{
	struct entry *e = object_lookup(c);
	if (!e)
		return;
	/* Redis answers 0..9999 from shared objects unless an LRU/LFU policy
	 * with a maxmemory needs a clock per object. */
	int p = atomic_load_explicit(&c->srv->cfg->maxmemory_policy, memory_order_relaxed);
	bool clocked = p != STORE_EVICT_NOEVICTION && p != STORE_EVICT_ALLKEYS_RANDOM &&
		       p != STORE_EVICT_VOLATILE_RANDOM && p != STORE_EVICT_VOLATILE_TTL;
	bool shared = entry_is_small_int(e) &&
		      (atomic_load_explicit(&c->srv->cfg->maxmemory, memory_order_relaxed) == 0 || !clocked);
	reply_long(&c->out, shared ? INT_MAX : 1);
}

void cmd_object_help(struct client *c)
{
	static const char *const lines[] = {
		"ENCODING <key>",
		"    Return the kind of internal representation used in order to store the value",
		"    associated with a <key>.",
		"FREQ <key>",
		"    Return the access frequency index of the <key>. The returned integer is",
		"    proportional to the logarithm of the recent access frequency of the key.",
		"IDLETIME <key>",
		"    Return the idle time of the <key>, that is the approximated number of",
		"    seconds elapsed since the last access to the key.",
		"REFCOUNT <key>",
		"    Return the number of references of the value associated with the specified",
		"    <key>.",
		NULL,
	};
	cmd_reply_help(c, lines);
}

/* --- MEMORY ------------------------------------------------------------------------- */

void cmd_memory_usage(struct client *c)
{
	for (int i = 3; i < c->argc; i++) {
		long long samples;
		if (cmd_arg_is(c, i, "samples") && i + 1 < c->argc) {
			if (!cmd_arg_ll(c, i + 1, &samples, NULL))
				return;
			if (samples < 0) {
				reply_error(&c->out, ERR_SYNTAX);
				return;
			}
			i++;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	struct entry *e = object_lookup(c);
	if (e)
		reply_long(&c->out, (long long)entry_memory(c->srv->store, e));
}

void cmd_memory_stats(struct client *c)
{
	struct store *s = c->srv->store;
	size_t total = zr_mem_used(), peak = zr_mem_peak(), rss = zr_mem_rss();
	unsigned ndb = store_databases(s), dbs_with_keys = 0;
	uint64_t keys = 0, dataset = 0, overhead_tables = 0;
	for (unsigned db = 0; db < ndb; db++) {
		uint64_t n = store_dbsize(s, db);
		keys += n;
		dataset += store_db_bytes(s, db);
		dbs_with_keys += n > 0;
	}
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	long pairs = 0;
#define KV_LONG(name, v)                             \
	do {                                         \
		reply_bulk_cstr(&c->out, name);      \
		reply_long(&c->out, (long long)(v)); \
		pairs++;                             \
	} while (0)
#define KV_DOUBLE(name, v)                          \
	do {                                        \
		reply_bulk_cstr(&c->out, name);     \
		reply_double(&c->out, (double)(v)); \
		pairs++;                            \
	} while (0)
	KV_LONG("peak.allocated", peak);
	KV_LONG("total.allocated", total);
	KV_LONG("startup.allocated", 0);
	KV_LONG("replication.backlog", 0);
	KV_LONG("clients.slaves", 0);
	KV_LONG("clients.normal", 0);
	KV_LONG("cluster.links", 0);
	KV_LONG("aof.buffer", 0);
	KV_LONG("lua.caches", 0);
	KV_LONG("functions.caches", 0);
	for (unsigned db = 0; db < ndb && dbs_with_keys; db++) {
		if (!store_dbsize(s, db))
			continue;
		uint64_t main_b, exp_b;
		store_db_overhead(s, db, &main_b, &exp_b);
		overhead_tables += main_b + exp_b;
		char name[32];
		snprintf(name, sizeof(name), "db.%u", db);
		reply_bulk_cstr(&c->out, name);
		reply_map(&c->out, 2);
		reply_bulk_cstr(&c->out, "overhead.hashtable.main");
		reply_long(&c->out, (long long)main_b);
		reply_bulk_cstr(&c->out, "overhead.hashtable.expires");
		reply_long(&c->out, (long long)exp_b);
		pairs++;
	}
	/* dataset = entry blocks; everything else allocated is overhead. */
	uint64_t data = dataset > overhead_tables ? dataset - overhead_tables : 0;
	uint64_t overhead = total > data ? total - data : 0;
	KV_LONG("overhead.total", overhead);
	KV_LONG("keys.count", keys);
	KV_LONG("keys.bytes-per-key", keys ? total / keys : 0);
	KV_LONG("dataset.bytes", data);
	KV_DOUBLE("dataset.percentage", total ? 100.0 * (double)data / (double)total : 0);
	KV_DOUBLE("peak.percentage", peak ? 100.0 * (double)total / (double)peak : 0);
	KV_LONG("allocator.allocated", total);
	KV_LONG("allocator.active", total);
	KV_LONG("allocator.resident", rss);
	KV_DOUBLE("allocator-fragmentation.ratio", 1.0);
	KV_LONG("allocator-fragmentation.bytes", 0);
	KV_DOUBLE("allocator-rss.ratio", total ? (double)rss / (double)total : 0);
	KV_LONG("allocator-rss.bytes", rss > total ? rss - total : 0);
	KV_DOUBLE("rss-overhead.ratio", 1.0);
	KV_LONG("rss-overhead.bytes", 0);
	KV_DOUBLE("fragmentation", total ? (double)rss / (double)total : 0);
	KV_LONG("fragmentation.bytes", rss > total ? rss - total : 0);
#undef KV_LONG
#undef KV_DOUBLE
	reply_set_deferred(&c->out, &d, REPLY_AGG_MAP, pairs);
}

void cmd_memory_doctor(struct client *c)
{
	/* Redis's two verdicts for what this server can measure: too little
	 * data to judge (under 5 MB), or nothing wrong found. */
	static const char empty[] =
		"Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in "
		"these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and "
		"I will be back to our programming as soon as I finished rebooting.\n";
	static const char fine[] =
		"Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this "
		"base.\n";
	if (zr_mem_used() < 5u << 20)
		reply_verbatim(&c->out, empty, sizeof(empty) - 1, "txt");
	else
		reply_verbatim(&c->out, fine, sizeof(fine) - 1, "txt");
}

struct text_buf {
	char *p;
	size_t len, cap;
};

static void text_append(void *arg, const char *s)
{
	struct text_buf *t = arg;
	size_t n = strlen(s);
	if (t->len + n + 1 > t->cap) {
		size_t cap = t->cap ? t->cap : 4096;
		while (cap < t->len + n + 1)
			cap *= 2;
		t->p = zr_realloc(t->p, cap);
		t->cap = cap;
	}
	memcpy(t->p + t->len, s, n);
	t->len += n;
}

void cmd_memory_malloc_stats(struct client *c)
{
	struct text_buf t = { 0 };
	if (!zr_mem_stats_text(text_append, &t)) {
		static const char none[] = "Stats not supported for the current allocator";
		reply_verbatim(&c->out, none, sizeof(none) - 1, "txt");
		return;
	}
	reply_verbatim(&c->out, t.p ? t.p : "", t.len, "txt");
	zr_free(t.p);
}

void cmd_memory_purge(struct client *c)
{
	zr_mem_purge();
	reply_ok(&c->out);
}

void cmd_memory_help(struct client *c)
{
	static const char *const lines[] = {
		"DOCTOR",
		"    Return memory problems reports.",
		"MALLOC-STATS",
		"    Return internal statistics report from the memory allocator.",
		"PURGE",
		"    Attempt to purge dirty pages for reclamation by the allocator.",
		"STATS",
		"    Return information about the memory usage of the server.",
		"USAGE <key> [SAMPLES <count>]",
		"    Return memory in bytes used by <key> and its value. Nested values are",
		"    sampled up to <count> times (default: 5, 0 means sample all).",
		NULL,
	};
	cmd_reply_help(c, lines);
}
