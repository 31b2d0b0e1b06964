/* Unit tests for proto/resp_reader: a corpus of RESP2 and RESP3 replies
 * (of the shapes redis-server 7.0 sends, nested ones included), each read
 * whole and cut at every byte — every proper prefix must read as
 * incomplete, never as an error or a shorter reply — and the whole corpus
 * as one stream fed one byte at a time, as a connection would receive it.
 * Each prefix is copied into an allocation of exactly its size, so a read
 * past the end trips ASan. Then malformed replies, which must read as
 * errors (at their full length, and never as a complete reply earlier).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/proto/resp_reader.h"

/* --- rendering a reply as text, to compare with the corpus ------------- */
struct sb {
	char buf[4096];
	size_t len;
};

static void sb_addf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_addf(struct sb *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->buf + b->len, sizeof(b->buf) - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len += (size_t)n < sizeof(b->buf) - b->len ? (size_t)n : sizeof(b->buf) - b->len - 1;
}

/* Renders the reply R (read from its buffer) into B; false on a child
 * that does not read. */
static bool render(struct sb *b, const struct resp_reply *r, const char *end)
{
	switch (r->type) {
	case RESP_REPLY_STATUS:
		sb_addf(b, "+%.*s", (int)r->len, r->str);
		return true;
	case RESP_REPLY_ERROR:
		sb_addf(b, "-%.*s", (int)r->len, r->str);
		return true;
	case RESP_REPLY_INT:
		sb_addf(b, ":%lld", r->integer);
		return true;
	case RESP_REPLY_BULK:
		sb_addf(b, "\"%.*s\"", (int)r->len, r->str);
		return true;
	case RESP_REPLY_NULL:
		sb_addf(b, "nil");
		return true;
	case RESP_REPLY_DOUBLE:
		sb_addf(b, ",%.*s", (int)r->len, r->str);
		return true;
	case RESP_REPLY_BOOL:
		sb_addf(b, "#%lld", r->integer);
		return true;
	case RESP_REPLY_BIGNUM:
		sb_addf(b, "(%.*s", (int)r->len, r->str);
		return true;
	case RESP_REPLY_VERBATIM:
		sb_addf(b, "=%.3s:%.*s", r->format, (int)r->len, r->str);
		return true;
	case RESP_REPLY_ARRAY:
	case RESP_REPLY_SET:
	case RESP_REPLY_MAP:
	case RESP_REPLY_PUSH: {
		const char *open = r->type == RESP_REPLY_ARRAY ? "["
				   : r->type == RESP_REPLY_SET ? "~{"
				   : r->type == RESP_REPLY_MAP ? "%{"
							       : ">[";
		sb_addf(b, "%s", open);
		long long values = r->type == RESP_REPLY_MAP ? 2 * r->count : r->count;
		const char *p = r->elems;
		for (long long i = 0; i < values; i++) {
			struct resp_reply child;
			long n = resp_reader_next(p, (size_t)(end - p), &child);
			if (n <= 0)
				return false;
			if (i)
				sb_addf(b, " ");
			if (!render(b, &child, end))
				return false;
			p += n;
		}
		sb_addf(b, "%s", r->type == RESP_REPLY_ARRAY || r->type == RESP_REPLY_PUSH ? "]" : "}");
		return true;
	}
	}
	sb_addf(b, "?");
	return false;
}

struct sample {
	const char *wire;
	const char *text; /* render() of it */
};

