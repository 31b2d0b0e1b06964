/* resp_reader — see resp_reader.h. */
#include "zarisd/proto/resp_reader.h"

#include <limits.h>
#include <string.h>

int resp_reader_int(const char *p, const char *end, long long *out)
{
	int neg = 0;
	unsigned long long v = 0;

	if (p < end && *p == '-') {
		neg = 1;
		p++;
	}
	/* 19 digits hold LLONG_MAX; the bound below refuses what overflows */
	if (p == end || end - p > 19)
		return 0;
	for (; p < end; p++) {
		if (*p < '0' || *p > '9')
			return 0;
		v = v * 10 + (unsigned long long)(*p - '0');
	}
	if (v > (unsigned long long)LLONG_MAX + (unsigned long long)neg)
		return 0;
	*out = neg ? (long long)(0 - v) : (long long)v;
	return 1;
}

/* The CR ending the line that starts at P, or NULL when the line is not
 * complete yet (its LF not received). */
static const char *line_end(const char *p, const char *end)
{
	const char *cr = memchr(p, '\r', (size_t)(end - p));

	if (!cr || cr + 1 >= end)
		return NULL;
	return cr;
}

static long read_value(const char *p, const char *end, struct resp_reply *r, int depth);

/* Skips COUNT values from P; returns the bytes they take, 0 when
 * incomplete, -1 on an error. */
static long skip_values(const char *p, const char *end, long long count, int depth)
{
	long used = 0;

	for (long long i = 0; i < count; i++) {
		long sub = read_value(p + used, end, NULL, depth);
		if (sub <= 0)
			return sub;
		used += sub;
	}
	return used;
}

static long read_value(const char *p, const char *end, struct resp_reply *r, int depth)
{
	struct resp_reply dummy;
	long long n;

	if (p >= end)
		return 0;
	if (depth > RESP_READER_MAX_DEPTH)
		return -1;
	if (!r)
		r = &dummy;
	const char *eol = line_end(p + 1, end);
	if (!eol)
		return 0;
	if (eol[1] != '\n')
		return -1;
	long used = (long)(eol + 2 - p);
	r->str = p + 1;
	r->len = (size_t)(eol - (p + 1));
	r->size = (size_t)used;
	switch (*p) {
	case '+':
		r->type = RESP_REPLY_STATUS;
		return used;
	case '-':
		r->type = RESP_REPLY_ERROR;
		return used;
	case ',':
		r->type = RESP_REPLY_DOUBLE;
		return used;
	case '(':
		r->type = RESP_REPLY_BIGNUM;
		return used;
	case ':':
		r->type = RESP_REPLY_INT;
		return resp_reader_int(p + 1, eol, &r->integer) ? used : -1;
	case '#':
		if (r->len != 1 || (p[1] != 't' && p[1] != 'f'))
			return -1;
		r->type = RESP_REPLY_BOOL;
		r->integer = p[1] == 't';
		return used;
	case '_':
		if (r->len != 0)
			return -1;
		r->type = RESP_REPLY_NULL;
		return used;
	case '$':
	case '=':
	case '!':
		if (!resp_reader_int(p + 1, eol, &n) || n < -1 || (n == -1 && *p != '$'))
			return -1;
		if (n == -1) {
			r->type = RESP_REPLY_NULL;
			return used;
		}
		if (end - (p + used) < n + 2)
			return 0;
		if (p[used + n] != '\r' || p[used + n + 1] != '\n')
			return -1;
		r->str = p + used;
		r->len = (size_t)n;
		r->size = (size_t)(used + n + 2);
		if (*p == '=') {
			/* "fmt:" then the text (RESP3 verbatim string) */
			if (n < 4 || r->str[3] != ':')
				return -1;
			r->type = RESP_REPLY_VERBATIM;
			r->format = r->str;
			r->str += 4;
			r->len -= 4;
		} else {
			r->type = *p == '!' ? RESP_REPLY_ERROR : RESP_REPLY_BULK;
		}
		return (long)r->size;
	case '*':
	case '~':
	case '%':
	case '>':
	case '|': {
		if (!resp_reader_int(p + 1, eol, &n) || n < -1 || (n == -1 && *p != '*'))
			return -1;
		if (n == -1) {
			r->type = RESP_REPLY_NULL;
			return used;
		}
		char kind = *p;
		long long values = (kind == '%' || kind == '|') ? 2 * n : n;
		long sub = skip_values(p + used, end, values, depth + 1);
		if (sub < 0 || (sub == 0 && values > 0))
			return sub;
		if (kind == '|') {
			/* an attribute describes the value that follows it */
			long v = read_value(p + used + sub, end, r, depth + 1);
			if (v <= 0)
				return v;
			r->size = (size_t)(used + sub + v);
			return (long)r->size;
		}
		r->type = kind == '*'	? RESP_REPLY_ARRAY
			  : kind == '~' ? RESP_REPLY_SET
			  : kind == '%' ? RESP_REPLY_MAP
					: RESP_REPLY_PUSH;
		r->count = n;
		r->elems = p + used;
		r->str = NULL;
		r->len = 0;
		r->size = (size_t)(used + sub);
		return (long)r->size;
	}
	default:
		return -1;
	}
}

long resp_reader_next(const char *p, size_t n, struct resp_reply *r)
{
	return read_value(p, p + n, r, 0);
}
