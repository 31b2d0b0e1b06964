/* tap.h — a tiny TAP producer for C unit tests (run by prove).
 *
 *   plan(3); ok(x == 1, "x is one"); is_int(a, b, "a == b");
 *   is_str(s, "x", "..."); diag("..."); return done_testing();
 *   skip_all("reason") prints "1..0 # SKIP reason" and exits 0.
 *
 * Header-only, static state: one test binary, one TAP stream.
 */
#ifndef ZR_TAP_H
#define ZR_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_planned = -1;
static int tap_run;
static int tap_failed;

static inline void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

static inline void skip_all(const char *why)
{
	printf("1..0 # SKIP %s\n", why);
	exit(0);
}

static inline void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static inline int tap_ok(int cond, const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	tap_run++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_run);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		printf("#   failed at %s line %d\n", file, line);
	fflush(stdout);
	return cond;
}

#define ok(cond, ...) tap_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define is_int(got, want, ...)                                                        \
	do {                                                                          \
		long long tap_g_ = (long long)(got), tap_w_ = (long long)(want);      \
		if (!ok(tap_g_ == tap_w_, __VA_ARGS__))                               \
			diag("     got: %lld\n#     expected: %lld", tap_g_, tap_w_); \
	} while (0)

#define is_str(got, want, ...)                                                                   \
	do {                                                                                     \
		const char *tap_g_ = (got), *tap_w_ = (want);                                    \
		int tap_eq_ = tap_g_ && tap_w_ ? strcmp(tap_g_, tap_w_) == 0 : tap_g_ == tap_w_; \
		if (!ok(tap_eq_, __VA_ARGS__))                                                   \
			diag("     got: '%s'\n#     expected: '%s'", tap_g_ ? tap_g_ : "(null)", \
			     tap_w_ ? tap_w_ : "(null)");                                        \
	} while (0)

#define is_mem(got, glen, want, wlen, ...) \
	ok((size_t)(glen) == (size_t)(wlen) && memcmp((got), (want), (size_t)(wlen)) == 0, __VA_ARGS__)

/* Prints the plan when none was given up front; returns the exit status. */
static inline int done_testing(void)
{
	if (tap_planned < 0)
		printf("1..%d\n", tap_run);
	else if (tap_planned != tap_run)
		printf("# planned %d tests but ran %d\n", tap_planned, tap_run);
	fflush(stdout);
	return tap_failed || (tap_planned >= 0 && tap_planned != tap_run) ? 1 : 0;
}

#endif
