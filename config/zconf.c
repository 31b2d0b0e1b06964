/* zconf — loading a cluster file: libconfig's parse, type checks and
 * normalisation of every value against its schema entry (config/schema.h:
 * type, range, choices, syntax), then the cluster-wide checks. Which
 * nodes are local and the checks on them live in zconf_local.c; reading a
 * loaded node in zconf_node.c. API in zconf.h.
 *
 * libconfig 1.5 reports only "syntax error" and a line; we add the text of
 * that line so the operator sees what is wrong without opening the file.
 */
#include "config/zconf.h"
#include "config/zconf_internal.h"
#include "config/schema.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <libconfig.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum sv_field {
	SV_DUR,
	SV_INT,
	SV_SIZE
};
static const struct {
	const char *name;
	enum sv_field kind;
	size_t offset;
	long long min, max;
} sv_keys[] = {
	{ "health-interval", SV_DUR, offsetof(struct zconf_supervisor, health_interval_ms), 10, 3600000 },
	{ "health-timeout", SV_DUR, offsetof(struct zconf_supervisor, health_timeout_ms), 10, 3600000 },
	{ "health-failures", SV_INT, offsetof(struct zconf_supervisor, health_failures), 1, 1000 },
	{ "start-timeout", SV_DUR, offsetof(struct zconf_supervisor, start_timeout_ms), 10, 3600000 },
	{ "stop-timeout", SV_DUR, offsetof(struct zconf_supervisor, stop_timeout_ms), 10, 3600000 },
	{ "backoff-min", SV_DUR, offsetof(struct zconf_supervisor, backoff_min_ms), 1, 3600000 },
	{ "backoff-max", SV_DUR, offsetof(struct zconf_supervisor, backoff_max_ms), 1, 3600000 },
	{ "crash-loop-restarts", SV_INT, offsetof(struct zconf_supervisor, crash_loop_restarts), 1, 1000 },
	{ "stable-after", SV_DUR, offsetof(struct zconf_supervisor, stable_ms), 10, 86400000 },
	{ "catch-up-lag", SV_SIZE, offsetof(struct zconf_supervisor, catch_up_lag), 0, 1LL << 30 },
	{ "catch-up-timeout", SV_DUR, offsetof(struct zconf_supervisor, catch_up_timeout_ms), 10, 86400000 },
};

const char *zconf_key_name(enum zconf_key key)
{
	return schema_file_entry((int)key)->name;
}

bool zconf_key_is_live(enum zconf_key key)
{
	return schema_is_live(schema_file_entry((int)key));
}

