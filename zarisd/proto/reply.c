/* reply — see reply.h.
 *
 * Hot path: nearly every reply is a few dozen bytes appended to the tail
 * chunk, which after the first reply of a connection always exists (a fully
 * sent standard chunk is rewound instead of freed), so the common case is a
 * bounds check and a memcpy: no allocation, no formatting library calls.
 * Chunks are OBUF_CHUNK_ALLOC bytes; data that does not fit fills the
 * tail's room and goes on in a new chunk sized for the rest, so a large
 * value is copied exactly once and sits in one chunk of its own size.
 */
#include "zarisd/proto/reply.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"

#define OBUF_CHUNK_ALLOC (16 * 1024)	     /* a jemalloc size class: no slack */
#define OBUF_CHUNK_MAX (1024u * 1024 * 1024) /* data[] of one chunk; fits uint32_t */
#define REPLY_HDR_MAX 32		     /* type byte, up to 20 digits, CRLF, slack */
#define REPLY_DEFERRED_FILL '?'		     /* marks a reservation not yet filled */

void obuf_init(struct obuf *o)
{
	/* every field: an obuf on the stack (tests, the bench) has no calloc's zeros */
	*o = (struct obuf){ .resp = 2 };
}

static void obuf_chunk_free(struct obuf *o, struct obuf_chunk *c)
{
	o->alloc -= zr_usable(c);
	zr_free(c);
}

void obuf_free(struct obuf *o)
{
	struct obuf_chunk *c = o->head;
	while (c) {
		struct obuf_chunk *next = c->next;
		obuf_chunk_free(o, c);
		c = next;
	}
	o->head = o->tail = NULL;
	o->bytes = 0;
}

/* Appends a chunk with room for at least MIN_DATA bytes (at most
 * OBUF_CHUNK_MAX) and makes it the tail. */
static struct obuf_chunk *obuf_chunk_new(struct obuf *o, size_t min_data)
{
	size_t want = sizeof(struct obuf_chunk) + (min_data < OBUF_CHUNK_MAX ? min_data : OBUF_CHUNK_MAX);
	if (want < OBUF_CHUNK_ALLOC)
		want = OBUF_CHUNK_ALLOC;
	struct obuf_chunk *c = zr_malloc(want);
	size_t usable = zr_usable(c);
	size_t cap = usable - sizeof(*c); /* the allocator's rounding is free room */
	c->next = NULL;
	c->sent = 0;
	c->used = 0;
	c->size = (uint32_t)(cap < OBUF_CHUNK_MAX ? cap : OBUF_CHUNK_MAX);
	if (o->tail)
		o->tail->next = c;
	else
		o->head = c;
	o->tail = c;
	o->alloc += usable;
	return c;
}

/* A chunk not bigger than a standard one (whose data[] is a little under
 * OBUF_CHUNK_ALLOC, more or less depending on the allocator's rounding). */
static inline bool obuf_chunk_is_standard(const struct obuf_chunk *c)
{
	return c->size <= OBUF_CHUNK_ALLOC;
}

void obuf_consume(struct obuf *o, size_t n)
{
	assert(n <= o->bytes);
	o->bytes -= n;
	while (o->head) {
		struct obuf_chunk *c = o->head;
		size_t take = c->used - c->sent;
		if (take > n)
			take = n;
		c->sent += (uint32_t)take;
		n -= take;
		if (c->sent < c->used)
			break;
		if (c->next) {
			o->head = c->next;
			obuf_chunk_free(o, c);
			continue;
		}
		/* The tail is done: rewind a standard chunk for the next replies,
		 * give a big one back. */
		if (obuf_chunk_is_standard(c)) {
			c->sent = c->used = 0;
		} else {
			obuf_chunk_free(o, c);
			o->head = o->tail = NULL;
		}
		break;
	}
	assert(n == 0);
}

int obuf_iov(const struct obuf *o, struct iovec *iov, int max)
{
	int n = 0;
	for (const struct obuf_chunk *c = o->head; c && n < max; c = c->next) {
		if (c->used == c->sent)
			continue;
		iov[n].iov_base = (void *)(c->data + c->sent);
		iov[n].iov_len = c->used - c->sent;
		n++;
	}
	return n;
}

/* Appends LEN bytes; the chunk that takes the rest after the tail's room
 * gets room for EXTRA more bytes too (a bulk's CRLF). */
