/* resp — incremental RESP request parser (multibulk and inline), no I/O.
 *
 * The parser works over a caller-owned byte buffer that holds the start of
 * at least one request. It never copies argument bytes: on success argv[i]
 * points into the caller's buffer (inline arguments with quotes/escapes are
 * unescaped in place, which never makes them longer). Progress on a partial
 * request is kept in the parser as offsets relative to the request's first
 * byte, so the caller may grow/move the buffer between calls as long as the
 * bytes from the request's start are kept.
 *
 * Every argument is followed by at least one more byte of the same request
 * (a multibulk argument by its CRLF, an inline one by a separator or the
 * line's end), so a caller that needs a C string may overwrite
 * argv[i].ptr[argv[i].len] with '\0' once it is done parsing that request.
 *
 * Compatibility with Redis 7.0 (networking.c): same error texts, same
 * acceptance rules (the two bytes after a bulk are skipped unchecked, like
 * Redis does), with one deliberate difference so that the result never
 * depends on how the bytes were split across reads: a count line or inline
 * line whose end lies more than max_inline bytes from its start is always
 * "too big", even when it arrived in one read (Redis only notices when the
 * end has not arrived yet). Lines are searched with memchr, not strchr, so a
 * NUL byte does not hide the line's end.
 *
 * One parser per connection; owned by the connection's worker thread.
 */
#ifndef ZR_RESP_H
#define ZR_RESP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct resp_arg {
	char *ptr; /* into the caller's buffer; valid until that buffer changes */
	size_t len;
};

struct resp_limits {
	uint64_t max_bulk_len; /* proto-max-bulk-len (Redis: 512mb) */
	/* most arguments one request may have (Redis: 1024*1024 unauthenticated,
	 * INT_MAX after; counts past INT_MAX are always refused) */
	uint64_t max_multibulk;
	size_t max_inline; /* longest inline request / count line (Redis: 64kb) */
};

enum resp_result {
	RESP_INCOMPLETE = 0, /* need more bytes; nothing consumed */
	RESP_COMMAND = 1,    /* one request parsed: argv/argc valid, *consumed set */
	RESP_EMPTY = 2,	     /* an empty inline line or "*0"/"*-1": skip *consumed bytes */
	RESP_ERROR = -1,     /* protocol error: error text set; the connection must close */
};

/* Invariants between calls: pos <= scan <= bytes seen; bulk_len >= 0 only
 * inside a multibulk (multibulk_len > 0), where argoff[0..argc) < pos. */
struct resp_parser {
	/* progress within the current request */
	int state;
	int64_t multibulk_len; /* arguments still expected, 0 = not in a multibulk */
	int64_t bulk_len;      /* -1 = reading the next $count line */
	size_t pos;	       /* start of the next element: bytes of the request fully parsed */
	size_t scan;	       /* where the search for the current line's end resumes (no rescans) */
	/* arguments of the current request, as offsets until complete */
	struct resp_arg *argv;
	size_t *argoff;
	int argc;
	int argv_cap;
	bool is_inline; /* the request being parsed (or just returned) is inline */
	/* Redis's text after RESP_ERROR, e.g. "Protocol error: invalid bulk
	 * length": static, or errbuf; valid while the parser lives */
	const char *error;
	char errbuf[48]; /* formatted error ("expected '$', got 'x'") */
};

/* Prepares an empty parser. */
void resp_parser_init(struct resp_parser *p);
/* Frees the parser's argv arrays. */
void resp_parser_free(struct resp_parser *p);

/* Parses the request starting at BUF (LEN bytes available). On RESP_COMMAND
 * p->argv[0..argc) point into BUF and *CONSUMED is the request's length; the
 * parser is then ready for the next request (which starts at BUF+*CONSUMED).
 * On RESP_INCOMPLETE call again with the same start and more bytes. On
 * RESP_ERROR p->error holds Redis's message (without the "ERR " prefix).
 * The caller owns BUF and must keep it unchanged while it uses argv. */
enum resp_result resp_parse(struct resp_parser *p, char *buf, size_t len, const struct resp_limits *lim,
			    size_t *consumed);

/* The fast case of resp_parse without a parser: when BUF starts with a
 * whole, canonical multibulk request of at most MAX arguments within LIM,
 * stores them in ARGV (pointing into BUF), sets *ARGC and returns the
 * request's length; otherwise returns 0 and the request must go through
 * resp_parse (which also gives every error). Stateless and read-only on
 * BUF, so a caller may parse several requests ahead of running them and
 * drop what it did not run; what it returns is exactly what resp_parse
 * would return for the same bytes and limits. */
size_t resp_parse_whole(char *buf, size_t len, const struct resp_limits *lim, struct resp_arg *argv, int max,
			int *argc);

/* Whether the parser is between requests (no partial request pending):
 * only then may the caller take the next request from resp_parse_whole. */
static inline bool resp_at_start(const struct resp_parser *p)
{
	return p->state == 0 && p->pos == 0;
}

/* Bytes the current request is known to need in total (from its first
 * byte), or 0 when not known yet: while a bulk of known length is being
 * read this is where it ends. Lets the caller size its buffer once for a
 * big argument instead of growing it read by read. */
size_t resp_need(const struct resp_parser *p);

/* Splits an inline line into arguments like Redis's sdssplitargs (quotes,
 * \n \x41 escapes), unescaping in place. Stores at most MAX_OUT arguments
 * but returns the full count (the line is unescaped either way), or -1 for
 * unbalanced quotes. A NUL byte ends the line, as it does for sdssplitargs.
 * Exposed for tests. */
int resp_split_inline(char *line, size_t len, struct resp_arg *out, int max_out);

#endif
