/* set — the value of a Redis set: distinct byte strings, knowing no clients
 * and no RESP.
 *
 * Two encodings, Redis 7.0's: "intset" (struct intset: all members are
 * canonical decimal long longs, at most set-max-intset-entries of them,
 * iterated in ascending order) and "hashtable" (struct strtab, member keys
 * without values). A set starts as whatever 7.0's setTypeCreate picks for
 * its first member and converts to a hashtable, for good, when a member is
 * not an integer or the intset grows past the limit the caller passes.
 *
 * Every function needs the shard lock of the key that owns the set. Member
 * pointers handed out (iteration, random) are valid until the set is next
 * modified; intset members are formatted into the caller's buffer.
 */
#ifndef ZR_STORE_SET_H
#define ZR_STORE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/core/util.h"
#include "zarisd/store/intset.h"
#include "zarisd/store/store.h"
#include "zarisd/store/strtab.h"

enum set_encoding {
	SET_ENC_INTSET,
	SET_ENC_HASHTABLE,
};

struct set {
	enum set_encoding enc;
	union {
		struct intset *is; /* SET_ENC_INTSET */
		struct strtab *ht; /* SET_ENC_HASHTABLE (a pointer keeps small sets small) */
	} u;
};

extern const struct store_type_ops store_set_ops;

/* An empty set encoded for FIRST as its first member (7.0's setTypeCreate:
 * intset when FIRST is an integer). The caller owns it (set_free). */
struct set *set_create(const char *first, size_t len);
/* An empty intset-encoded set (the destination of SINTERSTORE & co.). */
struct set *set_new_intset(void);
void set_free(struct set *s);
/* Deep copy (same encoding), NULL on allocation failure. */
struct set *set_dup(const struct set *s);

uint64_t set_size(const struct set *s);
bool set_contains(const struct set *s, const char *m, size_t len);
/* Adds M: 1 added, 0 already there, -ENOMEM (set unchanged). Converts to a
 * hashtable when M is not an integer or the intset would hold more than
 * MAX_INTSET members. */
int set_add(struct set *s, const char *m, size_t len, uint64_t max_intset);
/* Removes M; true when it was there. */
bool set_remove(struct set *s, const char *m, size_t len);
/* After many removals (SPOP's "keep the few" strategy) a hashtable whose
 * members are now all integers, at most MAX_INTSET, goes back to an
 * intset: what 7.0 does by rebuilding the set from its remaining members. */
void set_recompact(struct set *s, uint64_t max_intset);

/* Iteration; the set must not change meanwhile. */
struct set_iter {
	const struct set *s;
	uint32_t i;
	struct strtab_iter ti;
	char buf[ZR_LONG_STR_SIZE];
};
void set_iter_init(struct set_iter *it, const struct set *s);
/* The next member in *M and *LEN (valid until the next call); false at the end. */
bool set_next(struct set_iter *it, const char **m, size_t *len);

/* A uniformly chosen member (hashtable: strtab_random) into
 * *M and *LEN; BUF holds an intset member's text. The set must not be empty. */
void set_random(const struct set *s, uint64_t *rnd, char buf[ZR_LONG_STR_SIZE], const char **m, size_t *len);

/* One SSCAN step from CURSOR: calls FN for the members it covers and
 * returns the next cursor (0 = done). An intset is covered in one call. */
typedef void (*set_visit_fn)(const char *m, size_t len, void *ctx);
uint64_t set_scan(const struct set *s, uint64_t cursor, set_visit_fn fn, void *ctx);

/* Usable bytes held by S (MEMORY USAGE). */
size_t set_memory(const struct set *s);

#endif
