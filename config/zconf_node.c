/* zconf_node — reading one loaded node: its effective zarisd settings (the
 * cluster's defaults overridden by the node's own), as key/value text or as
 * the argv that starts zarisd for it. API in zconf.h.
 */
#include <errno.h>
#include "config/zconf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const struct zconf_node *zconf_find_node(const struct zconf *conf, const char *name)
{
	for (size_t i = 0; i < conf->n_nodes; i++)
		if (conf->nodes[i].name && strcmp(conf->nodes[i].name, name) == 0)
			return &conf->nodes[i];
	return NULL;
}

const char *zconf_node_value(const struct zconf *conf, const struct zconf_node *node, enum zconf_key key)
{
	return node->set[key] ? node->set[key] : conf->defaults[key];
}

int zconf_node_value_line(const struct zconf *conf, const struct zconf_node *node, enum zconf_key key)
{
	if (node->set[key])
		return node->set_line[key];
	return conf->defaults[key] ? conf->default_line[key] : 0;
}

int zconf_node_native_port(const struct zconf *conf, const struct zconf_node *node)
{
	const char *v = zconf_node_value(conf, node, ZCONF_K_NATIVE_PORT);

	/* the loader normalised it to a decimal in 0..65535 */
	return v ? atoi(v) : 0;
}

int zconf_node_dir(const struct zconf *conf, const struct zconf_node *node, char *buf, size_t size)
{
	int n;

	if (node->set[ZCONF_K_DIR])
		n = snprintf(buf, size, "%s", node->set[ZCONF_K_DIR]);
	else
		n = snprintf(buf, size, "%s/%s",
			     conf->defaults[ZCONF_K_DIR] ? conf->defaults[ZCONF_K_DIR] : ".", node->name);
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

int zconf_node_foreach_setting(const struct zconf *conf, const struct zconf_node *node, zconf_setting_fn fn,
			       void *ctx)
{
	char port[16];
	int rc;

	char dir[4096];

	snprintf(port, sizeof(port), "%d", node->port);
	rc = fn("port", port, ctx);
	for (int k = 0; rc == 0 && k < ZCONF_K__COUNT; k++) {
		const char *v = zconf_node_value(conf, node, (enum zconf_key)k);

		if (k == ZCONF_K_BIND && !v)
			v = node->address;
		if (k == ZCONF_K_DIR) {
			if (zconf_node_dir(conf, node, dir, sizeof(dir)) < 0)
				return -ENAMETOOLONG;
			v = dir;
		}
		if (v)
			rc = fn(zconf_key_name((enum zconf_key)k), v, ctx);
	}
	if (rc == 0 && node->role == ZCONF_ROLE_REPLICA) {
		char target[128];
		const char *auth = zconf_masterauth(conf, node);

		if (zconf_replicaof(conf, node, target, sizeof(target)))
			rc = fn("replicaof", target, ctx);
		if (rc == 0 && auth)
			rc = fn("masterauth", auth, ctx);
	}
	if (rc == 0 && conf->cluster_enabled)
		rc = fn("cluster-enabled", "yes", ctx);
	if (rc == 0 && conf->coord.enabled)
		rc = fn("write-lease", "yes", ctx);
	return rc;
}

const struct zconf_node *zconf_replicaof(const struct zconf *conf, const struct zconf_node *node, char *buf,
					 size_t size)
{
	const struct zconf_node *p = node->role == ZCONF_ROLE_REPLICA && node->replica_of
					     ? zconf_find_node(conf, node->replica_of)
					     : NULL;

	if (!p) {
		if (size)
			buf[0] = '\0';
		return NULL;
	}
	snprintf(buf, size, "%s %d", p->address, p->port);
	return p;
}

const char *zconf_masterauth(const struct zconf *conf, const struct zconf_node *node)
{
	char target[128];
	const struct zconf_node *p = zconf_replicaof(conf, node, target, sizeof(target));
	const char *pw = p ? zconf_node_value(conf, p, ZCONF_K_REQUIREPASS) : NULL;

	return pw && *pw ? pw : NULL;
}

int zconf_replica_depth(const struct zconf *conf, const struct zconf_node *node)
{
	int depth = 0;

	/* bounded by the node count: a loaded file has no loops, and a
	 * half-checked one must not hang */
	while (node && node->role == ZCONF_ROLE_REPLICA && node->replica_of &&
	       (size_t)depth < conf->n_nodes) {
		node = zconf_find_node(conf, node->replica_of);
		depth++;
	}
	return depth;
}

struct argv_build {
	char **argv;
	size_t n, cap;
};

static int argv_push(struct argv_build *b, const char *s)
{
	if (b->n + 2 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 16;
		char **a = realloc(b->argv, cap * sizeof(*a));

		if (!a)
			return -1;
		b->argv = a;
		b->cap = cap;
	}
	b->argv[b->n] = strdup(s);
	if (!b->argv[b->n])
		return -1;
	b->argv[++b->n] = NULL;
	return 0;
}

static int argv_add_setting(const char *key, const char *value, void *ctx)
{
	char flag[64];

	snprintf(flag, sizeof(flag), "--%s", key);
	return argv_push(ctx, flag) < 0 || argv_push(ctx, value) < 0 ? -1 : 0;
}

char **zconf_node_argv(const struct zconf *conf, const struct zconf_node *node, const char *exe)
{
	struct argv_build b = { 0 };

	if (argv_push(&b, exe) < 0 || zconf_node_foreach_setting(conf, node, argv_add_setting, &b) != 0) {
		zconf_argv_free(b.argv);
		return NULL;
	}
	return b.argv;
}

void zconf_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}
