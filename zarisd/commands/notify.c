/* notify — see notify.h. Channel names are built on the stack for keys
 * that fit (the common case), else in one heap block. */
#include "zarisd/commands/notify.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/store/store.h"

/* Publishes PREFIX<db>__:NAME with payload MSG. */
static void publish_named(struct server *srv, const char *prefix, unsigned db, const char *name, size_t nlen,
			  const char *msg, size_t mlen)
{
	char stack[256];
	char head[48];
	int hlen = snprintf(head, sizeof(head), "%s%u__:", prefix, db);
	size_t clen = (size_t)hlen + nlen;
	char *ch = clen <= sizeof(stack) ? stack : zr_malloc(clen);
	memcpy(ch, head, (size_t)hlen);
	memcpy(ch + hlen, name, nlen);
	pubsub_publish(srv, false, ch, clen, msg, mlen);
	if (ch != stack)
		zr_free(ch);
}

void notify_keyspace_event(struct server *srv, int type, const char *event, const char *key, size_t klen,
			   unsigned db)
{
	int flags = atomic_load_explicit(&srv->cfg->notify_keyspace_events, memory_order_relaxed);
	if (!(flags & type))
		return;
	size_t elen = strlen(event);
	if (flags & NOTIFY_KEYSPACE)
		publish_named(srv, "__keyspace@", db, key, klen, event, elen);
	if (flags & NOTIFY_KEYEVENT)
		publish_named(srv, "__keyevent@", db, event, elen, key, klen);
}

void notify_arg(struct client *c, int type, const char *event, int argi)
{
	notify_keyspace_event(c->srv, type, event, c->argv[argi].ptr, c->argv[argi].len, c->db);
}

/* The store's hook: runs with the key's shard lock held, which is fine,
 * publishing takes no shard lock. */
static void store_hook(void *ctx, enum store_event ev, unsigned db, const char *key, size_t klen)
{
	struct server *srv = ctx;
	switch (ev) {
	case STORE_EVENT_NEW:
		notify_keyspace_event(srv, NOTIFY_NEW, "new", key, klen, db);
		break;
	case STORE_EVENT_EXPIRED:
		notify_keyspace_event(srv, NOTIFY_EXPIRED, "expired", key, klen, db);
		break;
	case STORE_EVENT_EVICTED:
		notify_keyspace_event(srv, NOTIFY_EVICTED, "evicted", key, klen, db);
		break;
	}
}

void notify_init(struct server *srv)
{
	/* once per process: SUBSCRIBE calls this, and must not write the
	 * store's shared line every time */
	static _Atomic int installed;
	if (atomic_load_explicit(&installed, memory_order_relaxed))
		return;
	store_set_event_hook(srv->store, store_hook, srv);
	atomic_store_explicit(&installed, 1, memory_order_relaxed);
}
