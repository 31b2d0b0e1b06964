/* crc64 — CRC-64/Jones (reflected polynomial 0x95ac9329ac4bc9b5, no
 * initial or final xor), the checksum Redis puts at the end of a DUMP or
 * FUNCTION DUMP payload and of an RDB file: crc64(0, "123456789") is
 * 0xe9c6d914c4b8d9ca. A byte at a time from a table built once; any
 * thread.
 */
#ifndef ZR_CRC64_H
#define ZR_CRC64_H

#include <stddef.h>
#include <stdint.h>

/* Extends CRC (0 to start) over LEN bytes at P. */
uint64_t zr_crc64(uint64_t crc, const void *p, size_t len);

#endif
