/* dispatch — see dispatch.h. The order of the gates is Redis 7's
 * processCommand(): lookup (unknown command / subcommand), arity, auth,
 * OOM, pause; then the keys' shard locks, the handler, stats. */
#include "zarisd/commands/dispatch.h"
#include "zarisd/repl/repl.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/commands/cluster_route.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/server/info.h"
#include "zarisd/server/latency.h"
#include "zarisd/commands/multi.h"
#include "zarisd/commands/propagate.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/slowlog.h"
#include "zarisd/server/stats.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/persist.h"
#include "zarisd/script/script.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

/* One error reply of C (Redis's afterErrorReply): every one is an event
 * for failed_calls; a counted one goes to total_error_replies and
 * errorstats. */
static void count_error(struct client *c, const char *code, size_t len, bool counted)
{
	struct worker_stats *ws = c->stats;
	ws->error_events++;
	if (!counted)
		return;
	STAT_INC(ws, errorstat_total);
	info_count_error(ws, code, len);
}

/* reply.h's on_error of a client's obuf: c->out */
static void client_on_error(struct obuf *o, const char *code, size_t len, bool counted)
{
	count_error((struct client *)(void *)((char *)o - offsetof(struct client, out)), code, len, counted);
}

void dispatch_count_served_errors(struct client *c, const struct command *cmd, const struct obuf *reply)
{
	if (!reply->errors)
		return;
	for (uint64_t i = 0; i < reply->errors; i++)
		count_error(c, reply->last_error, strlen(reply->last_error), true);
	dispatch_count_failed(c, cmd);
}

void dispatch_count_failed(struct client *c, const struct command *cmd)
{
	if (cmd)
		STAT_INC(&c->stats->cmd[cmd->id], failed_calls);
}

void dispatch_count_failed_here(struct client *c)
{
	c->stats->error_events++;
}

void dispatch_count_script_rejection(struct client *c, const struct command *cmd, const char *err)
{
	const char *code = "ERR";
	size_t n = 3;
	if (err[0] == '-')
		n = reply_error_code(err, &code);
	count_error(c, code, n, true);
	if (cmd)
		STAT_INC(&c->stats->cmd[cmd->id], rejected_calls);
	/* Redis's incrCommandStatsOnError: the script's later errors are its */
	c->stats->error_mark = c->stats->error_events;
}

void dispatch_client_init(struct client *c, struct server *srv, unsigned worker, struct worker_stats *ws)
{
	memset(c, 0, sizeof(*c));
	c->srv = srv;
	c->worker = worker;
	c->stats = ws;
	obuf_init(&c->out);
	c->out.on_error = client_on_error;
	c->resp = 2;
	c->out.resp = 2;
	atomic_init(&c->shared_resp, 2);
	c->id = atomic_fetch_add_explicit(&srv->next_client_id, 1, memory_order_relaxed) + 1;
	c->ctime_ms = zr_time_ms();
	atomic_init(&c->last_interaction_ms, c->ctime_ms);
	if (!settings_requirepass_set(srv->cfg))
		c->flags |= CLIENT_AUTHENTICATED;
}

void dispatch_client_free(struct client *c)
{
	/* One line per module that keeps per-client state. */
	multi_client_free(c);
	pubsub_client_free(c);
	blocking_client_gone(c);	   /* blocking.h: leave the key queues */
	repl_client_gone(c->srv->repl, c); /* repl.h: its WAIT */
}

static void reply_unknown_command(struct client *c)
{
	char args[256];
	size_t used = 0;
	args[0] = '\0';
	/* Redis quotes the first arguments until 128 bytes of them are shown. */
	for (int j = 1; j < c->argc && used < 128; j++) {
		int n = snprintf(args + used, sizeof(args) - used, "'%.*s' ",
				 (int)(c->argv[j].len > 128 - used ? 128 - used : c->argv[j].len),
				 c->argv[j].ptr);
		if (n < 0)
			break;
		used += (size_t)n;
		if (used >= sizeof(args))
			used = sizeof(args) - 1;
	}
	reply_errorf(&c->out, "ERR unknown command '%.*s', with args beginning with: %s",
		     (int)(c->argv[0].len > 128 ? 128 : c->argv[0].len), c->argv[0].ptr, args);
}

