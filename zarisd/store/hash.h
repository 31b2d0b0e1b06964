/* hash — the value of a Redis hash: fields mapped to values, both byte
 * strings, knowing no clients and no RESP.
 *
 * Two encodings, Redis 7.0's: "listpack" (struct strpack holding field,
 * value, field, value... in insertion order; linear lookups) while the hash
 * has at most hash-max-listpack-entries fields and no field or value longer
 * than hash-max-listpack-value bytes, and "hashtable" (struct strtab) for
 * good once either limit is crossed. The limits are the caller's (they are
 * settings, which live above this layer).
 *
 * Every function needs the shard lock of the key that owns the hash.
 * Field and value pointers handed out are valid until the hash is next
 * modified.
 */
#ifndef ZR_STORE_HASH_H
#define ZR_STORE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/store/store.h"
#include "zarisd/store/strpack.h"
#include "zarisd/store/strtab.h"

enum hash_encoding {
	HASH_ENC_LISTPACK,
	HASH_ENC_HASHTABLE,
};

struct hash_limits {
	uint64_t max_entries; /* hash-max-listpack-entries */
	uint64_t max_value;   /* hash-max-listpack-value */
};

struct hash {
	enum hash_encoding enc;
	union {
		struct strpack lp; /* HASH_ENC_LISTPACK: count is 2 x fields */
		struct strtab *ht; /* HASH_ENC_HASHTABLE (a pointer keeps small hashes small) */
	} u;
};

extern const struct store_type_ops store_hash_ops;

/* An empty listpack-encoded hash; the caller owns it (hash_free). */
struct hash *hash_new(void);
void hash_free(struct hash *h);
/* Deep copy (same encoding), NULL on allocation failure. */
struct hash *hash_dup(const struct hash *h);

uint64_t hash_len(const struct hash *h);
/* The value of FIELD in *V and *VLEN; false when absent. */
bool hash_get(const struct hash *h, const char *f, size_t flen, const char **v, size_t *vlen);
/* Sets FIELD to V: 1 when FIELD is new, 0 when its value was replaced,
 * -ENOMEM (hash unchanged). Converts to a hashtable first when FIELD or V
 * is longer than LIM->max_value, and after adding when the hash has more
 * than LIM->max_entries fields. V must not point into H. */
int hash_set(struct hash *h, const char *f, size_t flen, const char *v, size_t vlen,
	     const struct hash_limits *lim);
/* Removes FIELD; true when it was there. */
bool hash_delete(struct hash *h, const char *f, size_t flen);

/* Iteration in storage order (insertion order for a listpack); the hash
 * must not change meanwhile. */
struct hash_iter {
	const struct hash *h;
	size_t off;
	struct strtab_iter ti;
};
void hash_iter_init(struct hash_iter *it, const struct hash *h);
/* The next pair; false at the end. */
bool hash_next(struct hash_iter *it, const char **f, size_t *flen, const char **v, size_t *vlen);

/* A uniformly chosen pair (hashtable: strtab_random). H must not be
 * empty. RND is the caller's xorshift state. */
void hash_random(const struct hash *h, uint64_t *rnd, const char **f, size_t *flen, const char **v,
		 size_t *vlen);

/* One HSCAN step from CURSOR: calls FN for the pairs it covers and returns
 * the next cursor (0 = done). A listpack is covered in one call. */
typedef void (*hash_visit_fn)(const char *f, size_t flen, const char *v, size_t vlen, void *ctx);
uint64_t hash_scan(const struct hash *h, uint64_t cursor, hash_visit_fn fn, void *ctx);

/* Usable bytes held by H (MEMORY USAGE). */
size_t hash_memory(const struct hash *h);

#endif
