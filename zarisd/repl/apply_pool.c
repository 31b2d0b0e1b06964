/* repl/apply_pool — see apply_pool.h.
 *
 * A batch is an arena of frames in seq order (the order they go to the
 * stream in) and, per partition, the indexes of its records. A run hands
 * the partitions out through one counter: the caller and the woken
 * threads each take the next partition not yet taken until none is left,
 * so a partition is applied by one thread, in order, and a batch whose
 * records are all of one partition is applied by the caller alone with no
 * thread woken.
 */
#include "zarisd/repl/apply_pool.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/persist/load.h"

/* A batch ends at this many records or arena bytes, so a fast primary's
 * backlog is applied and acknowledged in steps. */
#define BATCH_RECORDS 8192
#define BATCH_BYTES (8u << 20)

struct batch_rec {
	size_t off; /* of its frame in the arena */
	size_t len; /* of the frame */
	uint64_t seq;
};

struct partition {
	uint32_t *recs; /* indexes into batch[], in seq order */
	size_t n, cap;
	uint64_t failed_seq; /* UINT64_MAX: none failed */
	char err[200];
};

struct apply_pool;

struct pool_thread {
	struct apply_pool *p;
	void *applier;
	pthread_t thread;
	bool started;
};

struct apply_pool {
	const struct load_apply *ops;
	unsigned nthreads; /* threads[0] is the caller's applier */
	struct pool_thread *threads;
	struct partition *parts; /* nthreads of them */
	struct batch_rec *batch;
	size_t nbatch, capbatch;
	struct jbuf arena;
	pthread_mutex_t mu;
	pthread_cond_t go;   /* a run started, or quit */
	pthread_cond_t done; /* busy reached 0 */
	uint64_t gen;	     /* runs started; under mu */
	unsigned busy;	     /* pool threads still in this run; under mu */
	bool quit;	     /* under mu */
	_Atomic unsigned next_part;
};

static void apply_partition(struct apply_pool *p, void *applier, struct partition *pt)
{
	for (size_t i = 0; i < pt->n; i++) {
		const struct batch_rec *br = &p->batch[pt->recs[i]];
		const unsigned char *payload = p->arena.p + br->off + JR_FRAME_HEADER;
		struct jr_cmd rec;
		int r;
		if (!jr_parse_cmd(payload, br->len - JR_FRAME_HEADER, &rec)) {
			snprintf(pt->err, sizeof(pt->err), "malformed record");
			r = -EINVAL;
		} else {
			r = p->ops->record(applier, &rec, pt->err, sizeof(pt->err));
		}
		if (r < 0) {
			pt->failed_seq = br->seq;
			return;
		}
	}
}

/* Takes partitions until none is left. */
static void take_partitions(struct apply_pool *p, void *applier)
{
	for (;;) {
		unsigned i = atomic_fetch_add_explicit(&p->next_part, 1, memory_order_relaxed);
		if (i >= p->nthreads)
			return;
		apply_partition(p, applier, &p->parts[i]);
	}
}

static void *pool_main(void *arg)
{
	struct pool_thread *t = arg;
	struct apply_pool *p = t->p;
	uint64_t seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (p->gen == seen && !p->quit)
			pthread_cond_wait(&p->go, &p->mu);
		if (p->quit)
			break;
		seen = p->gen;
		pthread_mutex_unlock(&p->mu);
		take_partitions(p, t->applier);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0)
			pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

struct apply_pool *apply_pool_new(const struct load_apply *ops, unsigned threads)
{
	if (threads < 2 || !ops->record_shard)
		return NULL;
	struct apply_pool *p = zr_calloc(1, sizeof(*p));
	p->ops = ops;
	p->nthreads = threads;
	p->threads = zr_calloc(threads, sizeof(*p->threads));
	p->parts = zr_calloc(threads, sizeof(*p->parts));
	for (unsigned i = 0; i < threads; i++)
		p->parts[i].failed_seq = UINT64_MAX;
	jbuf_init(&p->arena);
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->go, NULL);
	pthread_cond_init(&p->done, NULL);
	for (unsigned i = 0; i < threads; i++) {
		struct pool_thread *t = &p->threads[i];
		t->p = p;
		t->applier = ops->open_link(ops->ctx);
		if (i == 0)
			continue;
		int rc = pthread_create(&t->thread, NULL, pool_main, t);
		if (rc) {
			zr_log(ZR_LOG_WARNING,
			       "Replication: cannot start an apply thread (%s): records are applied on the link's thread",
			       strerror(rc));
			apply_pool_free(p);
			return NULL;
		}
		t->started = true;
	}
	return p;
}

