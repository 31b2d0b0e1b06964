/* zc_resp3 — see zc_resp3.h. Recursive descent over a bounded buffer: each
 * step checks the bytes it needs, so a value cut anywhere answers "need
 * more" rather than reading past the end. An aggregate's declared count is
 * checked against the bytes left (every element takes at least 3) before
 * its element array is allocated, so a bogus count cannot ask for memory
 * the input could never fill. */
#include "zarisd/client/zc_resp3.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum {
	PARSE_ERROR = -1,
	PARSE_MORE = 0
};

struct parser {
	const unsigned char *p, *end;
	struct zc_arena *a;
	const char *why;
};

/* The line at the cursor (without CRLF): its start and length, the cursor
 * moved past the CRLF. PARSE_MORE when no CRLF is in the buffer yet. */
static int take_line(struct parser *ps, const unsigned char **line, size_t *len)
{
	const unsigned char *cr = ps->p;
	for (;;) {
		cr = memchr(cr, '\r', (size_t)(ps->end - cr));
		if (!cr || cr + 1 >= ps->end)
			return PARSE_MORE;
		if (cr[1] == '\n')
			break;
		cr++;
	}
	*line = ps->p;
	*len = (size_t)(cr - ps->p);
	ps->p = cr + 2;
	return 1;
}

static int fail(struct parser *ps, const char *why)
{
	ps->why = why;
	return PARSE_ERROR;
}

/* A signed decimal integer filling the whole line, as Redis writes them. */
static int parse_int(const unsigned char *s, size_t len, int64_t *out)
{
	bool neg = false;
	size_t i = 0;
	if (len && (s[0] == '-' || s[0] == '+')) {
		neg = s[0] == '-';
		i = 1;
	}
	if (i == len || len - i > 19)
		return -1;
	uint64_t v = 0;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX)
		return -1;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	return 0;
}

static int parse_value(struct parser *ps, struct zaris_value *v, int depth);

/* A length-prefixed body: LEN bytes then CRLF, copied into the arena. */
static int take_blob(struct parser *ps, int64_t n, struct zaris_value *v)
{
	if ((uint64_t)(ps->end - ps->p) < (uint64_t)n + 2)
		return PARSE_MORE;
	if (ps->p[n] != '\r' || ps->p[n + 1] != '\n')
		return fail(ps, "a blob without its CRLF");
	char *s = zc_arena_strdup(ps->a, ps->p, (size_t)n);
	if (!s)
		return fail(ps, "out of memory");
	v->str = s;
	v->len = (size_t)n;
	ps->p += n + 2;
	return 1;
}

static int parse_aggregate(struct parser *ps, struct zaris_value *v, int64_t n, int depth)
{
	if (n < 0)
		return fail(ps, "a negative aggregate count");
	/* every element is at least "_\r\n"; a count the bytes cannot hold
	 * yet is a prefix, unless it could never fit in memory */
	if ((uint64_t)n > SIZE_MAX / sizeof(struct zaris_value) / 2)
		return fail(ps, "an aggregate count past memory");
	if ((uint64_t)n * 3 > (uint64_t)(ps->end - ps->p))
		return PARSE_MORE;
	struct zaris_value *e = NULL;
	if (n) {
		e = zc_arena_alloc(ps->a, (size_t)n * sizeof(*e));
		if (!e)
			return fail(ps, "out of memory");
	}
	for (int64_t i = 0; i < n; i++) {
		int r = parse_value(ps, &e[i], depth + 1);
		if (r <= 0)
			return r;
	}
	v->elements = e;
	v->n = (size_t)n;
	return 1;
}

static int parse_double(struct parser *ps, const unsigned char *line, size_t len, struct zaris_value *v)
{
	char *s = zc_arena_strdup(ps->a, line, len);
	if (!s)
		return fail(ps, "out of memory");
	v->str = s;
	v->len = len;
	if (!strcmp(s, "inf") || !strcmp(s, "+inf")) {
		v->dbl = INFINITY;
	} else if (!strcmp(s, "-inf")) {
		v->dbl = -INFINITY;
	} else if (!strcmp(s, "nan") || !strcmp(s, "-nan")) {
		v->dbl = NAN;
	} else {
		char *endp;
		errno = 0;
		v->dbl = strtod(s, &endp);
		if (len == 0 || *endp || memchr(s, '\0', len))
			return fail(ps, "a bad double");
	}
	return 1;
}

