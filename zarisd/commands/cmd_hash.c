/* cmd_hash — the hash commands, Redis 7.0's t_hash.c semantics: HSET HMSET
 * HSETNX HGET HMGET HDEL HEXISTS HLEN HSTRLEN HKEYS HVALS HGETALL HINCRBY
 * HINCRBYFLOAT HRANDFIELD HSCAN. The value structure is store/hash.h.
 *
 * Every handler runs on the client's worker with the key's shard lock held
 * by the dispatcher, hence only *_locked store calls. A write that creates
 * the key builds the hash first and stores it only when it holds something,
 * so no error path leaves an empty hash behind; a hash emptied by HDEL is
 * deleted (Redis semantics). The listpack limits are read from the
 * settings once per command.
 */
#include <limits.h>
#include <math.h>
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
#include "zarisd/store/hash.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"
#include "zarisd/store/strtab.h"

#define ERR_HASH_NOT_INTEGER "ERR hash value is not an integer"
#define ERR_HASH_NOT_FLOAT "ERR hash value is not a float"
#define ERR_NAN_OR_INF "ERR value is NaN or Infinity"
#define ERR_OUT_OF_RANGE "ERR value is out of range"
#define ERR_LONG_RANGE \
	"ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"

/* --- helpers ------------------------------------------------------------------ */

/* Per-thread random state for HRANDFIELD (xorshift, never zero). */
static __thread uint64_t rnd_state;

static uint64_t *rnd(void)
{
	if (!rnd_state)
		rnd_state = ((uint64_t)zr_time_us() ^ (uint64_t)(uintptr_t)&rnd_state) | 1;
	return &rnd_state;
}

/* Finds argv[1]: *E and *H are set (NULL when missing). false after a
 * WRONGTYPE reply. WRITE lookups are not counted as hits/misses
 * (lookupKeyWrite). */
static bool lookup(struct client *c, bool write, struct entry **e, struct hash **h)
{
	*e = store_find_locked(c->srv->store, c->db, c->argv[1].ptr, c->argv[1].len, c->now_ms,
			       write ? STORE_LOOKUP_NOSTATS : 0);
	*h = NULL;
	if (!*e)
		return true;
	if (entry_type(*e) != STORE_TYPE_HASH) {
		reply_error(&c->out, ERR_WRONGTYPE);
		return false;
	}
	*h = entry_obj(*e);
	return true;
}

static void limits(const struct client *c, struct hash_limits *lim)
{
	lim->max_entries =
		(uint64_t)atomic_load_explicit(&c->srv->cfg->hash_max_listpack_entries, memory_order_relaxed);
	lim->max_value =
		(uint64_t)atomic_load_explicit(&c->srv->cfg->hash_max_listpack_value, memory_order_relaxed);
}

/* Ends a write: stores a hash created by this command (E NULL) or records
 * the change of an existing one. A created hash that stayed empty is freed
 * (no key). false after replying -OOM (H freed when it was new). */
