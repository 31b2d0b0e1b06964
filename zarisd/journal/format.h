/* journal/format — the one record format of persistence: the append-only log, the
 * snapshot file and (later) the replication stream are sequences of the
 * frames defined here, written by one encoder and read by one decoder.
 *
 * File:   16-byte header: magic (8 bytes, "ZARISJNL" for a journal segment,
 *         "ZARISSNP" for a snapshot), u32 format version, u32 CRC-32C of
 *         the first 12 bytes; then frames.
 * Frame:  u32 payload length, u32 CRC-32C of the payload, payload. The
 *         payload starts with a kind byte (enum jr_kind). Integers are
 *         little-endian; lengths and counts inside payloads are LEB128
 *         varints.
 *
 * A journal record (JR_CMD) is one change: the sequence number, the wall
 * clock the command ran with (replay uses it, so relative TTLs and lazy
 * expiry come out the same), the database, the transaction it belongs to
 * (0 for none), one or more commands (argv) and the version each touched
 * key had afterwards. A record is the command itself, or — for commands
 * whose outcome is random (SPOP) — its effect: the commands that rebuild
 * the key.
 *
 * Version 2 (the one change since version 1): every record (JR_CMD,
 * JR_COMMIT) and every snapshot entry (JR_SNAP_STR, JR_SNAP_OBJ) may end
 * with a tail of type-length-value fields after the fields of version 1
 * (varint type, varint length, the bytes), so later fields (metadata,
 * replication ids, epochs) need no further version: a reader skips the
 * types it does not know. A version-1 payload is a version-2 payload with
 * an empty tail, so one decoder reads both; writers write version 2.
 * JR_SNAP_HEAD may end with a tail as well (the replication origin,
 * JR_TAIL_ORIGIN_*): its readers never looked past its fields. Pure functions, no I/O, any thread.
 */
#ifndef ZR_JOURNAL_H
#define ZR_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JR_FORMAT_VERSION 2	/* what the writers write */
#define JR_FORMAT_MIN_VERSION 1 /* the oldest the readers read */
#define JR_FILE_HEADER 16
#define JR_FRAME_HEADER 8
#define JR_MAX_FRAME (1u << 30) /* larger lengths are corruption */
#define JR_MAGIC_JOURNAL "ZARISJNL"
#define JR_MAGIC_SNAPSHOT "ZARISSNP"

enum jr_kind {
	JR_CMD = 1,	   /* u64 seq, i64 now_ms, u32 db, u64 txn, cmds, versions */
	JR_COMMIT = 2,	   /* u64 seq, u64 txn: the transaction's records are complete */
	JR_SEGMENT = 3,	   /* u64 start_seq, u32 flags (JR_SEG_*), i64 created_ms */
	JR_SNAP_HEAD = 10, /* u64 journal_seq, i64 created_ms, u32 databases */
	JR_SNAP_STR = 11,  /* u32 db, i64 expire, u64 version, key, value */
	JR_SNAP_OBJ = 12,  /* u32 db, u8 type, i64 expire, u64 version, key, cmds */
	JR_SNAP_END = 13,  /* u64 keys */
	/* bytes code: one function library (FUNCTION LOAD's argument), after
	 * the head and before the first entry, one frame per library. Added
	 * within version 2: a snapshot with no libraries has none and reads
	 * as before; an older build refuses one that has ("unknown record
	 * kind"), as it must (it would drop the libraries). */
	JR_SNAP_FUNCTION = 14,
};

/* The most transactions whose records may be open (written, not yet
 * committed) at once in one stream: the writer side never has more, and
 * replay (replay.h) refuses a stream that has. */
#define JR_MAX_OPEN_TXN 256

/* Tail fields of JR_SNAP_HEAD: the replication history the snapshot is a
 * point of (persist/snapshot.h struct snapshot_origin). */
#define JR_TAIL_ORIGIN_ID 1	/* the replication id, 40 characters */
#define JR_TAIL_ORIGIN_OFFSET 2 /* u64: the stream's offset at the instant */