static int parse_value(struct parser *ps, struct zaris_value *v, int depth)
{
	if (depth > ZC_RESP3_MAX_DEPTH)
		return fail(ps, "values nested too deep");
	if (ps->p >= ps->end)
		return PARSE_MORE;
	memset(v, 0, sizeof(*v));
	unsigned char kind = *ps->p;
	const unsigned char *start = ps->p;
	ps->p++;
	const unsigned char *line;
	size_t len;
	int r = take_line(ps, &line, &len);
	if (r <= 0) {
		ps->p = start;
		return r;
	}
	int64_t n = 0;
	switch (kind) {
	case '+':
	case '-':
		v->type = kind == '+' ? ZARIS_T_SIMPLE : ZARIS_T_ERROR;
		v->str = zc_arena_strdup(ps->a, line, len);
		v->len = len;
		return v->str ? 1 : fail(ps, "out of memory");
	case ':':
		v->type = ZARIS_T_INTEGER;
		return parse_int(line, len, &v->integer) ? fail(ps, "a bad integer") : 1;
	case '_':
		v->type = ZARIS_T_NULL;
		return len ? fail(ps, "a null with a body") : 1;
	case '#':
		v->type = ZARIS_T_BOOL;
		if (len != 1 || (line[0] != 't' && line[0] != 'f'))
			return fail(ps, "a bad boolean");
		v->integer = line[0] == 't';
		return 1;
	case ',':
		v->type = ZARIS_T_DOUBLE;
		return parse_double(ps, line, len, v);
	case '(':
		v->type = ZARIS_T_BIGNUM;
		if (!len)
			return fail(ps, "an empty big number");
		v->str = zc_arena_strdup(ps->a, line, len);
		v->len = len;
		return v->str ? 1 : fail(ps, "out of memory");
	case '$':
	case '!':
	case '=':
		if (parse_int(line, len, &n))
			return fail(ps, "a bad length");
		if (n == -1 && kind == '$') { /* RESP2's null bulk */
			v->type = ZARIS_T_NULL;
			return 1;
		}
		if (n < 0 || (kind == '=' && n < 4))
			return fail(ps, "a bad length");
		r = take_blob(ps, n, v);
		if (r <= 0) {
			if (r == PARSE_MORE)
				ps->p = start;
			return r;
		}
		if (kind == '$') {
			v->type = ZARIS_T_BULK;
		} else if (kind == '!') {
			v->type = ZARIS_T_ERROR;
		} else {
			if (v->str[3] != ':')
				return fail(ps, "a verbatim string without its format");
			v->type = ZARIS_T_VERBATIM;
			memcpy(v->format, v->str, 3);
			v->format[3] = '\0';
			v->str += 4;
			v->len -= 4;
		}
		return 1;
	case '*':
	case '%':
	case '~':
	case '>':
	case '|':
		if (parse_int(line, len, &n))
			return fail(ps, "a bad count");
		if (n == -1 && kind == '*') { /* RESP2's null array */
			v->type = ZARIS_T_NULL;
			return 1;
		}
		if (kind == '%' || kind == '|') {
			if (n < 0 || n > INT64_MAX / 2)
				return fail(ps, "a bad count");
			n *= 2;
		}
		v->type = kind == '*'	? ZARIS_T_ARRAY
			  : kind == '~' ? ZARIS_T_SET
			  : kind == '>' ? ZARIS_T_PUSH
					: ZARIS_T_MAP;
		r = parse_aggregate(ps, v, n, depth);
		if (r <= 0) {
			if (r == PARSE_MORE)
				ps->p = start;
			return r;
		}
		if (kind == '|') /* an attribute: dropped, the value follows */
			return parse_value(ps, v, depth);
		return 1;
	default:
		return fail(ps, "an unknown type byte");
	}
}

ssize_t zc_resp3_parse(const void *p, size_t len, struct zc_arena *a, struct zaris_value *out,
		       const char **why)
{
	struct parser ps = { .p = p, .end = (const unsigned char *)p + len, .a = a, .why = NULL };
	int r = parse_value(&ps, out, 0);
	if (r < 0) {
		if (why)
			*why = ps.why;
		return -1;
	}
	if (r == 0)
		return 0;
	return ps.p - (const unsigned char *)p;
}
