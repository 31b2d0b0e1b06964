/* blocking — clients blocked on keys: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP
 * (cmd_list.c) and BZPOPMIN BZPOPMAX BZMPOP (cmd_zset.c) share it.
 *
 * Design. A blocked client is a waiter: one node per distinct key in that
 * key's FIFO queue. The queues live in a table per store shard that is
 * guarded by that shard's store lock (no lock of its own), so:
 *  - a handler that finds nothing to pop blocks with blocking_block() while
 *    the dispatcher still holds its keys' shard locks: a push on another
 *    worker cannot slip in between "empty" and "queued" (no lost wake-up);
 *  - a write that adds elements calls blocking_signal_key() under the key's
 *    shard lock; that only notes the key in a per-thread "ready" list when
 *    it has waiters (one relaxed load when nobody is blocked anywhere);
 *  - after the command, with every lock released, the dispatcher calls
 *    blocking_serve_ready(): for each ready key it locks the key's shard
 *    (plus the shard of the waiter's second key, BLMOVE's destination, in
 *    ascending shard order — when that one sorts lower, it unlocks, takes
 *    both in order and looks at the queue again) and serves the queue's
 *    waiters head first, while the key has elements: the type's serve
 *    callback pops, writes the reply in the waiter's protocol into a
 *    private buffer, and the reply goes to the waiter's own worker with
 *    server_post(). There the client is unblocked, the reply appended to
 *    c->out, and the network layer sends it and runs the client's
 *    pipelined requests (it stopped reading them while CLIENT_BLOCKED).
 *
 * Why serve in the signalling thread rather than wake the waiter to re-run
 * its command: the pop happens under the key's lock right after the push,
 * so the element goes to the first waiter (FIFO across all workers: the
 * queue order is the order in which the blockers took the shard lock) and
 * no third client can take it in between a wake-up and a re-run; a woken
 * waiter would also need a place-holding protocol so that later waiters
 * cannot overtake it. Serving after the command (not inside it) gives
 * Redis's order: the pusher's reply counts the pushed elements, a
 * MULTI/EXEC that pushes and pops in the same transaction serves waiters
 * only with what is left at the end, and BLMOVE chains (a served BLMOVE
 * pushes to its destination, which signals that key) are followed in the
 * same call. Between the end of the command and the serve another worker
 * may pop the element first; the waiter then simply stays blocked — no
 * element is lost or duplicated.
 *
 * Exactly-once. A waiter's fate is decided once, by a compare-and-swap on
 * its state (WAITING -> DONE): served through one of its keys, timed out
 * (the owning worker's timer, armed for its waiters' earliest deadline), unblocked (CLIENT UNBLOCK) or dropped (the
 * client disconnected). A serve callback checks that it can serve, then
 * calls blocking_claim(); only when that succeeds does it pop. The owning
 * worker alone frees the waiter, after taking it out of every key queue
 * (one shard lock at a time); until then serving threads skip it.
 *
 * Threads: blocking_block, blocking_client_gone, blocking_cron and
 * blocking_next_deadline run on the client's own worker;
 * blocking_signal_key under the key's shard lock on any worker;
 * blocking_signal_db, blocking_serve_ready, blocking_unblock,
 * blocking_count on any worker holding no shard lock.
 */
#ifndef ZR_BLOCKING_H
#define ZR_BLOCKING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/proto/resp.h"

struct client;
struct server;
struct obuf;
struct bwaiter;

/* What a serve callback sees. */
struct blocking_serve {
	struct server *srv;
	unsigned db;
	const char *key; /* the ready key; its shard lock (and the second key's) is held */
	size_t klen;
	void *arg;	  /* the payload given to blocking_block() */
	struct obuf *out; /* the waiter's reply, in its protocol (out->resp) */
	int64_t now_ms;
	struct bwaiter *w; /* private */
};

enum blocking_serve_result {
	BLOCKING_NOT_READY = 0, /* the key has nothing to give (absent, empty, other type): stop */
	BLOCKING_SERVED = 1,	/* claimed and replied (possibly an error reply) */
	BLOCKING_LOST = 2,	/* blocking_claim() failed: nothing changed, try the next waiter */
};

