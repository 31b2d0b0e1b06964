/* cmd_multi — MULTI EXEC DISCARD WATCH UNWATCH, and the per-client state
 * behind them (multi.h). */
#include <string.h>
#include <xxhash.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/multi.h"
#include "zarisd/server/server.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"

struct multi_cmd {
	const struct command *cmd;
	int argc;
	struct resp_arg *argv; /* one allocation: the array, then the bytes */
};

/* Invariant: exists only between MULTI and EXEC/DISCARD. */
struct multi_state {
	struct multi_cmd *cmds;
	int ncmds, cap;
	bool doomed;	    /* a queued command was rejected */
	bool wholedb;	    /* a queued command walks the keyspace or locks itself: EXEC locks all */
	uint32_t cmd_flags; /* the queued rows' flags, OR-ed (Redis's mstate.cmd_flags) */
};

struct watched_key {
	unsigned db;
	size_t klen;
	uint64_t version; /* entry version when watched; 0 = absent */
	char *key;
};

/* Invariant: nkeys > 0 while it exists; index has nslots (a power of two,
 * at least twice cap) entries, each 0 (free) or 1 + the position in keys of
 * a watched key, found by linear probing from the key's hash: WATCH of N
 * keys costs O(N) under the dispatcher's shard locks, not O(N^2). */
struct watch_state {
	struct watched_key *keys;
	int nkeys, cap;
	uint32_t *index;
	size_t nslots;
};

static struct resp_arg *copy_argv(const struct resp_arg *argv, int argc)
{
	size_t bytes = sizeof(struct resp_arg) * (size_t)argc;
	for (int i = 0; i < argc; i++)
		bytes += argv[i].len + 1;
	struct resp_arg *out = zr_malloc(bytes);
	char *p = (char *)(out + argc);
	for (int i = 0; i < argc; i++) {
		memcpy(p, argv[i].ptr, argv[i].len);
		p[argv[i].len] = '\0'; /* handlers may rely on a terminator, as after parsing */
		out[i].ptr = p;
		out[i].len = argv[i].len;
		p += argv[i].len + 1;
	}
	return out;
}

void multi_queue(struct client *c, const struct command *cmd)
{
	struct multi_state *m = c->multi;
	/* as Redis's queueMultiCommand: a doomed transaction never runs, so
	 * what comes after the error is answered QUEUED but not kept (nor
	 * seen by EXEC's OOM check, which then answers the earlier error) */
	if (m->doomed) {
		reply_simple(&c->out, "QUEUED");
		return;
	}
	if (m->ncmds == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 8;
		m->cmds = zr_realloc(m->cmds, sizeof(*m->cmds) * (size_t)m->cap);
	}
	struct multi_cmd *q = &m->cmds[m->ncmds++];
	q->cmd = cmd;
	q->argc = c->argc;
	q->argv = copy_argv(c->argv, c->argc);
	if (cmd->flags & (CMD_WHOLEDB | CMD_SELFLOCK))
		m->wholedb = true;
	m->cmd_flags |= cmd->flags;
	reply_simple(&c->out, "QUEUED");
}

bool multi_has_writes(const struct client *c)
{
	return (multi_queued_flags(c) & CMD_WRITE) != 0;
}

uint32_t multi_queued_flags(const struct client *c)
{
	return c->multi ? c->multi->cmd_flags : 0;
}

int multi_queued_count(const struct client *c)
{
	return c->multi ? c->multi->ncmds : 0;
}

const struct command *multi_queued_at(const struct client *c, int i, const struct resp_arg **argv, int *argc)
{
	const struct multi_cmd *q = &c->multi->cmds[i];
	*argv = q->argv;
	*argc = q->argc;
	return q->cmd;
}

void multi_flag_error(struct client *c)
{
	if (c->multi)
		c->multi->doomed = true;
}

