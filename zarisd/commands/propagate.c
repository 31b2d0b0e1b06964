/* propagate — see propagate.h. */
#include "zarisd/commands/propagate.h"

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/journal/format.h"
#include "zarisd/journal/stream.h"
#include "zarisd/persist/persist.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

static _Atomic uint64_t txn_ids;

/* The calling thread's record buffers, reused from record to record
 * (scratch space, no state between records). */
static _Thread_local struct jbuf tl_rec;
static _Thread_local struct jbuf tl_deletion;

void propagate_mark_change(void)
{
	struct store_write *w = store_write_open();
	assert(w); /* a handler's: inside the dispatcher's bracket */
	w->marked = true;
}

void propagate_thread_exit(void)
{
	jbuf_free(&tl_rec);
	jbuf_free(&tl_deletion);
}

/* A whole-keyspace write outside EXEC (FLUSHALL, SWAPDB) takes
 * persistence's gate (persist.h); inside EXEC, EXEC holds every lock. */
static bool gated(const struct client *c, const struct command *cmd)
{
	/* with every shard lock held (EXEC, a whole-keyspace write) no
	 * snapshot's instant can come between: the gate, which a snapshot
	 * takes before the shard locks, would be taken in the wrong order */
	return (cmd->flags & CMD_WHOLEDB) && !(c->flags & CLIENT_IN_EXEC) && !store_thread_all_locked();
}

void propagate_begin(struct client *c, const struct command *cmd, enum store_write_origin origin,
		     struct store_write *w)
{
	store_write_begin(w, origin, cmd->name, cmd->flags & (CMD_WRITE | CMD_MAY_WRITE), c->now_ms);
	/* expiries met from here to EXEC's end join its transaction (the
	 * deletion hook below); EXEC's WATCH check included */
	if (__builtin_expect(cmd->flags & (CMD_EXEC | CMD_SCRIPT), 0) && !(c->flags & CLIENT_IN_EXEC))
		w->txn_open = true;
	if (gated(c, cmd))
		persist_gate_enter(c->srv->persist);
}

void propagate_end(struct client *c, const struct command *cmd, struct store_write *w)
{
	if (w->marked) /* after propagate_command, which made its record */
		persist_count_changes(c->srv->persist, 1);
	uint64_t stamped = w->dirty;
	uint64_t changes = store_write_changes(w);
	store_write_end(w);
	/* Redis's server.dirty counts changes, not commands (MSET of three
	 * keys: 3; SADD of two new members: 2); the store counts each write it
	 * stamps and each key freed unless the command said its count (an
	 * expiry is no change: it has its own record). EXEC's commands counted
	 * themselves (EXEC ends after them). */
	bool exec_end = (cmd->flags & (CMD_EXEC | CMD_SCRIPT)) && !(c->flags & CLIENT_IN_EXEC);
	/* a script's commands counted themselves, inside EXEC too */
	if (stamped && !exec_end && !(cmd->flags & CMD_SCRIPT))
		persist_count_changes(c->srv->persist, changes);
	if (gated(c, cmd))
		persist_gate_leave(c->srv->persist);
}

/* The txn id of the transaction open around the calling thread's
 * writes (EXEC's, a script's bracket), made on its first record. */
static uint64_t exec_txn(void)
{
	struct store_write *t = store_write_txn();
	assert(t); /* CLIENT_IN_EXEC or txn_open: EXEC or a script opened it */
	if (!t->txn)
		t->txn = atomic_fetch_add_explicit(&txn_ids, 1, memory_order_relaxed) + 1;
	return t->txn;
}

struct effect_ctx {
	struct jbuf *b;
	unsigned n;
};

static int effect_emit(int argc, const char *const *argv, const size_t *lens, void *arg)
{
	struct effect_ctx *ec = arg;
	jr_cmd_argv(ec->b, argc, argv, lens);
	ec->n++;
	return 0;
}

