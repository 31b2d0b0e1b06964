/* multi — transactions (MULTI/EXEC/DISCARD) and optimistic locking
 * (WATCH/UNWATCH) for one client.
 *
 * Between MULTI and EXEC a client's commands are checked (lookup, arity,
 * auth, OOM) and queued with copies of their arguments; a rejected one
 * dooms the transaction (EXECABORT). EXEC takes the shard locks of every
 * key of every queued command and of every watched key at once (ascending,
 * or all shards when a queued command walks the whole keyspace), checks the
 * watched keys, then runs the commands back to back: no other worker sees
 * a state in between.
 *
 * WATCH records each key's entry version (the store's per-entry
 * replication clock; 0 = absent). EXEC aborts when any watched key's
 * version differs — a write on any worker, a deletion, an expiry or a
 * flush all change it. Owning worker only; the state is allocated on first
 * use (a client that never uses MULTI or WATCH pays one NULL pointer each).
 */
#ifndef ZR_MULTI_H
#define ZR_MULTI_H

#include <stdbool.h>
#include <stdint.h>

struct client;
struct command;
struct resp_arg;

/* Queues c->argv as CMD (copying the arguments) and replies +QUEUED. */
void multi_queue(struct client *c, const struct command *cmd);
/* Whether C's queued commands include a write (EXEC then counts as one
 * for the checks that refuse writes, as in Redis). */
bool multi_has_writes(const struct client *c);
/* The flags (enum cmd_flag) of every command C has queued, OR-ed; 0
 * outside MULTI. EXEC counts as each of them for the OOM gate. */
uint32_t multi_queued_flags(const struct client *c);
/* How many commands C has queued (0 outside MULTI), and the I-th of them:
 * its row, and its arguments (*ARGV, *ARGC, owned by the queue). For the
 * cluster check of EXEC, which routes the whole transaction by its keys. */
int multi_queued_count(const struct client *c);
const struct command *multi_queued_at(const struct client *c, int i, const struct resp_arg **argv, int *argc);
/* A queued command was rejected: EXEC will answer EXECABORT. */
void multi_flag_error(struct client *c);
/* Drops the transaction and the watched keys (disconnect, RESET). */
void multi_client_free(struct client *c);

#endif