static void discard(struct client *c)
{
	struct multi_state *m = c->multi;
	if (!m)
		return;
	for (int i = 0; i < m->ncmds; i++)
		zr_free(m->cmds[i].argv);
	zr_free(m->cmds);
	ZR_FREE(c->multi);
	c->flags &= ~CLIENT_IN_MULTI;
}

static void unwatch(struct client *c)
{
	struct watch_state *w = c->watched;
	if (!w)
		return;
	for (int i = 0; i < w->nkeys; i++)
		zr_free(w->keys[i].key);
	zr_free(w->keys);
	zr_free(w->index);
	ZR_FREE(c->watched);
}

static size_t watch_slot_of(const struct watch_state *w, unsigned db, const char *key, size_t klen)
{
	return (size_t)(XXH3_64bits_withSeed(key, klen, db) & (w->nslots - 1));
}

/* The index slot holding (DB, KEY), or the free slot where it would go. */
static size_t watch_find(const struct watch_state *w, unsigned db, const char *key, size_t klen)
{
	size_t i = watch_slot_of(w, db, key, klen);
	while (w->index[i]) {
		const struct watched_key *wk = &w->keys[w->index[i] - 1];
		if (wk->db == db && wk->klen == klen && !memcmp(wk->key, key, klen))
			break;
		i = (i + 1) & (w->nslots - 1);
	}
	return i;
}

/* Room for one more key in keys and index (rebuilt when it grows). */
static void watch_reserve(struct watch_state *w)
{
	if (w->nkeys < w->cap)
		return;
	w->cap = w->cap ? w->cap * 2 : 4;
	w->keys = zr_realloc(w->keys, sizeof(*w->keys) * (size_t)w->cap);
	zr_free(w->index);
	w->nslots = (size_t)w->cap * 2;
	w->index = zr_calloc(w->nslots, sizeof(*w->index));
	for (int k = 0; k < w->nkeys; k++) {
		const struct watched_key *wk = &w->keys[k];
		w->index[watch_find(w, wk->db, wk->key, wk->klen)] = (uint32_t)k + 1;
	}
}

void multi_client_free(struct client *c)
{
	discard(c);
	unwatch(c);
}

void cmd_multi(struct client *c)
{
	if (c->multi) {
		reply_error(&c->out, "ERR MULTI calls can not be nested");
		return;
	}
	c->multi = zr_calloc(1, sizeof(struct multi_state));
	c->flags |= CLIENT_IN_MULTI;
	reply_ok(&c->out);
}

void cmd_discard(struct client *c)
{
	if (!c->multi) {
		reply_error(&c->out, "ERR DISCARD without MULTI");
		return;
	}
	discard(c);
	unwatch(c);
	reply_ok(&c->out);
}

