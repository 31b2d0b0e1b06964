/* core/util: Redis-exact number parsing and formatting, glob matching,
 * memory sizes. It includes util.c to count the glob matcher's steps. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "tests/tap.h"
#include "zarisd/core/util.c"

static int ll_ok(const char *s, long long want)
{
	long long v;
	return zr_str_to_ll(s, strlen(s), &v) && v == want;
}

static int ll_bad(const char *s, size_t len)
{
	long long v;
	return !zr_str_to_ll(s, len, &v);
}

/* The oracle for the matcher: the method of Redis 7.0.15's
 * stringmatchlen_impl, written here the plain exponential way (one
 * recursion per star, the skipLongerMatches flag that ends the retries),
 * x86-64 signed chars, ASCII folding. For small inputs only. */
static bool oracle(const char *p, size_t plen, const char *s, size_t slen, bool nocase, bool *skip)
{
	while (plen && slen) {
		if (p[0] == '*') {
			while (plen > 1 && p[1] == '*') {
				p++;
				plen--;
			}
			if (plen == 1)
				return true;
			for (; slen; s++, slen--) {
				if (oracle(p + 1, plen - 1, s, slen, nocase, skip))
					return true;
				if (*skip)
					return false;
			}
			*skip = true;
			return false;
		}
		int c = glob_fold((signed char)s[0], nocase);
		if (p[0] == '[') {
			p++;
			plen--;
			bool neg = plen && p[0] == '^', hit = false;
			if (neg) {
				p++;
				plen--;
			}
			for (;; p++, plen--) {
				if (plen >= 2 && p[0] == '\\') {
					p++;
					plen--;
					hit |= (signed char)p[0] == (signed char)s[0];
				} else if (plen && p[0] == ']') {
					break;
				} else if (plen == 0) {
					p--;
					plen++;
					break;
				} else if (plen >= 3 && p[1] == '-') {
					int lo = (signed char)p[0], hi = (signed char)p[2];
					if (lo > hi) {
						int t = lo;
						lo = hi;
						hi = t;
					}
					hit |= c >= glob_fold(lo, nocase) && c <= glob_fold(hi, nocase);
					p += 2;
					plen -= 2;
				} else {
					hit |= glob_fold((signed char)p[0], nocase) == c;
				}
			}
			if (neg == hit)
				return false;
		} else if (p[0] != '?') {
			if (p[0] == '\\' && plen >= 2) {
				p++;
				plen--;
			}
			if (glob_fold((signed char)p[0], nocase) != c)
				return false;
		}
		p++;
		plen--;
		s++;
		slen--;
		if (slen == 0)
			while (plen && p[0] == '*') {
				p++;
				plen--;
			}
	}
	return plen == 0 && slen == 0;
}

static uint64_t rng_state = 88172645463325252ULL;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

/* Random patterns and strings over a small alphabet with every special
 * byte, a capital, a high byte and a NUL: the matcher answers as Redis's
 * recursive code does. */
static void glob_vs_oracle(void)
{
	static const char alpha[] = "ab*?[]^-\\A\xe9";
	char p[12], s[10];
	int diffs = 0;
	for (int i = 0; i < 300000; i++) {
		size_t plen = rnd(sizeof(p) + 1), slen = rnd(sizeof(s) + 1);
		for (size_t j = 0; j < plen; j++)
			p[j] = alpha[rnd(sizeof(alpha))]; /* sizeof: the NUL too */
		for (size_t j = 0; j < slen; j++)
			s[j] = alpha[rnd(sizeof(alpha))];
		bool nocase = rnd(2), skip = false;
		if (zr_glob_match(p, plen, s, slen, nocase) != oracle(p, plen, s, slen, nocase, &skip) &&
		    diffs++ < 5)
			diag("differs: pattern %.*s string %.*s nocase %d", (int)plen, p, (int)slen, s,
			     nocase);
	}
	is_int(diffs, 0, "glob: 300000 random cases answered as Redis 7.0.15's recursive matcher");
}

/* A star pattern that can never match: STARS "a*" then "b", over a string
 * of LEN 'a' (or 'A') and a '1'. Returns the steps taken. */
