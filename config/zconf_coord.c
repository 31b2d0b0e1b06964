/* zconf_coord — the `coordination` section: failover through etcd. It
 * names the etcd cluster (client URLs, or "run": the supervisors run one
 * member per machine), the leader lease's TTL, how stale a replica may be
 * and still be promoted, the key prefix, and the machines; every node then
 * belongs to exactly one machine. API in zconf.h and zconf_internal.h.
 */
#include "config/zconf_internal.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LEASE_TTL_MIN_MS 2000
#define LEASE_TTL_MAX_MS 60000
#define VALIDITY_MIN_MS 100
#define VALIDITY_MAX_MS 3600000

static int line_of(const config_setting_t *s)
{
	return (int)config_setting_source_line(s);
}

static bool is_int(const config_setting_t *s)
{
	return s->type == CONFIG_TYPE_INT || s->type == CONFIG_TYPE_INT64;
}

static int want(struct zconf *conf, const config_setting_t *s, const char *what, const char *expect,
		struct zconf_error *err)
{
	return zconf_fail(err, conf->path, line_of(s), "coordination: '%s' must be %s", what, expect);
}

/* "http://IP:PORT", IPv6 in brackets; the length of the item at S (up to
 * ',' or the end) in *LEN. */
static bool valid_url(const char *s, size_t len)
{
	char host[64];
	const char *p = s + 7, *end = s + len, *colon;
	long port = 0;

	if (len < 8 || strncmp(s, "http://", 7) != 0)
		return false;
	if (*p == '[') {
		const char *close = memchr(p, ']', (size_t)(end - p));

		if (!close || close[1] != ':' || (size_t)(close - p - 1) >= sizeof(host))
			return false;
		snprintf(host, sizeof(host), "%.*s", (int)(close - p - 1), p + 1);
		if (!strchr(host, ':'))
			return false;
		colon = close + 1;
	} else {
		colon = memchr(p, ':', (size_t)(end - p));
		if (!colon || (size_t)(colon - p) >= sizeof(host))
			return false;
		snprintf(host, sizeof(host), "%.*s", (int)(colon - p), p);
		if (strchr(host, ':'))
			return false;
	}
	if (!zconf_is_ip(host) || colon + 1 >= end)
		return false;
	for (const char *d = colon + 1; d < end; d++) {
		if (!isdigit((unsigned char)*d) || (port = port * 10 + (*d - '0')) > 65535)
			return false;
	}
	return port >= 1;
}

static int parse_etcd(struct zconf *conf, const config_setting_t *s, struct zconf_error *err)
{
	const char *v;

	if (s->type != CONFIG_TYPE_STRING)
		return want(
			conf, s, "etcd",
			"\"run\" or a string of comma-separated client URLs (\"http://10.0.0.1:2379,...\")",
			err);
	v = config_setting_get_string(s);
	free(conf->coord.endpoints);
	conf->coord.endpoints = NULL;
	conf->coord.run_etcd = strcmp(v, "run") == 0;
	if (conf->coord.run_etcd)
		return 0;
	for (const char *p = v;;) {
		size_t len = strcspn(p, ",");

		if (!valid_url(p, len))
			return zconf_fail(err, conf->path, line_of(s),
					  "coordination: etcd: \"%.*s\" is not a client URL http://IP:PORT "
					  "(etcd = \"run\" or a comma-separated list of them)",
					  (int)len, p);
		p += len;
		if (!*p)
			break;
		p++;
	}
	conf->coord.endpoints = zconf_strdup(v);
	return 0;
}

static int parse_duration(struct zconf *conf, const config_setting_t *s, int min, int max, int *out,
			  struct zconf_error *err)
{
	const char *name = config_setting_name(s);
	long long v;