static bool commit(struct client *c, struct entry *e, struct hash *h)
{
	if (e) {
		store_modified_locked(c->srv->store, c->db, e);
		return true;
	}
	if (hash_len(h) == 0) {
		hash_free(h);
		return true;
	}
	if (store_set_object_locked(c->srv->store, c->db, c->argv[1].ptr, c->argv[1].len, STORE_TYPE_HASH, h,
				    -1, 0, NULL) < 0) {
		hash_free(h);
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	return true;
}

/* --- writes ------------------------------------------------------------------ */

/* HSET / HMSET: pairs from argv[2]; the number of new fields, or -1 after
 * replying an error. */
static long long hset_generic(struct client *c)
{
	if (c->argc % 2 != 0) {
		cmd_reply_arity(c);
		return -1;
	}
	struct entry *e;
	struct hash *h;
	if (!lookup(c, true, &e, &h))
		return -1;
	if (!h)
		h = hash_new();
	struct hash_limits lim;
	limits(c, &lim);
	long long added = 0;
	bool oom = false;
	for (int i = 2; i < c->argc && !oom; i += 2) {
		int rc = hash_set(h, c->argv[i].ptr, c->argv[i].len, c->argv[i + 1].ptr, c->argv[i + 1].len,
				  &lim);
		if (rc < 0)
			oom = true;
		else
			added += rc;
	}
	if (!commit(c, e, h))
		return -1;
	/* Redis counts each pair, new or not */
	store_write_changes_are((uint64_t)(c->argc - 2) / 2);
	notify_arg(c, NOTIFY_HASH, "hset", 1);
	if (oom) {
		reply_error(&c->out, ERR_OOM);
		return -1;
	}
	return added;
}

void cmd_hset(struct client *c)
{
	long long added = hset_generic(c);
	if (added >= 0)
		reply_long(&c->out, added);
}

void cmd_hmset(struct client *c)
{
	if (hset_generic(c) >= 0)
		reply_ok(&c->out);
}

void cmd_hsetnx(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, true, &e, &h))
		return;
	const char *v;
	size_t vlen;
	if (h && hash_get(h, c->argv[2].ptr, c->argv[2].len, &v, &vlen)) {
		/* a refused HSETNX leaves even the encoding alone (7.0.15) */
		reply_long(&c->out, 0);
		return;
	}
	if (!h)
		h = hash_new();
	struct hash_limits lim;
	limits(c, &lim);
	int rc = hash_set(h, c->argv[2].ptr, c->argv[2].len, c->argv[3].ptr, c->argv[3].len, &lim);
	if (!commit(c, e, h))
		return;
	if (rc < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	notify_arg(c, NOTIFY_HASH, "hset", 1);
	reply_long(&c->out, 1);
}

void cmd_hdel(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, true, &e, &h))
		return;
	long long deleted = 0;
	for (int i = 2; h && i < c->argc; i++) {
		if (hash_delete(h, c->argv[i].ptr, c->argv[i].len))
			deleted++;
		if (hash_len(h) == 0)
			break;
	}
	if (deleted) {
		bool emptied = hash_len(h) == 0;
		if (emptied)
			store_delete_entry_locked(c->srv->store, c->db, e);
		else
			store_modified_locked(c->srv->store, c->db, e);
		store_write_changes_are((uint64_t)deleted);
		notify_arg(c, NOTIFY_HASH, "hdel", 1);
		if (emptied)
			notify_arg(c, NOTIFY_GENERIC, "del", 1);
	}
	reply_long(&c->out, deleted);
}

/* HINCRBY / HINCRBYFLOAT: stores VAL (the formatted result) under argv[2]
 * and sends EVENT; the caller replies unless this replied an error. */
static void store_field(struct client *c, struct entry *e, struct hash *h, const char *val, size_t vlen,
			const char *event)
{
	struct hash_limits lim;
	limits(c, &lim);
	int rc = hash_set(h, c->argv[2].ptr, c->argv[2].len, val, vlen, &lim);
	if (!commit(c, e, h))
		return;
	if (rc < 0)
		reply_error(&c->out, ERR_OOM);
	else
		notify_arg(c, NOTIFY_HASH, event, 1);
}

void cmd_hincrby(struct client *c)
{
	long long incr, value = 0;
	if (!cmd_arg_ll(c, 3, &incr, NULL))
		return;
	struct entry *e;
	struct hash *h;
	if (!lookup(c, true, &e, &h))
		return;
	const char *v;
	size_t vlen;
	if (h && hash_get(h, c->argv[2].ptr, c->argv[2].len, &v, &vlen) && !zr_str_to_ll(v, vlen, &value)) {
		reply_error(&c->out, ERR_HASH_NOT_INTEGER);
		return;
	}
	if (!cmd_incr_ll_or_reply(c, value, incr, &value))
		return;
	char buf[ZR_LONG_STR_SIZE];
	size_t n = zr_ll_to_str(buf, value);
	uint64_t errors = c->out.errors;
	store_field(c, e, h ? h : hash_new(), buf, n, "hincrby");
	if (c->out.errors == errors)
		reply_long(&c->out, value);
}

