/* zaris_driver — drives libzaris from a test script (tests/native/libzaris_*.t):
 * one command per stdin line, each answered on stdout by its result lines
 * and then a line ".", so the script can go step by step.
 *
 * Arguments are hex (binary-safe); options are name=value (numbers in
 * decimal, strings in hex, label lists as hex,hex) or a bare flag word
 * (nx, xx, get, keepttl: letters no hex token has).
 *
 *   connect port=N [host=H] [cluster=auto|on|off] [timeout=MS] [ctimeout=MS]
 *           [offset=N] [password=HEX] [rmin=MS] [rmax=MS] [interval=MS]
 *                        -> "rc R TEXT"
 *   close
 *   db n=N               database of the ops added next
 *   get K | del K | exists K | getdel K | pttl K | persist K | metaget K
 *   set K V [ttl=MS] [nx] [xx] [get] [keepttl] [labels=..] [entity=H] [ct=H]
 *   incrby K d=D | pexpire K ms=MS | getset K V
 *   mget K... | mset K V K V ...
 *   metaset K [labels=..] [entity=H] [ct=H] | invalidate LABEL [ENTITY]
 *   topology | command ARG...
 *                        add one op to the current batch -> "added I"
 *   exec                 run the batch -> "rc R", then per op "I STATUS HEX"
 *                        (HEX: the value re-encoded as RESP3, "-" when none)
 *   send                 send the batch and start a new one -> "sent N"
 *   waitall              wait for every sent batch -> per batch in send
 *                        order "batch N rc R" and its op lines
 *   stats                -> "stats requests R ops O moved M ask A retries T
 *                           connects C topology T epoch E"
 *   nodes K...           -> per key "node I" (zaris_key_node)
 *   sleep ms=MS
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "zarisd/client/zaris.h"

#define MAX_ARGS 4096
#define MAX_SENT 1024

static struct zaris *z;
static struct zaris_batch *cur;
static struct zaris_batch *sent[MAX_SENT];
static int nsent;

struct buf {
	char *p;
	size_t n, cap;
};

static void bput(struct buf *b, const void *p, size_t n)
{
	if (b->n + n + 1 > b->cap) {
		b->cap = (b->n + n + 1) * 2;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bprintf(struct buf *b, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	bput(b, tmp, (size_t)n);
}

/* V as RESP3, as zarisd would have sent it. */
static void encode(struct buf *b, const struct zaris_value *v)
{
	switch (v->type) {
	case ZARIS_T_SIMPLE:
		bput(b, "+", 1), bput(b, v->str, v->len), bput(b, "\r\n", 2);
		break;
	case ZARIS_T_ERROR:
		bput(b, "-", 1), bput(b, v->str, v->len), bput(b, "\r\n", 2);
		break;
	case ZARIS_T_INTEGER:
		bprintf(b, ":%lld\r\n", (long long)v->integer);
		break;
	case ZARIS_T_BULK:
		bprintf(b, "$%zu\r\n", v->len), bput(b, v->str, v->len), bput(b, "\r\n", 2);
		break;
	case ZARIS_T_NULL:
		bput(b, "_\r\n", 3);
		break;
	case ZARIS_T_DOUBLE:
		bput(b, ",", 1), bput(b, v->str, v->len), bput(b, "\r\n", 2);
		break;
	case ZARIS_T_BOOL:
		bput(b, v->integer ? "#t\r\n" : "#f\r\n", 4);
		break;
	case ZARIS_T_BIGNUM:
		bput(b, "(", 1), bput(b, v->str, v->len), bput(b, "\r\n", 2);
		break;
	case ZARIS_T_VERBATIM:
		bprintf(b, "=%zu\r\n%s:", v->len + 4, v->format), bput(b, v->str, v->len), bput(b, "\r\n", 2);
		break;
	case ZARIS_T_ARRAY:
	case ZARIS_T_SET:
	case ZARIS_T_PUSH:
	case ZARIS_T_MAP: {
		char t = v->type == ZARIS_T_ARRAY  ? '*'
			 : v->type == ZARIS_T_SET  ? '~'
			 : v->type == ZARIS_T_PUSH ? '>'
						   : '%';
		bprintf(b, "%c%zu\r\n", t, t == '%' ? v->n / 2 : v->n);
		for (size_t i = 0; i < v->n; i++)
			encode(b, &v->elements[i]);
		break;
	}
	}
}

