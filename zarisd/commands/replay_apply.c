/* replay_apply — see replay_apply.h. */
#include "zarisd/commands/replay_apply.h"

#include "zarisd/commands/propagate.h"

#include <errno.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/propagate.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/persist/load.h"
#include "zarisd/persist/persist.h"
#include "zarisd/persist/snapshot.h"
#include "zarisd/script/script.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/info.h"
#include "zarisd/server/server.h"
#include "zarisd/server/stats.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

/* One command of the record being applied: argc arguments from args[first]. */
struct rcmd {
	const struct command *cmd;
	size_t first;
	int argc;
};

struct replay_applier {
	struct client c;
	struct worker_stats ws; /* the handlers count here; nobody reads it */
	struct resp_arg *args;
	size_t nargs, capargs;
	struct rcmd *cmds;
	size_t capcmds;
	unsigned *shards;
	size_t capshards;
	replay_applied_fn applied;
	void *applied_ctx;
	unsigned skip_dest; /* the JR_DEST_* records this applier passes over (never 0),
			     besides JR_DEST_NONE, which every one does */
};

void replay_applier_set_hook(struct replay_applier *ra, replay_applied_fn fn, void *ctx)
{
	ra->applied = fn;
	ra->applied_ctx = ctx;
}

/* reply.h's on_error of the applier's client: a replayed command that
 * answers an error did not when it first ran (or its record would not
 * hold it), so the data here differs: Redis's error to its master or the
 * AOF client, counted and logged as unexpected. */
static void replayed_error(struct obuf *o, const char *code, size_t len, bool counted)
{
	struct client *c = (struct client *)(void *)((char *)o - offsetof(struct client, out));
	if (!counted)
		return;
	info_count_replayed_error(code, len);
	zr_log(ZR_LOG_WARNING,
	       "== CRITICAL == This server got an error (%.*s) replaying the command '%s' from its "
	       "primary or its log",
	       (int)len, code, c->cmd ? c->cmd->name : "<unknown>");
}

struct replay_applier *replay_applier_new(struct server *srv, bool link)
{
	struct replay_applier *ra = zr_calloc(1, sizeof(*ra));
	ra->skip_dest = link ? JR_DEST_LOG : JR_DEST_REPLICAS;
	dispatch_client_init(&ra->c, srv, 0, &ra->ws);
	ra->c.out.on_error = replayed_error;
	ra->c.flags |= CLIENT_AUTHENTICATED | CLIENT_REPLAY;
	ra->c.out.muted = true;
	snprintf(ra->c.addr, sizeof(ra->c.addr), "loader");
	return ra;
}

void replay_applier_free(struct replay_applier *ra)
{
	if (!ra)
		return;
	dispatch_client_free(&ra->c);
	obuf_free(&ra->c.out);
	zr_free(ra->args);
	zr_free(ra->cmds);
	zr_free(ra->shards);
	zr_free(ra);
}

/* Reads the next command of CMDS into args[] and resolves it. Returns 0,
 * -EINVAL (malformed) or -ENOTSUP (unknown: its name, at most 64 bytes,
 * in NAME). */
static int read_cmd(struct replay_applier *ra, struct jreader *cmds, struct rcmd *out, char *name,
		    size_t namelen)
{
	uint64_t argc;
	if (!jr_next_argc(cmds, &argc))
		return -EINVAL;
	if (ra->nargs + argc > ra->capargs) {
		ra->capargs = (ra->nargs + argc) * 2;
		ra->args = zr_realloc(ra->args, sizeof(*ra->args) * ra->capargs);
	}
	struct resp_arg *a = ra->args + ra->nargs;
	for (uint64_t i = 0; i < argc; i++) {
		const char *p;
		size_t n;
		if (!jrd_bytes(cmds, &p, &n))
			return -EINVAL;
		a[i].ptr = (char *)p; /* the payload is writable (replay.h) */
		a[i].len = n;
	}
	const struct command *cmd = command_lookup(a[0].ptr, a[0].len);
	if (cmd && (cmd->flags & CMD_CONTAINER) && argc >= 2)
		cmd = command_lookup_sub(cmd, a[1].ptr, a[1].len);
	if (!cmd || !cmd->handler) {
		snprintf(name, namelen, "%.*s", (int)(a[0].len > 64 ? 64 : a[0].len), a[0].ptr);
		return -ENOTSUP;
	}
	*out = (struct rcmd){ cmd, ra->nargs, (int)argc };
	ra->nargs += argc;
	return 0;
}

