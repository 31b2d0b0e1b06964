/* msgq — each worker's message queue: work for a client owned by another
 * worker (pub/sub messages, blocking-pop hand-offs, keyspace
 * notifications), anything that must run on the client's own thread; and
 * work for the worker itself (msgq_post_worker: open or close an outbound
 * link it owns), which no client is addressed by.
 *
 * Each worker has one queue (a mutex-guarded FIFO). Any thread posts
 * (commands post through server_post(), server.h, which main points at
 * msgq_post); the owning worker drains it when woken, finds each client by
 * id and runs the posted function there, on its own thread, where it may
 * write to c->out. Messages posted by one thread to one worker run in the
 * order they were posted, so per-publisher order is kept.
 */
#ifndef ZR_MSGQ_H
#define ZR_MSGQ_H

#include <stdint.h>

#include "zarisd/server/server.h"

struct msgq;

struct msgq *msgq_create(unsigned nworkers);
/* Frees every queued message, calling each fn with a NULL client. */
void msgq_destroy(struct msgq *q);

/* Queues FN(client CLIENT_ID, ARG) for WORKER of srv->msgq and wakes it
 * when its queue was empty. Any thread; takes only the queue's mutex
 * (callable with shard locks held). The signature of server.h's post. */
void msgq_post(struct server *srv, unsigned worker, uint64_t client_id, mail_fn fn, void *arg);

/* A function run on the worker itself: CTX is msgq_drain's ctx (the
 * network layer passes its struct worker), NULL when the queue is
 * destroyed undelivered (FN must still release ARG). */
typedef void (*msgq_worker_fn)(void *ctx, void *arg);

/* Queues FN(ctx, ARG) for WORKER itself, in order with the client
 * messages posted by the same thread; wakes it as msgq_post does. Any
 * thread. */
void msgq_post_worker(struct server *srv, unsigned worker, msgq_worker_fn fn, void *arg);

/* Called by WORKER's thread: runs every queued message. For each client
 * that received one, calls TOUCHED(c, CTX) (the network layer queues a
 * send). Worker messages get CTX. Returns the number of messages run. */
typedef void (*mail_touched_fn)(struct client *c, void *ctx);
unsigned msgq_drain(struct server *srv, unsigned worker, mail_touched_fn touched, void *ctx);

#endif
