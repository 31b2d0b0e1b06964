/* cmd_server — TIME, LASTSAVE, DEBUG (SLEEP, OBJECT, PROTOCOL, LOG, JOURNAL-STALL, KEYSLOT-SHARD, HELP),
 * SLOWLOG GET/LEN/RESET/HELP, LATENCY LATEST/HISTORY/RESET/DOCTOR/HELP and
 * SHUTDOWN. The slow log and the latency monitor keep their own state
 * (slowlog.h, latency.h); these handlers only parse and reply.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/server/latency.h"
#include "zarisd/server/server.h"
#include "zarisd/server/slowlog.h"
#include "zarisd/core/log.h"
#include "zarisd/core/util.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/stream.h"
#include "zarisd/persist/persist.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/script.h"
#include "zarisd/store/store.h"

void cmd_time(struct client *c)
{
	int64_t us = zr_time_us();
	reply_array(&c->out, 2);
	reply_bulk_ll(&c->out, us / 1000000);
	reply_bulk_ll(&c->out, us % 1000000);
}

void cmd_lastsave(struct client *c)
{
	reply_long(&c->out, atomic_load_explicit(&c->srv->lastsave, memory_order_relaxed));
}

/* --- DEBUG ----------------------------------------------------------------------- */

/* Bytes a string value would take in an RDB file, without compression:
 * integers in 8/16/32 bits take their width plus a type byte, other strings
 * their length plus a 1, 2 or 5 byte length prefix. */
static size_t serialized_length(const char *v, size_t len)
{
	long long ll;
	if (len <= 11 && zr_str_to_ll(v, len, &ll)) {
		if (ll >= -128 && ll <= 127)
			return 2;
		if (ll >= -32768 && ll <= 32767)
			return 3;
		if (ll >= -2147483648LL && ll <= 2147483647LL)
			return 5;
	}
	return len + (len < 64 ? 1 : len < 16384 ? 2 : 5);
}

/* DEBUG KEY-VERSION key: the key's version (a replica holds its
 * primary's), or a null reply when there is no such key. */
