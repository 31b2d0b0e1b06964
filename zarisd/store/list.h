/* list — the value of a Redis list: a sequence of byte strings, knowing no
 * clients and no RESP.
 *
 * Structure (Redis's quicklist): a doubly linked chain of nodes, each one
 * compact array of entries (listpack-like: a length header, the bytes, and
 * the length again as a trailer so the array is walked both ways). A small
 * list is a single node — the compact encoding — and grows into more nodes
 * as each fills up to the list's FILL, which is list-max-listpack-size with
 * Redis's meaning: a negative value caps a node's bytes (-1 4 KB, -2 8 KB,
 * -3 16 KB, -4 32 KB, -5 64 KB), a positive one its entry count (with an
 * 8 KB safety cap). An element larger than the cap gets a node of its own.
 * OBJECT ENCODING says "quicklist" for every list, as Redis 7.0 does (7.0
 * has no listpack-encoded lists; 7.2 added them).
 *
 * Every function needs the shard lock of the key that owns the list.
 * Element pointers handed out (peek, index, iteration) are valid until the
 * list is next modified. Indexes are 0-based from the head; callers convert
 * Redis's negative indexes.
 */
#ifndef ZR_STORE_LIST_H
#define ZR_STORE_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/store/store.h"

enum list_where {
	LIST_HEAD = 0,
	LIST_TAIL = 1,
};

struct list_node; /* private to list.c */

/* Invariants: count is the sum of the nodes' counts; no node is empty;
 * head == NULL iff count == 0. */
struct list {
	struct list_node *head, *tail;
	uint64_t count;	 /* elements */
	uint32_t nnodes; /* nodes in the chain */
	int fill;	 /* list-max-listpack-size when the list was created */
};

extern const struct store_type_ops store_list_ops;

/* An empty list whose nodes follow FILL (see above). Caller owns it. */
struct list *list_create(int fill);
void list_free(struct list *l);
/* Deep copy. */
struct list *list_dup(const struct list *l);

static inline uint64_t list_len(const struct list *l)
{
	return l->count;
}

/* Adds P[0..LEN) at WHERE. 0, or -ENOMEM (the list is unchanged). */
int list_push(struct list *l, enum list_where where, const char *p, size_t len);
/* The element at WHERE into (*P, *LEN); false when the list is empty. */
bool list_peek(const struct list *l, enum list_where where, const char **p, size_t *len);
/* Removes the element at WHERE; the list must not be empty. */
void list_pop(struct list *l, enum list_where where);
/* The element at IDX (0 <= IDX < len) into (*P, *LEN); false when out of range. */
bool list_index(const struct list *l, uint64_t idx, const char **p, size_t *len);
/* Replaces the element at IDX (< len). 0, or -ENOMEM (unchanged). */
int list_set(struct list *l, uint64_t idx, const char *p, size_t len);
/* Inserts P before (AFTER false) or after the first element equal to
 * PIVOT from the head. 1 inserted, 0 no such pivot, -ENOMEM. */
int list_insert(struct list *l, const char *pivot, size_t plen, bool after, const char *p, size_t len);
/* LREM: removes up to |COUNT| elements equal to V (all when COUNT is 0),
 * from the head when COUNT >= 0, from the tail when negative. Returns the
 * number removed. */
uint64_t list_remove(struct list *l, const char *v, size_t vlen, int64_t count);
/* Removes HEAD_N elements from the head and TAIL_N from the tail (the sum
 * may exceed the length: the list becomes empty). */
void list_trim(struct list *l, uint64_t head_n, uint64_t tail_n);

/* Iteration from an index, towards the tail (FORWARD) or the head. The
 * list must not change meanwhile. */
struct list_iter {
	const struct list *l;
	struct list_node *node;
	size_t off; /* byte offset of the next entry in node */
	bool forward;
};
/* Starts at IDX (< len; an empty list or IDX >= len gives an empty walk). */
void list_iter_init(struct list_iter *it, const struct list *l, uint64_t idx, bool forward);
/* The next element into (*P, *LEN); false at the end. */
bool list_iter_next(struct list_iter *it, const char **p, size_t *len);

/* Usable bytes held by L (MEMORY USAGE). */
size_t list_memory(const struct list *l);
/* Checks every invariant (tests): returns false and stays quiet on breach. */
bool list_check(const struct list *l);

#endif