void cmd_watch(struct client *c)
{
	if (c->multi) {
		reply_error(&c->out, "ERR WATCH inside MULTI is not allowed");
		return;
	}
	/* the dispatcher holds the shard locks of every key (key spec 1,-1,1) */
	for (int i = 1; i < c->argc; i++) {
		if (!c->watched)
			c->watched = zr_calloc(1, sizeof(struct watch_state));
		struct watch_state *w = c->watched;
		watch_reserve(w);
		size_t slot = watch_find(w, c->db, c->argv[i].ptr, c->argv[i].len);
		if (w->index[slot])
			continue; /* watched already */
		struct entry *e = store_find_locked(c->srv->store, c->db, c->argv[i].ptr, c->argv[i].len,
						    c->now_ms, STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
		w->index[slot] = (uint32_t)w->nkeys + 1;
		struct watched_key *wk = &w->keys[w->nkeys++];
		wk->db = c->db;
		wk->klen = c->argv[i].len;
		wk->key = zr_strndup(c->argv[i].ptr, c->argv[i].len);
		wk->version = e ? entry_version(e) : 0;
	}
	reply_ok(&c->out);
}

void cmd_unwatch(struct client *c)
{
	unwatch(c);
	reply_ok(&c->out);
}

/* Whether any watched key changed since WATCH; every watched key's shard
 * lock is held. */
static bool watched_changed(struct client *c)
{
	struct watch_state *w = c->watched;
	for (int i = 0; w && i < w->nkeys; i++) {
		struct watched_key *wk = &w->keys[i];
		struct entry *e = store_find_locked(c->srv->store, wk->db, wk->key, wk->klen, c->now_ms,
						    STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
		if ((e ? entry_version(e) : 0) != wk->version)
			return true;
	}
	return false;
}

/* The ascending shard set of every queued command's keys and every watched
 * key; returns its size, *OUT a heap array. */
static int exec_shards(struct client *c, unsigned **out)
{
	struct multi_state *m = c->multi;
	struct watch_state *w = c->watched;
	int cap = 16, n = 0;
	unsigned *all = zr_malloc(sizeof(unsigned) * (size_t)cap);
	struct resp_arg *saved_argv = c->argv;
	int saved_argc = c->argc;
	for (int i = 0; i < m->ncmds; i++) {
		unsigned stack[DISPATCH_STACK_SHARDS], *sh;
		c->argv = m->cmds[i].argv;
		c->argc = m->cmds[i].argc;
		int k = dispatch_key_shards(c, m->cmds[i].cmd, stack, &sh);
		if (n + k > cap) {
			cap = (n + k) * 2;
			all = zr_realloc(all, sizeof(unsigned) * (size_t)cap);
		}
		if (k) /* sh is NULL for keyless rows */
			memcpy(all + n, sh, sizeof(unsigned) * (size_t)k);
		n += k;
		if (sh != stack)
			zr_free(sh);
	}
	c->argv = saved_argv;
	c->argc = saved_argc;
	for (int i = 0; w && i < w->nkeys; i++) {
		if (n == cap) {
			cap *= 2;
			all = zr_realloc(all, sizeof(unsigned) * (size_t)cap);
		}
		all[n++] = store_shard_of(c->srv->store, w->keys[i].key, w->keys[i].klen);
	}
	*out = all;
	return store_shards_normalize(all, n);
}

void cmd_exec(struct client *c)
{
	struct multi_state *m = c->multi;
	if (!m) {
		reply_error(&c->out, "ERR EXEC without MULTI");
		return;
	}
	if (m->doomed) {
		reply_error(&c->out, "EXECABORT Transaction discarded because of previous errors.");
		multi_client_free(c);
		return;
	}
	struct store *s = c->srv->store;
	unsigned *shards = NULL;
	int nshards = 0;
	bool all = m->wholedb;
	if (!all)
		nshards = exec_shards(c, &shards);
	if (!dispatch_lock_shards(c, shards, nshards, all)) {
		/* a busy script holds one: EXECABORT ... BUSY, as EXEC gets
		 * from admission once the script is busy (Redis's) */
		zr_free(shards);
		dispatch_refuse_busy(c, c->cmd);
		return;
	}
	if (watched_changed(c)) {
		reply_null_array(&c->out);
	} else {
		/* EXEC itself is the command the client sees answered; the queued
		 * ones are run with their own rows, stats and argv */
		const struct command *exec_row = c->cmd;
		struct resp_arg *saved_argv = c->argv;
		int saved_argc = c->argc;
		c->flags |= CLIENT_IN_EXEC;
		reply_array(&c->out, m->ncmds);
		for (int i = 0; i < m->ncmds; i++) {
			c->argv = m->cmds[i].argv;
			c->argc = m->cmds[i].argc;
			c->key_hash_argv = NULL;
			dispatch_call(c, m->cmds[i].cmd);
		}
		c->flags &= ~CLIENT_IN_EXEC;
		c->argv = saved_argv;
		c->argc = saved_argc;
		c->cmd = exec_row;
	}
	if (all)
		store_unlock_all(s);
	else
		store_unlock_set(s, shards, nshards);
	zr_free(shards);
	multi_client_free(c);
}
