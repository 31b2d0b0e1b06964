/* replication — what the instances' INFO says about replication, read
 * against the cluster file: who a replica follows, whether that is the
 * primary the file declares, and how far behind it is. Used by status and
 * by the rolling restart's catch-up wait. Part of the supervisor module
 * (API in supervisor.h); reads only, from the poll loop's thread. */
#include "supervisor/supervisor.h"

#include <stdio.h>
#include <string.h>

bool sv_is_replica(const struct sv_instance *i)
{
	return i->pid > 0 && strcmp(i->info.role, "slave") == 0;
}

const struct zconf_node *sv_primary_node(const struct sv *s, const struct sv_instance *i)
{
	if (!sv_is_replica(i) || !i->info.master_host[0])
		return NULL;
	for (size_t k = 0; k < s->conf->n_nodes; k++) {
		const struct zconf_node *n = &s->conf->nodes[k];

		if (n->port == i->info.master_port && strcmp(n->address, i->info.master_host) == 0)
			return n;
	}
	return NULL;
}

struct sv_instance *sv_primary_of(struct sv *s, const struct sv_instance *i)
{
	const struct zconf_node *n = sv_primary_node(s, i);

	return n ? sv_find(s, n->name) : NULL;
}

bool sv_role_as_declared(const struct sv *s, const struct sv_instance *i)
{
	const struct zconf_node *n = zconf_find_node(s->conf, i->name);
	char target[128], actual[128];

	if (!n || i->pid <= 0 || !i->info.role[0])
		return false;
	if (!zconf_replicaof(s->conf, n, target, sizeof(target)))
		return strcmp(i->info.role, "master") == 0;
	if (!sv_is_replica(i))
		return false;
	snprintf(actual, sizeof(actual), "%s %lld", i->info.master_host, i->info.master_port);
	return strcmp(actual, target) == 0;
}

long long sv_replica_lag(struct sv *s, const struct sv_instance *i)
{
	const struct sv_instance *p = sv_primary_of(s, i);
	long long lag;

	if (!p || p->pid <= 0 || p->info.master_repl_offset < 0 || i->info.slave_repl_offset < 0)
		return -1;
	lag = p->info.master_repl_offset - i->info.slave_repl_offset;
	return lag > 0 ? lag : 0;
}
