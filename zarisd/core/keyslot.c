/* keyslot — see keyslot.h. CRC16 by tables, eight bytes per step
 * ("slicing by 8"): table k maps a byte to the CRC of that byte followed by
 * k zero bytes, so the eight lookups of a step are independent loads
 * instead of a chain of eight. A key is hashed on every command, so this
 * is a hot path; keys are mostly short, the tail goes a byte at a time. */
#include "zarisd/core/keyslot.h"

#include <stdint.h>
#include <string.h>

#define CRC16_POLY 0x1021u

static uint16_t crc_table[8][256];

/* Built before main() (and before any unit test's main): a constant
 * table needs no "initialized yet?" test on the hot path. */
__attribute__((constructor)) static void crc_tables_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		unsigned c = i << 8;
		for (int b = 0; b < 8; b++)
			c = (c & 0x8000) ? (c << 1) ^ CRC16_POLY : c << 1;
		crc_table[0][i] = (uint16_t)c;
	}
	for (int k = 1; k < 8; k++)
		for (unsigned i = 0; i < 256; i++) {
			unsigned prev = crc_table[k - 1][i];
			crc_table[k][i] = (uint16_t)((prev << 8) ^ crc_table[0][prev >> 8]);
		}
}

/* CRC after the eight bytes at S, from CRC: the running CRC meets the
 * step's first two bytes. */
static inline unsigned crc_step8(unsigned crc, const unsigned char *s)
{
	return crc_table[7][(s[0] ^ (crc >> 8)) & 0xff] ^ crc_table[6][(s[1] ^ crc) & 0xff] ^
	       crc_table[5][s[2]] ^ crc_table[4][s[3]] ^ crc_table[3][s[4]] ^ crc_table[2][s[5]] ^
	       crc_table[1][s[6]] ^ crc_table[0][s[7]];
}

uint16_t zr_crc16(const void *p, size_t len)
{
	const unsigned char *s = p;
	unsigned crc = 0;
	while (len >= 8) {
		crc = crc_step8(crc, s);
		s += 8;
		len -= 8;
	}
	while (len--)
		crc = ((crc << 8) ^ crc_table[0][((crc >> 8) ^ *s++) & 0xff]) & 0xffff;
	return (uint16_t)crc;
}

/* The first '{' of KEY, or NULL. Keys are short and mostly have none, so
 * a word at a time (a byte of W ^ "{{{{{{{{" is zero where W has a '{';
 * the lowest flagged byte is exact, little-endian) beats a call to memchr. */
static inline const char *find_open(const char *key, size_t klen)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	size_t i = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	for (; i + 8 <= klen; i += 8) {
		uint64_t w;
		memcpy(&w, key + i, 8);
		w ^= ones * '{';
		uint64_t z = (w - ones) & ~w & high;
		if (z)
			return key + i + (unsigned)__builtin_ctzll(z) / 8;
	}
#endif
	for (; i < klen; i++)
		if (key[i] == '{')
			return key + i;
	return NULL;
}

const char *zr_key_hashtag(const char *key, size_t klen, size_t *len)
{
	const char *open = find_open(key, klen);
	if (open) {
		size_t rest = klen - (size_t)(open - key) - 1;
		const char *close = rest ? memchr(open + 1, '}', rest) : NULL;
		if (close && close > open + 1) {
			*len = (size_t)(close - open - 1);
			return open + 1;
		}
	}
	*len = klen;
	return key;
}

unsigned zr_key_slot(const char *key, size_t klen)
{
	/* One pass for the usual key without '{': each word is checked for a
	 * '{' as its CRC step runs (independent work, it overlaps); a key
	 * that has one starts over with its tag. */
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	const unsigned char *s = (const unsigned char *)key;
	size_t len = klen;
	unsigned crc = 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	while (len >= 8) {
		uint64_t w;
		memcpy(&w, s, 8);
		uint64_t x = w ^ (ones * '{');
		if ((x - ones) & ~x & high)
			goto tagged;
		crc = crc_step8(crc, s);
		s += 8;
		len -= 8;
	}
#endif
	while (len--) {
		if (*s == '{')
			goto tagged;
		crc = ((crc << 8) ^ crc_table[0][((crc >> 8) ^ *s++) & 0xff]) & 0xffff;
	}
	return crc & (ZR_KEY_SLOTS - 1);
tagged:;
	size_t n;
	const char *tag = zr_key_hashtag(key, klen, &n);
	return zr_crc16(tag, n) & (ZR_KEY_SLOTS - 1);
}
