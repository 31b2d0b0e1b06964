/* dispatch — see dispatch.h. The order of the gates is Redis 7's
 * processCommand(): lookup (unknown command / subcommand), arity, auth,
 * OOM, pause; then the keys' shard locks, the handler, stats. */
#include "zarisd/commands/dispatch.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/commands/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/info.h"
#include "zarisd/commands/latency.h"
#include "zarisd/commands/multi.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/commands/server.h"
#include "zarisd/commands/settings.h"
#include "zarisd/commands/slowlog.h"
#include "zarisd/commands/stats.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/persist.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"

void dispatch_client_init(struct client *c, struct server *srv, unsigned worker, struct worker_stats *ws)
{
	memset(c, 0, sizeof(*c));
	c->srv = srv;
	c->worker = worker;
	c->stats = ws;
	obuf_init(&c->out);
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
	blocking_client_gone(c); /* blocking.h: leave the key queues */
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

/* Collects the shard indexes of the row's keys; returns the count. *HEAP
 * is set when the stack array was too small (caller frees). */
static int collect_shards(struct client *c, const struct command *cmd, unsigned *stack, unsigned **out)
{
	int last = cmd->last_key < 0 ? c->argc + cmd->last_key : cmd->last_key;
	if (last >= c->argc)
		last = c->argc - 1;
	int step = cmd->key_step > 0 ? cmd->key_step : 1;
	int n = last >= cmd->first_key ? (last - cmd->first_key) / step + 1 : 0;
	unsigned *shards = n <= DISPATCH_STACK_SHARDS ? stack : zr_malloc(sizeof(unsigned) * (size_t)n);
	int k = 0;
	for (int i = cmd->first_key; i <= last; i += step) {
		uint64_t h = store_hash(c->argv[i].ptr, c->argv[i].len);
		if (i == cmd->first_key) {
			/* the handler's lookup of its first key reuses it */
			c->key_hash = h;
			c->key_hash_argv = c->argv;
			c->key_hash_argi = i;
		}
		shards[k++] = store_shard_of_hash(c->srv->store, h);
	}
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

/* Finds the row for c->argv (subcommand rows for containers) and checks
 * arity. NULL after replying the error. */
static const struct command *resolve(struct client *c)
{
	const struct command *cmd = command_lookup(c->argv[0].ptr, c->argv[0].len);
	c->cmd = NULL;
	if (!cmd) {
		reply_unknown_command(c);
		reject(c, NULL);
		return NULL;
	}
	if ((cmd->flags & CMD_CONTAINER) && !(c->argc == 1 && cmd->handler)) {
		if (c->argc < 2) {
			c->cmd = cmd;
			cmd_reply_arity(c);
			reject(c, NULL);
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
	if (!arity_ok(cmd, c->argc) || !cmd->handler) {
		if (!cmd->handler) {
			reply_unknown_command(c);
		} else if (cmd->handler == cmd_exec) {
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

/* Evicts when over maxmemory; false after replying -OOM to a command that
 * may grow memory. */
static bool memory_ok(struct client *c, const struct command *cmd)
{
	struct server *srv = c->srv;
	long long maxmemory = atomic_load_explicit(&srv->cfg->maxmemory, memory_order_relaxed);
	if (maxmemory <= 0 || !(cmd->flags & (CMD_WRITE | CMD_DENYOOM)))
		return true;
	int policy = atomic_load_explicit(&srv->cfg->maxmemory_policy, memory_order_relaxed);
	int r = store_evict(srv->store, (size_t)maxmemory, (enum store_evict_policy)policy, c->now_ms);
	if (r == -ENOMEM && (cmd->flags & CMD_DENYOOM)) {
		reply_error(&c->out, ERR_OOM);
		reject(c, &c->stats->cmd[cmd->id]);
		return false;
	}
	return true;
}

int dispatch_key_shards(struct client *c, const struct command *cmd, unsigned *stack, unsigned **out)
{
	*out = NULL;
	if (cmd->first_key <= 0 || (cmd->flags & (CMD_KEYLESS | CMD_WHOLEDB)))
		return 0;
	return collect_shards(c, cmd, stack, out);
}

void dispatch_call(struct client *c, const struct command *cmd)
{
	struct server *srv = c->srv;
	struct cmd_stat *st = &c->stats->cmd[cmd->id];
	c->cmd = cmd;
	uint64_t errors_before = c->out.errors;
	int64_t t0 = zr_mono_us();
	pubsub_command_begin(c); /* pub/sub: inline delivery to a subscribed publisher */
	/* persistence (persist.h): while a snapshot runs, a write's lookups
	 * keep pre-images; a command that changed the keyspace is journaled
	 * here, still inside the locked region, so records of one key are in
	 * execution order */
	uint64_t persist_token = persist_command_begin(c, cmd);
	cmd->handler(c);
	persist_command_end(c, cmd, persist_token);
	pubsub_command_end(c);
	int64_t dur = zr_mono_us() - t0;

	STAT_INC(st, calls);
	STAT_ADD(st, usec, dur);
	if (c->out.errors != errors_before) {
		STAT_INC(st, failed_calls);
		info_count_error(c->out.last_error, strlen(c->out.last_error));
	}
	STAT_INC(c->stats, commands_processed);
	atomic_store_explicit(&c->last_cmd, cmd, memory_order_relaxed);
	long long slower = atomic_load_explicit(&srv->cfg->slowlog_log_slower_than, memory_order_relaxed);
	if (slower >= 0 && dur >= slower)
		slowlog_record(srv->slowlog, srv, c, dur);
	long long latency_ms =
		atomic_load_explicit(&srv->cfg->latency_monitor_threshold, memory_order_relaxed);
	if (latency_ms > 0 && dur >= latency_ms * 1000)
		latency_record_command(srv, cmd, dur);
}

enum dispatch_result dispatch_command(struct client *c)
{
	struct server *srv = c->srv;
	c->key_hash_argv = NULL; /* argv is reused by the next request */
	const struct command *cmd = resolve(c);
	if (!cmd)
		return DISPATCH_DONE;
	if (!(c->flags & CLIENT_AUTHENTICATED) && !(cmd->flags & CMD_NOAUTH)) {
		if (cmd->handler == cmd_exec) {
			reply_error(
				&c->out,
				"EXECABORT Transaction discarded because of: NOAUTH Authentication required.");
			multi_client_free(c);
		} else {
			reply_error(&c->out, ERR_NOAUTH);
		}
		reject(c, &c->stats->cmd[cmd->id]);
		return DISPATCH_DONE;
	}
	/* pub/sub: an RESP2 subscriber may run only the (un)subscribe family,
	 * PING, QUIT and RESET */
	if (!pubsub_allowed(c, cmd)) {
		reject(c, &c->stats->cmd[cmd->id]);
		return DISPATCH_DONE;
	}
	c->now_ms = zr_time_ms();
	if (c->multi && !multi_runs_now(cmd)) {
		if ((cmd->flags & CMD_NOMULTI)) {
			reply_error(&c->out, "ERR Command not allowed inside a transaction");
			reject(c, &c->stats->cmd[cmd->id]);
			return DISPATCH_DONE;
		}
		if (memory_ok(c, cmd))
			multi_queue(c, cmd);
		return DISPATCH_DONE;
	}
	if (paused_for(c, cmd))
		return DISPATCH_PAUSED;
	if (!memory_ok(c, cmd))
		return DISPATCH_DONE;

	/* CLIENT REPLY SKIP mutes exactly the command after it. */
	if (c->flags & CLIENT_REPLY_SKIP_NEXT) {
		c->flags &= ~CLIENT_REPLY_SKIP_NEXT;
		c->flags |= CLIENT_REPLY_SKIP;
	}
	c->out.muted = (c->flags & (CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP)) != 0;

	unsigned stack[DISPATCH_STACK_SHARDS];
	unsigned *shards;
	int nshards = dispatch_key_shards(c, cmd, stack, &shards);
	if (nshards)
		store_lock_set(srv->store, shards, nshards);
	dispatch_call(c, cmd);
	if (nshards)
		store_unlock_set(srv->store, shards, nshards);
	if (shards && shards != stack)
		zr_free(shards);
	/* blocking.h: serve clients blocked on keys this command pushed to
	 * (after EXEC too), now that no shard lock is held */
	blocking_serve_ready(srv);

	if (c->flags & CLIENT_REPLY_SKIP)
		c->flags &= ~CLIENT_REPLY_SKIP;
	c->out.muted = (c->flags & CLIENT_REPLY_OFF) != 0;
	return DISPATCH_DONE;
}
