/* topology — see topology.h. Documents are small (a line per node), so
 * they are built and compared as whole strings.
 */
#include "supervisor/topology.h"

#include "supervisor/dirs.h"
#include "supervisor/log.h"

#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A growing string; aborts on OOM (documents are tiny). */
struct sbuf {
	char *s;
	size_t len, cap;
};

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	for (;;) {
		if (b->cap - b->len < 2) {
			b->cap = b->cap ? b->cap * 2 : 1024;
			b->s = realloc(b->s, b->cap);
			if (!b->s)
				abort();
		}
		va_start(ap, fmt);
		n = vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n >= 0 && (size_t)n < b->cap - b->len)
			break;
		b->cap = b->len + (size_t)n + 1 > b->cap * 2 ? b->len + (size_t)n + 1 : b->cap * 2;
		b->s = realloc(b->s, b->cap);
		if (!b->s)
			abort();
	}
	b->len += (size_t)n;
}

static char *build_body(const struct zconf *conf)
{
	struct sbuf b = { 0 };
	char id[41], pid[41];

	sb_printf(&b, "cluster %s\n", conf->cluster_name);
	for (size_t k = 0; k < conf->n_nodes; k++) {
		const struct zconf_node *n = &conf->nodes[k];

		int native = zconf_node_native_port(conf, n);

		zconf_node_id(conf, n, id);
		if (n->role == ZCONF_ROLE_PRIMARY) {
			sb_printf(&b, "node %s %s %s %d primary %s", id, n->name, n->address, n->port,
				  n->slots);
		} else {
			zconf_node_id(conf, zconf_find_node(conf, n->replica_of), pid);
			sb_printf(&b, "node %s %s %s %d replica %s", id, n->name, n->address, n->port, pid);
		}
		/* only when declared: a cluster without native ports pushes what
		 * an older zarisd parses (zarisd/cluster/topology.h) */
		if (native)
			sb_printf(&b, "%snative %d", n->role == ZCONF_ROLE_PRIMARY && !n->slots[0] ? "" : " ",
				  native);
		sb_printf(&b, "\n");
	}
	return b.s;
}

static void state_write(struct sv_topology *t)
{
	char tmp[4200];
	FILE *f;
	int fd;

	snprintf(tmp, sizeof(tmp), "%s.tmp", t->state_path);
	sv_mkdir_parents(t->dir);
	f = fopen(tmp, "w");
	if (!f) {
		snprintf(t->error, sizeof(t->error), "%.200s: %s", tmp, strerror(errno));
		sv_log(LOG_ERR, "cluster epoch state not kept: %s", t->error);
		return;
	}
	fprintf(f, "# zaris-supervisor: the topology last pushed (see supervisor/README.md)\nepoch %lld\n%s",
		t->epoch, t->body);
	fflush(f);
	fd = fileno(f);
	if (ferror(f) || fsync(fd) < 0 || fclose(f) != 0 || rename(tmp, t->state_path) < 0) {
		snprintf(t->error, sizeof(t->error), "%.200s: %s", t->state_path, strerror(errno));
		sv_log(LOG_ERR, "cluster epoch state not kept: %s", t->error);
		unlink(tmp);
		return;
	}
	/* the rename itself is durable only once the directory is */
	fd = open(t->dir, O_RDONLY | O_DIRECTORY);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	t->error[0] = '\0';
}

/* The state file's text, malloc'd, or NULL when there is none. */
static char *state_read(const char *path)
{
	FILE *f = fopen(path, "r");
	struct sbuf b = { 0 };
	char line[1024];

	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		sb_printf(&b, "%s", line);
	fclose(f);
	return b.s;
}

/* What remains of state text S once the comment and epoch lines are gone. */
static char *state_body(const char *s)
{
	struct sbuf b = { 0 };

	sb_printf(&b, "%s", "");
	for (const char *p = s; *p;) {
		size_t l = strcspn(p, "\n");

		if (p[0] != '#' && strncmp(p, "epoch ", 6) != 0)
			sb_printf(&b, "%.*s\n", (int)l, p);
		p += l + (p[l] == '\n');
	}
	return b.s;
}

void sv_topology_init(struct sv_topology *t, const struct zconf *conf)
{
	char path[4096];
	char *old;

	memset(t, 0, sizeof(*t));
	if (!conf->cluster_enabled)
		return;
	t->enabled = true;
	t->body = build_body(conf);
	t->dir = strdup(conf->defaults[ZCONF_K_DIR] ? conf->defaults[ZCONF_K_DIR] : ".");
	snprintf(path, sizeof(path), "%s/supervisor-topology", t->dir);
	t->state_path = strdup(path);
	if (!t->state_path || !t->dir)
		abort();
	old = state_read(t->state_path);
	t->epoch = 1;
	if (old) {
		long long e = sv_topology_doc_epoch(old);
		char *ob = state_body(old);

		if (e >= 1 && strcmp(ob, t->body) == 0) {
			t->epoch = e;
		} else if (e >= 1) {
			t->epoch = e + 1;
			sv_log(LOG_NOTICE, "cluster topology changed since the last run: epoch %lld",
			       t->epoch);
		}
		free(ob);
	}
	if (!old || t->epoch != sv_topology_doc_epoch(old))
		state_write(t);
	free(old);
	sv_log(LOG_NOTICE, "cluster mode: topology epoch %lld (state in %s)", t->epoch, t->state_path);
}

