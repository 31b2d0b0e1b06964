/* pubsub — see pubsub.h for the model, the lock order and delivery.
 *
 * Shapes: a channel (struct ps_chan, one per name and kind with at least
 * one subscriber) holds an array of links; a link (struct ps_link) is one
 * subscription and sits both in its channel's array (at idx, so removal is
 * O(1) by swapping the last one in) and in its client's set of that kind
 * (a hash table keyed by the channel's name). A client's links of one kind
 * are also chained in subscription order (first/last, prev/next), the order
 * in which an argument-less (P|S)UNSUBSCRIBE confirms them: Redis keeps a
 * client's patterns in a list, so PUNSUBSCRIBE confirms them in
 * subscription order; its channels are in a dict, whose order is the
 * hash's, and subscription order is the one a client can expect. A client
 * record (struct ps_client) exists while the client has at least one
 * subscription.
 *
 * Invariants: a channel exists iff nsubs > 0; link->ch->subs[link->idx] ==
 * link; a channel's name and hash never change, and the channel outlives
 * every link to it, so the owner may read its links' names without the
 * lock. The registry itself is created once and never freed (the process
 * ends with it).
 */
#include "zarisd/commands/pubsub.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

/* --- a small intrusive chained hash table ------------------------------------- */

struct ps_node {
	struct ps_node *next;
	uint64_t hash;
};

struct ps_table {
	struct ps_node **b; /* NULL while empty */
	size_t nb;	    /* buckets, a power of two (0 while b is NULL) */
	size_t n;
};

static void tab_resize(struct ps_table *t, size_t nb)
{
	struct ps_node **nbk = zr_calloc(nb, sizeof(*nbk));
	for (size_t i = 0; i < t->nb; i++) {
		struct ps_node *e = t->b[i];
		while (e) {
			struct ps_node *next = e->next;
			size_t j = e->hash & (nb - 1);
			e->next = nbk[j];
			nbk[j] = e;
			e = next;
		}
	}
	zr_free(t->b);
	t->b = nbk;
	t->nb = nb;
}

static void tab_add(struct ps_table *t, struct ps_node *e)
{
	if (t->n >= t->nb)
		tab_resize(t, t->nb ? t->nb * 2 : 4);
	size_t j = e->hash & (t->nb - 1);
	e->next = t->b[j];
	t->b[j] = e;
	t->n++;
}

/* Unlinks E (which must be in T). */
static void tab_del(struct ps_table *t, struct ps_node *e)
{
	struct ps_node **pp = &t->b[e->hash & (t->nb - 1)];
	while (*pp != e)
		pp = &(*pp)->next;
	*pp = e->next;
	t->n--;
	if (t->n == 0) {
		ZR_FREE(t->b);
		t->nb = 0;
	} else if (t->nb > 16 && t->n * 8 < t->nb) {
		tab_resize(t, t->nb / 4);
	}
}

/* --- registry shapes ---------------------------------------------------------- */

struct ps_link;

struct ps_chan {
	struct ps_node node; /* in ps.chans[kind]; hash of the name */
	struct ps_link **subs;
	uint32_t nsubs, cap;
	size_t len;
	char name[];
};

struct ps_client {
	struct ps_node node; /* in ps.clients[worker]; hash = id */
	uint64_t id;
	unsigned worker;
	struct ps_table sets[PUBSUB_KINDS]; /* links, keyed by their channel's name hash */
	struct ps_link *first[PUBSUB_KINDS], *last[PUBSUB_KINDS]; /* the same links, oldest first */
	/* CLIENT KILL from another thread: PUBLISH and NUMSUB pass it over
	 * until its worker closes it (set under the write lock, read under
	 * the read lock; the owner never reads it) */
	bool killed;
};

struct ps_link {
	struct ps_node node; /* in cl->sets[kind]; hash = ch->node.hash */
	struct ps_client *cl;
	struct ps_chan *ch;
	uint32_t idx;		     /* position in ch->subs */
	struct ps_link *prev, *next; /* in cl->first[kind]..last[kind], subscription order */
};

