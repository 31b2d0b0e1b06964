/* dispatch — runs one parsed command for a client: lookup, arity, auth,
 * pause and OOM gates, shard locking from the row's key spec, the handler,
 * per-command stats and the slow log. Called by the owning worker only.
 */
#ifndef ZR_DISPATCH_H
#define ZR_DISPATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "zarisd/store/store.h"

struct client;
struct server;
struct worker_stats;
struct command;
struct obuf;

enum dispatch_result {
	DISPATCH_DONE = 0,   /* the command ran (or was refused with an error reply) */
	DISPATCH_PAUSED = 1, /* CLIENT PAUSE holds it: call again later with the same argv */
};

/* Runs c->argv[0..argc). The reply is appended to c->out. A caller that
 * has already hashed argv[i] (store_hash) may pass it in c->key_hash with
 * key_hash_argv = argv and key_hash_argi = i; it is cleared on return. */
enum dispatch_result dispatch_command(struct client *c);

/* Prepares a newly accepted client: id, flags, protocol 2, db 0, and
 * authentication state from requirepass. */
void dispatch_client_init(struct client *c, struct server *srv, unsigned worker, struct worker_stats *ws);

/* Runs CMD (resolved, gates passed) for c->argv with the caller holding
 * the shard locks of its keys: the handler, per-command stats, slow log.
 * EXEC uses it for each queued command. */
void dispatch_call(struct client *c, const struct command *cmd);

/* The ascending, duplicate-free shard indexes of CMD's keys in c->argv;
 * STACK (DISPATCH_STACK_SHARDS entries) is used when it is big enough, else
 * *OUT is a heap array the caller frees. Returns the count (0 for keyless
 * and whole-keyspace rows). */
#define DISPATCH_STACK_SHARDS 32
int dispatch_key_shards(struct client *c, const struct command *cmd, unsigned *stack, unsigned **out);

/* Error statistics (Redis's afterErrorReply; INFO stats
 * total_error_replies, errorstats, commandstats failed_calls). Every error
 * reply written to a client's obuf is counted by the hook
 * dispatch_client_init sets (reply.h on_error) on the client's worker; a
 * command that ran and answered an error, counted or reply_error_nostats,
 * after it started or after the last command nested in it (EXEC's, a
 * script's) ended gets failed_calls, as Redis's prev_err_count has it.
 * These are for errors that reach a client without passing through its
 * obuf's hook. Owning worker only. */

/* Counts the error replies in REPLY (an obuf without hook whose bytes C
 * got: a blocked command's reply served on another worker), by its
 * last_error, and, when there are any, failed_calls of CMD (may be NULL):
 * Redis's updateStatsOnUnblock. */
void dispatch_count_served_errors(struct client *c, const struct command *cmd, const struct obuf *reply);
/* failed_calls of CMD (may be NULL) once more: a blocked command ended by
 * CLIENT UNBLOCK (Redis 7.0 counts it failed, TIMEOUT or ERROR). */
void dispatch_count_failed(struct client *c, const struct command *cmd);
/* The command C runs counts as failed (without an error reply of its
 * own): Redis counts CLIENT UNBLOCK ... ERROR failed, the target's error
 * having been counted while it ran. */
void dispatch_count_failed_here(struct client *c);
/* A command a script called was refused before running, with ERR (Redis's
 * text: with its "-CODE" or without, then ERR) and no reply written: one
 * error reply of C and CMD's rejected_calls (CMD NULL when the name was
 * not found), as Redis's scriptCall. */
void dispatch_count_script_rejection(struct client *c, const struct command *cmd, const char *err);

/* The client is going away (its connection closes): every module that
 * keeps state about it (subscriptions, blocked keys, watched keys) drops
 * it here. Owning worker only, before the client's memory is freed. */
void dispatch_client_free(struct client *c);

/* Batches that take each shard lock once (the native protocol's RF1
 * mode): dispatch_command in three parts. dispatch_admit applies every
 * gate dispatch_command applies before it locks (auth, cluster slot, busy
 * script, pause, OOM with its eviction ...) to c->argv: NULL when the
 * command was answered (refused) or, *PAUSED, must wait (nothing
 * written); else its row and *T0, its clock. The caller then takes the
 * lock of the row's one shard (dispatch_key_shards) and runs it with
 * dispatch_run_locked (handler, journal, stats), any number of commands
 * of that shard under one lock, and after the batch, no lock held,
 * calls dispatch_batch_end (serves clients blocked on keys the batch
 * pushed to). Only for rows whose keys are in one shard and that are
 * not whole-keyspace writes; never inside MULTI. */
const struct command *dispatch_admit(struct client *c, int64_t *t0, bool *paused);
/* The shard locks of a command (sorted SHARDS, and with ALL every one
 * first, for a whole-keyspace write), given up when a script goes past
 * busy-reply-threshold while one is waited for (the script may hold it
 * for as long as it runs): false then, nothing held, and the caller
 * answers with dispatch_refuse_busy (or, WATCH, pauses). Released with
 * store_unlock / store_unlock_set, and store_unlock_all when ALL. */
bool dispatch_lock_shards(struct client *c, const unsigned *shards, int nshards, bool all);
/* -BUSY (the script's or the function's text) for CMD, counted as a
 * rejected call; inside MULTI it dooms the transaction, and EXEC itself
 * discards it with EXECABORT (as Redis). */
void dispatch_refuse_busy(struct client *c, const struct command *cmd);
/* From the handler of the command C runs, which wrote nothing (or took
 * it back) and changed nothing: a wait for a shard lock was given up (a
 * store walk's -EBUSY). Answers as dispatch_refuse_busy, and the command
 * counts as rejected, not as a call, as if the dispatcher had refused it. */
void dispatch_refuse_busy_here(struct client *c);
void dispatch_run_locked(struct client *c, const struct command *cmd, int64_t t0);
void dispatch_batch_end(struct client *c);
/* Until dispatch_wait_end(the hook returned), a wait of this thread for a
 * shard lock that another thread holds serves C's worker's other clients
 * once a script has gone past busy-reply-threshold (-BUSY to most, as the
 * script's own worker serves them), and the wait goes on: the store's
 * wait hook (store.h), which dispatch_command sets around every command,
 * for a request that takes shard locks outside it (the RF1 batch). */
struct store_wait_hook dispatch_wait_begin(struct client *c);
void dispatch_wait_end(struct store_wait_hook prev);

#endif