static void debug_key_version(struct client *c)
{
	struct store *st = c->srv->store;
	size_t klen;
	const char *key = cmd_arg(c, 2, &klen);
	unsigned shard = store_shard_of(st, key, klen);
	if (!dispatch_lock_shards(c, &shard, 1, false)) { /* a busy script holds it */
		dispatch_refuse_busy_here(c);
		return;
	}
	struct entry *e = store_find_locked(st, c->db, key, klen, zr_time_ms(),
					    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
	uint64_t v = e ? entry_version(e) : 0;
	store_unlock(st, shard);
	if (e)
		reply_long(&c->out, (long long)v);
	else
		reply_null(&c->out);
}

static void debug_object(struct client *c)
{
	struct store *st = c->srv->store;
	size_t klen;
	const char *key = cmd_arg(c, 2, &klen);
	/* DEBUG is keyless in the table (its key position depends on the
	 * subcommand), so the shard lock is taken here */
	unsigned shard = store_shard_of(st, key, klen);
	char line[256];
	if (!dispatch_lock_shards(c, &shard, 1, false)) { /* a busy script holds it */
		dispatch_refuse_busy_here(c);
		return;
	}
	struct entry *e = store_find_locked(st, c->db, key, klen, zr_time_ms(),
					    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
	if (e) {
		size_t vlen = 0;
		size_t ser;
		if (entry_type(e) == STORE_TYPE_STRING) {
			const char *v = entry_str(e, &vlen);
			ser = serialized_length(v, vlen);
		} else {
			ser = entry_memory(st, e);
		}
		uint64_t idle = entry_idle_seconds(st, e);
		long long lru = ((zr_time_ms() / 1000) - (long long)idle) & ((1 << 24) - 1);
		snprintf(
			line, sizeof(line),
			"Value at:%p refcount:1 encoding:%s serializedlength:%zu lru:%lld lru_seconds_idle:%llu",
			(void *)e, entry_encoding(st, e), ser, lru, (unsigned long long)idle);
	}
	store_unlock(st, shard);
	if (e)
		reply_simple(&c->out, line);
	else
		reply_error(&c->out, ERR_NO_KEY);
}

static void debug_sleep(struct client *c)
{
	/* Redis reads the seconds with strtod: decimals allowed, junk is 0 */
	char buf[64];
	size_t len = c->argv[2].len < sizeof(buf) - 1 ? c->argv[2].len : sizeof(buf) - 1;
	memcpy(buf, c->argv[2].ptr, len);
	buf[len] = '\0';
	double secs = strtod(buf, NULL);
	if (secs > 0 && isfinite(secs)) {
		struct timespec ts = { .tv_sec = (time_t)secs,
				       .tv_nsec = (long)((secs - floor(secs)) * 1e9) };
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	reply_ok(&c->out);
}

static const char *const debug_protocol_types =
	"string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false";

/* DEBUG PROTOCOL <type>: one sample reply of each RESP type, for client tests. */
static void debug_protocol(struct client *c)
{
	struct obuf *o = &c->out;
	if (cmd_arg_is(c, 2, "string")) {
		reply_bulk_cstr(o, "Hello World");
	} else if (cmd_arg_is(c, 2, "integer")) {
		reply_long(o, 12345);
	} else if (cmd_arg_is(c, 2, "double")) {
		reply_double(o, 3.141);
	} else if (cmd_arg_is(c, 2, "bignum")) {
		reply_bignum_str(o, "1234567999999999999999999999999999999");
	} else if (cmd_arg_is(c, 2, "null")) {
		reply_null(o);
	} else if (cmd_arg_is(c, 2, "array")) {
		reply_array(o, 3);
		for (int i = 0; i < 3; i++)
			reply_long(o, i);
	} else if (cmd_arg_is(c, 2, "set")) {
		reply_set(o, 3);
		for (int i = 0; i < 3; i++)
			reply_long(o, i);
	} else if (cmd_arg_is(c, 2, "map")) {
		reply_map(o, 3);
		for (int i = 0; i < 3; i++) {
			reply_long(o, i);
			reply_bool(o, i == 1);
		}
	} else if (cmd_arg_is(c, 2, "attrib")) {
		if (o->resp >= 3) {
			/* RESP3 attribute: no reply_* helper, it exists only for this test */
			reply_raw(o, "|1\r\n", 4);
			reply_bulk_cstr(o, "key-popularity");
			reply_array(o, 2);
			reply_bulk_cstr(o, "key:123");
			reply_long(o, 90);
		}
		reply_bulk_cstr(o, "Some real reply following the attribute");
	} else if (cmd_arg_is(c, 2, "push")) {
		if (o->resp < 3) {
			reply_error(o, "ERR RESP2 is not supported by this command");
			return;
		}
		reply_push(o, 2);
		reply_bulk_cstr(o, "server-cpu-usage");
		reply_long(o, 42);
		reply_bulk_cstr(o, "Some real reply following the push reply");
	} else if (cmd_arg_is(c, 2, "verbatim")) {
		static const char text[] = "This is a verbatim\nstring";
		reply_verbatim(o, text, sizeof(text) - 1, "txt");
	} else if (cmd_arg_is(c, 2, "true")) {
		reply_bool(o, true);
	} else if (cmd_arg_is(c, 2, "false")) {
		reply_bool(o, false);
	} else {
		reply_errorf(o, "ERR Wrong protocol type name. Please use one of the following: %s",
			     debug_protocol_types);
	}
}

/* persist: a test hook for the log's back-pressure (persist.h) */
static void debug_journal_stall(struct client *c)
{
	long long ms, limit = 0;
	if (!cmd_arg_ll_range(c, 2, 0, 3600000, &ms, "ERR value is out of range") ||
	    (c->argc == 4 && !cmd_arg_ll_range(c, 3, 0, LLONG_MAX, &limit, "ERR value is out of range")))
		return;
	if (persist_debug_journal(c->srv->persist, ms, limit) < 0)
		reply_error(&c->out, "ERR the append-only log is off");
	else
		reply_ok(&c->out);
}

/* DEBUG KEYSLOT-SHARD <key> (zarisd only): [the key's cluster slot, the
 * shard that holds it, the keys of the client's database in that slot].
 * The count takes the shard's lock, which EXEC may already hold for
 * another queued command of that shard: refused inside a transaction. */
static void debug_keyslot_shard(struct client *c)
{
	if (c->flags & CLIENT_IN_EXEC) {
		reply_error(&c->out, "ERR DEBUG KEYSLOT-SHARD is not allowed inside a transaction");
		return;
	}
	struct store *st = c->srv->store;
	size_t klen;
	const char *key = cmd_arg(c, 2, &klen);
	uint64_t h = store_hash(key, klen);
	unsigned slot = store_slot_of_hash(h);
	reply_array(&c->out, 3);
	reply_long(&c->out, slot);
	reply_long(&c->out, store_shard_of_hash(st, h));
	reply_long(&c->out, (long long)store_slot_count(st, c->db, slot));
}

/* DEBUG SET-ACTIVE-EXPIRE <0|1>: as Redis, which reads the flag with atoi */
static void debug_active_expire(struct client *c)
{
	store_set_active_expire(c->srv->store, atoi(c->argv[2].ptr) != 0);
	reply_ok(&c->out);
}

/* DEBUG REPLICA-MODE <0|1>: the store's replica mode (store.h) without a
 * primary, for tests of the expiry rule replicas follow (zarisd only) */
static void debug_replica_mode(struct client *c)
{
	long long on;
	if (!cmd_arg_ll_range(c, 2, 0, 1, &on, "ERR value is out of range"))
		return;
	store_set_replica_mode(c->srv->store, on != 0);
	reply_ok(&c->out);
}

/* One decoded record of the change stream: [seq, txn, "cmd", argv ...]
 * (one argv array per command of the record) or [seq, txn, "commit"]. */
static void reply_stream_record(struct client *c, const unsigned char *pl, size_t plen)
{
	struct obuf *o = &c->out;
	struct jr_cmd rc;
	if (pl[0] == JR_CMD && jr_parse_cmd(pl, plen, &rc)) {
		reply_array(o, 3 + (long)rc.ncmds);
		reply_long(o, (long long)rc.seq);
		reply_long(o, (long long)rc.txn);
		reply_bulk_cstr(o, "cmd");
		for (unsigned i = 0; i < rc.ncmds; i++) {
			uint64_t argc = 0;
			if (!jr_next_argc(&rc.cmds, &argc))
				argc = 0;
			reply_array(o, (long)argc);
			for (uint64_t j = 0; j < argc; j++) {
				const char *p = "";
				size_t n = 0;
				jrd_bytes(&rc.cmds, &p, &n);
				reply_bulk(o, p, n);
			}
		}
		return;
	}
	struct jreader r = { pl + 1, pl + plen };
	uint64_t seq = 0, txn = 0;
	jrd_u64(&r, &seq);
	jrd_u64(&r, &txn);
	reply_array(o, 3);
	reply_long(o, (long long)seq);
	reply_long(o, (long long)txn);
	reply_bulk_cstr(o, pl[0] == JR_COMMIT ? "commit" : "?");
}

/* DEBUG CHANGE-STREAM BACKLOG <0|1> (zarisd only): the stream's backlog
 * switch (stream.h), which a replica's attach will set. */
static void debug_change_stream_backlog(struct client *c)
{
	long long on;
	if (!cmd_arg_ll_range(c, 3, 0, 1, &on, "ERR value is out of range"))
		return;
	if (c->srv->stream)
		stream_set_backlog(c->srv->stream, on != 0);
	reply_ok(&c->out);
}

/* DEBUG CHANGE-STREAM <n>: the last N records still in the change
 * stream's ring, oldest first (zarisd only: shows the stream runs with or
 * without the append-only log). */
static void debug_change_stream(struct client *c)
{
	long long n;
	if (!cmd_arg_ll_range(c, 2, 0, 1000000, &n, "ERR value is out of range"))
		return;
	struct jbuf b;
	jbuf_init(&b);
	unsigned got = c->srv->stream ? stream_recent(c->srv->stream, (unsigned)n, &b) : 0;
	reply_array(&c->out, got);
	size_t off = 0;
	for (unsigned i = 0; i < got; i++) {
		const unsigned char *pl;
		size_t plen;
		/* the frames were made here, whole: a failure would be a bug */
		enum jr_status st = jr_next_frame(b.p, b.len, &off, &pl, &plen, NULL);
		if (st != JR_OK) {
			reply_null(&c->out);
			continue;
		}
		reply_stream_record(c, pl, plen);
	}
	jbuf_free(&b);
}

static void debug_help(struct client *c)
{
	static const char *const help[] = {
		"LOG <message>",
		"    Write <message> to the server log.",
		"OBJECT <key>",
		"    Show low level info about `key` and associated value.",
		"PROTOCOL <type>",
		"    Reply with a test value of the specified type. <type> can be: string,",
		"    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
		"    true, false.",
		"SLEEP <seconds>",
		"    Stop the server for <seconds>. Decimals allowed.",
		"SET-ACTIVE-EXPIRE <0|1>",
		"    Setting it to 0 disables expiring keys in background when they are not",
		"    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
		"    default.",
		"JOURNAL-STALL <ms> [<limit>]",
		"    Make the append-only log writer sleep <ms> before its next write (a slow",
		"    disk); <limit> > 0 sets the log buffer bound in bytes (zarisd only).",
		"KEYSLOT-SHARD <key>",
		"    Return the key's cluster slot, the shard holding it and the number of",
		"    keys of the database in that slot (zarisd only).",
		"REPLICA-MODE <0|1>",
		"    1: expire no key (hide expired ones, wait for a DEL) and evict none, as",
		"    a replica; 0: back to a primary (zarisd only).",
		"CHANGE-STREAM <n>",
		"    Show the last <n> records of the change stream, each as [seq, txn, \"cmd\",",
		"    argv...] or [seq, txn, \"commit\"] (zarisd only).",
		"CHANGE-STREAM BACKLOG <0|1>",
		"    1: keep the stream's tail with no consumer (the replication backlog), so",
		"    CHANGE-STREAM <n> shows records without a log; 0: number them only.",
		NULL,
	};
	cmd_reply_help(c, help);
}

void cmd_debug(struct client *c)
{
	if (c->argc == 2 && cmd_arg_is(c, 1, "help"))
		debug_help(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "sleep"))
		debug_sleep(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "key-version"))
		debug_key_version(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "object"))
		debug_object(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "protocol"))
		debug_protocol(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "keyslot-shard"))
		debug_keyslot_shard(c);
	else if ((c->argc == 3 || c->argc == 4) && cmd_arg_is(c, 1, "journal-stall"))
		debug_journal_stall(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "set-active-expire"))
		debug_active_expire(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "replica-mode"))
		debug_replica_mode(c);
	else if (c->argc == 4 && cmd_arg_is(c, 1, "change-stream") && cmd_arg_is(c, 2, "backlog"))
		debug_change_stream_backlog(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "change-stream"))
		debug_change_stream(c);
	else if (c->argc == 3 && cmd_arg_is(c, 1, "log")) {
		zr_log(ZR_LOG_WARNING, "DEBUG LOG: %.*s", (int)c->argv[2].len, c->argv[2].ptr);
		reply_ok(&c->out);
	} else
		reply_errorf(
			&c->out,
			"ERR unknown subcommand or wrong number of arguments for '%.*s'. Try DEBUG HELP.",
			(int)(c->argv[1].len > 128 ? 128 : c->argv[1].len), c->argv[1].ptr);
}