static bool arity_ok(const struct command *cmd, int argc)
{
	return cmd->arity > 0 ? argc == cmd->arity : argc >= -cmd->arity;
}

/* The shard of key argv[I]. MEMO: it is the command's first key, whose
 * hash the handler's lookup reuses (cmd_key_hash). */
static inline unsigned key_shard(struct client *c, int i, bool memo)
{
	/* the connection may have hashed it already (parsed ahead) */
	uint64_t h = c->key_hash_argv == c->argv && c->key_hash_argi == i
			     ? c->key_hash
			     : store_hash(c->argv[i].ptr, c->argv[i].len);
	if (memo) {
		c->key_hash = h;
		c->key_hash_argv = c->argv;
		c->key_hash_argi = i;
	}
	return store_shard_of_hash(c->srv->store, h);
}

/* Collects the shard indexes of the row's keys (keyiter.h: the fixed ones,
 * then those a count argument names; when the count is not valid the
 * handler replies the error and touches no key, so none of them is
 * locked). Returns the count. *OUT is STACK or, when that was too small, a
 * heap array (caller frees). */
static int collect_shards(struct client *c, const struct command *cmd, unsigned *stack, unsigned **out)
{
	struct keyiter it;
	keyiter_init(&it, cmd, c->argv, c->argc);
	int n = keyiter_count(&it);
	unsigned *shards = n <= DISPATCH_STACK_SHARDS ? stack : zr_malloc(sizeof(unsigned) * (size_t)n);
	int k = 0;
	for (int i; (i = keyiter_next(&it)) >= 0; k++)
		shards[k] = key_shard(c, i, k == 0);
	*out = shards;
	return store_shards_normalize(shards, k);
}

static bool paused_for(struct client *c, const struct command *cmd)
{
	int mode = atomic_load_explicit(&c->srv->pause_mode, memory_order_acquire);
	if (mode == PAUSE_NONE)
		return false;
	if (zr_time_ms() >= atomic_load_explicit(&c->srv->pause_end_ms, memory_order_relaxed))
		return false;
	if (mode == PAUSE_ALL)
		return true;
	return (cmd->flags & CMD_WRITE) != 0;
}

/* Replies a rejection; inside MULTI it also dooms the transaction
 * (Redis's flagTransaction: EXEC then answers EXECABORT). */
static void reject(struct client *c, struct cmd_stat *st)
{
	if (st)
		STAT_INC(st, rejected_calls);
	if (c->multi)
		multi_flag_error(c);
}

/* A per-thread memo in front of command_lookup for names of 1..8 bytes
 * (every hot command): the name's bytes, lower-cased, as one word plus its
 * length identify it exactly, so a hit is command_lookup's own answer
 * without the byte loops. The table never changes after
 * command_table_init, so a memo entry never goes stale; thread-local, so no
 * sharing and no locking. */
#define LOOKUP_MEMO_BITS 6
struct lookup_memo {
	uint64_t word; /* lower-cased name, zero-padded */
	size_t len;
	const struct command *cmd;
};
static _Thread_local struct lookup_memo lookup_memo[1u << LOOKUP_MEMO_BITS];

/* The LEN (1..8) bytes at S as a little-endian word, zero-padded, reading
 * only those bytes (two overlapping loads, which OR to the same bytes). */
static inline uint64_t name_word(const char *s, size_t len)
{
	if (len >= 4) {
		uint32_t a, b;
		memcpy(&a, s, 4);
		memcpy(&b, s + len - 4, 4);
		return (uint64_t)a | ((uint64_t)b << ((len - 4) * 8));
	}
	return (uint64_t)(unsigned char)s[0] | ((uint64_t)(unsigned char)s[len / 2] << (len / 2 * 8)) |
	       ((uint64_t)(unsigned char)s[len - 1] << ((len - 1) * 8));
}