struct pubsub {
	pthread_rwlock_t lock;
	struct ps_table chans[PUBSUB_KINDS];
	struct ps_table *clients;   /* [nworkers]: subscribed clients of each worker */
	_Atomic unsigned *nclients; /* [nworkers]: clients[w].n, for the owner's lock-free fast path */
	unsigned nworkers;
	/* Subscriptions of each kind (relaxed: a hint that lets PUBLISH with
	 * no subscriber at all skip the lock; a subscription made concurrently
	 * with a publish may or may not see it, as with any interleaving). */
	_Atomic uint64_t nsubs[PUBSUB_KINDS];
};

static _Atomic(struct pubsub *) g_ps;
static pthread_mutex_t g_ps_init = PTHREAD_MUTEX_INITIALIZER;

/* The client whose command this thread is running (pubsub_command_begin),
 * for inline delivery to a publisher subscribed to its own channel. */
static _Thread_local struct client *tl_current;

static struct pubsub *ps_get(void)
{
	/* acquire: pairs with the release in pubsub_init, so the tables'
	 * initial state is visible */
	return atomic_load_explicit(&g_ps, memory_order_acquire);
}

void pubsub_init(struct server *srv)
{
	if (ps_get())
		return;
	pthread_mutex_lock(&g_ps_init);
	if (!atomic_load_explicit(&g_ps, memory_order_relaxed)) {
		struct pubsub *ps = zr_calloc(1, sizeof(*ps));
		pthread_rwlock_init(&ps->lock, NULL);
		ps->nworkers = srv->nworkers ? srv->nworkers : 1;
		ps->clients = zr_calloc(ps->nworkers, sizeof(*ps->clients));
		ps->nclients = zr_calloc(ps->nworkers, sizeof(*ps->nclients));
		atomic_store_explicit(&g_ps, ps, memory_order_release);
	}
	pthread_mutex_unlock(&g_ps_init);
}

static struct ps_chan *chan_find(struct ps_table *t, uint64_t h, const char *name, size_t len)
{
	if (!t->nb)
		return NULL;
	for (struct ps_node *e = t->b[h & (t->nb - 1)]; e; e = e->next) {
		struct ps_chan *ch = (struct ps_chan *)e;
		if (e->hash == h && ch->len == len && !memcmp(ch->name, name, len))
			return ch;
	}
	return NULL;
}

static struct ps_link *link_find(const struct ps_table *set, uint64_t h, const char *name, size_t len)
{
	if (!set->nb)
		return NULL;
	for (struct ps_node *e = set->b[h & (set->nb - 1)]; e; e = e->next) {
		struct ps_link *l = (struct ps_link *)e;
		if (e->hash == h && l->ch->len == len && !memcmp(l->ch->name, name, len))
			return l;
	}
	return NULL;
}

/* C's record, or NULL. The owning worker may call it without the lock;
 * others need at least the read lock. */
static struct ps_client *client_find(struct pubsub *ps, unsigned worker, uint64_t id)
{
	if (worker >= ps->nworkers)
		return NULL;
	struct ps_table *t = &ps->clients[worker];
	if (!t->nb)
		return NULL;
	for (struct ps_node *e = t->b[id & (t->nb - 1)]; e; e = e->next)
		if (((struct ps_client *)e)->id == id)
			return (struct ps_client *)e;
	return NULL;
}

static unsigned client_total(const struct ps_client *cl)
{
	unsigned n = 0;
	for (int k = 0; k < PUBSUB_KINDS; k++)
		n += (unsigned)cl->sets[k].n;
	return n;
}

/* Removes link L from its channel and client (write lock held); frees the
 * channel when L was its last subscriber, and the client record when L was
 * its last subscription. */
