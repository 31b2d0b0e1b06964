/* cmd_string — the string commands, Redis 7.0's t_string.c semantics: GET,
 * SET and its variants (SETNX SETEX PSETEX GETSET GETDEL GETEX), MGET, MSET,
 * MSETNX, the counters (INCR DECR INCRBY DECRBY INCRBYFLOAT), APPEND,
 * STRLEN, GETRANGE/SUBSTR, SETRANGE and LCS.
 *
 * Every handler runs on the client's worker with the shard locks of all the
 * keys of its row's key spec already held by the dispatcher (MSET/MSETNX:
 * every key shard at once, so they are atomic), hence only *_locked store
 * calls here. Entry pointers die with those locks and whenever the store
 * says an entry may move (resize, set_expire).
 *
 * Lookups mirror Redis's lookupKeyRead / lookupKeyWrite: a read lookup
 * counts a keyspace hit or miss, a write lookup does not. GET and plain SET
 * are the benchmark's hot path: GET allocates nothing, SET of a new key
 * costs the one entry allocation the store makes, and a plain SET does no
 * lookup of its own (the store replaces whatever is there).
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmd_meta.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define ERR_OFFSET_RANGE "ERR offset is out of range"

/* --- small helpers ---------------------------------------------------------- */

static long long max_bulk_len(const struct client *c)
{
	return atomic_load_explicit(&c->srv->cfg->proto_max_bulk_len, memory_order_relaxed);
}

/* checkStringLength (7.0.8+, overflow-safe form): false after replying when a
 * string of SIZE + GROW bytes would exceed proto-max-bulk-len. */
static bool string_length_ok_or_reply(struct client *c, unsigned long long size, unsigned long long grow)
{
	unsigned long long total = size + grow;
	long long max = max_bulk_len(c);
	if (total < size || max < 0 || total > (unsigned long long)max) {
		reply_error(&c->out, ERR_STRING_TOO_BIG);
		return false;
	}
	return true;
}

/* Creates or replaces argv[KEYI] with VAL; false after replying -OOM when the
 * store could not allocate (nothing changed then). */
