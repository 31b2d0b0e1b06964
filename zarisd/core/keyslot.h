/* keyslot — Redis Cluster's key slot: CRC16-XMODEM of the key, or of its
 * hash tag, mod 16384. The store derives a key's shard from it (so a
 * slot's keys live in one shard), and the cluster layer will route by it.
 * Pure functions of their arguments; any thread.
 */
#ifndef ZR_KEYSLOT_H
#define ZR_KEYSLOT_H

#include <stddef.h>
#include <stdint.h>

#define ZR_KEY_SLOTS 16384u
#define ZR_KEY_SLOT_BITS 14

/* CRC16-XMODEM (polynomial 0x1021, initial value 0, no reflection, no
 * final xor) of LEN bytes at P: Redis Cluster's crc16(). */
uint16_t zr_crc16(const void *p, size_t len);

/* The bytes of KEY that decide its slot (Redis's keyHashSlot): between
 * the first '{' and the first '}' after it when that is not empty, else the
 * whole key. *LEN receives their length; the result points into KEY. */
const char *zr_key_hashtag(const char *key, size_t klen, size_t *len);

/* The slot of KEY, 0..16383. */
unsigned zr_key_slot(const char *key, size_t klen);

#endif
