/* zset_sl — the full encoding of a sorted set (OBJECT ENCODING "skiplist"):
 * a skiplist ordered by (score, member) whose links carry spans, so rank
 * lookups and rank-based deletions are O(log N), plus a chained hash from
 * member to node, so score lookups are O(1). Both views share one
 * allocation per element: the node holds the skiplist links, the hash
 * chain link and the member bytes.
 *
 * The hash grows and shrinks by powers of two in one step (no incremental
 * rehash: a sorted set's rehash is bounded by its own size and runs under
 * its key's lock). ZSCAN walks it with Redis's reverse-binary cursor, which
 * visits every member present for the whole scan even across resizes.
 *
 * Node pointers and member pointers stay valid until the node is deleted;
 * a score update keeps the node. No locking: the key's shard lock covers
 * the structure.
 */
#ifndef ZR_STORE_ZSET_SL_H
#define ZR_STORE_ZSET_SL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSET_SL_MAXLEVEL 32

struct zset_sl_node {
	double score;
	struct zset_sl_node *backward; /* previous node at level 0, NULL for the first */
	struct zset_sl_node *hnext;    /* hash chain */
	uint32_t mlen;
	uint8_t height; /* levels in level[] */
	struct {
		struct zset_sl_node *forward;
		size_t span; /* nodes crossed by following forward (rank distance) */
	} level[];
	/* then the member bytes, at (char *)&level[height] */
};

/* Invariants: nodes at level 0 are sorted by (score, member) with no
 * duplicate member; header->level[i].span sums to length along each level;
 * every node is in exactly one hash bucket; nbuckets is a power of two. */
struct zset_sl {
	struct zset_sl_node *header; /* sentinel with ZSET_SL_MAXLEVEL levels */
	struct zset_sl_node *tail;
	size_t length;
	int level; /* highest level in use, >= 1 */
	struct zset_sl_node **buckets;
	size_t nbuckets;
	size_t bytes; /* usable bytes of header, nodes, bucket array (not the struct) */
};

static inline const char *zset_sl_member(const struct zset_sl_node *n)
{
	return (const char *)&n->level[n->height];
}

static inline struct zset_sl_node *zset_sl_first(const struct zset_sl *sl)
{
	return sl->header->level[0].forward;
}

void zset_sl_init(struct zset_sl *sl);
/* Frees every node and the table; SL may be reused after zset_sl_init. */
void zset_sl_free(struct zset_sl *sl);

/* The node of MEMBER, or NULL. */
struct zset_sl_node *zset_sl_find(const struct zset_sl *sl, const char *member, size_t mlen);
/* Inserts MEMBER (not present: the caller looks it up first) with SCORE
 * (not NaN); returns its node. MEMBER is copied. */
struct zset_sl_node *zset_sl_insert(struct zset_sl *sl, double score, const char *member, size_t mlen);
/* Changes N's score and moves it to its new place; N stays valid. */
void zset_sl_update_score(struct zset_sl *sl, struct zset_sl_node *n, double score);
/* Unlinks and frees N. */
void zset_sl_delete(struct zset_sl *sl, struct zset_sl_node *n);
/* Removes and frees the COUNT nodes from rank FIRST (0-based, FIRST +
 * COUNT <= length) in one pass. */
void zset_sl_delete_ranks(struct zset_sl *sl, size_t first, size_t count);

/* 0-based rank of N. O(log N). */
size_t zset_sl_rank(const struct zset_sl *sl, const struct zset_sl_node *n);
/* The node at 0-based RANK (< length). O(log N). */
struct zset_sl_node *zset_sl_at(const struct zset_sl *sl, size_t rank);

/* Counts the nodes from the head for which BEFORE(node, CTX) holds, given
 * that BEFORE holds on a prefix of the list (a monotone predicate, e.g.
 * "score < min"): that count is the rank of the first node where it fails.
 * O(log N). */
typedef bool (*zset_sl_pred_fn)(const struct zset_sl_node *n, const void *ctx);
size_t zset_sl_count_prefix(const struct zset_sl *sl, zset_sl_pred_fn before, const void *ctx);

/* One ZSCAN step: calls FN for every node of the bucket(s) at CURSOR and
 * returns the next cursor (0 when done). */
typedef void (*zset_sl_visit_fn)(const struct zset_sl_node *n, void *ctx);
uint64_t zset_sl_scan(const struct zset_sl *sl, uint64_t cursor, zset_sl_visit_fn fn, void *ctx);

#endif