static bool set_or_reply(struct client *c, int keyi, const char *val, size_t vlen, int64_t expire_ms,
			 int flags, struct entry **out)
{
	int rc = store_set_string_h_locked(c->srv->store, c->db, c->argv[keyi].ptr, c->argv[keyi].len,
					   cmd_key_hash(c, keyi), val, vlen, expire_ms, flags, out);
	if (rc < 0) {
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	return true;
}

/* Overwrites the value of the existing string entry *E with VAL (same key,
 * TTL kept, like Redis's dbOverwrite) through an in-place resize, which
 * saves re-hashing and copying the key. false after replying -OOM. */
static bool overwrite_or_reply(struct client *c, struct entry **e, const char *val, size_t vlen)
{
	char *p = store_string_overwrite_locked(c->srv->store, c->db, e, vlen);
	if (!p && vlen) {
		reply_error(&c->out, ERR_OOM);
		return false;
	}
	if (vlen)
		memcpy(p, val, vlen);
	return true; /* the resize stamped the new version */
}

/* getGenericCommand: replies the value of argv[1] (or null). Returns the
 * entry (NULL when missing); *OK is false after a WRONGTYPE reply. */
static struct entry *get_generic(struct client *c, bool *ok)
{
	struct entry *e = cmd_lookup_read(c, 1);
	*ok = true;
	if (!e) {
		reply_null(&c->out);
		return NULL;
	}
	if (!cmd_is_string_or_reply(c, e)) {
		*ok = false;
		return NULL;
	}
	size_t vlen;
	const char *v = entry_str(e, &vlen);
	reply_bulk(&c->out, v, vlen);
	return e;
}

/* --- SET family and GETEX options --------------------------------------------- */

enum set_flag {
	SET_NX = 1u << 0,
	SET_XX = 1u << 1,
	SET_EX = 1u << 2,
	SET_PX = 1u << 3,
	SET_KEEPTTL = 1u << 4,
	SET_GET = 1u << 5,
	SET_EXAT = 1u << 6,
	SET_PXAT = 1u << 7,
	SET_PERSIST = 1u << 8,
};

#define SET_ANY_EXPIRE (SET_EX | SET_PX | SET_EXAT | SET_PXAT)

/* The extended options of SET and GETEX as Redis parses them: an option is
 * accepted when it belongs to the command and none of its CONFLICTS was seen
 * before; anything else is a syntax error. Repeating an option is allowed
 * (the last expiry value wins), as in Redis. */
static const struct ext_opt {
	const char *name;
	unsigned flag;
	unsigned conflicts;
	bool for_set;	/* SET accepts it */
	bool for_getex; /* GETEX accepts it */
	bool has_value;
} ext_opts[] = {
	{ "nx", SET_NX, SET_XX, true, false, false },
	{ "xx", SET_XX, SET_NX, true, false, false },
	{ "get", SET_GET, 0, true, false, false },
	{ "keepttl", SET_KEEPTTL, SET_PERSIST | SET_ANY_EXPIRE, true, false, false },
	{ "persist", SET_PERSIST, SET_KEEPTTL | SET_ANY_EXPIRE, false, true, false },
	{ "ex", SET_EX, SET_KEEPTTL | SET_PERSIST | (SET_ANY_EXPIRE & ~SET_EX), true, true, true },
	{ "px", SET_PX, SET_KEEPTTL | SET_PERSIST | (SET_ANY_EXPIRE & ~SET_PX), true, true, true },
	{ "exat", SET_EXAT, SET_KEEPTTL | SET_PERSIST | (SET_ANY_EXPIRE & ~SET_EXAT), true, true, true },
	{ "pxat", SET_PXAT, SET_KEEPTTL | SET_PERSIST | (SET_ANY_EXPIRE & ~SET_PXAT), true, true, true },
};

/* parseExtendedStringArgumentsOrReply: options from argv[FIRST]. Sets *FLAGS
 * and *EXPIRE_ARG (index of the expiry value, 0 = none); with MA (METAPUT)
 * the metadata options too (cmd_meta.h). false after replying a syntax
 * error. */
static bool parse_ext_opts_meta(struct client *c, int first, bool is_set, unsigned *flags, int *expire_arg,
				struct meta_args *ma)
{
	for (int j = first; j < c->argc; j++) {
		if (ma) {
			int r = meta_opt_parse(c, &j, ma);
			if (r < 0)
				return false;
			if (r > 0)
				continue;
		}
		const struct ext_opt *o = NULL;
		for (size_t k = 0; k < sizeof(ext_opts) / sizeof(ext_opts[0]); k++) {
			if (cmd_opt_is(c, j, ext_opts[k].name)) {
				o = &ext_opts[k];
				break;
			}
		}
		if (!o || !(is_set ? o->for_set : o->for_getex) || (*flags & o->conflicts) ||
		    (o->has_value && j == c->argc - 1)) {
			reply_error(&c->out, ERR_SYNTAX);
			return false;
		}
		*flags |= o->flag;
		if (o->has_value)
			*expire_arg = ++j;
	}
	return true;
}

static bool parse_ext_opts(struct client *c, int first, bool is_set, unsigned *flags, int *expire_arg)
{
	return parse_ext_opts_meta(c, first, is_set, flags, expire_arg, NULL);
}

/* getExpireMillisecondsOrReply: argv[ARGI] as an absolute unix time in ms.
 * Zero or negative values, a seconds value whose ms form overflows, and a
 * relative time whose absolute form overflows are all "invalid expire time
 * in '<cmd>' command". false after replying. */
static bool expire_ms_or_reply(struct client *c, int argi, unsigned flags, int64_t *at_ms)
{
	long long v;
	if (!cmd_arg_ll(c, argi, &v, NULL))
		return false;
	bool seconds = flags & (SET_EX | SET_EXAT);
	if (v <= 0 || (seconds && v > LLONG_MAX / 1000))
		goto invalid;
	if (seconds)
		v *= 1000;
	if (flags & (SET_EX | SET_PX)) {
		if (v > LLONG_MAX - c->now_ms) /* Redis sees this as the sum wrapping negative */
			goto invalid;
		v += c->now_ms;
	}
	*at_ms = v;
	return true;
invalid:
	reply_errorf(&c->out, "ERR invalid expire time in '%s' command", c->cmd ? c->cmd->name : "set");
	return false;
}

enum set_reply {
	SET_REPLY_OK,	/* +OK / null when NX|XX stop it (SET, SETEX, PSETEX) */
	SET_REPLY_BOOL, /* :1 / :0 (SETNX) */
};

/* setGenericCommand: sets argv[1] to argv[VALI] under FLAGS, with the expiry
 * in argv[EXPI] (0 = none); with MA (METAPUT) the key's metadata becomes
 * what MA says (a plain SET keeps the metadata a key has: store.h). */
static void set_generic_meta(struct client *c, unsigned flags, int vali, int expi, enum set_reply kind,
			     const struct meta_args *ma)
{
	int64_t at = -1;
	if (expi && !expire_ms_or_reply(c, expi, flags, &at))
		return;

	struct entry *e = NULL;
	if (flags & SET_GET) {
		bool ok;
		e = get_generic(c, &ok); /* replies the old value; a read lookup, like Redis */
		if (!ok)
			return;
	} else if (flags & (SET_NX | SET_XX | SET_KEEPTTL)) {
		e = cmd_lookup_write(c, 1);
	}
	bool found = e != NULL;
	if (((flags & SET_NX) && found) || ((flags & SET_XX) && !found)) {
		if (!(flags & SET_GET)) {
			if (kind == SET_REPLY_BOOL)
				reply_long(&c->out, 0);
			else
				reply_null(&c->out);
		}
		return;
	}

	struct store_meta_fields mf;
	if (ma && !meta_fields_merge(c, NULL, true, ma, &mf))
		return; /* not reached: METAPUT's counts were checked as it parsed them */
	int sflags = (found && (flags & SET_KEEPTTL)) ? STORE_SET_KEEPTTL : 0;
	struct entry *ne = NULL;
	int rc = store_set_string_locked(c->srv->store, c->db, c->argv[1].ptr, c->argv[1].len,
					 c->argv[vali].ptr, c->argv[vali].len, at, sflags, &ne);
	if (ma) {
		/* the value and its metadata under one lock: no client sees one
		 * without the other; on -ENOMEM here the value is set and the
		 * reply says OOM */
		if (rc == 0)
			rc = store_meta_set_locked(c->srv->store, c->db, &ne, &mf);
		meta_fields_free(&mf);
		if (rc == 0)
			store_write_changes_are(1);
	}
	if (rc == 0) {
		notify_arg(c, NOTIFY_STRING, "set", 1);
		if (expi)
			notify_arg(c, NOTIFY_GENERIC, "expire", 1);
	}
	if (flags & SET_GET)
		return; /* already replied; on -ENOMEM nothing changed and nothing more can be said */
	if (rc < 0)
		reply_error(&c->out, ERR_OOM);
	else if (kind == SET_REPLY_BOOL)
		reply_long(&c->out, 1);
	else
		reply_ok(&c->out);
}

static void set_generic(struct client *c, unsigned flags, int vali, int expi, enum set_reply kind)
{
	set_generic_meta(c, flags, vali, expi, kind, NULL);
}

/* METAPUT key value [LABELS n l ...] [ENTITY e] [CONTENTTYPE t] [NX|XX]
 *   [GET] [EX s|PX ms|EXAT t|PXAT t|KEEPTTL]: SET with the key's metadata
 * replaced by the one given (none given: the key ends with none). */
void cmd_metaput(struct client *c)
{
	unsigned flags = 0;
	int expi = 0;
	struct meta_args ma = { .allow_edit = false };
	if (!parse_ext_opts_meta(c, 3, true, &flags, &expi, &ma))
		return;
	set_generic_meta(c, flags, 2, expi, SET_REPLY_OK, &ma);
}

int cmd_set_getkeys(const struct command *cmd, const struct resp_arg *argv, int argc, struct cmd_key *out)
{
	(void)cmd;
	out[0] = (struct cmd_key){ .pos = 1, .flags = KS_OW | KS_UPDATE };
	/* GET returns the old value: the key is read too */
	for (int i = 3; i < argc; i++)
		if (zr_eq_nocase(argv[i].ptr, argv[i].len, "get")) {
			out[0].flags = KS_RW | KS_ACCESS | KS_UPDATE;
			break;
		}
	return 1;
}

void cmd_set(struct client *c)
{
	if (c->argc == 3) { /* hot path: no options, no lookup */
		if (set_or_reply(c, 1, c->argv[2].ptr, c->argv[2].len, -1, 0, NULL)) {
			notify_arg(c, NOTIFY_STRING, "set", 1);
			reply_ok(&c->out);
		}
		return;
	}
	unsigned flags = 0;
	int expi = 0;
	if (!parse_ext_opts(c, 3, true, &flags, &expi))
		return;
	set_generic(c, flags, 2, expi, SET_REPLY_OK);
}

void cmd_setnx(struct client *c)
{
	set_generic(c, SET_NX, 2, 0, SET_REPLY_BOOL);
}

void cmd_setex(struct client *c)
{
	set_generic(c, SET_EX, 3, 2, SET_REPLY_OK);
}

void cmd_psetex(struct client *c)
{
	set_generic(c, SET_PX, 3, 2, SET_REPLY_OK);
}

void cmd_get(struct client *c)
{
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_null(&c->out);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t vlen;
	const char *v = entry_str(e, &vlen);
	reply_bulk(&c->out, v, vlen);
}

void cmd_getset(struct client *c)
{
	bool ok;
	get_generic(c, &ok);
	if (!ok)
		return;
	/* Like SET without KEEPTTL: the old TTL goes. Already replied, so an
	 * allocation failure leaves the key unchanged without a second reply. */
	if (store_set_string_locked(c->srv->store, c->db, c->argv[1].ptr, c->argv[1].len, c->argv[2].ptr,
				    c->argv[2].len, -1, 0, NULL) == 0)
		notify_arg(c, NOTIFY_STRING, "set", 1);
}

void cmd_getdel(struct client *c)
{
	bool ok;
	struct entry *e = get_generic(c, &ok);
	if (e) {
		store_delete_entry_locked(c->srv->store, c->db, e);
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
	}
}

void cmd_getex(struct client *c)
{
	unsigned flags = 0;
	int expi = 0;
	if (!parse_ext_opts(c, 2, false, &flags, &expi))
		return;
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_null(&c->out);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	/* Redis validates the expiry only once the key is known to be a
	 * string: GETEX missing EX 0 answers null, not an error. */
	int64_t at = -1;
	if (expi && !expire_ms_or_reply(c, expi, flags, &at))
		return;

	size_t vlen;
	const char *v = entry_str(e, &vlen);
	reply_bulk(&c->out, v, vlen); /* before the entry may go or move */

	struct store *s = c->srv->store;
	if ((flags & (SET_EXAT | SET_PXAT)) && at <= c->now_ms) {
		store_delete_entry_locked(s, c->db, e); /* an absolute time already past deletes */
		notify_arg(c, NOTIFY_GENERIC, "del", 1);
	} else if (expi) {
		if (store_set_expire_locked(s, c->db, &e, at) == 0)
			notify_arg(c, NOTIFY_GENERIC, "expire", 1);
	} else if ((flags & SET_PERSIST) && entry_expire(e) != -1) {
		if (store_set_expire_locked(s, c->db, &e, -1) == 0)
			notify_arg(c, NOTIFY_GENERIC, "persist", 1);
	}
}

/* --- multi-key --------------------------------------------------------------- */

void cmd_mget(struct client *c)
{
	reply_array(&c->out, c->argc - 1);
	for (int j = 1; j < c->argc; j++) {
		struct entry *e = cmd_lookup_read(c, j);
		if (!e || entry_type(e) != STORE_TYPE_STRING) {
			reply_null(&c->out);
			continue;
		}
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		reply_bulk(&c->out, v, vlen);
	}
}

/* MSET / MSETNX. The dispatcher holds every key's shard, so no client sees
 * half of it. An allocation failure midway (only under real OOM) leaves the
 * pairs before it set and answers -OOM. */
static void mset_generic(struct client *c, bool nx)
{
	if ((c->argc % 2) == 0) {
		cmd_reply_arity(c);
		return;
	}
	if (nx) {
		for (int j = 1; j < c->argc; j += 2) {
			if (cmd_lookup_write(c, j)) {
				reply_long(&c->out, 0);
				return;
			}
		}
	}
	for (int j = 1; j < c->argc; j += 2) {
		if (!set_or_reply(c, j, c->argv[j + 1].ptr, c->argv[j + 1].len, -1, 0, NULL))
			return;
		notify_arg(c, NOTIFY_STRING, "set", j);
	}
	if (nx)
		reply_long(&c->out, 1);
	else
		reply_ok(&c->out);
}

void cmd_mset(struct client *c)
{
	mset_generic(c, false);
}

void cmd_msetnx(struct client *c)
{
	mset_generic(c, true);
}

/* --- counters ------------------------------------------------------------------ */

static void incr_decr(struct client *c, long long incr)
{
	struct entry *e = cmd_lookup_write(c, 1);
	long long value = 0;
	if (e) {
		if (!cmd_is_string_or_reply(c, e))
			return;
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		if (!zr_str_to_ll(v, vlen, &value)) {
			reply_error(&c->out, ERR_NOT_INTEGER);
			return;
		}
	}
	if (!cmd_incr_ll_or_reply(c, value, incr, &value))
		return;

	char buf[ZR_LONG_STR_SIZE];
	size_t n = zr_ll_to_str(buf, value);
	bool ok = e ? overwrite_or_reply(c, &e, buf, n) : set_or_reply(c, 1, buf, n, -1, 0, NULL);
	if (ok) {
		notify_arg(c, NOTIFY_STRING, "incrby", 1);
		reply_long(&c->out, value);
	}
}

void cmd_incr(struct client *c)
{
	incr_decr(c, 1);
}

void cmd_decr(struct client *c)
{
	incr_decr(c, -1);
}

void cmd_incrby(struct client *c)
{
	long long incr;
	if (cmd_arg_ll(c, 2, &incr, NULL))
		incr_decr(c, incr);
}

void cmd_decrby(struct client *c)
{
	long long incr;
	if (!cmd_arg_ll(c, 2, &incr, NULL))
		return;
	if (incr == LLONG_MIN) { /* -incr would overflow; Redis's own wording */
		reply_error(&c->out, "ERR decrement would overflow");
		return;
	}
	incr_decr(c, -incr);
}

void cmd_incrbyfloat(struct client *c)
{
	struct entry *e = cmd_lookup_write(c, 1);
	long double value = 0, incr;
	if (e) {
		if (!cmd_is_string_or_reply(c, e))
			return;
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		if (!zr_str_to_ld(v, vlen, &value)) {
			reply_error(&c->out, ERR_NOT_FLOAT);
			return;
		}
	}
	if (!zr_str_to_ld(c->argv[2].ptr, c->argv[2].len, &incr)) {
		reply_error(&c->out, ERR_NOT_FLOAT);
		return;
	}
	char buf[ZR_MAX_LONG_DOUBLE_CHARS];
	size_t n;
	if (!cmd_incr_ld_or_reply(c, value, incr, buf, &n))
		return;
	bool ok = e ? overwrite_or_reply(c, &e, buf, n) : set_or_reply(c, 1, buf, n, -1, 0, NULL);
	if (ok) {
		notify_arg(c, NOTIFY_STRING, "incrbyfloat", 1);
		reply_bulk(&c->out, buf, n);
	}
}

/* --- in-place edits and reads of parts ----------------------------------------- */

void cmd_append(struct client *c)
{
	size_t alen;
	const char *add = cmd_arg(c, 2, &alen);
	struct entry *e = cmd_lookup_write(c, 1);
	if (!e) {
		/* A new key, even for an empty argument (Redis creates it too). */
		if (set_or_reply(c, 1, add, alen, -1, 0, NULL)) {
			notify_arg(c, NOTIFY_STRING, "append", 1);
			reply_long(&c->out, (long long)alen);
		}
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t olen;
	entry_str(e, &olen);
	if (!string_length_ok_or_reply(c, olen, alen))
		return;
	/* even an empty APPEND leaves Redis's value raw (dbUnshareStringValue) */
	char *p = store_string_resize_locked(c->srv->store, c->db, &e, olen + alen);
	if (!p) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	if (alen)
		memcpy(p + olen, add, alen); /* the resize stamped the new version */
	notify_arg(c, NOTIFY_STRING, "append", 1);
	reply_long(&c->out, (long long)(olen + alen));
}

void cmd_strlen(struct client *c)
{
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t vlen;
	entry_str(e, &vlen);
	reply_long(&c->out, (long long)vlen);
}

/* GETRANGE and SUBSTR, with Redis 7.0's index rules (including that two
 * negative indexes both before the start clamp to the first byte). */
void cmd_getrange(struct client *c)
{
	long long start, end;
	if (!cmd_arg_ll(c, 2, &start, NULL) || !cmd_arg_ll(c, 3, &end, NULL))
		return;
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_bulk(&c->out, "", 0);
		return;
	}
	if (!cmd_is_string_or_reply(c, e))
		return;
	size_t vlen;
	const char *v = entry_str(e, &vlen);
	long long len = (long long)vlen;

	if (start < 0 && end < 0 && start > end) {
		reply_bulk(&c->out, "", 0);
		return;
	}
	if (start < 0)
		start += len;
	if (end < 0)
		end += len;
	if (start < 0)
		start = 0;
	if (end < 0)
		end = 0;
	if (end >= len)
		end = len - 1;
	if (start > end || len == 0)
		reply_bulk(&c->out, "", 0);
	else
		reply_bulk(&c->out, v + start, (size_t)(end - start + 1));
}

void cmd_substr(struct client *c)
{
	cmd_getrange(c);
}

void cmd_setrange(struct client *c)
{
	long long offset;
	if (!cmd_arg_ll(c, 2, &offset, NULL))
		return;
	if (offset < 0) {
		reply_error(&c->out, ERR_OFFSET_RANGE);
		return;
	}
	size_t vlen;
	const char *val = cmd_arg(c, 3, &vlen);
	struct store *s = c->srv->store;
	struct entry *e = cmd_lookup_write(c, 1);
	size_t olen = 0;
	bool created = false;

	if (!e) {
		if (vlen == 0) { /* nothing to write on nothing: no key is created */
			reply_long(&c->out, 0);
			return;
		}
		if (!string_length_ok_or_reply(c, (unsigned long long)offset, vlen))
			return;
		if (offset == 0) { /* the common case needs just the one allocation */
			if (set_or_reply(c, 1, val, vlen, -1, 0, NULL)) {
				notify_arg(c, NOTIFY_STRING, "setrange", 1);
				reply_long(&c->out, (long long)vlen);
			}
			return;
		}
		if (!set_or_reply(c, 1, "", 0, -1, 0, &e))
			return;
		created = true;
	} else {
		if (!cmd_is_string_or_reply(c, e))
			return;
		entry_str(e, &olen);
		if (vlen == 0) {
			reply_long(&c->out, (long long)olen);
			return;
		}
		if (!string_length_ok_or_reply(c, (unsigned long long)offset, vlen))
			return;
	}

	size_t end = (size_t)offset + vlen;
	size_t newlen = end > olen ? end : olen;
	char *p = store_string_resize_locked(s, c->db, &e, newlen);
	if (!p) {
		if (created) /* the empty key made just above must not stay */
			store_delete_entry_locked(s, c->db, e);
		reply_error(&c->out, ERR_OOM);
		return;
	}
	memcpy(p + offset, val, vlen); /* the resize stamped the new version */
	store_write_changes_are(1);    /* creating the key stamped too: one change for Redis */
	notify_arg(c, NOTIFY_STRING, "setrange", 1);
	reply_long(&c->out, (long long)newlen);
}

/* --- LCS ---------------------------------------------------------------------- */

struct lcs_opts {
	bool len, idx, withmatchlen;
	long long minmatchlen;
};

/* The dynamic-programming table: cell (i, j) holds the length of the LCS of
 * a[0..i) and b[0..j). */
struct lcs_table {
	uint32_t *cell;
	size_t width; /* blen + 1 */
};

static inline uint32_t lcs_at(const struct lcs_table *t, uint32_t i, uint32_t j)
{
	return t->cell[(size_t)i * t->width + j];
}

/* Fills T for A and B. false after replying when the table would exceed
 * proto-max-bulk-len or cannot be allocated (Redis's two errors). */
static bool lcs_build_or_reply(struct client *c, struct lcs_table *t, const char *a, uint32_t alen,
			       const char *b, uint32_t blen)
{
	unsigned long long cells = (alen + 1ULL) * (blen + 1ULL);
	unsigned long long bytes = cells * sizeof(uint32_t);
	long long max = max_bulk_len(c);
	if (bytes / sizeof(uint32_t) == cells && bytes < SIZE_MAX &&
	    (max < 0 || bytes > (unsigned long long)max)) {
		reply_error(&c->out,
			    "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len");
		return false;
	}
	t->cell = bytes / sizeof(uint32_t) == cells && bytes < SIZE_MAX ? zr_try_malloc((size_t)bytes) : NULL;
	if (!t->cell) {
		reply_error(&c->out, "ERR Insufficient memory, failed allocating transient memory for LCS");
		return false;
	}
	t->width = (size_t)blen + 1;
	uint32_t *row = t->cell, *prev;
	memset(row, 0, t->width * sizeof(uint32_t));
	for (uint32_t i = 1; i <= alen; i++) {
		prev = row;
		row += t->width;
		row[0] = 0;
		for (uint32_t j = 1; j <= blen; j++) {
			if (a[i - 1] == b[j - 1])
				row[j] = prev[j - 1] + 1;
			else
				row[j] = prev[j] > row[j - 1] ? prev[j] : row[j - 1];
		}
	}
	return true;
}

/* Emits one IDX match: [[a_start, a_end], [b_start, b_end], (len)]. */
static void lcs_reply_range(struct client *c, const struct lcs_opts *o, uint32_t as, uint32_t ae, uint32_t bs,
			    uint32_t be)
{
	reply_array(&c->out, 2 + (o->withmatchlen ? 1 : 0));
	reply_array(&c->out, 2);
	reply_long(&c->out, as);
	reply_long(&c->out, ae);
	reply_array(&c->out, 2);
	reply_long(&c->out, bs);
	reply_long(&c->out, be);
	if (o->withmatchlen)
		reply_long(&c->out, (long long)(ae - as + 1));
}

/* Walks T back from (alen, blen), writing the common subsequence into STR
 * (when not NULL, TOTAL bytes) and, with IDX, replying the maximal runs of
 * consecutive matches, last run first (Redis's order). Returns the number of
 * runs replied. */
static long lcs_walk(struct client *c, const struct lcs_opts *o, const struct lcs_table *t, const char *a,
		     uint32_t alen, const char *b, uint32_t blen, char *str, uint32_t total)
{
	/* The open run is [as..ae] in A and [bs..be] in B; as == alen means
	 * none is open. Runs grow backwards, one matched byte at a time. */
	uint32_t i = alen, j = blen, k = total;
	uint32_t as = alen, ae = 0, bs = 0, be = 0;
	long nranges = 0;
	while (i > 0 && j > 0) {
		bool emit = false;
		if (a[i - 1] == b[j - 1]) {
			if (str)
				str[k - 1] = a[i - 1];
			if (as == alen) {
				as = ae = i - 1;
				bs = be = j - 1;
			} else if (as == i && bs == j) {
				as--;
				bs--;
			} else {
				emit = true;
			}
			if (as == 0 || bs == 0)
				emit = true; /* the walk ends at the first byte of one side */
			k--;
			i--;
			j--;
		} else {
			if (lcs_at(t, i - 1, j) > lcs_at(t, i, j - 1))
				i--;
			else
				j--;
			if (as != alen)
				emit = true;
		}
		if (emit) {
			long long mlen = (long long)(ae - as + 1);
			if (o->idx && (o->minmatchlen == 0 || mlen >= o->minmatchlen)) {
				lcs_reply_range(c, o, as, ae, bs, be);
				nranges++;
			}
			as = alen;
		}
	}
	return nranges;
}

/* Answers LCS of A and B per the options: the string, LEN, or IDX's map. */
static void lcs_compute(struct client *c, const struct lcs_opts *o, const char *a, uint32_t alen,
			const char *b, uint32_t blen)
{
	struct lcs_table t;
	if (!lcs_build_or_reply(c, &t, a, alen, b, blen))
		return;
	uint32_t total = lcs_at(&t, alen, blen);

	if (o->len && !o->idx) {
		reply_long(&c->out, total);
	} else if (o->idx) {
		struct reply_deferred d;
		reply_map(&c->out, 2);
		reply_bulk_cstr(&c->out, "matches");
		reply_deferred(&c->out, &d);
		long n = lcs_walk(c, o, &t, a, alen, b, blen, NULL, total);
		reply_bulk_cstr(&c->out, "len");
		reply_long(&c->out, total);
		reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, n);
	} else {
		char *str = zr_try_malloc(total ? total : 1);
		if (str) {
			lcs_walk(c, o, &t, a, alen, b, blen, str, total);
			reply_bulk(&c->out, str, total);
			zr_free(str);
		} else {
			reply_error(&c->out, ERR_OOM);
		}
	}
	zr_free(t.cell);
}

