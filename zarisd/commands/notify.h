/* notify — keyspace notifications (Redis 7.0's notify.c): the
 * notify-keyspace-events classes and the one call every command makes
 * where Redis calls notifyKeyspaceEvent().
 *
 * For data-type handlers (hash, set, zset, list ...): after a successful
 * modification, with the shard locks still held, call
 *
 *     notify_keyspace_event(c->srv, NOTIFY_HASH, "hset", key, klen, c->db);
 *
 * with Redis's class and event name (t_hash.c: "hset", "hincrby", "hdel";
 * t_set.c: "sadd", "srem", "spop", "sinterstore" ...; t_zset.c: "zadd",
 * "zincr", "zrem" ...; t_list.c: "lpush", "rpush", "lpop", "lset" ...),
 * in Redis's order, once per Redis call. When a command deletes a key
 * because the collection became empty, Redis adds
 *
 *     notify_keyspace_event(c->srv, NOTIFY_GENERIC, "del", key, klen, c->db);
 *
 * right after the command's own event. The "new" (key created), "expired"
 * and "evicted" events come from the store itself (notify_init installs
 * its hook): handlers never send them.
 *
 * The call is cheap when notifications are off (one relaxed load) and
 * takes no shard lock: it publishes through pubsub.h, whose lock comes
 * after the shard locks. Any thread.
 */
#ifndef ZR_NOTIFY_H
#define ZR_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

#include "zarisd/server/notify_flags.h"

struct client;
struct server;

/* Publishes EVENT for KEY of DB when class TYPE (one enum notify_flag) is
 * enabled: "__keyspace@DB__:KEY" gets EVENT, then "__keyevent@DB__:EVENT"
 * gets KEY, each as configured by K and E. */
void notify_keyspace_event(struct server *srv, int type, const char *event, const char *key, size_t klen,
			   unsigned db);

/* notify_keyspace_event for the client's argument ARGI in its database:
 * what nearly every handler sends. */
void notify_arg(struct client *c, int type, const char *event, int argi);

/* Installs the store's event hook ("new", "expired", "evicted"); idempotent,
 * any thread. Until it runs no such event is sent, which is unobservable
 * as long as it runs before the first subscription (cmd_pubsub.c does). */
void notify_init(struct server *srv);

#endif
