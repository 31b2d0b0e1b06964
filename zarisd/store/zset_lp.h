/* zset_lp — the compact encoding of a small sorted set (what OBJECT ENCODING
 * calls "listpack"): one buffer of entries kept sorted by (score, member),
 * searched and edited by a linear walk. Used while the set is within
 * zset-max-listpack-entries / zset-max-listpack-value (zset.c decides).
 *
 * Entry layout, back to back, no padding:
 *   varint  mlen << 1 | is_int     (LEB128, 1 byte for members < 64 bytes)
 *   bytes   the member
 *   score   is_int: zigzag LEB128 of an int64 (integral scores, |s| < 2^63)
 *           else:   the 8 bytes of the double (native order)
 * Integral scores cost 1-3 bytes, like Redis's listpack storing them as
 * integers. As there, -0 is stored as the integer 0 and reads back as 0.
 *
 * Offsets are byte offsets into buf; they stay valid until the next edit.
 * Member pointers handed out point into buf (same lifetime). No locking
 * here: the owning key's shard lock covers it.
 */
#ifndef ZR_STORE_ZSET_LP_H
#define ZR_STORE_ZSET_LP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Invariant: entries in buf[0..used) are sorted by (score, memcmp order of
 * members, shorter first on a common prefix); count is their number; no
 * member appears twice. buf is NULL iff used == 0. */
struct zset_lp {
	unsigned char *buf;
	uint32_t count;
	uint32_t used;
};

/* One decoded entry; member points into the buffer. */
struct zset_lp_elem {
	const char *member;
	size_t mlen;
	double score;
};

void zset_lp_init(struct zset_lp *lp);
void zset_lp_free(struct zset_lp *lp);
/* Usable bytes of the buffer (0 when empty). */
size_t zset_lp_bytes(const struct zset_lp *lp);

/* Decodes the entry at OFF into *EL; returns the offset of the next entry
 * (== lp->used after the last). OFF must be an entry boundary < used. */
uint32_t zset_lp_next(const struct zset_lp *lp, uint32_t off, struct zset_lp_elem *el);
/* Offset of the entry of rank RANK (0-based, < count); O(rank). */
uint32_t zset_lp_offset_of(const struct zset_lp *lp, size_t rank);

/* Finds MEMBER: true with its score, offset and rank filled (each may be
 * NULL). O(N). */
bool zset_lp_find(const struct zset_lp *lp, const char *member, size_t mlen, double *score, uint32_t *off,
		  size_t *rank);
/* Inserts MEMBER with SCORE at its sorted place. MEMBER must not be present
 * (the caller looks it up first) and must not point into lp->buf. */
void zset_lp_insert(struct zset_lp *lp, const char *member, size_t mlen, double score);
/* Appends an entry that sorts after every present one (building from an
 * ordered source). */
void zset_lp_append(struct zset_lp *lp, const char *member, size_t mlen, double score);
/* Removes the COUNT entries starting at rank FIRST (FIRST + COUNT <= count). */
void zset_lp_delete_ranks(struct zset_lp *lp, size_t first, size_t count);

/* The order of members of equal score (and of lex ranges): memcmp, the
 * shorter first on a common prefix, as Redis's sdscmp. Shared with the
 * skiplist encoding. */
int zset_lp_member_cmp(const char *a, size_t alen, const char *b, size_t blen);

#endif