static void print_results(struct zaris_batch *b)
{
	for (size_t i = 0; i < zaris_batch_count(b); i++) {
		const struct zaris_result *r = zaris_batch_result(b, i);
		printf("%zu %d ", i, r ? r->status : -999);
		if (!r || !r->value) {
			printf("-\n");
			continue;
		}
		struct buf e = { 0 };
		encode(&e, r->value);
		for (size_t k = 0; k < e.n; k++)
			printf("%02x", (unsigned char)e.p[k]);
		printf("\n");
		free(e.p);
	}
}

/* A hex token decoded in place: its length, or -1. */
static long unhex(char *s)
{
	size_t n = strlen(s);
	if (n % 2)
		return -1;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(s + 2 * i, "%2x", &v) != 1)
			return -1;
		s[i] = (char)v;
	}
	s[n / 2] = '\0';
	return (long)(n / 2);
}

struct args {
	int n;
	char *v[MAX_ARGS];
	size_t len[MAX_ARGS];
	/* options */
	const char *opt_name[64];
	char *opt_val[64];
	int nopt;
};

static const char *opt(struct args *a, const char *name)
{
	for (int i = 0; i < a->nopt; i++)
		if (!strcmp(a->opt_name[i], name))
			return a->opt_val[i] ? a->opt_val[i] : "";
	return NULL;
}

static long opt_num(struct args *a, const char *name, long def)
{
	const char *v = opt(a, name);
	return v ? strtol(v, NULL, 10) : def;
}

/* A hex option decoded: its bytes (a static copy per call site is not
 * needed: options live in the line buffer), *LEN its length. */
static const char *opt_hex(struct args *a, const char *name, size_t *len)
{
	for (int i = 0; i < a->nopt; i++)
		if (!strcmp(a->opt_name[i], name) && a->opt_val[i]) {
			long n = unhex(a->opt_val[i]);
			*len = n < 0 ? 0 : (size_t)n;
			return a->opt_val[i];
		}
	*len = 0;
	return NULL;
}

static int parse_line(char *line, struct args *a, char **verb)
{
	a->n = a->nopt = 0;
	*verb = strtok(line, " \n");
	if (!*verb)
		return -1;
	for (char *t; (t = strtok(NULL, " \n"));) {
		char *eq = strchr(t, '=');
		if (eq || (t[0] >= 'g' && t[0] <= 'z' && strlen(t) < 9)) {
			if (a->nopt == 64)
				return -1;
			if (eq)
				*eq = '\0';
			a->opt_name[a->nopt] = t;
			a->opt_val[a->nopt++] = eq ? eq + 1 : NULL;
			continue;
		}
		if (a->n == MAX_ARGS)
			return -1;
		long n = unhex(t);
		if (n < 0)
			return -1;
		a->v[a->n] = t;
		a->len[a->n++] = (size_t)n;
	}
	return 0;
}

/* labels=HEX,HEX: split and decoded into LABELS/LENS; the count. */
static size_t opt_labels(struct args *a, const char **labels, size_t *lens, size_t max)
{
	const char *v = opt(a, "labels");
	if (!v || !*v)
		return 0;
	size_t n = 0;
	for (char *t = strtok((char *)v, ","); t && n < max; t = strtok(NULL, ",")) {
		long l = unhex(t);
		labels[n] = t;
		lens[n++] = l < 0 ? 0 : (size_t)l;
	}
	return n;
}

