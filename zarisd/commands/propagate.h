/* propagate — the one place a command's journal record is made (Redis's
 * propagate): after a handler changed the keyspace, its record goes to the
 * change stream (journal/stream.h), always, whether or not anything
 * consumes the stream. The record is the command's argv, or for a row
 * flagged CMD_RANDOM_EFFECT (SPOP) its effect, the commands that rebuild
 * the key; it carries the version each named key has afterwards, so a
 * replay restores them. The commands EXEC runs are records of one
 * transaction, closed by a JR_COMMIT when EXEC ends. A script's writes
 * after redis.set_repl are tagged for the log or the replicas only
 * (CLIENT_JOURNAL_*_ONLY, JR_TAIL_DEST) or make no record (REPL_NONE:
 * CLIENT_NO_JOURNAL).
 *
 * Threads: the dispatcher's, with the command's shard locks (and, for a
 * whole-keyspace write, persist's gate) still held, so the records of one
 * key are in execution order and on one side of a snapshot's instant.
 */
#ifndef ZR_PROPAGATE_H
#define ZR_PROPAGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/store/write.h"

struct client;
struct command;
struct server;

/* main, once the data is loaded (a replayed expiry is no new record) and
 * before the workers start: installs the store's deletion hook, which
 * makes a DEL record of every expiry and eviction. STOP removes it, after
 * the workers stopped and before the final save. */
void propagate_start(struct server *srv);
void propagate_stop(struct server *srv);

/* The dispatcher (and the replay applier), around each handler, shard
 * locks held: BEGIN opens the command's write bracket W (store/write.h:
 * ORIGIN, the command's name, write intent from its flags — snapshot
 * pre-images —, its clock), takes persistence's gate for a whole-keyspace
 * write and opens an EXEC's or a script's transaction (expiries met until
 * it ends are its records); END counts the command's changes
 * (persist_count_changes), releases the gate and closes W. W is the
 * caller's (on its stack) from BEGIN to END. The replay applier calls
 * BEGIN and END only: a replayed record is no new record. */
void propagate_begin(struct client *c, const struct command *cmd, enum store_write_origin origin,
		     struct store_write *w);
void propagate_end(struct client *c, const struct command *cmd, struct store_write *w);

/* After CMD's handler ran for C inside bracket W (every command: it also
 * ends an EXEC that propagate_begin began): when the command changed the
 * keyspace (W counted a change, or propagate_mark_change), its record is
 * appended to c->srv->stream (none in unit tests: nothing is done) and,
 * when the append-only log will write it, c->journal_seq raised so the
 * reply waits until it is durable. */
void propagate_command(struct client *c, const struct command *cmd, struct store_write *w);
/* The running command changed server state outside the keyspace (FUNCTION
 * LOAD, DELETE, FLUSH, RESTORE): its argv is its record, as if it had
 * written a key, and it counts one change (Redis's server.dirty++). The
 * handler calls it, inside its bracket, after the change. */
void propagate_mark_change(void);
/* A served blocking pop (commands/blocking.c), its locks still held: the
 * record of the command ARGV[0..ARGC) that repeats it (LPOP, LMOVE,
 * ZPOPMIN ...) in DB at NOW_MS, with the versions of its NKEYS keys
 * (argv[1..]). Returns its seq (0: no stream, or a replica's, which
 * journals nothing of its own) and *HELD as stream_append. */
uint64_t propagate_effect(struct server *srv, unsigned db, int64_t now_ms, int argc, const char *const *argv,
			  const size_t *lens, int nkeys, bool *held);
/* Frees the calling thread's record buffer; a worker calls it as it
 * exits. */
void propagate_thread_exit(void);

#endif