/* Tail field of JR_CMD: versions of keys the record's commands left in
 * another database (MOVE, COPY ... DB): varint db, varint count, then
 * count (key, version) pairs as in the versions list. */
#define JR_TAIL_DB_VERSIONS 1
/* Tail field of JR_CMD: varint JR_DEST_*, the one consumer the record is
 * for (a script's redis.set_repl). Absent: for both, the log and the
 * replicas. The record stays in the stream either way (offsets and seqs
 * are the primary's on every replica); the other kind of consumer reads
 * it and passes over it (commands/replay_apply.h). */
#define JR_TAIL_DEST 2
#define JR_DEST_LOG 1	   /* only the append-only log replays it (REPL_AOF) */
#define JR_DEST_REPLICAS 2 /* only replicas apply it (REPL_REPLICA) */
/* What a replica makes of those two in its own stream (jr_cmd_dest_as_replica),
 * so that its own log and its own replicas do what it did: */
#define JR_DEST_NONE 3 /* a JR_DEST_LOG record it passed over: nobody applies it */
#define JR_DEST_ALL 4  /* a JR_DEST_REPLICAS record it applied: everyone does (as without the field) */

/* Tail field of JR_SNAP_STR and JR_SNAP_OBJ: the key's metadata (labels,
 * entity, content-type; store.h store_meta_fields): varint label count,
 * each label (varint length, bytes), varint flags (JR_META_ENTITY,
 * JR_META_CTYPE), then the entity and the content-type when flagged.
 * Absent: the key has none (every file written before metadata existed). */
#define JR_TAIL_META 1
#define JR_META_ENTITY 0x1
#define JR_META_CTYPE 0x2
#define JR_META_MAX_LABELS 1024 /* the most a reader takes (meta-max-labels' maximum) */

#define JR_SEG_FRESH 0x1 /* first segment after appendonly was turned on: no base before it */

/* A growable byte buffer the encoder appends to. */
struct jbuf {
	unsigned char *p;
	size_t len, cap;
};

void jbuf_init(struct jbuf *b);
void jbuf_free(struct jbuf *b);
void jbuf_reserve(struct jbuf *b, size_t extra);
void jbuf_put(struct jbuf *b, const void *p, size_t n);
void jbuf_u8(struct jbuf *b, uint8_t v);
void jbuf_u32(struct jbuf *b, uint32_t v);
void jbuf_u64(struct jbuf *b, uint64_t v);
void jbuf_varint(struct jbuf *b, uint64_t v);
/* varint length then the bytes */
void jbuf_bytes(struct jbuf *b, const void *p, size_t n);

/* Appends the 16-byte file header with MAGIC (8 chars). */
void jr_file_header(struct jbuf *b, const char *magic);
/* Starts a frame of KIND; returns its offset for jr_frame_end. */
size_t jr_frame_begin(struct jbuf *b, enum jr_kind kind);
/* Fills in the frame's length and checksum. */
void jr_frame_end(struct jbuf *b, size_t frame_off);

/* JR_CMD in parts: begin (header fields), one jr_cmd_argv per command,
 * then the versions, then jr_frame_end. NCMDS and NVER must match what
 * follows. */
size_t jr_cmd_begin(struct jbuf *b, uint64_t seq, int64_t now_ms, unsigned db, uint64_t txn, unsigned ncmds);
/* Patches the command count of the JR_CMD frame at OFF (when the
 * commands are emitted before their number is known). */
void jr_cmd_set_ncmds(struct jbuf *b, size_t off, unsigned ncmds);
void jr_cmd_argv(struct jbuf *b, int argc, const char *const *argv, const size_t *lens);
void jr_cmd_versions_begin(struct jbuf *b, unsigned nver);
void jr_cmd_version(struct jbuf *b, const char *key, size_t klen, uint64_t version);
/* Appends one tail field (TYPE, N bytes of P) to the frame being built:
 * after the last field of its kind, before jr_frame_end. */