static void link_drop(struct pubsub *ps, enum pubsub_kind k, struct ps_link *l)
{
	struct ps_chan *ch = l->ch;
	struct ps_client *cl = l->cl;
	struct ps_link *moved = ch->subs[--ch->nsubs];
	ch->subs[l->idx] = moved;
	moved->idx = l->idx;
	tab_del(&cl->sets[k], &l->node);
	*(l->prev ? &l->prev->next : &cl->first[k]) = l->next;
	*(l->next ? &l->next->prev : &cl->last[k]) = l->prev;
	zr_free(l);
	atomic_fetch_sub_explicit(&ps->nsubs[k], 1, memory_order_relaxed);
	if (ch->nsubs == 0) {
		tab_del(&ps->chans[k], &ch->node);
		zr_free(ch->subs);
		zr_free(ch);
	}
	if (client_total(cl) == 0) {
		tab_del(&ps->clients[cl->worker], &cl->node);
		atomic_store_explicit(&ps->nclients[cl->worker], (unsigned)ps->clients[cl->worker].n,
				      memory_order_relaxed);
		zr_free(cl);
	}
}

bool pubsub_subscribe(struct client *c, enum pubsub_kind k, const char *name, size_t len)
{
	struct pubsub *ps = ps_get();
	uint64_t h = zr_hash(name, len);
	struct ps_client *cl = client_find(ps, c->worker, c->id);
	if (cl && link_find(&cl->sets[k], h, name, len))
		return false;
	pthread_rwlock_wrlock(&ps->lock);
	if (!cl) {
		cl = zr_calloc(1, sizeof(*cl));
		cl->id = c->id;
		cl->worker = c->worker;
		cl->node.hash = c->id;
		tab_add(&ps->clients[c->worker], &cl->node);
		atomic_store_explicit(&ps->nclients[c->worker], (unsigned)ps->clients[c->worker].n,
				      memory_order_relaxed);
	}
	struct ps_chan *ch = chan_find(&ps->chans[k], h, name, len);
	if (!ch) {
		ch = zr_calloc(1, sizeof(*ch) + len + 1);
		ch->node.hash = h;
		ch->len = len;
		memcpy(ch->name, name, len);
		tab_add(&ps->chans[k], &ch->node);
	}
	if (ch->nsubs == ch->cap) {
		ch->cap = ch->cap ? ch->cap * 2 : 4;
		ch->subs = zr_realloc(ch->subs, sizeof(*ch->subs) * ch->cap);
	}
	struct ps_link *l = zr_malloc(sizeof(*l));
	l->node.hash = h;
	l->cl = cl;
	l->ch = ch;
	l->idx = ch->nsubs;
	ch->subs[ch->nsubs++] = l;
	tab_add(&cl->sets[k], &l->node);
	l->next = NULL;
	l->prev = cl->last[k];
	*(l->prev ? &l->prev->next : &cl->first[k]) = l;
	cl->last[k] = l;
	atomic_fetch_add_explicit(&ps->nsubs[k], 1, memory_order_relaxed);
	pthread_rwlock_unlock(&ps->lock);
	return true;
}

bool pubsub_unsubscribe(struct client *c, enum pubsub_kind k, const char *name, size_t len)
{
	struct pubsub *ps = ps_get();
	if (!ps)
		return false;
	struct ps_client *cl = client_find(ps, c->worker, c->id);
	struct ps_link *l = cl ? link_find(&cl->sets[k], zr_hash(name, len), name, len) : NULL;
	if (!l)
		return false;
	pthread_rwlock_wrlock(&ps->lock);
	link_drop(ps, k, l);
	pthread_rwlock_unlock(&ps->lock);
	return true;
}

unsigned pubsub_unsubscribe_all(struct client *c, enum pubsub_kind k, pubsub_removed_fn fn, void *ctx)
{
	struct pubsub *ps = ps_get();
	if (!ps)
		return 0;
	unsigned n = 0;
	char small[128];
	for (;;) {
		struct ps_client *cl = client_find(ps, c->worker, c->id);
		struct ps_link *l = cl ? cl->first[k] : NULL;
		if (!l)
			break;
		/* the channel may go with the link: keep its name for FN */
		size_t len = l->ch->len;
		char *name = len <= sizeof(small) ? small : zr_malloc(len);
		memcpy(name, l->ch->name, len);
		pthread_rwlock_wrlock(&ps->lock);
		link_drop(ps, k, l);
		pthread_rwlock_unlock(&ps->lock);
		n++;
		if (fn)
			fn(c, k, name, len, ctx);
		if (name != small)
			zr_free(name);
	}
	return n;
}

