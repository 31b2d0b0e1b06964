/* blocking — see blocking.h for the design.
 *
 * Lock order (core/lock_order.h): store shard locks (ascending) before a
 * worker list's mutex before a worker message queue's mutex. The per-shard
 * queue tables have no lock of their own: table i is guarded by store lock
 * i. The sanitizer builds check both that and the owning worker
 * (core/thread.h).
 *
 * Module state is created on the first block (the server has one store and
 * a fixed worker count); until then every entry point is a no-op.
 */
#include "zarisd/commands/blocking.h"
#include "zarisd/commands/propagate.h"
#include "zarisd/commands/dispatch.h"

#include <assert.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/lock.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

enum bw_state {
	BW_WAITING = 0,
	BW_DONE = 1, /* fate decided: a mail (or the owner itself) finishes it */
};

struct bw_key;

/* One waiter in one key's queue. Fields other than w/shard/key are
 * guarded by the key's shard lock. */
struct bw_node {
	struct bw_node *prev, *next;
	struct bw_key *bk; /* the queue it is in */
	struct bwaiter *w;
	unsigned shard;
	const char *key; /* borrowed from the waiter's key copy */
	size_t klen;
};

/* The queue of one (db, key): FIFO of nodes, oldest first. */
struct bw_key {
	struct bw_key *hnext;
	uint64_t hash;
	unsigned db;
	struct bw_node *head, *tail;
	size_t klen;
	char key[];
};

struct bw_shard {
	struct bw_key **buckets;
	uint32_t nbuckets; /* 0 or a power of two */
	uint32_t nkeys;
};

/* A blocked client. state is the only field written after blocking_block
 * by other threads; c and the list links belong to the owning worker
 * (links under its list mutex). */
struct bwaiter {
	_Atomic int state; /* enum bw_state */
	uint64_t client_id;
	unsigned worker;
	struct client *c; /* NULL once the client is gone */
	unsigned db;
	uint8_t resp;
	int64_t deadline_ms; /* 0 = forever */
	int32_t heap_idx;    /* place in its worker's deadline heap, -1 = not in it */
	const struct blocking_ops *ops;
	void *arg;
	struct bwaiter *wprev, *wnext;
	char *keybuf; /* every key's bytes, back to back */
	int nnodes;
	struct bw_node nodes[];
};

/* A worker's blocked clients. The deadline heap (a binary min-heap on
 * deadline_ms of the waiters that have one) belongs to the owning worker
 * alone: it pushes in blocking_block, pops in blocking_cron and removes in
 * waiter_finish, all on that worker, so it takes no lock. Invariant: every
 * waiter of the worker with a deadline that is not finished is in it, at
 * heap[w->heap_idx], unless blocking_cron already took it out to time it
 * out (then a mail finishes it). */
struct bw_worker {
	pthread_mutex_t lock; /* guards head and the waiters' links */
	struct bwaiter *head;
	struct bwaiter **heap;
	uint32_t nheap, heap_cap;
	char pad[64];
};

struct blocking {
	struct store *store;
	unsigned nshards;
	struct bw_shard *shards; /* [nshards], shard i under store lock i */
	unsigned nworkers;
	struct bw_worker *workers;
	_Atomic uint64_t blocked; /* waiters not yet finished */
};

static _Atomic(struct blocking *) g_state;
static pthread_mutex_t g_init_lock = PTHREAD_MUTEX_INITIALIZER;

static struct blocking *state_get(void)
{
	/* acquire: pairs with the release in state_create, so the tables
	 * are seen initialised */
	return atomic_load_explicit(&g_state, memory_order_acquire);
}