void jr_tail_put(struct jbuf *b, uint64_t type, const void *p, size_t n);
/* The JR_TAIL_DEST field (DEST: JR_DEST_LOG or JR_DEST_REPLICAS). */
void jr_tail_put_dest(struct jbuf *b, unsigned dest);
/* Rewrites the seq of a JR_CMD / JR_COMMIT frame at FRAME_OFF and its
 * checksum (the journal numbers a record only when it appends it). */
void jr_frame_set_seq(struct jbuf *b, size_t frame_off, uint64_t seq);

/* --- decoding -------------------------------------------------------------- */

enum jr_status {
	JR_OK = 0,
	JR_EOF = 1,	  /* clean end: no bytes left */
	JR_TRUNCATED = 2, /* the last frame is incomplete (crash mid-write) */
	JR_CORRUPT = 3,	  /* bad length or checksum with data after it */
};

/* The one reader of a frame header: the frame at the front of
 * BUF[0..LEN), bytes of a file or a stream in any chunking. Returns 1
 * when the whole frame is there, 0 when more bytes are needed, -EPROTO
 * for an impossible length (over JR_MAX_FRAME). *PLEN gets the payload
 * length once the header is there (0 before; a length of 0 is a
 * heartbeat, the header alone: replication's keep-alive). The checksum is
 * not checked: jr_frame_crc_ok. */
int jr_frame_peek(const unsigned char *buf, size_t len, uint32_t *plen);
/* Whether the payload of the whole frame at FRAME (PLEN bytes after its
 * header) matches the checksum in its header. */
bool jr_frame_crc_ok(const unsigned char *frame, size_t plen);
/* A frame's COMMIT seq (the u64 after the kind byte of a JR_COMMIT
 * payload PL). */
uint64_t jr_commit_seq(const unsigned char *pl);

/* Reads the frame at *OFF of BUF[0..LEN): on JR_OK sets *PAYLOAD and *PLEN and
 * advances *OFF. A checksum mismatch on the very last frame of the buffer
 * counts as JR_TRUNCATED (a torn final write), anywhere else as JR_CORRUPT.
 * WHY (when not NULL) gets a short reason. */
enum jr_status jr_next_frame(const unsigned char *buf, size_t len, size_t *off, const unsigned char **payload,
			     size_t *plen, const char **why);
/* Whether the damage at AT (a frame jr_next_frame did not accept) is a
 * torn tail rather than corruption: no record frame (JR_CMD or JR_COMMIT)
 * numbered above AFTER_SEQ that checks starts anywhere after AT. What an
 * interrupted or failed writeback leaves at the end of a log — a frame
 * whose header reached the disk and whose payload did not, blocks of
 * zeros, stale blocks — has no later record; damage in the middle of a
 * log has the records after it. Linear in LEN - AT. */
bool jr_torn_tail(const unsigned char *buf, size_t len, size_t at, uint64_t after_seq);
/* Checks the file header; 0, or -EINVAL (bad magic/checksum) or -EPROTO
 * (a format version this build cannot read: below JR_FORMAT_MIN_VERSION
 * or above JR_FORMAT_VERSION). */
int jr_check_file_header(const unsigned char *buf, size_t len, const char *magic);

/* A cursor over one payload; every getter fails (returns false) past the
 * end, so a malformed payload is detected, never overrun. */
struct jreader {
	const unsigned char *p, *end;
};
bool jrd_u8(struct jreader *r, uint8_t *v);
bool jrd_u32(struct jreader *r, uint32_t *v);
bool jrd_u64(struct jreader *r, uint64_t *v);
bool jrd_varint(struct jreader *r, uint64_t *v);
/* A varint-prefixed byte string, borrowed from the payload. */
bool jrd_bytes(struct jreader *r, const char **p, size_t *n);

/* Reads the next tail field of TAIL (a reader over a payload's tail):
 * 1 and *TYPE, *P, *N (borrowed) set; 0 at the end of the tail;
 * -EINVAL when the tail is malformed. */
int jr_tail_next(struct jreader *tail, uint64_t *type, const char **p, size_t *n);
/* Whether every field of TAIL is well formed (it is read to its end). */
bool jr_tail_ok(struct jreader tail);

