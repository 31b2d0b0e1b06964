/* mailbox — work for a client owned by another worker: pub/sub messages,
 * blocking-pop hand-offs, keyspace notifications, anything that must run
 * on the client's own thread.
 *
 * Each worker has one inbox (a mutex-guarded FIFO). Any thread posts; the
 * owning worker drains it when woken, finds each client by id and runs the
 * posted function there, on its own thread, where it may write to
 * c->out. Messages posted by one thread to one worker run in the order
 * they were posted, so per-publisher order is kept.
 */
#ifndef ZR_MAILBOX_H
#define ZR_MAILBOX_H

#include <stdint.h>

struct server;
struct client;
struct mailbox;

/* Runs on the owning worker. C is NULL when the client has gone since the
 * post: the function must still release ARG. */
typedef void (*mail_fn)(struct client *c, void *arg);

struct mailbox *mailbox_create(unsigned nworkers);
/* Frees every queued message, calling each fn with a NULL client. */
void mailbox_destroy(struct mailbox *mb);

/* Queues FN(client CLIENT_ID, ARG) for WORKER and wakes it when its inbox
 * was empty. Any thread; takes only the inbox's mutex (callable with shard
 * locks held). */
void mailbox_post(struct server *srv, unsigned worker, uint64_t client_id, mail_fn fn, void *arg);

/* Called by WORKER's thread: runs every queued message. For each client
 * that received one, calls TOUCHED(c, CTX) (the network layer queues a
 * send). Returns the number of messages run. */
typedef void (*mail_touched_fn)(struct client *c, void *ctx);
unsigned mailbox_drain(struct server *srv, unsigned worker, mail_touched_fn touched, void *ctx);

#endif