static void add_shard(struct replay_applier *ra, size_t *n, unsigned shard)
{
	if (*n == ra->capshards) {
		ra->capshards = ra->capshards ? ra->capshards * 2 : 64;
		ra->shards = zr_realloc(ra->shards, sizeof(unsigned) * ra->capshards);
	}
	ra->shards[(*n)++] = shard;
}

/* Points the client at command RC (its db and clock already set). */
static void aim(struct replay_applier *ra, const struct rcmd *rc)
{
	ra->c.argv = ra->args + rc->first;
	ra->c.argc = rc->argc;
	ra->c.cmd = rc->cmd;
}

/* The handler inside the hooks the dispatcher puts around a client's
 * command (dispatch.c call_from); the caller holds the shard locks.
 * Returns whether it answered an error. */
static bool run_locked(struct replay_applier *ra, const struct rcmd *rc, const struct jr_cmd *done)
{
	struct client *c = &ra->c;
	if (__builtin_expect(rc->cmd->flags & CMD_SCRIPT, 0)) {
		/* a script's own record, which earlier builds made
		 * for a script inside EXEC besides its commands' records: those
		 * records are its effects, so it runs nothing (run again, it
		 * applied them twice) */
		if (done && ra->applied)
			ra->applied(ra->applied_ctx, done);
		return false;
	}
	aim(ra, rc);
	uint64_t errors = c->out.errors;
	struct store_write w;
	propagate_begin(c, rc->cmd, STORE_WRITE_REPLAY, &w);
	rc->cmd->handler(c);
	if (done && ra->applied) /* the record's last command: see replay_applied_fn */
		ra->applied(ra->applied_ctx, done);
	propagate_end(c, rc->cmd, &w);
	return c->out.errors != errors;
}

/* JR_TAIL_DB_VERSIONS: the versions of the keys a MOVE or COPY left in
 * another database (the same key names as the record's: their shards are
 * held). */