void cmd_hincrbyfloat(struct client *c)
{
	long double incr, value = 0;
	if (!cmd_arg_ld(c, 3, &incr))
		return;
	if (isnan(incr) || isinf(incr)) {
		reply_error(&c->out, ERR_NAN_OR_INF);
		return;
	}
	struct entry *e;
	struct hash *h;
	if (!lookup(c, true, &e, &h))
		return;
	const char *v;
	size_t vlen;
	if (h && hash_get(h, c->argv[2].ptr, c->argv[2].len, &v, &vlen) && !zr_str_to_ld(v, vlen, &value)) {
		reply_error(&c->out, ERR_HASH_NOT_FLOAT);
		return;
	}
	char buf[ZR_MAX_LONG_DOUBLE_CHARS];
	size_t n;
	if (!cmd_incr_ld_or_reply(c, value, incr, buf, &n))
		return;
	uint64_t errors = c->out.errors;
	store_field(c, e, h ? h : hash_new(), buf, n, "hincrbyfloat");
	if (c->out.errors == errors)
		reply_bulk(&c->out, buf, n);
}

/* --- reads ------------------------------------------------------------------- */

void cmd_hget(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	const char *v;
	size_t vlen;
	if (h && hash_get(h, c->argv[2].ptr, c->argv[2].len, &v, &vlen))
		reply_bulk(&c->out, v, vlen);
	else
		reply_null(&c->out);
}

void cmd_hmget(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	reply_array(&c->out, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		const char *v;
		size_t vlen;
		if (h && hash_get(h, c->argv[i].ptr, c->argv[i].len, &v, &vlen))
			reply_bulk(&c->out, v, vlen);
		else
			reply_null(&c->out);
	}
}

void cmd_hexists(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	const char *v;
	size_t vlen;
	reply_long(&c->out, h && hash_get(h, c->argv[2].ptr, c->argv[2].len, &v, &vlen));
}

void cmd_hlen(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	reply_long(&c->out, h ? (long long)hash_len(h) : 0);
}

void cmd_hstrlen(struct client *c)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	const char *v;
	size_t vlen = 0;
	if (!h || !hash_get(h, c->argv[2].ptr, c->argv[2].len, &v, &vlen))
		vlen = 0;
	reply_long(&c->out, (long long)vlen);
}

enum {
	WANT_FIELDS = 1,
	WANT_VALUES = 2
};

/* genericHgetallCommand: HKEYS, HVALS, HGETALL (a map). */
static void getall_generic(struct client *c, int want)
{
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	long len = h ? (long)hash_len(h) : 0;
	if (want == (WANT_FIELDS | WANT_VALUES))
		reply_map(&c->out, len);
	else
		reply_array(&c->out, len);
	if (!h)
		return;
	struct hash_iter it;
	hash_iter_init(&it, h);
	const char *f, *v;
	size_t flen, vlen;
	while (hash_next(&it, &f, &flen, &v, &vlen)) {
		if (want & WANT_FIELDS)
			reply_bulk(&c->out, f, flen);
		if (want & WANT_VALUES)
			reply_bulk(&c->out, v, vlen);
	}
}

void cmd_hkeys(struct client *c)
{
	getall_generic(c, WANT_FIELDS);
}

void cmd_hvals(struct client *c)
{
	getall_generic(c, WANT_VALUES);
}

void cmd_hgetall(struct client *c)
{
	getall_generic(c, WANT_FIELDS | WANT_VALUES);
}

/* --- HRANDFIELD ------------------------------------------------------------------ */

/* One pair of the reply: RESP3 nests [field, value] arrays, RESP2 is flat. */
static void reply_pair(struct client *c, bool withvalues, const char *f, size_t flen, const char *v,
		       size_t vlen)
{
	if (withvalues && c->resp == 3)
		reply_array(&c->out, 2);
	reply_bulk(&c->out, f, flen);
	if (withvalues)
		reply_bulk(&c->out, v, vlen);
}

struct pair_ref {
	const char *f, *v;
	size_t flen, vlen;
};

/* COUNT distinct random fields, COUNT < len. Pointers into H stay valid:
 * nothing modifies H meanwhile. */
