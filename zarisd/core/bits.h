/* bits — bit-level primitives over byte strings, with Redis's bit order
 * (bit 0 is the most significant bit of byte 0): population count, first
 * set/clear bit, BITFIELD's integer fields and their overflow rules, and
 * the MurmurHash64A hash that HyperLogLog needs. Pure functions, no state
 * apart from the popcount implementation picked once on first use (an
 * idempotent relaxed store, so any thread may call anything here).
 */
#ifndef ZR_BITS_H
#define ZR_BITS_H

#include <stddef.h>
#include <stdint.h>

/* Number of set bits in the LEN bytes at P (hardware POPCNT when the CPU
 * has it). */
uint64_t zr_popcount(const void *p, size_t len);

/* Number of set bits among bit positions FIRST..LAST (inclusive) of P;
 * LAST must lie inside the buffer and FIRST <= LAST. */
uint64_t zr_bitcount_range(const uint8_t *p, uint64_t first, uint64_t last);

/* Position of the first bit equal to BIT (0 or 1) among positions
 * FIRST..LAST (inclusive) of P, or -1 when there is none. LAST must lie
 * inside the buffer and FIRST <= LAST. */
int64_t zr_bitpos(const uint8_t *p, uint64_t first, uint64_t last, int bit);

/* The BITS-wide (1..64) unsigned field at bit OFFSET of P, most significant
 * bit first; every byte it touches must lie inside the buffer. */
uint64_t zr_bitfield_get_u(const uint8_t *p, uint64_t offset, unsigned bits);
/* The same field read as a two's complement signed integer. */
int64_t zr_bitfield_get_i(const uint8_t *p, uint64_t offset, unsigned bits);
/* Writes the low BITS bits of VALUE as the field at bit OFFSET of P. */
void zr_bitfield_set(uint8_t *p, uint64_t offset, unsigned bits, uint64_t value);

/* BITFIELD's OVERFLOW behaviours. */
enum zr_overflow {
	ZR_OVERFLOW_WRAP,
	ZR_OVERFLOW_SAT,
	ZR_OVERFLOW_FAIL,
};

/* Computes VALUE + INCR for a BITS-wide unsigned field (BITS 1..63) the way
 * Redis does: VALUE is taken as an unsigned 64-bit number (so a negative
 * SET value counts as a huge one). Returns 0 and the sum in *OUT when it
 * fits; otherwise 1 (too big) or -1 (below zero) with *OUT the wrapped sum
 * (WRAP) or the limit crossed (SAT); *OUT is untouched for FAIL. */
int zr_overflow_u(uint64_t value, int64_t incr, unsigned bits, enum zr_overflow how, uint64_t *out);
/* The same for a BITS-wide signed field (BITS 1..64). */
int zr_overflow_i(int64_t value, int64_t incr, unsigned bits, enum zr_overflow how, int64_t *out);

/* MurmurHash64A (Austin Appleby's 64-bit MurmurHash2 variant) of the LEN
 * bytes at KEY with SEED; blocks are read little-endian on every host, so
 * the result does not depend on the machine (what Redis does for HLL). */
uint64_t zr_murmur64a(const void *key, size_t len, uint64_t seed);

#endif
