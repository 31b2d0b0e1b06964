/* aof — the append-only log: a consumer of the change stream
 * (journal/stream.h), whose records it writes and fsyncs from one writer
 * thread (group commit: one fsync covers every record appended before it,
 * from every worker), in segment files of the journal directory. The
 * stream numbers the records, gates transactions and applies the
 * back-pressure; the log writes what its cursor reads.
 *
 * Files: <dir>/<appenddirname>/<appendfilename>.<start seq, 20 digits>.zj,
 * each a journal file (journal/format.h) opening with a JR_SEGMENT frame. A
 * snapshot taken at journal seq J ends the current segment: records > J
 * go to a new segment starting at J + 1, so once the snapshot is on disk
 * every older segment is deleted (that is the rewrite / compaction).
 *
 * Durability (what the durable callback is told, after the I/O; the
 * server publishes it as journal_durable and wakes the workers whose
 * replies wait for it): under appendfsync always,
 * records fsynced; under everysec and no, records written to the kernel
 * (they survive a crash of the process; everysec fsyncs once a second, no
 * leaves it to the kernel).
 *
 * Transactions: the stream shows the writer nothing of an EXEC before
 * its JR_COMMIT, so a crash never leaves half a transaction in the file.
 *
 * Back-pressure: the stream's (STREAM_BUFFER_LIMIT): while the log runs it
 * is the slowest consumer, so on a disk slower than the write load the
 * workers' appends wait until the writer has taken the buffer; the
 * writer's own batch in flight is at most one more such buffer, so the
 * log holds at most about 2 x AOF_BUFFER_LIMIT. INFO shows
 * aof_buffer_length, _peak, _limit and _waits.
 *
 * Threads: the writer thread does all I/O; the others from the persistence
 * control paths (one at a time, under persist's control lock).
 */
#ifndef ZR_AOF_H
#define ZR_AOF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/journal/format.h"
#include "zarisd/journal/stream.h"

struct aof;

#define AOF_BUFFER_LIMIT STREAM_BUFFER_LIMIT /* bytes: see back-pressure above */

/* Told SEQ once every record up to it is durable (see above); from the
 * writer thread or the control path, never under a lock of the log's. */
typedef void (*aof_durable_fn)(void *ctx, uint64_t seq);

enum aof_fsync {
	AOF_FSYNC_ALWAYS = 0,
	AOF_FSYNC_EVERYSEC = 1,
	AOF_FSYNC_NO = 2,
};

struct aof_stats {
	uint64_t current_size;	/* bytes of every live segment */
	uint64_t written_seq;	/* last seq handed to the kernel */
	uint64_t synced_seq;	/* last seq fsynced */
	uint64_t pending_bytes; /* appended, not yet written */
	uint64_t fsyncs;	/* group fsyncs done */
	uint64_t records;	/* records appended since start */
	int last_write_errno;	/* 0 when the last write/fsync worked */
	int64_t delayed_fsync;	/* everysec fsyncs that took over 2 s */
	uint64_t buffer_limit;	/* the back-pressure bound now */
	uint64_t buffer_peak;	/* most bytes the buffer held since start */
	uint64_t buffer_waits;	/* appends that had to wait for room */
};

/* Creates the log state (not started) for STREAM (borrowed; outlives the
 * log), telling DURABLE(CTX, seq) what is durable. DIR_PATH: the journal
 * directory (created by aof_start). NAME: the segment name prefix. */
struct aof *aof_create(struct stream *stream, aof_durable_fn durable, void *ctx, const char *dir_path,
		       const char *name);
void aof_destroy(struct aof *a);

/* Opens the writer's cursor at the stream's end and a new segment
 * starting at the next seq (FRESH: JR_SEG_FRESH), and starts the writer
 * thread. Returns 0 or -errno (nothing started). */
int aof_start(struct aof *a, enum aof_fsync mode, bool fresh);
/* Writes and fsyncs what was appended (an open transaction's records
 * too), stops the writer, closes the segment and its cursor. Records
 * appended later are not the log's. */
void aof_stop(struct aof *a);
bool aof_running(struct aof *a);
/* Shutdown with workers still running a command: writes and fsyncs what
 * is committed (an open transaction's records stay out), stops the writer
 * and closes the segment; from now on every append and commit waits for
 * the end of the process, so nothing later is acknowledged. */
void aof_freeze(struct aof *a);
void aof_set_fsync(struct aof *a, enum aof_fsync mode);

/* The snapshot's instant (called with every shard lock held): returns the
 * stream's last seq and, when running, makes the writer start a new segment at
 * the next one — in NEW_DIR when it is not NULL and not the log's
 * directory (the log moves there: CONFIG SET dir; stale segments there
 * are removed and the new segment is marked fresh). */
uint64_t aof_cut(struct aof *a, const char *new_dir);
/* Sets the directory of a stopped log (the next aof_start opens there). */
void aof_set_dir(struct aof *a, const char *dir);
/* Test hooks (DEBUG JOURNAL-STALL): the writer sleeps STALL_MS before its
 * next write; LIMIT (> 0) replaces the stream's back-pressure bound. */
void aof_debug(struct aof *a, int64_t stall_ms, size_t limit);
/* Waits (bounded) until the segment of the last aof_cut is open; then
 * deletes every segment that starts at or before SEQ. Returns 0 or -errno. */
int aof_drop_before(struct aof *a, uint64_t seq);

void aof_stats(struct aof *a, struct aof_stats *out);
/* The errno of the last failed write or fsync, 0 once one works again
 * (cheap: one relaxed load). */
int aof_write_errno(const struct aof *a);

/* Segment files of DIR_PATH named NAME.*.zj, sorted by start seq. *OUT
 * (zr_malloc'ed paths, freed with aof_list_free) and the count; -errno. */
int aof_list(const char *dir_path, const char *name, char ***out, uint64_t **starts);
void aof_list_free(char **paths, uint64_t *starts, int n);
/* Removes every segment of DIR_PATH named NAME (appendonly turned on at
 * run time: old segments were not loaded and are stale). */
void aof_remove_all(const char *dir_path, const char *name);

#endif
