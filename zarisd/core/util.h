/* util — small pure helpers shared by every layer: Redis-exact number
 * parsing and formatting, glob matching, clocks and key hashing. No state
 * apart from the hash seed, which zr_hash_init() sets once at start-up
 * before any thread exists. Callable from any thread.
 */
#ifndef ZR_UTIL_H
#define ZR_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest decimal long long plus sign and NUL. */
#define ZR_LONG_STR_SIZE 21
/* Longest text accepted for a long double (Redis's MAX_LONG_DOUBLE_CHARS). */
#define ZR_MAX_LONG_DOUBLE_CHARS (5 * 1024)

/* Parses a strict decimal long long exactly as Redis's string2ll: no spaces,
 * no '+', no leading zeros, no "-0", in range. true on success. */
bool zr_str_to_ll(const char *s, size_t len, long long *out);
/* Same, into an unsigned long long. */
bool zr_str_to_ull(const char *s, size_t len, unsigned long long *out);
/* Parses a long double as Redis's string2ld (INCRBYFLOAT): strtold over the
 * whole string, no leading space, no NaN, no overflow. */
bool zr_str_to_ld(const char *s, size_t len, long double *out);
/* Parses a double as Redis's string2d / getDoubleFromObject: any length
 * (a long one is copied for the call: NULL from the allocator refuses it), "inf",
 * "-inf", "+inf", rejects NaN and trailing garbage. */
bool zr_str_to_d(const char *s, size_t len, double *out);

/* Writes V in decimal into BUF (at least ZR_LONG_STR_SIZE); returns length. */
size_t zr_ll_to_str(char *buf, long long v);
/* Formats a long double like Redis's ld2string(LD_STR_HUMAN) — the form
 * INCRBYFLOAT replies with. BUF must hold 5*1024 bytes; returns length,
 * 0 when it does not fit. */
size_t zr_ld_to_str(char *buf, size_t size, long double v);
/* Formats a double as Redis replies with it (%.17g, "inf"/"-inf"). */
size_t zr_d_to_str(char *buf, size_t size, double v);

/* Glob-style match of STR against PATTERN with exactly the answers of Redis
 * 7.0.15's stringmatchlen: * ? [a-z] [^x] and backslash escapes, NOCASE
 * folding ASCII. At most about PLEN * SLEN steps and no recursion, whatever
 * the pattern (Redis 7.0.9's fix of CVE-2022-36021). */
bool zr_glob_match(const char *pat, size_t plen, const char *str, size_t slen, bool nocase);

/* Wall clock in milliseconds / microseconds since the epoch (for TTLs,
 * which are absolute). */
int64_t zr_time_ms(void);
int64_t zr_time_us(void);
/* Monotonic clock in microseconds (for durations). */
int64_t zr_mono_us(void);
/* The command clock: monotonic microseconds for timing each command (the
 * two reads per command were a visible part of its cost). On x86-64 with
 * an invariant TSC (constant_tsc and nonstop_tsc) it is the TSC scaled by
 * a rate measured against CLOCK_MONOTONIC once per process (about 2 ms,
 * on first use or at zr_clock_init); elsewhere it is zr_mono_us(). Only
 * differences of its values mean something (durations; a thread that
 * moves between CPUs may see one clamped to 0 by the caller). Any thread. */
int64_t zr_clock_us(void);
/* Calibrates the command clock now rather than on its first use. */
void zr_clock_init(void);
/* The wall clock in milliseconds at CLOCK_US, a zr_clock_us() reading just
 * taken by the calling thread: one clock read per command serves both the
 * command's duration and its TTL instant. CLOCK_REALTIME is read again when
 * this thread's last reading is a millisecond old or more, so a step of the
 * wall clock shows within a millisecond. */
int64_t zr_wall_ms_at(int64_t clock_us);

/* Seeds the key hash with random bytes (hash flooding protection). Call
 * once before any thread starts. */
void zr_hash_init(void);
/* 64-bit hash of a key, seeded. */
uint64_t zr_hash(const void *key, size_t len);

/* Case-insensitive comparison of a counted string with a C string. */
bool zr_eq_nocase(const char *s, size_t len, const char *lit);

/* Parses sizes as Redis 7.0's memtoull: digits, then nothing, "b", "k"
 * (1000), "kb" (1024), "m", "mb", "g" or "gb", case-insensitive. As there,
 * no digits at all is 0 ("", "mb") and a value past 2^64 - 1 saturates to
 * ULLONG_MAX (for the caller's range check). false for anything else
 * (a sign, spaces, a fraction, another unit). */
bool zr_parse_memory(const char *s, unsigned long long *out);

#endif
