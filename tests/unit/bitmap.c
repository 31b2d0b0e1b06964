/* Unit tests of the bit primitives behind the bitmap commands
 * (zarisd/core/bits.c), each against a naive bit-by-bit reference on
 * random data: popcount (both the POPCNT and the portable version, every
 * length and alignment), counts over bit ranges, first set / clear bit
 * (with long 0x00 / 0xff runs for the word-skipping path), BITFIELD's
 * integer fields, and the overflow rules (mathematical overflow plus
 * Redis's own corner for SET values near INT64_MIN). The commands
 * themselves are compared with redis-server in
 * tests/integration/cases/bitmap*.txt.
 */
#include "zarisd/core/bits.c"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dULL;

static uint64_t rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ULL;
}

static int ref_bit(const uint8_t *p, uint64_t pos)
{
	return (p[pos / 8] >> (7 - pos % 8)) & 1;
}

/* Random bytes, often in long runs of 0x00 or 0xff. */
static void fill(uint8_t *p, size_t n)
{
	size_t i = 0;
	while (i < n) {
		size_t run = 1 + rng() % 40;
		int kind = (int)(rng() % 3);
		for (; run && i < n; run--, i++)
			p[i] = kind == 0 ? 0 : kind == 1 ? 0xff : (uint8_t)rng();
	}
}

static void test_popcount(void)
{
	uint8_t buf[300];
	int bad = 0, bad_hw = 0;
	for (int round = 0; round < 2000; round++) {
		fill(buf, sizeof(buf));
		size_t off = rng() % 16, len = rng() % (sizeof(buf) - 16);
		uint64_t want = 0;
		for (size_t i = 0; i < len * 8; i++)
			want += (uint64_t)ref_bit(buf + off, i);
		if (zr_popcount(buf + off, len) != want || popcount_generic(buf + off, len) != want)
			bad++;
#if defined(__x86_64__)
		if (__builtin_cpu_supports("popcnt") && popcount_hw(buf + off, len) != want)
			bad_hw++;
#endif
	}
	is_int(bad, 0, "popcount matches the bit-by-bit count (any length and alignment)");
	is_int(bad_hw, 0, "the POPCNT version matches too");
	is_int(zr_popcount(buf, 0), 0, "popcount of nothing is 0");
}

static void test_bitcount_range(void)
{
	uint8_t buf[64];
	int bad = 0;
	for (int round = 0; round < 5000; round++) {
		fill(buf, sizeof(buf));
		uint64_t a = rng() % 512, b = rng() % 512;
		uint64_t first = a < b ? a : b, last = a < b ? b : a;
		uint64_t want = 0;
		for (uint64_t i = first; i <= last; i++)
			want += (uint64_t)ref_bit(buf, i);
		if (zr_bitcount_range(buf, first, last) != want)
			bad++;
	}
	is_int(bad, 0, "bit-range counts match the reference (5000 random ranges)");
}

static void test_bitpos(void)
{
	uint8_t buf[200];
	int bad = 0;
	for (int round = 0; round < 20000; round++) {
		fill(buf, sizeof(buf));
		uint64_t a = rng() % 1600, b = rng() % 1600;
		uint64_t first = a < b ? a : b, last = a < b ? b : a;
		int bit = (int)(rng() & 1);
		int64_t want = -1;
		for (uint64_t i = first; i <= last; i++) {
			if (ref_bit(buf, i) == bit) {
				want = (int64_t)i;
				break;
			}
		}
		if (zr_bitpos(buf, first, last, bit) != want)
			bad++;
	}
	is_int(bad, 0, "first set/clear bit matches the reference (20000 random ranges)");
	memset(buf, 0xff, sizeof(buf));
	is_int(zr_bitpos(buf, 0, sizeof(buf) * 8 - 1, 0), -1, "no clear bit in all ones");
	buf[sizeof(buf) - 1] = 0xfe;
	is_int(zr_bitpos(buf, 3, sizeof(buf) * 8 - 1, 0), (int64_t)sizeof(buf) * 8 - 1,
	       "clear bit at the very end");
	is_int(zr_bitpos(buf, 3, sizeof(buf) * 8 - 2, 0), -1, "... not found when the range stops before it");
}

