/* bits — see bits.h. Bit order is Redis's: position i is bit 7 - (i & 7)
 * of byte i >> 3. */
#include "zarisd/core/bits.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/* --- population count ---------------------------------------------------------- */

typedef uint64_t (*popcount_fn)(const uint8_t *p, size_t len);

static uint64_t popcount_generic(const uint8_t *p, size_t len)
{
	uint64_t n = 0;
	size_t i = 0;
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		n += (uint64_t)__builtin_popcountll(w);
	}
	for (; i < len; i++)
		n += (uint64_t)__builtin_popcount(p[i]);
	return n;
}

#if defined(__x86_64__)
/* The same loop compiled for POPCNT: one instruction per word instead of
 * the dozen of the portable bit trick. Four independent sums keep the
 * instruction's latency off the critical path. */
__attribute__((target("popcnt"))) static uint64_t popcount_hw(const uint8_t *p, size_t len)
{
	uint64_t a = 0, b = 0, c = 0, d = 0;
	size_t i = 0;
	for (; i + 32 <= len; i += 32) {
		uint64_t w[4];
		memcpy(w, p + i, 32);
		a += (uint64_t)__builtin_popcountll(w[0]);
		b += (uint64_t)__builtin_popcountll(w[1]);
		c += (uint64_t)__builtin_popcountll(w[2]);
		d += (uint64_t)__builtin_popcountll(w[3]);
	}
	for (; i + 8 <= len; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		a += (uint64_t)__builtin_popcountll(w);
	}
	for (; i < len; i++)
		a += (uint64_t)__builtin_popcount(p[i]);
	return a + b + c + d;
}
#endif

/* Chosen on first use; every thread would choose the same, so a relaxed
 * store racing with another is harmless. */
static _Atomic(popcount_fn) popcount_impl;

uint64_t zr_popcount(const void *p, size_t len)
{
	popcount_fn fn = atomic_load_explicit(&popcount_impl, memory_order_relaxed);
	if (!fn) {
		fn = popcount_generic;
#if defined(__x86_64__)
		__builtin_cpu_init();
		if (__builtin_cpu_supports("popcnt"))
			fn = popcount_hw;
#endif
		atomic_store_explicit(&popcount_impl, fn, memory_order_relaxed);
	}
	return fn(p, len);
}

uint64_t zr_bitcount_range(const uint8_t *p, uint64_t first, uint64_t last)
{
	uint64_t fb = first >> 3, lb = last >> 3;
	uint64_t n = zr_popcount(p + fb, (size_t)(lb - fb + 1));
	/* Take back the bits of the edge bytes that lie outside the range. */
	uint8_t head = (uint8_t)(0xff00u >> (first & 7));    /* bits before FIRST */
	uint8_t tail = (uint8_t)(0xffu >> ((last & 7) + 1)); /* bits after LAST */
	n -= (uint64_t)__builtin_popcount(p[fb] & head);
	n -= (uint64_t)__builtin_popcount(p[lb] & tail);
	return n;
}

/* --- first set / clear bit --------------------------------------------------------- */

static inline int bit_at(const uint8_t *p, uint64_t pos)
{
	return (p[pos >> 3] >> (7 - (pos & 7))) & 1;
}

int64_t zr_bitpos(const uint8_t *p, uint64_t first, uint64_t last, int bit)
{
	const uint8_t skip = bit ? 0x00 : 0xff; /* a byte holding no match */
	uint64_t pos = first;

	for (; pos <= last && (pos & 7); pos++)
		if (bit_at(p, pos) == bit)
			return (int64_t)pos;
	/* Whole words without a match are skipped eight bytes at a time; the
	 * word that holds one is searched byte by byte below. */
	uint64_t skipword = skip ? UINT64_MAX : 0;
	for (; pos + 63 <= last; pos += 64) {
		uint64_t w;
		memcpy(&w, p + (pos >> 3), 8);
		if (w != skipword)
			break;
	}
	for (; pos + 7 <= last; pos += 8) {
		uint8_t b = p[pos >> 3];
		if (b != skip) {
			unsigned x = bit ? b : (uint8_t)~b;
			return (int64_t)(pos + (unsigned)__builtin_clz(x) - 24);
		}
	}
	for (; pos <= last; pos++)
		if (bit_at(p, pos) == bit)
			return (int64_t)pos;
	return -1;
}

/* --- BITFIELD integers ----------------------------------------------------------------- */

