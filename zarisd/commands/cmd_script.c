/* cmd_script — EVAL EVALSHA EVAL_RO EVALSHA_RO SCRIPT, and redis.call's
 * way into the server (script/script.h's host).
 *
 * A script runs on its client's worker inside the EVAL handler, so the
 * dispatcher holds the shard locks of its declared KEYS (the rows' key
 * spec: numkeys at argv[2]). Each redis.call goes through the one command
 * table and the checks Redis's scriptCall makes (arity, unknown command,
 * noscript rows, writes from a read-only script, OOM, the cluster slot)
 * plus ours: every key it names must lie in a shard the script holds
 * (declared in KEYS), unless the script runs with every shard locked
 * (flag allow-undeclared-keys, or the setting of that name). It then runs
 * on the worker's script client (CLIENT_IN_EXEC: blocking commands do not
 * block, and its writes are records of the EVAL's transaction, which
 * propagate.c commits after the handler as for EXEC: the log and the
 * replicas see the script whole or not at all).
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/cluster/topology.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/keyslot.h"
#include "zarisd/core/mem.h"
#include "zarisd/persist/persist.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/script.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"

#define ERR_NOSCRIPT "NOSCRIPT No matching script. Please use EVAL."

/* One EVAL's state, the host's context. */
struct eval_ctx {
	struct client *c;  /* the caller */
	struct client *sc; /* the worker's script client */
	struct script_run run;
	bool readonly;	      /* EVAL_RO, or flag no-writes */
	bool all;	      /* every shard lock held */
	bool allow_oom;	      /* flag allow-oom (or no-writes) */
	bool oom;	      /* over maxmemory when the script started */
	bool cross_slot;      /* flag allow-cross-slot-keys */
	int slot;	      /* cluster mode: the slot the script's keys are in, or -1 */
	const unsigned *held; /* the shards the dispatcher locked, ascending */
	int nheld;
};

/* The worker's script client and its reply buffer. */
struct script_client {
	struct client c;
	char *buf;
	size_t cap;
};

static _Thread_local struct script_client *tl_sc;
static pthread_key_t sc_key;
static pthread_once_t sc_once = PTHREAD_ONCE_INIT;

static void sc_destroy(void *p)
{
	struct script_client *s = p;
	if (!s)
		return;
	obuf_free(&s->c.out);
	zr_free(s->buf);
	zr_free(s);
}

static void sc_make_key(void)
{
	pthread_key_create(&sc_key, sc_destroy);
}

static struct script_client *script_client(struct client *c)
{
	struct script_client *s = tl_sc;
	if (!s) {
		pthread_once(&sc_once, sc_make_key);
		s = zr_calloc(1, sizeof(*s));
		dispatch_client_init(&s->c, c->srv, c->worker, c->stats);
		s->c.flags |= CLIENT_AUTHENTICATED;
		tl_sc = s;
		pthread_setspecific(sc_key, s);
	}
	return s;
}

