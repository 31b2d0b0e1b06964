/* strpack — see strpack.h. */
#include "zarisd/store/strpack.h"

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "zarisd/core/mem.h"
#include "zarisd/store/varint.h"

void strpack_init(struct strpack *p)
{
	memset(p, 0, sizeof(*p));
}

void strpack_clear(struct strpack *p)
{
	zr_free(p->buf);
	strpack_init(p);
}

bool strpack_dup(struct strpack *dst, const struct strpack *src)
{
	strpack_init(dst);
	if (!src->bytes)
		return true;
	dst->buf = zr_try_malloc(src->bytes);
	if (!dst->buf)
		return false;
	memcpy(dst->buf, src->buf, src->bytes);
	dst->bytes = src->bytes;
	dst->count = src->count;
	return true;
}

size_t strpack_memory(const struct strpack *p)
{
	return zr_usable(p->buf);
}

size_t strpack_get(const struct strpack *p, size_t off, const char **s, size_t *len)
{
	assert(off < p->bytes);
	uint64_t v;
	size_t n = varint_get(p->buf + off, &v);
	*len = (size_t)v;
	*s = (const char *)p->buf + off + n;
	return off + n + *len;
}

size_t strpack_find_pair(const struct strpack *p, const char *key, size_t klen)
{
	size_t off = 0;
	while (off < p->bytes) {
		const char *s;
		size_t len;
		size_t next = strpack_get(p, off, &s, &len);
		if (len == klen && !memcmp(s, key, klen))
			return off;
		/* skip the value */
		off = strpack_get(p, next, &s, &len);
	}
	return STRPACK_END;
}

size_t strpack_offset_of(const struct strpack *p, uint32_t i)
{
	assert(i < p->count);
	size_t off = 0;
	while (i--) {
		const char *s;
		size_t len;
		off = strpack_get(p, off, &s, &len);
	}
	return off;
}

/* Makes the buffer hold NEED bytes; false (buffer unchanged) on failure. */
static bool reserve(struct strpack *p, size_t need)
{
	if (need <= zr_usable(p->buf))
		return true;
	unsigned char *b = zr_try_realloc(p->buf, need);
	if (!b)
		return false;
	p->buf = b;
	return true;
}

/* Gives back the tail of a buffer that has shrunk a lot. */
static void trim(struct strpack *p)
{
	if (!p->bytes) {
		ZR_FREE(p->buf);
		return;
	}
	if (zr_usable(p->buf) > p->bytes * 2 + 64) {
		unsigned char *b = zr_try_realloc(p->buf, p->bytes);
		if (b)
			p->buf = b;
	}
}

int strpack_append(struct strpack *p, const char *s, size_t len)
{
	size_t hdr = varint_len(len);
	if (!reserve(p, p->bytes + hdr + len))
		return -ENOMEM;
	p->bytes += varint_put(p->buf + p->bytes, len);
	if (len)
		memcpy(p->buf + p->bytes, s, len);
	p->bytes += len;
	p->count++;
	return 0;
}

int strpack_replace(struct strpack *p, size_t off, const char *s, size_t len)
{
	const char *old;
	size_t oldlen;
	size_t end = strpack_get(p, off, &old, &oldlen);
	size_t newsize = varint_len(len) + len;
	size_t oldsize = end - off;
	if (newsize > oldsize && !reserve(p, p->bytes + newsize - oldsize))
		return -ENOMEM;
	memmove(p->buf + off + newsize, p->buf + end, p->bytes - end);
	size_t h = varint_put(p->buf + off, len);
	if (len)
		memcpy(p->buf + off + h, s, len);
	p->bytes = p->bytes + newsize - oldsize;
	if (newsize < oldsize)
		trim(p);
	return 0;
}

void strpack_delete(struct strpack *p, size_t off, uint32_t n)
{
	size_t end = off;
	for (uint32_t i = 0; i < n; i++) {
		const char *s;
		size_t len;
		end = strpack_get(p, end, &s, &len);
	}
	memmove(p->buf + off, p->buf + end, p->bytes - end);
	p->bytes -= end - off;
	p->count -= n;
	trim(p);
}
