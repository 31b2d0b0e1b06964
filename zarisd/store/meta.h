/* meta — the metadata block of an entry and the per-(database, shard)
 * label and entity indexes, private to store/ (the public API is in
 * store.h: entry_meta_*, store_meta_*).
 *
 * An entry with metadata has the md bit and, after its TTL area, a pointer
 * to one block (struct store_meta) holding its labels, entity and
 * content-type; an entry without has neither (entry_layout.h). The block
 * belongs to the entry: freed with it (free_value in ops.c), copied with
 * it (COPY, a snapshot's pre-image), handed on when the entry moves to a
 * new block (a resize, RENAME).
 *
 * The indexes: each dict that holds an entry with metadata has a
 * struct meta_index: two string tables (labels, entities), each name
 * mapping to a table of the keys of that dict carrying it. Kept exact by
 * the store's own unlink and link paths (meta_index_entry), so DEL,
 * expiry, eviction, FLUSHDB, RENAME and MOVE keep them right without the
 * commands knowing. Everything here runs under the dict's shard lock.
 */
#ifndef ZR_STORE_META_H
#define ZR_STORE_META_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/store/store.h"

struct dict;
struct entry;
struct store_meta;

/* Builds the block for F (labels de-duplicated, first occurrence kept).
 * Returns 0 and *OUT (NULL when F holds nothing: no label, entity or
 * content-type), or -ENOMEM (client-sized: a try-allocation). */
int meta_build(const struct store_meta_fields *f, struct store_meta **out);
/* A copy of M (NULL for NULL); aborts on OOM like internal allocations. */
struct store_meta *meta_dup(const struct store_meta *m);
void meta_free(struct store_meta *m);
/* Usable bytes of M's block (0 for NULL). */
size_t meta_bytes(const struct store_meta *m);

/* Adds (ADD) or removes E's key under each of its labels and its entity
 * in D's indexes. E has the md bit and a block. */
void meta_index_entry(struct dict *d, const struct entry *e, bool add);
/* Frees D's indexes (FLUSHDB, after every entry was freed). */
void meta_index_free(struct dict *d);

#endif
