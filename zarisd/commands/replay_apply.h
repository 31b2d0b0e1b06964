/* replay_apply — how replayed journal records and snapshot entries run:
 * through the dispatcher's locked path, as a client's command would (the
 * shard locks of the command table's keys, the persistence hooks around
 * the handler: a running snapshot's pre-images, the change count), by a
 * private client that replies to nobody. No gates (a record was accepted
 * when it first ran), no stats, no slow log (it is not a client's
 * command). persist/ and journal/ know no commands: they get these as
 * callbacks (journal/replay.h jr_apply_fn, persist/load.h).
 *
 * An applier is used by one thread at a time; the snapshot loader opens
 * one per loading thread.
 */
#ifndef ZR_REPLAY_APPLY_H
#define ZR_REPLAY_APPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/journal/format.h"

struct server;
struct replay_applier;

/* A new applier for SRV (borrowed; it outlives the applier): the log's
 * replay's, or (LINK) a replica link's. A record tagged for one kind of
 * consumer (JR_TAIL_DEST, a script's redis.set_repl) is applied by that
 * kind only: a link's applier passes over the records only the log
 * replays, the log's over those only replicas apply, and both over those
 * a replica's stream says nobody applies (JR_DEST_NONE: a replica's copy
 * of a log-only record); a record passed over still goes to the hook
 * (below), so it keeps its place in the replica's stream. */
struct replay_applier *replay_applier_new(struct server *srv, bool link);
void replay_applier_free(struct replay_applier *ra);

/* Called with REC (applied, its versions not yet restored) while its
 * shard locks and the persistence gate are still held: a replica puts
 * the record in its own stream there, so a snapshot's instant sees the
 * record applied and in the stream or neither (repl/). */
typedef void (*replay_applied_fn)(void *ctx, const struct jr_cmd *rec);
void replay_applier_set_hook(struct replay_applier *ra, replay_applied_fn fn, void *ctx);

/* jr_apply_fn: runs the commands of REC in its database with its wall
 * clock, all under the shard locks of their keys (every shard lock when
 * a record of several commands has a whole-keyspace one), then gives each
 * key of the record's versions back its version. Returns 0, -ERANGE
 * (database out of range), -ENOTSUP (unknown command) or -EINVAL
 * (malformed), the reason in ERR. A command answering an error is not a
 * failure (it failed when it first ran too). RA is a replay_applier. */
int replay_apply_record(void *ra, const struct jr_cmd *rec, char *err, size_t errlen);

/* The one shard whose lock REC needs (its commands' keys and versioned
 * keys all in it), or -1: several shards, a whole-keyspace or keyless
 * command, a record RA passes over, or a record replay_apply_record would
 * refuse. A replica applies
 * records of one shard on that shard's thread, the others alone (repl/).
 * RA is a replay_applier. */
int replay_record_shard(void *ra, const struct jr_cmd *rec);

/* Rebuilds the snapshot entry E of a non-string type at wall clock NOW:
 * its commands under its key's shard lock, then its expiry and version.
 * Returns 0, -ENOTSUP (a command this zarisd lacks: its name in ERR) or
 * -EINVAL (a command failed or left no key). */
int replay_apply_object(void *ra, const struct jr_snap_entry *e, int64_t now, char *err, size_t errlen);

/* main, before persist_init: hands these to the loader (load_set_apply)
 * for SRV, and the snapshot writer the function libraries
 * (snapshot_set_extra: a JR_SNAP_FUNCTION frame each). */
void replay_apply_install(struct server *srv);

#endif