static void test_bitfield(void)
{
	uint8_t buf[32], ref[32];
	int bad_get = 0, bad_set = 0, bad_sign = 0;
	for (int round = 0; round < 20000; round++) {
		fill(buf, sizeof(buf));
		memcpy(ref, buf, sizeof(buf));
		unsigned bits = 1 + (unsigned)(rng() % 64);
		uint64_t off = rng() % (sizeof(buf) * 8 - bits + 1);
		uint64_t want = 0;
		for (unsigned i = 0; i < bits; i++)
			want = (want << 1) | (uint64_t)ref_bit(buf, off + i);
		if (zr_bitfield_get_u(buf, off, bits) != want)
			bad_get++;
		int64_t sw = bits < 64 && (want >> (bits - 1)) ? (int64_t)(want | (UINT64_MAX << bits))
							       : (int64_t)want;
		if (zr_bitfield_get_i(buf, off, bits) != sw)
			bad_sign++;
		uint64_t v = rng();
		zr_bitfield_set(buf, off, bits, v);
		for (unsigned i = 0; i < bits; i++) {
			uint64_t pos = off + i;
			uint8_t m = (uint8_t)(1u << (7 - pos % 8));
			if ((v >> (bits - 1 - i)) & 1)
				ref[pos / 8] |= m;
			else
				ref[pos / 8] &= (uint8_t)~m;
		}
		if (memcmp(buf, ref, sizeof(buf)))
			bad_set++;
	}
	is_int(bad_get, 0, "unsigned fields of 1..64 bits at any offset read like the reference");
	is_int(bad_sign, 0, "signed fields sign-extend");
	is_int(bad_set, 0, "writing a field changes exactly its bits");
}

/* Mathematical overflow of VALUE + INCR for a BITS-wide field. */
static int ref_overflow_i(__int128 value, __int128 incr, unsigned bits)
{
	__int128 max = bits == 64 ? (__int128)INT64_MAX : ((__int128)1 << (bits - 1)) - 1, min = -max - 1;
	__int128 sum = value + incr;
	return sum > max ? 1 : sum < min ? -1 : 0;
}

static int64_t ref_wrap_i(int64_t value, int64_t incr, unsigned bits)
{
	uint64_t sum = (uint64_t)value + (uint64_t)incr;
	if (bits == 64)
		return (int64_t)sum;
	sum &= (1ULL << bits) - 1;
	if (sum >> (bits - 1))
		sum |= UINT64_MAX << bits;
	return (int64_t)sum;
}

static int64_t rand_i64(void)
{
	switch (rng() % 4) {
	case 0:
		return (int64_t)(rng() % 512) - 256;
	case 1:
		return (int64_t)rng();
	case 2:
		return rng() & 1 ? INT64_MAX - (int64_t)(rng() % 4) : INT64_MIN + (int64_t)(rng() % 4);
	default:
		return (int64_t)(rng() % 100000) - 50000;
	}
}