int zconf_fail(struct zconf_error *err, const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	snprintf(err->file, sizeof(err->file), "%s", file ? file : "");
	err->line = line;
	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void zconf_error_format(const struct zconf_error *err, char *buf, size_t size)
{
	if (err->line > 0)
		snprintf(buf, size, "%s:%d: %s", err->file, err->line, err->message);
	else
		snprintf(buf, size, "%s: %s", err->file, err->message);
}

static const char *type_name(int type)
{
	switch (type) {
	case CONFIG_TYPE_GROUP:
		return "a group { }";
	case CONFIG_TYPE_INT:
	case CONFIG_TYPE_INT64:
		return "a number";
	case CONFIG_TYPE_FLOAT:
		return "a fractional number";
	case CONFIG_TYPE_STRING:
		return "a string";
	case CONFIG_TYPE_BOOL:
		return "a boolean";
	case CONFIG_TYPE_ARRAY:
		return "an array [ ]";
	case CONFIG_TYPE_LIST:
		return "a list ( )";
	default:
		return "of unknown type";
	}
}

/* How the cluster file writes a value of KD, by its schema type. */
enum zconf_vtype {
	ZCONF_VT_STRING,
	ZCONF_VT_INT,
	ZCONF_VT_SIZE,
	ZCONF_VT_BOOL,
	ZCONF_VT_ENUM,
	ZCONF_VT_CORES,
	ZCONF_VT_ADDRS,
};

static enum zconf_vtype vtype(const struct schema_entry *kd)
{
	if (kd->file_syntax == SCHEMA_FILE_ADDRS)
		return ZCONF_VT_ADDRS;
	if (kd->file_syntax == SCHEMA_FILE_CORES)
		return ZCONF_VT_CORES;
	switch (kd->type) {
	case SCHEMA_INT:
		return ZCONF_VT_INT;
	case SCHEMA_MEMORY:
	case SCHEMA_UMEMORY:
		return ZCONF_VT_SIZE;
	case SCHEMA_BOOL:
		return ZCONF_VT_BOOL;
	case SCHEMA_ENUM:
		return ZCONF_VT_ENUM;
	case SCHEMA_STRING:
	case SCHEMA_LIST:
	case SCHEMA_SPECIAL:
		break;
	}
	return ZCONF_VT_STRING;
}

static const char *vt_expect(const struct schema_entry *kd)
{
	switch (vtype(kd)) {
	case ZCONF_VT_STRING:
		return "a string";
	case ZCONF_VT_INT:
		return "a number";
	case ZCONF_VT_SIZE:
		return "a size (a number of bytes or a string like \"64mb\" or \"75%\")";
	case ZCONF_VT_BOOL:
		return "a boolean (true/false or \"yes\"/\"no\")";
	case ZCONF_VT_ENUM:
		return "one of the strings listed in zaris.conf";
	case ZCONF_VT_CORES:
		return "a core list (\"0-3,6\" or [0, 1])";
	case ZCONF_VT_ADDRS:
		return "a string of space-separated IP addresses";
	}
	return "?";
}

static int zconf_setting_line(const config_setting_t *s)
{
	return (int)config_setting_source_line(s);
}

static const char *zconf_setting_file(const config_setting_t *s, const char *fallback)
{
	const char *f = config_setting_source_file(s);

	return f ? f : fallback;
}

static bool is_int(const config_setting_t *s)
{
	return s->type == CONFIG_TYPE_INT || s->type == CONFIG_TYPE_INT64;
}

static int wrong_type(struct zconf_error *err, const char *path, const config_setting_t *s, const char *what,
		      const char *expect)
{
	return zconf_fail(err, zconf_setting_file(s, path), zconf_setting_line(s), "'%s' must be %s, not %s",
			  what, expect, type_name(s->type));
}

bool zconf_is_ip(const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* "cores": a string "0-3,6", one number or an array of numbers; stored
 * normalised. */
static int cores_value(const struct zconf *conf, const config_setting_t *s, char **out,
		       struct zconf_error *err)
{
	const char *file = zconf_setting_file(s, conf->path);
	int line = zconf_setting_line(s);
	char buf[512];
	cpu_set_t set;

	if (s->type == CONFIG_TYPE_STRING) {
		if (zconf_parse_cores(config_setting_get_string(s), &set, buf, sizeof(buf)) < 0)
			return zconf_fail(err, file, line,
					  "'cores': cannot read \"%s\" as a core list (e.g. \"0-3,6\")",
					  config_setting_get_string(s));
	} else if (is_int(s) || s->type == CONFIG_TYPE_ARRAY) {
		int n = is_int(s) ? 1 : config_setting_length(s);

		if (n == 0)
			return zconf_fail(err, file, line, "'cores' must not be empty");
		CPU_ZERO(&set);
		for (int i = 0; i < n; i++) {
			const config_setting_t *e = is_int(s) ? s : config_setting_get_elem(s, (unsigned)i);
			long long c = is_int(e) ? config_setting_get_int64(e) : -1;

			if (c < 0 || c >= CPU_SETSIZE)
				return zconf_fail(err, file, line, "'cores': element %d is not a core number",
						  i + 1);
			CPU_SET((int)c, &set);
		}
		zconf_format_cores(&set, buf, sizeof(buf));
	} else {
		return wrong_type(err, conf->path, s, "cores", "a core list (\"0-3,6\" or [0, 1])");
	}
	free(*out);
	*out = zconf_strdup(buf);
	return 0;
}

/* "bind": space-separated numeric addresses, at least one. */
static int addrs_value(const struct zconf *conf, const config_setting_t *s, char **out,
		       struct zconf_error *err)
{
	const char *file = zconf_setting_file(s, conf->path);
	int line = zconf_setting_line(s);
	char tmp[512], *save = NULL, *tok;
	const char *str;
	int count = 0;

	if (s->type != CONFIG_TYPE_STRING)
		return wrong_type(err, conf->path, s, "bind", "a string of space-separated IP addresses");
	str = config_setting_get_string(s);
	snprintf(tmp, sizeof(tmp), "%s", str);
	for (tok = strtok_r(tmp, " ", &save); tok; tok = strtok_r(NULL, " ", &save), count++)
		if (!zconf_is_ip(tok))
			return zconf_fail(err, file, line, "'bind': \"%s\" is not a numeric IP address", tok);
	if (count == 0)
		return zconf_fail(err, file, line, "'bind' must list at least one address");
	free(*out);
	*out = zconf_strdup(str);
	return 0;
}

/* Checks setting S against KD and stores its normalised text in *OUT
 * (replacing an earlier value). */
static int parse_value(const struct zconf *conf, const struct schema_entry *kd, const config_setting_t *s,
		       char **out, struct zconf_error *err)
{
	const char *file = zconf_setting_file(s, conf->path);
	int line = zconf_setting_line(s);
	char buf[512];
	const char *str = s->type == CONFIG_TYPE_STRING ? config_setting_get_string(s) : NULL;

	switch (vtype(kd)) {
	case ZCONF_VT_STRING:
		if (!str)
			return wrong_type(err, conf->path, s, kd->name, vt_expect(kd));
		if (kd->check && !kd->check(str))
			return zconf_fail(err, file, line, "'%s': cannot read \"%s\" (%s)", kd->name, str,
					  kd->help);
		snprintf(buf, sizeof(buf), "%s", str);
		break;
	case ZCONF_VT_INT: {
		long long v;

		if (!is_int(s))
			return wrong_type(err, conf->path, s, kd->name, vt_expect(kd));
		v = config_setting_get_int64(s);
		if (v < kd->min || v > kd->max)
			return zconf_fail(err, file, line, "'%s' must be between %lld and %lld, not %lld",
					  kd->name, kd->min, kd->max, v);
		snprintf(buf, sizeof(buf), "%lld", v);
		break;
	}
	case ZCONF_VT_SIZE: {
		unsigned long long v;

		if (is_int(s)) {
			long long i = config_setting_get_int64(s);

			if (i < 0)
				return zconf_fail(err, file, line, "'%s' must not be negative", kd->name);
			v = (unsigned long long)i;
		} else if (str) {
			if (zconf_parse_size(str, conf->mem_total, &v) < 0)
				return zconf_fail(err, file, line,
						  "'%s': cannot read \"%s\" as a size (use bytes, "
						  "k/kb/m/mb/g/gb/t/tb, or 1-100%% of RAM)",
						  kd->name, str);
		} else {
			return wrong_type(err, conf->path, s, kd->name, vt_expect(kd));
		}
		/* zarisd refuses a size past the schema's bounds at start-up */
		if (kd->type == SCHEMA_MEMORY && (v > (unsigned long long)kd->max || (long long)v < kd->min))
			return zconf_fail(err, file, line,
					  "'%s' must be between %lld and %lld bytes, not %llu", kd->name,
					  kd->min, kd->max, v);
		snprintf(buf, sizeof(buf), "%llu", v);
		break;
	}
	case ZCONF_VT_BOOL:
		if (s->type == CONFIG_TYPE_BOOL)
			snprintf(buf, sizeof(buf), "%s", config_setting_get_bool(s) ? "yes" : "no");
		else if (str && (strcmp(str, "yes") == 0 || strcmp(str, "no") == 0))
			snprintf(buf, sizeof(buf), "%s", str);
		else
			return wrong_type(err, conf->path, s, kd->name, vt_expect(kd));
		break;
	case ZCONF_VT_ENUM: {
		size_t len = 0;

		if (!str)
			return wrong_type(err, conf->path, s, kd->name, vt_expect(kd));
		for (const char *const *c = kd->names; *c; c++)
			if (strcmp(*c, str) == 0)
				goto enum_ok;
		for (const char *const *c = kd->names; *c && len < sizeof(buf); c++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s",
						c == kd->names ? "" : ", ", *c);
		return zconf_fail(err, file, line, "'%s' cannot be \"%s\" (one of: %s)", kd->name, str, buf);
enum_ok:
		snprintf(buf, sizeof(buf), "%s", str);
		break;
	}
	case ZCONF_VT_CORES:
		return cores_value(conf, s, out, err);
	case ZCONF_VT_ADDRS:
		return addrs_value(conf, s, out, err);
	}
	free(*out);
	*out = zconf_strdup(buf);
	return 0;
}

char *zconf_strdup(const char *s)
{
	char *d = strdup(s);

	if (!d)
		abort(); /* config sizes are tiny; no sensible recovery */
	return d;
}

int zconf_keydef_find(const char *name)
{
	for (int k = 0; k < ZCONF_K__COUNT; k++)
		if (strcmp(schema_file_entry(k)->name, name) == 0)
			return k;
	return -1;
}

static int parse_cluster(struct zconf *conf, const config_setting_t *g, struct zconf_error *err)
{
	if (g->type != CONFIG_TYPE_GROUP)
		return wrong_type(err, conf->path, g, "cluster", "a group { }");
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(s);
		int k = zconf_keydef_find(name);
		int rc;

		if (strcmp(name, "name") == 0) {
			if (s->type != CONFIG_TYPE_STRING)
				return wrong_type(err, conf->path, s, "name", "a string");
			free(conf->cluster_name);
			conf->cluster_name = zconf_strdup(config_setting_get_string(s));
			continue;
		}
		if (strcmp(name, "enabled") == 0) {
			if (s->type != CONFIG_TYPE_BOOL)
				return wrong_type(err, conf->path, s, "enabled", "a boolean (true/false)");
			conf->cluster_enabled = config_setting_get_bool(s);
			conf->cluster_enabled_line = zconf_setting_line(s);
			continue;
		}
		if (strcmp(name, "slots") == 0) {
			if (s->type != CONFIG_TYPE_STRING)
				return wrong_type(err, conf->path, s, "slots", "the string \"auto\"");
			if (strcmp(config_setting_get_string(s), "auto") != 0)
				return zconf_fail(
					err, zconf_setting_file(s, conf->path), zconf_setting_line(s),
					"cluster: slots must be \"auto\", not \"%s\" (a primary lists "
					"its own slots in its node)",
					config_setting_get_string(s));
			conf->slots_auto = true;
			conf->slots_line = zconf_setting_line(s);
			continue;
		}
		if (k < 0)
			return zconf_fail(err, zconf_setting_file(s, conf->path), zconf_setting_line(s),
					  "unknown key '%s' in cluster (see zaris.conf for the keys)", name);
		rc = parse_value(conf, schema_file_entry(k), s, &conf->defaults[k], err);
		if (rc < 0)
			return rc;
		conf->default_line[k] = zconf_setting_line(s);
	}
	return 0;
}

static int parse_supervisor(struct zconf *conf, const config_setting_t *g, struct zconf_error *err)
{
	if (g->type != CONFIG_TYPE_GROUP)
		return wrong_type(err, conf->path, g, "supervisor", "a group { }");
	for (int i = 0; i < config_setting_length(g); i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(s);
		const char *file = zconf_setting_file(s, conf->path);
		int line = zconf_setting_line(s);
		size_t j;
		long long v;

		for (j = 0; j < sizeof(sv_keys) / sizeof(sv_keys[0]); j++)
			if (strcmp(sv_keys[j].name, name) == 0)
				break;
		if (j == sizeof(sv_keys) / sizeof(sv_keys[0]))
			return zconf_fail(err, file, line,
					  "unknown key '%s' in supervisor (see zaris.conf for the keys)",
					  name);
		if (is_int(s)) {
			v = config_setting_get_int64(s);
		} else if (sv_keys[j].kind == SV_SIZE && s->type == CONFIG_TYPE_STRING) {
			unsigned long long u;

			/* no total: "50%" of nothing makes no sense for a lag */
			if (zconf_parse_size(config_setting_get_string(s), 0, &u) < 0)
				return zconf_fail(
					err, file, line,
					"'%s': cannot read \"%s\" as a size (bytes, or k/kb/m/mb/g/gb)", name,
					config_setting_get_string(s));
			v = u > (unsigned long long)LLONG_MAX ? LLONG_MAX : (long long)u;
		} else if (sv_keys[j].kind == SV_DUR && s->type == CONFIG_TYPE_STRING) {
			if (zconf_parse_duration_ms(config_setting_get_string(s), &v) < 0)
				return zconf_fail(
					err, file, line,
					"'%s': cannot read \"%s\" as a duration (e.g. 500ms, 2s, 1m)", name,
					config_setting_get_string(s));
		} else {
			return wrong_type(err, conf->path, s, name,
					  sv_keys[j].kind == SV_DUR    ? "a duration (\"500ms\", \"2s\")"
					  : sv_keys[j].kind == SV_SIZE ? "a size (\"1mb\", or bytes)"
								       : "a number");
		}
		if (v < sv_keys[j].min || v > sv_keys[j].max)
			return zconf_fail(err, file, line, "'%s' must be between %lld and %lld%s", name,
					  sv_keys[j].min, sv_keys[j].max,
					  sv_keys[j].kind == SV_DUR    ? " ms"
					  : sv_keys[j].kind == SV_SIZE ? " bytes"
								       : "");
		*(int *)((char *)&conf->sv + sv_keys[j].offset) = (int)v;
	}
	if (conf->sv.backoff_max_ms < conf->sv.backoff_min_ms)
		return zconf_fail(err, zconf_setting_file(g, conf->path), zconf_setting_line(g),
				  "supervisor: backoff-max is smaller than backoff-min");
	return 0;
}

bool zconf_valid_name(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '-' && *s != '_' && *s != '.')
			return false;
	return true;
}

