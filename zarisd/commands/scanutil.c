/* scanutil — see scanutil.h. */
#include "zarisd/commands/scanutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zarisd/commands/cmdutil.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

bool scan_arg_cursor(struct client *c, int i, uint64_t *cursor)
{
	char tmp[32];
	size_t len;
	const char *p = cmd_arg(c, i, &len);
	/* strtoul's own blanks (isspace in the C locale) are refused up front:
	 * Redis checks the first byte before parsing. */
	if (len >= sizeof(tmp) || (len && (p[0] == ' ' || (p[0] >= '\t' && p[0] <= '\r'))))
		goto bad;
	memcpy(tmp, p, len);
	tmp[len] = '\0';
	char *end;
	errno = 0;
	unsigned long long v = strtoull(tmp, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		goto bad;
	*cursor = v;
	return true;
bad:
	reply_error(&c->out, ERR_INVALID_CURSOR);
	return false;
}

/* Redis compares option names with strcasecmp on the argument's C
 * string, so "count\0x" is COUNT. */
static bool opt_is(const char *p, size_t len, const char *lit)
{
	const char *nul = memchr(p, '\0', len);
	return zr_eq_nocase(p, nul ? (size_t)(nul - p) : len, lit);
}

bool scan_arg_opts(struct client *c, int first, bool allow_type, struct scan_out *so)
{
	*so = (struct scan_out){ .count = 10 };
	for (int i = first; i < c->argc; i += 2) {
		size_t len;
		const char *opt = cmd_arg(c, i, &len);
		bool has_val = c->argc - i >= 2;
		if (opt_is(opt, len, "count") && has_val) {
			if (!cmd_arg_ll(c, i + 1, &so->count, NULL))
				return false;
			if (so->count < 1) {
				reply_error(&c->out, ERR_SYNTAX);
				return false;
			}
		} else if (opt_is(opt, len, "match") && has_val) {
			so->pat = cmd_arg(c, i + 1, &so->plen);
			if (so->plen == 1 && so->pat[0] == '*')
				so->pat = NULL; /* matches everything: skip the glob */
		} else if (allow_type && opt_is(opt, len, "type") && has_val) {
			so->type = cmd_arg(c, i + 1, &so->tlen);
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return false;
		}
	}
	so->budget = so->count > LLONG_MAX / 10 ? LLONG_MAX : so->count * 10;
	return true;
}

bool scan_type_ok(const struct scan_out *so, const char *type_name)
{
	return !so->type || opt_is(so->type, so->tlen, type_name);
}

static void keep(struct scan_out *so, const char *p, size_t len)
{
	size_t need = sizeof(uint32_t) + len;
	if (so->used + need > so->cap) {
		size_t cap = so->cap ? so->cap : 1024;
		while (cap < so->used + need)
			cap *= 2;
		so->buf = zr_realloc(so->buf, cap);
		so->cap = cap;
	}
	uint32_t l = (uint32_t)len;
	memcpy(so->buf + so->used, &l, sizeof(l));
	memcpy(so->buf + so->used + sizeof(l), p, len);
	so->used += need;
	so->n++;
}

bool scan_offer(struct scan_out *so, const char *p, size_t len)
{
	so->seen++;
	if (so->pat && !zr_glob_match(so->pat, so->plen, p, len, false))
		return false;
	keep(so, p, len);
	return true;
}

void scan_offer_pair(struct scan_out *so, const char *a, size_t alen, const char *b, size_t blen)
{
	/* Redis 7.0 collects both into one list and stops when that list
	 * holds COUNT elements. */
	so->seen++;
	if (scan_offer(so, a, alen))
		keep(so, b, blen);
}

bool scan_more(struct scan_out *so, uint64_t cursor)
{
	return cursor && so->budget-- > 0 && so->seen < so->count;
}

void scan_reply(struct client *c, uint64_t cursor, struct scan_out *so)
{
	char num[24];
	reply_array(&c->out, 2);
	/* unsigned, like Redis's cursor */
	reply_bulk(&c->out, num, (size_t)snprintf(num, sizeof(num), "%llu", (unsigned long long)cursor));
	reply_array(&c->out, so->n);
	for (size_t off = 0; off < so->used;) {
		uint32_t l;
		memcpy(&l, so->buf + off, sizeof(l));
		reply_bulk(&c->out, so->buf + off + sizeof(l), l);
		off += sizeof(l) + l;
	}
	scan_discard(so);
}

void scan_discard(struct scan_out *so)
{
	ZR_FREE(so->buf);
	so->used = so->cap = 0;
	so->n = 0;
}

void scan_reply_empty(struct client *c)
{
	reply_array(&c->out, 2);
	reply_bulk(&c->out, "0", 1);
	reply_array(&c->out, 0);
}
