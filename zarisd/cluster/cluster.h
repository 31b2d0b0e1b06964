/* cluster — this server's cluster state when cluster-enabled: its node id,
 * the current topology (topology.h: the slot table and the nodes), kept in
 * <dir>/cluster-topology and loaded at start.
 *
 * The topology in force is one immutable struct topology, published by a
 * pointer swap; readers (the dispatcher's slot check, the CLUSTER
 * commands) take it without a lock:
 *
 *	const struct topology *t = cluster_read_begin(cl, c->worker);
 *	... t->owner[slot] ... (t may be NULL: no topology yet)
 *	cluster_read_end(cl, c->worker);
 *
 * Reclaiming old tables: each reader (a worker, by index) has a sequence
 * number of its own cache line, odd while it is inside a read section. A
 * push swaps the pointer (seq_cst), then records every reader's number
 * beside the old table: the table is freed once each reader's number was
 * even at the swap or has changed since (that reader left the section in
 * which it might have loaded the old pointer; any later section loads the
 * new one). Each push frees what has become free, so retired tables wait
 * at most until the next push after their readers' sections (which hold
 * no lock and never block) and never accumulate; cluster_free frees the
 * rest once the workers are gone. A read section must not span a push by
 * the same thread, and is short: no blocking, no locks taken inside.
 * Readers whose index is not below the NREADERS given at creation, and
 * any thread that is not READER's own worker (core/thread.h: a replica
 * link's or the loader's replay, whose client stands for worker 0), take
 * the push mutex instead: two threads on one reader's number would break
 * the argument above.
 */
#ifndef ZR_CLUSTER_H
#define ZR_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/cluster/topology.h"

struct cluster;

/* Creates the state for up to NREADERS lock-free readers, with the files in
 * DIR (the data directory): reads or creates cluster-node-id, loads
 * cluster-topology when present. NULL on error with the reason in ERR (a
 * bad file names file:line). Main thread, before the workers start. */
struct cluster *cluster_create(const char *dir, unsigned nreaders, char *err, size_t errlen);
/* After every reader stopped. */
void cluster_free(struct cluster *cl);

const struct topology *cluster_read_begin(struct cluster *cl, unsigned reader);
void cluster_read_end(struct cluster *cl, unsigned reader);

/* This server's id: the topology's myself, or the generated one (41
 * bytes with the NUL) when no topology names it yet. Copies it to OUT. */
void cluster_my_id(struct cluster *cl, unsigned reader, char out[TOPO_ID_LEN + 1]);
/* The id generated at first start (cluster-node-id), NUL-terminated;
 * never changes. */
const char *cluster_generated_id(const struct cluster *cl);

/* CLUSTER SETTOPOLOGY: parses DOC, applies the epoch rules, writes the
 * file, publishes. 0 (applied, or the current one again), else -EINVAL
 * (a bad document), -ESTALE (an older epoch), -EEXIST (this epoch with
 * another layout) or the file's -errno, with the error text (no "ERR "
 * prefix) in ERR and nothing changed. Any
 * thread not inside a read section; pushes are serialized. */
int cluster_push(struct cluster *cl, const char *doc, size_t len, char *err, size_t errlen);

#endif
