/* varint — LEB128 unsigned integers, the length prefix of the store's flat
 * encodings (strpack, zset_lp): 7 bits per byte, low bits first, the high
 * bit set on every byte but the last, so a value below 128 is one byte.
 * Header-only (these sit on the compact encodings' hot paths); pure, any
 * thread.
 */
#ifndef ZR_VARINT_H
#define ZR_VARINT_H

#include <stddef.h>
#include <stdint.h>

/* Bytes varint_put() writes for V (1..10). */
static inline size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes V at P (room for varint_len(V) bytes); returns the bytes written. */
static inline size_t varint_put(unsigned char *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (unsigned char)v;
	return n;
}

/* Reads the varint at P (written by varint_put: the caller's buffer is
 * trusted) into *V; returns the bytes read. */
static inline size_t varint_get(const unsigned char *p, uint64_t *v)
{
	uint64_t r = 0;
	size_t n = 0;
	unsigned shift = 0;
	for (;;) {
		unsigned char b = p[n++];
		r |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
		shift += 7;
	}
	*v = r;
	return n;
}

#endif
