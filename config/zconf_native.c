/* zconf_native — the cluster file's checks of the native protocol's two
 * settings (zarisd/proto/PROTOCOL.md), over every node, local or not:
 * a native-port is one more port on the node's address, so it must differ
 * from the node's own port and from every port and native-port of the
 * nodes that share the address; native-rf1 keeps one copy, so it is
 * refused on a replica, on a primary that has replicas and with
 * appendonly (zarisd would refuse to start so; here the operator learns it
 * at check-config, with the line). Called once per load, after the
 * replica-of checks (every target exists); API through zconf_internal.h.
 */
#include "config/zconf_internal.h"

#include <stdio.h>
#include <string.h>

/* The line to name for NODE's value of KEY: the setting in force (the
 * node's own, else the cluster's), else the node's group. */
static int value_line(const struct zconf *conf, const struct zconf_node *n, enum zconf_key key)
{
	int line = zconf_node_value_line(conf, n, key);

	return line > 0 ? line : n->line;
}

/* " (the cluster's)" when NODE inherits KEY from the cluster group, else "". */
static const char *inherited(const struct zconf_node *n, enum zconf_key key)
{
	return n->set[key] ? "" : " (the cluster's)";
}

static int check_native_port(const struct zconf *conf, size_t i, struct zconf_error *err)
{
	const struct zconf_node *n = &conf->nodes[i];
	int np = zconf_node_native_port(conf, n);
	int line = value_line(conf, n, ZCONF_K_NATIVE_PORT);

	if (np && np == n->port)
		return zconf_fail(err, conf->path, line,
				  "node '%s' (line %d): native-port%s %d is also its port: the native "
				  "protocol needs a port of its own",
				  n->name, n->line, inherited(n, ZCONF_K_NATIVE_PORT), np);
	for (size_t j = 0; j < i; j++) {
		const struct zconf_node *o = &conf->nodes[j];
		int onp = zconf_node_native_port(conf, o);

		if (strcmp(o->address, n->address) != 0)
			continue;
		if (np && np == o->port)
			return zconf_fail(err, conf->path, line,
					  "node '%s' (line %d): native-port%s %d on %s is node '%s''s port "
					  "(line %d)",
					  n->name, n->line, inherited(n, ZCONF_K_NATIVE_PORT), np, n->address,
					  o->name, o->line);
		if (np && np == onp)
			return zconf_fail(err, conf->path, line,
					  "node '%s' (line %d): native-port%s %d on %s is also node '%s''s "
					  "native-port (line %d)",
					  n->name, n->line, inherited(n, ZCONF_K_NATIVE_PORT), np, n->address,
					  o->name, value_line(conf, o, ZCONF_K_NATIVE_PORT));
		if (onp && onp == n->port)
			return zconf_fail(err, conf->path, n->line,
					  "node '%s': port %d on %s is node '%s''s native-port (line %d)",
					  n->name, n->port, n->address, o->name,
					  value_line(conf, o, ZCONF_K_NATIVE_PORT));
	}
	return 0;
}

static int check_rf1(const struct zconf *conf, const struct zconf_node *n, struct zconf_error *err)
{
	const char *rf1 = zconf_node_value(conf, n, ZCONF_K_NATIVE_RF1);
	const char *aof = zconf_node_value(conf, n, ZCONF_K_APPENDONLY);
	int line = value_line(conf, n, ZCONF_K_NATIVE_RF1);

	if (!rf1 || strcmp(rf1, "yes") != 0)
		return 0;
	if (n->role == ZCONF_ROLE_REPLICA)
		return zconf_fail(err, conf->path, line,
				  "node '%s' (line %d): native-rf1%s keeps one copy, but the node is a "
				  "replica of '%s'",
				  n->name, n->line, inherited(n, ZCONF_K_NATIVE_RF1), n->replica_of);
	for (size_t j = 0; j < conf->n_nodes; j++) {
		const struct zconf_node *r = &conf->nodes[j];

		if (r->replica_of && strcmp(r->replica_of, n->name) == 0)
			return zconf_fail(err, conf->path, line,
					  "node '%s' (line %d): native-rf1%s keeps one copy, but node '%s' "
					  "(line %d) is its replica",
					  n->name, n->line, inherited(n, ZCONF_K_NATIVE_RF1), r->name,
					  r->line);
	}
	if (aof && strcmp(aof, "yes") == 0)
		return zconf_fail(err, conf->path, line,
				  "node '%s' (line %d): native-rf1%s keeps no append-only log, but "
				  "appendonly is yes (line %d)",
				  n->name, n->line, inherited(n, ZCONF_K_NATIVE_RF1),
				  value_line(conf, n, ZCONF_K_APPENDONLY));
	return 0;
}

int zconf_check_native(const struct zconf *conf, struct zconf_error *err)
{
	for (size_t i = 0; i < conf->n_nodes; i++) {
		int rc = check_native_port(conf, i, err);

		if (rc == 0)
			rc = check_rf1(conf, &conf->nodes[i], err);
		if (rc < 0)
			return rc;
	}
	return 0;
}
