/* load — start-up recovery and the data checker.
 *
 * Recovery: the snapshot (if any) is read whole and verified (header,
 * every frame's checksum, the end frame) before one key is inserted, then
 * inserted by several threads (each its own range of frames; strings go
 * straight into the store, other types through the command handlers, by
 * the applier main installed: load_set_apply). Then the journal segments
 * are replayed in order from the snapshot's seq + 1 by the replay state
 * machine (journal/replay.h), each record with the wall clock it first
 * ran with, and every touched key gets back the version it had. TTLs are
 * absolute: keys that expired while the server was down are dropped
 * (counted), but by a store in replica mode (a replica's full sync), which
 * never expires on its own.
 *
 * Errors: a truncated last frame of the last segment is trimmed (the file
 * is cut back to the last whole record, with a warning) when TRIM is set;
 * any other damage stops the load with an error naming file and offset,
 * and nothing is half-applied from a bad snapshot. Called before the
 * workers start, from the main thread.
 */
#ifndef ZR_LOAD_H
#define ZR_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/journal/replay.h"

struct store;

/* How the loader runs what it reads: persist/ knows no commands, so the
 * layer that does hands these in (commands/replay_apply.h). */
struct load_apply {
	void *ctx;
	/* an applier for one loading thread, and its end; OPEN_LINK's is a
	 * replica link's (it applies the records tagged for replicas and
	 * passes over those tagged for the log: journal/format.h
	 * JR_TAIL_DEST), OPEN's the log's (the other way round) */
	void *(*open)(void *ctx);
	void *(*open_link)(void *ctx);
	void (*close)(void *applier);
	/* a journal record (the replay's callback) */
	jr_apply_fn record;
	/* the one shard whose lock a record needs, or -1 (replay_apply.h
	 * replay_record_shard): a replica applies by shard in parallel */
	int (*record_shard)(void *applier, const struct jr_cmd *rec);
	/* a snapshot entry of a non-string type at wall clock NOW: 0,
	 * -ENOTSUP (ERR names the missing command) or -EINVAL */
	int (*object)(void *applier, const struct jr_snap_entry *e, int64_t now, char *err, size_t errlen);
	/* the function libraries of a snapshot: FUNCTIONS_FLUSH (CTX) drops
	 * the server's before a snapshot's are loaded (a replica's full sync
	 * replaces them), FUNCTION loads one JR_SNAP_FUNCTION's code: 0, or
	 * -errno with the reason in ERR */
	void (*functions_flush)(void *ctx);
	int (*function)(void *applier, const char *code, size_t len, char *err, size_t errlen);
	/* an applier's hook, run under a record's locks once it is applied
	 * (commands/replay_apply.h replay_applied_fn; a replica's link) */
	void (*set_hook)(void *applier, void (*fn)(void *ctx, const struct jr_cmd *rec), void *ctx);
};
struct entry;
struct jr_snap_entry;
/* Gives the entry *E just restored from snapshot entry K the metadata
 * K's tail carries (JR_TAIL_META), if any; *E may move. 0, or -EINVAL
 * (a malformed field) / -ENOMEM. The key's shard lock held. Any loader
 * thread (the non-string applier, commands/replay_apply.c, too). */
int load_entry_meta_locked(struct store *s, const struct jr_snap_entry *k, struct entry **e);

/* The table load_set_apply was given (a replica's link applies with it). */
const struct load_apply *load_get_apply(void);

/* main, once, before persist_init (copied). Loading without it fails on
 * the first record or non-string key. */
void load_set_apply(const struct load_apply *ops);

struct load_result {
	uint64_t keys_loaded;
	uint64_t keys_expired;
	uint64_t records;  /* journal records applied */
	uint64_t last_seq; /* last journal seq seen (snapshot's or replayed) */
	uint64_t trimmed;  /* bytes cut off a truncated tail */
	uint64_t snapshot_bytes;
	int64_t ms;
	/* the snapshot's replication origin (snapshot.h), origin_id "" when
	 * it has none */
	char origin_id[41];
	uint64_t origin_offset;
	/* load_journal: bytes of the records applied (frames, as in the change
	 * stream), and whether some segment's records could not be (a log
	 * turned on with no snapshot after it): the origin then does not
	 * hold */
	uint64_t replayed_bytes;
	bool history_broken;
};

/* Loads the snapshot at PATH with up to THREADS threads. Returns 0, -ENOENT
 * when there is no file, or a negative errno after writing the reason
 * (file and offset) to ERR. */
int load_snapshot(struct store *s, const char *path, unsigned threads, struct load_result *res, char *err,
		  size_t errlen);
/* Replays the segments NAME.*.zj of DIR after RES->last_seq. TRIM: cut a
 * truncated tail (aof-load-truncated yes), else it is an error. */
int load_journal(const char *dir, const char *name, bool trim, struct load_result *res, char *err,
		 size_t errlen);

/* zarisd --check-data DIR [--fix]: checks every snapshot and journal file
 * in DIR and its subdirectories; prints one line per file to stdout. With
 * FIX, cuts a damaged journal file back to its last good record (what
 * follows the damage is lost, as with redis-check-aof --fix). Returns the
 * process exit code: 0 all good (or fixed), 1 damage left. */
int load_check_data(const char *dir, bool fix);

#endif