static uint64_t glob_steps(size_t stars, size_t len, bool nocase, bool *matched)
{
	size_t plen = 2 * stars + 1;
	char *p = malloc(plen), *s = malloc(len + 1);
	for (size_t i = 0; i < stars; i++)
		memcpy(p + 2 * i, "a*", 2);
	p[plen - 1] = 'b';
	memset(s, nocase ? 'A' : 'a', len);
	s[len] = '1';
	uint64_t steps = 0;
	*matched = glob_match(p, plen, s, len + 1, nocase, &steps);
	free(p);
	free(s);
	return steps;
}

static void test_glob(void)
{
	ok(zr_glob_match("h?llo", 5, "hello", 5, false), "glob ?");
	ok(zr_glob_match("h*o", 3, "hello", 5, false) && zr_glob_match("a*", 2, "a", 1, false), "glob *");
	/* Redis's stringmatchlen: "" matches only "" */
	ok(!zr_glob_match("*", 1, "", 0, false) && !zr_glob_match("**", 2, "", 0, false) &&
		   zr_glob_match("", 0, "", 0, false),
	   "glob: the empty string matches only the empty pattern (Redis)");
	ok(zr_glob_match("h[ae]llo", 8, "hallo", 5, false) &&
		   !zr_glob_match("h[ae]llo", 8, "hillo", 5, false),
	   "glob [ae]");
	ok(zr_glob_match("h[^e]llo", 8, "hallo", 5, false) &&
		   !zr_glob_match("h[^e]llo", 8, "hello", 5, false),
	   "glob [^e]");
	ok(zr_glob_match("h[a-c]llo", 9, "hbllo", 5, false) &&
		   zr_glob_match("h[c-a]llo", 9, "hbllo", 5, false) &&
		   !zr_glob_match("h[a-c]llo", 9, "hdllo", 5, false),
	   "glob range, ends either way round");
	ok(zr_glob_match("[A-C]", 5, "b", 1, true) && !zr_glob_match("[A-C]", 5, "b", 1, false) &&
		   !zr_glob_match("[Z-a]", 5, "b", 1, true) && zr_glob_match("[Z-a]", 5, "_", 1, false),
	   "glob range nocase: the ends are swapped before they are folded (Redis)");
	ok(zr_glob_match("[\\a]", 4, "a", 1, false) && !zr_glob_match("[\\a]", 4, "A", 1, true) &&
		   zr_glob_match("[\\]]", 4, "]", 1, false),
	   "glob: an escape inside a class, compared without folding (Redis)");
	ok(zr_glob_match("h\\*llo", 6, "h*llo", 5, false) && !zr_glob_match("h\\*llo", 6, "hello", 5, false),
	   "glob escape");
	ok(zr_glob_match("a\\", 2, "a\\", 2, false) && !zr_glob_match("a\\", 2, "a", 1, false) &&
		   zr_glob_match("*\\", 2, "xy\\", 3, false),
	   "glob: a trailing backslash matches itself");
	ok(zr_glob_match("[ab", 3, "b", 1, false) && zr_glob_match("[^", 2, "x", 1, false) &&
		   !zr_glob_match("[]", 2, "]", 1, false),
	   "glob: an unterminated class ends at the pattern's end, [] matches nothing");
	ok(zr_glob_match("HELLO", 5, "hello", 5, true) && !zr_glob_match("HELLO", 5, "hello", 5, false),
	   "glob nocase");
	ok(zr_glob_match("*a*b*c*", 7, "xxaxxbxxcxx", 11, false) &&
		   zr_glob_match("a**b", 4, "ab", 2, false) &&
		   !zr_glob_match("*a*b*c*", 7, "xxaxxcxxbxx", 11, false) &&
		   zr_glob_match("*a?*c", 5, "abacbc", 6, false) && zr_glob_match("a*", 2, "a", 1, false) &&
		   !zr_glob_match("a*b", 3, "a", 1, false),
	   "glob: nested stars");
	ok(zr_glob_match("[a-\xff]", 5, "\xff", 1, false) && zr_glob_match("[a-\xff]", 5, "0", 1, false) &&
		   !zr_glob_match("[a-\xff]", 5, "z", 1, false),
	   "glob: bytes compare as signed chars, as redis-server on x86-64 ([a-\\xff] is [\\xff-a])");
	glob_vs_oracle();

	/* the reproducer of issue 13 and longer ones: the old backtracking
	 * matcher never finished these; the steps stay within plen * slen */
	bool m;
	uint64_t st = glob_steps(30, 60, false, &m);
	ok(!m && st <= 61 * 61, "glob: 30 stars over 61 bytes: no match in %llu steps",
	   (unsigned long long)st);
	st = glob_steps(100, 1000, false, &m);
	ok(!m && st <= 201 * 1001, "glob: 100 stars over 1001 bytes: %llu steps", (unsigned long long)st);
	st = glob_steps(100, 1000, true, &m);
	ok(!m && st <= 201 * 1001, "glob: the same with nocase: %llu steps", (unsigned long long)st);
	st = glob_steps(1000000, 2000, false, &m);
	ok(!m && st <= 3 * 2000000ULL, "glob: a million stars (no recursion, no stack): %llu steps",
	   (unsigned long long)st);
	const char *cls =
		"[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[a]*[^a]b";
	char s[200];
	memset(s, 'a', sizeof(s));
	st = 0;
	m = glob_match(cls, strlen(cls), s, sizeof(s), false, &st);
	ok(!m && st <= strlen(cls) * sizeof(s), "glob: classes and stars over 200 bytes: %llu steps",
	   (unsigned long long)st);
	char longpat[2048];
	memset(longpat, '*', sizeof(longpat) - 2);
	longpat[sizeof(longpat) - 2] = 'x';
	ok(!zr_glob_match(longpat, sizeof(longpat) - 1, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 39,
			  false) &&
		   zr_glob_match(longpat, sizeof(longpat) - 1, "aaaaaaaaaaaaaaaaaaaaaaax", 24, false),
	   "glob: 2046 stars then x");
}

