/* zset_sl — see zset_sl.h. The skiplist is Pugh's with two of Redis's
 * changes: equal scores are ordered by member, and each link stores its
 * span (how many level-0 nodes it jumps) so that the walk to a node also
 * counts its rank. Level probability is 1/4, at most 32 levels. */
#include "zarisd/store/zset_sl.h"

#include <assert.h>
#include <math.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/store/zset_lp.h"

#define SL_HASH_MIN 8

static size_t node_size(int height, size_t mlen)
{
	return sizeof(struct zset_sl_node) + (size_t)height * sizeof(((struct zset_sl_node *)0)->level[0]) +
	       mlen;
}

/* Per-thread xorshift64*: the level draw needs no quality beyond spread,
 * and a thread-local state keeps workers from sharing a cache line. */
static int random_level(void)
{
	static _Thread_local uint64_t state;
	if (!state)
		state = (uint64_t)zr_mono_us() ^ ((uint64_t)(uintptr_t)&state << 16) ^ 0x9e3779b97f4a7c15ull;
	int level = 1;
	for (;;) {
		state ^= state >> 12;
		state ^= state << 25;
		state ^= state >> 27;
		uint64_t r = state * 0x2545f4914f6cdd1dull;
		/* 32 draws of 2 bits each: a level goes up while a draw is 0 */
		for (int i = 0; i < 32; i++, r >>= 2) {
			if (r & 3)
				return level;
			if (++level == ZSET_SL_MAXLEVEL)
				return level;
		}
	}
}

static struct zset_sl_node *node_new(struct zset_sl *sl, int height, double score, const char *member,
				     size_t mlen)
{
	struct zset_sl_node *n = zr_malloc(node_size(height, mlen));
	n->score = score;
	n->backward = NULL;
	n->hnext = NULL;
	n->mlen = (uint32_t)mlen;
	n->height = (uint8_t)height;
	for (int i = 0; i < height; i++) {
		n->level[i].forward = NULL;
		n->level[i].span = 0;
	}
	if (mlen)
		memcpy((char *)&n->level[height], member, mlen);
	sl->bytes += zr_usable(n);
	return n;
}

static void node_free(struct zset_sl *sl, struct zset_sl_node *n)
{
	sl->bytes -= zr_usable(n);
	zr_free(n);
}

void zset_sl_init(struct zset_sl *sl)
{
	memset(sl, 0, sizeof(*sl));
	sl->level = 1;
	sl->header = node_new(sl, ZSET_SL_MAXLEVEL, 0, NULL, 0);
	sl->nbuckets = SL_HASH_MIN;
	sl->buckets = zr_calloc(sl->nbuckets, sizeof(*sl->buckets));
	sl->bytes += zr_usable(sl->buckets);
}

void zset_sl_free(struct zset_sl *sl)
{
	struct zset_sl_node *n = zset_sl_first(sl);
	while (n) {
		struct zset_sl_node *next = n->level[0].forward;
		zr_free(n);
		n = next;
	}
	zr_free(sl->header);
	zr_free(sl->buckets);
	memset(sl, 0, sizeof(*sl));
}

/* --- the member hash ------------------------------------------------------- */

static size_t bucket_of(const struct zset_sl *sl, const char *member, size_t mlen)
{
	return (size_t)zr_hash(member, mlen) & (sl->nbuckets - 1);
}

static void hash_resize(struct zset_sl *sl, size_t nbuckets)
{
	struct zset_sl_node **nb = zr_calloc(nbuckets, sizeof(*nb));
	for (size_t i = 0; i < sl->nbuckets; i++) {
		struct zset_sl_node *n = sl->buckets[i];
		while (n) {
			struct zset_sl_node *next = n->hnext;
			size_t b = (size_t)zr_hash(zset_sl_member(n), n->mlen) & (nbuckets - 1);
			n->hnext = nb[b];
			nb[b] = n;
			n = next;
		}
	}
	sl->bytes -= zr_usable(sl->buckets);
	zr_free(sl->buckets);
	sl->buckets = nb;
	sl->nbuckets = nbuckets;
	sl->bytes += zr_usable(nb);
}

/* Grows at load factor 1, shrinks below 1/8 (to a load of about 1/2), so a
 * member count oscillating around a boundary does not rehash each time. */
static void hash_fit(struct zset_sl *sl)
{
	if (sl->length > sl->nbuckets) {
		hash_resize(sl, sl->nbuckets * 2);
	} else if (sl->nbuckets > SL_HASH_MIN && sl->length * 8 < sl->nbuckets) {
		size_t n = SL_HASH_MIN;
		while (n < sl->length * 2)
			n *= 2;
		hash_resize(sl, n);
	}
}