/* ASCII upper case to lower case in every byte of W (SWAR: a byte is upper
 * case when its low 7 bits lie in 'A'..'Z' and its top bit is clear). */
static inline uint64_t word_lower(uint64_t w)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t low7 = w & ~high;
	uint64_t ge_a = low7 + (0x80 - 'A') * ones;
	uint64_t gt_z = low7 + (0x80 - 'Z' - 1) * ones;
	return w | (((ge_a ^ gt_z) & ~w & high) >> 2);
}

static const struct command *lookup_cached(const char *name, size_t len)
{
	if (len == 0 || len > 8)
		return command_lookup(name, len);
	uint64_t w = word_lower(name_word(name, len));
	struct lookup_memo *m = &lookup_memo[((w + len) * 0x9E3779B97F4A7C15ull) >> (64 - LOOKUP_MEMO_BITS)];
	if (m->cmd && m->word == w && m->len == len)
		return m->cmd;
	const struct command *cmd = command_lookup(name, len);
	if (cmd) {
		m->word = w;
		m->len = len;
		m->cmd = cmd;
	}
	return cmd;
}

/* Finds the row for c->argv (subcommand rows for containers) and checks
 * arity. NULL after replying the error. */
static const struct command *resolve(struct client *c)
{
	const struct command *cmd = lookup_cached(c->argv[0].ptr, c->argv[0].len);
	c->cmd = NULL;
	if (!cmd) {
		reply_unknown_command(c);
		reject(c, NULL);
		return NULL;
	}
	if ((cmd->flags & CMD_CONTAINER) && !(c->argc == 1 && cmd->handler)) {
		if (c->argc < 2) {
			/* Redis looks the container itself up: its rejected_calls */
			c->cmd = cmd;
			cmd_reply_arity(c);
			reject(c, &c->stats->cmd[cmd->id]);
			return NULL;
		}
		const struct command *sub = command_lookup_sub(cmd, c->argv[1].ptr, c->argv[1].len);
		if (!sub) {
			cmd_reply_unknown_subcommand(c);
			reject(c, NULL);
			return NULL;
		}
		cmd = sub;
	}
	c->cmd = cmd;
	if (!arity_ok(cmd, c->argc)) {
		if (cmd->flags & CMD_EXEC) {
			/* Redis answers a rejected EXEC with EXECABORT and drops the
			 * transaction (execCommandAbort) */
			reply_error(&c->out,
				    "EXECABORT Transaction discarded because of: wrong number of arguments "
				    "for 'exec' command");
			multi_client_free(c);
		} else {
			cmd_reply_arity(c);
		}
		reject(c, &c->stats->cmd[cmd->id]);
		return NULL;
	}
	return cmd;
}

/* Whether C may run a CMD_PROTECTED command (DEBUG, the only one) under
 * enable-debug-command. */
static bool protected_allowed(const struct client *c)
{
	int allow = c->srv->cfg->enable_debug_command;
	return allow == SETTINGS_PROTECTED_YES ||
	       (allow == SETTINGS_PROTECTED_LOCAL && (c->flags & CLIENT_LOOPBACK));
}

/* The slow half of memory_ok: maxmemory is set and the command may grow
 * memory. DENY: refuse it when nothing more can be evicted. */
static bool evict_ok(struct client *c, const struct command *cmd, long long maxmemory, bool deny, int64_t *t0)
{
	struct server *srv = c->srv;
	int policy = atomic_load_explicit(&srv->cfg->maxmemory_policy, memory_order_relaxed);
	int r = store_evict(srv->store, (size_t)maxmemory, (enum store_evict_policy)policy, c->now_ms);
	if (t0)
		*t0 = zr_clock_us();
	if (r == -ENOMEM && deny) {
		if ((cmd->flags & CMD_EXEC)) {
			/* Redis's rejectCommand of EXEC: execCommandAbort */
			reply_error(&c->out, "EXECABORT Transaction discarded because of: " ERR_OOM);
			multi_client_free(c);
		} else {
			reply_error(&c->out, ERR_OOM);
		}
		reject(c, &c->stats->cmd[cmd->id]);
		return false;
	}
	return true;
}

