/* resp_reader — the client side of RESP: finds one complete reply (RESP2
 * or RESP3) at the front of a byte buffer and says what it is, without
 * copying or allocating. Every client-side user reads replies with it: the
 * supervisor's health checks, the bench's load generator and its --serve
 * stand-in (which cuts requests, arrays of bulk strings, the same way), and
 * zarisd's outbound connections.
 *
 * Pure, no I/O, no state between calls: the caller keeps the bytes it
 * received and calls resp_reader_next() again when more arrive; a reply
 * still incomplete is scanned again from its start, which costs little
 * because replies are small and mostly arrive whole. Every pointer in a
 * struct resp_reply points into the caller's buffer (borrowed for as long
 * as the buffer holds those bytes). Any thread.
 */
#ifndef ZR_RESP_READER_H
#define ZR_RESP_READER_H

#include <stddef.h>

enum resp_reply_type {
	RESP_REPLY_STATUS = 1, /* +simple string: str */
	RESP_REPLY_ERROR,      /* -error or !blob error: str (the whole text, "ERR ..." included) */
	RESP_REPLY_INT,	       /* :integer: integer */
	RESP_REPLY_BULK,       /* $bulk string, not null: str */
	RESP_REPLY_NULL,       /* $-1, *-1 or _ */
	RESP_REPLY_ARRAY,      /* *array: count elements from elems */
	RESP_REPLY_MAP,	       /* %map: count key/value pairs (2 * count values) from elems */
	RESP_REPLY_SET,	       /* ~set: count elements from elems */
	RESP_REPLY_PUSH,       /* >push (out of band, not a reply to a request): count elements */
	RESP_REPLY_DOUBLE,     /* ,double: str (its text: "1.5", "inf", "nan") */
	RESP_REPLY_BOOL,       /* #t / #f: integer 1 or 0 */
	RESP_REPLY_BIGNUM,     /* (big number: str (its digits) */
	RESP_REPLY_VERBATIM,   /* =verbatim string: str (the text after "txt:"), format (3 bytes) */
};

/* One complete reply. An attribute (|) that precedes a reply is skipped:
 * the reply is the value it describes, and size covers both. */
struct resp_reply {
	enum resp_reply_type type;
	const char *str;    /* STATUS, ERROR, BULK, DOUBLE, BIGNUM, VERBATIM: the text, not NUL-terminated */
	size_t len;	    /* its length */
	const char *format; /* VERBATIM: the 3-byte format ("txt", "mkd") */
	long long integer;  /* INT, BOOL */
	long long count;    /* ARRAY, SET, PUSH: elements; MAP: pairs */
	const char *elems;  /* aggregates: the first element (read each with resp_reader_next) */
	size_t size;	    /* bytes of the whole reply, from its first byte */
};

/* Nesting deeper than this is a protocol error (no reply zarisd or Redis
 * sends comes near it). */
#define RESP_READER_MAX_DEPTH 64

/* Reads the reply starting at P (N bytes available). Returns its size in
 * bytes (> 0) and fills *R (which may be NULL when only the size is
 * wanted); 0 when the buffer holds only part of it; -1 on a protocol error
 * (unknown type byte, a malformed length or integer, a line not ended by
 * CRLF, nesting deeper than RESP_READER_MAX_DEPTH). */
long resp_reader_next(const char *p, size_t n, struct resp_reply *r);

/* Parses the decimal integer in [P, END): an optional '-', then 1 to 18
 * digits. Returns 1 and sets *OUT, or 0 on anything else. */
int resp_reader_int(const char *p, const char *end, long long *out);

#endif