/* --- SLOWLOG ------------------------------------------------------------------------ */

void cmd_slowlog_get(struct client *c)
{
	long long count = 10;
	if (c->argc > 3) {
		reply_errorf(
			&c->out,
			"ERR unknown subcommand or wrong number of arguments for '%.*s'. Try SLOWLOG HELP.",
			(int)c->argv[1].len, c->argv[1].ptr);
		return;
	}
	if (c->argc == 3 &&
	    !cmd_arg_ll_range(c, 2, -1, LONG_MAX, &count, "ERR count should be greater than or equal to -1"))
		return;
	slowlog_reply(c->srv->slowlog, &c->out, (long)count);
}

void cmd_slowlog_len(struct client *c)
{
	reply_long(&c->out, (long long)slowlog_len(c->srv->slowlog));
}

void cmd_slowlog_reset(struct client *c)
{
	slowlog_reset(c->srv->slowlog);
	reply_ok(&c->out);
}

void cmd_slowlog_help(struct client *c)
{
	static const char *const help[] = {
		"GET [<count>]",
		"    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
		"    Entries are made of:",
		"    id, timestamp, time in microseconds, arguments array, client IP and port,",
		"    client name",
		"LEN",
		"    Return the length of the slowlog.",
		"RESET",
		"    Reset the slowlog.",
		NULL,
	};
	cmd_reply_help(c, help);
}