static void ob_add_slow(struct obuf *o, const char *p, size_t len, size_t extra)
{
	struct obuf_chunk *t = o->tail;
	o->bytes += len;
	if (t) {
		size_t room = t->size - t->used;
		if (room > len)
			room = len;
		memcpy(t->data + t->used, p, room);
		t->used += (uint32_t)room;
		p += room;
		len -= room;
	}
	while (len) {
		t = obuf_chunk_new(o, len + extra);
		size_t n = len < t->size ? len : t->size;
		memcpy(t->data, p, n);
		t->used = (uint32_t)n;
		p += n;
		len -= n;
	}
}

static inline void ob_add(struct obuf *o, const void *p, size_t len)
{
	struct obuf_chunk *t = o->tail;
	if (t && t->size - t->used >= len) {
		memcpy(t->data + t->used, p, len);
		t->used += (uint32_t)len;
		o->bytes += len;
		return;
	}
	ob_add_slow(o, p, len, 0);
}

/* N contiguous bytes at the tail's end (N small); ob_commit() says how many
 * were written. */
static inline char *ob_reserve(struct obuf *o, size_t n)
{
	struct obuf_chunk *t = o->tail;
	if (!t || t->size - t->used < n)
		t = obuf_chunk_new(o, n);
	return t->data + t->used;
}

static inline void ob_commit(struct obuf *o, size_t n)
{
	o->tail->used += (uint32_t)n;
	o->bytes += n;
}

/* Writes "<type><n>\r\n" at DST (REPLY_HDR_MAX bytes); returns its length. */
static inline size_t ob_fmt_hdr(char *dst, char type, long long n)
{
	dst[0] = type;
	/* most headers (a small bulk's length, a short array's count) have
	 * at most three digits: no conversion loop for those */
	if (n >= 0 && n < 1000) {
		unsigned u = (unsigned)n;
		size_t len = 1;
		if (u >= 100)
			dst[len++] = (char)('0' + u / 100);
		if (u >= 10)
			dst[len++] = (char)('0' + u / 10 % 10);
		dst[len++] = (char)('0' + u % 10);
		dst[len] = '\r';
		dst[len + 1] = '\n';
		return len + 2;
	}
	size_t len = 1 + zr_ll_to_str(dst + 1, n);
	dst[len] = '\r';
	dst[len + 1] = '\n';
	return len + 2;
}

static inline void ob_hdr(struct obuf *o, char type, long long n)
{
	char *d = ob_reserve(o, REPLY_HDR_MAX);
	ob_commit(o, ob_fmt_hdr(d, type, n));
}

void reply_raw(struct obuf *o, const void *p, size_t len)
{
	if (o->muted)
		return;
	ob_add(o, p, len);
}

void reply_simple_len(struct obuf *o, const char *s, size_t len)
{
	if (o->muted)
		return;
	struct obuf_chunk *t = o->tail;
	if (t && t->size - t->used >= len + 3) {
		char *d = t->data + t->used;
		d[0] = '+';
		memcpy(d + 1, s, len);
		d[len + 1] = '\r';
		d[len + 2] = '\n';
		ob_commit(o, len + 3);
		return;
	}
	ob_add(o, "+", 1);
	ob_add(o, s, len);
	ob_add(o, "\r\n", 2);
}

void reply_simple(struct obuf *o, const char *s)
{
	reply_simple_len(o, s, strlen(s));
}

void reply_ok(struct obuf *o)
{
	if (o->muted)
		return;
	ob_add(o, "+OK\r\n", 5);
}

size_t reply_error_code(const char *s, const char **code)
{
	const char *w = s[0] == '-' ? s + 1 : s;
	size_t len = strlen(w);
	/* Redis trims trailing CR/LF first (addReplyErrorFormat) */
	while (len && (w[len - 1] == '\r' || w[len - 1] == '\n'))
		len--;
	size_t n = strcspn(w, " \r\n");
	/* the space at byte n + 1 of what is sent ('-' first): Redis looks
	 * for it in the first 32 bytes */
	if (n >= len || n + 1 >= 32) {
		*code = "ERR";
		return 3;
	}
	*code = w;
	return n;
}

static void error_reply(struct obuf *o, const char *s, bool counted)
{
	o->errors++; /* counted even when muted: the command still failed */
	const char *code;
	size_t n = reply_error_code(s, &code);
	memcpy(o->last_error, code, n); /* n <= 30: reply_error_code */
	o->last_error[n] = '\0';
	if (o->on_error)
		o->on_error(o, o->last_error, n, counted);
	if (o->muted)
		return;
	size_t len = strlen(s);
	if (len == 0 || s[0] != '-')
		ob_add(o, "-", 1);
	/* A CR or LF inside would end the error early and desync the client. */
	while (len) {
		size_t clean = strcspn(s, "\r\n");
		if (clean > len)
			clean = len;
		ob_add(o, s, clean);
		s += clean;
		len -= clean;
		if (len) {
			ob_add(o, " ", 1);
			s++;
			len--;
		}
	}
	ob_add(o, "\r\n", 2);
}