uint64_t zr_bitfield_get_u(const uint8_t *p, uint64_t offset, unsigned bits)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bits; i++)
		v = (v << 1) | (uint64_t)bit_at(p, offset + i);
	return v;
}

int64_t zr_bitfield_get_i(const uint8_t *p, uint64_t offset, unsigned bits)
{
	uint64_t u = zr_bitfield_get_u(p, offset, bits);
	if (bits < 64 && (u & (1ULL << (bits - 1))))
		u |= UINT64_MAX << bits; /* sign-extend */
	return (int64_t)u;
}

void zr_bitfield_set(uint8_t *p, uint64_t offset, unsigned bits, uint64_t value)
{
	for (unsigned i = 0; i < bits; i++) {
		uint64_t pos = offset + i;
		uint8_t mask = (uint8_t)(1u << (7 - (pos & 7)));
		if ((value >> (bits - 1 - i)) & 1)
			p[pos >> 3] |= mask;
		else
			p[pos >> 3] &= (uint8_t)~mask;
	}
}

int zr_overflow_u(uint64_t value, int64_t incr, unsigned bits, enum zr_overflow how, uint64_t *out)
{
	uint64_t max = (1ULL << bits) - 1;
	int dir = 0;
	if (value > max || (incr > 0 && (uint64_t)incr > max - value))
		dir = 1;
	else if (incr < 0 && -(uint64_t)incr > value)
		dir = -1;
	if (!dir) {
		*out = value + (uint64_t)incr;
		return 0;
	}
	if (how == ZR_OVERFLOW_WRAP)
		*out = (value + (uint64_t)incr) & max;
	else if (how == ZR_OVERFLOW_SAT)
		*out = dir > 0 ? max : 0;
	return dir;
}

int zr_overflow_i(int64_t value, int64_t incr, unsigned bits, enum zr_overflow how, int64_t *out)
{
	int64_t max = bits == 64 ? INT64_MAX : (int64_t)((1ULL << (bits - 1)) - 1);
	int64_t min = -max - 1;
	/* Redis computes these headroom values with wrapping arithmetic and
	 * tests them exactly as below. A SET of a value within 2^bits of
	 * INT64_MIN therefore counts as an overflow upwards (SAT answers the
	 * maximum): kept, because replies must match Redis's. */
	int64_t maxincr = (int64_t)((uint64_t)max - (uint64_t)value);
	int64_t minincr = (int64_t)((uint64_t)min - (uint64_t)value);
	int dir = 0;
	if (value > max || (bits != 64 && incr > maxincr) || (value >= 0 && incr > 0 && incr > maxincr))
		dir = 1;
	else if (value < min || (bits != 64 && incr < minincr) || (value < 0 && incr < 0 && incr < minincr))
		dir = -1;
	if (!dir) {
		*out = (int64_t)((uint64_t)value + (uint64_t)incr);
		return 0;
	}
	if (how == ZR_OVERFLOW_WRAP) {
		uint64_t sum = (uint64_t)value + (uint64_t)incr;
		if (bits < 64) {
			uint64_t high = UINT64_MAX << bits;
			if (sum & (1ULL << (bits - 1)))
				sum |= high;
			else
				sum &= ~high;
		}
		*out = (int64_t)sum;
	} else if (how == ZR_OVERFLOW_SAT) {
		*out = dir > 0 ? max : min;
	}
	return dir;
}

/* --- MurmurHash64A ------------------------------------------------------------------------- */

uint64_t zr_murmur64a(const void *key, size_t len, uint64_t seed)
{
	const uint64_t m = 0xc6a4a7935bd1e995ULL;
	const unsigned r = 47;
	const uint8_t *data = key;
	uint64_t h = seed ^ ((uint64_t)len * m);
	size_t blocks = len / 8;

	for (size_t i = 0; i < blocks; i++, data += 8) {
		uint64_t k = 0;
		for (unsigned b = 0; b < 8; b++) /* little-endian on every host */
			k |= (uint64_t)data[b] << (8 * b);
		k *= m;
		k ^= k >> r;
		k *= m;
		h ^= k;
		h *= m;
	}
	size_t rest = len & 7;
	if (rest) {
		for (size_t b = rest; b > 0; b--)
			h ^= (uint64_t)data[b - 1] << (8 * (b - 1));
		h *= m;
	}
	h ^= h >> r;
	h *= m;
	h ^= h >> r;
	return h;
}