	if (is_int(s))
		v = config_setting_get_int64(s);
	else if (s->type != CONFIG_TYPE_STRING)
		return want(conf, s, name, "a duration (\"500ms\", \"5s\")", err);
	else if (zconf_parse_duration_ms(config_setting_get_string(s), &v) < 0)
		return zconf_fail(err, conf->path, line_of(s),
				  "coordination: '%s': cannot read \"%s\" as a duration (e.g. 500ms, 5s, 1m)",
				  name, config_setting_get_string(s));
	if (v < min || v > max)
		return zconf_fail(err, conf->path, line_of(s),
				  "coordination: '%s' must be between %d and %d ms, not %lld", name, min, max,
				  v);
	*out = (int)v;
	return 0;
}

static int parse_prefix(struct zconf *conf, const config_setting_t *s, struct zconf_error *err)
{
	const char *v;

	if (s->type != CONFIG_TYPE_STRING)
		return want(conf, s, "prefix", "a string (\"/zaris\")", err);
	v = config_setting_get_string(s);
	if (v[0] != '/' || strlen(v) > 200)
		return zconf_fail(err, conf->path, line_of(s),
				  "coordination: prefix \"%s\" must start with '/' (e.g. \"/zaris\")", v);
	for (const char *p = v; *p; p++)
		if (isspace((unsigned char)*p) || iscntrl((unsigned char)*p))
			return zconf_fail(err, conf->path, line_of(s),
					  "coordination: prefix \"%s\" must not contain spaces", v);
	free(conf->coord.prefix);
	conf->coord.prefix = zconf_strdup(v);
	return 0;
}

static int parse_port(struct zconf *conf, const config_setting_t *s, const char *label, int *out,
		      struct zconf_error *err)
{
	long long p = is_int(s) ? config_setting_get_int64(s) : -1;

	if (!is_int(s) || p < 1 || p > 65535)
		return zconf_fail(err, conf->path, line_of(s), "%s: '%s' must be a port number 1-65535",
				  label, config_setting_name(s));
	*out = (int)p;
	return 0;
}

static int parse_machine(struct zconf *conf, struct zconf_machine *m, const config_setting_t *g, unsigned idx,
			 struct zconf_error *err)
{
	const config_setting_t *nm = config_setting_get_member(g, "name");
	char label[96];
	int rc = 0;

	m->line = line_of(g);
	m->etcd_client_port = ZCONF_ETCD_CLIENT_PORT;
	m->etcd_peer_port = ZCONF_ETCD_PEER_PORT;
	if (g->type != CONFIG_TYPE_GROUP)
		return zconf_fail(err, conf->path, m->line,
				  "coordination: machines: entry %u must be a group { name = ...; }",
				  idx + 1);
	if (nm && nm->type == CONFIG_TYPE_STRING)
		snprintf(label, sizeof(label), "machine '%.64s'", config_setting_get_string(nm));
	else
		snprintf(label, sizeof(label), "machine %u", idx + 1);
	for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(s);

		if (strcmp(name, "name") == 0 || strcmp(name, "address") == 0) {
			char **dst = name[0] == 'n' ? &m->name : &m->address;

			if (s->type != CONFIG_TYPE_STRING)
				return zconf_fail(err, conf->path, line_of(s), "%s: '%s' must be a string",
						  label, name);
			free(*dst);
			*dst = zconf_strdup(config_setting_get_string(s));
		} else if (strcmp(name, "etcd-client-port") == 0) {
			rc = parse_port(conf, s, label, &m->etcd_client_port, err);
		} else if (strcmp(name, "etcd-peer-port") == 0) {
			rc = parse_port(conf, s, label, &m->etcd_peer_port, err);
		} else {
			rc = zconf_fail(
				err, conf->path, line_of(s),
				"%s: unknown key '%s' (a machine has name, address, etcd-client-port, "
				"etcd-peer-port)",
				label, name);
		}
	}
	if (rc < 0)
		return rc;
	if (!m->name)
		return zconf_fail(err, conf->path, m->line, "coordination: machine %u has no 'name'",
				  idx + 1);
	if (!zconf_valid_name(m->name))
		return zconf_fail(err, conf->path, m->line,
				  "machine name \"%s\" must be 1-64 letters, digits, '-', '_' or '.'",
				  m->name);
	if (!m->address)
		return zconf_fail(err, conf->path, m->line, "machine '%s' has no 'address'", m->name);
	if (!zconf_is_ip(m->address))
		return zconf_fail(err, conf->path, m->line,
				  "machine '%s': address \"%s\" is not a numeric IP address", m->name,
				  m->address);
	return 0;
}

