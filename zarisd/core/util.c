/* util — see util.h. */
#include "zarisd/core/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>
#include <xxhash.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "zarisd/core/mem.h"

bool zr_str_to_ull(const char *s, size_t len, unsigned long long *out)
{
	if (len == 0 || len >= ZR_LONG_STR_SIZE)
		return false;
	if (len == 1 && s[0] == '0') {
		*out = 0;
		return true;
	}
	if (s[0] < '1' || s[0] > '9')
		return false;
	unsigned long long v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool zr_str_to_ll(const char *s, size_t len, long long *out)
{
	if (len == 0 || len >= ZR_LONG_STR_SIZE)
		return false;
	bool neg = s[0] == '-';
	unsigned long long v;
	if (neg) {
		if (len == 1 || s[1] == '0')
			return false;
		if (!zr_str_to_ull(s + 1, len - 1, &v) || v > (unsigned long long)INT64_MAX + 1)
			return false;
		*out = (v == (unsigned long long)INT64_MAX + 1) ? INT64_MIN : -(long long)v;
		return true;
	}
	if (!zr_str_to_ull(s, len, &v) || v > (unsigned long long)INT64_MAX)
		return false;
	*out = (long long)v;
	return true;
}

bool zr_str_to_ld(const char *s, size_t len, long double *out)
{
	char buf[ZR_MAX_LONG_DOUBLE_CHARS];
	if (len == 0 || len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	char *end;
	errno = 0;
	long double v = strtold(buf, &end);
	/* end must reach LEN: a NUL inside the value would stop strtold early */
	if (isspace((unsigned char)buf[0]) || end != buf + len ||
	    (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) || isnan(v))
		return false;
	*out = v;
	return true;
}

bool zr_str_to_d(const char *s, size_t len, double *out)
{
	/* Redis's string2d has no length limit (strtod over the sds itself):
	 * DBL_MAX written out is 309 digits, and any number of digits or
	 * leading zeros parses. S need not end in a NUL, so a copy ends it:
	 * on the stack when short, else on the heap for this call only. */
	char stack[256];
	if (len == 0)
		return false;
	char *buf = len < sizeof(stack) ? stack : zr_try_malloc(len + 1);
	if (!buf)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	char *end;
	errno = 0;
	double v = strtod(buf, &end);
	bool ok = !isspace((unsigned char)buf[0]) && end == buf + len &&
		  !(errno == ERANGE && (v == HUGE_VAL || v == -HUGE_VAL || fpclassify(v) == FP_ZERO)) &&
		  !isnan(v);
	if (buf != stack)
		zr_free(buf);
	if (ok)
		*out = v;
	return ok;
}

size_t zr_ll_to_str(char *buf, long long v)
{
	char tmp[ZR_LONG_STR_SIZE];
	unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
	size_t n = 0;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	size_t len = 0;
	if (v < 0)
		buf[len++] = '-';
	while (n)
		buf[len++] = tmp[--n];
	buf[len] = '\0';
	return len;
}

size_t zr_ld_to_str(char *buf, size_t size, long double v)
{
	if (isinf(v)) {
		const char *s = v > 0 ? "inf" : "-inf";
		size_t n = strlen(s);
		if (size <= n)
			return 0;
		memcpy(buf, s, n + 1);
		return n;
	}
	/* Redis (LD_STR_HUMAN): 17 fixed decimals, then trailing zeros and a
	 * trailing dot removed, so 10.5 stays "10.5" and 3.0 becomes "3". */
	int n = snprintf(buf, size, "%.17Lf", v);
	if (n < 0 || (size_t)n >= size)
		return 0;
	if (strchr(buf, '.')) {
		while (n > 0 && buf[n - 1] == '0')
			n--;
		if (n > 0 && buf[n - 1] == '.')
			n--;
	}
	buf[n] = '\0';
	if (n == 2 && buf[0] == '-' && buf[1] == '0') {
		buf[0] = '0';
		buf[1] = '\0';
		n = 1;
	}
	return (size_t)n;
}

size_t zr_d_to_str(char *buf, size_t size, double v)
{
	int n;
	if (isinf(v))
		n = snprintf(buf, size, "%s", v > 0 ? "inf" : "-inf");
	else
		n = snprintf(buf, size, "%.17g", v);
	return (n < 0 || (size_t)n >= size) ? 0 : (size_t)n;
}

/* Redis 7.0.15's stringmatchlen, without its recursion. Redis recurses once
 * per '*' and, since 7.0.9 (CVE-2022-36021), stops every pending '*' as soon
 * as one of them has tried the whole rest of the string in vain
 * (skipLongerMatches): a longer match for an earlier star would need the
 * rest of the pattern to match further on, which was just ruled out. So
 * only the innermost star is ever retried, and one backtrack point (where
 * the rest of the pattern after that star starts, and where the star's
 * match would end) gives the same answers with O(plen * slen) steps and no
 * stack (Redis 7.0.15 has no nesting limit; a pattern of a million stars
 * costs zarisd no stack at all).
 *
 * Byte quirks kept from Redis on x86-64: bytes compare as signed char (a
 * range such as [a-\xff] is swapped into [\xff-a]), NOCASE folds ASCII only
 * (Redis never sets LC_CTYPE) and after the swap of a range's ends, an
 * escaped byte inside a class is compared without folding, an unterminated
 * class ends at the pattern's end. STEPS, when not NULL, is increased by
 * the pattern elements examined (for the unit test). */
static int glob_fold(int c, bool nocase)
{
	return nocase && c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Matches the class starting after '[' at P (PLEN bytes left) against C;
 * returns how many pattern bytes the class took, the closing ']' included
 * when present, and sets *MATCH. */
static size_t glob_class(const char *p, size_t plen, int c, bool nocase, bool *match)
{
	size_t i = 0;
	bool negate = plen && p[0] == '^';
	bool hit = false;
	if (negate)
		i++;
	for (;;) {
		if (i + 1 < plen && p[i] == '\\') {
			i++;
			if ((signed char)p[i] == c)
				hit = true;
		} else if (i == plen) {
			break; /* unterminated: Redis takes the last byte as the close */
		} else if (p[i] == ']') {
			i++;
			break;
		} else if (i + 2 < plen && p[i + 1] == '-') {
			int lo = (signed char)p[i], hi = (signed char)p[i + 2];
			if (lo > hi) {
				int t = lo;
				lo = hi;
				hi = t;
			}
			lo = glob_fold(lo, nocase);
			hi = glob_fold(hi, nocase);
			if (glob_fold(c, nocase) >= lo && glob_fold(c, nocase) <= hi)
				hit = true;
			i += 2;
		} else if (glob_fold((signed char)p[i], nocase) == glob_fold(c, nocase)) {
			hit = true;
		}
		i++;
	}
	*match = negate ? !hit : hit;
	return i;
}

/* One pattern element at P against the byte C: true when it matches, and
 * *TAKEN is how many pattern bytes it spans ('*' is handled by the caller). */
static bool glob_element(const char *p, size_t plen, int c, bool nocase, size_t *taken)
{
	bool match;
	switch (p[0]) {
	case '?':
		*taken = 1;
		return true;
	case '[':
		*taken = 1 + glob_class(p + 1, plen - 1, c, nocase, &match);
		return match;
	case '\\':
		if (plen >= 2) {
			*taken = 2;
			return glob_fold((signed char)p[1], nocase) == glob_fold(c, nocase);
		}
		/* a trailing backslash is itself */
		*taken = 1;
		return '\\' == glob_fold(c, nocase);
	default:
		*taken = 1;
		return glob_fold((signed char)p[0], nocase) == glob_fold(c, nocase);
	}
}

static bool glob_match(const char *p, size_t plen, const char *s, size_t slen, bool nocase, uint64_t *steps)
{
	const char *star_p = NULL, *star_s = NULL; /* the innermost star's retry point */
	size_t star_plen = 0, star_slen = 0;
	uint64_t n = 0;
	bool matched;

	for (;;) {
		/* one linear run of Redis's loop, from (p, s) to a verdict */
		while (plen && slen) {
			n++;
			if (p[0] == '*') {
				while (plen > 1 && p[1] == '*') {
					p++;
					plen--;
				}
				if (plen == 1) {
					matched = true;
					goto out;
				}
				/* this star's outcome is now the whole match's: the
				 * earlier star is never retried (skipLongerMatches) */
				star_p = p + 1;
				star_plen = plen - 1;
				star_s = s;
				star_slen = slen;
				p = star_p;
				plen = star_plen;
				continue;
			}
			size_t taken;
			if (!glob_element(p, plen, (signed char)s[0], nocase, &taken))
				goto retry;
			p += taken;
			plen -= taken;
			s++;
			slen--;
			if (slen == 0) {
				while (plen && p[0] == '*') {
					p++;
					plen--;
				}
			}
		}
		if (plen == 0 && slen == 0) {
			matched = true;
			goto out;
		}
retry:
		/* the innermost star takes one byte more; once it has tried
		 * every start left, Redis gives up on the whole pattern */
		if (!star_p || star_slen <= 1) {
			matched = false;
			goto out;
		}
		star_s++;
		star_slen--;
		p = star_p;
		plen = star_plen;
		s = star_s;
		slen = star_slen;
	}
out:
	if (steps)
		*steps += n;
	return matched;
}

bool zr_glob_match(const char *pat, size_t plen, const char *str, size_t slen, bool nocase)
{
	return glob_match(pat, plen, str, slen, nocase, NULL);
}

int64_t zr_time_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t zr_time_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t zr_mono_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The command clock's TSC scale: written once under tsc_once, then only
 * read (tsc_state is the release/acquire flag that publishes the rest). */
static pthread_once_t tsc_once = PTHREAD_ONCE_INIT;
static _Atomic int tsc_state; /* 0 = not calibrated yet, 1 = TSC, -1 = CLOCK_MONOTONIC */
static uint64_t tsc_base;     /* TSC at calibration */
static int64_t tsc_base_us;   /* zr_mono_us() at calibration */
static uint64_t tsc_mult;     /* microseconds per tick, 32.32 fixed point */

#if defined(__x86_64__)
/* Whether /proc/cpuinfo lists both flags that make the TSC a clock: a
 * constant rate whatever the frequency, and no stop in deep C-states. */
static bool tsc_invariant(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return false;
	char line[4096];
	bool constant = false, nonstop = false;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0)
			continue;
		constant = strstr(line, " constant_tsc") != NULL;
		nonstop = strstr(line, " nonstop_tsc") != NULL;
		break;
	}
	fclose(f);
	return constant && nonstop;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void tsc_calibrate(void)
{
	int state = -1;
	if (tsc_invariant()) {
		int64_t n0 = mono_ns(), n1;
		uint64_t t0 = __rdtsc(), t1;
		do {
			n1 = mono_ns();
			t1 = __rdtsc();
		} while (n1 - n0 < 2000000);
		if (t1 > t0) {
			tsc_mult = (uint64_t)(((unsigned __int128)(uint64_t)(n1 - n0) << 32) /
					      ((unsigned __int128)(t1 - t0) * 1000));
			tsc_base = t1;
			tsc_base_us = n1 / 1000;
			state = tsc_mult ? 1 : -1;
		}
	}
	atomic_store_explicit(&tsc_state, state, memory_order_release);
}

void zr_clock_init(void)
{
	pthread_once(&tsc_once, tsc_calibrate);
}

int64_t zr_clock_us(void)
{
	int state = atomic_load_explicit(&tsc_state, memory_order_acquire);
	if (__builtin_expect(state == 0, 0)) {
		zr_clock_init();
		state = atomic_load_explicit(&tsc_state, memory_order_acquire);
	}
	if (state < 0)
		return zr_mono_us();
	/* signed: a core whose TSC is a little behind the calibrating one's
	 * gives a slightly earlier time, not a huge one */
	int64_t ticks = (int64_t)(__rdtsc() - tsc_base);
	return tsc_base_us + (int64_t)(((__int128)ticks * (__int128)tsc_mult) >> 32);
}
#else
void zr_clock_init(void)
{
}

int64_t zr_clock_us(void)
{
	return zr_mono_us();
}
#endif

/* Per thread: CLOCK_REALTIME minus the command clock in microseconds, and
 * the command-clock instant it was measured at (INT64_MIN: never). */
static _Thread_local int64_t wall_anchor_us = INT64_MIN;
static _Thread_local int64_t wall_minus_clock_us;

int64_t zr_wall_ms_at(int64_t clock_us)
{
	if (wall_anchor_us == INT64_MIN || clock_us - wall_anchor_us >= 1000 || clock_us < wall_anchor_us) {
		struct timespec rt;
		clock_gettime(CLOCK_REALTIME, &rt);
		int64_t now = zr_clock_us();
		wall_minus_clock_us = (int64_t)rt.tv_sec * 1000000 + rt.tv_nsec / 1000 - now;
		wall_anchor_us = clock_us;
	}
	int64_t us = clock_us + wall_minus_clock_us;
	/* floor, as zr_time_ms() does for a positive time */
	return us >= 0 ? us / 1000 : -((-us + 999) / 1000);
}

/* Written once by zr_hash_init() before threads start, read-only after. */
static uint64_t hash_seed;

void zr_hash_init(void)
{
	if (getrandom(&hash_seed, sizeof(hash_seed), 0) != sizeof(hash_seed))
		hash_seed = (uint64_t)zr_mono_us() * 0x9E3779B97F4A7C15ULL;
}

uint64_t zr_hash(const void *key, size_t len)
{
	return XXH3_64bits_withSeed(key, len, hash_seed);
}

bool zr_eq_nocase(const char *s, size_t len, const char *lit)
{
	size_t n = strlen(lit);
	return n == len && strncasecmp(s, lit, len) == 0;
}

bool zr_parse_memory(const char *s, unsigned long long *out)
{
	/* Redis 7.0's memtoull, including what it lets through: no digits
	 * ("", "mb") is 0, and a number past 2^64 - 1 saturates (strtoull),
	 * so that the caller's range check answers it */
	size_t digits = 0;
	while (isdigit((unsigned char)s[digits]))
		digits++;
	const char *unit = s + digits;
	unsigned long long mul;
	if (!*unit || !strcasecmp(unit, "b"))
		mul = 1;
	else if (!strcasecmp(unit, "k"))
		mul = 1000ULL;
	else if (!strcasecmp(unit, "kb"))
		mul = 1024ULL;
	else if (!strcasecmp(unit, "m"))
		mul = 1000ULL * 1000;
	else if (!strcasecmp(unit, "mb"))
		mul = 1024ULL * 1024;
	else if (!strcasecmp(unit, "g"))
		mul = 1000ULL * 1000 * 1000;
	else if (!strcasecmp(unit, "gb"))
		mul = 1024ULL * 1024 * 1024;
	else
		return false; /* a sign, a space, a point, another unit */
	if (digits >= 128)
		return false; /* Redis copies the digits into a 128-byte buffer */
	unsigned long long v = 0;
	for (size_t i = 0; i < digits; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (ULLONG_MAX - d) / 10) {
			v = ULLONG_MAX;
			break;
		}
		v = v * 10 + d;
	}
	*out = v > ULLONG_MAX / mul ? ULLONG_MAX : v * mul;
	return true;
}
