/* zset_lp — see zset_lp.h. Edits move the tail of the buffer with memmove;
 * growth goes through zr_realloc, whose jemalloc size classes already give
 * amortized growth without a capacity field. */
#include "zarisd/store/zset_lp.h"

#include <assert.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/store/varint.h"

/* A header varint (mlen <= 2^32) needs at most 5 bytes, an int score 10. */
#define LP_MAX_ENTRY_OVERHEAD (5 + 10)

void zset_lp_init(struct zset_lp *lp)
{
	lp->buf = NULL;
	lp->count = 0;
	lp->used = 0;
}

void zset_lp_free(struct zset_lp *lp)
{
	ZR_FREE(lp->buf);
	lp->count = 0;
	lp->used = 0;
}

size_t zset_lp_bytes(const struct zset_lp *lp)
{
	return zr_usable(lp->buf);
}

int zset_lp_member_cmp(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c)
		return c;
	return alen < blen ? -1 : alen > blen;
}

/* Whether SCORE is stored as an integer: integral and inside int64. The
 * bounds are exact doubles (±2^63), so the cast below is defined. */
static bool score_is_int(double score, int64_t *iv)
{
	if (!(score >= -9223372036854775808.0 && score < 9223372036854775808.0))
		return false;
	int64_t i = (int64_t)score;
	if ((double)i != score)
		return false;
	*iv = i;
	return true;
}

/* Encodes one entry into P (at least mlen + LP_MAX_ENTRY_OVERHEAD + 8
 * bytes); returns its size. */
static size_t encode(unsigned char *p, const char *member, size_t mlen, double score)
{
	int64_t iv;
	bool is_int = score_is_int(score, &iv);
	size_t n = varint_put(p, ((uint64_t)mlen << 1) | is_int);
	memcpy(p + n, member, mlen);
	n += mlen;
	if (is_int) {
		uint64_t zz = ((uint64_t)iv << 1) ^ (uint64_t)(iv >> 63);
		n += varint_put(p + n, zz);
	} else {
		memcpy(p + n, &score, sizeof(score));
		n += sizeof(score);
	}
	return n;
}

uint32_t zset_lp_next(const struct zset_lp *lp, uint32_t off, struct zset_lp_elem *el)
{
	const unsigned char *p = lp->buf + off;
	uint64_t h;
	size_t n = varint_get(p, &h);
	el->mlen = (size_t)(h >> 1);
	el->member = (const char *)p + n;
	n += el->mlen;
	if (h & 1) {
		uint64_t zz;
		n += varint_get(p + n, &zz);
		int64_t iv = (int64_t)(zz >> 1) ^ -(int64_t)(zz & 1);
		el->score = (double)iv;
	} else {
		memcpy(&el->score, p + n, sizeof(el->score));
		n += sizeof(el->score);
	}
	return off + (uint32_t)n;
}

uint32_t zset_lp_offset_of(const struct zset_lp *lp, size_t rank)
{
	assert(rank < lp->count);
	uint32_t off = 0;
	struct zset_lp_elem el;
	while (rank--)
		off = zset_lp_next(lp, off, &el);
	return off;
}

bool zset_lp_find(const struct zset_lp *lp, const char *member, size_t mlen, double *score, uint32_t *off,
		  size_t *rank)
{
	uint32_t o = 0;
	size_t r = 0;
	while (o < lp->used) {
		struct zset_lp_elem el;
		uint32_t next = zset_lp_next(lp, o, &el);
		if (el.mlen == mlen && (mlen == 0 || memcmp(el.member, member, mlen) == 0)) {
			if (score)
				*score = el.score;
			if (off)
				*off = o;
			if (rank)
				*rank = r;
			return true;
		}
		o = next;
		r++;
	}
	return false;
}

/* Opens a gap of LEN bytes at OFF and writes the entry there. */
static void insert_at(struct zset_lp *lp, uint32_t off, const char *member, size_t mlen, double score)
{
	unsigned char tmp[LP_MAX_ENTRY_OVERHEAD + 8];
	size_t need = mlen + sizeof(tmp);
	assert(lp->used + need <= UINT32_MAX);
	lp->buf = zr_realloc(lp->buf, lp->used + need);
	/* encode the fixed parts into TMP to learn the size, then place them */
	int64_t iv;
	bool is_int = score_is_int(score, &iv);
	size_t hlen = varint_put(tmp, ((uint64_t)mlen << 1) | is_int);
	size_t slen =
		is_int ? varint_put(tmp + hlen, ((uint64_t)iv << 1) ^ (uint64_t)(iv >> 63)) : sizeof(double);
	size_t len = hlen + mlen + slen;
	memmove(lp->buf + off + len, lp->buf + off, lp->used - off);
	size_t n = encode(lp->buf + off, member, mlen, score);
	assert(n == len);
	lp->used += (uint32_t)len;
	lp->count++;
	/* give back the slack of the worst-case reservation */
	lp->buf = zr_realloc(lp->buf, lp->used);
}

void zset_lp_insert(struct zset_lp *lp, const char *member, size_t mlen, double score)
{
	uint32_t off = 0;
	while (off < lp->used) {
		struct zset_lp_elem el;
		uint32_t next = zset_lp_next(lp, off, &el);
		if (el.score > score ||
		    (el.score == score && zset_lp_member_cmp(el.member, el.mlen, member, mlen) > 0))
			break;
		off = next;
	}
	insert_at(lp, off, member, mlen, score);
}

void zset_lp_append(struct zset_lp *lp, const char *member, size_t mlen, double score)
{
	insert_at(lp, lp->used, member, mlen, score);
}

void zset_lp_delete_ranks(struct zset_lp *lp, size_t first, size_t count)
{
	assert(first + count <= lp->count);
	if (!count)
		return;
	uint32_t start = zset_lp_offset_of(lp, first);
	uint32_t end = start;
	struct zset_lp_elem el;
	for (size_t i = 0; i < count; i++)
		end = zset_lp_next(lp, end, &el);
	memmove(lp->buf + start, lp->buf + end, lp->used - end);
	lp->used -= end - start;
	lp->count -= (uint32_t)count;
	if (lp->used == 0)
		ZR_FREE(lp->buf);
	else
		lp->buf = zr_realloc(lp->buf, lp->used);
}
