/* resp — see resp.h.
 *
 * The parser is a small state machine over one request. All progress is
 * kept as offsets from the request's first byte (pos: start of the next
 * element; scan: how far the current line has been searched), so feeding a
 * request one byte at a time costs O(n) overall and gives the same result
 * as feeding it at once. Argument bytes are never copied; multibulk
 * arguments are remembered as offsets (argoff) and turned into pointers
 * only when the request is complete, because the caller may move its
 * buffer between calls.
 */
#include "zarisd/proto/resp.h"

#include <assert.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"

enum resp_state {
	RS_START,    /* nothing of the request examined yet */
	RS_MB_COUNT, /* reading "*<count>\r\n" */
	RS_MB_ARGS,  /* reading "$<len>\r\n<bytes>\r\n" elements */
	RS_INLINE,   /* reading an inline line up to '\n' */
	RS_ERROR,    /* a protocol error was returned; sticky */
};
_Static_assert(RS_START == 0, "resp_at_start() in resp.h tests state == 0");

/* argv arrays grown past this are given back between requests, so one huge
 * request does not pin its argv for the connection's lifetime. */
#define RESP_ARGV_KEEP 1024

void resp_parser_init(struct resp_parser *p)
{
	memset(p, 0, sizeof(*p));
	p->state = RS_START;
	p->bulk_len = -1;
}

void resp_parser_free(struct resp_parser *p)
{
	ZR_FREE(p->argv);
	ZR_FREE(p->argoff);
	p->argv_cap = 0;
	p->argc = 0;
}

size_t resp_need(const struct resp_parser *p)
{
	if (p->state == RS_MB_ARGS && p->bulk_len >= 0)
		return p->pos + (size_t)p->bulk_len + 2;
	return 0;
}

static enum resp_result resp_fail(struct resp_parser *p, const char *msg)
{
	p->state = RS_ERROR;
	p->error = msg;
	return RESP_ERROR;
}

/* Makes room for N arguments. MB_LEFT bounds the growth for a multibulk
 * request (no point in doubling past what the count line announced). */
static void resp_argv_reserve(struct resp_parser *p, size_t n, size_t mb_total)
{
	if (n <= (size_t)p->argv_cap)
		return;
	size_t cap = p->argv_cap ? (size_t)p->argv_cap * 2 : 8;
	if (mb_total && cap > mb_total)
		cap = mb_total;
	if (cap < n)
		cap = n;
	assert(cap <= INT_MAX);
	p->argv = zr_realloc(p->argv, cap * sizeof(*p->argv));
	p->argoff = zr_realloc(p->argoff, cap * sizeof(*p->argoff));
	p->argv_cap = (int)cap;
}

/* Looks for C ending the line that starts at START, resuming at p->scan.
 * The end may lie at most MAX bytes after START (Redis's "buffered more
 * than PROTO_INLINE_MAX_SIZE without a line end" rule, applied to the
 * position so that it does not depend on read sizes). Returns 1 with *EOL
 * set, 0 when more bytes are needed, -1 when the line is too long. */
static int resp_find_eol(struct resp_parser *p, const char *buf, size_t len, size_t start, char c, size_t max,
			 size_t *eol)
{
	size_t limit = start + max + 1 < start ? SIZE_MAX : start + max + 1;
	size_t from = p->scan > start ? p->scan : start;
	size_t end = len < limit ? len : limit;
	if (from < end) {
		const char *q = memchr(buf + from, c, end - from);
		if (q) {
			*eol = (size_t)(q - buf);
			p->scan = *eol;
			return 1;
		}
		p->scan = end;
	}
	return len >= limit ? -1 : 0;
}

static enum resp_result resp_finish(struct resp_parser *p, enum resp_result r, size_t consumed, size_t *out)
{
	*out = consumed;
	p->state = RS_START;
	p->multibulk_len = 0;
	p->bulk_len = -1;
	p->pos = 0;
	p->scan = 0;
	return r;
}