unsigned pubsub_client_count(const struct client *c, enum pubsub_kind k)
{
	struct pubsub *ps = ps_get();
	if (!ps)
		return 0;
	struct ps_client *cl = client_find(ps, c->worker, c->id);
	return cl ? (unsigned)cl->sets[k].n : 0;
}

unsigned pubsub_reply_count(const struct client *c, enum pubsub_kind k)
{
	if (k == PUBSUB_SHARD)
		return pubsub_client_count(c, PUBSUB_SHARD);
	return pubsub_client_count(c, PUBSUB_CHANNEL) + pubsub_client_count(c, PUBSUB_PATTERN);
}

bool pubsub_client_is_subscribed(const struct client *c)
{
	struct pubsub *ps = ps_get();
	if (!ps || c->worker >= ps->nworkers)
		return false;
	/* owner-only field writes happen on this thread: relaxed is exact here */
	if (atomic_load_explicit(&ps->nclients[c->worker], memory_order_relaxed) == 0)
		return false;
	return client_find(ps, c->worker, c->id) != NULL;
}

void pubsub_client_counts(const struct client *c, unsigned counts[PUBSUB_KINDS])
{
	struct pubsub *ps = ps_get();
	memset(counts, 0, sizeof(unsigned) * PUBSUB_KINDS);
	if (!ps)
		return;
	pthread_rwlock_rdlock(&ps->lock);
	struct ps_client *cl = client_find(ps, c->worker, c->id);
	if (cl)
		for (int k = 0; k < PUBSUB_KINDS; k++)
			counts[k] = (unsigned)cl->sets[k].n;
	pthread_rwlock_unlock(&ps->lock);
}

void pubsub_client_kill(const struct client *c)
{
	struct pubsub *ps = ps_get();
	if (!ps)
		return;
	pthread_rwlock_wrlock(&ps->lock);
	struct ps_client *cl = client_find(ps, c->worker, c->id);
	if (cl)
		cl->killed = true;
	pthread_rwlock_unlock(&ps->lock);
}

void pubsub_client_free(struct client *c)
{
	if (tl_current == c)
		tl_current = NULL;
	for (int k = 0; k < PUBSUB_KINDS; k++)
		pubsub_unsubscribe_all(c, (enum pubsub_kind)k, NULL, NULL);
}

/* --- delivery ----------------------------------------------------------------- */

enum ps_msg_type {
	PS_MESSAGE,  /* ["message", channel, payload] */
	PS_PMESSAGE, /* ["pmessage", pattern, channel, payload] */
	PS_SMESSAGE, /* ["smessage", channel, payload] */
};

/* One published message as seen through one subscription kind; shared by
 * every receiver (refs), freed by the last. */
struct ps_msg {
	_Atomic uint32_t refs;
	uint8_t type;	/* enum ps_msg_type */
	uint64_t khash; /* hash of the subscribed name (pattern or channel) */
	size_t plen, clen, mlen;
	char data[]; /* pattern, channel, payload */
};

static struct ps_msg *msg_new(enum ps_msg_type type, const struct ps_chan *sub, const char *ch, size_t clen,
			      const char *msg, size_t mlen, uint32_t refs)
{
	size_t plen = type == PS_PMESSAGE ? sub->len : 0;
	struct ps_msg *m = zr_malloc(sizeof(*m) + plen + clen + mlen);
	atomic_init(&m->refs, refs);
	m->type = (uint8_t)type;
	m->khash = sub->node.hash;
	m->plen = plen;
	m->clen = clen;
	m->mlen = mlen;
	memcpy(m->data, sub->name, plen);
	memcpy(m->data + plen, ch, clen);
	memcpy(m->data + plen + clen, msg, mlen);
	return m;
}

static void msg_unref(struct ps_msg *m)
{
	/* acq_rel: the last owner must see every other owner's reads done */
	if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) == 1)
		zr_free(m);
}

/* Opens a push to C: CLIENT REPLY OFF/SKIP mute replies, never pushes
 * (Redis's CLIENT_PUSHING). Returns the muting to give back to
 * push_end(). */
