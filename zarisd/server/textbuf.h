/* textbuf — a growing text buffer for replies assembled as text (INFO,
 * CLIENT LIST, LATENCY DOCTOR). Owned by one thread at a time; allocation
 * failure aborts like every internal allocation (zr_malloc).
 */
#ifndef ZR_TEXTBUF_H
#define ZR_TEXTBUF_H

#include <stddef.h>

struct textbuf {
	char *p;    /* NUL-terminated once anything was appended; NULL before */
	size_t len; /* bytes written, without the NUL */
	size_t cap;
};

/* An empty buffer (no allocation yet). */
#define TEXTBUF_INIT       \
	{                  \
		NULL, 0, 0 \
	}

void textbuf_printf(struct textbuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void textbuf_append(struct textbuf *t, const char *s, size_t len);
/* Frees the text; the buffer is empty again. */
void textbuf_free(struct textbuf *t);

#endif