void sv_topology_fini(struct sv_topology *t)
{
	free(t->body);
	free(t->state_path);
	free(t->dir);
	memset(t, 0, sizeof(*t));
}

bool sv_topology_update(struct sv_topology *t, const struct zconf *conf)
{
	char *body;

	if (!t->enabled)
		return false;
	body = build_body(conf);
	if (strcmp(body, t->body) == 0) {
		free(body);
		return false;
	}
	free(t->body);
	t->body = body;
	t->epoch++;
	state_write(t);
	sv_log(LOG_NOTICE, "cluster topology changed: epoch %lld", t->epoch);
	return true;
}

bool sv_topology_adopt(struct sv_topology *t, const struct zconf *conf, long long epoch)
{
	if (!t->enabled || epoch < 1)
		return false;
	char *body = build_body(conf);
	if (strcmp(body, t->body) == 0 && epoch == t->epoch) {
		free(body);
		return false;
	}
	free(t->body);
	t->body = body;
	t->epoch = epoch;
	state_write(t);
	sv_log(LOG_NOTICE, "cluster topology from etcd: epoch %lld", t->epoch);
	return true;
}

void sv_topology_pass(struct sv_topology *t, long long seen)
{
	if (!t->enabled || seen < t->epoch)
		return;
	t->epoch = seen + 1;
	state_write(t);
	sv_log(LOG_NOTICE, "an instance has topology epoch %lld: pushing epoch %lld", seen, t->epoch);
}

char *sv_topology_document(const struct sv_topology *t, const struct zconf *conf,
			   const struct zconf_node *node)
{
	struct sbuf b = { 0 };
	char id[41];

	zconf_node_id(conf, node, id);
	sb_printf(&b, "epoch %lld\n%smyself %s\n", t->epoch, t->body, id);
	return b.s;
}

long long sv_topology_doc_epoch(const char *doc)
{
	for (const char *p = doc; p && *p;) {
		size_t l = strcspn(p, "\n");

		while (*p == ' ' || *p == '\t')
			p++, l--;
		if (strncmp(p, "epoch ", 6) == 0)
			return strtoll(p + 6, NULL, 10);
		p += l + (p[l] == '\n');
	}
	return -1;
}

/* DOC's lines without comments and blank lines, runs of blanks made one
 * space, sorted: a canonical form to compare. */
static char **canon_lines(const char *doc, size_t *count)
{
	char **lines = NULL;
	size_t n = 0, cap = 0;

	for (const char *p = doc; *p;) {
		size_t l = strcspn(p, "\n"), o = 0;
		char *line = malloc(l + 1);
		bool blank = true;

		if (!line)
			abort();
		for (size_t k = 0; k < l && p[k] != '#'; k++) {
			bool sp = isspace((unsigned char)p[k]);

			if (sp && (blank || o == 0))
				continue;
			line[o++] = sp ? ' ' : p[k];
			blank = sp;
		}
		while (o && line[o - 1] == ' ')
			o--;
		line[o] = '\0';
		p += l + (p[l] == '\n');
		if (!o) {
			free(line);
			continue;
		}
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			lines = realloc(lines, cap * sizeof(*lines));
			if (!lines)
				abort();
		}
		lines[n++] = line;
	}
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(lines[b - 1], lines[b]) > 0; b--) {
			char *x = lines[b];

			lines[b] = lines[b - 1];
			lines[b - 1] = x;
		}
	*count = n;
	return lines;
}

bool sv_topology_doc_equal(const char *a, const char *b)
{
	size_t na, nb;
	char **la = canon_lines(a, &na), **lb = canon_lines(b, &nb);
	bool eq = na == nb;

	for (size_t k = 0; k < na && eq; k++)
		eq = strcmp(la[k], lb[k]) == 0;
	for (size_t k = 0; k < na; k++)
		free(la[k]);
	for (size_t k = 0; k < nb; k++)
		free(lb[k]);
	free(la);
	free(lb);
	return eq;
}

const char *sv_topology_refuse(const struct zconf *oc, const struct zconf *nc, char *buf, size_t size)
{
	if (oc->cluster_enabled != nc->cluster_enabled) {
		snprintf(buf, size, "cluster mode cannot be switched %s by a reload: restart the supervisor",
			 nc->cluster_enabled ? "on" : "off");
		return buf;
	}
	if (!nc->cluster_enabled)
		return NULL;
	for (int s = 0; s < ZCONF_SLOTS; s++) {
		const char *a = oc->nodes[oc->slot_owner[s]].name, *b = nc->nodes[nc->slot_owner[s]].name;
		int e = s;

		if (strcmp(a, b) == 0)
			continue;
		while (e + 1 < ZCONF_SLOTS && strcmp(oc->nodes[oc->slot_owner[e + 1]].name, a) == 0 &&
		       strcmp(nc->nodes[nc->slot_owner[e + 1]].name, b) == 0)
			e++;
		if (e > s)
			snprintf(
				buf, size,
				"the slot layout changes (slots %d-%d from %s to %s): slot moves come later; "
				"nothing changed",
				s, e, a, b);
		else
			snprintf(buf, size,
				 "the slot layout changes (slot %d from %s to %s): slot moves come later; "
				 "nothing changed",
				 s, a, b);
		return buf;
	}
	return NULL;
}