static bool push_begin(struct client *c)
{
	bool muted = c->out.muted;
	c->out.muted = false;
	return muted;
}

static void push_end(struct client *c, bool muted)
{
	c->out.muted = muted;
}

void pubsub_reply_confirm(struct client *c, enum pubsub_kind k, bool subscribe, const char *name, size_t len)
{
	static const char *const names[2][PUBSUB_KINDS] = {
		{ "unsubscribe", "punsubscribe", "sunsubscribe" },
		{ "subscribe", "psubscribe", "ssubscribe" },
	};
	bool muted = push_begin(c);
	reply_push(&c->out, 3);
	reply_bulk_cstr(&c->out, names[subscribe][k]);
	if (name)
		reply_bulk(&c->out, name, len);
	else
		reply_null(&c->out);
	reply_long(&c->out, pubsub_reply_count(c, k));
	push_end(c, muted);
}

static void msg_encode(struct client *c, const struct ps_msg *m)
{
	static const char *const names[] = { "message", "pmessage", "smessage" };
	const char *p = m->data;
	bool muted = push_begin(c);
	reply_push(&c->out, m->type == PS_PMESSAGE ? 4 : 3);
	reply_bulk_cstr(&c->out, names[m->type]);
	if (m->type == PS_PMESSAGE)
		reply_bulk(&c->out, p, m->plen);
	reply_bulk(&c->out, p + m->plen, m->clen);
	reply_bulk(&c->out, p + m->plen + m->clen, m->mlen);
	push_end(c, muted);
}

/* Whether C (its own worker, no lock) still holds the subscription M came
 * through: a message in flight past an UNSUBSCRIBE is dropped. */
static bool still_subscribed(struct pubsub *ps, const struct client *c, const struct ps_msg *m)
{
	struct ps_client *cl = client_find(ps, c->worker, c->id);
	if (!cl)
		return false;
	enum pubsub_kind k = m->type == PS_PMESSAGE   ? PUBSUB_PATTERN
			     : m->type == PS_SMESSAGE ? PUBSUB_SHARD
						      : PUBSUB_CHANNEL;
	const char *name = m->type == PS_PMESSAGE ? m->data : m->data + m->plen;
	size_t len = m->type == PS_PMESSAGE ? m->plen : m->clen;
	return link_find(&cl->sets[k], m->khash, name, len) != NULL;
}

/* Over the pubsub class's hard output limit: the client is being closed,
 * more output would only grow memory. */
static bool over_limit(const struct client *c)
{
	unsigned long long hard =
		atomic_load_explicit(&c->srv->cfg->obuf_pubsub_hard_limit, memory_order_relaxed);
	return hard && c->out.bytes > hard;
}

/* Runs on the subscriber's worker (server_post). */
static void deliver_mail(struct client *c, void *arg)
{
	struct ps_msg *m = arg;
	struct pubsub *ps = ps_get();
	if (c && ps && still_subscribed(ps, c, m) && !over_limit(c))
		msg_encode(c, m);
	msg_unref(m);
}

/* Hands M to subscriber L (read lock held). */
static void deliver(struct server *srv, struct ps_link *l, struct ps_msg *m)
{
	struct client *self = tl_current;
	if (self && self->id == l->cl->id) {
		/* the publisher itself: inline, before its own reply (Redis's order) */
		if (!over_limit(self))
			msg_encode(self, m);
		msg_unref(m);
		return;
	}
	server_post(srv, l->cl->worker, l->cl->id, deliver_mail, m);
}

/* SUB's subscribers that were not killed (read lock held). */
static uint32_t live_subs(const struct ps_chan *sub)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < sub->nsubs; i++)
		n += !sub->subs[i]->cl->killed;
	return n;
}

static long long deliver_all(struct server *srv, struct ps_chan *sub, enum ps_msg_type type, const char *ch,
			     size_t clen, const char *msg, size_t mlen)
{
	uint32_t n = live_subs(sub);
	if (n == 0)
		return 0;
	/* refs set before the first post: a receiver may finish before we do */
	struct ps_msg *m = msg_new(type, sub, ch, clen, msg, mlen, n);
	for (uint32_t i = 0; i < sub->nsubs; i++)
		if (!sub->subs[i]->cl->killed)
			deliver(srv, sub->subs[i], m);
	return n;
}