static void test_overflow(void)
{
	int bad_u = 0, bad_i = 0;
	for (int round = 0; round < 200000; round++) {
		unsigned ubits = 1 + (unsigned)(rng() % 63), ibits = 1 + (unsigned)(rng() % 64);
		uint64_t umax = (1ULL << ubits) - 1;
		/* INCRBY: the old value fits the field */
		uint64_t uv = rng() & umax;
		int64_t incr = rand_i64();
		__int128 usum = (__int128)uv + incr;
		int udir = usum > (__int128)umax ? 1 : usum < 0 ? -1 : 0;
		for (int how = 0; how < 3; how++) {
			uint64_t out = 12345;
			int dir = zr_overflow_u(uv, incr, ubits, (enum zr_overflow)how, &out);
			uint64_t want = !udir			  ? (uint64_t)usum
					: how == ZR_OVERFLOW_WRAP ? (uv + (uint64_t)incr) & umax
					: how == ZR_OVERFLOW_SAT  ? (udir > 0 ? umax : 0)
								  : 12345;
			if (dir != udir || out != want)
				bad_u++;
		}
		int64_t imax = ibits == 64 ? INT64_MAX : (int64_t)((1ULL << (ibits - 1)) - 1),
			imin = -imax - 1;
		int64_t iv =
			ibits == 64
				? (int64_t)rng()
				: (int64_t)(rng() % ((uint64_t)imax - (uint64_t)imin + 1) + (uint64_t)imin);
		int idir = ref_overflow_i(iv, incr, ibits);
		for (int how = 0; how < 3; how++) {
			int64_t out = 12345;
			int dir = zr_overflow_i(iv, incr, ibits, (enum zr_overflow)how, &out);
			int64_t want = !idir			 ? (int64_t)((uint64_t)iv + (uint64_t)incr)
				       : how == ZR_OVERFLOW_WRAP ? ref_wrap_i(iv, incr, ibits)
				       : how == ZR_OVERFLOW_SAT	 ? (idir > 0 ? imax : imin)
								 : 12345;
			if (dir != idir || out != want)
				bad_i++;
		}
	}
	is_int(bad_u, 0, "unsigned INCRBY overflow: direction and WRAP/SAT/FAIL results match arithmetic");
	is_int(bad_i, 0, "signed INCRBY overflow matches arithmetic for 1..64 bits");

	/* SET: the value is checked against the type with no increment */
	uint64_t u = 0;
	ok(zr_overflow_u((uint64_t)-5, 0, 8, ZR_OVERFLOW_SAT, &u) == 1 && u == 255,
	   "SET u8 -5 SAT: a negative value is a huge unsigned one (255)");
	ok(zr_overflow_u((uint64_t)-5, 0, 8, ZR_OVERFLOW_WRAP, &u) == 1 && u == 251, "SET u8 -5 WRAP is 251");
	int64_t i = 0;
	ok(zr_overflow_i(-200, 0, 8, ZR_OVERFLOW_SAT, &i) == -1 && i == -128, "SET i8 -200 SAT is -128");
	ok(zr_overflow_i(INT64_MIN, 0, 8, ZR_OVERFLOW_SAT, &i) == 1 && i == 127,
	   "SET i8 INT64_MIN SAT is 127, Redis's wrapped headroom check");
	ok(zr_overflow_i(INT64_MIN + 128, 0, 8, ZR_OVERFLOW_SAT, &i) == -1 && i == -128,
	   "... but INT64_MIN+128 saturates down");
	ok(zr_overflow_i(INT64_MIN, 0, 8, ZR_OVERFLOW_WRAP, &i) == 1 && i == 0, "SET i8 INT64_MIN WRAP is 0");
	ok(zr_overflow_i(INT64_MAX, 1, 64, ZR_OVERFLOW_WRAP, &i) == 1 && i == INT64_MIN, "i64 wraps around");
	ok(zr_overflow_i(-1, INT64_MIN, 64, ZR_OVERFLOW_SAT, &i) == -1 && i == INT64_MIN,
	   "i64 saturates down");
	ok(zr_overflow_i(5, -3, 8, ZR_OVERFLOW_FAIL, &i) == 0 && i == 2, "in range: the sum");
}

static void test_murmur(void)
{
	/* The finaliser alone for an empty key and seed 0 leaves 0. */
	is_int(zr_murmur64a("", 0, 0), 0, "MurmurHash64A of nothing with seed 0 is 0");
	/* Tail bytes and whole blocks both reach the hash. */
	ok(zr_murmur64a("abcdefgh", 8, 1) != zr_murmur64a("abcdefgi", 8, 1), "a block byte changes the hash");
	ok(zr_murmur64a("abcdefghi", 9, 1) != zr_murmur64a("abcdefghj", 9, 1),
	   "a tail byte changes the hash");
	ok(zr_murmur64a("abc", 3, 1) != zr_murmur64a("abc", 3, 2), "the seed changes the hash");
	/* (values pinned against redis-server are in tests/unit/hll.c) */
}

int main(void)
{
	plan(26);
	test_popcount();
	test_bitcount_range();
	test_bitpos();
	test_bitfield();
	test_overflow();
	test_murmur();
	return done_testing();
}
