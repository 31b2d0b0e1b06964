/* Unit tests for proto/reply: byte-exact RESP2 and RESP3 encodings (the
 * texts redis-server 7.0 sends), deferred headers, big values, and the
 * chunk chain under partial sends. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"

/* Everything queued in O, in order, as one malloc'd string (*LEN bytes). */
static char *flat(const struct obuf *o, size_t *len)
{
	struct iovec iov[1024];
	int n = obuf_iov(o, iov, 1024);
	size_t total = 0;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	char *s = malloc(total + 1);
	size_t at = 0;
	for (int i = 0; i < n; i++) {
		memcpy(s + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	s[total] = '\0';
	*len = total;
	return s;
}

static void show(const char *what, const char *s, size_t len)
{
	char buf[512];
	size_t at = 0;
	for (size_t i = 0; i < len && at + 8 < sizeof(buf); i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			buf[at++] = (char)c;
		else
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "\\x%02x", c);
	}
	buf[at] = '\0';
	diag("%s %s", what, buf);
}

/* O holds exactly WANT (WLEN bytes) and o->bytes agrees; O is emptied. */
static void expect(struct obuf *o, const char *want, size_t wlen, const char *name)
{
	size_t len;
	char *got = flat(o, &len);
	if (!ok(len == wlen && memcmp(got, want, wlen) == 0 && o->bytes == wlen, "%s", name)) {
		show("want", want, wlen);
		show("got ", got, len);
		diag("o->bytes %zu", o->bytes);
	}
	obuf_consume(o, o->bytes);
	free(got);
}

#define EXPECT(o, lit, name) expect((o), lit, sizeof(lit) - 1, name)

static void test_encodings(void)
{
	struct obuf o;
	obuf_init(&o);
	is_int(o.resp, 2, "obuf starts in RESP2");

	for (int resp = 2; resp <= 3; resp++) {
		o.resp = (uint8_t)resp;
		bool r3 = resp == 3;
		char name[64];
#define NAME(s) (snprintf(name, sizeof(name), "RESP%d %s", resp, s), name)
		reply_ok(&o);
		EXPECT(&o, "+OK\r\n", NAME("ok"));
		reply_simple(&o, "PONG");
		EXPECT(&o, "+PONG\r\n", NAME("simple"));
		reply_simple_len(&o, "QUEUEDxyz", 6);
		EXPECT(&o, "+QUEUED\r\n", NAME("simple_len"));
		reply_error(&o, "ERR syntax error");
		EXPECT(&o, "-ERR syntax error\r\n", NAME("error"));
		reply_error(&o, "ERR a\r\nb\nc\r");
		EXPECT(&o, "-ERR a  b c \r\n", NAME("error: CR and LF become spaces"));
		reply_error(&o, "-WRONGTYPE x");
		EXPECT(&o, "-WRONGTYPE x\r\n", NAME("error: no second dash"));
		reply_errorf(&o, "ERR unknown command '%s', with args beginning with: %s", "FOO", "'a' ");
		EXPECT(&o, "-ERR unknown command 'FOO', with args beginning with: 'a' \r\n", NAME("errorf"));
		reply_bulk(&o, "hello", 5);
		EXPECT(&o, "$5\r\nhello\r\n", NAME("bulk"));
		reply_bulk(&o, "", 0);
		EXPECT(&o, "$0\r\n\r\n", NAME("empty bulk"));
		reply_bulk(&o, "a\0\r\nb", 5);
		EXPECT(&o, "$5\r\na\0\r\nb\r\n", NAME("binary bulk"));
		reply_bulk_cstr(&o, "xyz");
		EXPECT(&o, "$3\r\nxyz\r\n", NAME("bulk_cstr"));
		reply_bulk_ll(&o, -1234567890123LL);
		EXPECT(&o, "$14\r\n-1234567890123\r\n", NAME("bulk_ll"));
		reply_bulk_ll(&o, 0);
		EXPECT(&o, "$1\r\n0\r\n", NAME("bulk_ll 0"));
		reply_long(&o, 42);
		EXPECT(&o, ":42\r\n", NAME("long"));
		reply_long(&o, INT64_MIN);
		EXPECT(&o, ":-9223372036854775808\r\n", NAME("long min"));
		reply_long(&o, INT64_MAX);
		EXPECT(&o, ":9223372036854775807\r\n", NAME("long max"));

		reply_double(&o, 3.14);
		if (r3)
			EXPECT(&o, ",3.1400000000000001\r\n", NAME("double"));
		else
			EXPECT(&o, "$18\r\n3.1400000000000001\r\n", NAME("double"));
		reply_double(&o, 10);
		if (r3)
			EXPECT(&o, ",10\r\n", NAME("double integral"));
		else
			EXPECT(&o, "$2\r\n10\r\n", NAME("double integral"));
		reply_double(&o, INFINITY);
		reply_double(&o, -INFINITY);
		if (r3)
			EXPECT(&o, ",inf\r\n,-inf\r\n", NAME("double inf"));
		else
			EXPECT(&o, "$3\r\ninf\r\n$4\r\n-inf\r\n", NAME("double inf"));
		reply_double(&o, -1.5e-300);
		if (r3)
			EXPECT(&o, ",-1.5000000000000001e-300\r\n", NAME("double tiny"));
		else
			EXPECT(&o, "$24\r\n-1.5000000000000001e-300\r\n", NAME("double tiny"));

		reply_bool(&o, true);
		reply_bool(&o, false);
		if (r3)
			EXPECT(&o, "#t\r\n#f\r\n", NAME("bool"));
		else
			EXPECT(&o, ":1\r\n:0\r\n", NAME("bool"));
		reply_null(&o);
		if (r3)
			EXPECT(&o, "_\r\n", NAME("null"));
		else
			EXPECT(&o, "$-1\r\n", NAME("null"));
		reply_null_array(&o);
		if (r3)
			EXPECT(&o, "_\r\n", NAME("null array"));
		else
			EXPECT(&o, "*-1\r\n", NAME("null array"));
		reply_array(&o, 3);
		EXPECT(&o, "*3\r\n", NAME("array"));
		reply_array(&o, 0);
		EXPECT(&o, "*0\r\n", NAME("empty array"));
		reply_map(&o, 2);
		if (r3)
			EXPECT(&o, "%2\r\n", NAME("map"));
		else
			EXPECT(&o, "*4\r\n", NAME("map"));
		reply_set(&o, 5);
		if (r3)
			EXPECT(&o, "~5\r\n", NAME("set"));
		else
			EXPECT(&o, "*5\r\n", NAME("set"));
		reply_push(&o, 3);
		if (r3)
			EXPECT(&o, ">3\r\n", NAME("push"));
		else
			EXPECT(&o, "*3\r\n", NAME("push"));
		reply_verbatim(&o, "hello", 5, "txt");
		if (r3)
			EXPECT(&o, "=9\r\ntxt:hello\r\n", NAME("verbatim"));
		else
			EXPECT(&o, "$5\r\nhello\r\n", NAME("verbatim"));
		reply_verbatim(&o, "# x\r\n", 5, "m");
		if (r3)
			EXPECT(&o, "=9\r\nm  :# x\r\n\r\n", NAME("verbatim short ext"));
		else
			EXPECT(&o, "$5\r\n# x\r\n\r\n", NAME("verbatim short ext"));
		reply_bignum_str(&o, "3492890328409238509324850943850943825024385");
		if (r3)
			EXPECT(&o, "(3492890328409238509324850943850943825024385\r\n", NAME("bignum"));
		else
			EXPECT(&o, "$43\r\n3492890328409238509324850943850943825024385\r\n", NAME("bignum"));
		reply_raw(&o, "+raw\r\n", 6);
		EXPECT(&o, "+raw\r\n", NAME("raw"));
#undef NAME
	}

	/* A long formatted error (past the stack buffer). */
	char arg[2000];
	memset(arg, 'a', sizeof(arg) - 1);
	arg[sizeof(arg) - 1] = '\0';
	reply_errorf(&o, "ERR %s\n", arg);
	size_t len;
	char *got = flat(&o, &len);
	ok(len == 5 + 1999 + 3 && memcmp(got, "-ERR aaa", 8) == 0 && memcmp(got + len - 3, " \r\n", 3) == 0,
	   "long errorf, trailing newline becomes a space");
	free(got);
	obuf_consume(&o, o.bytes);

	/* Muted: nothing at all. */
	o.muted = true;
	reply_ok(&o);
	reply_bulk(&o, "x", 1);
	reply_error(&o, "ERR x");
	reply_errorf(&o, "ERR %d", 1);
	reply_long(&o, 1);
	reply_double(&o, 1);
	reply_array(&o, 1);
	struct reply_deferred d;
	reply_deferred(&o, &d);
	reply_set_deferred(&o, &d, REPLY_AGG_ARRAY, 3);
	is_int(o.bytes, 0, "muted obuf stays empty");
	o.muted = false;
	obuf_free(&o);
}

static void test_deferred(void)
{
	struct obuf o;
	struct reply_deferred d, e;
	obuf_init(&o);

	reply_ok(&o);
	reply_deferred(&o, &d);
	reply_bulk(&o, "a", 1);
	reply_bulk(&o, "b", 1);
	reply_set_deferred(&o, &d, REPLY_AGG_ARRAY, 2);
	reply_ok(&o);
	EXPECT(&o, "+OK\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n+OK\r\n", "deferred array");

	reply_deferred(&o, &d);
	reply_set_deferred(&o, &d, REPLY_AGG_ARRAY, 0);
	EXPECT(&o, "*0\r\n", "deferred empty array at the end");

	reply_deferred(&o, &d);
	reply_bulk(&o, "k", 1);
	reply_long(&o, 1);
	reply_set_deferred(&o, &d, REPLY_AGG_MAP, 1);
	EXPECT(&o, "*2\r\n$1\r\nk\r\n:1\r\n", "deferred map, RESP2 counts elements");
	o.resp = 3;
	reply_deferred(&o, &d);
	reply_bulk(&o, "k", 1);
	reply_long(&o, 1);
	reply_set_deferred(&o, &d, REPLY_AGG_MAP, 1);
	EXPECT(&o, "%1\r\n$1\r\nk\r\n:1\r\n", "deferred map, RESP3");
	reply_deferred(&o, &d);
	reply_set_deferred(&o, &d, REPLY_AGG_SET, 0);
	EXPECT(&o, "~0\r\n", "deferred set, RESP3");
	o.resp = 2;
	reply_deferred(&o, &d);
	reply_set_deferred(&o, &d, REPLY_AGG_SET, 0);
	EXPECT(&o, "*0\r\n", "deferred set, RESP2");

	/* Nested, innermost filled first. */
	reply_deferred(&o, &d);
	reply_deferred(&o, &e);
	reply_long(&o, 1);
	reply_set_deferred(&o, &e, REPLY_AGG_ARRAY, 1);
	reply_long(&o, 2);
	reply_set_deferred(&o, &d, REPLY_AGG_ARRAY, 2);
	EXPECT(&o, "*2\r\n*1\r\n:1\r\n:2\r\n", "nested deferred");

	/* A header that fills the whole reservation. */
	reply_deferred(&o, &d);
	reply_set_deferred(&o, &d, REPLY_AGG_ARRAY, INT64_MIN);
	EXPECT(&o, "*-9223372036854775808\r\n", "deferred of the longest header");

	/* Content after the reservation spills into further chunks. */
	struct {
		char *p;
		size_t len;
	} want = { malloc(200000), 0 };
	reply_deferred(&o, &d);
	memcpy(want.p, "*5000\r\n", 7);
	want.len = 7;
	for (int i = 0; i < 5000; i++) {
		char item[32];
		int n = snprintf(item, sizeof(item), "$%d\r\n%d\r\n",
				 i < 10	    ? 1
				 : i < 100  ? 2
				 : i < 1000 ? 3
					    : 4,
				 i);
		memcpy(want.p + want.len, item, (size_t)n);
		want.len += (size_t)n;
		reply_bulk_ll(&o, i);
	}
	reply_set_deferred(&o, &d, REPLY_AGG_ARRAY, 5000);
	struct iovec iov[64];
	ok(obuf_iov(&o, iov, 64) > 2, "deferred content spans chunks");
	expect(&o, want.p, want.len, "deferred before several chunks of content");

	/* A reservation that does not fit the tail's room starts a chunk. */
	char fill[16384];
	memset(fill, 'f', sizeof(fill));
	for (size_t room = 0; room < 30; room++) {
		struct obuf p;
		obuf_init(&p);
		reply_raw(&p, "x", 1);
		size_t cap = p.tail->size;
		reply_raw(&p, fill, cap - 1 - room);
		reply_deferred(&p, &d);
		reply_ok(&p);
		reply_set_deferred(&p, &d, REPLY_AGG_ARRAY, 7);
		char *w = malloc(cap + 64);
		w[0] = 'x';
		memset(w + 1, 'f', cap - 1 - room);
		memcpy(w + cap - room, "*7\r\n+OK\r\n", 9);
		size_t wlen, glen;
		wlen = cap - room + 9;
		char *g = flat(&p, &glen);
		if (!(glen == wlen && memcmp(g, w, wlen) == 0 && p.bytes == wlen)) {
			ok(0, "deferred with %zu bytes of room left", room);
			free(g);
			free(w);
			obuf_free(&p);
			goto out;
		}
		free(g);
		free(w);
		obuf_free(&p);
	}
	ok(1, "deferred with 0..29 bytes of room left in the tail");
out:
	free(want.p);
	obuf_free(&o);
}

/* reply_deferred_cancel: the reservation and what followed are taken
 * back, within one chunk and across several; what came before stays, the
 * counts follow, the obuf takes replies again. */
static void test_deferred_cancel(void)
{
	struct obuf o;
	struct reply_deferred d;
	obuf_init(&o);
	reply_ok(&o);
	reply_deferred(&o, &d);
	reply_bulk(&o, "a", 1);
	reply_deferred_cancel(&o, &d);
	reply_error(&o, "BUSY x");
	EXPECT(&o, "+OK\r\n-BUSY x\r\n", "cancel within a chunk: the earlier reply and the new one");

	size_t alloc0 = o.alloc;
	reply_raw(&o, "+A\r\n", 4);
	reply_deferred(&o, &d);
	for (int i = 0; i < 20000; i++)
		reply_bulk_ll(&o, i);
	ok(o.head != o.tail, "the abandoned reply spans chunks");
	reply_deferred_cancel(&o, &d);
	ok(o.head == o.tail && o.alloc == alloc0,
	   "cancel frees the chunks after the reservation's (alloc %zu, was %zu)", o.alloc, alloc0);
	reply_long(&o, 7);
	EXPECT(&o, "+A\r\n:7\r\n", "cancel across chunks: only what came before, then the new reply");

	/* after part of the obuf was sent */
	reply_raw(&o, "+SENT\r\n", 7);
	obuf_consume(&o, 3);
	reply_deferred(&o, &d);
	reply_bulk(&o, "zz", 2);
	reply_deferred_cancel(&o, &d);
	EXPECT(&o, "NT\r\n", "cancel after a partial send keeps the unsent rest");

	o.muted = true;
	reply_deferred(&o, &d);
	reply_deferred_cancel(&o, &d);
	o.muted = false;
	EXPECT(&o, "", "cancel on a muted obuf: nothing");
	obuf_free(&o);
}

static void test_big_and_chunks(void)
{
	struct obuf o;
	obuf_init(&o);
	size_t base = zr_mem_used();

	/* A 1 MiB value: one copy into one chunk of about its size. */
	size_t big = 1 << 20;
	char *v = malloc(big);
	for (size_t i = 0; i < big; i++)
		v[i] = (char)(i * 7);
	reply_ok(&o);
	reply_bulk(&o, v, big);
	reply_ok(&o);
	struct iovec iov[16];
	int n = obuf_iov(&o, iov, 16);
	ok(n <= 3, "1 MiB bulk in at most 3 iovecs (%d)", n);
	ok(o.alloc < big + 64 * 1024, "1 MiB bulk holds %zu bytes of chunks", o.alloc);
	char *w = malloc(big + 64);
	memcpy(w, "+OK\r\n$1048576\r\n", 15);
	memcpy(w + 15, v, big);
	memcpy(w + 15 + big, "\r\n+OK\r\n", 7);
	expect(&o, w, big + 22, "1 MiB bulk between small replies");
	ok(o.alloc <= 16 * 1024 + 4096, "big chunk freed once sent (alloc %zu)", o.alloc);

	/* Sending rewinds the last standard chunk: the next replies allocate
	 * nothing. */
	reply_ok(&o);
	obuf_consume(&o, o.bytes);
	size_t before = zr_mem_used();
	for (int i = 0; i < 1000; i++)
		reply_ok(&o);
	ok(zr_mem_used() == before, "small replies after a full send allocate nothing");
	obuf_consume(&o, o.bytes);

	/* Random replies, sent in random partial writes across chunk
	 * boundaries; what goes out must equal what went in. */
	unsigned long long seed = 12345;
	size_t cap = 4 << 20, wlen = 0, slen = 0;
	char *want = malloc(cap), *sent = malloc(cap);
	int iovmax_ok = 1;
	for (int round = 0; round < 400; round++) {
		int k = 1 + (int)(seed % 40);
		for (int i = 0; i < k; i++) {
			seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
			size_t len = (seed >> 33) % (seed & 0x100 ? 40000 : 200);
			if (wlen + len + 64 > cap)
				break;
			char hdr[32];
			int h = snprintf(hdr, sizeof(hdr), "$%zu\r\n", len);
			memcpy(want + wlen, hdr, (size_t)h);
			memcpy(want + wlen + h, v + (seed % 1000), len);
			memcpy(want + wlen + h + len, "\r\n", 2);
			wlen += (size_t)h + len + 2;
			reply_bulk(&o, v + (seed % 1000), len);
		}
		/* one partial "writev" of up to 3 iovecs and a random length */
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		int cnt = obuf_iov(&o, iov, 3);
		iovmax_ok &= cnt <= 3;
		size_t take = (seed >> 20) % 70000, done = 0;
		for (int i = 0; i < cnt && done < take; i++) {
			size_t t = iov[i].iov_len < take - done ? iov[i].iov_len : take - done;
			memcpy(sent + slen + done, iov[i].iov_base, t);
			done += t;
		}
		obuf_consume(&o, done);
		slen += done;
	}
	while (o.bytes) {
		int cnt = obuf_iov(&o, iov, 2);
		size_t done = 0;
		for (int i = 0; i < cnt; i++) {
			memcpy(sent + slen + done, iov[i].iov_base, iov[i].iov_len);
			done += iov[i].iov_len;
		}
		obuf_consume(&o, done);
		slen += done;
	}
	ok(iovmax_ok, "obuf_iov respects max");
	ok(slen == wlen && memcmp(sent, want, wlen) == 0, "partial sends across chunks: %zu bytes intact",
	   wlen);
	ok(o.head == o.tail && (!o.head || o.head->used == 0), "everything sent: one empty chunk left");
	is_int(obuf_iov(&o, iov, 16), 0, "everything sent: no iovecs");
	free(want);
	free(sent);

	obuf_free(&o);
	is_int(o.alloc, 0, "obuf_free: alloc back to 0");
	is_int(zr_mem_used(), base, "obuf_free: every chunk given back");
	free(v);
	free(w);
}

/* failed_calls in INFO commandstats comes from this counter. */
static void test_error_count(void)
{
	struct obuf o;
	memset(&o, 0xa5, sizeof(o)); /* stack garbage: obuf_init must set every field */
	obuf_init(&o);
	reply_ok(&o);
	is_int(o.errors, 0, "no error counted for +OK");
	reply_error(&o, "ERR one");
	reply_errorf(&o, "ERR %s", "two");
	is_int(o.errors, 2, "reply_error and reply_errorf are counted");
	o.muted = true;
	reply_error(&o, "ERR muted");
	reply_errorf(&o, "ERR %d", 3);
	is_int(o.errors, 4, "muted errors are counted too");
	obuf_free(&o);
}

struct hook_seen {
	struct obuf o; /* first: the hook finds the record from its obuf */
	int calls, counted;
	char code[32];
};

static void hook(struct obuf *o, const char *code, size_t len, bool counted)
{
	struct hook_seen *h = (struct hook_seen *)(void *)o;
	h->calls++;
	h->counted += counted;
	snprintf(h->code, sizeof(h->code), "%.*s", (int)len, code);
}

/* The code INFO errorstats counts: Redis's afterErrorReply on the bytes
 * sent. */
static void test_error_code(void)
{
	static const struct {
		const char *text, *code;
	} cases[] = {
		{ "ERR syntax error", "ERR" },
		{ "WRONGTYPE Operation against a key", "WRONGTYPE" },
		{ "-NOSCRIPT No matching script", "NOSCRIPT" },
		{ "NOSPACE", "ERR" },
		{ "-", "ERR" },
		{ "", "ERR" },
		{ " leading space", "" },
		{ "CODE\nnext line", "CODE" },
		{ "CODE\r\n", "ERR" }, /* trimmed first, as Redis does */
		/* the space at byte 31 of "-<30 bytes> x": within Redis's 32 */
		{ "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
		{ "-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA x", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" },
		/* at byte 32: past it */
		{ "BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB x", "ERR" },
		{ "MY:CODE#1 x", "MY:CODE#1" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *code;
		size_t n = reply_error_code(cases[i].text, &code);
		ok(n == strlen(cases[i].code) && !memcmp(code, cases[i].code, n), "code of '%s': '%.*s'",
		   cases[i].text, (int)n, code);
	}

	struct hook_seen h = { 0 };
	obuf_init(&h.o);
	h.o.on_error = hook;
	reply_error(&h.o, "WRONGTYPE x");
	is_str(h.code, "WRONGTYPE", "the hook gets the code");
	is_str(h.o.last_error, "WRONGTYPE", "last_error is the same code");
	reply_error_nostats(&h.o, "-ERR counted where it arose");
	h.o.muted = true;
	reply_errorf(&h.o, "NOAUTH %s", "muted");
	is_int(h.calls, 3, "the hook sees every error, muted too");
	is_int(h.counted, 2, "reply_error_nostats is passed as not counted");
	is_int(h.o.errors, 3, "errors counts all three");
	obuf_free(&h.o);
}

int main(void)
{
	test_error_count();
	test_error_code();
	test_encodings();
	test_deferred();
	test_deferred_cancel();
	test_big_and_chunks();
	return done_testing();
}