int main(void)
{
	ok(ll_ok("0", 0) && ll_ok("-1", -1) && ll_ok("9223372036854775807", INT64_MAX) &&
		   ll_ok("-9223372036854775808", INT64_MIN),
	   "long long: 0, -1 and both extremes parse");
	ok(ll_bad("9223372036854775808", 19) && ll_bad("-9223372036854775809", 20),
	   "long long: out of range rejected");
	ok(ll_bad("01", 2) && ll_bad("-0", 2) && ll_bad("+1", 2) && ll_bad(" 1", 2) && ll_bad("1 ", 2) &&
		   ll_bad("", 0) &&
		   ll_bad("1\0"
			  "2",
			  3),
	   "long long: leading zero, -0, plus, spaces, empty, embedded NUL rejected (string2ll)");

	long double ld;
	ok(zr_str_to_ld("10.5", 4, &ld) && ld == 10.5L, "long double parses 10.5");
	ok(!zr_str_to_ld("1\0"
			 "2",
			 3, &ld),
	   "long double: an embedded NUL makes the text invalid");
	ok(!zr_str_to_ld(" 1", 2, &ld) && !zr_str_to_ld("nan", 3, &ld) && !zr_str_to_ld("1x", 2, &ld),
	   "long double: leading space, nan, trailing garbage rejected");
	double d;
	ok(zr_str_to_d("inf", 3, &d) && isinf(d) && zr_str_to_d("-inf", 4, &d) && d < 0,
	   "double accepts inf/-inf");
	ok(!zr_str_to_d("1\0"
			"5",
			3, &d),
	   "double: an embedded NUL makes the text invalid");
	/* string2d has no length limit: DBL_MAX in full, 10 000 digits */
	static char big[10003];
	int n = snprintf(big, sizeof(big), "%.0f.00000000000000000", DBL_MAX);
	ok(n == 309 + 18 && zr_str_to_d(big, (size_t)n, &d) && d == DBL_MAX,
	   "double: DBL_MAX written out in 309 digits and 17 decimals parses");
	memset(big, '0', sizeof(big));
	memcpy(big, "1.", 2);
	ok(zr_str_to_d(big, 10002, &d) && d == 1.0 && zr_str_to_d(big, 10003, &d) && d == 1.0,
	   "double: a number 10 000 characters long parses");
	/* string2ld stops at MAX_LONG_DOUBLE_CHARS - 1 */
	memcpy(big, "0.", 2);
	ok(zr_str_to_ld(big, ZR_MAX_LONG_DOUBLE_CHARS - 1, &ld) &&
		   !zr_str_to_ld(big, ZR_MAX_LONG_DOUBLE_CHARS, &ld),
	   "long double: 5119 characters parse, 5120 do not");

	char buf[ZR_MAX_LONG_DOUBLE_CHARS];
	zr_ld_to_str(buf, sizeof(buf), 10.5L);
	is_str(buf, "10.5", "ld2string 10.5");
	zr_ld_to_str(buf, sizeof(buf), 3.0L);
	is_str(buf, "3", "ld2string drops a trailing .0");
	zr_ld_to_str(buf, sizeof(buf), 5000.0L);
	is_str(buf, "5000", "ld2string keeps integral zeros");
	zr_ld_to_str(buf, sizeof(buf), -0.0L);
	is_str(buf, "0", "ld2string prints -0 as 0");
	zr_ll_to_str(buf, INT64_MIN);
	is_str(buf, "-9223372036854775808", "ll_to_str of the minimum");

	test_glob();

	unsigned long long m;
	ok(zr_parse_memory("64mb", &m) && m == 64ULL << 20, "64mb");
	ok(zr_parse_memory("1gb", &m) && m == 1ULL << 30, "1gb");
	ok(zr_parse_memory("1k", &m) && m == 1000, "1k is 1000 (Redis)");
	ok(zr_parse_memory("100", &m) && m == 100, "bare bytes");
	ok(!zr_parse_memory("12xb", &m) && !zr_parse_memory("-1", &m) && !zr_parse_memory(" 1", &m) &&
		   !zr_parse_memory("1.5mb", &m) && !zr_parse_memory("0x10", &m),
	   "bad units, signs, spaces, fractions rejected");
	/* Redis 7.0's memtoull lets these through; CONFIG SET answers alike */
	ok(zr_parse_memory("mb", &m) && m == 0 && zr_parse_memory("", &m) && m == 0, "no digits: 0");
	ok(zr_parse_memory("99999999999999999999", &m) && m == ULLONG_MAX &&
		   zr_parse_memory("18446744073709551615gb", &m) && m == ULLONG_MAX,
	   "past 2^64 - 1: saturated, for the caller's range check");

	/* the command clock (TSC-scaled where invariant): it keeps pace with
	 * CLOCK_MONOTONIC, never goes back on one thread, and gives the wall
	 * clock through zr_wall_ms_at. Bounds are loose: a loaded machine may
	 * stretch a sleep, never shrink it. */
	int64_t c0 = zr_clock_us(), m0 = zr_mono_us();
	bool mono = true;
	int64_t prev = c0;
	for (int i = 0; i < 100000; i++) {
		int64_t t = zr_clock_us();
		if (t < prev)
			mono = false;
		prev = t;
	}
	ok(mono, "command clock: never goes back on one thread");
	struct timespec nap = { 0, 30 * 1000 * 1000 };
	nanosleep(&nap, NULL);
	int64_t dc = zr_clock_us() - c0, dm = zr_mono_us() - m0;
	ok(dc >= 29000 && dc <= dm + dm / 10 + 5000 && dc >= dm - dm / 10 - 5000,
	   "command clock: 30 ms of sleep read as CLOCK_MONOTONIC reads it (%lld us vs %lld us)",
	   (long long)dc, (long long)dm);
	int64_t w0 = zr_time_ms();
	int64_t w = zr_wall_ms_at(zr_clock_us());
	int64_t w1 = zr_time_ms();
	ok(w >= w0 - 1 && w <= w1 + 1, "zr_wall_ms_at: the wall clock in ms (%lld in [%lld, %lld])",
	   (long long)w, (long long)w0, (long long)w1);
	return done_testing();
}