static bool arity_ok(const struct command *cmd, int argc)
{
	return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

static bool shard_held(const struct eval_ctx *x, unsigned shard)
{
	int lo = 0, hi = x->nheld - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (x->held[mid] == shard)
			return true;
		if (x->held[mid] < shard)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return false;
}

/* Cluster mode: why this node may not serve SLOT to the script's command
 * CMD (Redis's scriptVerifyClusterState texts), or NULL. A replica serves
 * its primary's slots for reads to a READONLY client, as the dispatcher. */
static const char *slot_local(struct eval_ctx *x, const struct command *cmd, int slot)
{
	struct cluster *cl = x->c->srv->cluster;
	const char *why = NULL;
	const struct topology *t = cluster_read_begin(cl, x->c->worker);
	unsigned owner = t ? t->owner[slot] : TOPO_NO_OWNER;
	if (owner == TOPO_NO_OWNER) {
		why = "Script attempted to execute a command while the cluster is down";
	} else if (owner != t->myself) {
		bool reads_here = (x->c->flags & CLIENT_CLUSTER_READONLY) && !(cmd->flags & CMD_WRITE) &&
				  t->nodes[t->myself].primary == (int)owner;
		if (!reads_here)
			why = "Script attempted to access a non local key in a cluster node";
	}
	cluster_read_end(cl, x->c->worker);
	return why;
}

/* The declared-keys rule and, in cluster mode, Redis's one-slot rule for
 * the keys of CMD in ARGV. 0, or -1 with ERR set. */
static int keys_ok(struct eval_ctx *x, const struct command *cmd, struct resp_arg *argv, int argc, char *err,
		   size_t errsize)
{
	struct server *srv = x->c->srv;
	if (!x->all && (cmd->flags & (CMD_WHOLEDB | CMD_SELFLOCK))) {
		snprintf(err, errsize,
			 "Script attempted to run '%s', which needs every shard, without the "
			 "allow-undeclared-keys flag",
			 cmd->name);
		return -1;
	}
	struct keyiter it;
	keyiter_init(&it, cmd, argv, argc);
	for (int i; (i = keyiter_next(&it)) >= 0;) {
		if (srv->cluster) {
			int slot = (int)zr_key_slot(argv[i].ptr, argv[i].len);
			const char *why = slot_local(x, cmd, slot);
			if (why) {
				snprintf(err, errsize, "%s", why);
				return -1;
			}
		}
		if (srv->cluster && !x->cross_slot) {
			int slot = (int)zr_key_slot(argv[i].ptr, argv[i].len);
			if (x->slot < 0) {
				x->slot = slot;
			} else if (slot != x->slot) {
				snprintf(err, errsize,
					 "Script attempted to access keys that do not hash to the same slot");
				return -1;
			}
		}
		if (x->all || (cmd->flags & CMD_KEYLESS))
			continue;
		if (!shard_held(x, store_shard_of(srv->store, argv[i].ptr, argv[i].len))) {
			snprintf(err, errsize,
				 "Script attempted to access key '%.*s', which was not declared in KEYS "
				 "(declare it, or flag the script allow-undeclared-keys)",
				 (int)(argv[i].len > 128 ? 128 : argv[i].len), argv[i].ptr);
			return -1;
		}
	}
	return 0;
}

/* Redis's scriptCall checks of CMD (found) for X's script: -1 with the
 * refusal in ERR. */
static int call_allowed(struct eval_ctx *x, const struct command *cmd, struct resp_arg *argv, int argc,
			char *err, size_t errsize)
{
	struct server *srv = x->c->srv;
	if (!arity_ok(cmd, argc) || ((cmd->flags & CMD_CONTAINER) && !cmd->handler)) {
		snprintf(err, errsize, "Wrong number of args calling Redis command from script");
		return -1;
	}
	if (cmd->flags & CMD_NOSCRIPT) {
		snprintf(err, errsize, "This Redis command is not allowed from script");
		return -1;
	}
	bool write = (cmd->flags & CMD_WRITE) != 0;
	if (x->readonly && write) {
		snprintf(err, errsize, "Write commands are not allowed from read-only scripts.");
		return -1;
	}
	/* the server's state may refuse a script's first write; once it
	 * wrote, it is not stopped halfway (Redis's SCRIPT_WRITE_DIRTY) */
	if (write && !x->run.wrote) {
		int derr = persist_write_errno(srv->persist);
		if (atomic_load_explicit(&srv->repl_replica, memory_order_relaxed) &&
		    atomic_load_explicit(&srv->cfg->replica_read_only, memory_order_relaxed)) {
			snprintf(err, errsize, "-READONLY You can't write against a read only replica.");
			return -1;
		}
		if (derr) {
			snprintf(err, errsize, "-MISCONF Errors writing to the AOF file: %s", strerror(derr));
			return -1;
		}
	}
	if (x->oom && !x->allow_oom && !x->run.wrote && (cmd->flags & CMD_DENYOOM)) {
		snprintf(err, errsize, "-OOM command not allowed when used memory > 'maxmemory'.");
		return -1;
	}
	return keys_ok(x, cmd, argv, argc, err, errsize);
}

#define JOURNAL_FLAGS (CLIENT_NO_JOURNAL | CLIENT_JOURNAL_LOG_ONLY | CLIENT_JOURNAL_REPLICAS_ONLY)

/* The script client's journal flags for a command under redis.set_repl's
 * REPL (enum script_repl), for a script its caller runs with
 * CALLER_FLAGS (a native-rf1 caller journals nothing at all). */
static unsigned journal_flags(int repl, unsigned caller_flags)
{
	if (caller_flags & CLIENT_NO_JOURNAL)
		return CLIENT_NO_JOURNAL;
	switch (repl) {
	case SCRIPT_REPL_NONE:
		return CLIENT_NO_JOURNAL;
	case SCRIPT_REPL_AOF:
		return CLIENT_JOURNAL_LOG_ONLY;
	case SCRIPT_REPL_REPLICA:
		return CLIENT_JOURNAL_REPLICAS_ONLY;
	default:
		return 0;
	}
}

/* redis.call: Redis's scriptCall checks, then the command on the script
 * client; its reply's bytes are handed back whole. A refusal is counted
 * as Redis's scriptCall does (an error reply, the command's
 * rejected_calls). */
static int host_call(void *ctx, struct resp_arg *argv, int argc, int resp, const char **reply, size_t *len,
		     char *err, size_t errsize)
{
	struct eval_ctx *x = ctx;
	struct client *c = x->c;
	const struct command *cmd = command_lookup(argv[0].ptr, argv[0].len);
	if (cmd && (cmd->flags & CMD_CONTAINER) && argc >= 2)
		cmd = command_lookup_sub(cmd, argv[1].ptr, argv[1].len);
	if (!cmd) {
		snprintf(err, errsize, "Unknown Redis command called from script");
		dispatch_count_script_rejection(c, NULL, err);
		return -1;
	}
	if (call_allowed(x, cmd, argv, argc, err, errsize) < 0) {
		dispatch_count_script_rejection(c, cmd, err);
		return -1;
	}
	if (cmd->flags & CMD_WRITE)
		script_mark_write(&x->run);

	struct script_client *s = script_client(c);
	struct client *sc = &s->c;
	sc->flags = (sc->flags & ~JOURNAL_FLAGS) | journal_flags(x->run.repl, c->flags);
	sc->stats = c->stats;
	sc->argv = argv;
	sc->argc = argc;
	sc->resp = (uint8_t)resp;
	sc->out.resp = (uint8_t)resp;
	sc->now_ms = c->now_ms;
	sc->key_hash_argv = NULL;
	dispatch_call(sc, cmd);
	sc->argv = NULL;
	sc->argc = 0;

	size_t n = sc->out.bytes;
	if (n + 1 > s->cap) {
		s->cap = (n + 1) * 2;
		s->buf = zr_realloc(s->buf, s->cap);
	}
	size_t off = 0;
	for (struct obuf_chunk *ch = sc->out.head; ch && off < n; ch = ch->next) {
		size_t k = ch->used - ch->sent;
		memcpy(s->buf + off, ch->data + ch->sent, k);
		off += k;
	}
	obuf_consume(&sc->out, n);
	s->buf[off] = '\0';
	*reply = s->buf;
	*len = off;
	return 0;
}

/* The script ran past busy-reply-threshold: its worker answers its other
 * clients meanwhile (script.h; the network layer's serve_others). */
static void host_serve(void *ctx)
{
	struct eval_ctx *x = ctx;
	struct server *srv = x->c->srv;
	if (srv->serve_others)
		srv->serve_others(x->c);
}

/* busy-reply-threshold in ms */
static long long busy_threshold(struct server *srv)
{
	return atomic_load_explicit(&srv->cfg->busy_reply_threshold, memory_order_relaxed);
}

/* Redis's scriptPrepareForRun: the flags' refusals, before anything
 * runs. A flagged script that may write is, for Redis's processCommand, a
 * write command that may grow memory (scriptFlagsToCmdFlags): outside
 * EXEC its replica, disk and memory refusals are the generic ones that
 * gate comes to first. False after replying. */
static bool flags_allow(struct client *c, uint32_t flags, bool ro)
{
	struct server *srv = c->srv;
	bool replica = atomic_load_explicit(&srv->repl_replica, memory_order_relaxed);
	bool stale = replica && !atomic_load_explicit(&srv->repl_link_up, memory_order_relaxed) &&
		     !atomic_load_explicit(&srv->cfg->replica_serve_stale_data, memory_order_relaxed);
	bool gate = !(c->flags & CLIENT_IN_EXEC); /* processCommand saw the flags */
	if (flags & SCRIPT_FLAG_COMPAT) {
		if (stale) {
			reply_error(&c->out,
				    "MASTERDOWN Link with MASTER is down and replica-serve-stale-data "
				    "is set to 'no'.");
			return false;
		}
		return true;
	}
	if ((flags & SCRIPT_FLAG_NO_CLUSTER) && srv->cluster) {
		reply_error(&c->out, "ERR Can not run script on cluster, 'no-cluster' flag is set.");
		return false;
	}
	bool writes = !(flags & SCRIPT_FLAG_NO_WRITES);
	long long maxmemory = atomic_load_explicit(&srv->cfg->maxmemory, memory_order_relaxed);
	bool oom = maxmemory > 0 && writes && !(flags & SCRIPT_FLAG_ALLOW_OOM) &&
		   store_mem_for_eviction(srv->store) > (size_t)maxmemory;
	int derr = writes ? persist_write_errno(srv->persist) : 0;
	bool ro_replica =
		replica && writes && atomic_load_explicit(&srv->cfg->replica_read_only, memory_order_relaxed);
	if (gate && (ro_replica || derr || oom)) {
		if (ro_replica)
			reply_error(&c->out, "READONLY You can't write against a read only replica.");
		else if (derr)
			reply_errorf(&c->out, "MISCONF Errors writing to the AOF file: %s", strerror(derr));
		else
			reply_error(&c->out, "OOM command not allowed when used memory > 'maxmemory'.");
		return false;
	}
	if (stale && !(flags & SCRIPT_FLAG_ALLOW_STALE)) {
		reply_error(&c->out,
			    "MASTERDOWN Link with MASTER is down, replica-serve-stale-data is set to "
			    "'no' and 'allow-stale' flag is not set on the script.");
		return false;
	}
	if (writes) {
		if (ro_replica) {
			reply_error(&c->out,
				    "READONLY Can not run script with write flag on readonly replica");
			return false;
		}
		if (derr) {
			reply_errorf(
				&c->out,
				"MISCONF Redis is configured to persist data to AOF, but it's currently "
				"unable to persist to disk. Writable scripts are blocked. Use 'no-writes' "
				"flag for read only scripts. AOF error: %s",
				strerror(derr));
			return false;
		}
		if (ro) {
			reply_error(&c->out,
				    "ERR Can not execute a script with write flag using *_ro command.");
			return false;
		}
		int minr = atomic_load_explicit(&srv->cfg->min_replicas_to_write, memory_order_relaxed);
		if (!replica && minr &&
		    atomic_load_explicit(&srv->repl_good_replicas, memory_order_relaxed) < minr) {
			reply_error(&c->out, "NOREPLICAS Not enough good replicas to write.");
			return false;
		}
	}
	if (oom) {
		reply_error(&c->out, "OOM allow-oom flag is not set on the script, can not run it when used "
				     "memory > 'maxmemory'");
		return false;
	}
	return true;
}

/* The SHA of EVAL's body or EVALSHA's argument, lower case, in SHA;
 * false after replying NOSCRIPT (an EVALSHA argument of another length). */
static bool sha_of(struct client *c, bool evalsha, char sha[ZR_SHA1_HEX_LEN + 1])
{
	if (!evalsha) {
		zr_sha1_hex(c->argv[1].ptr, c->argv[1].len, sha);
		return true;
	}
	if (c->argv[1].len != ZR_SHA1_HEX_LEN) {
		reply_error(&c->out, ERR_NOSCRIPT);
		return false;
	}
	for (int i = 0; i < ZR_SHA1_HEX_LEN; i++)
		sha[i] = (char)tolower((unsigned char)c->argv[1].ptr[i]);
	sha[ZR_SHA1_HEX_LEN] = '\0';
	return true;
}

/* Runs X's script with every shard lock: the dispatcher's locks of the
 * declared keys are given back first (store_lock_all takes them all in
 * order) and taken again after, for the dispatcher to release. */
static void execute(struct eval_ctx *x, struct obuf *out)
{
	if (x->run.function)
		function_execute(&x->run, out);
	else
		script_execute(&x->run, out);
}

static void run_all_locked(struct eval_ctx *x)
{
	struct store *s = x->c->srv->store;
	if (x->nheld)
		store_unlock_set(s, x->held, x->nheld);
	if (!dispatch_lock_shards(x->c, NULL, 0, true)) {
		/* a busy script holds a shard: -BUSY, as the dispatcher answers
		 * a command whose lock it holds; the declared keys' locks are
		 * the dispatcher's to release (their wait serves the worker's
		 * other clients: dispatch_wait_begin) */
		if (x->nheld)
			store_lock_set(s, x->held, x->nheld);
		dispatch_refuse_busy_here(x->c);
		return;
	}
	x->all = true;
	script_count_all_locked();
	execute(x, &x->c->out);
	store_unlock_all(s);
	if (x->nheld)
		store_lock_set(s, x->held, x->nheld);
}

/* Runs the script or function NAME, prepared on this thread (its FLAGS),
 * with NUMKEYS keys from argv[3]: the flags' refusals, then the run under
 * the declared keys' shard locks (or every lock). */
static void run_generic(struct client *c, const char *name, uint32_t flags, bool ro, long long numkeys,
			bool function)
{
	if (!flags_allow(c, flags, ro))
		return;

	struct server *srv = c->srv;
	struct eval_ctx x = { .c = c, .slot = -1 };
	bool compat = flags & SCRIPT_FLAG_COMPAT;
	x.readonly = ro || (!compat && (flags & SCRIPT_FLAG_NO_WRITES));
	x.allow_oom = !compat && (flags & (SCRIPT_FLAG_ALLOW_OOM | SCRIPT_FLAG_NO_WRITES));
	x.cross_slot = !compat && (flags & SCRIPT_FLAG_ALLOW_CROSS_SLOT);
	long long maxmemory = atomic_load_explicit(&srv->cfg->maxmemory, memory_order_relaxed);
	x.oom = maxmemory > 0 && store_mem_for_eviction(srv->store) > (size_t)maxmemory;
	x.run.sha = name;
	x.run.function = function;
	x.run.argv = c->argv;
	x.run.argc = c->argc;
	x.run.keys = c->argv + 3;
	x.run.nkeys = (int)numkeys;
	x.run.args = c->argv + 3 + numkeys;
	x.run.nargs = c->argc - 3 - (int)numkeys;
	x.run.host.call = host_call;
	x.run.host.serve = host_serve;
	x.run.host.ctx = &x;
	x.run.busy_ms = busy_threshold(srv);
	x.run.stop = &srv->shutdown;
	/* the declared keys' slot: the dispatcher refused CROSSSLOT already */
	if (srv->cluster && numkeys > 0)
		x.slot = (int)zr_key_slot(c->argv[3].ptr, c->argv[3].len);

	unsigned stack[DISPATCH_STACK_SHARDS], *held;
	x.nheld = dispatch_key_shards(c, c->cmd, stack, &held);
	x.held = held;
	struct script_client *s = script_client(c);
	s->c.db = c->db;
	s->c.flags |= CLIENT_IN_EXEC;
	bool undeclared = (!compat && (flags & SCRIPT_FLAG_ALLOW_UNDECLARED)) ||
			  atomic_load_explicit(&srv->cfg->allow_undeclared_keys, memory_order_relaxed);
	if (undeclared && (c->flags & CLIENT_IN_EXEC) && !store_thread_all_locked()) {
		/* EXEC holds the shard locks of every queued command: they
		 * cannot be given back and taken again in order here */
		reply_error(&c->out,
			    "ERR a script that uses undeclared keys cannot run inside MULTI unless the "
			    "transaction locks every shard");
	} else if (undeclared && store_thread_all_locked()) {
		x.all = true; /* inside an EXEC that holds every lock */
		script_count_all_locked();
		execute(&x, &c->out);
	} else if (undeclared) {
		run_all_locked(&x);
	} else
		execute(&x, &c->out);
	s->c.flags &= ~(CLIENT_IN_EXEC | JOURNAL_FLAGS);
	if (held && held != stack)
		zr_free(held);
}

static void eval_generic(struct client *c, bool evalsha, bool ro)
{
	long long numkeys;
	if (!cmd_arg_ll(c, 2, &numkeys, NULL))
		return;
	if (numkeys > c->argc - 3) {
		reply_error(&c->out, "ERR Number of keys can't be greater than number of args");
		return;
	}
	if (numkeys < 0) {
		reply_error(&c->out, "ERR Number of keys can't be negative");
		return;
	}
	char sha[ZR_SHA1_HEX_LEN + 1];
	if (!sha_of(c, evalsha, sha))
		return;
	uint32_t flags;
	char err[1024];
	int r = script_prepare(sha, evalsha ? NULL : c->argv[1].ptr, c->argv[1].len, &flags, err,
			       sizeof(err));
	if (r == -ENOENT) {
		reply_error(&c->out, ERR_NOSCRIPT);
		return;
	}
	if (r < 0) {
		reply_error(&c->out, err);
		return;
	}
	run_generic(c, sha, flags, ro, numkeys, false);
}

/* FCALL / FCALL_RO: Redis's fcallCommandGeneric, its checks in its order
 * (the function first, then the key count). */
static void fcall_generic(struct client *c, bool ro)
{
	uint32_t flags;
	char err[1024];
	char *name;
	int r = function_prepare(c->argv[1].ptr, c->argv[1].len, &flags, &name, err, sizeof(err));
	if (r == -ENOENT) {
		reply_error(&c->out, "ERR Function not found");
		return;
	}
	if (r < 0) {
		reply_error(&c->out, err);
		return;
	}
	long long numkeys;
	if (!zr_str_to_ll(c->argv[2].ptr, c->argv[2].len, &numkeys))
		reply_error(&c->out, "ERR Bad number of keys provided");
	else if (numkeys > c->argc - 3)
		reply_error(&c->out, "ERR Number of keys can't be greater than number of args");
	else if (numkeys < 0)
		reply_error(&c->out, "ERR Number of keys can't be negative");
	else
		run_generic(c, name, flags, ro, numkeys, true);
	zr_free(name);
}

void cmd_fcall(struct client *c)
{
	fcall_generic(c, false);
}

void cmd_fcall_ro(struct client *c)
{
	fcall_generic(c, true);
}

void cmd_eval(struct client *c)
{
	eval_generic(c, false, false);
}

void cmd_evalsha(struct client *c)
{
	eval_generic(c, true, false);
}

void cmd_eval_ro(struct client *c)
{
	eval_generic(c, false, true);
}

void cmd_evalsha_ro(struct client *c)
{
	eval_generic(c, true, true);
}

void cmd_script_load(struct client *c)
{
	char sha[ZR_SHA1_HEX_LEN + 1], err[1024];
	uint32_t flags;
	zr_sha1_hex(c->argv[2].ptr, c->argv[2].len, sha);
	int r = script_prepare(sha, c->argv[2].ptr, c->argv[2].len, &flags, err, sizeof(err));
	if (r < 0) {
		reply_error(&c->out, err);
		return;
	}
	reply_bulk(&c->out, sha, ZR_SHA1_HEX_LEN);
}

void cmd_script_exists(struct client *c)
{
	reply_array(&c->out, c->argc - 2);
	for (int i = 2; i < c->argc; i++)
		reply_long(&c->out, script_registry_exists(c->argv[i].ptr, c->argv[i].len));
}

void cmd_script_flush(struct client *c)
{
	if (c->argc > 3 || (c->argc == 3 && !cmd_arg_is(c, 2, "sync") && !cmd_arg_is(c, 2, "async"))) {
		reply_error(&c->out, "ERR SCRIPT FLUSH only support SYNC|ASYNC option");
		return;
	}
	/* ASYNC and SYNC alike: each worker drops its state before its next script */
	script_registry_flush();
	reply_ok(&c->out);
}

void cmd_script_kill(struct client *c)
{
	cmd_reply_script_kill(c, script_kill(false), false);
}

void cmd_script_debug(struct client *c)
{
	reply_error(&c->out, "ERR SCRIPT DEBUG is not supported by this server");
}

void cmd_script_help(struct client *c)
{
	static const char *const lines[] = {
		"DEBUG (YES|SYNC|NO)",
		"    Set the debug mode for subsequent scripts executed.",
		"EXISTS <sha1> [<sha1> ...]",
		"    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]",
		"    Flush the Lua scripts cache. Very dangerous on replicas.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the scripts cache.",
		"    * SYNC: Synchronously flush the scripts cache.",
		"KILL",
		"    Kill the currently executing Lua script.",
		"LOAD <script>",
		"    Load a script into the scripts cache without executing it.",
		NULL,
	};
	cmd_reply_help(c, lines);
}