static struct blocking *state_create(struct server *srv)
{
	struct blocking *b = state_get();
	if (b)
		return b;
	pthread_mutex_lock(&g_init_lock);
	b = atomic_load_explicit(&g_state, memory_order_relaxed);
	if (!b) {
		b = zr_calloc(1, sizeof(*b));
		b->store = srv->store;
		b->nshards = store_shard_count(srv->store);
		b->shards = zr_calloc(b->nshards, sizeof(*b->shards));
		b->nworkers = srv->nworkers ? srv->nworkers : 1;
		b->workers = zr_calloc(b->nworkers, sizeof(*b->workers));
		for (unsigned i = 0; i < b->nworkers; i++)
			pthread_mutex_init(&b->workers[i].lock, NULL);
		atomic_store_explicit(&g_state, b, memory_order_release);
	}
	pthread_mutex_unlock(&g_init_lock);
	return b;
}

/* --- per-shard key queues (caller holds the shard's store lock) ------------- */

static uint32_t bucket_of(uint64_t hash, uint32_t nbuckets)
{
	/* the store picks shards from the hash; spread the rest */
	return (uint32_t)((hash * 0x9E3779B97F4A7C15ull) >> 40) & (nbuckets - 1);
}

static struct bw_key *key_find(struct bw_shard *sh, unsigned db, const char *key, size_t klen, uint64_t hash)
{
	if (!sh->nkeys)
		return NULL;
	for (struct bw_key *k = sh->buckets[bucket_of(hash, sh->nbuckets)]; k; k = k->hnext)
		if (k->hash == hash && k->db == db && k->klen == klen && !memcmp(k->key, key, klen))
			return k;
	return NULL;
}

static void table_grow(struct bw_shard *sh)
{
	uint32_t n = sh->nbuckets ? sh->nbuckets * 2 : 8;
	struct bw_key **nb = zr_calloc(n, sizeof(*nb));
	for (uint32_t i = 0; i < sh->nbuckets; i++) {
		for (struct bw_key *k = sh->buckets[i], *next; k; k = next) {
			next = k->hnext;
			uint32_t j = bucket_of(k->hash, n);
			k->hnext = nb[j];
			nb[j] = k;
		}
	}
	zr_free(sh->buckets);
	sh->buckets = nb;
	sh->nbuckets = n;
}

static struct bw_key *key_get(struct bw_shard *sh, unsigned db, const char *key, size_t klen, uint64_t hash)
{
	struct bw_key *k = key_find(sh, db, key, klen, hash);
	if (k)
		return k;
	if (sh->nkeys >= sh->nbuckets)
		table_grow(sh);
	k = zr_malloc(sizeof(*k) + klen);
	k->hash = hash;
	k->db = db;
	k->head = k->tail = NULL;
	k->klen = klen;
	memcpy(k->key, key, klen);
	uint32_t i = bucket_of(hash, sh->nbuckets);
	k->hnext = sh->buckets[i];
	sh->buckets[i] = k;
	sh->nkeys++;
	return k;
}

static void key_drop(struct bw_shard *sh, struct bw_key *k)
{
	for (struct bw_key **pp = &sh->buckets[bucket_of(k->hash, sh->nbuckets)]; *pp; pp = &(*pp)->hnext) {
		if (*pp == k) {
			*pp = k->hnext;
			break;
		}
	}
	sh->nkeys--;
	zr_free(k);
	if (!sh->nkeys) {
		ZR_FREE(sh->buckets);
		sh->nbuckets = 0;
	}
}

static void node_unlink(struct blocking *b, struct bw_node *n)
{
	ZR_CHECK(store_shard_held(b->store, n->shard));
	struct bw_key *k = n->bk;
	if (n->prev)
		n->prev->next = n->next;
	else
		k->head = n->next;
	if (n->next)
		n->next->prev = n->prev;
	else
		k->tail = n->prev;
	n->bk = NULL;
	if (!k->head)
		key_drop(&b->shards[n->shard], k);
}

/* --- deadline heap (owning worker only) -------------------------------------- */

static void heap_set(struct bw_worker *wk, uint32_t i, struct bwaiter *w)
{
	wk->heap[i] = w;
	w->heap_idx = (int32_t)i;
}

static void heap_sift_up(struct bw_worker *wk, uint32_t i)
{
	struct bwaiter *w = wk->heap[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (wk->heap[parent]->deadline_ms <= w->deadline_ms)
			break;
		heap_set(wk, i, wk->heap[parent]);
		i = parent;
	}
	heap_set(wk, i, w);
}

