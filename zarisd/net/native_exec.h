/* native_exec — runs a decoded native REQUEST (native_req.h) for a
 * session's client and writes its RESPONSE frames into the client's
 * output (PROTOCOL.md §5): each operation's result, its index and its
 * status ahead of the RESP3 value the command wrote, frames split past
 * 1 MiB, LAST on the final one. TOPOLOGY is answered here (§7), COMMAND's
 * refusals (§4.1) too; every other op runs through the dispatcher as its
 * Redis command, with its key prefetched (group prefetching, as RESP's
 * pipelines) and its hash handed over.
 *
 * In order by default. With RF1 (native-rf1) a request made only of
 * single-key operations runs in two phases: every op passes the
 * dispatcher's gates first (no lock held: eviction may run), then the
 * admitted ones run grouped by shard, in request order within a shard,
 * each shard's lock taken once (dispatch_admit / dispatch_run_locked).
 * Ops on one key are in one shard, so their order holds.
 *
 * CLIENT PAUSE: the op that would wait and those after it are not run;
 * the result is HELD with *RESUME the first of them, the results so far
 * sent in a frame without LAST, and the session runs the same request
 * again from *RESUME once the pause ends. Worker thread only.
 */
#ifndef ZR_NATIVE_EXEC_H
#define ZR_NATIVE_EXEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct client;
struct native_req;
struct native_exec_slot;

/* A session's per-operation scratch, grown to its largest request. Zero
 * it (or native_exec_init) first; native_exec_free when done. */
struct native_exec {
	struct native_exec_slot *slot;
	struct native_exec_slot **order; /* RF1: the admitted ops, sorted by shard */
	size_t cap;
};

void native_exec_init(struct native_exec *x);
void native_exec_free(struct native_exec *x);

enum native_exec_result {
	NATIVE_EXEC_DONE,
	NATIVE_EXEC_HELD, /* a pause holds the ops from *resume on */
};

/* Runs REQ's operations from *RESUME (0 for a new request) for C, as
 * request ID. RF1: group single-key requests by shard (see above). */
enum native_exec_result native_exec_run(struct native_exec *x, struct client *c, const struct native_req *req,
					uint32_t id, unsigned *resume, bool rf1);

#endif