void reply_error(struct obuf *o, const char *s)
{
	error_reply(o, s, true);
}

void reply_error_nostats(struct obuf *o, const char *s)
{
	error_reply(o, s, false);
}

void reply_errorf(struct obuf *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0) {
		reply_error(o, "ERR internal error formatting a reply");
		return;
	}
	if ((size_t)n < sizeof(buf)) {
		reply_error(o, buf);
		return;
	}
	char *big = zr_malloc((size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	reply_error(o, big);
	zr_free(big);
}

void reply_bulk(struct obuf *o, const void *p, size_t len)
{
	if (o->muted)
		return;
	struct obuf_chunk *t = o->tail;
	if (t && t->size - t->used >= len + REPLY_HDR_MAX) {
		char *d = t->data + t->used;
		size_t h = ob_fmt_hdr(d, '$', (long long)len);
		memcpy(d + h, p, len);
		d[h + len] = '\r';
		d[h + len + 1] = '\n';
		ob_commit(o, h + len + 2);
		return;
	}
	ob_hdr(o, '$', (long long)len);
	t = o->tail;
	if (t->size - t->used >= len)
		ob_add(o, p, len);
	else
		ob_add_slow(o, p, len, 2);
	ob_add(o, "\r\n", 2);
}

void reply_bulk_cstr(struct obuf *o, const char *s)
{
	reply_bulk(o, s, strlen(s));
}

void reply_bulk_ll(struct obuf *o, long long v)
{
	if (o->muted)
		return;
	char num[ZR_LONG_STR_SIZE];
	size_t n = zr_ll_to_str(num, v);
	char *d = ob_reserve(o, REPLY_HDR_MAX + ZR_LONG_STR_SIZE + 2);
	size_t h = ob_fmt_hdr(d, '$', (long long)n);
	memcpy(d + h, num, n);
	d[h + n] = '\r';
	d[h + n + 1] = '\n';
	ob_commit(o, h + n + 2);
}

void reply_long(struct obuf *o, long long v)
{
	if (o->muted)
		return;
	ob_hdr(o, ':', v);
}

void reply_double(struct obuf *o, double v)
{
	if (o->muted)
		return;
	char buf[64];
	size_t n = zr_d_to_str(buf + 1, sizeof(buf) - 3, v);
	if (o->resp >= 3) {
		buf[0] = ',';
		buf[n + 1] = '\r';
		buf[n + 2] = '\n';
		ob_add(o, buf, n + 3);
	} else {
		reply_bulk(o, buf + 1, n);
	}
}

void reply_bool(struct obuf *o, bool v)
{
	if (o->muted)
		return;
	if (o->resp >= 3)
		ob_add(o, v ? "#t\r\n" : "#f\r\n", 4);
	else
		ob_add(o, v ? ":1\r\n" : ":0\r\n", 4);
}

void reply_null(struct obuf *o)
{
	if (o->muted)
		return;
	if (o->resp >= 3)
		ob_add(o, "_\r\n", 3);
	else
		ob_add(o, "$-1\r\n", 5);
}

void reply_null_array(struct obuf *o)
{
	if (o->muted)
		return;
	if (o->resp >= 3)
		ob_add(o, "_\r\n", 3);
	else
		ob_add(o, "*-1\r\n", 5);
}

void reply_array(struct obuf *o, long n)
{
	if (o->muted)
		return;
	ob_hdr(o, '*', n);
}

void reply_map(struct obuf *o, long pairs)
{
	if (o->muted)
		return;
	if (o->resp >= 3)
		ob_hdr(o, '%', pairs);
	else
		ob_hdr(o, '*', 2LL * pairs);
}

void reply_set(struct obuf *o, long n)
{
	if (o->muted)
		return;
	ob_hdr(o, o->resp >= 3 ? '~' : '*', n);
}

void reply_push(struct obuf *o, long n)
{
	if (o->muted)
		return;
	ob_hdr(o, o->resp >= 3 ? '>' : '*', n);
}

void reply_verbatim(struct obuf *o, const char *p, size_t len, const char *ext)
{
	if (o->muted)
		return;
	if (o->resp < 3) {
		reply_bulk(o, p, len);
		return;
	}
	char *d = ob_reserve(o, REPLY_HDR_MAX + 4);
	size_t h = ob_fmt_hdr(d, '=', (long long)len + 4);
	for (int i = 0; i < 3; i++) {
		d[h + i] = *ext ? *ext : ' ';
		if (*ext)
			ext++;
	}
	d[h + 3] = ':';
	ob_commit(o, h + 4);
	ob_add(o, p, len);
	ob_add(o, "\r\n", 2);
}

void reply_bignum_str(struct obuf *o, const char *s)
{
	if (o->muted)
		return;
	if (o->resp < 3) {
		reply_bulk_cstr(o, s);
		return;
	}
	ob_add(o, "(", 1);
	ob_add(o, s, strlen(s));
	ob_add(o, "\r\n", 2);
}

void reply_deferred(struct obuf *o, struct reply_deferred *d)
{
	if (o->muted) {
		d->chunk = NULL;
		d->off = 0;
		return;
	}
	char *p = ob_reserve(o, REPLY_DEFERRED_MAX);
	memset(p, REPLY_DEFERRED_FILL, REPLY_DEFERRED_MAX);
	d->chunk = o->tail;
	d->off = o->tail->used;
	ob_commit(o, REPLY_DEFERRED_MAX);
}

void reply_deferred_cancel(struct obuf *o, struct reply_deferred *d)
{
	struct obuf_chunk *c = d->chunk;
	if (!c)
		return;
	assert(d->off + REPLY_DEFERRED_MAX <= c->used && c->sent <= d->off);
	assert(c->data[d->off] == REPLY_DEFERRED_FILL);
	/* nothing after the reservation was sent (reply.h's rules) */
	size_t dropped = c->used - d->off;
	c->used = d->off;
	struct obuf_chunk *next = c->next;
	c->next = NULL;
	o->tail = c;
	while (next) {
		struct obuf_chunk *after = next->next;
		assert(next->sent == 0);
		dropped += next->used;
		obuf_chunk_free(o, next);
		next = after;
	}
	o->bytes -= dropped;
	d->chunk = NULL;
}

void reply_set_deferred(struct obuf *o, struct reply_deferred *d, enum reply_agg type, long n)
{
	struct obuf_chunk *c = d->chunk;
	if (!c)
		return;
	/* Catches a reservation that was sent, rewound or moved by filling an
	 * earlier one first (see the rules in reply.h). */
	assert(d->off + REPLY_DEFERRED_MAX <= c->used && c->sent <= d->off);
	assert(c->data[d->off] == REPLY_DEFERRED_FILL &&
	       c->data[d->off + REPLY_DEFERRED_MAX - 1] == REPLY_DEFERRED_FILL);
	char hdr[REPLY_HDR_MAX];
	size_t h;
	switch (type) {
	case REPLY_AGG_MAP:
		h = o->resp >= 3 ? ob_fmt_hdr(hdr, '%', n) : ob_fmt_hdr(hdr, '*', 2LL * n);
		break;
	case REPLY_AGG_SET:
		h = ob_fmt_hdr(hdr, o->resp >= 3 ? '~' : '*', n);
		break;
	default:
		h = ob_fmt_hdr(hdr, '*', n);
		break;
	}
	assert(h <= REPLY_DEFERRED_MAX);
	char *at = c->data + d->off;
	memcpy(at, hdr, h);
	size_t gap = REPLY_DEFERRED_MAX - h;
	if (gap) {
		/* Close the gap by moving what followed the reservation in this
		 * chunk (at most one chunk's worth, usually a few bytes). */
		memmove(at + h, at + REPLY_DEFERRED_MAX, c->used - d->off - REPLY_DEFERRED_MAX);
		c->used -= (uint32_t)gap;
		o->bytes -= gap;
	}
	d->chunk = NULL;
}

void reply_fixed_reserve(struct obuf *o, size_t n, struct reply_fixed *f)
{
	assert(!o->muted && n <= REPLY_HDR_MAX);
	f->bytes_before = o->bytes;
	char *d = ob_reserve(o, n);
	memset(d, 0, n);
	f->chunk = o->tail;
	f->off = (uint32_t)(d - o->tail->data);
	f->len = (uint32_t)n;
	ob_commit(o, n);
}

void reply_fixed_fill(struct reply_fixed *f, const void *bytes)
{
	memcpy(f->chunk->data + f->off, bytes, f->len);
}

int reply_fixed_next_byte(const struct obuf *o, const struct reply_fixed *f)
{
	if (o->bytes == f->bytes_before + f->len)
		return -1;
	const struct obuf_chunk *c = f->chunk;
	uint32_t at = f->off + f->len;
	while (c && at >= c->used) {
		c = c->next;
		at = 0;
	}
	return c ? (unsigned char)c->data[at] : -1;
}

void reply_fixed_cancel(struct obuf *o, struct reply_fixed *f)
{
	assert(o->tail == f->chunk && f->chunk->used == f->off + f->len);
	f->chunk->used -= f->len;
	o->bytes -= f->len;
}