static void heap_sift_down(struct bw_worker *wk, uint32_t i)
{
	struct bwaiter *w = wk->heap[i];
	for (;;) {
		uint32_t child = 2 * i + 1;
		if (child >= wk->nheap)
			break;
		if (child + 1 < wk->nheap && wk->heap[child + 1]->deadline_ms < wk->heap[child]->deadline_ms)
			child++;
		if (w->deadline_ms <= wk->heap[child]->deadline_ms)
			break;
		heap_set(wk, i, wk->heap[child]);
		i = child;
	}
	heap_set(wk, i, w);
}

static void heap_push(struct bw_worker *wk, struct bwaiter *w)
{
	if (wk->nheap == wk->heap_cap) {
		wk->heap_cap = wk->heap_cap ? wk->heap_cap * 2 : 16;
		wk->heap = zr_realloc(wk->heap, sizeof(*wk->heap) * wk->heap_cap);
	}
	heap_set(wk, wk->nheap++, w);
	heap_sift_up(wk, wk->nheap - 1);
}

static void heap_remove(struct bw_worker *wk, struct bwaiter *w)
{
	if (w->heap_idx < 0)
		return;
	uint32_t i = (uint32_t)w->heap_idx;
	assert(i < wk->nheap && wk->heap[i] == w);
	w->heap_idx = -1;
	struct bwaiter *last = wk->heap[--wk->nheap];
	if (last == w)
		return;
	heap_set(wk, i, last);
	heap_sift_up(wk, i);
	heap_sift_down(wk, (uint32_t)last->heap_idx);
}

/* --- waiter lifecycle ------------------------------------------------------- */

static bool claim(struct bwaiter *w)
{
	int expected = BW_WAITING;
	/* acq_rel: the winner's later writes (the reply) are ordered after
	 * its win; losers read nothing else of the waiter */
	return atomic_compare_exchange_strong_explicit(&w->state, &expected, BW_DONE, memory_order_acq_rel,
						       memory_order_acquire);
}

/* Takes W out of every queue and its worker's list and frees it. Owning
 * worker, holding no lock. */
static void waiter_finish(struct blocking *b, struct bwaiter *w)
{
	ZR_ASSERT_ON_WORKER(w->worker);
	ZR_CHECK(zr_locks_held() == 0); /* it takes the waiter's shard locks one by one */
	for (int i = 0; i < w->nnodes; i++) {
		struct bw_node *n = &w->nodes[i];
		store_lock(b->store, n->shard);
		node_unlink(b, n);
		store_unlock(b->store, n->shard);
	}
	struct bw_worker *wk = &b->workers[w->worker];
	heap_remove(wk, w);
	pthread_mutex_lock(&wk->lock);
	if (w->wprev)
		w->wprev->wnext = w->wnext;
	else
		wk->head = w->wnext;
	if (w->wnext)
		w->wnext->wprev = w->wprev;
	pthread_mutex_unlock(&wk->lock);
	if (w->ops->free_arg)
		w->ops->free_arg(w->arg);
	zr_free(w->keybuf);
	zr_free(w);
	atomic_fetch_sub_explicit(&b->blocked, 1, memory_order_relaxed);
}

enum bw_outcome {
	BW_SERVED,
	BW_TIMEOUT,
	BW_UNBLOCK_ERROR,
	BW_UNBLOCK_TIMEOUT, /* CLIENT UNBLOCK id TIMEOUT: the timeout's reply */
};

/* A decided waiter on its way to its worker. */
struct bw_mail {
	struct bwaiter *w;
	enum bw_outcome outcome;
	struct obuf reply; /* BW_SERVED: the bytes to append */
	uint64_t seq;	   /* BW_SERVED: the seq of the pop's record (0: none) */
	bool held;	   /* its reply waits for the log (appendfsync always) */
};