static int node_string(struct zconf *conf, const config_setting_t *s, char **out, struct zconf_error *err)
{
	if (s->type != CONFIG_TYPE_STRING)
		return wrong_type(err, conf->path, s, config_setting_name(s), "a string");
	free(*out);
	*out = zconf_strdup(config_setting_get_string(s));
	return 0;
}

/* Fills node N from group G (keys and types only; cross-node checks later). */
static int parse_node(struct zconf *conf, struct zconf_node *n, const config_setting_t *g, unsigned idx,
		      struct zconf_error *err)
{
	const char *file = zconf_setting_file(g, conf->path);
	char *role = NULL;
	int rc = 0;

	const config_setting_t *nm;
	char label[96];

	n->line = zconf_setting_line(g);
	if (g->type != CONFIG_TYPE_GROUP)
		return zconf_fail(err, file, n->line, "nodes: entry %u must be a group { name = ...; }",
				  idx + 1);
	/* Name the node in messages even when its name comes after the error. */
	nm = config_setting_get_member(g, "name");
	if (nm && nm->type == CONFIG_TYPE_STRING)
		snprintf(label, sizeof(label), "node '%.64s'", config_setting_get_string(nm));
	else
		snprintf(label, sizeof(label), "node %u", idx + 1);
	for (int i = 0; i < config_setting_length(g) && rc == 0; i++) {
		const config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
		const char *name = config_setting_name(s);
		int k = zconf_keydef_find(name);

		if (strcmp(name, "name") == 0 || strcmp(name, "address") == 0 || strcmp(name, "host") == 0 ||
		    strcmp(name, "replica-of") == 0 || strcmp(name, "role") == 0 ||
		    strcmp(name, "slots") == 0 || strcmp(name, "machine") == 0) {
			char **dst = &role;

			if (strcmp(name, "name") == 0)
				dst = &n->name;
			else if (strcmp(name, "address") == 0)
				dst = &n->address;
			else if (strcmp(name, "host") == 0)
				dst = &n->host;
			else if (strcmp(name, "replica-of") == 0)
				dst = &n->replica_of, n->replica_of_line = zconf_setting_line(s);
			else if (strcmp(name, "slots") == 0)
				dst = &n->slots, n->slots_line = zconf_setting_line(s);
			else if (strcmp(name, "machine") == 0)
				dst = &n->machine_name, n->machine_line = zconf_setting_line(s);

			rc = node_string(conf, s, dst, err);
		} else if (strcmp(name, "port") == 0) {
			long long p = is_int(s) ? config_setting_get_int64(s) : -1;

			if (!is_int(s))
				rc = wrong_type(err, conf->path, s, "port", "a number");
			else if (p < 1 || p > 65535)
				rc = zconf_fail(err, zconf_setting_file(s, conf->path), zconf_setting_line(s),
						"'port' must be between 1 and 65535, not %lld", p);
			else
				n->port = (int)p;
		} else if (k >= 0) {
			rc = parse_value(conf, schema_file_entry(k), s, &n->set[k], err);
			n->set_line[k] = zconf_setting_line(s);
		} else {
			rc = zconf_fail(err, zconf_setting_file(s, conf->path), zconf_setting_line(s),
					"%s: unknown key '%s' (see zaris.conf for the keys)", label, name);
		}
	}
	if (rc == 0 && !n->name)
		rc = zconf_fail(err, file, n->line, "node %u has no 'name'", idx + 1);
	if (rc == 0 && !zconf_valid_name(n->name))
		rc = zconf_fail(err, file, n->line,
				"node name \"%s\" must be 1-64 letters, digits, '-', '_' or '.'", n->name);
	if (rc == 0 && !n->address)
		rc = zconf_fail(err, file, n->line, "node '%s' has no 'address'", n->name);
	if (rc == 0 && !zconf_is_ip(n->address))
		rc = zconf_fail(err, file, n->line, "node '%s': address \"%s\" is not a numeric IP address",
				n->name, n->address);
	if (rc == 0 && n->port == 0)
		rc = zconf_fail(err, file, n->line, "node '%s' has no 'port'", n->name);
	if (rc == 0 && role && strcmp(role, "primary") != 0 && strcmp(role, "replica") != 0)
		rc = zconf_fail(err, file, n->line,
				"node '%s': role must be \"primary\" or \"replica\", not \"%s\"", n->name,
				role);
	if (rc == 0) {
		bool replica = (role && strcmp(role, "replica") == 0) || (!role && n->replica_of);

		if (replica && !n->replica_of)
			rc = zconf_fail(err, file, n->line, "node '%s' is a replica but has no 'replica-of'",
					n->name);
		else if (!replica && n->replica_of)
			rc = zconf_fail(err, file, n->line,
					"node '%s' has role \"primary\" and 'replica-of' at once", n->name);
		n->role = replica ? ZCONF_ROLE_REPLICA : ZCONF_ROLE_PRIMARY;
	}
	free(role);
	return rc;
}

