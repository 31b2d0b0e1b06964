/* zconf_promote — a failover as the loaded file sees it: one member of a
 * shard becomes its primary (see zconf_promote() in zconf.h). */
#include "config/zconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *dup_or_die(const char *s)
{
	char *d = strdup(s);
	if (!d)
		abort();
	return d;
}

int zconf_promote(struct zconf *conf, const char *name)
{
	struct zconf_node *n = (struct zconf_node *)zconf_find_node(conf, name);
	if (!n || !conf->cluster_enabled)
		return -ENOENT;
	if (n->role == ZCONF_ROLE_PRIMARY)
		return 0;
	struct zconf_node *old = (struct zconf_node *)zconf_find_node(conf, n->replica_of);
	if (!old || old->role != ZCONF_ROLE_PRIMARY)
		return -EINVAL; /* cluster mode has no chains: a replica's primary is a primary */
	size_t ni = (size_t)(n - conf->nodes), oi = (size_t)(old - conf->nodes);

	/* the old primary's other replicas follow the new one */
	for (size_t k = 0; k < conf->n_nodes; k++) {
		struct zconf_node *r = &conf->nodes[k];
		if (k == ni || !r->replica_of || strcmp(r->replica_of, old->name) != 0)
			continue;
		free(r->replica_of);
		r->replica_of = dup_or_die(n->name);
	}
	free(n->replica_of);
	n->replica_of = NULL;
	n->role = ZCONF_ROLE_PRIMARY;
	old->role = ZCONF_ROLE_REPLICA;
	old->replica_of = dup_or_die(n->name);
	char *slots = n->slots;
	n->slots = old->slots;
	old->slots = slots ? slots : dup_or_die("");
	if (conf->slot_owner)
		for (int s = 0; s < ZCONF_SLOTS; s++)
			if (conf->slot_owner[s] == (short)oi)
				conf->slot_owner[s] = (short)ni;
	return 0;
}