static int parse_machines(struct zconf *conf, const config_setting_t *s, struct zconf_error *err)
{
	struct zconf_coord *c = &conf->coord;

	if (s->type != CONFIG_TYPE_LIST)
		return want(conf, s, "machines", "a list ( { name = ...; address = ...; }, ... )", err);
	c->n_machines = (size_t)config_setting_length(s);
	c->machines = calloc(c->n_machines ? c->n_machines : 1, sizeof(*c->machines));
	if (!c->machines)
		abort();
	for (size_t i = 0; i < c->n_machines; i++) {
		int rc = parse_machine(conf, &c->machines[i], config_setting_get_elem(s, (unsigned)i),
				       (unsigned)i, err);

		if (rc < 0)
			return rc;
	}
	for (size_t i = 0; i < c->n_machines; i++) {
		const struct zconf_machine *m = &c->machines[i];

		if (m->etcd_client_port == m->etcd_peer_port)
			return zconf_fail(err, conf->path, m->line,
					  "machine '%s': etcd-client-port and etcd-peer-port are both %d",
					  m->name, m->etcd_client_port);
		for (size_t j = 0; j < i; j++) {
			const struct zconf_machine *o = &c->machines[j];
			int mine[2] = { m->etcd_client_port, m->etcd_peer_port };
			int theirs[2] = { o->etcd_client_port, o->etcd_peer_port };

			if (strcmp(m->name, o->name) == 0)
				return zconf_fail(err, conf->path, m->line,
						  "duplicate machine name '%s' (first at line %d)", m->name,
						  o->line);
			if (strcmp(m->address, o->address) != 0)
				continue;
			for (int a = 0; a < 2; a++)
				for (int b = 0; b < 2; b++)
					if (mine[a] == theirs[b])
						return zconf_fail(
							err, conf->path, m->line,
							"machine '%s': duplicate etcd port: %s:%d is "
							"already machine '%s''s (line %d)",
							m->name, m->address, mine[a], o->name, o->line);
		}
	}
	return 0;
}