static int check_cluster(struct zconf *conf, struct zconf_error *err)
{
	for (size_t i = 0; i < conf->n_nodes; i++) {
		struct zconf_node *n = &conf->nodes[i];

		for (size_t j = 0; j < i; j++) {
			const struct zconf_node *o = &conf->nodes[j];

			if (strcmp(o->name, n->name) == 0)
				return zconf_fail(err, conf->path, n->line,
						  "duplicate node name '%s' (first at line %d)", n->name,
						  o->line);
			if (o->port == n->port && strcmp(o->address, n->address) == 0)
				return zconf_fail(err, conf->path, n->line,
						  "node '%s': duplicate port: %s:%d is already node '%s' "
						  "(line %d)",
						  n->name, n->address, n->port, o->name, o->line);
		}
	}
	for (size_t i = 0; i < conf->n_nodes; i++) {
		struct zconf_node *n = &conf->nodes[i];
		const struct zconf_node *p;
		int line = n->replica_of_line ? n->replica_of_line : n->line;

		if (!n->replica_of)
			continue;
		p = zconf_find_node(conf, n->replica_of);
		if (!p)
			return zconf_fail(err, conf->path, line,
					  "node '%s': replica-of '%s' is not a node in this file", n->name,
					  n->replica_of);
		if (p == n)
			return zconf_fail(err, conf->path, line, "node '%s' cannot be a replica of itself",
					  n->name);
	}
	/* Every target exists now. A chain (a replica of a replica) is fine; a
	 * loop has no primary to take the data from. The first node in file
	 * order that a loop comes back to is named, with the whole loop. */
	for (size_t i = 0; i < conf->n_nodes; i++) {
		const struct zconf_node *n = &conf->nodes[i], *p = n;
		char chain[400];
		size_t len = 0, steps = 0;

		if (!n->replica_of)
			continue;
		while (p->replica_of && steps++ <= conf->n_nodes) {
			p = zconf_find_node(conf, p->replica_of);
			if (p == n)
				break;
		}
		if (p != n)
			continue;
		len = (size_t)snprintf(chain, sizeof(chain), "%s", n->name);
		p = n;
		do {
			p = zconf_find_node(conf, p->replica_of);
			if (len < sizeof(chain))
				len += (size_t)snprintf(chain + len, sizeof(chain) - len, " -> %s", p->name);
		} while (p != n);
		return zconf_fail(err, conf->path, n->replica_of_line ? n->replica_of_line : n->line,
				  "node '%s': replica-of forms a loop (%s); one of them must be a primary",
				  n->name, chain);
	}
	return 0;
}

