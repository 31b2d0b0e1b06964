/* Unit tests for proto/resp: valid requests (whole and byte by byte),
 * a corpus of malformed and truncated requests with Redis 7.0's exact
 * error texts (checked against redis-server 7.0.15), limits, and a
 * randomized round trip with a fixed seed.
 *
 * Every input is run through run(), which behaves like a connection: it
 * feeds the bytes in pieces, moves the buffer to a fresh allocation before
 * every call (so a parser that kept pointers instead of offsets trips
 * ASan), drops consumed bytes and records every result as text. Feeding
 * all at once, byte by byte and in random pieces must give the same text.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/resp.h"

static const struct resp_limits redis_limits = {
	.max_bulk_len = 512ULL * 1024 * 1024,
	.max_multibulk = INT_MAX,
	.max_inline = 64 * 1024,
};

/* --- a growable string ------------------------------------------------- */
struct sb {
	char *p;
	size_t len, cap;
};

static void sb_add(struct sb *b, const void *p, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void sb_printf(struct sb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sb *b, const char *fmt, ...)
{
	char tmp[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* Argument bytes as text: printable ASCII as is (except \ [ ]), the rest
 * as \xHH. */
static void sb_arg(struct sb *b, const char *p, size_t n)
{
	sb_add(b, "[", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c >= 0x20 && c < 0x7f && c != '\\' && c != '[' && c != ']')
			sb_add(b, &p[i], 1);
		else
			sb_printf(b, "\\x%02x", c);
	}
	sb_add(b, "]", 1);
}

/* --- the connection simulator ----------------------------------------- */

/* How many bytes to feed next: 0 = everything, 1 = byte by byte, 2 = random. */
static unsigned long long rng_state = 0x9e3779b97f4a7c15ULL;
static unsigned long long rng(void)
{
	/* xorshift64*: fixed seed, so every run tests the same inputs */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static size_t rng_below(size_t n)
{
	return n ? (size_t)(rng() % n) : 0;
}

enum feed {
	FEED_WHOLE,
	FEED_BYTES,
	FEED_RANDOM
};

/* Results: "C<argc>[arg]...;" per command, "E;" per empty request,
 * "X:<error>;" for an error (which ends the run), "I<n>;" when N bytes of
 * an incomplete request remain at the end. */
static char *run(const char *in, size_t len, const struct resp_limits *lim, enum feed feed)
{
	struct resp_parser p;
	struct sb out = { 0 };
	char *buf = NULL;
	size_t have = 0, off = 0, cap = 0, moves = 0;
	resp_parser_init(&p);
	sb_add(&out, "", 0);
	for (;;) {
		while (have > 0) {
			size_t consumed = 0;
			enum resp_result r = resp_parse(&p, buf, have, lim, &consumed);
			if (r == RESP_INCOMPLETE)
				break;
			if (r == RESP_ERROR) {
				sb_printf(&out, "X:%s;", p.error);
				goto out;
			}
			if (r == RESP_COMMAND) {
				sb_printf(&out, "C%d", p.argc);
				for (int i = 0; i < p.argc; i++)
					sb_arg(&out, p.argv[i].ptr, p.argv[i].len);
				sb_add(&out, ";", 1);
			} else {
				sb_add(&out, "E;", 2);
			}
			if (consumed == 0 || consumed > have) {
				sb_printf(&out, "BAD-CONSUMED(%zu of %zu);", consumed, have);
				goto out;
			}
			memmove(buf, buf + consumed, have - consumed);
			have -= consumed;
		}
		if (off == len)
			break;
		size_t n = len - off;
		if (feed == FEED_BYTES)
			n = 1;
		else if (feed == FEED_RANDOM)
			n = 1 + rng_below(n < 64 ? n : (rng() & 1 ? 8 : n));
		/* A fresh block on (nearly) every call: the parser may hold
		 * offsets, never pointers, across calls. Big buffers move only
		 * now and then, to keep byte-by-byte runs over 64 KiB linear. */
		if (have < 4096 || ++moves % 256 == 0 || have + n > cap) {
			cap = have + n < 4096 ? have + n : 2 * (have + n);
			char *nb = malloc(cap);
			if (have)
				memcpy(nb, buf, have);
			free(buf);
			buf = nb;
		}
		memcpy(buf + have, in + off, n);
		have += n;
		off += n;
	}
	if (have)
		sb_printf(&out, "I%zu;", have);
out:
	free(buf);
	resp_parser_free(&p);
	return out.p;
}

/* Runs IN whole, byte by byte and in random pieces; all three must agree
 * with WANT. */
static void check_all_feeds(const char *name, const char *in, size_t len, const struct resp_limits *lim,
			    const char *want)
{
	char *whole = run(in, len, lim, FEED_WHOLE);
	char *bytes = run(in, len, lim, FEED_BYTES);
	char *rnd = run(in, len, lim, FEED_RANDOM);
	int good = strcmp(whole, want) == 0 && strcmp(bytes, want) == 0 && strcmp(rnd, want) == 0;
	ok(good, "%s", name);
	if (!good)
		diag("want   %s\n# whole  %s\n# bytes  %s\n# random %s", want, whole, bytes, rnd);
	free(whole);
	free(bytes);
	free(rnd);
}

#define S(lit) lit, sizeof(lit) - 1

/* --- valid requests ----------------------------------------------------- */
static const struct {
	const char *name;
	const char *in;
	size_t len;
	const char *want;
} valid[] = {
	{ "multibulk PING", S("*1\r\n$4\r\nPING\r\n"), "C1[PING];" },
	{ "multibulk SET", S("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nvalue\r\n"), "C3[SET][k][value];" },
	{ "empty bulk", S("*2\r\n$3\r\nGET\r\n$0\r\n\r\n"), "C2[GET][];" },
	{ "binary bulk with NUL, CR, LF", S("*2\r\n$3\r\nSET\r\n$7\r\na\0\r\nb\n*\r\n"),
	  "C2[SET][a\\x00\\x0d\\x0ab\\x0a*];" },
	{ "bulk that looks like a request", S("*1\r\n$14\r\n*1\r\n$4\r\nPING\r\n\r\n"),
	  "C1[*1\\x0d\\x0a$4\\x0d\\x0aPING\\x0d\\x0a];" },
	{ "*0 is skipped", S("*0\r\n"), "E;" },
	{ "*-1 is skipped", S("*-1\r\n"), "E;" },
	{ "any negative count is skipped", S("*-5\r\n"), "E;" },
	{ "byte after the count's CR is not checked", S("*1\r\x00$4\r\nPING\r\n"), "C1[PING];" },
	{ "byte after a bulk count's CR is not checked", S("*1\r\n$4\rxPING\r\n"), "C1[PING];" },
	{ "two bytes after a bulk are not checked", S("*2\r\n$4\r\nECHO\r\n$3\r\nfooXYPING\r\n"),
	  "C2[ECHO][foo];C1[PING];" },
	{ "count line with max digits", S("*2147483647\r\n"), "I13;" },
	{ "bulk of the max length waits", S("*1\r\n$536870912\r\n"), "I16;" },
	{ "inline CRLF", S("PING\r\n"), "C1[PING];" },
	{ "inline LF", S("PING\n"), "C1[PING];" },
	{ "inline spaces and tabs", S("  GET \t  key  \r\n"), "C2[GET][key];" },
	{ "inline empty CRLF", S("\r\n"), "E;" },
	{ "inline empty LF", S("\n"), "E;" },
	{ "inline only blanks", S("   \t \r\n"), "E;" },
	{ "inline $ is not multibulk", S("$3\r\n"), "C1[$3];" },
	{ "inline CR inside splits", S("ECHO x\rPING\r\n"), "C3[ECHO][x][PING];" },
	{ "inline only one trailing CR stripped", S("ECHO x\r\r\n"), "C2[ECHO][x];" },
	{ "inline double quotes", S("SET \"a b\" c\r\n"), "C3[SET][a b][c];" },
	{ "inline single quotes", S("SET 'a b' c\r\n"), "C3[SET][a b][c];" },
	{ "inline escapes", S("ECHO \"\\n\\r\\t\\b\\a\\\\\\\"\"\r\n"),
	  "C2[ECHO][\\x0a\\x0d\\x09\\x08\\x07\\x5c\"];" },
	{ "inline hex escapes", S("ECHO \"a\\x41\\x4a\\xfF\\x00z\"\r\n"), "C2[ECHO][aAJ\\xff\\x00z];" },
	{ "inline bad hex escape", S("ECHO \"\\x4\" \"\\xzz\"\r\n"), "C3[ECHO][x4][xzz];" },
	{ "inline unknown escape", S("ECHO \"\\q\"\r\n"), "C2[ECHO][q];" },
	{ "inline single quote escape", S("ECHO 'a\\'b' 'a\\nb'\r\n"), "C3[ECHO][a'b][a\\x5cnb];" },
	{ "inline empty quoted", S("ECHO '' \"\"\r\n"), "C3[ECHO][][];" },
	{ "inline quote inside a word", S("ECHO a\"b c\" d\r\n"), "C3[ECHO][ab c][d];" },
	{ "inline vertical tab is a word char", S("ECHO a\vb\r\n"), "C2[ECHO][a\\x0bb];" },
	{ "inline closing quote then VT", S("ECHO \"a\"\v\r\n"), "C2[ECHO][a];" },
	{ "inline NUL ends the line", S("ECHO \0abc\r\nPING\r\n"), "C1[ECHO];C1[PING];" },
	{ "inline quoted CRLF escapes", S("SET k \"v\\r\\nx\"\n"), "C3[SET][k][v\\x0d\\x0ax];" },
	{ "pipeline mixed", S("*1\r\n$4\r\nPING\r\nPING\r\n*0\r\n\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n"),
	  "C1[PING];C1[PING];E;E;C2[ECHO][hi];" },
	{ "pipeline with a truncated tail", S("*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nh"),
	  "C1[PING];I19;" },
};

static void test_valid(void)
{
	for (size_t i = 0; i < sizeof(valid) / sizeof(valid[0]); i++)
		check_all_feeds(valid[i].name, valid[i].in, valid[i].len, &redis_limits, valid[i].want);
}

/* --- malformed and truncated requests ----------------------------------- */
#define E_MB "Protocol error: invalid multibulk length"
#define E_MB_BIG "Protocol error: too big mbulk count string"
#define E_BULK "Protocol error: invalid bulk length"
#define E_BULK_BIG "Protocol error: too big bulk count string"
#define E_QUOTES "Protocol error: unbalanced quotes in request"
#define E_INLINE_BIG "Protocol error: too big inline request"
#define E_DOLLAR(c) "Protocol error: expected '$', got '" c "'"

static const struct {
	const char *in;
	size_t len;
	const char *err; /* NULL: incomplete, all bytes kept */
} bad[] = {
	{ S("*abc\r\n"), E_MB },
	{ S("*\r\n"), E_MB },
	{ S("*+1\r\n"), E_MB },
	{ S("* 1\r\n"), E_MB },
	{ S("*01\r\n"), E_MB },
	{ S("*1x\r\n"), E_MB },
	{ S("*-0\r\n"), E_MB },
	{ S("*2147483648\r\n"), E_MB },
	{ S("*99999999999999999999\r\n"), E_MB },
	{ S("*1\r\nfoo\r\n"), E_DOLLAR("f") },
	{ S("*1\r\n\r\n"), E_DOLLAR(" ") },
	{ S("*1\r\n\nx\r\n"), E_DOLLAR(" ") },
	{ S("*1\r\n*1\r\n"), E_DOLLAR("*") },
	{ S("*2\r\n$4\r\nECHO\r\n:1\r\n"), E_DOLLAR(":") },
	/* a NUL read as a space: the text is a C string (it lost its closing
	 * quote); redis-server never gets here, it waits at the NUL */
	{ S("*1\r\n\0x\r\n"), E_DOLLAR(" ") },
	{ S("*1\r\n$\r\n"), E_BULK },
	{ S("*1\r\n$-1\r\n"), E_BULK },
	{ S("*1\r\n$abc\r\n"), E_BULK },
	{ S("*1\r\n$01\r\n"), E_BULK },
	{ S("*1\r\n$+1\r\n"), E_BULK },
	{ S("*1\r\n$ 1\r\n"), E_BULK },
	{ S("*1\r\n$1x\r\n"), E_BULK },
	{ S("*1\r\n$-0\r\n"), E_BULK },
	{ S("*1\r\n$536870913\r\n"), E_BULK },
	{ S("*1\r\n$9223372036854775808\r\n"), E_BULK },
	{ S("SET \"foo\r\n"), E_QUOTES },
	{ S("SET 'foo\r\n"), E_QUOTES },
	{ S("SET \"foo\"bar\r\n"), E_QUOTES },
	{ S("SET 'a'b\r\n"), E_QUOTES },
	{ S("ECHO a\"b c\"d\r\n"), E_QUOTES },
	{ S("ECHO \"x\\\"\r\n"), E_QUOTES },
	{ S("ECHO 'x\\'\r\n"), E_QUOTES },
	{ S("ECHO \"ab\0c\"\r\n"), E_QUOTES },
	{ S("*"), NULL },
	{ S("*1"), NULL },
	{ S("*1\r"), NULL },
	{ S("*1\r\n"), NULL },
	{ S("*1\r\n$"), NULL },
	{ S("*1\r\n$3"), NULL },
	{ S("*1\r\n$3\r"), NULL },
	{ S("*1\r\n$3\r\n"), NULL },
	{ S("*1\r\n$3\r\nfoo"), NULL },
	{ S("*1\r\n$3\r\nfoo\r"), NULL },
	{ S("*2\r\n$3\r\nfoo\r\n"), NULL },
	{ S("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nab"), NULL },
	{ S("*1\r\nf"), NULL },
	{ S("GET foo"), NULL },
	{ S("GET \"foo"), NULL },
	{ S("GET foo\r"), NULL },
};

static void test_bad(void)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct sb want = { 0 };
		struct sb name = { 0 };
		if (bad[i].err)
			sb_printf(&want, "X:%s;", bad[i].err);
		else
			sb_printf(&want, "I%zu;", bad[i].len);
		sb_add(&name, "corpus ", 7);
		sb_arg(&name, bad[i].in, bad[i].len);
		check_all_feeds(name.p, bad[i].in, bad[i].len, &redis_limits, want.p);
		free(want.p);
		free(name.p);
	}
	/* An error after good requests: those are returned first. */
	check_all_feeds("error after a pipeline", S("*1\r\n$4\r\nPING\r\nPING\r\n*x\r\n"), &redis_limits,
			"C1[PING];C1[PING];X:" E_MB ";");
}

/* --- limits ------------------------------------------------------------- */
static char *repeat(const char *head, char c, size_t n, const char *tail, size_t *len)
{
	size_t hl = strlen(head), tl = strlen(tail);
	char *s = malloc(hl + n + tl + 1);
	memcpy(s, head, hl);
	memset(s + hl, c, n);
	memcpy(s + hl + n, tail, tl + 1);
	*len = hl + n + tl;
	return s;
}

static void check_limit(const char *name, const char *head, char c, size_t n, const char *tail,
			const struct resp_limits *lim, const char *want)
{
	size_t len;
	char *s = repeat(head, c, n, tail, &len);
	check_all_feeds(name, s, len, lim, want);
	free(s);
}

static void test_limits(void)
{
	const struct resp_limits small = { .max_bulk_len = 10, .max_multibulk = 3, .max_inline = 16 };

	check_all_feeds("bulk at max_bulk_len", S("*1\r\n$10\r\n0123456789\r\n"), &small, "C1[0123456789];");
	check_all_feeds("bulk over max_bulk_len", S("*1\r\n$11\r\n01234567890\r\n"), &small, "X:" E_BULK ";");
	check_all_feeds("count at max_multibulk", S("*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n"), &small,
			"C3[a][b][c];");
	check_all_feeds("count over max_multibulk", S("*4\r\n"), &small, "X:" E_MB ";");

	/* Line ends: allowed at most max_inline bytes after the line start. */
	check_limit("inline line of max_inline", "", 'x', 16, "\n", &small, "C1[xxxxxxxxxxxxxxxx];");
	check_limit("inline line of max_inline+1 (LF)", "", 'x', 17, "\n", &small, "X:" E_INLINE_BIG ";");
	check_limit("inline max_inline+1 bytes, no LF", "", 'x', 17, "", &small, "X:" E_INLINE_BIG ";");
	check_limit("inline max_inline bytes, no LF", "", 'x', 16, "", &small, "I16;");
	check_limit("count line CR at max_inline", "*", '0', 15, "\r\n", &small, "X:" E_MB ";");
	check_limit("count line CR past max_inline", "*", '0', 16, "\r\n", &small, "X:" E_MB_BIG ";");
	check_limit("count line too long, no CR", "*", '1', 16, "", &small, "X:" E_MB_BIG ";");
	check_limit("bulk count CR past max_inline", "*1\r\n$", '1', 16, "\r\n", &small, "X:" E_BULK_BIG ";");
	check_limit("bulk count CR at max_inline", "*1\r\n$", '1', 15, "\r\n", &small, "X:" E_BULK ";");

	/* Redis's 64 KiB, as redis-server 7.0.15 answers. */
	check_limit("64k inline, no LF: waits", "", 'x', 65536, "", &redis_limits, "I65536;");
	check_limit("64k+1 inline, no LF", "", 'x', 65537, "", &redis_limits, "X:" E_INLINE_BIG ";");
	check_limit("64k count line, no CR: waits", "*", '1', 65535, "", &redis_limits, "I65536;");
	check_limit("64k+1 count line, no CR", "*", '1', 65536, "", &redis_limits, "X:" E_MB_BIG ";");
	check_limit("64k+1 bulk count line", "*1\r\n$", '1', 65536, "", &redis_limits, "X:" E_BULK_BIG ";");

	/* A huge bulk length allocates nothing: the caller grows its buffer,
	 * told by resp_need() how far. */
	struct resp_parser p;
	size_t consumed = 0;
	char req[] = "*2\r\n$3\r\nSET\r\n$536870912\r\nabc";
	resp_parser_init(&p);
	size_t before = zr_mem_used();
	enum resp_result r = resp_parse(&p, req, sizeof(req) - 1, &redis_limits, &consumed);
	is_int(r, RESP_INCOMPLETE, "512 MiB bulk: incomplete");
	ok(zr_mem_used() - before < 4096, "512 MiB bulk: nothing big allocated (%zu bytes)",
	   zr_mem_used() - before);
	is_int(resp_need(&p), 25 + 536870912 + 2, "resp_need tells where the bulk ends");
	resp_parser_free(&p);

	/* No rescans: the search position advances with the bytes seen. */
	char line[40];
	memset(line, 'x', sizeof(line));
	line[0] = '*';
	resp_parser_init(&p);
	for (size_t n = 1; n <= sizeof(line); n++)
		resp_parse(&p, line, n, &redis_limits, &consumed);
	is_int(p.scan, sizeof(line), "count line search resumes where it stopped");
	resp_parser_free(&p);
	memset(line, 'x', sizeof(line));
	resp_parser_init(&p);
	for (size_t n = 1; n <= sizeof(line); n++)
		resp_parse(&p, line, n, &redis_limits, &consumed);
	is_int(p.scan, sizeof(line), "inline search resumes where it stopped");
	resp_parser_free(&p);

	/* ... and never looks back: a byte changed behind the search position
	 * (which a caller must not do) goes unseen, while a parser that
	 * rescanned would now find a complete "*0" line. */
	char probe[] = "*0xxxxxxxx";
	resp_parser_init(&p);
	r = resp_parse(&p, probe, 10, &redis_limits, &consumed);
	probe[2] = '\r';
	probe[3] = '\n';
	r = resp_parse(&p, probe, 10, &redis_limits, &consumed);
	is_int(r, RESP_INCOMPLETE, "scanned bytes are not scanned again");
	resp_parser_free(&p);

	/* Argument counts past INT_MAX are refused whatever the limit says. */
	const struct resp_limits unlimited = { .max_bulk_len = UINT64_MAX,
					       .max_multibulk = UINT64_MAX,
					       .max_inline = 64 * 1024 };
	check_all_feeds("count past INT_MAX with no limit", S("*2147483648\r\n"), &unlimited, "X:" E_MB ";");
	check_all_feeds("bulk of 2^63-1 with no limit waits", S("*1\r\n$9223372036854775807\r\nab"),
			&unlimited, "I28;");

	/* A parser stays failed. */
	resp_parser_init(&p);
	char junk[] = "*x\r\n";
	r = resp_parse(&p, junk, 4, &redis_limits, &consumed);
	r = resp_parse(&p, junk, 4, &redis_limits, &consumed);
	is_int(r, RESP_ERROR, "errors are sticky");
	is_str(p.error, E_MB, "error text kept");
	resp_parser_free(&p);

	/* Many arguments: argv grows without trouble, and is given back. */
	struct sb big = { 0 };
	sb_printf(&big, "*5000\r\n");
	for (int i = 0; i < 5000; i++)
		sb_printf(&big, "$%d\r\n%d\r\n", i < 10 ? 1 : i < 100 ? 2 : i < 1000 ? 3 : 4, i);
	sb_add(&big, "*1\r\n$4\r\nPING\r\n", 14);
	resp_parser_init(&p);
	r = resp_parse(&p, big.p, big.len, &redis_limits, &consumed);
	int good = r == RESP_COMMAND && p.argc == 5000;
	for (int i = 0; good && i < 5000; i++) {
		char num[16];
		int n = snprintf(num, sizeof(num), "%d", i);
		good = p.argv[i].len == (size_t)n && memcmp(p.argv[i].ptr, num, (size_t)n) == 0;
	}
	ok(good, "5000 arguments");
	r = resp_parse(&p, big.p + consumed, big.len - consumed, &redis_limits, &consumed);
	ok(r == RESP_COMMAND && p.argc == 1 && p.argv_cap <= 1024, "big argv given back after the request");
	resp_parser_free(&p);
	free(big.p);
}

/* --- resp_split_inline -------------------------------------------------- */
static void test_split(void)
{
	char line[] = "a \"b c\" 'd' e";
	struct resp_arg out[2];
	int n = resp_split_inline(line, sizeof(line) - 1, out, 2);
	is_int(n, 4, "split returns the full count");
	ok(out[0].len == 1 && out[0].ptr[0] == 'a' && out[1].len == 3 && memcmp(out[1].ptr, "b c", 3) == 0,
	   "split fills only max_out");
	char bad_line[] = "a \"b";
	is_int(resp_split_inline(bad_line, sizeof(bad_line) - 1, out, 2), -1, "split: unbalanced is -1");
	char empty[] = "";
	is_int(resp_split_inline(empty, 0, out, 2), 0, "split: empty line");
}

/* --- randomized round trips -------------------------------------------- */
static const char alphabet[] = "ab*$-:+\r\n\0\"'\\ x019";

static char rnd_byte(void)
{
	if (rng() % 4 == 0)
		return (char)rng_below(256);
	return alphabet[rng_below(sizeof(alphabet) - 1)];
}

/* Random argv encoded as multibulk requests in one pipeline, fed in random
 * pieces: every request must come back exactly. */
static void test_fuzz_multibulk(void)
{
	int failures = 0;
	for (int iter = 0; iter < 1500 && failures < 5; iter++) {
		struct sb in = { 0 }, want = { 0 };
		sb_add(&in, "", 0);
		sb_add(&want, "", 0);
		int nreq = 1 + (int)rng_below(5);
		for (int r = 0; r < nreq; r++) {
			int argc = 1 + (int)rng_below(8);
			sb_printf(&in, "*%d\r\n", argc);
			sb_printf(&want, "C%d", argc);
			for (int a = 0; a < argc; a++) {
				size_t len = rng_below(rng() % 16 ? 24 : 5000);
				char *arg = malloc(len + 1);
				for (size_t i = 0; i < len; i++)
					arg[i] = rnd_byte();
				sb_printf(&in, "$%zu\r\n", len);
				sb_add(&in, arg, len);
				sb_add(&in, "\r\n", 2);
				sb_arg(&want, arg, len);
				free(arg);
			}
			sb_add(&want, ";", 1);
		}
		enum feed feed = iter % 10 == 0 ? FEED_BYTES : FEED_RANDOM;
		char *got = run(in.p, in.len, &redis_limits, feed);
		if (strcmp(got, want.p) != 0) {
			failures++;
			diag("multibulk fuzz iteration %d differs:\n# want %s\n# got  %s", iter, want.p, got);
		}
		free(got);
		free(in.p);
		free(want.p);
	}
	ok(failures == 0, "multibulk round trip, 1500 random pipelines in random pieces");
}

/* Appends ARG to an inline line in one of the three spellings
 * sdssplitargs reads back. */
static void inline_encode(struct sb *in, const char *arg, size_t len)
{
	bool plain_ok = len > 0, single_ok = true;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)arg[i];
		if (c <= ' ' || c == '"' || c == '\'' || c >= 0x7f || c == '\v' || c == '\f')
			plain_ok = false;
		if (c == '\0' || c == '\n' || c == '\\')
			single_ok = false;
	}
	int how = (int)rng_below(3);
	if (how == 0 && plain_ok) {
		sb_add(in, arg, len);
	} else if (how == 1 && single_ok) {
		sb_add(in, "'", 1);
		for (size_t i = 0; i < len; i++)
			sb_add(in, arg[i] == '\'' ? "\\'" : &arg[i], arg[i] == '\'' ? 2 : 1);
		sb_add(in, "'", 1);
	} else {
		sb_add(in, "\"", 1);
		for (size_t i = 0; i < len; i++) {
			unsigned char c = (unsigned char)arg[i];
			switch (rng_below(3) == 0 ? 0 : c) {
			case '\n':
				sb_add(in, "\\n", 2);
				break;
			case '\r':
				sb_add(in, "\\r", 2);
				break;
			case '\t':
				sb_add(in, "\\t", 2);
				break;
			case '"':
				sb_add(in, "\\\"", 2);
				break;
			case '\\':
				sb_add(in, "\\\\", 2);
				break;
			default:
				if (c >= ' ' && c < 0x7f && c != '"' && c != '\\')
					sb_add(in, &arg[i], 1);
				else
					sb_printf(in, rng() & 1 ? "\\x%02x" : "\\x%02X", c);
			}
		}
		sb_add(in, "\"", 1);
	}
}

