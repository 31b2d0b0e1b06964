/* crc32c — CRC-32C (Castagnoli), the checksum of every persistence frame.
 * Uses the SSE4.2 crc32 instruction when the CPU has it, a table
 * otherwise; both give the same values. Any thread.
 */
#ifndef ZR_CRC32C_H
#define ZR_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* Extends CRC (0 to start) over LEN bytes at P. */
uint32_t crc32c(uint32_t crc, const void *p, size_t len);

#endif
