/* zset — the sorted-set value type: members (binary strings) with a double
 * score, ordered by (score, member). Small sets use the compact encoding
 * (zset_lp, OBJECT ENCODING "listpack"); a set converts to the skiplist
 * encoding (zset_sl, "skiplist") once it holds more than max_entries
 * members or a member longer than max_value bytes, as Redis 7.0 does with
 * zset-max-listpack-entries / -value. It converts back only where Redis
 * does: when a store command (ZUNIONSTORE, ZRANGESTORE ...) builds its
 * result (zset_compact_if_fits).
 *
 * Every operation works on ranks (0-based positions in the order): score
 * and lex ranges become a rank interval first (zset_score_span,
 * zset_lex_span), then are counted, iterated or deleted by rank.
 *
 * Knows no clients and no RESP; the thresholds are passed in by the
 * caller (the command layer reads them from the settings). The owning
 * key's shard lock covers every call. Member pointers handed out stay
 * valid until the set is next modified.
 */
#ifndef ZR_STORE_ZSET_H
#define ZR_STORE_ZSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/store/store.h"
#include "zarisd/store/zset_lp.h"
#include "zarisd/store/zset_sl.h"

struct zset;

/* zset-max-listpack-entries / zset-max-listpack-value. */
struct zset_limits {
	size_t max_entries;
	size_t max_value;
};

/* A score interval; an exclusive end is "(1" in Redis's syntax. */
struct zset_score_range {
	double min, max;
	bool minex, maxex;
};

/* A lexicographic interval ("[a" "(a" "-" "+"); the bounds are borrowed.
 * inf -1 is "-" (below everything), +1 is "+" (above everything), 0 a
 * string bound. */
struct zset_lex_range {
	const char *min, *max;
	size_t minlen, maxlen;
	int mininf, maxinf;
	bool minex, maxex;
};

/* ZADD's input flags and zset_add's result flags (Redis's ZADD_IN_* /
 * ZADD_OUT_*). */
enum zset_add_flag {
	ZSET_ADD_INCR = 1u << 0,
	ZSET_ADD_NX = 1u << 1,
	ZSET_ADD_XX = 1u << 2,
	ZSET_ADD_GT = 1u << 3,
	ZSET_ADD_LT = 1u << 4,
};
enum zset_add_result {
	ZSET_OUT_NOP = 1u << 0,
	ZSET_OUT_NAN = 1u << 1, /* INCR made NaN: nothing changed */
	ZSET_OUT_ADDED = 1u << 2,
	ZSET_OUT_UPDATED = 1u << 3,
};

/* An empty set in the encoding Redis 7.0's ZADD picks for a new key from
 * its first member's length FIRST_MLEN: compact unless max_entries is 0 or
 * the member is longer than max_value. */
struct zset *zset_create(size_t first_mlen, const struct zset_limits *lim);
/* An empty set in the full encoding (accumulators of ZUNION & co). */
struct zset *zset_create_full(void);
void zset_free(struct zset *z);
struct zset *zset_dup(const struct zset *z);

size_t zset_card(const struct zset *z);
bool zset_is_compact(const struct zset *z);
/* Usable bytes held (header, buffer or nodes and table). */
size_t zset_memory(const struct zset *z);

/* Redis's zsetAdd: adds or updates MEMBER per FLAGS (enum zset_add_flag)
 * and returns enum zset_add_result flags; *NEWSCORE (may be NULL) gets the
 * member's score afterwards (the incremented one for INCR). SCORE is not
 * NaN. Converts to the full encoding when LIM says so. */
unsigned zset_add(struct zset *z, double score, const char *member, size_t mlen, unsigned flags,
		  double *newscore, const struct zset_limits *lim);
/* Removes MEMBER; true if it was there. */
bool zset_remove(struct zset *z, const char *member, size_t mlen);
/* MEMBER's score; false when absent. */
bool zset_score(const struct zset *z, const char *member, size_t mlen, double *score);
/* MEMBER's 0-based rank (from the highest when REV); false when absent. */
bool zset_rank(const struct zset *z, const char *member, size_t mlen, bool rev, size_t *rank);

/* Elements within R: returns how many, *FIRST the rank of the first. */
size_t zset_score_span(const struct zset *z, const struct zset_score_range *r, size_t *first);
/* Elements within R (meaningful when all scores are equal, as in Redis:
 * from the first member >= min while <= max); returns how many, *FIRST
 * the rank of the first. */
size_t zset_lex_span(const struct zset *z, const struct zset_lex_range *r, size_t *first);
/* Removes COUNT elements from rank FIRST. */
void zset_remove_ranks(struct zset *z, size_t first, size_t count);

/* Element at RANK (< card): O(rank) compact, O(log N) full. */
void zset_at(const struct zset *z, size_t rank, const char **member, size_t *mlen, double *score);

/* Walks elements by rank, forward from RANK or backward (REV) from it.
 * Must be released (a backward walk over the compact encoding holds an
 * array of offsets). The set must not change during the walk. */
struct zset_iter {
	const struct zset *z;
	bool rev;
	size_t left; /* elements still to yield */
	struct zset_sl_node *node;
	uint32_t off;	  /* compact forward: next entry */
	uint32_t *offs;	  /* compact backward: offsets of ranks 0..rank */
	size_t offs_next; /* compact backward: index of the next in offs */
	uint32_t offs_buf[16];
};
void zset_iter_init(struct zset_iter *it, const struct zset *z, size_t rank, bool rev);
bool zset_iter_next(struct zset_iter *it, const char **member, size_t *mlen, double *score);
void zset_iter_release(struct zset_iter *it);

/* One ZSCAN step from CURSOR: calls FN for each element visited and
 * returns the next cursor (0 = done). The compact encoding yields all in
 * one step, as Redis's listpack does. */
typedef void (*zset_visit_fn)(const char *member, size_t mlen, double score, void *ctx);
uint64_t zset_scan(const struct zset *z, uint64_t cursor, zset_visit_fn fn, void *ctx);

/* Converts a full-encoding set to the compact one when it fits LIM
 * (Redis's zsetConvertToListpackIfNeeded, used on store results). */
void zset_compact_if_fits(struct zset *z, const struct zset_limits *lim);

/* Formats SCORE the way Redis writes scores into commands and replies
 * (%.17g, "inf", "-inf"); BUF holds at least 32 bytes. Returns length. */
size_t zset_score_str(char *buf, size_t size, double score);

extern const struct store_type_ops store_zset_ops;

#endif
