/* journal/replay — the one replay state machine: journal frames in, each
 * record applied, held or refused. The loader feeds it the records of the
 * log segments (after a snapshot); a replica link and a slot-migration
 * target will feed it the bytes of a stream in whatever chunks they
 * arrive (jr_replay_feed).
 *
 * Each record frame (JR_CMD, JR_COMMIT) is classified:
 *   skipped  its seq is at or below the point the replay starts from (it
 *            is in the snapshot already);
 *   applied  the next seq, and no transaction is open: the apply callback
 *            runs it (after full decoding, jr_parse_cmd);
 *   held     the next seq while a transaction is open (from its first
 *            record to its JR_COMMIT, with every other record after that
 *            first one, so the order of application is the order of the
 *            stream): copied, applied in order when the last open
 *            transaction commits, never when the stream ends first;
 *   error    an unknown kind, a malformed record, a seq gap, more than
 *            JR_MAX_OPEN_TXN transactions open at once (the writer's own
 *            bound), or the apply callback's refusal: the replay stops
 *            (every later call returns the same error).
 * The state machine knows nothing of clients or commands: the callback
 * (commands/replay_apply.h) runs the record. One thread at a time per
 * struct jr_replay; the callback runs on the calling thread.
 */
#ifndef ZR_JOURNAL_REPLAY_H
#define ZR_JOURNAL_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/journal/format.h"

/* Applies one decoded record (arguments borrowed, writable: a handler may
 * normalize one in place). Returns 0, or -errno after writing the reason
 * (no position) to ERR. */
typedef int (*jr_apply_fn)(void *ctx, const struct jr_cmd *rec, char *err, size_t errlen);

enum jr_replay_class {
	JR_REPLAY_SKIPPED = 0,
	JR_REPLAY_APPLIED = 1, /* it, and any held records it released, applied */
	JR_REPLAY_HELD = 2,
};

struct jr_held; /* replay.c */

/* Invariants: expect - 1 is the last seq accepted; nheld > 0 only while
 * nopen > 0 (or between a refusal of the stream's end and jr_replay_drop). */
struct jr_replay {
	jr_apply_fn apply;
	void *ctx;
	uint64_t expect;  /* the seq the next record must have */
	uint64_t applied; /* records applied */
	uint64_t open[JR_MAX_OPEN_TXN];
	int nopen;
	struct jr_held *held; /* records waiting for their commits */
	size_t nheld, capheld;
	struct jbuf in;	  /* jr_replay_feed: the start of a frame not yet whole */
	uint64_t fed;	  /* jr_replay_feed: stream offset of in's first byte */
	int rc;		  /* the error that stopped the replay, or 0 */
	uint64_t err_pos; /* the position of the record that failed */
	char err[256];	  /* its reason, without a position */
};

/* Starts a replay of the records after AFTER_SEQ, each applied with APPLY(CTX). */
void jr_replay_init(struct jr_replay *rp, uint64_t after_seq, jr_apply_fn apply, void *ctx);
/* Frees what it holds (held records are dropped, not applied). */
void jr_replay_free(struct jr_replay *rp);

/* One frame's payload (kind byte first; its checksum checked by the
 * caller), at POS (the caller's position: a file offset, a stream
 * offset; reported back in err_pos and jr_replay_held). The payload is
 * borrowed for the call only (a held record is copied). Returns an enum
 * jr_replay_class, or -errno with rp->err and rp->err_pos set. */
int jr_replay_frame(struct jr_replay *rp, const unsigned char *payload, size_t plen, uint64_t pos);

/* Stream bytes in any chunking: frames (JR_FRAME_HEADER, payload) are
 * reassembled and checksummed and go to jr_replay_frame, each at its
 * offset in the stream (counted from the first byte ever fed). Returns 0,
 * or -errno (a bad frame: -EINVAL with "checksum mismatch" or "impossible
 * frame length"; or jr_replay_frame's error). */
int jr_replay_feed(struct jr_replay *rp, const void *buf, size_t len);

/* How many records are held (the stream ended or is cut inside a
 * transaction), with the position of the first in *FIRST_POS (may be
 * NULL) when there is one. */
size_t jr_replay_held(const struct jr_replay *rp, uint64_t *first_pos);
/* Forgets the held records and the open transactions (the tail they were
 * in is cut off); returns how many records were dropped. */
size_t jr_replay_drop(struct jr_replay *rp);

#endif
