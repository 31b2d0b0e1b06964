/* zconf_local — which nodes of the cluster file run on this machine, and
 * the checks that only make sense among them: cores that exist and do not
 * overlap, memory limits that fit the machine, ports that do not collide.
 * Called once per load; API through zconf.h (zconf_load_local).
 */
#include "config/zconf_internal.h"
#include "config/schema.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* An address is ours when we can bind to it (port 0, no IP_FREEBIND):
 * exactly the test the kernel applies when zarisd binds later. All of
 * 127.0.0.0/8 is bindable on Linux, so loopback test clusters are local. */
static bool address_is_local(const char *addr)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in a4 = { .sin_family = AF_INET };
	bool v6 = inet_pton(AF_INET, addr, &a4.sin_addr) != 1;
	int fd, rc;

	if (v6 && inet_pton(AF_INET6, addr, &a6.sin6_addr) != 1)
		return false;
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	rc = v6 ? bind(fd, (struct sockaddr *)&a6, sizeof(a6)) : bind(fd, (struct sockaddr *)&a4, sizeof(a4));
	close(fd);
	return rc == 0;
}

static bool host_is_me(const char *host)
{
	char me[256];
	size_t len;

	if (gethostname(me, sizeof(me)) < 0)
		return false;
	me[sizeof(me) - 1] = '\0';
	if (strcmp(me, host) == 0)
		return true;
	/* "db1" in the file matches a machine named "db1.example.net" and back. */
	len = strcspn(me, ".");
	return strcspn(host, ".") == len && strncmp(me, host, len) == 0;
}

static bool in_list(const char *list, const char *name)
{
	size_t nlen = strlen(name);

	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");

		if (len == nlen && strncmp(p, name, len) == 0)
			return true;
		p += len;
		if (*p == ',')
			p++;
	}
	return false;
}

int zconf_select_local(struct zconf *conf, const char *local_nodes, struct zconf_error *err)
{
	const char *machine = NULL;
	int rc;

	if (local_nodes && strncmp(local_nodes, ZCONF_LOCAL_MACHINE, strlen(ZCONF_LOCAL_MACHINE)) == 0)
		machine = local_nodes + strlen(ZCONF_LOCAL_MACHINE), local_nodes = NULL;
	if (local_nodes) {
		for (const char *p = local_nodes; *p;) {
			size_t len = strcspn(p, ",");
			char name[128];

			snprintf(name, sizeof(name), "%.*s", (int)len, p);
			if (len && !zconf_find_node(conf, name))
				return zconf_fail(err, conf->path, 0,
						  "--node %s: no node of that name in the file", name);
			p += len;
			if (*p == ',')
				p++;
		}
	}
	conf->n_local = 0;
	for (size_t i = 0; i < conf->n_nodes; i++) {
		struct zconf_node *n = &conf->nodes[i];

		if (machine)
			n->is_local = false; /* zconf_select_machine below */
		else if (local_nodes)
			n->is_local = in_list(local_nodes, n->name);
		else if (n->host)
			n->is_local = host_is_me(n->host);
		else
			n->is_local = address_is_local(n->address);
		conf->n_local += n->is_local;

		const char *mm = zconf_node_value(conf, n, ZCONF_K_MAXMEMORY);
		const char *cores = zconf_node_value(conf, n, ZCONF_K_CORES);
		char norm[512];

		n->maxmemory = mm ? strtoull(mm, NULL, 10) : 0;
		CPU_ZERO(&n->cores);
		if (cores)
			zconf_parse_cores(cores, &n->cores, norm, sizeof(norm));
	}
	rc = machine ? zconf_select_machine(conf, machine, err)
		     : zconf_local_machine(conf, local_nodes != NULL, err);
	return rc;
}

/* Line where NODE's value for KEY comes from: its own setting, else the
 * node's group. */
static int key_line(const struct zconf_node *n, enum zconf_key k)
{
	return n->set[k] ? n->set_line[k] : n->line;
}

static bool binds_overlap(const struct zconf *conf, const struct zconf_node *a, const struct zconf_node *b)
{
	const char *ba = zconf_node_value(conf, a, ZCONF_K_BIND);
	const char *bb = zconf_node_value(conf, b, ZCONF_K_BIND);
	char la[512], lb[512], *sa = NULL, *sb = NULL;

	snprintf(la, sizeof(la), "%s", ba ? ba : a->address);
	for (char *x = strtok_r(la, " ", &sa); x; x = strtok_r(NULL, " ", &sa)) {
		snprintf(lb, sizeof(lb), "%s", bb ? bb : b->address);
		for (char *y = strtok_r(lb, " ", &sb); y; y = strtok_r(NULL, " ", &sb))
			if (strcmp(x, y) == 0 || strcmp(x, "0.0.0.0") == 0 || strcmp(y, "0.0.0.0") == 0 ||
			    strcmp(x, "::") == 0 || strcmp(y, "::") == 0)
				return true;
	}
	return false;
}

