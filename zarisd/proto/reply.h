/* reply — RESP2/RESP3 reply encoding into a client's output buffer, no I/O.
 *
 * An obuf is a chain of chunks owned by one connection (its worker thread).
 * Replies are appended; the network layer sends from the head and calls
 * obuf_consume() with what the kernel took. The encoding follows the
 * client's protocol version (o->resp, 2 or 3), so a handler writes
 * reply_map() once and a RESP2 client gets a flat array.
 *
 * A reply whose element count is not known in advance reserves its header
 * with reply_deferred() and fills it with reply_set_deferred().
 */
#ifndef ZR_REPLY_H
#define ZR_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct obuf_chunk {
	struct obuf_chunk *next;
	uint32_t sent; /* bytes of data[] already given to the kernel */
	uint32_t used; /* bytes of data[] written */
	uint32_t size; /* capacity of data[] */
	char data[];
};

struct obuf {
	struct obuf_chunk *head, *tail;
	size_t bytes;	     /* unsent bytes queued */
	size_t alloc;	     /* bytes of chunk memory held (for limits and INFO) */
	uint8_t resp;	     /* 2 or 3 */
	bool muted;	     /* CLIENT REPLY OFF/SKIP: replies are dropped */
	uint64_t errors;     /* error replies written, muted or not */
	char last_error[32]; /* the last one's code as errorstats counts it (reply_error) */
	/* Called on every error reply, muted or not, with its code (as
	 * last_error) and whether it counts in the error statistics (false:
	 * reply_error_nostats); NULL for an obuf whose errors the code that
	 * takes its bytes accounts for (errors, last_error). The commands
	 * layer sets it on a client's obuf (dispatch.c). */
	void (*on_error)(struct obuf *o, const char *code, size_t len, bool counted);
};

/* A reserved header, filled by reply_set_deferred(). The reservation is
 * REPLY_DEFERRED_MAX bytes inside CHUNK at OFF; filling it moves the rest of
 * that chunk down over the unused part. Hence the rules: fill every
 * reservation before the obuf is sent (obuf_iov/obuf_consume), and fill
 * nested ones innermost first (later reservations before earlier ones),
 * which is the natural order of nested replies. chunk is NULL when the
 * obuf was muted. */
struct reply_deferred {
	struct obuf_chunk *chunk;
	uint32_t off;
};
#define REPLY_DEFERRED_MAX 23 /* type byte, 20 digits, CRLF */

/* An empty obuf speaking RESP2, not muted; allocates nothing. */
void obuf_init(struct obuf *o);
/* Frees every chunk. */
void obuf_free(struct obuf *o);
/* Marks N bytes (from the head) as sent and frees finished chunks; N must
 * not exceed o->bytes. The last chunk is kept for reuse when it has the
 * standard size. */
void obuf_consume(struct obuf *o, size_t n);
/* Fills up to MAX iovecs with unsent data from the head; returns the count
 * (0 when nothing is queued). The iovecs point into the chunks and stay
 * valid until obuf_consume() or obuf_free(). */
int obuf_iov(const struct obuf *o, struct iovec *iov, int max);

/* Every reply_* appends to O (nothing when o->muted) and cannot fail:
 * chunk memory is an internal allocation (zr_malloc aborts on OOM); the
 * caller enforces output buffer limits by looking at o->bytes. Bytes are
 * copied once; a large bulk gets a chunk of its own size. */
void reply_raw(struct obuf *o, const void *p, size_t len);
void reply_simple(struct obuf *o, const char *s); /* +s */
void reply_simple_len(struct obuf *o, const char *s, size_t len);
void reply_ok(struct obuf *o); /* +OK */
/* S is the whole error text including its code: "ERR syntax error",
 * "WRONGTYPE Operation against ...". \r and \n in S are replaced by spaces.
 * Like Redis's addReplyError, no second '-' is added when S starts with one. */
