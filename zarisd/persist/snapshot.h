/* snapshot — writes a point-in-time image of the keyspace to a file
 * without fork: store_snap_begin() fixes the instant (per-entry
 * copy-before-write, see store.h), then the shards are serialized one at a
 * time while writes continue. The file (journal/format.h format, magic
 * "ZARISSNP"): JR_SNAP_HEAD with the journal seq of the instant, one
 * JR_SNAP_FUNCTION per function library (snapshot_set_extra), one
 * JR_SNAP_STR / JR_SNAP_OBJ per key (non-string values as the commands
 * that rebuild them, from the type's rewrite op), JR_SNAP_END with the key
 * count. The bytes go to a sink (a write callback): the file sink
 * (snapshot_write) writes PATH.tmp, fsyncs it, renames it over PATH and
 * fsyncs the directory; a full resync will stream them to a socket.
 * Called from one thread at a time (persist's control lock).
 */
#ifndef ZR_SNAPSHOT_H
#define ZR_SNAPSHOT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct jbuf;
struct store;

/* Where a snapshot stands in the replication history: the id and offset
 * of the change stream at its instant (JR_SNAP_HEAD's tail, type
 * JR_TAIL_ORIGIN_ID / JR_TAIL_ORIGIN_OFFSET); a restart from it continues
 * that history (a replica resyncs partially). id "" = none. */
struct snapshot_origin {
	char id[41];
	uint64_t offset;
};

struct snapshot_result {
	uint64_t keys;
	uint64_t bytes;	      /* file size */
	uint64_t journal_seq; /* seq of the instant */
	uint64_t cow_peak;    /* most bytes of pre-images held during the save */
	uint64_t cow_entries; /* pre-images taken */
};

/* Where the bytes go: WRITE(CTX, P, N) takes all N bytes (in order: the
 * head right after the instant, then a shard's worth or up to about 1 MB at
 * a time) and returns 0 or -errno, which ends the snapshot. Called with no
 * shard lock held. */
struct snapshot_sink {
	int (*write)(void *ctx, const void *p, size_t n);
	void *ctx;
};

/* Writes the snapshot to SINK. AT_INSTANT(CTX, ORIGIN) runs with every
 * shard lock held, returns the journal seq of the instant and fills in
 * *ORIGIN (zeroed before; left so: none). PROGRESS (may be NULL)
 * counts keys written. KEY_DELAY (may be NULL) is rdb-key-save-delay, in
 * microseconds per key: after each shard, with no lock held, the writer
 * sleeps it once for each key of the shard, reading it again each time,
 * so that CONFIG SET reaches a snapshot that runs (Redis's fork child keeps
 * the value it started with); -N sleeps 1 us with a chance of 1 in N, as
 * Redis's debugDelay. Returns 0 (OUT filled, bytes = all written), -EBUSY
 * (a snapshot runs; nothing written) or the sink's -errno (a prefix of the
 * image went to it). */
typedef uint64_t (*snapshot_instant_fn)(void *ctx, struct snapshot_origin *origin);
/* State outside the keyspace that a snapshot holds (the function
 * libraries, persist/ knows no scripts): FN appends its frames (complete,
 * jr_frame_begin .. jr_frame_end) to OUT at the instant, with every shard
 * lock held, and the writer puts them after the head. main installs it
 * once before the first snapshot (commands/replay_apply.h); NULL: none. */
typedef void (*snapshot_extra_fn)(void *ctx, struct jbuf *out);
void snapshot_set_extra(snapshot_extra_fn fn, void *ctx);
int snapshot_write_sink(struct store *s, const struct snapshot_sink *sink, snapshot_instant_fn at_instant,
			void *ctx, _Atomic uint64_t *progress, const _Atomic int *key_delay,
			struct snapshot_result *out);

/* The file sink: snapshot_write_sink into PATH.tmp, fsynced, renamed over
 * PATH. Returns 0, -EBUSY or -errno of the I/O (logged; PATH untouched,
 * PATH.tmp removed). */
int snapshot_write(struct store *s, const char *path, snapshot_instant_fn at_instant, void *ctx,
		   _Atomic uint64_t *progress, const _Atomic int *key_delay, struct snapshot_result *out);

#endif
