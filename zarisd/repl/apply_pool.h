/* repl/apply_pool — a replica applies its primary's records in parallel,
 * by shard (repl/replica.c builds the batches).
 *
 * The link thread adds a run of records, each of one shard (its key's
 * lock is the only one it takes: load_apply.record_shard), to a batch;
 * apply_pool_run then applies the batch on every thread of the pool at
 * once: the records of one partition (shard mod threads) on one thread,
 * in their order, so each key's records apply in the primary's order; a
 * record of several shards, of the whole keyspace or of a transaction is
 * never in a batch (the link applies it alone, after the batch). Once all
 * are applied, the records go to the replica's own stream in seq order
 * (the APPEND callback), so the stream, its offsets and seqs stay the
 * primary's.
 *
 * What a reader on the replica may see: while a batch runs (the records
 * one socket read brought, milliseconds), a later record of one shard
 * before an earlier one of another (Dragonfly's replicas do the same);
 * never a key's records out of order, never part of a record (the
 * commands of one record apply together under its lock). The caller holds the whole-keyspace gate (persist_gate_enter)
 * around apply_pool_run, so a snapshot's instant, which takes that gate
 * for writing, sees every record of a batch applied and in the stream, or
 * none.
 *
 * A pool belongs to one link thread, which calls everything here; the
 * pool's own threads only apply.
 */
#ifndef ZR_REPL_APPLY_POOL_H
#define ZR_REPL_APPLY_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/journal/format.h"

struct load_apply;
struct apply_pool;

/* A pool of THREADS appliers (THREADS - 1 threads of its own; the caller
 * of apply_pool_run is the last), opened with OPS (borrowed; it outlives
 * the pool). NULL when THREADS < 2 or a thread could not start (logged):
 * the link then applies every record itself. */
struct apply_pool *apply_pool_new(const struct load_apply *ops, unsigned threads);
/* Stops its threads and frees it with the batch (not applied). */
void apply_pool_free(struct apply_pool *p);

/* Copies REC (a JR_CMD of SHARD) into the batch. */
void apply_pool_add(struct apply_pool *p, const struct jr_cmd *rec, unsigned shard);
/* Records in the batch. */
size_t apply_pool_pending(const struct apply_pool *p);
/* Whether the batch is as large as a batch gets (run it now). */
bool apply_pool_full(const struct apply_pool *p);
/* Forgets the batch, not applied (the link was cut before it ran: the
 * primary sends it again). */
void apply_pool_discard(struct apply_pool *p);

/* Puts FRAME (LEN bytes: the frame header, its checksum left 0 for the
 * stream to seal, then the payload) of record SEQ into the replica's
 * stream. 0 or -errno. */
typedef int (*apply_pool_append_fn)(void *ctx, const unsigned char *frame, size_t len, uint64_t seq);

/* Applies the batch, then APPEND(CTX)s its records in seq order, and
 * empties it. Returns 0; or -errno when a record could not be applied
 * (ERR says which seq and why; the records before it went to the stream,
 * while others after it may have been applied: the replica's data no
 * longer follow its stream, and only a full sync mends that) or when
 * APPEND failed (its error; the records from that one on are applied
 * and not in the stream, the same). */
int apply_pool_run(struct apply_pool *p, apply_pool_append_fn append, void *ctx, char *err, size_t errlen);

#endif
