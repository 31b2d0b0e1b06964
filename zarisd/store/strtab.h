/* strtab — a chained hash table of byte-string keys, each with an optional
 * byte-string value, private to store/: the "hashtable" encoding of hashes
 * (field -> value) and of sets (member, no value).
 *
 * One allocation per node holds the link, both lengths, the key and the
 * value. Buckets are a power of two; the table doubles when it holds more
 * keys than buckets and shrinks when it is under 1/8 full, all at once
 * (not incrementally like the keyspace dict: collections are smaller, and a
 * value's table is only touched under its key's shard lock).
 *
 * Nothing here locks: the caller holds the shard lock of the key that owns
 * the table. Invariants: size is 0 or a power of two >= STRTAB_MIN_SIZE;
 * count is the number of nodes; bytes is the sum of zr_usable() of the
 * nodes and the bucket array.
 */
#ifndef ZR_STORE_STRTAB_H
#define ZR_STORE_STRTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define STRTAB_MIN_SIZE 4

struct strtab_node {
	struct strtab_node *next;
	uint32_t klen;
	uint32_t vlen;
	char data[]; /* klen key bytes, then vlen value bytes */
};

struct strtab {
	struct strtab_node **tab;
	uint64_t size;	/* buckets */
	uint64_t count; /* nodes */
	size_t bytes;	/* usable bytes of nodes and buckets */
};

static inline const char *strtab_key(const struct strtab_node *n, size_t *len)
{
	*len = n->klen;
	return n->data;
}

static inline const char *strtab_val(const struct strtab_node *n, size_t *len)
{
	*len = n->vlen;
	return n->data + n->klen;
}

/* An empty table (allocates nothing). */
void strtab_init(struct strtab *t);
/* Frees every node and the buckets; T is empty afterwards. */
void strtab_clear(struct strtab *t);
/* strtab_clear, then frees T itself (a zr_malloc'ed table). */
void strtab_free(struct strtab *t);

/* The node of KEY, or NULL. Valid until T is next modified. */
struct strtab_node *strtab_find(const struct strtab *t, const char *key, size_t klen);
/* Sets KEY to VAL (VLEN 0 for a set member): returns 1 when KEY was added,
 * 0 when an existing node's value was replaced, -ENOMEM when the node
 * could not be allocated (T unchanged). Node memory is client-sized, hence
 * the try-allocation; buckets abort on OOM like any internal allocation. */
int strtab_set(struct strtab *t, const char *key, size_t klen, const char *val, size_t vlen);
/* Adds KEY without a value when absent: 1 added, 0 present, -ENOMEM. */
int strtab_add(struct strtab *t, const char *key, size_t klen);
/* Removes KEY; true when it was there. May shrink the table. */
bool strtab_delete(struct strtab *t, const char *key, size_t klen);

/* A uniformly random node (see strtab.c for the one approximation), NULL
 * when empty. RND is the caller's xorshift state (non-zero). */
struct strtab_node *strtab_random(const struct strtab *t, uint64_t *rnd);

/* Iteration in bucket order. T must not be modified while iterating. */
struct strtab_iter {
	const struct strtab *t;
	uint64_t bucket;
	struct strtab_node *node;
};
void strtab_iter_init(struct strtab_iter *it, const struct strtab *t);
/* The next node, NULL at the end. */
struct strtab_node *strtab_next(struct strtab_iter *it);

/* Visits the bucket of cursor V (Redis's reverse-binary scan: every key
 * present for a whole scan is visited at least once even when the table
 * is resized between calls) and returns the next cursor, 0 when done. */
typedef void (*strtab_visit_fn)(const struct strtab_node *n, void *ctx);
uint64_t strtab_scan(const struct strtab *t, uint64_t v, strtab_visit_fn fn, void *ctx);

/* Presizes an empty or small table for N keys (no shrink). */
void strtab_expand(struct strtab *t, uint64_t n);

/* xorshift64* step; *RND must be non-zero. */
static inline uint64_t strtab_rand(uint64_t *rnd)
{
	uint64_t x = *rnd;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*rnd = x;
	return x * 0x2545F4914F6CDD1DULL;
}

#endif