int zconf_parse_coord(struct zconf *conf, const config_setting_t *g, struct zconf_error *err)
{
	struct zconf_coord *c = &conf->coord;
	const config_setting_t *etcd = NULL;
	int rc = 0;

	if (g->type != CONFIG_TYPE_GROUP)
		return zconf_fail(err, conf->path, line_of(g), "'coordination' must be a group { }");
	c->enabled = true;
	c->line = line_of(g);
	c->lease_ttl_ms = 5000;
	c->replica_validity_ms = 10000;
	for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(s);

		if (strcmp(name, "etcd") == 0)
			rc = parse_etcd(conf, s, err), etcd = s;
		else if (strcmp(name, "lease-ttl") == 0)
			rc = parse_duration(conf, s, LEASE_TTL_MIN_MS, LEASE_TTL_MAX_MS, &c->lease_ttl_ms,
					    err);
		else if (strcmp(name, "replica-validity") == 0)
			rc = parse_duration(conf, s, VALIDITY_MIN_MS, VALIDITY_MAX_MS,
					    &c->replica_validity_ms, err);
		else if (strcmp(name, "prefix") == 0)
			rc = parse_prefix(conf, s, err);
		else if (strcmp(name, "etcd-dir") == 0) {
			if (s->type != CONFIG_TYPE_STRING || !*config_setting_get_string(s))
				return want(conf, s, "etcd-dir", "a non-empty string (a directory)", err);
			free(c->etcd_dir);
			c->etcd_dir = zconf_strdup(config_setting_get_string(s));
		} else if (strcmp(name, "machines") == 0)
			rc = parse_machines(conf, s, err);
		else
			rc = zconf_fail(err, conf->path, line_of(s),
					"unknown key '%s' in coordination (see zaris.conf for the keys)",
					name);
	}
	if (rc < 0)
		return rc;
	if (!c->prefix)
		c->prefix = zconf_strdup(ZCONF_COORD_DEFAULT_PREFIX);
	if (!etcd)
		return zconf_fail(err, conf->path, c->line,
				  "coordination: 'etcd' is missing (\"run\", or the client URLs of an etcd "
				  "cluster)");
	if (c->run_etcd && c->n_machines < 3)
		return zconf_fail(err, conf->path, line_of(etcd),
				  "etcd run by the supervisors needs at least 3 machines to fail over; %zu "
				  "declared",
				  c->n_machines);
	if (c->run_etcd) {
		size_t len = 0, size = c->n_machines * 80;

		c->endpoints = malloc(size);
		if (!c->endpoints)
			abort();
		c->endpoints[0] = '\0';
		for (size_t i = 0; i < c->n_machines; i++) {
			const struct zconf_machine *m = &c->machines[i];
			bool v6 = strchr(m->address, ':') != NULL;

			len += (size_t)snprintf(c->endpoints + len, size - len, "%shttp://%s%s%s:%d",
						i ? "," : "", v6 ? "[" : "", m->address, v6 ? "]" : "",
						m->etcd_client_port);
		}
	}
	return 0;
}

const struct zconf_machine *zconf_find_machine(const struct zconf *conf, const char *name)
{
	for (size_t i = 0; i < conf->coord.n_machines; i++)
		if (strcmp(conf->coord.machines[i].name, name) == 0)
			return &conf->coord.machines[i];
	return NULL;
}

int zconf_check_coord(struct zconf *conf, struct zconf_error *err)
{
	const struct zconf_coord *c = &conf->coord;

	for (size_t i = 0; i < conf->n_nodes; i++)
		conf->nodes[i].machine = -1;
	if (!c->enabled) {
		for (size_t i = 0; i < conf->n_nodes; i++)
			if (conf->nodes[i].machine_name)
				return zconf_fail(err, conf->path, conf->nodes[i].machine_line,
						  "node '%s': 'machine' needs the coordination section",
						  conf->nodes[i].name);
		return 0;
	}
	if (!conf->cluster_enabled)
		return zconf_fail(err, conf->path, c->line,
				  "coordination needs cluster mode (cluster.enabled = true)");
	for (size_t i = 0; i < conf->n_nodes; i++) {
		struct zconf_node *n = &conf->nodes[i];
		int found = -1;

		for (size_t k = 0; k < c->n_machines; k++) {
			const struct zconf_machine *m = &c->machines[k];

			if ((m->etcd_client_port == n->port || m->etcd_peer_port == n->port) &&
			    strcmp(m->address, n->address) == 0 && c->run_etcd)
				return zconf_fail(
					err, conf->path, n->line,
					"node '%s': port %d on %s is machine '%s''s etcd port (line %d)",
					n->name, n->port, n->address, m->name, m->line);
			int np = zconf_node_native_port(conf, n);
			if (np && (m->etcd_client_port == np || m->etcd_peer_port == np) &&
			    strcmp(m->address, n->address) == 0 && c->run_etcd)
				return zconf_fail(
					err, conf->path, n->line,
					"node '%s': native-port %d on %s is machine '%s''s etcd port (line %d)",
					n->name, np, n->address, m->name, m->line);
		}
		if (n->machine_name) {
			const struct zconf_machine *m = zconf_find_machine(conf, n->machine_name);

			if (!m)
				return zconf_fail(
					err, conf->path, n->machine_line,
					"node '%s': machine '%s' is not declared in coordination.machines",
					n->name, n->machine_name);
			n->machine = (int)(m - c->machines);
			continue;
		}
		if (!c->n_machines)
			continue;
		for (size_t k = 0; k < c->n_machines; k++) {
			if (strcmp(c->machines[k].address, n->address) != 0)
				continue;
			if (found >= 0)
				return zconf_fail(
					err, conf->path, n->line,
					"node '%s': machines '%s' and '%s' both have address %s: say "
					"which with machine = \"...\"",
					n->name, c->machines[found].name, c->machines[k].name, n->address);
			found = (int)k;
		}
		if (found < 0)
			return zconf_fail(err, conf->path, n->line,
					  "node '%s': no machine has address %s: say which with machine = "
					  "\"...\"",
					  n->name, n->address);
		n->machine = found;
	}
	return 0;
}