static void randfield_unique(struct client *c, const struct hash *h, unsigned long count, bool withvalues)
{
	uint64_t size = hash_len(h);
	struct pair_ref *pick = zr_malloc(sizeof(*pick) * count);
	unsigned long n = 0;
	if (count * 3 > size) {
		/* Many of them: a partial Fisher-Yates over every pair. */
		struct pair_ref *all = zr_malloc(sizeof(*all) * size);
		struct hash_iter it;
		hash_iter_init(&it, h);
		uint64_t i = 0;
		while (hash_next(&it, &all[i].f, &all[i].flen, &all[i].v, &all[i].vlen))
			i++;
		for (; n < count; n++) {
			uint64_t j = n + strtab_rand(rnd()) % (size - n);
			struct pair_ref t = all[n];
			all[n] = all[j];
			all[j] = t;
			pick[n] = all[n];
		}
		zr_free(all);
	} else {
		/* Few of them: draw until COUNT distinct fields were seen. */
		struct strtab seen;
		strtab_init(&seen);
		while (n < count) {
			struct pair_ref p;
			hash_random(h, rnd(), &p.f, &p.flen, &p.v, &p.vlen);
			if (strtab_add(&seen, p.f, p.flen) > 0)
				pick[n++] = p;
		}
		strtab_clear(&seen);
	}
	reply_array(&c->out, (long)(withvalues && c->resp == 2 ? count * 2 : count));
	for (unsigned long i = 0; i < count; i++)
		reply_pair(c, withvalues, pick[i].f, pick[i].flen, pick[i].v, pick[i].vlen);
	zr_free(pick);
}

static void randfield_count(struct client *c)
{
	long long l;
	bool withvalues = false;
	if (!cmd_arg_ll(c, 2, &l, NULL))
		return;
	if (l == LLONG_MIN) {
		reply_error(&c->out, ERR_LONG_RANGE);
		return;
	}
	if (c->argc == 4 && cmd_arg_is(c, 3, "withvalues")) {
		withvalues = true;
	} else if (c->argc >= 4) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	if (withvalues && (l < -LLONG_MAX / 2 || l > LLONG_MAX / 2)) { /* both signs, as Redis */
		reply_error(&c->out, ERR_OUT_OF_RANGE);
		return;
	}
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	if (!h || l == 0) {
		reply_array(&c->out, 0);
		return;
	}
	if (l < 0) {
		/* Repeats allowed: |COUNT| independent draws. */
		unsigned long long count = (unsigned long long)-l;
		reply_array(&c->out, (long)(withvalues && c->resp == 2 ? count * 2 : count));
		while (count--) {
			const char *f, *v;
			size_t flen, vlen;
			hash_random(h, rnd(), &f, &flen, &v, &vlen);
			reply_pair(c, withvalues, f, flen, v, vlen);
		}
		return;
	}
	unsigned long long count = (unsigned long long)l;
	uint64_t size = hash_len(h);
	if (count >= size) {
		/* The whole hash, in its order. */
		reply_array(&c->out, (long)(withvalues && c->resp == 2 ? size * 2 : size));
		struct hash_iter it;
		hash_iter_init(&it, h);
		const char *f, *v;
		size_t flen, vlen;
		while (hash_next(&it, &f, &flen, &v, &vlen))
			reply_pair(c, withvalues, f, flen, v, vlen);
		return;
	}
	randfield_unique(c, h, (unsigned long)count, withvalues);
}

void cmd_hrandfield(struct client *c)
{
	if (c->argc >= 3) {
		randfield_count(c);
		return;
	}
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	if (!h) {
		reply_null(&c->out);
		return;
	}
	const char *f, *v;
	size_t flen, vlen;
	hash_random(h, rnd(), &f, &flen, &v, &vlen);
	reply_bulk(&c->out, f, flen);
}

/* --- HSCAN ------------------------------------------------------------------------ */

static void scan_visit(const char *f, size_t flen, const char *v, size_t vlen, void *arg)
{
	scan_offer_pair(arg, f, flen, v, vlen);
}

void cmd_hscan(struct client *c)
{
	uint64_t cursor;
	if (!scan_arg_cursor(c, 2, &cursor))
		return;
	struct entry *e;
	struct hash *h;
	if (!lookup(c, false, &e, &h))
		return;
	if (!h) {
		scan_reply_empty(c);
		return;
	}
	struct scan_out so;
	if (!scan_arg_opts(c, 3, false, &so))
		return;
	/* a listpack returns everything in one step, with cursor 0 */
	do
		cursor = hash_scan(h, cursor, scan_visit, &so);
	while (scan_more(&so, cursor));
	scan_reply(c, cursor, &so);
}
