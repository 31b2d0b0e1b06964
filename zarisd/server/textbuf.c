/* textbuf — see textbuf.h. */
#include "zarisd/server/textbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/mem.h"

static void reserve(struct textbuf *t, size_t more)
{
	if (t->p && t->len + more < t->cap)
		return;
	size_t cap = t->cap ? t->cap : 256;
	while (cap <= t->len + more)
		cap *= 2;
	t->p = zr_realloc(t->p, cap);
	t->cap = cap;
}

void textbuf_printf(struct textbuf *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n <= 0)
		return;
	reserve(t, (size_t)n);
	va_start(ap, fmt);
	vsnprintf(t->p + t->len, t->cap - t->len, fmt, ap);
	va_end(ap);
	t->len += (size_t)n;
}

void textbuf_append(struct textbuf *t, const char *s, size_t len)
{
	reserve(t, len);
	memcpy(t->p + t->len, s, len);
	t->len += len;
	t->p[t->len] = '\0';
}

void textbuf_free(struct textbuf *t)
{
	ZR_FREE(t->p);
	t->len = t->cap = 0;
}