/* METASET KEY CLEAR LABELS n ... [ENTITY e] [CONTENTTYPE t]: E's metadata,
 * which the DEL of an effect dropped. */
static void encode_meta_effect(const struct entry *e, const char *key, size_t klen, struct effect_ctx *ec)
{
	unsigned n = entry_meta_nlabels(e);
	int argc = 0, cap = (int)n + 9;
	const char **argv = zr_malloc((size_t)cap * sizeof(*argv));
	size_t *lens = zr_malloc((size_t)cap * sizeof(*lens));
	char num[24];
#define ARG(p, l) (argv[argc] = (p), lens[argc++] = (l))
	ARG("METASET", 7);
	ARG(key, klen);
	ARG("CLEAR", 5);
	ARG("LABELS", 6);
	ARG(num, zr_ll_to_str(num, (long long)n));
	for (unsigned i = 0; i < n; i++) {
		size_t l;
		const char *p = entry_meta_label(e, i, &l);
		ARG(p, l);
	}
	size_t l;
	const char *p;
	if ((p = entry_meta_entity(e, &l))) {
		ARG("ENTITY", 6);
		ARG(p, l);
	}
	if ((p = entry_meta_ctype(e, &l))) {
		ARG("CONTENTTYPE", 11);
		ARG(p, l);
	}
#undef ARG
	effect_emit(argc, argv, lens, ec);
	zr_free(argv);
	zr_free(lens);
}

/* Encodes the state of KEY after the command as commands (DEL, then the
 * rebuild, then its TTL): for commands whose outcome is random. */
static unsigned encode_effect(struct client *c, const char *key, size_t klen)
{
	struct store *s = c->srv->store;
	struct effect_ctx ec = { &tl_rec, 0 };
	const char *del[2] = { "DEL", key };
	size_t dl[2] = { 3, klen };
	effect_emit(2, del, dl, &ec);
	struct entry *e =
		store_find_locked(s, c->db, key, klen, c->now_ms,
				  STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS | STORE_LOOKUP_NOEXPIRE);
	if (!e)
		return ec.n;
	if (entry_type(e) == STORE_TYPE_STRING) {
		size_t vlen;
		const char *v = entry_str(e, &vlen);
		const char *set[3] = { "SET", key, v };
		size_t sl[3] = { 3, klen, vlen };
		effect_emit(3, set, sl, &ec);
	} else {
		const struct store_type_ops *ops = store_type_ops_of(s, entry_type(e));
		if (ops && ops->rewrite)
			ops->rewrite(entry_obj(e), key, klen, effect_emit, &ec);
	}
	if (entry_expire(e) >= 0) {
		char ms[24];
		size_t n = zr_ll_to_str(ms, entry_expire(e));
		const char *px[3] = { "PEXPIREAT", key, ms };
		size_t pl[3] = { 9, klen, n };
		effect_emit(3, px, pl, &ec);
	}
	if (entry_has_meta(e))
		encode_meta_effect(e, key, klen, &ec);
	return ec.n;
}

/* Appends the version each named key has now (those that exist): KEYS,
 * the keys the dispatcher locked (keyiter.h: the fixed ones and those a
 * count names, LMPOP's, ZMPOP's ...). */