/* Evicts when over maxmemory; false after replying -OOM to a command that
 * may grow memory: a DENYOOM row, EXEC of a queue holding one (Redis's
 * mstate.cmd_flags), or, as Redis's processCommand has it, any command
 * queued inside MULTI (QUEUEING). EXEC evicts even for a queue of reads
 * (Redis runs performEvictions before every command; zarisd before writes
 * and EXEC). When it evicted and T0 is given, *T0 is
 * read again: the command's duration does not include the eviction (as in
 * Redis, where it happens before call()). */
static inline bool memory_ok(struct client *c, const struct command *cmd, bool queueing, int64_t *t0)
{
	long long maxmemory = atomic_load_explicit(&c->srv->cfg->maxmemory, memory_order_relaxed);
	if (maxmemory <= 0)
		return true;
	/* a replica holds what its primary holds: it never evicts (Redis's
	 * replica-ignore-maxmemory yes) */
	if (atomic_load_explicit(&c->srv->repl_replica, memory_order_relaxed))
		return true;
	bool exec = (cmd->flags & CMD_EXEC);
	uint32_t flags = cmd->flags | (exec ? multi_queued_flags(c) : 0);
	/* EXEC evicts first whatever it runs, as Redis does before any command */
	if (!(flags & (CMD_WRITE | CMD_DENYOOM)) && !queueing && !exec)
		return true;
	return evict_ok(c, cmd, maxmemory, queueing || (flags & CMD_DENYOOM), t0);
}

/* Redis's writeCommandsDeniedByDiskError for the log: while the log cannot
 * be written, write commands get -MISCONF (false after replying). Unlike
 * Redis, PING still answers PONG: the supervisor's health check would
 * otherwise restart an instance that serves reads and whose unwritten
 * records are kept for a retry (persist/aof.c). */
static inline bool disk_ok(struct client *c, const struct command *cmd)
{
	bool exec = (cmd->flags & CMD_EXEC);
	if (!(cmd->flags & CMD_WRITE) && !(exec && multi_has_writes(c)))
		return true;
	int err = persist_write_errno(c->srv->persist);
	if (!err)
		return true;
	if (exec) {
		/* Redis's execCommandAbort: the transaction is dropped */
		reply_errorf(
			&c->out,
			"EXECABORT Transaction discarded because of: MISCONF Errors writing to the AOF file: %s",
			strerror(err));
		multi_client_free(c);
	} else {
		reply_errorf(&c->out, "MISCONF Errors writing to the AOF file: %s", strerror(err));
	}
	reject(c, &c->stats->cmd[cmd->id]);
	return false;
}

/* Replication's refusals, as Redis's processCommand orders them: a
 * replica loading a full sync answers -LOADING (but for rows flagged
 * loading); min-replicas-to-write refuses writes with too few good
 * replicas; a read-only replica refuses writes; a replica whose link is
 * down answers -MASTERDOWN with replica-serve-stale-data no (but for rows
 * flagged stale). False after replying. */
static inline bool repl_ok(struct client *c, const struct command *cmd)
{
	struct server *srv = c->srv;
	bool replica = atomic_load_explicit(&srv->repl_replica, memory_order_relaxed);
	int minr = atomic_load_explicit(&srv->cfg->min_replicas_to_write, memory_order_relaxed);
	if (__builtin_expect(!replica && !minr, 1))
		return true;
	bool exec = (cmd->flags & CMD_EXEC);
	bool writes = (cmd->flags & CMD_WRITE) || (exec && multi_has_writes(c));
	const char *why = NULL;
	if (replica && atomic_load_explicit(&srv->repl_loading, memory_order_acquire) &&
	    !(cmd->flags & CMD_LOADING))
		why = "LOADING Redis is loading the dataset in memory";
	else if (!replica && minr && writes &&
		 atomic_load_explicit(&srv->repl_good_replicas, memory_order_relaxed) < minr)
		why = "NOREPLICAS Not enough good replicas to write.";
	else if (replica && writes &&
		 atomic_load_explicit(&srv->cfg->replica_read_only, memory_order_relaxed))
		why = "READONLY You can't write against a read only replica.";
	else if (replica && !(cmd->flags & CMD_STALE) &&
		 !atomic_load_explicit(&srv->repl_link_up, memory_order_relaxed) &&
		 !atomic_load_explicit(&srv->cfg->replica_serve_stale_data, memory_order_relaxed))
		why = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
	if (!why)
		return true;
	if (exec) {
		reply_errorf(&c->out, "EXECABORT Transaction discarded because of: %s", why);
		multi_client_free(c);
	} else {
		reply_error(&c->out, why);
	}
	reject(c, &c->stats->cmd[cmd->id]);
	return false;
}