static void mail_finish(struct client *c, void *arg)
{
	struct bw_mail *m = arg;
	struct blocking *b = state_get();
	struct bwaiter *w = m->w;
	if (c && w->c == c) {
		c->flags &= ~CLIENT_BLOCKED;
		if (m->outcome == BW_SERVED) {
			/* the pop is this client's write: its reply waits as a
			 * command's would (the log, replica-ack) and WAIT counts it */
			if (m->seq) {
				c->last_write_seq = m->seq;
				if (m->held && m->seq > c->journal_seq)
					c->journal_seq = m->seq;
				if (atomic_load_explicit(&c->srv->cfg->replica_ack, memory_order_relaxed) >
					    0 &&
				    m->seq > c->repl_seq)
					c->repl_seq = m->seq;
			}
			struct iovec iov[16];
			int n;
			while ((n = obuf_iov(&m->reply, iov, 16)) > 0) {
				size_t total = 0;
				for (int i = 0; i < n; i++) {
					reply_raw(&c->out, iov[i].iov_base, iov[i].iov_len);
					total += iov[i].iov_len;
				}
				obuf_consume(&m->reply, total);
			}
			c->out.errors += m->reply.errors;
			/* its errors (a BLMOVE to a key of another type) were
			 * written where it was served: counted here, on the
			 * client's worker, the command failed (c->cmd: a blocked
			 * client runs nothing else) */
			dispatch_count_served_errors(c, c->cmd, &m->reply);
		} else if (m->outcome == BW_TIMEOUT) {
			w->ops->timeout_reply(&c->out, w->arg);
		} else {
			if (m->outcome == BW_UNBLOCK_TIMEOUT)
				w->ops->timeout_reply(&c->out, w->arg);
			else
				reply_error(&c->out, "UNBLOCKED client unblocked via CLIENT UNBLOCK");
			/* Redis 7.0's CLIENT UNBLOCK counts the command failed
			 * either way (updateStatsOnUnblock with had_errors 1) */
			dispatch_count_failed(c, c->cmd);
		}
	}
	obuf_free(&m->reply);
	waiter_finish(b, w);
	zr_free(m);
}

static void post(struct server *srv, struct bwaiter *w, enum bw_outcome outcome, struct obuf *reply,
		 uint64_t seq, bool held)
{
	struct bw_mail *m = zr_malloc(sizeof(*m));
	m->w = w;
	m->outcome = outcome;
	m->seq = seq;
	m->held = held;
	if (reply)
		m->reply = *reply; /* takes the chunks */
	else
		obuf_init(&m->reply);
	server_post(srv, w->worker, w->client_id, mail_finish, m);
}

/* --- API ----------------------------------------------------------------- */

bool blocking_parse_timeout(struct client *c, int i, int64_t *deadline_ms)
{
	long double v;
	if (!zr_str_to_ld(c->argv[i].ptr, c->argv[i].len, &v)) {
		reply_error(&c->out, "ERR timeout is not a float or out of range");
		return false;
	}
	/* Redis 7.0 rounds up to whole ms; a value out of long long range
	 * converts to LLONG_MIN on x86 and is then reported negative */
	long double ms = ceill(v * 1000.0L);
	long long t =
		(ms < 9223372036854775808.0L && ms >= -9223372036854775808.0L) ? (long long)ms : INT64_MIN;
	if (t < 0) {
		reply_error(&c->out, "ERR timeout is negative");
		return false;
	}
	int64_t now = zr_time_ms();
	*deadline_ms = t == 0 ? 0 : (t > INT64_MAX - now ? INT64_MAX : now + t);
	return true;
}

void blocking_timeout_null_array(struct obuf *out, const void *arg)
{
	(void)arg;
	reply_null_array(out);
}

void blocking_free_zr(void *arg)
{
	zr_free(arg);
}

bool blocking_allowed(const struct client *c)
{
	return !(c->flags & CLIENT_IN_EXEC);
}