static void test_fuzz_inline(void)
{
	static const char *const seps[] = { " ", "  ", "\t", " \t " };
	int failures = 0;
	for (int iter = 0; iter < 1500 && failures < 5; iter++) {
		struct sb in = { 0 }, want = { 0 };
		sb_add(&in, "", 0);
		sb_add(&want, "", 0);
		int nreq = 1 + (int)rng_below(4);
		for (int r = 0; r < nreq; r++) {
			int argc = 1 + (int)rng_below(6);
			if (rng() & 1)
				sb_add(&in, " ", 1);
			sb_printf(&want, "C%d", argc);
			for (int a = 0; a < argc; a++) {
				size_t len = rng_below(12);
				char arg[12];
				for (size_t i = 0; i < len; i++)
					arg[i] = rnd_byte();
				/* The first byte of a request must not make it multibulk. */
				if (a == 0 && len == 0)
					arg[len++] = 'x';
				if (a == 0 && arg[0] == '*')
					arg[0] = 'y';
				if (a) {
					const char *sep = seps[rng_below(4)];
					sb_add(&in, sep, strlen(sep));
				}
				if (a == 0) {
					/* a plain first word keeps the request inline */
					for (size_t i = 0; i < len; i++)
						if ((unsigned char)arg[i] <= ' ' || arg[i] == '"' ||
						    arg[i] == '\'' || (unsigned char)arg[i] >= 0x7f)
							arg[i] = 'z';
					sb_add(&in, arg, len);
				} else {
					inline_encode(&in, arg, len);
				}
				sb_arg(&want, arg, len);
			}
			if (rng() & 1)
				sb_add(&in, "  ", 2);
			if (rng() & 1)
				sb_add(&in, "\r\n", 2);
			else
				sb_add(&in, "\n", 1);
			sb_add(&want, ";", 1);
		}
		enum feed feed = iter % 10 == 0 ? FEED_BYTES : FEED_RANDOM;
		char *got = run(in.p, in.len, &redis_limits, feed);
		if (strcmp(got, want.p) != 0) {
			failures++;
			struct sb show = { 0 };
			sb_arg(&show, in.p, in.len);
			diag("inline fuzz iteration %d differs:\n# in   %s\n# want %s\n# got  %s", iter,
			     show.p, want.p, got);
			free(show.p);
		}
		free(got);
		free(in.p);
		free(want.p);
	}
	ok(failures == 0, "inline round trip, 1500 random pipelines with random quoting");
}