static int add_op(const char *verb, struct args *a)
{
	const char *k = a->n > 0 ? a->v[0] : "";
	size_t kl = a->n > 0 ? a->len[0] : 0;
	const char *labels[64];
	size_t lens[64];
	struct zaris_meta meta = { .labels = labels, .label_lens = lens };
	if (!strcmp(verb, "set") || !strcmp(verb, "metaset")) {
		meta.nlabels = opt_labels(a, labels, lens, 64);
		meta.entity = opt_hex(a, "entity", &meta.entity_len);
		meta.content_type = opt_hex(a, "ct", &meta.content_type_len);
	}
	bool has_meta = opt(a, "labels") || opt(a, "entity") || opt(a, "ct");
	if (!strcmp(verb, "get"))
		return zaris_add_get(cur, k, kl);
	if (!strcmp(verb, "del"))
		return zaris_add_del(cur, k, kl);
	if (!strcmp(verb, "exists"))
		return zaris_add_exists(cur, k, kl);
	if (!strcmp(verb, "getdel"))
		return zaris_add_getdel(cur, k, kl);
	if (!strcmp(verb, "pttl"))
		return zaris_add_pttl(cur, k, kl);
	if (!strcmp(verb, "persist"))
		return zaris_add_persist(cur, k, kl);
	if (!strcmp(verb, "metaget"))
		return zaris_add_metaget(cur, k, kl);
	if (!strcmp(verb, "incrby"))
		return zaris_add_incrby(cur, k, kl, opt_num(a, "d", 0));
	if (!strcmp(verb, "pexpire"))
		return zaris_add_pexpire(cur, k, kl, opt_num(a, "ms", 0));
	if (!strcmp(verb, "getset") && a->n == 2)
		return zaris_add_getset(cur, k, kl, a->v[1], a->len[1]);
	if (!strcmp(verb, "set") && a->n == 2) {
		struct zaris_set_opts so = { .ttl_ms = opt_num(a, "ttl", 0),
					     .meta = has_meta ? &meta : NULL };
		so.flags = (opt(a, "nx") ? ZARIS_SET_NX : 0) | (opt(a, "xx") ? ZARIS_SET_XX : 0) |
			   (opt(a, "get") ? ZARIS_SET_GET : 0) | (opt(a, "keepttl") ? ZARIS_SET_KEEPTTL : 0);
		return zaris_add_set(cur, k, kl, a->v[1], a->len[1], &so);
	}
	if (!strcmp(verb, "metaset"))
		return zaris_add_metaset(cur, k, kl, has_meta ? &meta : NULL);
	if (!strcmp(verb, "mget"))
		return zaris_add_mget(cur, (size_t)a->n, (const void *const *)a->v, a->len);
	if (!strcmp(verb, "mset") && a->n % 2 == 0) {
		static const void *keys[MAX_ARGS / 2], *vals[MAX_ARGS / 2];
		static size_t klens[MAX_ARGS / 2], vlens[MAX_ARGS / 2];
		for (int i = 0; i < a->n / 2; i++) {
			keys[i] = a->v[2 * i], klens[i] = a->len[2 * i];
			vals[i] = a->v[2 * i + 1], vlens[i] = a->len[2 * i + 1];
		}
		return zaris_add_mset(cur, (size_t)a->n / 2, keys, klens, vals, vlens);
	}
	if (!strcmp(verb, "invalidate"))
		return zaris_add_invalidate(cur, k, kl, a->n > 1 ? a->v[1] : NULL, a->n > 1 ? a->len[1] : 0);
	if (!strcmp(verb, "topology"))
		return zaris_add_topology(cur);
	if (!strcmp(verb, "command"))
		return zaris_add_command(cur, a->n, (const char *const *)a->v, a->len);
	return -1000;
}

