/* crc32c — see crc32c.h. The table variant processes a byte at a time; the
 * hardware one eight bytes per instruction. */
#include "zarisd/core/crc32c.h"

#include <stdbool.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u /* reflected Castagnoli polynomial */

static uint32_t table[256];

static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
		table[i] = c;
	}
}

static uint32_t crc_sw(uint32_t crc, const unsigned char *p, size_t len)
{
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const unsigned char *p, size_t len)
{
	uint64_t c = crc;
	while (len >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c = __builtin_ia32_crc32di(c, v);
		p += 8;
		len -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (len--)
		c32 = __builtin_ia32_crc32qi(c32, *p++);
	return c32;
}
#endif

uint32_t crc32c(uint32_t crc, const void *p, size_t len)
{
	/* Initialized on first use from any thread: both writes store the
	 * same values, so a race only repeats work. */
	static _Atomic int mode; /* 0 unknown, 1 software, 2 hardware */
	int m = mode;
	if (!m) {
		table_init();
#if defined(__x86_64__)
		__builtin_cpu_init();
		m = __builtin_cpu_supports("sse4.2") ? 2 : 1;
#else
		m = 1;
#endif
		mode = m;
	}
	crc = ~crc;
#if defined(__x86_64__)
	if (m == 2)
		return ~crc_hw(crc, p, len);
#endif
	return ~crc_sw(crc, p, len);
}