/* Random garbage built from protocol characters: whatever the outcome, it
 * must not depend on how the bytes were split. */
static void test_fuzz_garbage(void)
{
	static const char *const pieces[] = { "*",  "$",    "\r\n", "\r",     "\n",
					      "1",  "2",    "0",    "-1",     "3",
					      "\"", "'",    "\\",   "\\x4",   "a",
					      " ",  "PING", "\0",   "*2\r\n", "$3\r\nfoo\r\n" };
	const struct resp_limits tiny = { .max_bulk_len = 8, .max_multibulk = 4, .max_inline = 12 };
	int failures = 0;
	for (int iter = 0; iter < 3000 && failures < 5; iter++) {
		struct sb in = { 0 };
		sb_add(&in, "", 0);
		int n = 1 + (int)rng_below(30);
		for (int i = 0; i < n; i++) {
			const char *pc = pieces[rng_below(sizeof(pieces) / sizeof(pieces[0]))];
			sb_add(&in, pc, *pc ? strlen(pc) : 1);
		}
		const struct resp_limits *lim = iter & 1 ? &tiny : &redis_limits;
		char *whole = run(in.p, in.len, lim, FEED_WHOLE);
		char *bytes = run(in.p, in.len, lim, FEED_BYTES);
		char *rnd = run(in.p, in.len, lim, FEED_RANDOM);
		if (strcmp(whole, bytes) != 0 || strcmp(whole, rnd) != 0) {
			failures++;
			struct sb show = { 0 };
			sb_arg(&show, in.p, in.len);
			diag("garbage %d: %s\n# whole  %s\n# bytes  %s\n# random %s", iter, show.p, whole,
			     bytes, rnd);
			free(show.p);
		}
		free(whole);
		free(bytes);
		free(rnd);
		free(in.p);
	}
	ok(failures == 0, "3000 random malformed streams: same result however split");
}

