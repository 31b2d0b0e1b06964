/* net/msgq: messages posted from other threads run on the owner in
 * post order, resolve the client by id, and reach a NULL client when it
 * has gone (so the payload is still released); wake-ups are batched. */
#include <pthread.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/server/client.h"
#include "zarisd/net/msgq.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"

#define POSTS 20000

static int wakes;
static int seen[2][POSTS];
static int order_ok = 1;
static int last[2] = { -1, -1 };
static int gone_calls;

static void count_wake(void *ctx, unsigned worker)
{
	(void)ctx;
	(void)worker;
	__atomic_fetch_add(&wakes, 1, __ATOMIC_RELAXED);
}

struct msg {
	int producer;
	int n;
};

static void deliver(struct client *c, void *arg)
{
	struct msg *m = arg;
	if (!c) {
		gone_calls++;
	} else {
		if (m->n != last[m->producer] + 1)
			order_ok = 0;
		last[m->producer] = m->n;
		seen[m->producer][m->n]++;
	}
	zr_free(m);
}

static struct server srv;

static void *producer(void *arg)
{
	int p = (int)(long)arg;
	for (int i = 0; i < POSTS; i++) {
		struct msg *m = zr_malloc(sizeof(*m));
		m->producer = p;
		m->n = i;
		msgq_post(&srv, 0, 7, deliver, m);
	}
	return NULL;
}

/* A worker message: records the order it ran in among client messages,
 * and the ctx it got. */
static int worker_runs, worker_after_client;
static void *worker_ctx_seen = (void *)1;
static void for_worker(void *ctx, void *arg)
{
	worker_runs++;
	worker_ctx_seen = ctx;
	worker_after_client = gone_calls == *(int *)arg;
}

static void touched(struct client *c, void *ctx)
{
	(*(int *)ctx)++;
	(void)c;
}

int main(void)
{
	zr_thread_set_worker(0); /* this thread drains worker 0's queue */
	srv.clients = registry_create(1);
	srv.msgq = msgq_create(1);
	srv.post = msgq_post;
	srv.wake = count_wake;
	struct client c;
	memset(&c, 0, sizeof(c));
	c.id = 7;
	c.worker = 0;
	registry_add(srv.clients, &c);
	ok(registry_find_local(srv.clients, 0, 7) == &c, "registry finds a client by id");
	ok(registry_find_local(srv.clients, 0, 8) == NULL, "and not an unknown id");

	pthread_t t[2];
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, producer, (void *)i);
	int touches = 0;
	unsigned drained = 0;
	int rounds = 0;
	while (drained < 2 * POSTS && rounds++ < 10000000)
		drained += msgq_drain(&srv, 0, touched, &touches);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	drained += msgq_drain(&srv, 0, touched, &touches);
	is_int(drained, 2 * POSTS, "every message ran once");
	int all_once = 1;
	for (int p = 0; p < 2; p++)
		for (int i = 0; i < POSTS; i++)
			all_once &= seen[p][i] == 1;
	ok(all_once, "each message reached the client exactly once");
	ok(order_ok, "messages of one producer ran in post order");
	is_int(touches, 2 * POSTS, "the owner was told about each delivery");
	ok(wakes > 0 && wakes <= 2 * POSTS, "wake-ups batched (%d for %d posts)", wakes, 2 * POSTS);

	registry_remove(srv.clients, &c);
	struct msg *m = zr_malloc(sizeof(*m));
	m->producer = 0;
	m->n = 0;
	msgq_post(&srv, 0, 7, deliver, m);
	msgq_drain(&srv, 0, touched, &touches);
	is_int(gone_calls, 1, "a message for a gone client runs with NULL (payload released)");
	/* a message for the worker itself, after one for a client: it runs
	 * in order, with the drain's ctx, and the client was not touched */
	int expect_gone = 2;
	m = zr_malloc(sizeof(*m));
	msgq_post(&srv, 0, 7, deliver, m);
	msgq_post_worker(&srv, 0, for_worker, &expect_gone);
	int before = touches;
	is_int(msgq_drain(&srv, 0, touched, &touches), 2, "a worker message counts as a message");
	ok(worker_runs == 1 && worker_after_client, "a worker message runs once, in post order");
	ok(worker_ctx_seen == &touches && touches == before, "with the drain's ctx, touching no client");
	msgq_post_worker(&srv, 0, for_worker, &expect_gone);
	m = zr_malloc(sizeof(*m));
	msgq_post(&srv, 0, 7, deliver, m);
	msgq_destroy(srv.msgq);
	is_int(gone_calls, 3, "destroy releases queued messages");
	ok(worker_runs == 2 && worker_ctx_seen == NULL, "a worker message queued at destroy runs with NULL");
	registry_destroy(srv.clients);
	return done_testing();
}