/* --- LATENCY ------------------------------------------------------------------------- */

void cmd_latency_latest(struct client *c)
{
	latency_reply_latest(&c->out);
}

void cmd_latency_history(struct client *c)
{
	latency_reply_history(&c->out, c->argv[2].ptr, c->argv[2].len);
}

void cmd_latency_reset(struct client *c)
{
	if (c->argc == 2) {
		reply_long(&c->out, latency_reset(NULL, 0));
		return;
	}
	long long n = 0;
	for (int i = 2; i < c->argc; i++)
		n += latency_reset(c->argv[i].ptr, c->argv[i].len);
	reply_long(&c->out, n);
}

void cmd_latency_doctor(struct client *c)
{
	latency_reply_doctor(c->srv, &c->out);
}

void cmd_latency_help(struct client *c)
{
	static const char *const help[] = {
		"DOCTOR",
		"    Return a human readable latency analysis report.",
		"HISTORY <event>",
		"    Return time-latency samples for the <event> class.",
		"LATEST",
		"    Return the latest latency samples for all events.",
		"RESET [<event> ...]",
		"    Reset latency data of one or more <event> classes.",
		"    (default: reset all data for all event classes)",
		NULL,
	};
	cmd_reply_help(c, help);
}

/* --- SHUTDOWN ------------------------------------------------------------------------ */