/* resp_parse_whole (the connection's parse-ahead) must give exactly what
 * resp_parse gives for the same bytes, or 0 ("ask resp_parse"): checked
 * request by request over valid pipelines and random protocol garbage. */
static int whole_agrees(const char *in, size_t len, const struct resp_limits *lim, int max)
{
	char *buf = malloc(len + 1);
	memcpy(buf, in, len);
	size_t pos = 0;
	int ok_all = 1, taken = 0;
	while (pos < len) {
		struct resp_arg wargv[8];
		int wargc = -1;
		size_t w = resp_parse_whole(buf + pos, len - pos, lim, wargv, max, &wargc);
		struct resp_parser p;
		resp_parser_init(&p);
		size_t used = 0;
		enum resp_result r = resp_parse(&p, buf + pos, len - pos, lim, &used);
		if (w) {
			taken++;
			if (r != RESP_COMMAND || used != w || p.argc != wargc)
				ok_all = 0;
			for (int i = 0; ok_all && i < wargc; i++)
				if (p.argv[i].ptr != wargv[i].ptr || p.argv[i].len != wargv[i].len)
					ok_all = 0;
		}
		resp_parser_free(&p);
		if (!ok_all || (r != RESP_COMMAND && r != RESP_EMPTY))
			break;
		pos += used;
	}
	free(buf);
	return ok_all ? taken : -1;
}