/* The write lease (write-lease yes, server.h): a primary whose lease has
 * lapsed refuses every write, so that while its supervisor may have lost
 * the shard's leader key (and another node may have been promoted) it
 * takes no write a client would count as done. A replica is not gated:
 * it refuses writes itself (repl_ok), and its replication stream does not
 * come through here. EXEC re-checks what was queued (the lease may have
 * lapsed since), as Redis's other EXEC-time gates: EXECABORT. False after
 * replying. */
static inline bool lease_ok(struct client *c, const struct command *cmd)
{
	struct server *srv = c->srv;
	if (__builtin_expect(!srv->write_lease, 1))
		return true;
	bool exec = (cmd->flags & CMD_EXEC);
	if (!(cmd->flags & CMD_WRITE) && !(exec && multi_has_writes(c)))
		return true;
	if (atomic_load_explicit(&srv->repl_replica, memory_order_relaxed) || !server_fenced(srv))
		return true;
	atomic_fetch_add_explicit(&srv->write_lease_refused, 1, memory_order_relaxed);
	if (exec) {
		reply_error(&c->out, "EXECABORT Transaction discarded because of: " SERVER_ERR_FENCED);
		multi_client_free(c);
	} else {
		reply_error(&c->out, SERVER_ERR_FENCED);
	}
	reject(c, &c->stats->cmd[cmd->id]);
	return false;
}

int dispatch_key_shards(struct client *c, const struct command *cmd, unsigned *stack, unsigned **out)
{
	*out = NULL;
	if (!keyiter_locks(cmd))
		return 0;
	/* the common single-key row (GET, SET, INCR ...): what collect_shards
	 * gives for it, without the ranges and the sort */
	int only = keyiter_single(cmd, c->argc);
	if (only) {
		stack[0] = key_shard(c, only, true);
		*out = stack;
		return 1;
	}
	return collect_shards(c, cmd, stack, out);
}

/* dispatch_call with the command's clock already read: T0 is the
 * zr_clock_us() that c->now_ms came from (its duration starts there). */
