/* rscan — see rscan.h. */
#include "bench/rscan.h"

#include <string.h>

#define RSCAN_MAX_DEPTH 64

int rscan_int(const char *p, const char *end, long long *out)
{
	int neg = 0;
	long long v = 0;

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	if (p == end || end - p > 18)
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (*p - '0');
	}
	*out = neg ? -v : v;
	return 1;
}

/* The end of the line starting at P ("\r\n" excluded), or NULL when the
 * line is not complete yet. */
static const char *line_end(const char *p, const char *end)
{
	const char *cr = memchr(p, '\r', (size_t)(end - p));

	if (!cr || cr + 1 >= end)
		return NULL;
	return cr;
}

static long scan(const char *p, const char *end, enum rscan_kind *kind, int depth)
{
	const char *eol;
	long long len, i, items;
	long used, sub;
	enum rscan_kind ignored;

	if (p >= end)
		return 0;
	if (depth > RSCAN_MAX_DEPTH)
		return -1;
	eol = line_end(p + 1, end);
	if (!eol)
		return 0;
	if (eol[1] != '\n')
		return -1;
	used = (long)(eol + 2 - p);
	switch (*p) {
	case '+':
		*kind = RSCAN_STATUS;
		return used;
	case '-':
		*kind = RSCAN_ERROR;
		return used;
	case ':':
	case ',':
	case '(':
	case '#':
		*kind = RSCAN_INT;
		return used;
	case '_':
		*kind = RSCAN_NIL;
		return used;
	case '$':
	case '=':
	case '!':
		if (!rscan_int(p + 1, eol, &len) || len < -1)
			return -1;
		if (len == -1) {
			*kind = RSCAN_NIL;
			return used;
		}
		if (end - (p + used) < len + 2)
			return 0;
		*kind = *p == '!' ? RSCAN_ERROR : RSCAN_BULK;
		return used + (long)len + 2;
	case '*':
	case '~':
	case '%':
	case '|':
	case '>':
		if (!rscan_int(p + 1, eol, &items) || items < -1)
			return -1;
		if (items == -1) {
			*kind = RSCAN_NIL;
			return used;
		}
		/* A map or an attribute holds key and value per item. */
		if (*p == '%' || *p == '|')
			items *= 2;
		for (i = 0; i < items; i++) {
			sub = scan(p + used, end, &ignored, depth + 1);
			if (sub <= 0)
				return sub;
			used += sub;
		}
		if (*p == '|') {
			/* An attribute precedes the value it describes. */
			sub = scan(p + used, end, kind, depth + 1);
			return sub <= 0 ? sub : used + sub;
		}
		*kind = *p == '>' ? RSCAN_PUSH : RSCAN_AGG;
		return used;
	default:
		return -1;
	}
}

long rscan_value(const char *p, size_t n, enum rscan_kind *kind)
{
	return scan(p, p + n, kind, 0);
}
