/* msgq — see msgq.h. */
#include "zarisd/net/msgq.h"

#include <pthread.h>
#include <stdbool.h>

#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/server/client.h"
#include "zarisd/server/registry.h"

struct mail {
	struct mail *next;
	uint64_t client_id;
	mail_fn fn;	    /* for a client, or */
	msgq_worker_fn wfn; /* for the worker itself */
	void *arg;
};

struct inbox {
	pthread_mutex_t lock; /* guards head and tail */
	struct mail *head, *tail;
	char pad[64];
};

struct msgq {
	unsigned nworkers;
	struct inbox *inboxes;
};

struct msgq *msgq_create(unsigned nworkers)
{
	struct msgq *mb = zr_calloc(1, sizeof(*mb));
	mb->nworkers = nworkers;
	mb->inboxes = zr_calloc(nworkers, sizeof(*mb->inboxes));
	for (unsigned i = 0; i < nworkers; i++)
		pthread_mutex_init(&mb->inboxes[i].lock, NULL);
	return mb;
}

static void run_all(struct mail *m, struct server *srv, unsigned worker, mail_touched_fn touched, void *ctx)
{
	while (m) {
		struct mail *next = m->next;
		if (m->wfn) {
			m->wfn(srv ? ctx : NULL, m->arg);
			zr_free(m);
			m = next;
			continue;
		}
		struct client *c = srv ? registry_find_local(srv->clients, worker, m->client_id) : NULL;
		m->fn(c, m->arg);
		if (c && touched)
			touched(c, ctx);
		zr_free(m);
		m = next;
	}
}

void msgq_destroy(struct msgq *mb)
{
	if (!mb)
		return;
	for (unsigned i = 0; i < mb->nworkers; i++) {
		run_all(mb->inboxes[i].head, NULL, i, NULL, NULL);
		pthread_mutex_destroy(&mb->inboxes[i].lock);
	}
	zr_free(mb->inboxes);
	zr_free(mb);
}

static void post(struct server *srv, unsigned worker, struct mail *m)
{
	struct inbox *in = &srv->msgq->inboxes[worker];
	pthread_mutex_lock(&in->lock);
	bool was_empty = in->head == NULL;
	if (in->tail)
		in->tail->next = m;
	else
		in->head = m;
	in->tail = m;
	pthread_mutex_unlock(&in->lock);
	/* one wake-up per batch: the drain takes everything queued so far */
	if (was_empty)
		server_wake(srv, worker);
}

void msgq_post(struct server *srv, unsigned worker, uint64_t client_id, mail_fn fn, void *arg)
{
	struct mail *m = zr_malloc(sizeof(*m));
	*m = (struct mail){ .client_id = client_id, .fn = fn, .arg = arg };
	post(srv, worker, m);
}

void msgq_post_worker(struct server *srv, unsigned worker, msgq_worker_fn fn, void *arg)
{
	struct mail *m = zr_malloc(sizeof(*m));
	*m = (struct mail){ .wfn = fn, .arg = arg };
	post(srv, worker, m);
}

unsigned msgq_drain(struct server *srv, unsigned worker, mail_touched_fn touched, void *ctx)
{
	ZR_ASSERT_ON_WORKER(worker); /* its clients are touched here */
	struct inbox *in = &srv->msgq->inboxes[worker];
	pthread_mutex_lock(&in->lock);
	struct mail *m = in->head;
	in->head = in->tail = NULL;
	pthread_mutex_unlock(&in->lock);
	unsigned n = 0;
	for (struct mail *p = m; p; p = p->next)
		n++;
	run_all(m, srv, worker, touched, ctx);
	return n;
}