static void call_from(struct client *c, const struct command *cmd, int64_t t0)
{
	struct server *srv = c->srv;
	struct worker_stats *ws = c->stats;
	struct cmd_stat *st = &ws->cmd[cmd->id];
	c->cmd = cmd;
	ws->error_mark = ws->error_events; /* Redis's incrCommandStatsOnError(NULL) */
	pubsub_command_begin(c);	   /* pub/sub: inline delivery to a subscribed publisher */
	/* persistence (persist.h): while a snapshot runs, a write's lookups
	 * keep pre-images; a command that changed the keyspace makes its
	 * record here (propagate.h), still inside the locked region, so
	 * records of one key are in execution order */
	struct store_write w;
	propagate_begin(c, cmd, STORE_WRITE_CLIENT, &w);
	cmd->handler(c);
	propagate_command(c, cmd, &w);
	propagate_end(c, cmd, &w);
	pubsub_command_end(c);
	c->clock_end_us = zr_clock_us();
	if (__builtin_expect(c->flags & CLIENT_REFUSED_BUSY, 0)) {
		c->flags &= ~CLIENT_REFUSED_BUSY; /* counted as rejected already */
		return;
	}
	int64_t dur = c->clock_end_us - t0;
	if (dur < 0) /* moved to a CPU whose TSC is behind (zr_clock_us) */
		dur = 0;

	STAT_INC(st, calls);
	STAT_ADD(st, usec, dur);
	/* an error since it started or since the last nested command ended
	 * (they count their own): this one failed */
	if (ws->error_events != ws->error_mark) {
		STAT_INC(st, failed_calls);
		ws->error_mark = ws->error_events;
	}
	STAT_INC(c->stats, commands_processed);
	atomic_store_explicit(&c->last_cmd, cmd, memory_order_relaxed);
	long long slower = atomic_load_explicit(&srv->cfg->slowlog_log_slower_than, memory_order_relaxed);
	/* EXEC is not logged, its commands are (Redis's skip_slowlog) */
	if (slower >= 0 && dur >= slower && !(cmd->flags & CMD_SKIP_SLOWLOG))
		slowlog_record(srv->slowlog, srv, c, dur);
	long long latency_ms =
		atomic_load_explicit(&srv->cfg->latency_monitor_threshold, memory_order_relaxed);
	/* in ms as Redis (duration / 1000 >= threshold): the threshold goes up
	 * to LLONG_MAX, so it is not multiplied */
	if (latency_ms > 0 && dur / 1000 >= latency_ms)
		latency_record_command(srv, cmd, dur);
}

void dispatch_call(struct client *c, const struct command *cmd)
{
	call_from(c, cmd, zr_clock_us());
}

/* -BUSY for CMD while a script is busy (Redis's processCommand). */
void dispatch_refuse_busy(struct client *c, const struct command *cmd)
{
	const char *why = script_busy_is_function() ? ERR_BUSY_FUNCTION : ERR_BUSY_SCRIPT;
	if ((cmd->flags & CMD_EXEC) && c->multi) {
		/* Redis's rejectCommand of EXEC: execCommandAbort */
		reply_errorf(&c->out, "EXECABORT Transaction discarded because of: %s", why);
		multi_client_free(c);
	} else {
		reply_error(&c->out, why);
	}
	reject(c, &c->stats->cmd[cmd->id]);
}

void dispatch_refuse_busy_here(struct client *c)
{
	dispatch_refuse_busy(c, c->cmd);
	c->flags |= CLIENT_REFUSED_BUSY;
}

/* Set while this thread serves its other clients from inside a wait for
 * a shard lock (wait_serving): a command so served that needs shard locks
 * (WATCH: the busy gate admits it) is paused, not run, as on the busy
 * script's own worker. This thread may hold the very lock it needs (a
 * set taken in order, a blocked client's key), and locks are not
 * recursive. */
static _Thread_local bool tl_serving_from_wait;

/* store.h's wait hook while client C's request runs (dispatch_wait_begin):
 * once a script has gone past busy-reply-threshold it may hold the lock
 * waited for as long as it runs, so C's worker serves its other clients
 * meanwhile (-BUSY to most: admit), as the script's own worker does from
 * the script's hook, and a walk that can give up does (its handler
 * answers -BUSY: dispatch_refuse_busy_here); any other wait goes on.
 * Called about once a millisecond while the wait lasts. */
static bool wait_serving(void *arg)
{
	struct client *c = arg;
	if (!script_any_busy())
		return false;
	if (c->srv->serve_others && !tl_serving_from_wait) {
		tl_serving_from_wait = true;
		c->srv->serve_others(c);
		tl_serving_from_wait = false;
	}
	return true; /* a walk gives up: -BUSY, as the dispatcher's own waits */
}

struct store_wait_hook dispatch_wait_begin(struct client *c)
{
	return store_set_wait_hook(wait_serving, c);
}

void dispatch_wait_end(struct store_wait_hook prev)
{
	store_set_wait_hook(prev.fn, prev.arg);
}

/* store_lock_*_unless's question while a shard lock is waited for: has a
 * script gone past busy-reply-threshold? It may be the holder, for as long
 * as it runs, and this worker must answer its clients -BUSY meanwhile as
 * Redis does, not wait it out. (A script's own commands and the clients
 * its hook serves never wait here: refused or paused before their locks.) */