struct zset_sl_node *zset_sl_find(const struct zset_sl *sl, const char *member, size_t mlen)
{
	for (struct zset_sl_node *n = sl->buckets[bucket_of(sl, member, mlen)]; n; n = n->hnext)
		if (n->mlen == mlen && (mlen == 0 || memcmp(zset_sl_member(n), member, mlen) == 0))
			return n;
	return NULL;
}

static void hash_unlink(struct zset_sl *sl, struct zset_sl_node *n)
{
	struct zset_sl_node **pp = &sl->buckets[bucket_of(sl, zset_sl_member(n), n->mlen)];
	while (*pp != n) {
		assert(*pp);
		pp = &(*pp)->hnext;
	}
	*pp = n->hnext;
	n->hnext = NULL;
}

/* --- the skiplist ------------------------------------------------------------ */

/* Whether node A sorts before (SCORE, MEMBER). */
static bool sorts_before(const struct zset_sl_node *a, double score, const char *member, size_t mlen)
{
	return a->score < score ||
	       (a->score == score && zset_lp_member_cmp(zset_sl_member(a), a->mlen, member, mlen) < 0);
}

/* Links N (height and score set, not in the list) at its sorted place. */
static void list_link(struct zset_sl *sl, struct zset_sl_node *n)
{
	struct zset_sl_node *update[ZSET_SL_MAXLEVEL];
	size_t rank[ZSET_SL_MAXLEVEL];
	const char *m = zset_sl_member(n);
	struct zset_sl_node *x = sl->header;
	for (int i = sl->level - 1; i >= 0; i--) {
		rank[i] = i == sl->level - 1 ? 0 : rank[i + 1];
		while (x->level[i].forward && sorts_before(x->level[i].forward, n->score, m, n->mlen)) {
			rank[i] += x->level[i].span;
			x = x->level[i].forward;
		}
		update[i] = x;
	}
	int h = n->height;
	if (h > sl->level) {
		for (int i = sl->level; i < h; i++) {
			rank[i] = 0;
			update[i] = sl->header;
			update[i]->level[i].span = sl->length;
		}
		sl->level = h;
	}
	for (int i = 0; i < h; i++) {
		n->level[i].forward = update[i]->level[i].forward;
		update[i]->level[i].forward = n;
		n->level[i].span = update[i]->level[i].span - (rank[0] - rank[i]);
		update[i]->level[i].span = (rank[0] - rank[i]) + 1;
	}
	for (int i = h; i < sl->level; i++)
		update[i]->level[i].span++;
	n->backward = update[0] == sl->header ? NULL : update[0];
	if (n->level[0].forward)
		n->level[0].forward->backward = n;
	else
		sl->tail = n;
	sl->length++;
}

/* Removes X from the list given UPDATE (the last node before X on every
 * level). */
static void list_unlink_with(struct zset_sl *sl, struct zset_sl_node *x, struct zset_sl_node **update)
{
	for (int i = 0; i < sl->level; i++) {
		if (update[i]->level[i].forward == x) {
			update[i]->level[i].span += x->level[i].span - 1;
			update[i]->level[i].forward = x->level[i].forward;
		} else {
			update[i]->level[i].span -= 1;
		}
	}
	if (x->level[0].forward)
		x->level[0].forward->backward = x->backward;
	else
		sl->tail = x->backward;
	while (sl->level > 1 && sl->header->level[sl->level - 1].forward == NULL)
		sl->level--;
	sl->length--;
}

static void find_update(const struct zset_sl *sl, const struct zset_sl_node *n, struct zset_sl_node **update)
{
	const char *m = zset_sl_member(n);
	struct zset_sl_node *x = sl->header;
	for (int i = sl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && sorts_before(x->level[i].forward, n->score, m, n->mlen))
			x = x->level[i].forward;
		update[i] = x;
	}
	assert(x->level[0].forward == n);
}

static void list_unlink(struct zset_sl *sl, struct zset_sl_node *n)
{
	struct zset_sl_node *update[ZSET_SL_MAXLEVEL];
	find_update(sl, n, update);
	list_unlink_with(sl, n, update);
}

struct zset_sl_node *zset_sl_insert(struct zset_sl *sl, double score, const char *member, size_t mlen)
{
	assert(!isnan(score));
	struct zset_sl_node *n = node_new(sl, random_level(), score, member, mlen);
	list_link(sl, n);
	size_t b = bucket_of(sl, member, mlen);
	n->hnext = sl->buckets[b];
	sl->buckets[b] = n;
	hash_fit(sl);
	return n;
}