static void encode_versions(struct client *c, struct keyiter *keys)
{
	unsigned nver = (unsigned)keyiter_count(keys);
	size_t count_at = tl_rec.len;
	jr_cmd_versions_begin(&tl_rec, nver);
	unsigned found = 0;
	for (int i; (i = keyiter_next(keys)) >= 0;) {
		/* NOEXPIRE: a key the command left past its TTL (SET k v PXAT
		 * <past>) is the primary's to expire later, after this record;
		 * a DEL now would precede it, outside any EXEC it ran in */
		struct entry *e = store_find_locked(
			c->srv->store, c->db, c->argv[i].ptr, c->argv[i].len, c->now_ms,
			STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS | STORE_LOOKUP_NOEXPIRE);
		if (e) {
			jr_cmd_version(&tl_rec, c->argv[i].ptr, c->argv[i].len, entry_version(e));
			found++;
		}
	}
	if (found == nver)
		return;
	/* rewrite the count: varints are variable length, so re-encode the tail */
	struct jbuf tail;
	jbuf_init(&tail);
	uint64_t tmp;
	struct jreader r = { tl_rec.p + count_at, tl_rec.p + tl_rec.len };
	jrd_varint(&r, &tmp);
	size_t after = (size_t)(r.p - tl_rec.p);
	jbuf_put(&tail, tl_rec.p + after, tl_rec.len - after);
	tl_rec.len = count_at;
	jr_cmd_versions_begin(&tl_rec, found);
	jbuf_put(&tl_rec, tail.p, tail.len);
	jbuf_free(&tail);
}

/* The database a command put its key in when that is not c->db (MOVE
 * key db, COPY src dst DB n: the row's db_arg, command.h), or -1. */
static long other_db(const struct client *c, const struct command *cmd)
{
	const struct cmd_arg_ref *ref = &cmd->db_arg;
	if (ref->pos <= 0)
		return -1;
	int at = -1;
	if (!ref->keyword)
		at = ref->pos < c->argc ? ref->pos : -1;
	else /* the last one counts, as in the handler's option loop */
		for (int i = ref->pos; i + 1 < c->argc; i++)
			if (zr_eq_nocase(c->argv[i].ptr, c->argv[i].len, ref->keyword))
				at = i + 1;
	long long db = at > 0 ? strtoll(c->argv[at].ptr, NULL, 10) : -1;
	return db >= 0 && db != (long long)c->db && db < (long long)store_databases(c->srv->store) ? (long)db
												   : -1;
}

/* JR_TAIL_DB_VERSIONS: the versions of C's keys in database DB (the
 * destination of a MOVE or COPY), so a replay gives them back too. */
static void encode_db_versions(struct client *c, struct keyiter keys, long db)
{
	struct jbuf f;
	jbuf_init(&f);
	jbuf_varint(&f, (uint64_t)db);
	unsigned found = 0;
	struct jbuf pairs;
	jbuf_init(&pairs);
	for (int i; (i = keyiter_next(&keys)) >= 0;) {
		struct entry *e = store_find_locked(
			c->srv->store, (unsigned)db, c->argv[i].ptr, c->argv[i].len, c->now_ms,
			STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS | STORE_LOOKUP_NOEXPIRE);
		if (e) {
			jr_cmd_version(&pairs, c->argv[i].ptr, c->argv[i].len, entry_version(e));
			found++;
		}
	}
	jbuf_varint(&f, found);
	jbuf_put(&f, pairs.p, pairs.len);
	if (found)
		jr_tail_put(&tl_rec, JR_TAIL_DB_VERSIONS, f.p, f.len);
	jbuf_free(&pairs);
	jbuf_free(&f);
}

/* An upper bound of the record of C's argv, before it is built. */
static size_t argv_record_size(const struct client *c)
{
	size_t n = 64;
	for (int i = 0; i < c->argc; i++)
		n += 2 * (c->argv[i].len + 10); /* the argument, and maybe its key's version */
	return n;
}

/* C's write SEQ is complete (a command's record, or an EXEC's commit):
 * WAIT waits for it, and with replica-ack set its reply is held until
 * that many replicas applied it (the workers release it, net/worker.c). */
static inline void wrote(struct client *c, uint64_t seq)
{
	c->last_write_seq = seq;
	if (atomic_load_explicit(&c->srv->cfg->replica_ack, memory_order_relaxed) > 0 && seq > c->repl_seq)
		c->repl_seq = seq;
}