static bool busy_gives_up(void *arg)
{
	(void)arg;
	return script_any_busy();
}

bool dispatch_lock_shards(struct client *c, const unsigned *shards, int nshards, bool all)
{
	struct store *st = c->srv->store;
	if (all && !store_lock_all_unless(st, busy_gives_up, NULL))
		return false;
	bool got = nshards == 1 ? store_lock_unless(st, shards[0], busy_gives_up, NULL)
				: store_lock_set_unless(st, shards, nshards, busy_gives_up, NULL);
	if (!got && all)
		store_unlock_all(st);
	return got;
}

/* The gates of a command before its locks (resolve, protected, auth,
 * cluster slot, pub/sub context, busy script, MULTI queueing, pause,
 * replicas, lease, OOM, disk): the row to run, with *T0 the clock its
 * duration starts from, or NULL when the command was answered (refused,
 * queued) or, *PAUSED, must wait. */
static const struct command *admit(struct client *c, int64_t *t0_out, bool *paused)
{
	*paused = false;
	struct server *srv = c->srv;
	bool chained = c->clock_chained;
	c->clock_chained = false;
	const struct command *cmd = resolve(c);
	if (!cmd)
		return NULL;
	/* as in Redis, before authentication: the setting is the server's,
	 * not the user's */
	if ((cmd->flags & CMD_PROTECTED) && !protected_allowed(c)) {
		reply_error(&c->out,
			    "ERR DEBUG command not allowed. If the enable-debug-command option is set "
			    "to \"local\", you can run it from a local connection, otherwise you "
			    "need to set this option in the configuration file, and then restart "
			    "the server.");
		reject(c, &c->stats->cmd[cmd->id]);
		return NULL;
	}
	if (!(c->flags & CLIENT_AUTHENTICATED) && !(cmd->flags & CMD_NOAUTH)) {
		if ((cmd->flags & CMD_EXEC)) {
			reply_error(
				&c->out,
				"EXECABORT Transaction discarded because of: NOAUTH Authentication required.");
			multi_client_free(c);
		} else {
			reply_error(&c->out, ERR_NOAUTH);
		}
		reject(c, &c->stats->cmd[cmd->id]);
		return NULL;
	}
	/* cluster mode: the slot's owner runs it (Redis checks it here, after
	 * auth and before the OOM, pub/sub context and MULTI gates) */
	if (srv->cluster && !cluster_route_ok(c, cmd))
		return NULL;
	/* pub/sub: an RESP2 subscriber may run only the (un)subscribe family,
	 * PING, QUIT and RESET */
	if (!pubsub_allowed(c, cmd)) {
		reject(c, &c->stats->cmd[cmd->id]);
		return NULL;
	}
	/* a script ran past busy-reply-threshold: on another worker, or on
	 * this one, whose script hook serves its other clients (script.h) */
	if (__builtin_expect(script_any_busy(), 0)) {
		if (!(cmd->flags & CMD_ALLOW_BUSY)) {
			dispatch_refuse_busy(c, cmd);
			return NULL;
		}
		/* WATCH reads its keys under their shard locks, which the
		 * script on this thread may hold: it waits, as a paused
		 * request, until the script has ended (on another worker it
		 * tries them, and waits the same way if the script holds one:
		 * run_command) */
		if (cmd->key_specs_num > 0 && (script_running_here() || tl_serving_from_wait)) {
			*paused = true;
			return NULL;
		}
	}
	/* one clock read: the TTL instant and the start of the duration;
	 * within a batch, the previous command's end (client.h) */
	int64_t t0 = chained ? c->clock_end_us : zr_clock_us();
	c->now_ms = zr_wall_ms_at(t0);
	if (c->multi && !(cmd->flags & CMD_MULTI_NOW)) {
		if ((cmd->flags & CMD_NOMULTI)) {
			reply_error(&c->out, "ERR Command not allowed inside a transaction");
			reject(c, &c->stats->cmd[cmd->id]);
			return NULL;
		}
		if (memory_ok(c, cmd, true, NULL) && disk_ok(c, cmd) && repl_ok(c, cmd) && lease_ok(c, cmd))
			multi_queue(c, cmd);
		return NULL;
	}
	if (paused_for(c, cmd)) {
		*paused = true;
		return NULL;
	}
	if (!repl_ok(c, cmd) || !lease_ok(c, cmd) || !memory_ok(c, cmd, false, &t0) || !disk_ok(c, cmd))
		return NULL;

	*t0_out = t0;
	return cmd;
}