int zconf_select_machine(struct zconf *conf, const char *name, struct zconf_error *err)
{
	struct zconf_coord *c = &conf->coord;
	const struct zconf_machine *m = zconf_find_machine(conf, name);

	if (!m)
		return zconf_fail(
			err, conf->path, 0,
			c->n_machines ? "--machine %s: no machine of that name in the file"
				      : "--machine %s: the file declares no machines (coordination.machines)",
			name);
	c->local_machine = (int)(m - c->machines);
	c->machines[c->local_machine].is_local = true;
	conf->n_local = 0;
	for (size_t i = 0; i < conf->n_nodes; i++) {
		conf->nodes[i].is_local = conf->nodes[i].machine == c->local_machine;
		conf->n_local += conf->nodes[i].is_local;
	}
	return 0;
}

int zconf_local_machine(struct zconf *conf, bool explicit_nodes, struct zconf_error *err)
{
	struct zconf_coord *c = &conf->coord;
	const struct zconf_node *first = NULL;

	if (c->local_machine >= 0 || !c->n_machines)
		return 0;
	for (size_t i = 0; i < conf->n_nodes; i++) {
		const struct zconf_node *n = &conf->nodes[i];

		if (!n->is_local)
			continue;
		if (!first) {
			first = n;
			continue;
		}
		if (n->machine == first->machine)
			continue;
		if (!explicit_nodes)
			return 0; /* several machines' addresses are here: unknown */
		return zconf_fail(
			err, conf->path, 0,
			"--node: node '%s' is on machine '%s' but node '%s' on machine '%s': the local "
			"nodes must share one machine (or use --machine)",
			n->name, c->machines[n->machine].name, first->name, c->machines[first->machine].name);
	}
	if (first) {
		c->local_machine = first->machine;
		c->machines[first->machine].is_local = true;
	}
	return 0;
}

int zconf_etcd_member_dir(const struct zconf *conf, const struct zconf_machine *m, char *buf, size_t size)
{
	const char *dir = conf->defaults[ZCONF_K_DIR] ? conf->defaults[ZCONF_K_DIR] : ".";
	int n = conf->coord.etcd_dir ? snprintf(buf, size, "%s/%s", conf->coord.etcd_dir, m->name)
				     : snprintf(buf, size, "%s/etcd-%s", dir, m->name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : n;
}

void zconf_etcd_initial_cluster(const struct zconf *conf, char *buf, size_t size)
{
	size_t len = 0;

	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < conf->coord.n_machines && len < size; i++) {
		const struct zconf_machine *m = &conf->coord.machines[i];
		bool v6 = strchr(m->address, ':') != NULL;

		len += (size_t)snprintf(buf + len, size - len, "%s%s=http://%s%s%s:%d", i ? "," : "", m->name,
					v6 ? "[" : "", m->address, v6 ? "]" : "", m->etcd_peer_port);
	}
}

void zconf_coord_free(struct zconf_coord *c)
{
	for (size_t i = 0; i < c->n_machines; i++) {
		free(c->machines[i].name);
		free(c->machines[i].address);
	}
	free(c->machines);
	free(c->endpoints);
	free(c->prefix);
	free(c->etcd_dir);
}