void blocking_block(struct client *c, const struct resp_arg *keys, int nkeys, int64_t deadline_ms,
		    const struct blocking_ops *ops, void *arg)
{
	struct blocking *b = state_create(c->srv);
	assert(b->store == c->srv->store);
	ZR_ASSERT_ON_WORKER(c->worker); /* its list and deadline heap */
	size_t total = 0;
	for (int i = 0; i < nkeys; i++)
		total += keys[i].len;
	struct bwaiter *w = zr_calloc(1, sizeof(*w) + sizeof(struct bw_node) * (size_t)nkeys);
	w->keybuf = zr_malloc(total ? total : 1);
	atomic_init(&w->state, BW_WAITING);
	w->client_id = c->id;
	w->worker = c->worker;
	w->c = c;
	w->db = c->db;
	w->resp = c->resp;
	w->deadline_ms = deadline_ms;
	w->heap_idx = -1;
	w->ops = ops;
	w->arg = arg;
	size_t off = 0;
	for (int i = 0; i < nkeys; i++) {
		uint64_t hash = store_hash(keys[i].ptr, keys[i].len);
		unsigned shard = store_shard_of_hash(b->store, hash);
		/* the dispatcher holds this shard's lock (the key is in the row's key spec) */
		ZR_CHECK(store_shard_held(b->store, shard));
		struct bw_key *k = key_get(&b->shards[shard], w->db, keys[i].ptr, keys[i].len, hash);
		/* a key named twice: this waiter is already its queue's tail (its
		 * nodes are appended under the locks held for the whole loop), so
		 * 100k keys cost 100k look-ups, not 100k² comparisons */
		if (k->tail && k->tail->w == w)
			continue;
		memcpy(w->keybuf + off, keys[i].ptr, keys[i].len);
		struct bw_node *n = &w->nodes[w->nnodes++];
		n->w = w;
		n->key = w->keybuf + off;
		n->klen = keys[i].len;
		off += keys[i].len;
		n->shard = shard;
		n->bk = k;
		n->next = NULL;
		n->prev = k->tail;
		if (k->tail)
			k->tail->next = n;
		else
			k->head = n;
		k->tail = n;
	}
	struct bw_worker *wk = &b->workers[w->worker];
	if (deadline_ms)
		heap_push(wk, w);
	pthread_mutex_lock(&wk->lock);
	w->wnext = wk->head;
	if (wk->head)
		wk->head->wprev = w;
	wk->head = w;
	pthread_mutex_unlock(&wk->lock);
	/* relaxed: readers that matter (signalling threads) take this key's
	 * shard lock, which we hold, so they see it */
	atomic_fetch_add_explicit(&b->blocked, 1, memory_order_relaxed);
	c->flags |= CLIENT_BLOCKED;
}

bool blocking_claim(struct blocking_serve *bs)
{
	return claim(bs->w);
}

/* --- signalling and serving --------------------------------------------------- */

struct ready_key {
	unsigned db;
	unsigned shard;
	uint64_t hash;
	size_t klen;
	char *key;
};

/* Keys this thread signalled and has not served yet. */
static __thread struct ready_key *ready;
static __thread int nready, ready_cap;

/* Notes KEY of DB (which has waiters) as ready, once. */
static void ready_add(unsigned db, unsigned shard, uint64_t hash, const char *key, size_t klen)
{
	for (int i = 0; i < nready; i++)
		if (ready[i].db == db && ready[i].klen == klen && !memcmp(ready[i].key, key, klen))
			return;
	if (nready == ready_cap) {
		ready_cap = ready_cap ? ready_cap * 2 : 8;
		ready = zr_realloc(ready, sizeof(*ready) * (size_t)ready_cap);
	}
	ready[nready++] = (struct ready_key){
		.db = db, .shard = shard, .hash = hash, .klen = klen, .key = zr_malloc(klen ? klen : 1)
	};
	memcpy(ready[nready - 1].key, key, klen);
}

void blocking_signal_key(struct server *srv, unsigned db, const char *key, size_t klen)
{
	(void)srv;
	struct blocking *b = state_get();
	if (!b || atomic_load_explicit(&b->blocked, memory_order_relaxed) == 0)
		return;
	uint64_t hash = store_hash(key, klen);
	unsigned shard = store_shard_of_hash(b->store, hash);
	ZR_CHECK(store_shard_held(b->store, shard)); /* the signalling command's */
	if (key_find(&b->shards[shard], db, key, klen, hash))
		ready_add(db, shard, hash, key, klen);
}