/* The parse error with the offending line's text, since libconfig says only
 * "syntax error". */
static void parse_error(const config_t *cfg, const char *path, struct zconf_error *err)
{
	const char *file = config_error_file(cfg) ? config_error_file(cfg) : path;
	int line = config_error_line(cfg);
	char text[160] = "";
	FILE *f = fopen(file, "r");

	if (f) {
		char buf[1024];

		for (int l = 1; fgets(buf, sizeof(buf), f); l++) {
			if (l != line)
				continue;
			buf[strcspn(buf, "\r\n")] = '\0';
			char *p = buf;
			while (isspace((unsigned char)*p))
				p++;
			snprintf(text, sizeof(text), "%.150s", p);
			break;
		}
		fclose(f);
	}
	if (text[0])
		zconf_fail(err, file, line, "%s (the line reads: %s)", config_error_text(cfg), text);
	else
		zconf_fail(err, file, line, "%s", config_error_text(cfg));
}

static void sv_defaults(struct zconf_supervisor *sv)
{
	sv->health_interval_ms = 1000;
	sv->health_timeout_ms = 1000;
	sv->health_failures = 3;
	sv->start_timeout_ms = 30000;
	sv->stop_timeout_ms = 10000;
	sv->backoff_min_ms = 500;
	sv->backoff_max_ms = 30000;
	sv->crash_loop_restarts = 5;
	sv->stable_ms = 60000;
	sv->catch_up_lag = 1 << 20;
	sv->catch_up_timeout_ms = 60000;
}

