/* crc64 — see crc64.h. */
#include "zarisd/core/crc64.h"

#include <pthread.h>

#define CRC64_POLY 0x95ac9329ac4bc9b5ull /* Jones, reflected */

static uint64_t table[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (uint64_t i = 0; i < 256; i++) {
		uint64_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC64_POLY : c >> 1;
		table[i] = c;
	}
}

uint64_t zr_crc64(uint64_t crc, const void *p, size_t len)
{
	pthread_once(&table_once, table_init);
	const unsigned char *b = p;
	while (len--)
		crc = table[(crc ^ *b++) & 0xff] ^ (crc >> 8);
	return crc;
}