void propagate_command(struct client *c, const struct command *cmd, struct store_write *w)
{
	struct stream *s = c->srv->stream;
	bool exec_end = (cmd->flags & (CMD_EXEC | CMD_SCRIPT)) && !(c->flags & CLIENT_IN_EXEC);
	uint64_t txn = 0;
	if (__builtin_expect(exec_end, 0)) {
		txn = w->txn;
		w->txn_open = false;
	}
	/* a script inside EXEC is no record of its own: the commands it ran
	 * are, in EXEC's transaction (a record of EVAL as well ran the script
	 * a second time on replay and on replicas) */
	if (!s || (c->flags & CLIENT_NO_JOURNAL) || ((cmd->flags & CMD_SCRIPT) && !exec_end))
		return;
	/* a replica's stream is its primary's (repl/): a write a client made
	 * on a writable replica stays local, as in Redis */
	if (__builtin_expect(atomic_load_explicit(&c->srv->repl_replica, memory_order_relaxed), 0))
		return;
	/* an EXEC whose only records are expiries' DELs still commits them */
	bool marked = w->marked && !exec_end;
	if (w->dirty == 0 && !(exec_end && txn) && !marked)
		return;
	/* the lookups below are not the command's: no snapshot pre-images */
	w->intent = false;
	bool held = false;
	uint64_t seq;
	if (exec_end) {
		/* the queued commands made their records one by one: close them */
		if (txn) {
			seq = stream_commit(s, txn, &held);
			if (held && seq > c->journal_seq)
				c->journal_seq = seq;
			wrote(c, seq);
		}
		return;
	}
	txn = (c->flags & CLIENT_IN_EXEC) ? exec_txn() : 0;
	/* nothing keeps records (no log, no replica): the write is numbered,
	 * and no record is built (stream.h) */
	if ((seq = stream_number(s))) {
		if (!txn)
			wrote(c, seq);
		return;
	}
	struct keyiter keys;
	keyiter_init_locked_keys(&keys, cmd, c->argv, c->argc);
	struct keyiter peek = keys;
	int first = keyiter_next(&peek);
	bool effect = (cmd->flags & CMD_RANDOM_EFFECT) && first >= 0;
	/* a record nothing would read and the ring could not keep is only
	 * numbered: a big value is not copied once more */
	if (!effect && (seq = stream_skip_large(s, argv_record_size(c), txn))) {
		if (!txn)
			wrote(c, seq);
		return;
	}
	tl_rec.len = 0;
	size_t off = jr_cmd_begin(&tl_rec, 0, c->now_ms, c->db, txn, 1);
	if (effect) {
		jr_cmd_set_ncmds(&tl_rec, off, encode_effect(c, c->argv[first].ptr, c->argv[first].len));
	} else {
		jbuf_varint(&tl_rec, (uint64_t)c->argc);
		for (int i = 0; i < c->argc; i++)
			jbuf_bytes(&tl_rec, c->argv[i].ptr, c->argv[i].len);
	}
	struct keyiter keys_again = keys;
	encode_versions(c, &keys);
	long odb = other_db(c, cmd);
	if (__builtin_expect(odb >= 0, 0))
		encode_db_versions(c, keys_again, odb);
	if (__builtin_expect(c->flags & (CLIENT_JOURNAL_LOG_ONLY | CLIENT_JOURNAL_REPLICAS_ONLY), 0))
		jr_tail_put_dest(&tl_rec,
				 (c->flags & CLIENT_JOURNAL_LOG_ONLY) ? JR_DEST_LOG : JR_DEST_REPLICAS);
	/* no jr_frame_end: the stream numbers the frame and then fills in
	 * its length and checksum, once */
	seq = stream_append(s, &tl_rec, txn, &held);
	if (tl_rec.cap > (1u << 20)) /* do not keep a huge record's buffer */
		jbuf_free(&tl_rec);
	if (held && !txn && seq > c->journal_seq)
		c->journal_seq = seq;
	if (!txn)
		wrote(c, seq);
}