struct blocking_ops {
	/* Any worker, with the locks described above. Checks whether the
	 * waiter can be served from bs->key; if not, returns NOT_READY
	 * without side effects. Else calls blocking_claim(bs): false ->
	 * returns LOST without side effects; true -> pops, writes the
	 * reply to bs->out, calls blocking_signal_key() for keys it
	 * pushed to, returns SERVED (it must not fail after the claim). */
	enum blocking_serve_result (*serve)(struct blocking_serve *bs);
	/* The second key whose shard must be locked while serving
	 * (BLMOVE's destination), or NULL. Pure function of ARG. */
	const char *(*second_key)(const void *arg, size_t *klen);
	/* The reply when the timeout passes or CLIENT UNBLOCK ... TIMEOUT
	 * (e.g. reply_null_array for BLPOP), on the client's worker. */
	void (*timeout_reply)(struct obuf *out, const void *arg);
	/* Frees ARG (may be NULL). */
	void (*free_arg)(void *arg);
	/* The served pop as the command that repeats it, for the change
	 * stream (as Redis propagates a served BLPOP as LPOP, BLMOVE as
	 * LMOVE, BZPOPMIN as ZPOPMIN): fills ARGV and LENS (at most
	 * BLOCKING_EFFECT_MAX, borrowing KEY, ARG's strings and NUM, 32 bytes
	 * of scratch) and returns argc; *NKEYS: how many arguments after the
	 * name are keys. */
	int (*effect)(const void *arg, const char *key, size_t klen, const char **argv, size_t *lens,
		      char *num, int *nkeys);
};
#define BLOCKING_EFFECT_MAX 6

/* Ready-made blocking_ops parts: a timeout that replies a null array
 * (BLPOP, BZPOPMIN, BLMPOP ...) and a free_arg for a zr_malloc'd ARG. */
void blocking_timeout_null_array(struct obuf *out, const void *arg);
void blocking_free_zr(void *arg);

/* Parses argv[I] as a blocking timeout in seconds (Redis 7.0: a long
 * double, times 1000 rounded up to ms, 0 = forever) into an absolute
 * deadline in unix ms (0 = forever). False after replying "ERR timeout is
 * not a float or out of range" / "ERR timeout is negative". */
bool blocking_parse_timeout(struct client *c, int i, int64_t *deadline_ms);

/* Whether C may block now: false while it runs EXEC's queued commands
 * (then a blocking command answers as if its timeout had passed, as in
 * Redis). */
bool blocking_allowed(const struct client *c);

/* Blocks C on KEYS[0..NKEYS) (duplicates ignored) of c->db until
 * DEADLINE_MS (unix ms, 0 = forever). Call from the handler, which has
 * found nothing to serve, while the dispatcher holds every key's shard
 * lock; write no reply. Consumes ARG (ops->free_arg frees it). Sets
 * CLIENT_BLOCKED: the network layer stops running C's requests until the
 * reply arrives. */
void blocking_block(struct client *c, const struct resp_arg *keys, int nkeys, int64_t deadline_ms,
		    const struct blocking_ops *ops, void *arg);

/* Within ops->serve: decides the waiter's fate. True: this thread serves
 * it and must reply; false: it is already served, timed out or gone. */
bool blocking_claim(struct blocking_serve *bs);

/* KEY of DB may have received elements (push, LMOVE destination, ZADD,
 * ...). Caller holds KEY's shard lock. Cheap when nobody waits on it. */
void blocking_signal_key(struct server *srv, unsigned db, const char *key, size_t klen);

/* Signals every key of DB that has waiters (SWAPDB: the database's
 * contents changed under them; Redis's scanDatabaseForReadyKeys). Call
 * holding no shard lock, or inside EXEC's store_lock_all(). */
void blocking_signal_db(struct server *srv, unsigned db);

/* Serves the waiters of every key the calling thread signalled since its
 * last call. Call holding no shard lock (the dispatcher, after each
 * command). True when there was any such key (work was done). */
bool blocking_serve_ready(struct server *srv);

/* The client is going away (dispatch_client_free): drops its waiter.
 * Owning worker. */
void blocking_client_gone(struct client *c);

/* Times out the blocked clients of WORKER whose deadline is <= NOW_MS
 * (unix ms; called by the worker's timer). Owning worker. */
void blocking_cron(struct server *srv, unsigned worker, int64_t now_ms);

/* The earliest deadline (unix ms) among WORKER's blocked clients, or 0
 * when none of them has one (a min-heap per worker: O(1) here, O(log n)
 * per block and unblock): the worker sleeps no longer than that, then
 * calls blocking_cron. A client served elsewhere counts until its reply's
 * mail reached the worker, so it may be early, never late. Owning
 * worker. */
int64_t blocking_next_deadline(struct server *srv, unsigned worker);

/* CLIENT UNBLOCK: unblocks client ID as if timed out (ERROR false) or with
 * "-UNBLOCKED client unblocked via CLIENT UNBLOCK". True when it was
 * blocked. Any worker. */
bool blocking_unblock(struct server *srv, uint64_t id, bool error);

/* Clients blocked now (INFO blocked_clients). Any thread. */
uint64_t blocking_count(struct server *srv);

#endif
