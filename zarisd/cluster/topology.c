/* topology — see topology.h. Two passes: the lines into nodes (each error
 * names its line), then the references between them (a replica's primary,
 * myself) and the slot table. */
#include "zarisd/cluster/topology.h"

#include <arpa/inet.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/core/mem.h"

#define MAX_TOKENS 10 /* a replica line with its native port */

struct token {
	const char *p;
	size_t len;
};

/* What a node line names before the references are resolved. */
struct pending {
	char primary_id[TOPO_ID_LEN + 1]; /* a replica's; "" for a primary */
	char *ranges;			  /* a primary's ranges text, or NULL */
};

struct parser {
	struct topology *t;
	struct pending *pend;
	unsigned cap;
	int line;
	int myself_line, cluster_line;
	char myself[TOPO_ID_LEN + 1];
	char *err;
	size_t errlen;
};

static bool fail(struct parser *p, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static bool fail(struct parser *p, int line, const char *fmt, ...)
{
	int n = snprintf(p->err, p->errlen, "line %d: ", line);
	if (n < 0 || (size_t)n >= p->errlen)
		return false;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return false;
}

bool topology_valid_id(const char *id, size_t len)
{
	if (len != TOPO_ID_LEN)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
			return false;
	return true;
}

int topology_find(const struct topology *t, const char *id, size_t len)
{
	if (len != TOPO_ID_LEN)
		return -1;
	for (unsigned i = 0; i < t->nnodes; i++)
		if (!memcmp(t->nodes[i].id, id, TOPO_ID_LEN))
			return (int)i;
	return -1;
}

static bool tok_eq(const struct token *k, const char *s)
{
	return k->len == strlen(s) && !memcmp(k->p, s, k->len);
}

/* A decimal number of TOK in 0..MAX. */
static bool tok_number(const struct token *k, uint64_t max, uint64_t *out)
{
	if (k->len == 0 || k->len > 20)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < k->len; i++) {
		if (k->p[i] < '0' || k->p[i] > '9')
			return false;
		unsigned d = (unsigned)(k->p[i] - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

static char *tok_dup(const struct token *k)
{
	char *s = zr_malloc(k->len + 1);
	memcpy(s, k->p, k->len);
	s[k->len] = '\0';
	return s;
}

static int split(const char *s, size_t len, struct token *tok)
{
	int n = 0;
	size_t i = 0;
	while (i < len) {
		while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r'))
			i++;
		if (i == len)
			break;
		size_t b = i;
		while (i < len && s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
			i++;
		if (n == MAX_TOKENS)
			return MAX_TOKENS + 1;
		tok[n].p = s + b;
		tok[n].len = i - b;
		n++;
	}
	return n;
}

/* The trailing `native <nport>` of a node line TOK (N words) into
 * *NATIVE (0 without it); *N drops those two words. IP and PORT are the
 * line's, checked already. */
static bool parse_native(struct parser *p, const struct token *tok, int *n, const char *ip, int port,
			 int *native)
{
	*native = 0;
	for (int i = 6; i < *n; i++)
		if (tok_eq(&tok[i], "native") && i != *n - 2)
			return fail(p, p->line, "'native' ends a node line, followed by its native port");
	if (*n < 8 || !tok_eq(&tok[*n - 2], "native"))
		return true;
	const struct token *k = &tok[*n - 1];
	uint64_t v;
	if (!tok_number(k, 65535, &v) || v == 0)
		return fail(p, p->line, "native port '%.*s' is not in 1..65535", (int)k->len, k->p);
	if ((int)v == port)
		return fail(p, p->line, "native port %d is also the node's port", port);
	const struct topology *t = p->t;
	for (unsigned i = 0; i < t->nnodes; i++) {
		const struct topo_node *o = &t->nodes[i];
		if (strcmp(o->ip, ip) != 0)
			continue;
		if (o->port == (int)v || o->native_port == (int)v)
			return fail(p, p->line, "native port %s:%d is also line %d's %s", ip, (int)v, o->line,
				    o->port == (int)v ? "port" : "native port");
	}
	*native = (int)v;
	*n -= 2;
	return true;
}

static bool parse_node(struct parser *p, const struct token *tok, int n)
{
	struct topology *t = p->t;
	/* the text as before the native token (CLUSTER SETTOPOLOGY's callers
	 * see it, cluster_routing.t checks it); the token has errors of its own */
	if (n < 6)
		return fail(
			p, p->line,
			"a node line is: node <id> <name> <ip> <port> primary <ranges> | replica <primary-id>");
	if (!topology_valid_id(tok[1].p, tok[1].len))
		return fail(p, p->line, "node id '%.*s' is not 40 lowercase hex digits", (int)tok[1].len,
			    tok[1].p);
	if (topology_find(t, tok[1].p, tok[1].len) >= 0)
		return fail(p, p->line, "node id %.*s is named twice", (int)tok[1].len, tok[1].p);
	for (unsigned i = 0; i < t->nnodes; i++)
		if (strlen(t->nodes[i].name) == tok[2].len && !memcmp(t->nodes[i].name, tok[2].p, tok[2].len))
			return fail(p, p->line, "node name '%.*s' is used twice", (int)tok[2].len, tok[2].p);
	char ip[64];
	unsigned char addr[16];
	if (tok[3].len >= sizeof(ip))
		return fail(p, p->line, "'%.*s' is not an IP address", (int)tok[3].len, tok[3].p);
	memcpy(ip, tok[3].p, tok[3].len);
	ip[tok[3].len] = '\0';
	if (inet_pton(AF_INET, ip, addr) != 1 && inet_pton(AF_INET6, ip, addr) != 1)
		return fail(p, p->line, "'%s' is not an IP address", ip);
	uint64_t port;
	if (!tok_number(&tok[4], 65535, &port) || port == 0)
		return fail(p, p->line, "port '%.*s' is not in 1..65535", (int)tok[4].len, tok[4].p);
	for (unsigned i = 0; i < t->nnodes; i++) {
		if (strcmp(t->nodes[i].ip, ip) != 0)
			continue;
		if (t->nodes[i].port == (int)port)
			return fail(p, p->line, "address %s:%d is also line %d's", ip, (int)port,
				    t->nodes[i].line);
		if (t->nodes[i].native_port == (int)port)
			return fail(p, p->line, "address %s:%d is line %d's native port", ip, (int)port,
				    t->nodes[i].line);
	}
	int native;
	if (!parse_native(p, tok, &n, ip, (int)port, &native))
		return false;
	bool primary = tok_eq(&tok[5], "primary");
	if (!primary && !tok_eq(&tok[5], "replica"))
		return fail(p, p->line, "role '%.*s' is neither primary nor replica", (int)tok[5].len,
			    tok[5].p);
	if (primary ? n > 7 : n != 7)
		return fail(p, p->line,
			    primary ? "a primary takes one list of ranges (a-b,c,...)"
				    : "a replica line ends with its primary's id");
	if (!primary && !topology_valid_id(tok[6].p, tok[6].len))
		return fail(p, p->line, "primary id '%.*s' is not 40 lowercase hex digits", (int)tok[6].len,
			    tok[6].p);
	if (t->nnodes == TOPO_MAX_NODES)
		return fail(p, p->line, "more than %d nodes", TOPO_MAX_NODES);
	if (t->nnodes == p->cap) {
		p->cap = p->cap ? p->cap * 2 : 8;
		t->nodes = zr_realloc(t->nodes, sizeof(*t->nodes) * p->cap);
		p->pend = zr_realloc(p->pend, sizeof(*p->pend) * p->cap);
	}
	struct topo_node *nd = &t->nodes[t->nnodes];
	struct pending *pd = &p->pend[t->nnodes];
	memset(nd, 0, sizeof(*nd));
	memset(pd, 0, sizeof(*pd));
	memcpy(nd->id, tok[1].p, TOPO_ID_LEN);
	nd->name = tok_dup(&tok[2]);
	memcpy(nd->ip, ip, sizeof(ip));
	nd->port = (int)port;
	nd->native_port = native;
	nd->primary = -1;
	nd->line = p->line;
	if (primary && n == 7)
		pd->ranges = tok_dup(&tok[6]);
	if (!primary)
		memcpy(pd->primary_id, tok[6].p, TOPO_ID_LEN);
	t->nnodes++;
	return true;
}

static bool parse_line(struct parser *p, const char *s, size_t len)
{
	const char *hash = memchr(s, '#', len);
	if (hash)
		len = (size_t)(hash - s);
	struct token tok[MAX_TOKENS];
	int n = split(s, len, tok);
	if (n == 0)
		return true;
	if (n > MAX_TOKENS)
		return fail(p, p->line, "too many words");
	struct topology *t = p->t;
	bool epoch = tok_eq(&tok[0], "epoch");
	if (p->t->epoch == UINT64_MAX && !epoch)
		return fail(p, p->line, "the document must start with 'epoch <n>'");
	if (epoch) {
		if (t->epoch != UINT64_MAX)
			return fail(p, p->line, "a second epoch line");
		if (n != 2 || !tok_number(&tok[1], INT64_MAX, &t->epoch))
			return fail(p, p->line, "an epoch is one number 0..%lld", (long long)INT64_MAX);
		return true;
	}
	if (tok_eq(&tok[0], "cluster")) {
		if (p->cluster_line)
			return fail(p, p->line, "a second cluster line (the first is line %d)",
				    p->cluster_line);
		if (n != 2)
			return fail(p, p->line, "a cluster line is: cluster <name>");
		t->cluster = tok_dup(&tok[1]);
		p->cluster_line = p->line;
		return true;
	}
	if (tok_eq(&tok[0], "myself")) {
		if (p->myself_line)
			return fail(p, p->line, "a second myself line (the first is line %d)",
				    p->myself_line);
		if (n != 2 || !topology_valid_id(tok[1].p, tok[1].len))
			return fail(p, p->line, "a myself line is: myself <id of 40 lowercase hex digits>");
		memcpy(p->myself, tok[1].p, TOPO_ID_LEN);
		p->myself_line = p->line;
		return true;
	}
	if (tok_eq(&tok[0], "node"))
		return parse_node(p, tok, n);
	return fail(p, p->line, "unknown item '%.*s' (epoch, cluster, myself or node)", (int)tok[0].len,
		    tok[0].p);
}

/* Assigns a primary's RANGES ("a-b,c") to node I in the slot table. */
static bool assign_ranges(struct parser *p, unsigned i, const char *ranges)
{
	struct topology *t = p->t;
	struct topo_node *nd = &t->nodes[i];
	const char *s = ranges;
	for (;;) {
		const char *comma = strchr(s, ',');
		size_t len = comma ? (size_t)(comma - s) : strlen(s);
		const char *dash = memchr(s, '-', len);
		struct token a = { s, dash ? (size_t)(dash - s) : len };
		struct token b = dash ? (struct token){ dash + 1, len - a.len - 1 } : a;
		uint64_t lo, hi;
		if (!tok_number(&a, ZR_KEY_SLOTS - 1, &lo) || !tok_number(&b, ZR_KEY_SLOTS - 1, &hi))
			return fail(p, nd->line, "'%.*s' is not a slot or range of slots in 0..16383",
				    (int)len, s);
		if (lo > hi)
			return fail(p, nd->line, "range %.*s runs backwards", (int)len, s);
		for (uint64_t k = lo; k <= hi; k++) {
			if (t->owner[k] != TOPO_NO_OWNER)
				return fail(p, nd->line, "slot %u is also owned by line %d", (unsigned)k,
					    t->nodes[t->owner[k]].line);
			t->owner[k] = (uint16_t)i;
		}
		nd->nslots += (unsigned)(hi - lo + 1);
		t->assigned += (unsigned)(hi - lo + 1);
		if (!comma)
			return true;
		s = comma + 1;
	}
}

static int cmp_node_id(const void *a, const void *b)
{
	return strcmp(((const struct topo_node *)a)->id, ((const struct topo_node *)b)->id);
}

/* The canonical layout: cluster, myself, then the nodes sorted by id with
 * their ranges recomputed from the slot table. */
static char *make_layout(const struct topology *t)
{
	struct topo_node *sorted = zr_malloc(sizeof(*sorted) * (t->nnodes ? t->nnodes : 1));
	memcpy(sorted, t->nodes, sizeof(*sorted) * t->nnodes);
	qsort(sorted, t->nnodes, sizeof(*sorted), cmp_node_id);
	size_t cap = 256 + (size_t)t->nnodes * 256 + strlen(t->cluster), used = 0;
	char *out = zr_malloc(cap);
	used += (size_t)snprintf(out + used, cap - used, "cluster %s\nmyself %s\n", t->cluster,
				 t->nodes[t->myself].id);
	for (unsigned i = 0; i < t->nnodes; i++) {
		const struct topo_node *nd = &sorted[i];
		int idx = topology_find(t, nd->id, TOPO_ID_LEN);
		if (cap - used < 512 + strlen(nd->name)) {
			cap = cap * 2 + strlen(nd->name);
			out = zr_realloc(out, cap);
		}
		used += (size_t)snprintf(out + used, cap - used, "node %s %s %s %d ", nd->id, nd->name,
					 nd->ip, nd->port);
		if (nd->primary >= 0) {
			used += (size_t)snprintf(out + used, cap - used, "replica %s",
						 t->nodes[nd->primary].id);
			if (nd->native_port)
				used += (size_t)snprintf(out + used, cap - used, " native %d",
							 nd->native_port);
			out[used++] = '\n';
			out[used] = '\0';
			continue;
		}
		used += (size_t)snprintf(out + used, cap - used, "primary");
		for (unsigned k = 0; k < ZR_KEY_SLOTS; k++) {
			if (t->owner[k] != idx || (k > 0 && t->owner[k - 1] == idx))
				continue;
			unsigned e = k;
			while (e + 1 < ZR_KEY_SLOTS && t->owner[e + 1] == idx)
				e++;
			if (cap - used < 64) {
				cap *= 2;
				out = zr_realloc(out, cap);
			}
			used += (size_t)snprintf(out + used, cap - used, " %u-%u", k, e);
		}
		if (cap - used < 64) {
			cap *= 2;
			out = zr_realloc(out, cap);
		}
		if (nd->native_port)
			used += (size_t)snprintf(out + used, cap - used, " native %d", nd->native_port);
		out[used++] = '\n';
		out[used] = '\0';
	}
	zr_free(sorted);
	return out;
}

static bool resolve(struct parser *p)
{
	struct topology *t = p->t;
	if (t->epoch == UINT64_MAX)
		return fail(p, p->line, "the document must start with 'epoch <n>'");
	if (!p->cluster_line)
		return fail(p, p->line, "no 'cluster <name>' line");
	if (!p->myself_line)
		return fail(p, p->line, "no 'myself <id>' line");
	int me = topology_find(t, p->myself, TOPO_ID_LEN);
	if (me < 0)
		return fail(p, p->myself_line, "myself %s names no node line", p->myself);
	t->myself = (unsigned)me;
	for (unsigned i = 0; i < t->nnodes; i++) {
		struct pending *pd = &p->pend[i];
		if (!pd->primary_id[0])
			continue;
		int pr = topology_find(t, pd->primary_id, TOPO_ID_LEN);
		if (pr < 0)
			return fail(p, t->nodes[i].line, "primary %s names no node line", pd->primary_id);
		if (p->pend[pr].primary_id[0])
			return fail(p, t->nodes[i].line, "%s is a replica (line %d), not a primary",
				    pd->primary_id, t->nodes[pr].line);
		t->nodes[i].primary = pr;
	}
	for (unsigned i = 0; i < t->nnodes; i++)
		if (p->pend[i].ranges && !assign_ranges(p, i, p->pend[i].ranges))
			return false;
	t->layout = make_layout(t);
	return true;
}

struct topology *topology_parse(const char *text, size_t len, char *err, size_t errlen)
{
	struct topology *t = zr_calloc(1, sizeof(*t));
	t->epoch = UINT64_MAX; /* no epoch line yet */
	memset(t->owner, 0xff, sizeof(t->owner));
	struct parser p = { .t = t, .err = err, .errlen = errlen };
	bool good = true;
	const char *s = text, *end = text + len;
	if (memchr(text, '\0', len)) {
		p.line = 1;
		for (const char *q = text; *q; q++)
			p.line += *q == '\n';
		good = fail(&p, p.line, "a NUL byte");
	}
	while (good && s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);
		p.line++;
		good = parse_line(&p, s, l);
		s += l + (nl ? 1 : 0);
	}
	if (p.line == 0)
		p.line = 1;
	if (good)
		good = resolve(&p);
	for (unsigned i = 0; i < t->nnodes; i++)
		zr_free(p.pend[i].ranges);
	zr_free(p.pend);
	if (!good) {
		topology_free(t);
		return NULL;
	}
	t->text = zr_malloc(len + 1);
	memcpy(t->text, text, len);
	t->text[len] = '\0';
	t->text_len = len;
	return t;
}

void topology_free(struct topology *t)
{
	if (!t)
		return;
	for (unsigned i = 0; i < t->nnodes; i++)
		zr_free(t->nodes[i].name);
	zr_free(t->nodes);
	zr_free(t->cluster);
	zr_free(t->text);
	zr_free(t->layout);
	zr_free(t);
}

bool topology_same_layout(const struct topology *t, const struct topology *u)
{
	return !strcmp(t->layout, u->layout);
}