void blocking_signal_db(struct server *srv, unsigned db)
{
	(void)srv;
	struct blocking *b = state_get();
	if (!b || atomic_load_explicit(&b->blocked, memory_order_relaxed) == 0)
		return;
	/* Every shard's table, one lock at a time (a no-op lock inside an
	 * EXEC that holds them all): waiters that arrive meanwhile found
	 * their keys empty under the same lock, after the swap. */
	for (unsigned i = 0; i < b->nshards; i++) {
		struct bw_shard *sh = &b->shards[i];
		store_lock(b->store, i);
		for (uint32_t j = 0; j < sh->nbuckets; j++)
			for (struct bw_key *k = sh->buckets[j]; k; k = k->hnext)
				if (k->db == db)
					ready_add(db, i, k->hash, k->key, k->klen);
		store_unlock(b->store, i);
	}
}

/* The first waiter of K still waiting (NULL when none). */
static struct bw_node *first_waiting(struct bw_key *k)
{
	for (struct bw_node *n = k ? k->head : NULL; n; n = n->next)
		if (atomic_load_explicit(&n->w->state, memory_order_acquire) == BW_WAITING)
			return n;
	return NULL;
}

static unsigned second_shard(struct blocking *b, const struct bwaiter *w, unsigned shard)
{
	if (!w->ops->second_key)
		return shard;
	size_t len;
	const char *k2 = w->ops->second_key(w->arg, &len);
	return k2 ? store_shard_of(b->store, k2, len) : shard;
}

/* Serves RK's waiters while it has elements. Holds no lock on entry/exit. */
static void serve_key(struct server *srv, struct blocking *b, const struct ready_key *rk)
{
	struct bw_shard *sh = &b->shards[rk->shard];
	for (;;) {
		store_lock(b->store, rk->shard);
		struct bw_node *n = first_waiting(key_find(sh, rk->db, rk->key, rk->klen, rk->hash));
		if (!n) {
			store_unlock(b->store, rk->shard);
			return;
		}
		unsigned s2 = second_shard(b, n->w, rk->shard);
		if (s2 > rk->shard) {
			store_lock(b->store, s2);
		} else if (s2 < rk->shard) {
			/* ascending order: let go, take both, look again */
			store_unlock(b->store, rk->shard);
			store_lock(b->store, s2);
			store_lock(b->store, rk->shard);
			n = first_waiting(key_find(sh, rk->db, rk->key, rk->klen, rk->hash));
			if (!n || second_shard(b, n->w, rk->shard) != s2) {
				store_unlock(b->store, rk->shard);
				store_unlock(b->store, s2);
				if (!n)
					return;
				continue;
			}
		}
		struct bwaiter *w = n->w;
		struct obuf out;
		obuf_init(&out);
		out.resp = w->resp;
		struct blocking_serve bs = { .srv = srv,
					     .db = rk->db,
					     .key = rk->key,
					     .klen = rk->klen,
					     .arg = w->arg,
					     .out = &out,
					     .now_ms = zr_time_ms(),
					     .w = w };
		/* the pop (and a move's push) is a write like a command's: in
		 * its own bracket, so that a running snapshot keeps the
		 * pre-images of the lists it changes in place */
		struct store_write wr;
		store_write_begin(&wr, STORE_WRITE_SERVE, "a blocked client's serve", true, bs.now_ms);
		enum blocking_serve_result r = w->ops->serve(&bs);
		/* the pop's record, still under its locks (propagate.h) */
		uint64_t seq = 0;
		bool held = false;
		if (r == BLOCKING_SERVED) {
			const char *argv[BLOCKING_EFFECT_MAX];
			size_t lens[BLOCKING_EFFECT_MAX];
			char num[32];
			int nkeys = 1;
			int argc = w->ops->effect(w->arg, rk->key, rk->klen, argv, lens, num, &nkeys);
			/* its lookups find what the serve wrote: no pre-images */
			wr.intent = false;
			seq = propagate_effect(srv, rk->db, bs.now_ms, argc, argv, lens, nkeys, &held);
		}
		store_write_end(&wr);
		if (s2 != rk->shard)
			store_unlock(b->store, s2);
		store_unlock(b->store, rk->shard);
		if (r == BLOCKING_SERVED)
			post(srv, w, BW_SERVED, &out, seq, held);
		else
			obuf_free(&out);
		if (r == BLOCKING_NOT_READY)
			return;
	}
}

