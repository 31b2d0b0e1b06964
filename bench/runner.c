/* runner — see runner.h. */
#include "bench/runner.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/procstat.h"

struct run_shared {
	pthread_barrier_t start;
	_Atomic bool stop; /* set by the control thread; relaxed: polled */
};

uint64_t run_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t run_slice_lo(uint64_t n, unsigned i, unsigned t)
{
	return (uint64_t)(((unsigned __int128)n * i) / t);
}

unsigned run_share(unsigned n, unsigned idx, unsigned t)
{
	return n / t + (idx < n % t);
}

int run_worker_init(struct run_worker *w, const struct lg_config *cfg, unsigned idx)
{
	uint64_t lo = run_slice_lo(cfg->keyspace, idx, cfg->threads);
	uint64_t hi = run_slice_lo(cfg->keyspace, idx + 1, cfg->threads);

	w->cfg = cfg;
	w->idx = idx;
	w->budget = cfg->requests ? run_slice_lo(cfg->requests, idx + 1, cfg->threads) -
					    run_slice_lo(cfg->requests, idx, cfg->threads)
				  : UINT64_MAX;
	hist_init(&w->r.hist);
	/* a seed per thread, reproducible for a given --seed; a slice is
	 * empty when threads > keyspace: then the whole space */
	return keygen_init(&w->kg, cfg->dist, cfg->keyspace, lo < hi ? lo : 0, lo < hi ? hi : cfg->keyspace,
			   cfg->zipf_s, cfg->seed * 0x100000001b3ULL + idx + 1);
}

void run_worker_ready(struct run_worker *w, int start_err)
{
	w->start_err = start_err;
	pthread_barrier_wait(&w->sh->start);
}

void run_worker_done(struct run_worker *w)
{
	atomic_store_explicit(&w->finished, true, memory_order_release);
}

bool run_should_stop(const struct run_worker *w)
{
	return atomic_load_explicit(&w->sh->stop, memory_order_relaxed);
}

void run_publish(struct run_worker *w)
{
	atomic_store_explicit(&w->pub_ops, w->r.ops, memory_order_relaxed);
	atomic_store_explicit(&w->pub_errors, w->r.errors + w->r.conn_errors, memory_order_relaxed);
	atomic_store_explicit(&w->pub_lat_ns, w->r.hist.sum, memory_order_relaxed);
}

void run_note_error(struct run_worker *w, const char *fmt, const char *what, size_t len)
{
	if (w->have_error)
		return;
	w->have_error = true;
	snprintf(w->r.first_error, sizeof(w->r.first_error), fmt, (int)len, what);
}

static struct run_worker *worker_at(void *workers, size_t stride, unsigned i)
{
	return (struct run_worker *)((char *)workers + (size_t)i * stride);
}

/* The CPU time of every server process summed; -ESRCH when there is none
 * or one is gone. */
static int servers_cpu_us(const struct lg_config *cfg, uint64_t *out)
{
	unsigned i;

	*out = 0;
	for (i = 0; i < cfg->nserver_pids; i++) {
		uint64_t one;

		if (procstat_cpu_us(cfg->server_pids[i], &one) < 0)
			return -ESRCH;
		*out += one;
	}
	return cfg->nserver_pids ? 0 : -ESRCH;
}

/* One progress line: the rates since the last one. */
struct run_progress {
	uint64_t t, ops, lat, cpu, srv;
	bool have_srv;
};

static void progress_line(const struct lg_config *cfg, void *workers, size_t stride,
			  struct run_progress *last, uint64_t t0, uint64_t now)
{
	uint64_t ops = 0, errs = 0, lat = 0, cpu = procstat_self_cpu_us(), srv = 0;
	double dt = (double)(now - last->t) / 1e9;
	char srvbuf[32] = "";
	unsigned i;

	for (i = 0; i < cfg->threads; i++) {
		struct run_worker *w = worker_at(workers, stride, i);

		ops += atomic_load_explicit(&w->pub_ops, memory_order_relaxed);
		errs += atomic_load_explicit(&w->pub_errors, memory_order_relaxed);
		lat += atomic_load_explicit(&w->pub_lat_ns, memory_order_relaxed);
	}
	if (last->have_srv && servers_cpu_us(cfg, &srv) == 0) {
		snprintf(srvbuf, sizeof(srvbuf), "  server-cpu %3.0f%%",
			 (double)(srv - last->srv) / 1e4 / dt);
		last->srv = srv;
	}
	fprintf(stderr,
		"[%6.1fs] %10.0f ops/s  total %llu  errors %llu  mean %.1f us  client-cpu %3.0f%%%s\n",
		(double)(now - t0) / 1e9, (double)(ops - last->ops) / dt, (unsigned long long)ops,
		(unsigned long long)errs,
		ops > last->ops ? (double)(lat - last->lat) / (double)(ops - last->ops) / 1e3 : 0.0,
		(double)(cpu - last->cpu) / 1e4 / dt, srvbuf);
	last->t = now;
	last->ops = ops;
	last->lat = lat;
	last->cpu = cpu;
}