static int parse_root(struct zconf *conf, const config_setting_t *root, struct zconf_error *err)
{
	const config_setting_t *nodes = NULL;
	int rc;

	for (int i = 0; i < config_setting_length(root); i++) {
		const config_setting_t *s = config_setting_get_elem(root, (unsigned)i);
		const char *name = config_setting_name(s);

		if (strcmp(name, "cluster") == 0)
			rc = parse_cluster(conf, s, err);
		else if (strcmp(name, "supervisor") == 0)
			rc = parse_supervisor(conf, s, err);
		else if (strcmp(name, "coordination") == 0)
			rc = zconf_parse_coord(conf, s, err);
		else if (strcmp(name, "nodes") == 0)
			rc = 0, nodes = s;
		else
			rc = zconf_fail(err, zconf_setting_file(s, conf->path), zconf_setting_line(s),
					"unknown key '%s' at top level (expected cluster, supervisor, "
					"coordination, nodes)",
					name);
		if (rc < 0)
			return rc;
	}
	if (!nodes)
		return zconf_fail(err, conf->path, 0, "no 'nodes' list: at least one node is needed");
	if (nodes->type != CONFIG_TYPE_LIST)
		return wrong_type(err, conf->path, nodes, "nodes", "a list ( { ... }, ... )");
	conf->n_nodes = (size_t)config_setting_length(nodes);
	if (conf->n_nodes == 0)
		return zconf_fail(err, conf->path, zconf_setting_line(nodes),
				  "'nodes' is empty: at least one node is needed");
	conf->nodes = calloc(conf->n_nodes, sizeof(*conf->nodes));
	if (!conf->nodes)
		return -ENOMEM;
	for (size_t i = 0; i < conf->n_nodes; i++) {
		rc = parse_node(conf, &conf->nodes[i], config_setting_get_elem(nodes, (unsigned)i),
				(unsigned)i, err);
		if (rc < 0)
			return rc;
	}
	rc = check_cluster(conf, err);
	if (rc == 0)
		rc = zconf_check_native(conf, err);
	if (rc == 0)
		rc = zconf_check_slots(conf, err);
	return rc < 0 ? rc : zconf_check_coord(conf, err);
}

