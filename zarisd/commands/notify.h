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

struct client;
struct server;

/* Classes, one bit per notify-keyspace-events letter (Redis's values). */
enum notify_flag {
	NOTIFY_KEYSPACE = 1 << 0,  /* K: __keyspace@<db>__:<key> receives the event name */
	NOTIFY_KEYEVENT = 1 << 1,  /* E: __keyevent@<db>__:<event> receives the key */
	NOTIFY_GENERIC = 1 << 2,   /* g: DEL EXPIRE RENAME COPY MOVE PERSIST ... */
	NOTIFY_STRING = 1 << 3,	   /* $ */
	NOTIFY_LIST = 1 << 4,	   /* l */
	NOTIFY_SET = 1 << 5,	   /* s */
	NOTIFY_HASH = 1 << 6,	   /* h */
	NOTIFY_ZSET = 1 << 7,	   /* z */
	NOTIFY_EXPIRED = 1 << 8,   /* x */
	NOTIFY_EVICTED = 1 << 9,   /* e */
	NOTIFY_STREAM = 1 << 10,   /* t */
	NOTIFY_KEY_MISS = 1 << 11, /* m (excluded from A) */
	NOTIFY_LOADED = 1 << 12,   /* module only, no letter */
	NOTIFY_MODULE = 1 << 13,   /* d */
	NOTIFY_NEW = 1 << 14,	   /* n (excluded from A) */
};

/* A: every class but m and n. */
#define NOTIFY_ALL                                                                               \
	(NOTIFY_GENERIC | NOTIFY_STRING | NOTIFY_LIST | NOTIFY_SET | NOTIFY_HASH | NOTIFY_ZSET | \
	 NOTIFY_EXPIRED | NOTIFY_EVICTED | NOTIFY_STREAM | NOTIFY_MODULE)

/* The CONFIG SET error for a bad class letter (after Redis's prefix). */
#define NOTIFY_ERR_CLASS "Invalid event class character. Use 'Ag$lshzxeKEtmdn'."

/* Parses a notify-keyspace-events value ("KEA", "Ex", ""). Returns the
 * flags, or -1 when a character is not a class letter. */
int notify_flags_parse(const char *s);
/* Writes the flags as CONFIG GET shows them (Redis's canonical order,
 * "A" for all of NOTIFY_ALL). */
void notify_flags_format(int flags, char *buf, size_t size);

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