uint64_t propagate_effect(struct server *srv, unsigned db, int64_t now_ms, int argc, const char *const *argv,
			  const size_t *lens, int nkeys, bool *held)
{
	struct stream *s = srv->stream;
	*held = false;
	if (!s || atomic_load_explicit(&srv->repl_replica, memory_order_relaxed))
		return 0;
	uint64_t seq = stream_number(s);
	if (seq)
		return seq;
	tl_rec.len = 0;
	jr_cmd_begin(&tl_rec, 0, now_ms, db, 0, 1);
	jr_cmd_argv(&tl_rec, argc, argv, lens);
	struct entry *found[BLOCKING_EFFECT_MAX];
	unsigned nver = 0;
	for (int i = 1; i <= nkeys && i < argc; i++) {
		found[i] = store_find_locked(srv->store, db, argv[i], lens[i], now_ms,
					     STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS |
						     STORE_LOOKUP_NOEXPIRE);
		nver += found[i] != NULL;
	}
	jr_cmd_versions_begin(&tl_rec, nver);
	for (int i = 1; i <= nkeys && i < argc; i++)
		if (found[i])
			jr_cmd_version(&tl_rec, argv[i], lens[i], entry_version(found[i]));
	return stream_append(s, &tl_rec, 0, held);
}

/* The store's deletion hook: an eviction or an expiry becomes DEL <key>
 * (Redis's propagateDeletion; DEL, not UNLINK, as with
 * lazyfree-lazy-expire no). Runs with the key's shard lock held, so the
 * record is ordered with every command on that key and with a snapshot's
 * instant (which holds every shard lock); the append takes only the
 * stream's own mutex, never a shard lock. A lazy expiry runs inside the
 * command that met the key, so its DEL precedes that command's record
 * (made after the handler): DEL k, then the SET or INCR that recreates k.
 *
 * Inside EXEC the DEL joins the transaction: a queued command can make a
 * key expired for a later one (SET k v PXAT <past>, then GET k), and a DEL
 * outside the transaction would then replay even when the transaction
 * does not (a crash before its commit): it would delete the value k had
 * before EXEC, which the transaction never replaced. As part of it, the
 * DEL replays in its place among the queued commands, or not at all, and
 * a key that was already expired before EXEC stays expired without it. */
static void deletion_record(void *ctx, enum store_event ev, unsigned db, const char *key, size_t klen)
{
	struct stream *s = ctx;
	if (ev != STORE_EVENT_EVICTED && ev != STORE_EVENT_EXPIRED)
		return;
	uint64_t txn = store_write_txn() ? exec_txn() : 0;
	if (stream_number(s))
		return;
	const char *argv[2] = { "DEL", key };
	size_t lens[2] = { 3, klen };
	tl_deletion.len = 0;
	jr_cmd_begin(&tl_deletion, 0, zr_time_ms(), db, txn, 1);
	jr_cmd_argv(&tl_deletion, 2, argv, lens);
	jr_cmd_versions_begin(&tl_deletion, 0);
	stream_append(s, &tl_deletion, txn, NULL);
	if (tl_deletion.cap > (1u << 16))
		jbuf_free(&tl_deletion);
}

/* The store's overhead hook: the ring's bytes are the log's and the
 * replicas' (Redis leaves their buffers out of maxmemory's figure), and
 * each eviction's DEL record adds to them: counted, they would make
 * eviction chase its own records. */
static uint64_t stream_overhead(void *ctx)
{
	return stream_memory(ctx);
}

void propagate_start(struct server *srv)
{
	store_set_delete_hook(srv->store, deletion_record, srv->stream);
	store_set_overhead_hook(srv->store, stream_overhead, srv->stream);
}

void propagate_stop(struct server *srv)
{
	store_set_delete_hook(srv->store, NULL, NULL);
	store_set_overhead_hook(srv->store, NULL, NULL);
}
