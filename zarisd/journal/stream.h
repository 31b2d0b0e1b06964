/* stream — the change stream: every journal record (a JR_CMD or JR_COMMIT
 * frame, journal/format.h) of this server, numbered in one global sequence
 * here, whether or not anything consumes it (the append-only log, later
 * replica links and slot migrations).
 *
 * The ring: appended frames are kept in one in-memory byte ring, each at
 * an absolute offset (bytes appended since the stream was created: the
 * future replication offset). Every consumer has a cursor into it; a
 * consumer takes the frames from its cursor on, which releases them for
 * it. The ring keeps every byte some consumer has not taken, plus a tail
 * of at most STREAM_TAIL_BYTES of whole frames before the slowest cursor
 * (the future replication backlog, whose size a setting will give). With
 * no consumer a frame is numbered and not kept (stream_number: one atomic
 * compare-and-swap, no record built, no mutex), as Redis keeps no
 * replication backlog before its first replica attaches; the backlog
 * switch (stream_set_backlog) keeps the tail without a consumer, and a
 * frame larger than the tail is then numbered without being kept
 * (stream_skip_large). The tail is
 * 64 KiB, not more: a ring cycling through megabytes missed the cache on
 * every append (RFO misses drained at the mutex's unlock) and pushed the
 * keyspace out of L2.
 *
 * Transactions: the records of an EXEC carry its txn id; from the first of
 * them on nothing is visible to any consumer until the JR_COMMIT of that
 * txn is appended, so no consumer ever sees half a transaction (at most
 * STREAM_MAX_OPEN_TXN are gated at once; more go ungated).
 *
 * Back-pressure: the bytes appended, visible and not yet taken by the
 * slowest open consumer are bounded by the limit (STREAM_BUFFER_LIMIT, or
 * stream_set_limit): an append that would pass it waits (on the stream's
 * condition variable; the caller's shard locks held, which no consumer
 * needs) until that consumer took them. A frame larger than the limit
 * waits for an empty buffer and goes alone. Only visible bytes count, so
 * an open transaction never waits behind itself.
 *
 * Threads: appends from any thread (one mutex, held for a memcpy); a
 * consumer's calls from one thread at a time (its owner); the rest from
 * any thread. The lock is a leaf: nothing else is taken under it.
 */
#ifndef ZR_STREAM_H
#define ZR_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/journal/format.h"

#define STREAM_TAIL_BYTES (64u << 10)	    /* history kept before the slowest cursor: see above */
#define STREAM_BUFFER_LIMIT (64u << 20)	    /* back-pressure bound, see above */
#define STREAM_MAX_OPEN_TXN JR_MAX_OPEN_TXN /* the replay state machine refuses more: one bound, format.h */

struct stream;
struct stream_consumer;

struct stream_stats {
	uint64_t last_seq;     /* the last seq handed out */
	uint64_t end_offset;   /* absolute offset after the last byte appended */
	uint64_t ring_bytes;   /* bytes kept in the ring now */
	uint64_t limit;	       /* the back-pressure bound now */
	uint64_t peak;	       /* most bytes untaken by the slowest consumer, since start */
	uint64_t waits;	       /* appends that waited for room */
	uint64_t records;      /* frames appended or skipped since start (not those stream_number numbered) */
	unsigned consumers;    /* open consumers */
	uint64_t first_offset; /* absolute offset of the first byte kept */
	uint64_t tail;	       /* the history kept before the slowest cursor (stream_set_tail) */
	bool backlog;	       /* a history is kept (a consumer or the backlog switch) */
};

/* A new, empty stream (seq 0). Freed with stream_destroy, after every
 * consumer is freed. */
struct stream *stream_create(void);
void stream_destroy(struct stream *s);

/* Sets the last seq used (after loading) and drops what the ring held.
 * No consumer may be open. */
void stream_set_seq(struct stream *s, uint64_t seq);
/* The last seq handed out. Any thread: one relaxed load. */
uint64_t stream_last_seq(const struct stream *s);

/* Appends the one frame in REC (a JR_CMD or JR_COMMIT at offset 0,
 * encoded with seq 0) for transaction TXN (0 = none). It is numbered
 * here and its length set (the caller need not jr_frame_end it; REC's
 * checksum is left unset).
 * Returns its seq. *HELD (when not NULL) says whether a consumer that
 * holds replies (stream_consumer_open) will take it: the caller's reply
 * then waits until that consumer reported the seq durable. May wait for
 * room (back-pressure) or, once the stream is frozen, for ever. */
uint64_t stream_append(struct stream *s, struct jbuf *rec, uint64_t txn, bool *held);
/* Appends the JR_COMMIT of TXN (built here); as stream_append. */
uint64_t stream_commit(struct stream *s, uint64_t txn, bool *held);
/* Numbers the next record without the mutex when nothing would keep it
 * (no consumer, no backlog, not frozen) and returns its seq: the caller
 * then builds nothing. Returns 0 when a frame would be kept: the caller
 * builds it and appends it. A consumer opened after a record was numbered
 * here starts after it (its opening seq is at least that seq). Any
 * thread. */
uint64_t stream_number(struct stream *s);
/* Keeps the ring's tail of STREAM_TAIL_BYTES even with no consumer (the
 * replication backlog, from a replica's first attach; DEBUG CHANGE-STREAM
 * BACKLOG for tests). Off: with no consumer frames are only numbered. */