/* One decoded JR_CMD, arguments borrowed from the payload. */
#define JR_MAX_ARGS (1u << 24)
struct jr_cmd {
	uint64_t seq;
	int64_t now_ms;
	unsigned db;
	uint64_t txn;
	unsigned ncmds;
	struct jreader cmds; /* positioned at the first command */
	unsigned nver;
	struct jreader vers;	      /* positioned at the first version */
	struct jreader tail;	      /* the tail fields (empty in version 1) */
	unsigned dest;		      /* JR_DEST_LOG, _REPLICAS or _NONE; 0: for the log and replicas */
	size_t dest_at;		      /* offset in the payload of JR_TAIL_DEST's value byte, or 0 */
	const unsigned char *payload; /* the whole payload parsed (kind byte first) */
	size_t plen;
};
/* Parses a JR_CMD payload (kind byte included), its tail checked; false
 * when malformed. */
bool jr_parse_cmd(const unsigned char *payload, size_t plen, struct jr_cmd *out);
/* COPY holds REC's payload (parsed from another buffer), about to go into
 * a replica's own stream: its JR_TAIL_DEST, if any, is rewritten from the
 * primary's view to the replica's (JR_DEST_LOG to JR_DEST_NONE,
 * JR_DEST_REPLICAS to JR_DEST_ALL), in place, one byte for one, so the
 * record keeps its length and its offset in the stream stays the
 * primary's. The replica's log replays, and its own replicas apply, what
 * the replica applied (Redis's replica logs and passes on the stream it
 * applied, which never held the master's log-only commands). The frame's
 * checksum is the caller's (the stream seals what it takes). */
void jr_cmd_dest_as_replica(unsigned char *copy, const struct jr_cmd *rec);
/* Reads the argument count of the next command of CMDS (then read each
 * argument with jrd_bytes); false when malformed. */
bool jr_next_argc(struct jreader *cmds, uint64_t *argc);
/* Reads the next version pair. */
bool jr_next_version(struct jreader *vers, const char **key, size_t *klen, uint64_t *version);

/* Parses a JR_COMMIT payload (kind byte included): *SEQ, *TXN and its
 * tail (may be NULL), checked; false when malformed. */
bool jr_parse_commit(const unsigned char *payload, size_t plen, uint64_t *seq, uint64_t *txn,
		     struct jreader *tail);

/* One decoded snapshot entry (JR_SNAP_STR or JR_SNAP_OBJ), borrowed from
 * the payload. */
struct jr_snap_entry {
	uint8_t kind; /* JR_SNAP_STR or JR_SNAP_OBJ */
	uint8_t type; /* JR_SNAP_OBJ: the store type */
	unsigned db;
	int64_t expire; /* absolute ms, -1 none */
	uint64_t version;
	const char *key;
	size_t klen;
	const char *val; /* JR_SNAP_STR: the value */
	size_t vlen;
	unsigned ncmds;	     /* JR_SNAP_OBJ: commands that rebuild the value */
	struct jreader cmds; /* positioned at the first of them (jr_next_argc) */
	struct jreader tail;
};
/* Parses a snapshot entry payload (kind byte included): every field, each
 * command's lengths and the tail checked; false when malformed. */
bool jr_parse_snap_entry(const unsigned char *payload, size_t plen, struct jr_snap_entry *out);

struct store_meta_fields;
/* Appends F as a JR_TAIL_META field to the snapshot entry being built. */
void jr_meta_put(struct jbuf *b, const struct store_meta_fields *f);
/* Reads the JR_TAIL_META field of TAIL (a copy of a snapshot entry's tail
 * reader) into F, its labels into LABELS / LENS (JR_META_MAX_LABELS each),
 * all borrowed from the payload: 1 when found, 0 when the entry has none,
 * -EINVAL when it is malformed. */
int jr_meta_get(struct jreader tail, struct store_meta_fields *f, const char **labels, size_t *lens);

#endif
