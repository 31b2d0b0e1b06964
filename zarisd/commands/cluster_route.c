/* cluster_route — see cluster_route.h. */
#include "zarisd/commands/cluster_route.h"

#include <stdio.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/commands/multi.h"
#include "zarisd/core/keyslot.h"
#include "zarisd/proto/reply.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/stats.h"
#include "zarisd/store/store.h"

enum route {
	ROUTE_HERE,
	ROUTE_CROSSSLOT,
	ROUTE_UNSERVED,
	ROUTE_MOVED,
};

/* The slot of argv[I]: the dispatcher's prefetched hash when it is this key's. */
static unsigned key_slot(const struct client *c, const struct resp_arg *argv, int i)
{
	if (c->key_hash_argv == argv && c->key_hash_argi == i)
		return store_slot_of_hash(c->key_hash);
	return zr_key_slot(argv[i].ptr, argv[i].len);
}

/* Folds the keys of one command into *SLOT (-1: none seen yet). False on
 * a second slot. */
static bool fold_slots(const struct client *c, const struct command *cmd, const struct resp_arg *argv,
		       int argc, int *slot)
{
	struct keyiter it;
	keyiter_init(&it, cmd, argv, argc);
	for (int i; (i = keyiter_next(&it)) >= 0;) {
		int s = (int)key_slot(c, argv, i);
		if (*slot < 0)
			*slot = s;
		else if (s != *slot)
			return false;
	}
	return true;
}

static bool shard_channels(const struct command *cmd)
{
	return (cmd->flags & CMD_PUBSUB) && cmd->key_specs_num > 0;
}

bool cluster_route_ok(struct client *c, const struct command *cmd)
{
	bool exec = (cmd->flags & CMD_EXEC) != 0;
	if (!(c->flags & CLIENT_IN_MULTI) || exec)
		c->flags &= ~CLIENT_ASKING; /* ASKING covers the one command after it */
	if (exec ? !c->multi : cmd->key_specs_num == 0)
		return true;
	int slot = -1;
	bool write = (cmd->flags & CMD_WRITE) != 0, shard = shard_channels(cmd);
	bool one = true;
	if (exec) {
		write = multi_has_writes(c);
		for (int q = 0, n = multi_queued_count(c); q < n && one; q++) {
			const struct resp_arg *argv;
			int argc;
			const struct command *qc = multi_queued_at(c, q, &argv, &argc);
			shard |= shard_channels(qc);
			one = fold_slots(c, qc, argv, argc, &slot);
		}
	} else {
		one = fold_slots(c, cmd, c->argv, c->argc, &slot);
	}
	if (one && slot < 0)
		return true; /* no key at all */

	struct cluster *cl = c->srv->cluster;
	enum route r = ROUTE_HERE;
	char addr[80];
	const struct topology *t = cluster_read_begin(cl, c->worker);
	unsigned owner = t && one ? t->owner[slot] : TOPO_NO_OWNER;
	if (!one) {
		r = ROUTE_CROSSSLOT;
	} else if (owner == TOPO_NO_OWNER) {
		r = ROUTE_UNSERVED;
	} else if (owner != t->myself) {
		const struct topo_node *me = &t->nodes[t->myself];
		bool reads_here = ((c->flags & CLIENT_CLUSTER_READONLY) || shard) && !write &&
				  me->primary == (int)owner;
		if (!reads_here) {
			r = ROUTE_MOVED;
			snprintf(addr, sizeof(addr), "%s:%d", t->nodes[owner].ip, t->nodes[owner].port);
		}
	}
	cluster_read_end(cl, c->worker);
	if (r == ROUTE_HERE)
		return true;

	/* Redis's processCommand: EXEC drops the transaction, a queued
	 * command dooms it */
	if (exec)
		multi_client_free(c);
	else if (c->multi)
		multi_flag_error(c);
	if (r == ROUTE_CROSSSLOT)
		reply_error(&c->out, "CROSSSLOT Keys in request don't hash to the same slot");
	else if (r == ROUTE_UNSERVED)
		reply_error(&c->out, "CLUSTERDOWN Hash slot not served");
	else
		reply_errorf(&c->out, "MOVED %d %s", slot, addr);
	STAT_INC(&c->stats->cmd[cmd->id], rejected_calls);
	return false;
}