static void test_parse_whole(void)
{
	struct sb in = { 0 };
	sb_printf(&in, "*3\r\n$3\r\nSET\r\n$16\r\nkey:000000000042\r\n$100\r\n");
	for (int i = 0; i < 100; i++)
		sb_add(&in, "x", 1);
	sb_printf(&in,
		  "\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$0\r\n\r\n*0\r\n*2\r\n$3\r\nGET\r\n$2\r\nkk\r\n");
	ok(whole_agrees(in.p, in.len, &redis_limits, 8) == 4,
	   "parse ahead: a valid pipeline, request by request");
	ok(whole_agrees(in.p, in.len, &redis_limits, 2) == 3,
	   "parse ahead: more arguments than room is left to resp_parse");
	free(in.p);
	static const char *const pieces[] = { "*",
					      "$",
					      "\r\n",
					      "\r",
					      "\n",
					      "1",
					      "2",
					      "0",
					      "-1",
					      "3",
					      "01",
					      "a",
					      " ",
					      "PING",
					      "*2\r\n",
					      "$3\r\nfoo\r\n",
					      "$0\r\n\r\n",
					      "*1\r\n",
					      "*1\r\n$4\r\nPING\r\n",
					      "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n" };
	const struct resp_limits tiny = { .max_bulk_len = 8, .max_multibulk = 4, .max_inline = 12 };
	int disagree = 0, taken = 0;
	for (int iter = 0; iter < 3000; iter++) {
		struct sb g = { 0 };
		sb_add(&g, "", 0);
		int n = 1 + (int)rng_below(30);
		for (int i = 0; i < n; i++) {
			const char *pc = pieces[rng_below(sizeof(pieces) / sizeof(pieces[0]))];
			sb_add(&g, pc, strlen(pc));
		}
		int t = whole_agrees(g.p, g.len, iter & 1 ? &tiny : &redis_limits, 1 + (int)rng_below(8));
		if (t < 0) {
			disagree++;
			if (disagree <= 3) {
				struct sb show = { 0 };
				sb_arg(&show, g.p, g.len);
				diag("parse ahead disagrees on %s", show.p);
				free(show.p);
			}
		} else {
			taken += t;
		}
		free(g.p);
	}
	ok(disagree == 0 && taken > 100,
	   "parse ahead: 3000 random streams agree with resp_parse (%d requests taken)", taken);
}

int main(void)
{
	test_parse_whole();
	test_valid();
	test_bad();
	test_limits();
	test_split();
	test_fuzz_multibulk();
	test_fuzz_inline();
	test_fuzz_garbage();
	return done_testing();
}
