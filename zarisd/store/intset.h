/* intset — a sorted array of distinct 64-bit integers stored at the
 * narrowest width (2, 4 or 8 bytes) that fits them all, private to store/:
 * the "intset" encoding of sets whose members are all canonical decimal
 * integers. One allocation: an 8-byte header and the array. Adding a value
 * wider than the current width rewrites the array at the new width (never
 * narrowed again, as in Redis).
 *
 * Nothing here locks: the caller holds the owning key's shard lock. The
 * array is small (set-max-intset-entries), so growth aborts on OOM like
 * any internal allocation.
 */
#ifndef ZR_STORE_INTSET_H
#define ZR_STORE_INTSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct intset {
	uint32_t width;	      /* bytes per value: 2, 4 or 8 */
	uint32_t len;	      /* values */
	unsigned char data[]; /* len values, ascending, native endianness */
};

/* An empty intset of width 2; the caller owns it (zr_free). */
struct intset *intset_new(void);
/* Deep copy. */
struct intset *intset_dup(const struct intset *is);
/* Adds V: returns true when added (false when present); *IS may move. */
bool intset_add(struct intset **is, int64_t v);
/* Removes V: true when it was there; *IS may move. */
bool intset_remove(struct intset **is, int64_t v);
/* Removes the value at index I (< len); *IS may move. */
void intset_remove_at(struct intset **is, uint32_t i);
bool intset_contains(const struct intset *is, int64_t v);
/* The value at index I (< len). */
int64_t intset_get(const struct intset *is, uint32_t i);
static inline uint32_t intset_len(const struct intset *is)
{
	return is->len;
}
/* Usable bytes of the allocation. */
size_t intset_memory(const struct intset *is);

#endif