#define SHUTDOWN_NOSAVE 0x1
#define SHUTDOWN_SAVE 0x2
#define SHUTDOWN_NOW 0x4
#define SHUTDOWN_FORCE 0x8

void cmd_shutdown(struct client *c)
{
	int flags = 0;
	bool abort_req = false;
	for (int i = 1; i < c->argc; i++) {
		if (cmd_arg_is(c, i, "nosave"))
			flags |= SHUTDOWN_NOSAVE;
		else if (cmd_arg_is(c, i, "save"))
			flags |= SHUTDOWN_SAVE;
		else if (cmd_arg_is(c, i, "now"))
			flags |= SHUTDOWN_NOW;
		else if (cmd_arg_is(c, i, "force"))
			flags |= SHUTDOWN_FORCE;
		else if (cmd_arg_is(c, i, "abort"))
			abort_req = true;
		else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	if ((abort_req && flags) || ((flags & SHUTDOWN_NOSAVE) && (flags & SHUTDOWN_SAVE))) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	if (abort_req) {
		/* a shutdown here is immediate: there is never one to abort */
		reply_error(&c->out, "ERR No shutdown in progress.");
		return;
	}
	/* a script past busy-reply-threshold holds its shards' locks: only a
	 * shutdown that does not save may end the server (Redis's rule; the
	 * dispatcher lets SHUTDOWN through for this) */
	if (!(flags & SHUTDOWN_NOSAVE) && script_any_busy()) {
		reply_error(&c->out, script_busy_is_function() ? ERR_BUSY_FUNCTION : ERR_BUSY_SCRIPT);
		return;
	}
	zr_log(ZR_LOG_WARNING, "User requested shutdown...");
	/* main saves after the workers stop (persist_shutdown) */
	atomic_store_explicit(&c->srv->shutdown_save,
			      (flags & SHUTDOWN_NOSAVE) ? SERVER_SHUTDOWN_NOSAVE
			      : (flags & SHUTDOWN_SAVE) ? SERVER_SHUTDOWN_SAVE
							: SERVER_SHUTDOWN_DEFAULT,
			      memory_order_relaxed);
	/* No reply: the connection closes when the workers stop, as in Redis. */
	server_request_shutdown(c->srv);
}
