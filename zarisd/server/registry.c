/* registry — see registry.h. */
#include "zarisd/server/registry.h"

#include <pthread.h>
#include <stdatomic.h>

#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"

struct registry_worker {
	pthread_mutex_t lock; /* guards head and the names of this worker's clients */
	struct client *head;
	/* id -> client, chained through reg_hnext; touched only by the owning
	 * worker (add, remove and find all run on its thread) */
	struct client **index;
	size_t index_size; /* power of two */
	size_t count;
	bool kill_pending; /* a client was marked since the last flush */
	char pad[64];
};

struct registry {
	unsigned nworkers;
	_Atomic uint64_t count;
	struct registry_worker *workers;
};

struct registry *registry_create(unsigned nworkers)
{
	struct registry *r = zr_calloc(1, sizeof(*r));
	r->nworkers = nworkers;
	r->workers = zr_calloc(nworkers, sizeof(*r->workers));
	for (unsigned i = 0; i < nworkers; i++)
		pthread_mutex_init(&r->workers[i].lock, NULL);
	return r;
}

void registry_destroy(struct registry *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->nworkers; i++) {
		pthread_mutex_destroy(&r->workers[i].lock);
		zr_free(r->workers[i].index);
	}
	zr_free(r->workers);
	zr_free(r);
}

static size_t id_slot(const struct registry_worker *w, uint64_t id)
{
	return (size_t)(id * 0x9E3779B97F4A7C15ULL >> 17) & (w->index_size - 1);
}

static void index_insert(struct registry_worker *w, struct client *c)
{
	if (w->count + 1 > w->index_size) {
		size_t old_size = w->index_size;
		struct client **old = w->index;
		w->index_size = old_size ? old_size * 2 : 64;
		w->index = zr_calloc(w->index_size, sizeof(*w->index));
		for (size_t i = 0; i < old_size; i++)
			for (struct client *p = old[i], *next; p; p = next) {
				next = p->reg_hnext;
				size_t k = id_slot(w, p->id);
				p->reg_hnext = w->index[k];
				w->index[k] = p;
			}
		zr_free(old);
	}
	size_t k = id_slot(w, c->id);
	c->reg_hnext = w->index[k];
	w->index[k] = c;
	w->count++;
}

static void index_remove(struct registry_worker *w, struct client *c)
{
	for (struct client **pp = &w->index[id_slot(w, c->id)]; *pp; pp = &(*pp)->reg_hnext)
		if (*pp == c) {
			*pp = c->reg_hnext;
			w->count--;
			return;
		}
}

struct client *registry_find_local(struct registry *r, unsigned worker, uint64_t id)
{
	ZR_ASSERT_ON_WORKER(worker);
	struct registry_worker *w = &r->workers[worker];
	if (!w->index_size)
		return NULL;
	for (struct client *p = w->index[id_slot(w, id)]; p; p = p->reg_hnext)
		if (p->id == id)
			return p;
	return NULL;
}

void registry_add(struct registry *r, struct client *c)
{
	ZR_ASSERT_ON_WORKER(c->worker); /* the index is the owner's alone */
	struct registry_worker *w = &r->workers[c->worker];
	index_insert(w, c);
	pthread_mutex_lock(&w->lock);
	c->reg_prev = NULL;
	c->reg_next = w->head;
	if (w->head)
		w->head->reg_prev = c;
	w->head = c;
	pthread_mutex_unlock(&w->lock);
	atomic_fetch_add_explicit(&r->count, 1, memory_order_relaxed);
}

void registry_remove(struct registry *r, struct client *c)
{
	ZR_ASSERT_ON_WORKER(c->worker);
	struct registry_worker *w = &r->workers[c->worker];
	index_remove(w, c);
	pthread_mutex_lock(&w->lock);
	if (c->reg_prev)
		c->reg_prev->reg_next = c->reg_next;
	else
		w->head = c->reg_next;
	if (c->reg_next)
		c->reg_next->reg_prev = c->reg_prev;
	c->reg_next = c->reg_prev = NULL;
	pthread_mutex_unlock(&w->lock);
	atomic_fetch_sub_explicit(&r->count, 1, memory_order_relaxed);
}

void registry_set_name(struct registry *r, struct client *c, char *name)
{
	ZR_ASSERT_ON_WORKER(c->worker);
	struct registry_worker *w = &r->workers[c->worker];
	pthread_mutex_lock(&w->lock);
	char *old = c->name;
	c->name = name;
	pthread_mutex_unlock(&w->lock);
	zr_free(old);
}

void registry_foreach(struct registry *r, registry_visit_fn fn, void *ctx)
{
	for (unsigned i = 0; i < r->nworkers; i++) {
		struct registry_worker *w = &r->workers[i];
		pthread_mutex_lock(&w->lock);
		for (struct client *c = w->head; c; c = c->reg_next)
			fn(c, ctx);
		pthread_mutex_unlock(&w->lock);
	}
}

uint64_t registry_count(struct registry *r)
{
	return atomic_load_explicit(&r->count, memory_order_relaxed);
}

void registry_mark_kill(struct registry *r, struct client *c)
{
	/* release: the owner's acquire load of kill_requested happens after the
	 * wake-up; nothing else is published with it, but it must not be lost. */
	atomic_store_explicit(&c->kill_requested, true, memory_order_release);
	ZR_ASSERT_MUTEX_HELD(&r->workers[c->worker].lock); /* a visit's */
	r->workers[c->worker].kill_pending = true;
}

void registry_flush_kills(struct registry *r, struct server *srv)
{
	for (unsigned i = 0; i < r->nworkers; i++) {
		struct registry_worker *w = &r->workers[i];
		pthread_mutex_lock(&w->lock);
		bool pending = w->kill_pending;
		w->kill_pending = false;
		pthread_mutex_unlock(&w->lock);
		if (pending)
			server_wake(srv, i);
	}
}