int zconf_load_local(const char *path, const char *local_nodes, struct zconf **out, struct zconf_error *err)
{
	struct zconf *conf;
	config_t cfg;
	int rc;

	*out = NULL;
	memset(err, 0, sizeof(*err));
	conf = calloc(1, sizeof(*conf));
	if (!conf)
		return -ENOMEM;
	conf->path = zconf_strdup(path);
	conf->mem_total = zconf_mem_total();
	sv_defaults(&conf->sv);
	conf->coord.local_machine = -1;

	config_init(&cfg);
	if (!config_read_file(&cfg, path)) {
		if (config_error_type(&cfg) == CONFIG_ERR_FILE_IO) {
			FILE *f = fopen(path, "r");

			rc = f ? -EIO : -errno;
			if (f)
				fclose(f);
			zconf_fail(err, path, 0, "cannot read: %s", strerror(-rc));
		} else {
			parse_error(&cfg, path, err);
			rc = -EINVAL;
		}
		goto out_free;
	}
	rc = parse_root(conf, config_root_setting(&cfg), err);
	if (rc == 0)
		rc = zconf_select_local(conf, local_nodes, err);
	if (rc == 0)
		rc = zconf_check_local(conf, err);
	if (rc == 0) {
		config_destroy(&cfg);
		*out = conf;
		return 0;
	}
out_free:
	config_destroy(&cfg);
	zconf_free(conf);
	return rc;
}

int zconf_load(const char *path, struct zconf **out, struct zconf_error *err)
{
	return zconf_load_local(path, NULL, out, err);
}

void zconf_free(struct zconf *conf)
{
	if (!conf)
		return;
	for (size_t i = 0; i < conf->n_nodes; i++) {
		struct zconf_node *n = &conf->nodes[i];

		free(n->name);
		free(n->address);
		free(n->host);
		free(n->replica_of);
		free(n->slots);
		free(n->machine_name);
		for (int k = 0; k < ZCONF_K__COUNT; k++)
			free(n->set[k]);
	}
	for (int k = 0; k < ZCONF_K__COUNT; k++)
		free(conf->defaults[k]);
	free(conf->nodes);
	free(conf->slot_owner);
	zconf_coord_free(&conf->coord);
	free(conf->cluster_name);
	free(conf->path);
	free(conf);
}