/* The control thread's wait: progress each second, the stop at the
 * deadline, back when every worker has finished. */
static void control_loop(const struct lg_config *cfg, struct run_shared *sh, void *workers, size_t stride,
			 uint64_t t0)
{
	uint64_t deadline = cfg->requests ? UINT64_MAX : t0 + (uint64_t)(cfg->duration_s * 1e9);
	uint64_t next_tick = t0 + 1000000000ULL;
	struct run_progress last = { .t = t0, .cpu = procstat_self_cpu_us() };
	struct timespec nap = { 0, 20 * 1000000L };

	last.have_srv = servers_cpu_us(cfg, &last.srv) == 0;
	for (;;) {
		uint64_t now;
		unsigned i, done = 0;

		nanosleep(&nap, NULL);
		now = run_now_ns();
		for (i = 0; i < cfg->threads; i++)
			done += atomic_load_explicit(&worker_at(workers, stride, i)->finished,
						     memory_order_relaxed);
		if (done == cfg->threads)
			return;
		if (now >= deadline)
			atomic_store_explicit(&sh->stop, true, memory_order_relaxed);
		if (now < next_tick || !cfg->progress)
			continue;
		progress_line(cfg, workers, stride, &last, t0, now);
		next_tick += 1000000000ULL;
	}
}

static void sum_into(struct lg_result *res, const struct lg_result *r)
{
	res->ops += r->ops;
	res->sent += r->sent;
	res->errors += r->errors;
	res->nils += r->nils;
	res->pushes += r->pushes;
	res->conn_errors += r->conn_errors;
	res->lost += r->lost;
	res->moved += r->moved;
	res->asks += r->asks;
	res->refreshes += r->refreshes;
	hist_merge(&res->hist, &r->hist);
	if (!res->first_error[0] && r->first_error[0])
		memcpy(res->first_error, r->first_error, sizeof(res->first_error));
}

int run_load(const struct lg_config *cfg, void *workers, size_t stride, void *(*worker_main)(void *),
	     struct lg_result *res)
{
	struct run_shared sh;
	uint64_t t0, t1, cpu0, srv0 = 0, srv1 = 0;
	bool have_srv;
	unsigned i;
	int rc, start_err = 0, ok_workers = 0;

	memset(res, 0, sizeof(*res));
	hist_init(&res->hist);
	res->server_cpu_us = -1;
	memset(&sh, 0, sizeof(sh));
	pthread_barrier_init(&sh.start, NULL, cfg->threads + 1);
	for (i = 0; i < cfg->threads; i++) {
		struct run_worker *w = worker_at(workers, stride, i);

		w->sh = &sh;
		rc = -pthread_create(&w->tid, NULL, worker_main, w);
		if (rc < 0) {
			/* the barrier counts on every worker: without one
			 * the run cannot go on safely */
			fprintf(stderr, "zaris-bench: pthread_create: %s\n", strerror(-rc));
			abort();
		}
	}
	pthread_barrier_wait(&sh.start);
	t0 = run_now_ns();
	cpu0 = procstat_self_cpu_us();
	have_srv = servers_cpu_us(cfg, &srv0) == 0;
	control_loop(cfg, &sh, workers, stride, t0);
	t1 = run_now_ns();
	res->client_cpu_us = procstat_self_cpu_us() - cpu0;
	if (have_srv && servers_cpu_us(cfg, &srv1) == 0)
		res->server_cpu_us = (int64_t)(srv1 - srv0);
	res->elapsed_s = (double)(t1 - t0) / 1e9;
	for (i = 0; i < cfg->threads; i++)
		pthread_join(worker_at(workers, stride, i)->tid, NULL);
	pthread_barrier_destroy(&sh.start);
	for (i = 0; i < cfg->threads; i++) {
		struct run_worker *w = worker_at(workers, stride, i);

		if (w->start_err < 0)
			start_err = w->start_err;
		else
			ok_workers++;
		sum_into(res, &w->r);
	}
	/* workers that could not connect count as lost connections */
	if (start_err < 0 && ok_workers > 0)
		res->conn_errors++;
	return ok_workers == 0 ? start_err : 0;
}