static enum dispatch_result run_command(struct client *c)
{
	struct server *srv = c->srv;
	int64_t t0;
	bool paused;
	const struct command *cmd = admit(c, &t0, &paused);
	if (!cmd)
		return paused ? DISPATCH_PAUSED : DISPATCH_DONE;

	unsigned stack[DISPATCH_STACK_SHARDS];
	unsigned *shards;
	int nshards = dispatch_key_shards(c, cmd, stack, &shards);
	/* a whole-keyspace write (FLUSHALL, FLUSHDB, SWAPDB) holds every shard
	 * lock, as inside EXEC: run shard by shard, a write on another worker
	 * could land in a shard it had done while its record went to the
	 * stream before the whole-keyspace one, and a replay (the log, a
	 * replica) would put it on the other side */
	bool all = (cmd->flags & (CMD_WHOLEDB | CMD_WRITE)) == (CMD_WHOLEDB | CMD_WRITE);
	if ((all || nshards) && !dispatch_lock_shards(c, shards, nshards, all)) {
		/* a busy script holds one: refused as admit would now, or
		 * (WATCH) paused and tried again at the worker's next tick */
		if (shards && shards != stack)
			zr_free(shards);
		if (cmd->flags & CMD_ALLOW_BUSY)
			return DISPATCH_PAUSED;
		dispatch_refuse_busy(c, cmd);
		return DISPATCH_DONE;
	}
	/* CLIENT REPLY SKIP mutes exactly the command after it. */
	if (c->flags & CLIENT_REPLY_SKIP_NEXT) {
		c->flags &= ~CLIENT_REPLY_SKIP_NEXT;
		c->flags |= CLIENT_REPLY_SKIP;
	}
	c->out.muted = (c->flags & (CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP)) != 0;
	call_from(c, cmd, t0);
	if (nshards == 1)
		store_unlock(srv->store, shards[0]);
	else if (nshards)
		store_unlock_set(srv->store, shards, nshards);
	if (all)
		store_unlock_all(srv->store);
	if (shards && shards != stack)
		zr_free(shards);
	/* blocking.h: serve clients blocked on keys this command pushed to
	 * (after EXEC too), now that no shard lock is held; that time is
	 * neither this command's nor the next one's (clock_end_us) */
	if (!script_running_here() && blocking_serve_ready(srv))
		c->clock_end_us = zr_clock_us();

	if (c->flags & CLIENT_REPLY_SKIP)
		c->flags &= ~CLIENT_REPLY_SKIP;
	c->out.muted = (c->flags & CLIENT_REPLY_OFF) != 0;
	return DISPATCH_DONE;
}

enum dispatch_result dispatch_command(struct client *c)
{
	/* c->key_hash may come from the caller for this argv (cmd_key_hash);
	 * argv is reused by the next request, so it never outlives this one */
	struct store_wait_hook prev = dispatch_wait_begin(c);
	enum dispatch_result r = run_command(c);
	dispatch_wait_end(prev);
	c->key_hash_argv = NULL;
	return r;
}

const struct command *dispatch_admit(struct client *c, int64_t *t0, bool *paused)
{
	return admit(c, t0, paused);
}

void dispatch_run_locked(struct client *c, const struct command *cmd, int64_t t0)
{
	call_from(c, cmd, t0);
}

void dispatch_batch_end(struct client *c)
{
	if (!script_running_here() && blocking_serve_ready(c->srv))
		c->clock_end_us = zr_clock_us();
	c->key_hash_argv = NULL;
}