long long pubsub_publish(struct server *srv, bool shard, const char *ch, size_t clen, const char *msg,
			 size_t mlen)
{
	struct pubsub *ps = ps_get();
	if (!ps)
		return 0;
	enum pubsub_kind k = shard ? PUBSUB_SHARD : PUBSUB_CHANNEL;
	bool patterns = !shard && atomic_load_explicit(&ps->nsubs[PUBSUB_PATTERN], memory_order_relaxed);
	if (!patterns && !atomic_load_explicit(&ps->nsubs[k], memory_order_relaxed))
		return 0;
	long long receivers = 0;
	uint64_t h = zr_hash(ch, clen);
	pthread_rwlock_rdlock(&ps->lock);
	struct ps_chan *sub = chan_find(&ps->chans[k], h, ch, clen);
	if (sub)
		receivers += deliver_all(srv, sub, shard ? PS_SMESSAGE : PS_MESSAGE, ch, clen, msg, mlen);
	if (patterns) {
		struct ps_table *pt = &ps->chans[PUBSUB_PATTERN];
		for (size_t i = 0; i < pt->nb; i++) {
			for (struct ps_node *e = pt->b[i]; e; e = e->next) {
				struct ps_chan *p = (struct ps_chan *)e;
				if (zr_glob_match(p->name, p->len, ch, clen, false))
					receivers += deliver_all(srv, p, PS_PMESSAGE, ch, clen, msg, mlen);
			}
		}
	}
	pthread_rwlock_unlock(&ps->lock);
	return receivers;
}

/* --- the dispatch gate ------------------------------------------------------ */

bool pubsub_allowed(struct client *c, const struct command *cmd)
{
	/* RESP3 has pushes, so a subscribed RESP3 client may run anything.
	 * Cheapest test first: this runs for every command. */
	if (c->resp != 2 || !pubsub_client_is_subscribed(c) || (cmd->flags & CMD_SUBSCRIBED))
		return true;
	char name[96];
	command_full_name(cmd, name, sizeof(name));
	reply_errorf(
		&c->out,
		"ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are "
		"allowed in this context",
		name);
	return false;
}

void pubsub_command_begin(struct client *c)
{
	tl_current = c;
}

void pubsub_command_end(struct client *c)
{
	(void)c;
	tl_current = NULL;
}

/* --- introspection ------------------------------------------------------------ */

void pubsub_channels(struct server *srv, enum pubsub_kind k, const char *pat, size_t plen, pubsub_name_fn fn,
		     void *ctx)
{
	(void)srv;
	struct pubsub *ps = ps_get();
	if (!ps)
		return;
	pthread_rwlock_rdlock(&ps->lock);
	struct ps_table *t = &ps->chans[k];
	for (size_t i = 0; i < t->nb; i++) {
		for (struct ps_node *e = t->b[i]; e; e = e->next) {
			struct ps_chan *ch = (struct ps_chan *)e;
			if (!pat || zr_glob_match(pat, plen, ch->name, ch->len, false))
				fn(ch->name, ch->len, ctx);
		}
	}
	pthread_rwlock_unlock(&ps->lock);
}

unsigned long pubsub_numsub(struct server *srv, enum pubsub_kind k, const char *name, size_t len)
{
	(void)srv;
	struct pubsub *ps = ps_get();
	if (!ps)
		return 0;
	pthread_rwlock_rdlock(&ps->lock);
	struct ps_chan *ch = chan_find(&ps->chans[k], zr_hash(name, len), name, len);
	unsigned long n = ch ? live_subs(ch) : 0;
	pthread_rwlock_unlock(&ps->lock);
	return n;
}

unsigned long pubsub_names(struct server *srv, enum pubsub_kind k)
{
	(void)srv;
	struct pubsub *ps = ps_get();
	if (!ps)
		return 0;
	pthread_rwlock_rdlock(&ps->lock);
	unsigned long n = ps->chans[k].n;
	pthread_rwlock_unlock(&ps->lock);
	return n;
}