void stream_set_backlog(struct stream *s, bool on);
/* For a record of about BYTES bytes not built yet: when no consumer is
 * open and it would not fit in the tail, numbers it without keeping it
 * (the ring's history is dropped: it would have a hole) and returns its
 * seq; otherwise returns 0 and the caller builds it and appends it. */
uint64_t stream_skip_large(struct stream *s, size_t bytes, uint64_t txn);
/* From now on every append waits until the process ends (a busy
 * shutdown: nothing later may be acknowledged). */
void stream_freeze(struct stream *s);
/* Sets the back-pressure bound (LIMIT > 0; DEBUG JOURNAL-STALL). */
void stream_set_limit(struct stream *s, size_t limit);
/* Copies the last N frames still in the ring, in order, into OUT
 * (appended); returns how many. */
unsigned stream_recent(struct stream *s, unsigned n, struct jbuf *out);
void stream_stats(struct stream *s, struct stream_stats *out);

/* Opens a consumer whose cursor is the end of the stream: it takes every
 * frame appended from now on. *SEQ: the last seq before its first frame.
 * HOLDS: appends report *held while it is open. */
struct stream_consumer *stream_consumer_open(struct stream *s, bool holds, uint64_t *seq);
/* Copies the visible frames from C's cursor on into OUT (appended, whole
 * frames, checksums filled in) and releases them; returns the byte count. *FROM: the absolute offset of the
 * first byte taken; *SEQ: the seq of the last frame visible to C. */
size_t stream_take(struct stream_consumer *c, struct jbuf *out, uint64_t *from, uint64_t *seq);
/* stream_take of whole frames up to MAX bytes (at least one frame, if
 * any): a replica's sender takes what it sends next, so what is not sent
 * yet stays in the ring, where the drop limit sees it. */
size_t stream_take_max(struct stream_consumer *c, struct jbuf *out, size_t max, uint64_t *from,
		       uint64_t *seq);
/* Bytes the ring holds (records some consumer has not taken, and the
 * tail), as of the last append: what eviction leaves out of maxmemory's
 * figure (store_set_overhead_hook), as Redis leaves out its replicas'
 * and the log's buffers; the ring's capacity beyond it is counted. Any
 * thread, no lock. */
size_t stream_memory(const struct stream *s);
/* How many bytes C's cursor is behind the stream's end. */
uint64_t stream_consumer_behind(struct stream_consumer *c);
/* The stream's end now: *SEQ the last seq, returns the absolute offset
 * after its last byte (a frame past it has a larger seq). */
uint64_t stream_position(struct stream *s, uint64_t *seq);
/* Waits up to MS milliseconds until C has something to take or was
 * kicked; returns at once if so. */
void stream_wait(struct stream_consumer *c, long ms);
/* Makes C's next (or current) stream_wait return. Any thread. */
void stream_kick(struct stream_consumer *c);
/* Bytes appended that C has not taken (visible or not). */
uint64_t stream_pending(struct stream_consumer *c);
/* Closing: C no longer applies back-pressure nor holds replies; what it
 * may still take ends at the stream's end now (ALL: its open transactions
 * included, visible or not) or, without ALL, at what is visible now. */
void stream_consumer_close(struct stream_consumer *c, bool all);
/* Frees C (closed first if it was not). */
void stream_consumer_free(struct stream_consumer *c);

/* --- replication ---------------------------------------------------------
 * The ring is the replication backlog: a replica's (offset) is served from
 * it while it is still kept; a replica's own stream carries its primary's
 * frames at the primary's offsets and seqs. */

/* Sets the history kept before the slowest cursor (repl-backlog-size;
 * STREAM_TAIL_BYTES until set). */
void stream_set_tail(struct stream *s, size_t bytes);
/* Opens a consumer whose cursor is OFFSET, when that is a frame boundary
 * still kept in the ring (base <= OFFSET <= end); NULL otherwise (a
 * partial resync is not possible: the caller does a full one). *SEQ: the
 * seq of the last frame before OFFSET. */
struct stream_consumer *stream_consumer_open_at(struct stream *s, uint64_t offset, bool holds, uint64_t *seq);
/* C applies no back-pressure: once it falls more than LIMIT bytes behind
 * the stream's end it is cut off (stream_consumer_dropped; it then takes
 * nothing more and keeps nothing of the ring), as Redis drops a replica
 * over its output buffer limit. */
void stream_consumer_set_drop(struct stream_consumer *c, size_t limit);
bool stream_consumer_dropped(struct stream_consumer *c);
/* A replica after a full sync: the last seq is SEQ and the stream's end
 * OFFSET (its primary's); what the ring held is dropped and every cursor
 * moves to OFFSET. */
void stream_reset(struct stream *s, uint64_t seq, uint64_t offset);
/* The replication id of the stream's history (repl/ sets it; snapshots
 * keep it with their offset, so a restart continues the same history):
 * ID, 40 characters, or "" for none. */
void stream_set_id(struct stream *s, const char *id);
/* *ID (41 bytes) and the stream's end offset, read together. */
uint64_t stream_origin(struct stream *s, char id[41]);
/* A replica: appends the frame FRAME[0..LEN) received from its primary as
 * it is (header and payload; its seq must be the next one: -ERANGE, and
 * -EINVAL when it is no JR_CMD / JR_COMMIT), gated as stream_append gates
 * (the txn id in the frame) and counted in the offset even when no history
 * is kept. *HELD as stream_append. */
int stream_append_frame(struct stream *s, const unsigned char *frame, size_t len, bool *held);

#endif