static enum resp_result resp_parse_count(struct resp_parser *p, char *buf, size_t len,
					 const struct resp_limits *lim, size_t *consumed)
{
	size_t eol;
	long long ll;
	int r = resp_find_eol(p, buf, len, 0, '\r', lim->max_inline, &eol);
	if (r < 0)
		return resp_fail(p, "Protocol error: too big mbulk count string");
	/* Redis wants the byte after '\r' present but does not check it. */
	if (r == 0 || eol + 2 > len)
		return RESP_INCOMPLETE;
	if (!zr_str_to_ll(buf + 1, eol - 1, &ll) || ll > INT_MAX ||
	    (ll > 0 && (unsigned long long)ll > lim->max_multibulk))
		return resp_fail(p, "Protocol error: invalid multibulk length");
	if (ll <= 0) /* "*0" and "*-1" (any negative, like Redis) are no request */
		return resp_finish(p, RESP_EMPTY, eol + 2, consumed);
	p->multibulk_len = ll;
	p->bulk_len = -1;
	p->pos = eol + 2;
	p->scan = p->pos;
	p->state = RS_MB_ARGS;
	return RESP_INCOMPLETE; /* the caller goes on with the elements */
}

static enum resp_result resp_bad_prefix(struct resp_parser *p, char got)
{
	/* Redis formats the byte with %c and then maps \r and \n in error
	 * texts to spaces. A NUL too: it would end our C-string text early
	 * (redis-server never gets here with one: it stops at the NUL when it
	 * looks for the line's \r, and waits). */
	if (got == '\r' || got == '\n' || got == '\0')
		got = ' ';
	snprintf(p->errbuf, sizeof(p->errbuf), "Protocol error: expected '$', got '%c'", got);
	return resp_fail(p, p->errbuf);
}

static enum resp_result resp_parse_args(struct resp_parser *p, char *buf, size_t len,
					const struct resp_limits *lim, size_t *consumed)
{
	size_t mb_total = (size_t)p->argc + (size_t)p->multibulk_len;
	while (p->multibulk_len > 0) {
		if (p->bulk_len < 0) {
			size_t eol;
			long long ll;
			int r = resp_find_eol(p, buf, len, p->pos, '\r', lim->max_inline, &eol);
			if (r < 0)
				return resp_fail(p, "Protocol error: too big bulk count string");
			if (r == 0 || eol + 2 > len)
				return RESP_INCOMPLETE;
			if (buf[p->pos] != '$')
				return resp_bad_prefix(p, buf[p->pos]);
			if (!zr_str_to_ll(buf + p->pos + 1, eol - p->pos - 1, &ll) || ll < 0 ||
			    (unsigned long long)ll > lim->max_bulk_len)
				return resp_fail(p, "Protocol error: invalid bulk length");
			p->bulk_len = ll;
			p->pos = eol + 2;
		}
		/* The bulk and the two bytes after it (CRLF, unchecked as in Redis). */
		if (len - p->pos < (uint64_t)p->bulk_len + 2)
			return RESP_INCOMPLETE;
		resp_argv_reserve(p, (size_t)p->argc + 1, mb_total);
		p->argoff[p->argc] = p->pos;
		p->argv[p->argc].len = (size_t)p->bulk_len;
		p->argc++;
		p->pos += (size_t)p->bulk_len + 2;
		p->scan = p->pos;
		p->bulk_len = -1;
		p->multibulk_len--;
	}
	for (int i = 0; i < p->argc; i++)
		p->argv[i].ptr = buf + p->argoff[i];
	return resp_finish(p, RESP_COMMAND, p->pos, consumed);
}