void apply_pool_free(struct apply_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->go);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->nthreads; i++) {
		struct pool_thread *t = &p->threads[i];
		if (t->started)
			pthread_join(t->thread, NULL);
		if (t->applier)
			p->ops->close(t->applier);
		zr_free(p->parts[i].recs);
	}
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->go);
	pthread_mutex_destroy(&p->mu);
	jbuf_free(&p->arena);
	zr_free(p->batch);
	zr_free(p->parts);
	zr_free(p->threads);
	zr_free(p);
}

void apply_pool_add(struct apply_pool *p, const struct jr_cmd *rec, unsigned shard)
{
	if (p->nbatch == p->capbatch) {
		p->capbatch = p->capbatch ? 2 * p->capbatch : 1024;
		p->batch = zr_realloc(p->batch, p->capbatch * sizeof(*p->batch));
	}
	struct batch_rec *br = &p->batch[p->nbatch];
	br->off = p->arena.len;
	br->seq = rec->seq;
	jbuf_u32(&p->arena, (uint32_t)rec->plen);
	jbuf_u32(&p->arena, 0); /* the stream seals it when it is taken */
	jbuf_put(&p->arena, rec->payload, rec->plen);
	/* the copy is what goes to our stream (and is applied from) */
	jr_cmd_dest_as_replica(p->arena.p + br->off + JR_FRAME_HEADER, rec);
	br->len = p->arena.len - br->off;
	struct partition *pt = &p->parts[shard % p->nthreads];
	if (pt->n == pt->cap) {
		pt->cap = pt->cap ? 2 * pt->cap : 256;
		pt->recs = zr_realloc(pt->recs, pt->cap * sizeof(*pt->recs));
	}
	pt->recs[pt->n++] = (uint32_t)p->nbatch++;
}

size_t apply_pool_pending(const struct apply_pool *p)
{
	return p->nbatch;
}

bool apply_pool_full(const struct apply_pool *p)
{
	return p->nbatch >= BATCH_RECORDS || p->arena.len >= BATCH_BYTES;
}

void apply_pool_discard(struct apply_pool *p)
{
	p->nbatch = 0;
	p->arena.len = 0;
	for (unsigned i = 0; i < p->nthreads; i++) {
		p->parts[i].n = 0;
		p->parts[i].failed_seq = UINT64_MAX;
	}
}

int apply_pool_run(struct apply_pool *p, apply_pool_append_fn append, void *ctx, char *err, size_t errlen)
{
	if (!p->nbatch)
		return 0;
	unsigned used = 0;
	for (unsigned i = 0; i < p->nthreads; i++)
		used += p->parts[i].n > 0;
	atomic_store_explicit(&p->next_part, 0, memory_order_relaxed);
	if (used > 1) {
		pthread_mutex_lock(&p->mu);
		p->gen++;
		p->busy = p->nthreads - 1;
		pthread_cond_broadcast(&p->go);
		pthread_mutex_unlock(&p->mu);
	}
	take_partitions(p, p->threads[0].applier);
	if (used > 1) {
		pthread_mutex_lock(&p->mu);
		while (p->busy)
			pthread_cond_wait(&p->done, &p->mu);
		pthread_mutex_unlock(&p->mu);
	}
	const struct partition *failed = NULL;
	for (unsigned i = 0; i < p->nthreads; i++)
		if (p->parts[i].failed_seq != UINT64_MAX &&
		    (!failed || p->parts[i].failed_seq < failed->failed_seq))
			failed = &p->parts[i];
	int rc = 0;
	for (size_t i = 0; i < p->nbatch && rc == 0; i++) {
		const struct batch_rec *br = &p->batch[i];
		if (failed && br->seq >= failed->failed_seq)
			break;
		rc = append(ctx, p->arena.p + br->off, br->len, br->seq);
	}
	if (failed) {
		snprintf(err, errlen, "record seq %" PRIu64 ": %s", failed->failed_seq, failed->err);
		rc = -EINVAL;
	}
	apply_pool_discard(p);
	return rc;
}