/* The native listener binds every bind address too: local nodes N and O
 * whose binds overlap must not share a port, native or not, even at
 * different declared addresses (zconf_native.c compares those). */
static int native_ports_collide(const struct zconf *conf, const struct zconf_node *n,
				const struct zconf_node *o, struct zconf_error *err)
{
	int np = zconf_node_native_port(conf, n), onp = zconf_node_native_port(conf, o);
	int mine[2] = { n->port, np }, theirs[2] = { o->port, onp };
	static const char *const what[2] = { "port", "native-port" };

	if (!np && !onp)
		return 0;
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++) {
			if (!mine[a] || mine[a] != theirs[b] || (a == 0 && b == 0) ||
			    !binds_overlap(conf, n, o))
				continue;
			return zconf_fail(err, conf->path, a ? key_line(n, ZCONF_K_NATIVE_PORT) : n->line,
					  "node '%s': duplicate port: its %s %d is the %s of local node "
					  "'%s' (line %d), on a shared bind address",
					  n->name, what[a], mine[a], what[b], o->name, o->line);
		}
	return 0;
}

int zconf_check_local(struct zconf *conf, struct zconf_error *err)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	unsigned long long sum = 0;
	const double gib = 1024.0 * 1024 * 1024;

	for (size_t i = 0; i < conf->n_nodes; i++) {
		struct zconf_node *n = &conf->nodes[i];
		char cores[512];

		if (!n->is_local)
			continue;
		zconf_format_cores(&n->cores, cores, sizeof(cores));
		for (int c = (int)ncpu; ncpu > 0 && c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &n->cores))
				return zconf_fail(err, conf->path, key_line(n, ZCONF_K_CORES),
						  "node '%s': cores %s: core %d does not exist on this "
						  "machine (it has %ld CPUs: 0-%ld)",
						  n->name, cores, c, ncpu, ncpu - 1);
		for (size_t j = 0; j < i; j++) {
			const struct zconf_node *o = &conf->nodes[j];
			cpu_set_t both;

			if (!o->is_local)
				continue;
			CPU_AND(&both, &n->cores, &o->cores);
			if (CPU_COUNT(&both) > 0) {
				char shared[512];

				zconf_format_cores(&both, shared, sizeof(shared));
				return zconf_fail(err, conf->path, key_line(n, ZCONF_K_CORES),
						  "node '%s': overlapping cores: core %s is also pinned "
						  "to local node '%s' (line %d)",
						  n->name, shared, o->name, o->line);
			}
			if (o->port == n->port && binds_overlap(conf, n, o))
				return zconf_fail(err, conf->path, n->line,
						  "node '%s': duplicate port: %d is also used by local "
						  "node '%s' (line %d)",
						  n->name, n->port, o->name, o->line);
			int rc = native_ports_collide(conf, n, o, err);
			if (rc < 0)
				return rc;
		}
		if (conf->mem_total && n->maxmemory > conf->mem_total)
			return zconf_fail(err, conf->path, key_line(n, ZCONF_K_MAXMEMORY),
					  "node '%s': maxmemory %.2f GiB is more than this machine has "
					  "(%.2f GiB)",
					  n->name, (double)n->maxmemory / gib, (double)conf->mem_total / gib);
		sum += n->maxmemory;
		if (conf->mem_total && sum > conf->mem_total)
			return zconf_fail(err, conf->path, key_line(n, ZCONF_K_MAXMEMORY),
					  "node '%s': the local nodes' maxmemory adds up to %.2f GiB, more "
					  "than this machine has (%.2f GiB)",
					  n->name, (double)sum / gib, (double)conf->mem_total / gib);
	}
	/* Every node, local or not (after the local checks, whose words say
	 * more on this machine): zarisd pins to CPU numbers up to the
	 * schema's highest only, and refuses to start with a higher one. */
	long long top = schema_file_entry(ZCONF_K_CORES)->max;
	for (size_t i = 0; i < conf->n_nodes; i++) {
		const struct zconf_node *n = &conf->nodes[i];
		char cores[512];

		for (int c = (int)top + 1; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &n->cores)) {
				zconf_format_cores(&n->cores, cores, sizeof(cores));
				return zconf_fail(
					err, conf->path, key_line(n, ZCONF_K_CORES),
					"node '%s': cores %s: core %d is past the highest zarisd pins to "
					"(%lld)",
					n->name, cores, c, top);
			}
	}
	return 0;
}