static const struct sample corpus[] = {
	{ "+OK\r\n", "+OK" },
	{ "+PONG\r\n", "+PONG" },
	{ "+\r\n", "+" },
	{ "-ERR unknown command 'FOO', with args beginning with: \r\n",
	  "-ERR unknown command 'FOO', with args beginning with: " },
	{ "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
	  "-WRONGTYPE Operation against a key holding the wrong kind of value" },
	{ ":0\r\n", ":0" },
	{ ":-1\r\n", ":-1" },
	{ ":9223372036854775807\r\n", ":9223372036854775807" },
	{ ":-9223372036854775808\r\n", ":-9223372036854775808" },
	{ "$5\r\nhello\r\n", "\"hello\"" },
	{ "$0\r\n\r\n", "\"\"" },
	{ "$4\r\na\r\nb\r\n", "\"a\r\nb\"" },
	{ "$-1\r\n", "nil" },
	{ "*-1\r\n", "nil" },
	{ "_\r\n", "nil" },
	{ "*0\r\n", "[]" },
	{ "*2\r\n$1\r\na\r\n:7\r\n", "[\"a\" :7]" },
	{ "*3\r\n*1\r\n+x\r\n*0\r\n$-1\r\n", "[[+x] [] nil]" },
	{ "*2\r\n*2\r\n*1\r\n:1\r\n-ERR e\r\n$2\r\nzz\r\n", "[[[:1] -ERR e] \"zz\"]" },
	{ "%2\r\n+server\r\n$5\r\nredis\r\n+proto\r\n:3\r\n", "%{+server \"redis\" +proto :3}" },
	{ "%0\r\n", "%{}" },
	{ "~2\r\n$1\r\na\r\n$1\r\nb\r\n", "~{\"a\" \"b\"}" },
	{ ",1.5\r\n", ",1.5" },
	{ ",inf\r\n", ",inf" },
	{ ",-nan\r\n", ",-nan" },
	{ "#t\r\n", "#1" },
	{ "#f\r\n", "#0" },
	{ "(3492890328409238509324850943850943825024385\r\n",
	  "(3492890328409238509324850943850943825024385" },
	{ "=15\r\ntxt:Some string\r\n", "=txt:Some string" },
	{ "=4\r\nmkd:\r\n", "=mkd:" },
	{ "!21\r\nSYNTAX invalid syntax\r\n", "-SYNTAX invalid syntax" },
	{ ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$3\r\nhey\r\n", ">[\"message\" \"ch\" \"hey\"]" },
	{ "|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*1\r\n:2\r\n", "[:2]" },
	{ "*1\r\n|1\r\n+a\r\n+b\r\n:5\r\n", "[:5]" },
};
#define NCORPUS (sizeof(corpus) / sizeof(corpus[0]))

/* Reads WIRE[0..N) from an allocation of exactly N bytes. */
static long read_exact(const char *wire, size_t n, struct resp_reply *r, struct sb *text)
{
	char *copy = malloc(n ? n : 1);
	memcpy(copy, wire, n);
	long got = resp_reader_next(copy, n, r);
	if (got > 0 && text) {
		text->len = 0;
		if (!render(text, r, copy + n))
			got = -2;
		text->buf[text->len] = '\0';
	}
	free(copy);
	return got;
}

static void test_corpus(void)
{
	for (size_t i = 0; i < NCORPUS; i++) {
		const struct sample *s = &corpus[i];
		size_t n = strlen(s->wire);
		struct resp_reply r;
		struct sb text;
		long got = read_exact(s->wire, n, &r, &text);
		is_int(got, (long)n, "corpus %zu reads whole (%zu bytes)", i, n);
		is_str(got > 0 ? text.buf : "", s->text, "corpus %zu reads as its text", i);
		if (got > 0)
			is_int(r.size, n, "corpus %zu: size is the whole reply", i);
		size_t bad = 0;
		for (size_t k = 0; k < n; k++)
			if (read_exact(s->wire, k, NULL, NULL) != 0)
				bad = k + 1;
		ok(!bad, "corpus %zu: every proper prefix is incomplete%s", i, bad ? " (one was not)" : "");
		/* with trailing bytes of the next reply: the same size */
		char more[512];
		snprintf(more, sizeof(more), "%s+NEXT\r\n", s->wire);
		is_int(read_exact(more, strlen(more), &r, NULL), (long)n, "corpus %zu: stops at its end", i);
	}
}

/* The whole corpus as one stream, arriving one byte at a time and split
 * at every point into two receives: the replies come out in order. */
static void test_stream(void)
{
	char stream[8192];
	size_t len = 0;
	for (size_t i = 0; i < NCORPUS; i++) {
		size_t n = strlen(corpus[i].wire);
		memcpy(stream + len, corpus[i].wire, n);
		len += n;
	}
	/* byte by byte: a connection's receive buffer */
	char *buf = NULL;
	size_t have = 0, seen = 0;
	bool order = true;
	for (size_t k = 0; k < len; k++) {
		buf = realloc(buf, have + 1);
		buf[have++] = stream[k];
		for (;;) {
			struct resp_reply r;
			long got = resp_reader_next(buf, have, &r);
			if (got < 0)
				order = false;
			if (got <= 0)
				break;
			struct sb text = { .len = 0 };
			render(&text, &r, buf + have);
			text.buf[text.len] = '\0';
			if (seen >= NCORPUS || strcmp(text.buf, corpus[seen].text) != 0)
				order = false;
			seen++;
			memmove(buf, buf + got, have - (size_t)got);
			have -= (size_t)got;
		}
	}
	free(buf);
	ok(order && seen == NCORPUS && have == 0, "the corpus fed byte by byte: %zu replies in order", seen);
	/* two receives, split at every byte */
	bool all = true;
	for (size_t cut = 0; cut <= len; cut++) {
		size_t pos = 0, count = 0;
		size_t avail = cut;
		for (int round = 0; round < 2; round++) {
			for (;;) {
				long got = resp_reader_next(stream + pos, avail - pos, NULL);
				if (got < 0)
					all = false;
				if (got <= 0)
					break;
				pos += (size_t)got;
				count++;
			}
			avail = len;
		}
		if (count != NCORPUS || pos != len)
			all = false;
	}
	ok(all, "the corpus split in two at each of its %zu bytes reads the same replies", len);
}

static void test_errors(void)
{
	static const char *bad[] = {
		"?x\r\n",		     /* unknown type */
		"+OK\rX",		     /* CR not followed by LF */
		":12a\r\n",		     /* not an integer */
		":\r\n",		     /* empty integer */
		":99999999999999999999\r\n", /* overflows */
		"$-2\r\n",		     /* bad length */
		"$x\r\n",		     /* bad length */
		"$3\r\nabcd\r\n",	     /* bulk not followed by CRLF */
		"*-2\r\n",		     /* bad count */
		"~-1\r\n",		     /* only * and $ have a null form */
		"*1\r\n?\r\n",		     /* a bad element */
		"#x\r\n",		     /* boolean neither t nor f */
		"_x\r\n",		     /* null with a payload */
		"=3\r\ntxt\r\n",	     /* verbatim without its format */
		"=5\r\ntxtab\r\n",	     /* verbatim without ':' */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t n = strlen(bad[i]);
		long whole = read_exact(bad[i], n, NULL, NULL);
		bool early = false;
		for (size_t k = 0; k < n; k++)
			if (read_exact(bad[i], k, NULL, NULL) > 0)
				early = true;
		ok(whole == -1 && !early, "malformed %zu is an error, no prefix a reply", i);
	}
	/* nesting: 64 levels read, 65 do not */
	char deep[1024];
	size_t len = 0;
	for (int i = 0; i < RESP_READER_MAX_DEPTH; i++)
		len += (size_t)snprintf(deep + len, sizeof(deep) - len, "*1\r\n");
	len += (size_t)snprintf(deep + len, sizeof(deep) - len, ":1\r\n");
	is_int(resp_reader_next(deep, len, NULL), (long)len, "%d levels of nesting read",
	       RESP_READER_MAX_DEPTH);
	char deeper[1024];
	int n = snprintf(deeper, sizeof(deeper), "*1\r\n%.*s", (int)len, deep);
	is_int(resp_reader_next(deeper, (size_t)n, NULL), -1, "one level more is an error");
}

int main(void)
{
	test_corpus();
	test_stream();
	test_errors();
	return done_testing();
}
