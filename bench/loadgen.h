/* loadgen — the load generator's engine: worker threads, each with one
 * epoll loop over its share of the connections, keeping up to `pipeline`
 * requests in flight per connection and timing each reply.
 *
 * Per connection a write buffer sized for one full pipeline, a read buffer
 * and a ring of send timestamps are allocated once at connect; the loop
 * itself allocates nothing. A reply's latency is the time from the write
 * that carried its request to the read that completed it (one clock read
 * per wake-up, shared by everything handled in it). After each read the
 * connection is topped up to `pipeline` outstanding requests in one write.
 *
 * lg_run() is called from one thread (main); it starts the workers, prints
 * a progress line to stderr each second, stops them at the deadline (or
 * when the request budget is spent) and sums their results.
 *
 * Cluster mode (cfg->map set): each of the `conns` connections is one
 * socket per primary of the map, each with its own pipeline. A worker
 * draws requests from its key stream as before and routes each to a socket
 * of its slot's owner; a request whose owner's sockets are full waits in
 * that node's queue (bounded: when one queue is full the worker stops
 * drawing until it drains, as a closed-loop client must), so every drawn
 * key is sent and a --prefill still writes each key once. A -MOVED reply
 * updates the worker's copy of the map for that slot, sends the request
 * again to the new owner and makes the worker re-read CLUSTER SLOTS from
 * that node (at most once a second); -ASK sends it once, after ASKING, to the node
 * named. Neither counts as a reply: the request's latency runs from its
 * first send to its final reply, and the redirections are counted apart.
 */
#ifndef ZB_LOADGEN_H
#define ZB_LOADGEN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "bench/hist.h"
#include "bench/keygen.h"
#include "bench/slotmap.h"
#include "bench/tpl.h"

#define LG_MAX_SERVER_PIDS 16

struct lg_config {
	const char *host; /* numeric or resolvable, e.g. "127.0.0.1" */
	int port;
	unsigned threads;	/* worker threads, >= 1 */
	unsigned conns;		/* connections in total, >= threads */
	unsigned pipeline;	/* requests in flight per connection, >= 1 */
	uint64_t requests;	/* total requests; 0 = run for duration_s */
	double duration_s;	/* used when requests == 0 */
	double drain_timeout_s; /* after the stop, how long to wait for replies */
	enum keygen_dist dist;
	uint64_t keyspace;
	double zipf_s;
	uint64_t seed;
	const struct tpl_mix *mix; /* borrowed for the whole run */
	bool progress;		   /* a line on stderr every second */
	/* also charge these processes' CPU (summed: a cluster's nodes) */
	pid_t server_pids[LG_MAX_SERVER_PIDS];
	unsigned nserver_pids;
	/* cluster mode: the slot map to start from (borrowed), NULL for one
	 * server at host:port */
	const struct slotmap *map;
};

struct lg_result {
	uint64_t ops;	      /* replies received (errors included, pushes not) */
	uint64_t sent;	      /* requests written */
	uint64_t errors;      /* error replies */
	uint64_t nils;	      /* nil replies (GET misses) */
	uint64_t pushes;      /* RESP3 pushes, not counted as replies */
	uint64_t conn_errors; /* connections lost (refused, reset, protocol) */
	uint64_t lost;	      /* requests sent whose reply never came */
	uint64_t moved;	      /* cluster: -MOVED replies followed */
	uint64_t asks;	      /* cluster: -ASK replies followed */
	uint64_t refreshes;   /* cluster: CLUSTER SLOTS re-read after a MOVED */
	double elapsed_s;     /* from the start barrier to the last worker done */
	uint64_t client_cpu_us;
	int64_t server_cpu_us; /* summed over server_pids; -1 when none or one could not be read */
	struct hist hist;      /* latency in ns of every reply */
	char first_error[160]; /* first error reply or connection error, "" if none */
};

/* Runs the load described by CFG and fills RES. Returns 0 when the run took
 * place (RES says how it went), or -errno when no worker could start
 * (e.g. -ECONNREFUSED: nothing listens). */
int lg_run(const struct lg_config *cfg, struct lg_result *res);

#endif