static void restore_db_versions(struct store *s, const struct jr_cmd *rec)
{
	struct jreader tail = rec->tail;
	uint64_t type;
	const char *p;
	size_t n;
	while (jr_tail_next(&tail, &type, &p, &n) == 1) {
		if (type != JR_TAIL_DB_VERSIONS)
			continue;
		struct jreader f = { (const unsigned char *)p, (const unsigned char *)p + n };
		uint64_t db, count;
		if (!jrd_varint(&f, &db) || !jrd_varint(&f, &count) || db >= store_databases(s))
			continue;
		for (uint64_t i = 0; i < count; i++) {
			const char *key;
			size_t klen;
			uint64_t version;
			if (!jr_next_version(&f, &key, &klen, &version))
				break;
			struct entry *e = store_find_locked(s, (unsigned)db, key, klen, rec->now_ms,
							    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
			if (e)
				store_entry_set_version_locked(s, e, version);
		}
	}
}

/* Reads REC's commands into ra->cmds and gathers the shards of their keys
 * and of its versioned keys into ra->shards (*N of them, not normalized),
 * so that the record is applied and its versions restored as one step.
 * *WHOLEDB: one of its commands is a whole-keyspace one. Returns 0, or
 * replay_apply_record's errors with the reason in ERR. The caller clears
 * c->key_hash_argv when done with the arguments. */
static int prepare(struct replay_applier *ra, const struct jr_cmd *rec, size_t *n, bool *wholedb, char *err,
		   size_t errlen)
{
	struct client *c = &ra->c;
	struct store *s = c->srv->store;
	if (rec->db >= store_databases(s)) {
		snprintf(err, errlen, "database %u out of range", rec->db);
		return -ERANGE;
	}
	if (rec->ncmds > ra->capcmds) {
		ra->capcmds = rec->ncmds;
		ra->cmds = zr_realloc(ra->cmds, sizeof(*ra->cmds) * ra->capcmds);
	}
	ra->nargs = 0;
	struct jreader cmds = rec->cmds;
	*wholedb = false;
	for (unsigned i = 0; i < rec->ncmds; i++) {
		char name[80];
		int r = read_cmd(ra, &cmds, &ra->cmds[i], name, sizeof(name));
		if (r == -ENOTSUP) {
			snprintf(err, errlen, "unknown command '%s'", name);
			return r;
		}
		if (r < 0) {
			snprintf(err, errlen, "malformed record");
			return r;
		}
		*wholedb |= (ra->cmds[i].cmd->flags & CMD_WHOLEDB) != 0;
	}
	c->db = rec->db;
	c->now_ms = rec->now_ms;
	*n = 0;
	for (unsigned i = 0; i < rec->ncmds; i++) {
		unsigned stack[DISPATCH_STACK_SHARDS], *sh;
		aim(ra, &ra->cmds[i]);
		int k = dispatch_key_shards(c, ra->cmds[i].cmd, stack, &sh);
		for (int j = 0; j < k; j++)
			add_shard(ra, n, sh[j]);
		if (sh && sh != stack)
			zr_free(sh);
	}
	struct jreader v = rec->vers;
	for (unsigned i = 0; i < rec->nver; i++) {
		const char *key;
		size_t klen;
		uint64_t version;
		if (!jr_next_version(&v, &key, &klen, &version))
			break;
		/* the writer takes versions from the command's own keys; the
		 * first of them was just hashed (the dispatcher's memo) */
		const struct resp_arg *memo = c->key_hash_argv ? &c->key_hash_argv[c->key_hash_argi] : NULL;
		if (memo && memo->len == klen && !memcmp(memo->ptr, key, klen))
			continue;
		add_shard(ra, n, store_shard_of(s, key, klen));
	}
	return 0;
}

/* Whether REC is not for this kind of consumer (redis.set_repl's tags, as
 * the primary wrote them or as a replica rewrote them: format.h). */
static bool skipped(const struct replay_applier *ra, const struct jr_cmd *rec)
{
	return rec->dest && (rec->dest == ra->skip_dest || rec->dest == JR_DEST_NONE);
}

int replay_record_shard(void *arg, const struct jr_cmd *rec)
{
	struct replay_applier *ra = arg;
	char err[128];
	size_t n;
	bool wholedb;
	int shard = -1;
	if (skipped(ra, rec))
		return -1;
	if (prepare(ra, rec, &n, &wholedb, err, sizeof(err)) == 0 && !wholedb &&
	    store_shards_normalize(ra->shards, (int)n) == 1)
		shard = (int)ra->shards[0];
	ra->c.key_hash_argv = NULL;
	return shard;
}

int replay_apply_record(void *arg, const struct jr_cmd *rec, char *err, size_t errlen)
{
	struct replay_applier *ra = arg;
	struct client *c = &ra->c;
	struct store *s = c->srv->store;
	if (__builtin_expect(skipped(ra, rec), 0)) {
		/* not for this kind of consumer (redis.set_repl): nothing runs,
		 * and a replica's stream still keeps it in its place */
		if (ra->applied)
			ra->applied(ra->applied_ctx, rec);
		return 0;
	}
	size_t n;
	bool wholedb;
	int r = prepare(ra, rec, &n, &wholedb, err, errlen);
	if (r < 0) {
		c->key_hash_argv = NULL;
		return r;
	}
	/* as EXEC and the dispatcher: a whole-keyspace command runs with
	 * every lock held (the store's whole-keyspace functions then lock
	 * nothing) */
	bool all = wholedb;
	int nshards = all ? 0 : store_shards_normalize(ra->shards, (int)n);
	if (all)
		store_lock_all(s);
	else if (wholedb)
		nshards = 0;
	else if (nshards == 1)
		store_lock(s, ra->shards[0]);
	else if (nshards)
		store_lock_set(s, ra->shards, nshards);
	/* the record's bracket: its commands' brackets nest in it, and the
	 * versions restored below are its writes too */
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_REPLAY, "a journal record", true, rec->now_ms);
	for (unsigned i = 0; i < rec->ncmds; i++)
		run_locked(ra, &ra->cmds[i], i + 1 == rec->ncmds ? rec : NULL);
	/* the lookups below find what the commands wrote: no pre-images */
	w.intent = false;
	struct jreader v = rec->vers;
	for (unsigned i = 0; i < rec->nver; i++) {
		const char *key;
		size_t klen;
		uint64_t version;
		if (!jr_next_version(&v, &key, &klen, &version))
			break;
		struct entry *e = store_find_locked(s, rec->db, key, klen, rec->now_ms,
						    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
		if (e)
			store_entry_set_version_locked(s, e, version);
	}
	restore_db_versions(s, rec);
	store_write_end(&w);
	if (all)
		store_unlock_all(s);
	else if (nshards == 1)
		store_unlock(s, ra->shards[0]);
	else if (nshards)
		store_unlock_set(s, ra->shards, nshards);
	/* argv is reused by the next record: the dispatcher's key hash memo
	 * must not outlive this one (dispatch.h) */
	c->key_hash_argv = NULL;
	/* a replica serves its clients blocked on keys the record pushed to,
	 * as the dispatcher does after a command (none while loading) */
	blocking_serve_ready(c->srv);
	return 0;
}

int replay_apply_object(void *arg, const struct jr_snap_entry *e, int64_t now, char *err, size_t errlen)
{
	struct replay_applier *ra = arg;
	struct client *c = &ra->c;
	struct store *s = c->srv->store;
	if (e->ncmds > ra->capcmds) {
		ra->capcmds = e->ncmds;
		ra->cmds = zr_realloc(ra->cmds, sizeof(*ra->cmds) * ra->capcmds);
	}
	ra->nargs = 0;
	struct jreader cmds = e->cmds;
	for (unsigned i = 0; i < e->ncmds; i++) {
		int r = read_cmd(ra, &cmds, &ra->cmds[i], err, errlen);
		if (r < 0)
			return r;
	}
	c->db = e->db;
	c->now_ms = now;
	/* the rebuild's commands name the entry's key only */
	unsigned shard = store_shard_of(s, e->key, e->klen);
	store_lock(s, shard);
	struct store_write w;
	store_write_begin(&w, STORE_WRITE_LOAD, "a snapshot entry", true, now);
	bool good = true;
	for (unsigned i = 0; i < e->ncmds && good; i++)
		good = !run_locked(ra, &ra->cmds[i], NULL);
	struct entry *en = good ? store_find_locked(s, e->db, e->key, e->klen, now,
						    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS)
				: NULL;
	if (en && e->expire >= 0)
		store_set_expire_locked(s, e->db, &en, e->expire);
	if (en && load_entry_meta_locked(s, e, &en) < 0)
		en = NULL;
	if (en)
		store_entry_set_version_locked(s, en, e->version);
	store_write_end(&w);
	store_unlock(s, shard);
	c->key_hash_argv = NULL;
	return en ? 0 : -EINVAL;
}

/* The libraries of a snapshot: the server's dropped, each loaded as its
 * FUNCTION LOAD was (no time limit: it ran once already). */
static void functions_flush(void *srv)
{
	(void)srv;
	function_flush();
}

static int function_record(void *ra, const char *code, size_t len, char *err, size_t errlen)
{
	(void)ra;
	char name[256];
	return function_load(code, len, true, false, name, sizeof(name), err, errlen);
}

/* snapshot_extra_fn: a JR_SNAP_FUNCTION frame per library. */
static void emit_library(void *ctx, const char *code, size_t len)
{
	struct jbuf *out = ctx;
	size_t off = jr_frame_begin(out, JR_SNAP_FUNCTION);
	jbuf_bytes(out, code, len);
	jr_frame_end(out, off);
}

static void snapshot_functions(void *ctx, struct jbuf *out)
{
	(void)ctx;
	function_foreach_code(emit_library, out);
}

static void *open_applier(void *srv)
{
	return replay_applier_new(srv, false);
}

static void *open_link_applier(void *srv)
{
	return replay_applier_new(srv, true);
}

static void close_applier(void *ra)
{
	replay_applier_free(ra);
}

static void set_hook(void *ra, void (*fn)(void *ctx, const struct jr_cmd *rec), void *ctx)
{
	replay_applier_set_hook(ra, fn, ctx);
}

void replay_apply_install(struct server *srv)
{
	load_set_apply(&(struct load_apply){ .ctx = srv,
					     .open = open_applier,
					     .open_link = open_link_applier,
					     .close = close_applier,
					     .record = replay_apply_record,
					     .record_shard = replay_record_shard,
					     .object = replay_apply_object,
					     .functions_flush = functions_flush,
					     .function = function_record,
					     .set_hook = set_hook });
	snapshot_set_extra(snapshot_functions, srv);
}
