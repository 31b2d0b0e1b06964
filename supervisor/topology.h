/* topology — the cluster topology the supervisor pushes to its instances
 * (the contract: zarisd/cluster/topology.h, CLUSTER SETTOPOLOGY): the
 * document built from the cluster file, the epoch, and the state file that
 * keeps the epoch across supervisor restarts.
 *
 * The state file is `<cluster dir>/supervisor-topology` (the cluster's
 * `dir`, default the working directory: next to the nodes' data
 * directories), holding the last document pushed without its `myself`
 * line. At start the epoch is the file's when the layout is the same, else
 * one more; every change of the file's topology (addresses, ports, nodes)
 * is one more again, and an instance that reports a higher epoch (state
 * lost, say) pushes it past that one. Single-threaded, the poll loop's.
 */
#ifndef SV_TOPOLOGY_H
#define SV_TOPOLOGY_H

#include "config/zconf.h"

#include <stdbool.h>

struct sv_topology {
	bool enabled;	  /* cluster mode: the rest is meaningful */
	long long epoch;  /* of the document in force, >= 1 */
	char *body;	  /* every line but `epoch` and `myself`, owned */
	char *dir;	  /* the cluster's data root, owned */
	char *state_path; /* where epoch and body are kept (in dir), owned */
	char error[300];  /* last state-file problem, "" when none */
};

/* Sets up T for CONF: the body, and the epoch from the state file (kept
 * when the body there is the same, else that epoch + 1, else 1); writes
 * the state file when it changed. Not in cluster mode: T disabled. */
void sv_topology_init(struct sv_topology *t, const struct zconf *conf);
void sv_topology_fini(struct sv_topology *t);

/* Takes CONF's body after a reload: a different one raises the epoch by
 * one (state file rewritten). Returns true when the document changed. */
bool sv_topology_update(struct sv_topology *t, const struct zconf *conf);
/* Coordination: takes CONF's body (the recorded primaries applied) at
 * etcd's EPOCH, which is authoritative (never raised here). Returns true
 * when the document changed (state file rewritten). */
bool sv_topology_adopt(struct sv_topology *t, const struct zconf *conf, long long epoch);
/* An instance reported epoch SEEN: raises the epoch to SEEN + 1 (state file
 * rewritten) so that the next push is newer than what any instance has. */
void sv_topology_pass(struct sv_topology *t, long long seen);

/* The document NODE is pushed ("epoch E", the body, "myself <id>"),
 * malloc'd (caller frees); aborts on OOM. */
char *sv_topology_document(const struct sv_topology *t, const struct zconf *conf,
			   const struct zconf_node *node);
/* The epoch of document DOC (its `epoch` line), -1 when it has none. */
long long sv_topology_doc_epoch(const char *doc);
/* Whether documents A and B say the same: the same lines once comments,
 * blank lines and repeated blanks are dropped, in any order. */
bool sv_topology_doc_equal(const char *a, const char *b);

/* Why the move from OC to NC cannot be applied by a reload, or NULL when it
 * can: cluster mode switched, or a slot served by another primary (slot
 * moves come later). Writes the reason into BUF. */
const char *sv_topology_refuse(const struct zconf *oc, const struct zconf *nc, char *buf, size_t size);

#endif
