/* zc_arena — a bump allocator for one batch's result values: chunks freed
 * together, the first kept over a reset for reuse. Owned by its batch; one
 * thread (the batch's).
 */
#ifndef ZC_ARENA_H
#define ZC_ARENA_H

#include <stddef.h>

struct zc_chunk;

struct zc_arena {
	struct zc_chunk *head; /* newest chunk first; NULL when empty */
};

/* SIZE bytes aligned for any value type, or NULL without memory. Valid
 * until zc_arena_reset or zc_arena_free. */
void *zc_arena_alloc(struct zc_arena *a, size_t size);
/* LEN bytes of S copied with a NUL after them, or NULL without memory. */
char *zc_arena_strdup(struct zc_arena *a, const void *s, size_t len);
/* Drops every allocation; keeps the oldest chunk (the usual size) for reuse. */
void zc_arena_reset(struct zc_arena *a);
void zc_arena_free(struct zc_arena *a);

#endif