static void do_connect(struct args *a)
{
	struct zaris_options o;
	zaris_options_init(&o);
	size_t pl;
	o.host = opt(a, "host");
	o.port = (uint16_t)opt_num(a, "port", 0);
	const char *c = opt(a, "cluster");
	o.cluster = !c || !strcmp(c, "auto") ? ZARIS_CLUSTER_AUTO
		    : !strcmp(c, "on")	     ? ZARIS_CLUSTER_ON
					     : ZARIS_CLUSTER_OFF;
	o.request_timeout_ms = (int)opt_num(a, "timeout", 0);
	o.connect_timeout_ms = (int)opt_num(a, "ctimeout", 0);
	o.native_port_offset = (int)opt_num(a, "offset", 0);
	o.reconnect_min_ms = (int)opt_num(a, "rmin", 0);
	o.reconnect_max_ms = (int)opt_num(a, "rmax", 0);
	o.topology_interval_ms = (int)opt_num(a, "interval", 0);
	o.password = opt_hex(a, "password", &pl);
	char err[256];
	zaris_close(z);
	z = NULL;
	int rc = zaris_connect(&o, &z, err, sizeof(err));
	printf("rc %d %s\n", rc, rc ? err : zaris_is_cluster(z) ? "cluster" : "single");
}

int main(void)
{
	static char line[1 << 20];
	static struct args a;
	cur = zaris_batch_new();
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	while (fgets(line, sizeof(line), stdin)) {
		char *verb;
		if (parse_line(line, &a, &verb)) {
			printf("bad line\n.\n");
			fflush(stdout);
			continue;
		}
		if (!strcmp(verb, "connect")) {
			do_connect(&a);
		} else if (!strcmp(verb, "close")) {
			zaris_close(z);
			z = NULL;
			printf("closed\n");
		} else if (!strcmp(verb, "db")) {
			zaris_batch_db(cur, (int)opt_num(&a, "n", -1));
			printf("db\n");
		} else if (!strcmp(verb, "exec")) {
			int rc = zaris_exec(z, cur);
			printf("rc %d %s\n", rc, rc ? zaris_errstr(z) : "");
			print_results(cur);
			zaris_batch_reset(cur);
		} else if (!strcmp(verb, "send")) {
			int rc = nsent < MAX_SENT ? zaris_send(z, cur) : ZARIS_E_INVAL;
			if (!rc) {
				sent[nsent++] = cur;
				cur = zaris_batch_new();
			}
			printf("sent %d %d\n", nsent, rc);
		} else if (!strcmp(verb, "waitall")) {
			struct zaris_batch *d;
			int rc;
			while (zaris_wait_any(z, -1, &d, &rc) == 1)
				for (int i = 0; i < nsent; i++)
					if (sent[i] == d)
						sent[i] = (struct zaris_batch *)((uintptr_t)d | 1), (void)rc;
			for (int i = 0; i < nsent; i++) {
				struct zaris_batch *b =
					(struct zaris_batch *)((uintptr_t)sent[i] & ~(uintptr_t)1);
				printf("batch %d done %d\n", i, (int)((uintptr_t)sent[i] & 1));
				print_results(b);
				zaris_batch_free(b);
			}
			nsent = 0;
		} else if (!strcmp(verb, "stats")) {
			struct zaris_stats s;
			zaris_get_stats(z, &s);
			printf("stats requests %llu ops %llu moved %llu ask %llu retries %llu connects %llu topology %llu "
			       "epoch %llu\n",
			       (unsigned long long)s.requests, (unsigned long long)s.ops,
			       (unsigned long long)s.moved, (unsigned long long)s.ask,
			       (unsigned long long)s.retries, (unsigned long long)s.connects,
			       (unsigned long long)s.topology_reads, (unsigned long long)s.epoch);
		} else if (!strcmp(verb, "nodes")) {
			for (int i = 0; i < a.n; i++)
				printf("node %d\n", zaris_key_node(z, a.v[i], a.len[i]));
		} else if (!strcmp(verb, "sleep")) {
			long ms = opt_num(&a, "ms", 0);
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
			nanosleep(&ts, NULL);
			printf("slept\n");
		} else {
			int i = add_op(verb, &a);
			if (i == -1000)
				printf("unknown verb %s\n", verb);
			else
				printf("added %d\n", i);
		}
		printf(".\n");
		fflush(stdout);
	}
	zaris_close(z);
	zaris_batch_free(cur);
	return 0;
}
