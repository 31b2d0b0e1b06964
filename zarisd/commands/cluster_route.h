/* cluster_route — the dispatcher's cluster check (cluster-enabled only):
 * Redis's getNodeByQuery and clusterRedirectClient. The keys of a command
 * (of every queued command for EXEC) must share one slot, else -CROSSSLOT;
 * a slot no primary owns answers -CLUSTERDOWN Hash slot not served; one
 * this server owns runs; one its primary owns runs on a replica for a read
 * of a READONLY client (and for the shard channels); any other is -MOVED
 * to its owner. Keyless commands run anywhere. One slot-table lookup per
 * command, without a lock (cluster.h). The client's worker thread.
 */
#ifndef ZR_CLUSTER_ROUTE_H
#define ZR_CLUSTER_ROUTE_H

#include <stdbool.h>

struct client;
struct command;

/* Whether C's command CMD runs here; false after replying the redirect or
 * error (queued in MULTI: the transaction is doomed; EXEC: it is dropped,
 * as in Redis). Call only when c->srv->cluster is set. */
bool cluster_route_ok(struct client *c, const struct command *cmd);

#endif