void reply_error(struct obuf *o, const char *s);
void reply_errorf(struct obuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The error code INFO errorstats counts for the error text S (as
 * reply_error takes it), as Redis's afterErrorReply finds it in the bytes
 * sent: the text after the '-' up to the first space (a CR or LF is sent
 * as one; trailing ones do not count, Redis trims them) when that space
 * is within the first 32 bytes, otherwise "ERR".
 * Returns its length, *CODE pointing into S (or at "ERR"). */
size_t reply_error_code(const char *s, const char **code);
/* reply_error for an error that was counted already, where it arose:
 * Redis's ERR_REPLY_FLAG_NO_STATS_UPDATE (a script's error raised by
 * redis.call). on_error gets counted false. */
void reply_error_nostats(struct obuf *o, const char *s);
void reply_bulk(struct obuf *o, const void *p, size_t len);
void reply_bulk_cstr(struct obuf *o, const char *s);
void reply_bulk_ll(struct obuf *o, long long v); /* integer as a bulk string */
void reply_long(struct obuf *o, long long v);	 /* :v */
void reply_double(struct obuf *o, double v);	 /* RESP3 ,v  RESP2 bulk */
void reply_bool(struct obuf *o, bool v);	 /* RESP3 #t/#f  RESP2 :1/:0 */
void reply_null(struct obuf *o);		 /* RESP3 _  RESP2 $-1 */
void reply_null_array(struct obuf *o);		 /* RESP3 _  RESP2 *-1 */
void reply_array(struct obuf *o, long n);	 /* *n */
void reply_map(struct obuf *o, long pairs);	 /* RESP3 %n  RESP2 *2n */
void reply_set(struct obuf *o, long n);		 /* RESP3 ~n  RESP2 *n */
void reply_push(struct obuf *o, long n);	 /* RESP3 >n  RESP2 *n */
/* EXT is the 3-byte format ("txt", "mkd"); shorter ones are padded with
 * spaces like Redis does. */
void reply_verbatim(struct obuf *o, const char *p, size_t len, const char *ext); /* RESP3 =  RESP2 bulk */
void reply_bignum_str(struct obuf *o, const char *s);				 /* RESP3 (s  RESP2 bulk */

enum reply_agg {
	REPLY_AGG_ARRAY,
	REPLY_AGG_MAP,
	REPLY_AGG_SET
};
/* Reserves an aggregate header at the current end of O (see struct
 * reply_deferred for the rules). */
void reply_deferred(struct obuf *o, struct reply_deferred *d);
/* Writes the header reserved by D: N elements (pairs for a map). */
void reply_set_deferred(struct obuf *o, struct reply_deferred *d, enum reply_agg type, long n);
/* Takes back D's reservation and everything written to O after it (a
 * reply abandoned halfway: the walk under it gave up), as if neither had
 * been written. D must not have been filled. */
void reply_deferred_cancel(struct obuf *o, struct reply_deferred *d);

/* A fixed-size header reserved for bytes known only later (the native
 * protocol's frame and result headers): N contiguous bytes at the current
 * end of O, written by reply_fixed_fill() before the obuf is sent
 * (obuf_iov). Unlike reply_deferred nothing moves: the size is fixed. O
 * must not be muted. */
struct reply_fixed {
	struct obuf_chunk *chunk;
	uint32_t off, len;
	size_t bytes_before; /* o->bytes before the reservation */
};
void reply_fixed_reserve(struct obuf *o, size_t n, struct reply_fixed *f);
void reply_fixed_fill(struct reply_fixed *f, const void *bytes);
/* Bytes written to O since F's reservation began (the reservation
 * included); valid while nothing of O was sent since. */
static inline size_t reply_fixed_span(const struct obuf *o, const struct reply_fixed *f)
{
	return o->bytes - f->bytes_before;
}
/* The first byte written after F's reservation, or -1 when none was. */
int reply_fixed_next_byte(const struct obuf *o, const struct reply_fixed *f);
/* Takes back F's reservation, which must be the last thing written to O. */
void reply_fixed_cancel(struct obuf *o, struct reply_fixed *f);

#endif