void cmd_lcs(struct client *c)
{
	struct entry *ea = cmd_lookup_read(c, 1);
	struct entry *eb = cmd_lookup_read(c, 2);
	if ((ea && entry_type(ea) != STORE_TYPE_STRING) || (eb && entry_type(eb) != STORE_TYPE_STRING)) {
		reply_error(&c->out, "ERR The specified keys must contain string values");
		return;
	}

	struct lcs_opts o = { 0 };
	for (int j = 3; j < c->argc; j++) {
		bool more = j < c->argc - 1;
		if (cmd_opt_is(c, j, "idx")) {
			o.idx = true;
		} else if (cmd_opt_is(c, j, "len")) {
			o.len = true;
		} else if (cmd_opt_is(c, j, "withmatchlen")) {
			o.withmatchlen = true;
		} else if (cmd_opt_is(c, j, "minmatchlen") && more) {
			if (!cmd_arg_ll(c, j + 1, &o.minmatchlen, NULL))
				return;
			if (o.minmatchlen < 0)
				o.minmatchlen = 0;
			j++;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	if (o.len && o.idx) {
		reply_error(&c->out, "ERR If you want both the length and indexes, please just use IDX.");
		return;
	}

	size_t alen = 0, blen = 0;
	const char *a = ea ? entry_str(ea, &alen) : "";
	const char *b = eb ? entry_str(eb, &blen) : "";
	if (alen >= UINT32_MAX - 1 || blen >= UINT32_MAX - 1) {
		reply_error(&c->out, "ERR String too long for LCS");
		return;
	}
	lcs_compute(c, &o, a, (uint32_t)alen, b, (uint32_t)blen);
}