bool blocking_serve_ready(struct server *srv)
{
	if (!nready)
		return false;
	struct blocking *b = state_get();
	/* serving may signal more keys (BLMOVE destinations): they are
	 * appended and served in this same loop */
	for (int i = 0; i < nready; i++) {
		struct ready_key rk = ready[i];
		serve_key(srv, b, &rk);
		zr_free(ready[i].key);
	}
	/* freed every time: a worker thread may exit with it otherwise, and
	 * only commands that woke somebody pay for it */
	nready = 0;
	ZR_FREE(ready);
	ready_cap = 0;
	return true;
}

/* --- timeouts, disconnects, CLIENT UNBLOCK ------------------------------------ */

void blocking_client_gone(struct client *c)
{
	struct blocking *b = state_get();
	if (!b || !(c->flags & CLIENT_BLOCKED))
		return;
	ZR_ASSERT_ON_WORKER(c->worker);
	struct bw_worker *wk = &b->workers[c->worker];
	struct bwaiter *found = NULL;
	pthread_mutex_lock(&wk->lock);
	for (struct bwaiter *w = wk->head; w; w = w->wnext) {
		if (w->client_id == c->id && w->c == c) {
			w->c = NULL;
			if (claim(w))
				found = w;
			break; /* else a mail is on its way and finishes it */
		}
	}
	pthread_mutex_unlock(&wk->lock);
	c->flags &= ~CLIENT_BLOCKED;
	if (found)
		waiter_finish(b, found);
}

void blocking_cron(struct server *srv, unsigned worker, int64_t now_ms)
{
	struct blocking *b = state_get();
	if (!b || worker >= b->nworkers)
		return;
	ZR_ASSERT_ON_WORKER(worker); /* its deadline heap */
	struct bw_worker *wk = &b->workers[worker];
	/* earliest first; a waiter already decided (served, unblocked) just
	 * leaves the heap: its mail is on the way */
	while (wk->nheap && wk->heap[0]->deadline_ms <= now_ms) {
		struct bwaiter *w = wk->heap[0];
		heap_remove(wk, w);
		if (w->c && claim(w))
			post(srv, w, BW_TIMEOUT, NULL, 0, false);
	}
}

int64_t blocking_next_deadline(struct server *srv, unsigned worker)
{
	(void)srv;
	struct blocking *b = state_get();
	if (!b || worker >= b->nworkers)
		return 0;
	ZR_ASSERT_ON_WORKER(worker);
	struct bw_worker *wk = &b->workers[worker];
	return wk->nheap ? wk->heap[0]->deadline_ms : 0;
}

bool blocking_unblock(struct server *srv, uint64_t id, bool error)
{
	struct blocking *b = state_get();
	if (!b)
		return false;
	bool done = false;
	for (unsigned i = 0; i < b->nworkers && !done; i++) {
		struct bw_worker *wk = &b->workers[i];
		pthread_mutex_lock(&wk->lock);
		for (struct bwaiter *w = wk->head; w; w = w->wnext) {
			if (w->client_id != id)
				continue;
			if (w->c && claim(w)) {
				post(srv, w, error ? BW_UNBLOCK_ERROR : BW_UNBLOCK_TIMEOUT, NULL, 0, false);
				done = true;
			}
			break;
		}
		pthread_mutex_unlock(&wk->lock);
	}
	return done;
}

uint64_t blocking_count(struct server *srv)
{
	(void)srv;
	struct blocking *b = state_get();
	return b ? atomic_load_explicit(&b->blocked, memory_order_relaxed) : 0;
}