static inline bool resp_is_space(int c)
{
	/* isspace() in the C locale, without the locale lookup. */
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static inline int resp_hex_val(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The byte at I as sdssplitargs sees its C string: 0 past the end. */
static inline int resp_at(const char *s, size_t len, size_t i)
{
	return i < len ? (unsigned char)s[i] : 0;
}

/* Takes the next argument of an inline line from *IP on, unescaping it in
 * place (writes never overtake reads: every output byte consumes at least
 * one input byte). Returns 1 with TOK set, 0 at the end, -1 for unbalanced
 * quotes. The rules are sdssplitargs's, including its corners: a quoted
 * part may start inside a word (a"b c" is one argument "ab c"), a closing
 * quote must be followed by whitespace or the end, and a NUL ends all. */
static int resp_split_next(char *s, size_t len, size_t *ip, struct resp_arg *tok)
{
	size_t i = *ip;
	while (resp_at(s, len, i) && resp_is_space(resp_at(s, len, i)))
		i++;
	if (!resp_at(s, len, i)) {
		*ip = i;
		return 0;
	}
	size_t w = i, start = i;
	bool inq = false, insq = false, done = false;
	while (!done) {
		int c = resp_at(s, len, i);
		int n1 = resp_at(s, len, i + 1);
		if (inq) {
			int h1, h2;
			if (c == '\\' && n1 == 'x' && (h1 = resp_hex_val(resp_at(s, len, i + 2))) >= 0 &&
			    (h2 = resp_hex_val(resp_at(s, len, i + 3))) >= 0) {
				s[w++] = (char)(h1 * 16 + h2);
				i += 3;
			} else if (c == '\\' && n1) {
				i++;
				switch (n1) {
				case 'n':
					s[w++] = '\n';
					break;
				case 'r':
					s[w++] = '\r';
					break;
				case 't':
					s[w++] = '\t';
					break;
				case 'b':
					s[w++] = '\b';
					break;
				case 'a':
					s[w++] = '\a';
					break;
				default:
					s[w++] = (char)n1;
					break;
				}
			} else if (c == '"') {
				if (n1 && !resp_is_space(n1))
					return -1;
				done = true;
			} else if (!c) {
				return -1;
			} else {
				s[w++] = (char)c;
			}
		} else if (insq) {
			if (c == '\\' && n1 == '\'') {
				i++;
				s[w++] = '\'';
			} else if (c == '\'') {
				if (n1 && !resp_is_space(n1))
					return -1;
				done = true;
			} else if (!c) {
				return -1;
			} else {
				s[w++] = (char)c;
			}
		} else {
			switch (c) {
			case ' ':
			case '\n':
			case '\r':
			case '\t':
			case '\0':
				done = true;
				break;
			case '"':
				inq = true;
				break;
			case '\'':
				insq = true;
				break;
			default:
				s[w++] = (char)c;
				break;
			}
		}
		if (resp_at(s, len, i))
			i++;
	}
	tok->ptr = s + start;
	tok->len = w - start;
	*ip = i;
	return 1;
}

int resp_split_inline(char *line, size_t len, struct resp_arg *out, int max_out)
{
	size_t i = 0;
	int n = 0;
	struct resp_arg tok;
	int r;
	while ((r = resp_split_next(line, len, &i, &tok)) > 0) {
		if (n < max_out)
			out[n] = tok;
		n++;
	}
	return r < 0 ? -1 : n;
}

static enum resp_result resp_parse_inline(struct resp_parser *p, char *buf, size_t len,
					  const struct resp_limits *lim, size_t *consumed)
{
	size_t eol;
	int r = resp_find_eol(p, buf, len, 0, '\n', lim->max_inline, &eol);
	if (r < 0)
		return resp_fail(p, "Protocol error: too big inline request");
	if (r == 0)
		return RESP_INCOMPLETE;
	size_t linelen = eol;
	if (linelen > 0 && buf[linelen - 1] == '\r')
		linelen--;
	size_t i = 0;
	struct resp_arg tok;
	while ((r = resp_split_next(buf, linelen, &i, &tok)) > 0) {
		resp_argv_reserve(p, (size_t)p->argc + 1, 0);
		p->argv[p->argc++] = tok;
	}
	if (r < 0)
		return resp_fail(p, "Protocol error: unbalanced quotes in request");
	return resp_finish(p, p->argc ? RESP_COMMAND : RESP_EMPTY, eol + 1, consumed);
}

/* A canonical decimal at B[*I..] (no sign; "0" or no leading zero; at most
 * MAXD digits) followed by '\r' within LEN: returns it with *I at the '\r',
 * or -1 for anything else, which the general path then handles. The digit
 * loop is bounded by MAXD up front, so it tests one condition per digit. */
static inline long long fast_decimal(const char *b, size_t len, size_t *i, int maxd)
{
	size_t j = *i;
	if (j >= len)
		return -1;
	unsigned d = (unsigned char)b[j] - '0';
	if (d > 9)
		return -1;
	long long v = d;
	j++;
	if (d != 0) {
		/* more than MAXD digits leaves a digit at END, not '\r' */
		size_t end = len - *i > (size_t)maxd ? *i + (size_t)maxd : len;
		for (; j < end; j++) {
			d = (unsigned char)b[j] - '0';
			if (d > 9)
				break;
			v = v * 10 + d;
		}
	}
	if (j >= len || b[j] != '\r')
		return -1;
	*i = j;
	return v;
}

/* The count line of a whole, canonical multibulk request at BUF: returns
 * N > 0 with *IP just past its CRLF, or 0 for "not the fast case". A count
 * or bulk line of the fast case is at most 20 bytes, within any sane
 * max_inline (the general path enforces a smaller one). */
static inline long long whole_count(const char *buf, size_t len, const struct resp_limits *lim, size_t *ip)
{
	size_t i = 1;
	if (len == 0 || buf[0] != '*' || lim->max_inline < 32)
		return 0;
	long long n = fast_decimal(buf, len, &i, 9);
	/* fast_decimal leaves i < len, at the '\r' */
	if (n <= 0 || (unsigned long long)n > lim->max_multibulk || len - i < 2)
		return 0;
	i += 2;
	/* a count larger than the bytes present cannot be complete */
	if ((size_t)n > (len - i) / 4)
		return 0;
	*ip = i;
	return n;
}

/* The N bulks of that request from I on, into ARGV[0..N): returns the
 * request's whole length, or 0 for "not the fast case" (ARGV then holds
 * garbage). */
static inline size_t whole_args(char *buf, size_t len, const struct resp_limits *lim, size_t i, long long n,
				struct resp_arg *argv)
{
	for (long long k = 0; k < n; k++) {
		if (i >= len || buf[i] != '$')
			return 0;
		i++;
		long long bl = fast_decimal(buf, len, &i, 18);
		/* the CRLF, the bulk and the two bytes after it */
		if (bl < 0 || (unsigned long long)bl > lim->max_bulk_len || len - i < (size_t)bl + 4)
			return 0;
		i += 2;
		argv[k].ptr = buf + i;
		argv[k].len = (size_t)bl;
		i += (size_t)bl + 2;
	}
	return i;
}

/* The common case in one pass: a whole, well-formed multibulk request with
 * canonical counts, within every limit. Returns RESP_COMMAND, or
 * RESP_INCOMPLETE to mean "not that case": nothing was changed and the
 * general state machine takes over (which gives partial requests, odd
 * forms and every error exactly Redis's treatment). */
static enum resp_result resp_parse_fast(struct resp_parser *p, char *buf, size_t len,
					const struct resp_limits *lim, size_t *consumed)
{
	size_t i;
	long long n = whole_count(buf, len, lim, &i);
	if (!n)
		return RESP_INCOMPLETE;
	resp_argv_reserve(p, (size_t)n, (size_t)n);
	size_t end = whole_args(buf, len, lim, i, n, p->argv);
	if (!end)
		return RESP_INCOMPLETE;
	p->argc = (int)n;
	*consumed = end;
	return RESP_COMMAND;
}

size_t resp_parse_whole(char *buf, size_t len, const struct resp_limits *lim, struct resp_arg *argv, int max,
			int *argc)
{
	size_t i;
	long long n = whole_count(buf, len, lim, &i);
	if (!n || n > max)
		return 0;
	size_t end = whole_args(buf, len, lim, i, n, argv);
	if (end)
		*argc = (int)n;
	return end;
}

enum resp_result resp_parse(struct resp_parser *p, char *buf, size_t len, const struct resp_limits *lim,
			    size_t *consumed)
{
	enum resp_result r;
	if (p->state == RS_ERROR)
		return RESP_ERROR;
	if (len == 0)
		return RESP_INCOMPLETE;
	assert(len >= p->pos);
	if (p->state == RS_START) {
		if (p->argv_cap > RESP_ARGV_KEEP)
			resp_parser_free(p);
		p->argc = 0;
		p->error = NULL;
		p->is_inline = buf[0] != '*';
		if (!p->is_inline && resp_parse_fast(p, buf, len, lim, consumed) == RESP_COMMAND)
			return RESP_COMMAND;
		p->state = p->is_inline ? RS_INLINE : RS_MB_COUNT;
	}
	if (p->state == RS_INLINE)
		return resp_parse_inline(p, buf, len, lim, consumed);
	if (p->state == RS_MB_COUNT) {
		r = resp_parse_count(p, buf, len, lim, consumed);
		if (p->state != RS_MB_ARGS) /* still counting, done (empty) or failed */
			return r;
	}
	assert(p->state == RS_MB_ARGS);
	return resp_parse_args(p, buf, len, lim, consumed);
}