void zset_sl_update_score(struct zset_sl *sl, struct zset_sl_node *n, double score)
{
	assert(!isnan(score));
	/* Still between its neighbours: only the score changes (Redis's
	 * zslUpdateScore fast path; common for small increments). */
	const struct zset_sl_node *prev = n->backward, *next = n->level[0].forward;
	const char *m = zset_sl_member(n);
	if ((!prev || sorts_before(prev, score, m, n->mlen)) &&
	    (!next || !sorts_before(next, score, m, n->mlen))) {
		n->score = score;
		return;
	}
	list_unlink(sl, n);
	n->score = score;
	list_link(sl, n);
}

void zset_sl_delete(struct zset_sl *sl, struct zset_sl_node *n)
{
	list_unlink(sl, n);
	hash_unlink(sl, n);
	node_free(sl, n);
	hash_fit(sl);
}

void zset_sl_delete_ranks(struct zset_sl *sl, size_t first, size_t count)
{
	assert(first + count <= sl->length);
	struct zset_sl_node *update[ZSET_SL_MAXLEVEL];
	struct zset_sl_node *x = sl->header;
	size_t traversed = 0;
	for (int i = sl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && traversed + x->level[i].span <= first) {
			traversed += x->level[i].span;
			x = x->level[i].forward;
		}
		update[i] = x;
	}
	x = x->level[0].forward;
	while (count--) {
		struct zset_sl_node *next = x->level[0].forward;
		list_unlink_with(sl, x, update);
		hash_unlink(sl, x);
		node_free(sl, x);
		x = next;
	}
	hash_fit(sl);
}

size_t zset_sl_rank(const struct zset_sl *sl, const struct zset_sl_node *n)
{
	const char *m = zset_sl_member(n);
	struct zset_sl_node *x = sl->header;
	size_t rank = 0;
	for (int i = sl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && (x->level[i].forward == n ||
					       sorts_before(x->level[i].forward, n->score, m, n->mlen))) {
			rank += x->level[i].span;
			x = x->level[i].forward;
		}
		if (x == n)
			return rank - 1;
	}
	assert(!"node not in its skiplist");
	return 0;
}

struct zset_sl_node *zset_sl_at(const struct zset_sl *sl, size_t rank)
{
	assert(rank < sl->length);
	size_t want = rank + 1, traversed = 0;
	struct zset_sl_node *x = sl->header;
	for (int i = sl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && traversed + x->level[i].span <= want) {
			traversed += x->level[i].span;
			x = x->level[i].forward;
		}
		if (traversed == want)
			return x;
	}
	assert(!"rank out of range");
	return NULL;
}

size_t zset_sl_count_prefix(const struct zset_sl *sl, zset_sl_pred_fn before, const void *ctx)
{
	struct zset_sl_node *x = sl->header;
	size_t rank = 0;
	for (int i = sl->level - 1; i >= 0; i--) {
		while (x->level[i].forward && before(x->level[i].forward, ctx)) {
			rank += x->level[i].span;
			x = x->level[i].forward;
		}
	}
	return rank;
}

static uint64_t rev64(uint64_t v)
{
	v = ((v >> 1) & 0x5555555555555555ull) | ((v & 0x5555555555555555ull) << 1);
	v = ((v >> 2) & 0x3333333333333333ull) | ((v & 0x3333333333333333ull) << 2);
	v = ((v >> 4) & 0x0f0f0f0f0f0f0f0full) | ((v & 0x0f0f0f0f0f0f0f0full) << 4);
	v = ((v >> 8) & 0x00ff00ff00ff00ffull) | ((v & 0x00ff00ff00ff00ffull) << 8);
	v = ((v >> 16) & 0x0000ffff0000ffffull) | ((v & 0x0000ffff0000ffffull) << 16);
	return (v >> 32) | (v << 32);
}

uint64_t zset_sl_scan(const struct zset_sl *sl, uint64_t cursor, zset_sl_visit_fn fn, void *ctx)
{
	uint64_t mask = sl->nbuckets - 1;
	for (const struct zset_sl_node *n = sl->buckets[cursor & mask]; n; n = n->hnext)
		fn(n, ctx);
	/* increment the reversed cursor over the unmasked bits */
	cursor |= ~mask;
	cursor = rev64(cursor);
	cursor++;
	return rev64(cursor);
}
