/* native_load — zaris-bench's load over the native protocol (--native),
 * through libzaris (zarisd/client/zaris.h): the SET:GET workloads of the
 * RESP mode, sent as batches of operations per REQUEST frame.
 *
 * Each of `conns` connections is one `struct zaris` (in cluster mode one
 * client routing to every primary) with `depth` batches of up to `batch`
 * operations in flight (zaris_send / zaris_wait_any); in cluster mode a
 * batch holds `batch` operations per node it routes to, so that each
 * node's REQUEST frame carries about `batch` (the RESP cluster mode keeps
 * its pipeline on each node's socket). The connections are
 * spread over `threads` workers as in the RESP mode, each worker with its
 * own key stream (the RESP mode's keygen slices, so --prefill writes every
 * key once) and histogram. An operation's latency runs from the
 * zaris_send of its batch to the wake-up that saw the batch complete.
 *
 * Waiting. A worker waits on all its connections at once: one poll() over
 * the descriptors their clients name (zaris_pollfds), then each ready
 * client's I/O and completions (zaris_wait_any with a 0 timeout).
 *
 * Counting, as the RESP mode: ops are results the server sent (server
 * errors included), errors the results with a non-zero status, nils the
 * null values. An operation that got no answer (a client error: the
 * connection failed or timed out) counts in lost and in errors, and its
 * connection is closed for the rest of the run (conn_errors), as a lost
 * RESP connection is.
 *
 * Threads: nl_run()'s caller is the control thread, as lg_run's.
 */
#ifndef ZB_NATIVE_LOAD_H
#define ZB_NATIVE_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "bench/loadgen.h"
#include "bench/tpl.h"

struct nl_config {
	/* host, port (the native port), threads, conns, requests,
	 * duration_s, drain_timeout_s, dist, keyspace, zipf_s, seed,
	 * progress and server_pids as the RESP mode; pipeline and map are
	 * not used. Borrowed for the run. */
	const struct lg_config *lg;
	/* the order of SETs and GETs: a mix of the templates named SET and
	 * GET (the RESP mode's --ratio mix); only the names and the order
	 * are used. Borrowed. */
	const struct tpl_mix *mix;
	unsigned batch;		/* operations per REQUEST frame (per node), 1..65535 */
	unsigned depth;		/* batches in flight per connection, >= 1 */
	const char *key_prefix; /* keys are KEY_PREFIX + TPL_KEY_DIGITS digits */
	size_t value_size;	/* SET values: this many 'x' */
	bool cluster;		/* libzaris routes by slot (cluster mode on) */
	/* cluster: a node listed without a native port is reached on its
	 * RESP port plus this (libzaris's native_port_offset); 0 = not */
	int native_port_offset;
};

struct nl_result {
	struct lg_result lg;   /* as the RESP mode's; moved/asks/refreshes from
			      * libzaris's counters (refreshes: its TOPOLOGY reads) */
	unsigned server_flags; /* the first connection's HELLO flags */
	unsigned nodes;	       /* nodes routed to (1 outside cluster mode) */
};

/* Runs the load of CFG and fills RES. Returns 0 when the run took place
 * (RES says how it went), -EINVAL for a mix
 * with templates other than SET and GET, or a negative errno when no
 * worker could connect (RES->lg.first_error says why). */
int nl_run(const struct nl_config *cfg, struct nl_result *res);

#endif
