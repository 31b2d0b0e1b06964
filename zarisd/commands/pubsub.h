/* pubsub — the process-wide subscription registry and message delivery
 * (Redis 7.0's pubsub.c semantics, for clients spread over every worker).
 *
 * One registry holds, for each kind (channels, patterns, shard channels),
 * name -> subscribers, and for each subscribed client its own sets. It is
 * guarded by one rwlock: SUBSCRIBE / UNSUBSCRIBE / disconnects write,
 * PUBLISH and introspection read, so publishers on different workers run
 * in parallel.
 *
 * Lock order: shard locks (store) -> registry locks of CLIENT LIST ->
 * the pubsub lock -> a worker message queue lock. PUBLISH is called by keyspace
 * notifications with shard locks held, so nothing here ever takes a shard
 * lock or a registry lock, and nothing is called back with the pubsub lock
 * held except reply encoding for the calling client.
 *
 * Delivery: PUBLISH counts the receivers under the lock and posts one
 * message per subscriber to the subscriber's worker (server_post); the
 * worker encodes it for the client's RESP version into c->out. The queue
 * is FIFO per posting thread, so each publisher's order is kept. A message
 * whose subscription was dropped before it ran is discarded (an RESP2
 * client must never see a push once it has left the subscribed state).
 * A publisher subscribed to its own channel gets the message inline,
 * before its PUBLISH reply, as in Redis. Messages for a client over the
 * pubsub hard output limit are dropped: the network layer closes it at the
 * end of the loop turn anyway, so its memory stays bounded.
 *
 * Per-client state lives here, not in struct client: each worker has a
 * table of its subscribed clients (by id). The owning worker changes it
 * (under the write lock) and may read it without the lock; other threads
 * read it under the read lock (CLIENT LIST).
 */
#ifndef ZR_PUBSUB_H
#define ZR_PUBSUB_H

#include <stdbool.h>
#include <stddef.h>

struct server;
struct client;
struct command;

enum pubsub_kind {
	PUBSUB_CHANNEL = 0, /* SUBSCRIBE / PUBLISH */
	PUBSUB_PATTERN = 1, /* PSUBSCRIBE */
	PUBSUB_SHARD = 2,   /* SSUBSCRIBE / SPUBLISH (standalone: its own namespace) */
	PUBSUB_KINDS = 3,
};

/* Creates the registry if it does not exist yet; idempotent, any thread.
 * Publishing before it exists finds no receivers. */
void pubsub_init(struct server *srv);

/* Subscribes C (owning worker) to NAME of kind K. Returns true when it was
 * added, false when C already had it. pubsub_init() must have run. */
bool pubsub_subscribe(struct client *c, enum pubsub_kind k, const char *name, size_t len);
/* Drops C's subscription to NAME of kind K; true when C had it. */
bool pubsub_unsubscribe(struct client *c, enum pubsub_kind k, const char *name, size_t len);

/* Called once per subscription pubsub_unsubscribe_all() removes, with the
 * name (borrowed for the call) and C's count after the removal as
 * pubsub_reply_count() computes it. */
typedef void (*pubsub_removed_fn)(struct client *c, enum pubsub_kind k, const char *name, size_t len,
				  void *ctx);
/* Drops every subscription of kind K of C (owning worker), oldest first
 * (Redis's order for patterns); FN may be NULL. Returns how many were
 * dropped. */
unsigned pubsub_unsubscribe_all(struct client *c, enum pubsub_kind k, pubsub_removed_fn fn, void *ctx);

/* Writes Redis's confirmation push [WHAT, NAME (NULL: a null), C's
 * pubsub_reply_count(K)] to C, WHAT being "subscribe", "unsubscribe" or
 * their p/s forms for SUBSCRIBE. Like every pub/sub push (messages too) it
 * is written even under CLIENT REPLY OFF or SKIP: Redis's CLIENT_PUSHING
 * lifts the silencing for them. Owning worker. */
void pubsub_reply_confirm(struct client *c, enum pubsub_kind k, bool subscribe, const char *name, size_t len);

/* C's subscriptions of kind K (owning worker, no lock). */
unsigned pubsub_client_count(const struct client *c, enum pubsub_kind k);
/* The count Redis puts in (un)subscribe confirmations of kind K: channels
 * + patterns for the classic kinds, shard channels for the shard kind. */
unsigned pubsub_reply_count(const struct client *c, enum pubsub_kind k);
/* Whether C has any subscription: Redis's CLIENT_PUBSUB flag (owning
 * worker, no lock; O(1) when its worker has no subscribed client). */
bool pubsub_client_is_subscribed(const struct client *c);
/* C's subscription counts, for CLIENT LIST of any client: any thread
 * (takes the read lock; may be called under a registry lock). */
void pubsub_client_counts(const struct client *c, unsigned counts[PUBSUB_KINDS]);
/* CLIENT KILL of C from any thread (C's worker closes it later): from now
 * on PUBLISH neither counts nor delivers to C and NUMSUB does not count it,
 * as in Redis, where the killed client is gone once KILL answers. C must
 * stay alive for the call (the caller holds C's registry lock). */
void pubsub_client_kill(const struct client *c);
/* Drops everything C holds (disconnect, RESET); no replies. Owning worker. */
void pubsub_client_free(struct client *c);

/* Posts MSG to channel CH (SHARD: the shard namespace, no patterns).
 * Returns the number of receivers at this instant. Any thread, with or
 * without shard locks held. */
long long pubsub_publish(struct server *srv, bool shard, const char *ch, size_t clen, const char *msg,
			 size_t mlen);

/* Dispatch gate (Redis's processCommand check): false after replying
 * Redis's "Can't execute" error when C, an RESP2 client in the subscribed
 * state, asks for CMD, which is not (P|S)(UN)SUBSCRIBE, PING, QUIT or
 * RESET. Owning worker. */
bool pubsub_allowed(struct client *c, const struct command *cmd);
/* Around every handler call: C's command runs on this thread (inline
 * delivery to a publisher subscribed to its own channel needs to know). */
void pubsub_command_begin(struct client *c);
void pubsub_command_end(struct client *c);

/* Introspection (PUBSUB CHANNELS / NUMSUB / NUMPAT, INFO). */
typedef void (*pubsub_name_fn)(const char *name, size_t len, void *ctx);
/* Calls FN for every channel of kind K (CHANNEL or SHARD) with at least
 * one subscriber whose name matches the glob PAT (NULL = all), under the
 * read lock (FN must not call back into pubsub). */
void pubsub_channels(struct server *srv, enum pubsub_kind k, const char *pat, size_t plen, pubsub_name_fn fn,
		     void *ctx);
/* Subscribers of NAME of kind K (patterns not counted, like Redis). */
unsigned long pubsub_numsub(struct server *srv, enum pubsub_kind k, const char *name, size_t len);
/* Distinct names of kind K with subscribers (NUMPAT: distinct patterns;
 * INFO pubsub_channels / pubsub_patterns / pubsubshard_channels). */
unsigned long pubsub_names(struct server *srv, enum pubsub_kind k);

#endif
