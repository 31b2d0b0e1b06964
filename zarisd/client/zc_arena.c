/* zc_arena — see zc_arena.h. A chunk is a header and its bytes; a request
 * past a chunk's room gets a new chunk of at least twice the last one, so a
 * batch of large values takes a few allocations, not one per value. */
#include "zarisd/client/zc_arena.h"

#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ZC_ARENA_FIRST 4096

struct zc_chunk {
	struct zc_chunk *next; /* older chunk */
	size_t size, used;     /* bytes of data[], of them taken */
	alignas(max_align_t) unsigned char data[];
};

void *zc_arena_alloc(struct zc_arena *a, size_t size)
{
	const size_t align = alignof(max_align_t);
	size = (size + align - 1) & ~(align - 1);
	struct zc_chunk *c = a->head;
	if (!c || c->size - c->used < size) {
		size_t want = c ? c->size * 2 : ZC_ARENA_FIRST;
		if (want < size)
			want = size;
		struct zc_chunk *n = malloc(sizeof(*n) + want);
		if (!n)
			return NULL;
		n->next = c;
		n->size = want;
		n->used = 0;
		a->head = c = n;
	}
	void *p = c->data + c->used;
	c->used += size;
	return p;
}

char *zc_arena_strdup(struct zc_arena *a, const void *s, size_t len)
{
	if (len == SIZE_MAX)
		return NULL;
	char *p = zc_arena_alloc(a, len + 1);
	if (!p)
		return NULL;
	if (len)
		memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

void zc_arena_reset(struct zc_arena *a)
{
	struct zc_chunk *c = a->head;
	if (!c)
		return;
	while (c->next) {
		struct zc_chunk *older = c->next;
		free(c);
		c = older;
	}
	c->used = 0;
	a->head = c;
}

void zc_arena_free(struct zc_arena *a)
{
	struct zc_chunk *c = a->head;
	while (c) {
		struct zc_chunk *older = c->next;
		free(c);
		c = older;
	}
	a->head = NULL;
}
