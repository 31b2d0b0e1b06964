/* strpack — a flat byte array of byte strings, private to store/: the
 * compact "listpack" encoding of small hashes (field, value, field,
 * value, ...). Each element is its length as a LEB128 varint followed by
 * its bytes, so an element costs 1-2 bytes over its content and a whole
 * small hash is one allocation besides its header.
 *
 * Elements are addressed by byte offset (0 is the first element); an offset
 * is valid until the pack is next modified. Lookups are linear, which is
 * the point: packs stay small (hash-max-listpack-entries / -value).
 * Nothing here locks: the caller holds the owning key's shard lock.
 * Invariants: buf holds exactly `bytes` used bytes encoding `count`
 * elements; buf is NULL iff bytes == 0.
 */
#ifndef ZR_STORE_STRPACK_H
#define ZR_STORE_STRPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STRPACK_END SIZE_MAX

struct strpack {
	unsigned char *buf;
	size_t bytes;	/* used bytes of buf */
	uint32_t count; /* elements */
};

void strpack_init(struct strpack *p);
/* Frees the buffer; P is empty afterwards. */
void strpack_clear(struct strpack *p);
/* Deep copy into DST (uninitialized); false on allocation failure. */
bool strpack_dup(struct strpack *dst, const struct strpack *src);
/* Usable bytes of the buffer. */
size_t strpack_memory(const struct strpack *p);

/* Reads the element at OFF (< p->bytes): sets *S and *LEN and returns the
 * offset of the next element (p->bytes after the last one). */
size_t strpack_get(const struct strpack *p, size_t off, const char **s, size_t *len);
/* Offset of the first element at an even position (0, 2, 4...: a hash's
 * fields) equal to KEY, or STRPACK_END. */
size_t strpack_find_pair(const struct strpack *p, const char *key, size_t klen);
/* Offset of the element of index I (< count), walking from the start. */
size_t strpack_offset_of(const struct strpack *p, uint32_t i);

/* Appends S. 0 or -ENOMEM (P unchanged); client-sized, so try-allocated. */
int strpack_append(struct strpack *p, const char *s, size_t len);
/* Replaces the element at OFF by S (S must not point into P). 0 or -ENOMEM. */
int strpack_replace(struct strpack *p, size_t off, const char *s, size_t len);
/* Removes N elements starting at OFF. */
void strpack_delete(struct strpack *p, size_t off, uint32_t n);

#endif
