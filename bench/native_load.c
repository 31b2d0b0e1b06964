/* native_load — see native_load.h.
 *
 * Threads: as loadgen.c. The control thread reads the workers' published
 * counters (relaxed atomics: a progress line orders nothing) and sets
 * `stop`; a worker's clients, batches, key stream and histogram are its
 * own until pthread_join(), which orders the final reads.
 */
#include "bench/native_load.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/procstat.h"
#include "zarisd/client/zaris.h"

/* One batch slot of a connection. */
struct nl_slot {
	struct zaris_batch *b;
	uint64_t t0;	/* send time (ns) */
	bool in_flight; /* sent, not yet returned by a wait */
};

struct nl_conn {
	struct zaris *z;       /* NULL once closed */
	struct nl_slot *slots; /* depth of them */
	unsigned in_flight;    /* slots in flight */
	bool dead;	       /* a client error: no more sends */
};

struct nl_shared {
	pthread_barrier_t start;
	_Atomic bool stop; /* set by the control thread; relaxed: polled */
};

struct nl_worker {
	pthread_t tid;
	const struct nl_config *cfg;
	struct nl_shared *sh;
	struct nl_conn *conns;
	unsigned nconns;
	struct keygen kg;
	unsigned slot;	    /* position in the mix's cycle */
	uint64_t budget;    /* operations this worker may send */
	uint64_t in_flight; /* batches in flight over all conns */
	char *key;	    /* scratch: prefix + digits */
	size_t klen;
	const char *value; /* shared, read-only */
	struct lg_result r;
	bool have_error;
	unsigned server_flags, nodes;
	_Atomic uint64_t pub_ops;
	_Atomic uint64_t pub_errors;
	_Atomic uint64_t pub_lat_ns;
	_Atomic bool finished;
	int start_err;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void note_error(struct nl_worker *w, const char *what, size_t len)
{
	if (w->have_error)
		return;
	w->have_error = true;
	/* a RESP3 error value ends in CRLF: not part of the text */
	while (len > 0 && (what[len - 1] == '\n' || what[len - 1] == '\r'))
		len--;
	snprintf(w->r.first_error, sizeof(w->r.first_error), "%.*s", (int)len, what);
}

static void note_client_error(struct nl_worker *w, struct nl_conn *c, int code)
{
	char buf[160];

	snprintf(buf, sizeof(buf), "connection lost: %s: %s", zaris_strerror(code),
		 c->z ? zaris_errstr(c->z) : "");
	note_error(w, buf, strlen(buf));
}

/* Writes the key of index K into the worker's scratch (prefix fixed). */
static void render_key(struct nl_worker *w, uint64_t k)
{
	char *d = w->key + w->klen - TPL_KEY_DIGITS;
	int i;

	for (i = TPL_KEY_DIGITS - 1; i >= 0; i--) {
		d[i] = (char)('0' + k % 10);
		k /= 10;
	}
}

/* Fills B with up to cfg->batch operations of the mix. Returns the count
 * added (0 when the budget is spent), or a ZARIS_E_*. */
static int batch_fill(struct nl_worker *w, struct zaris_batch *b)
{
	const struct tpl_mix *mix = w->cfg->mix;
	unsigned n;

	for (n = 0; n < w->cfg->batch && w->r.sent < w->budget; n++) {
		const struct tpl *t = &mix->t[mix->order[w->slot]];
		int rc;

		if (++w->slot == mix->cycle)
			w->slot = 0;
		render_key(w, keygen_next(&w->kg));
		if (t->name[0] == 'S')
			rc = zaris_add_set(b, w->key, w->klen, w->value, w->cfg->value_size, NULL);
		else
			rc = zaris_add_get(b, w->key, w->klen);
		if (rc < 0)
			return rc;
		w->r.sent++;
	}
	return (int)n;
}

/* Counts the results of S's batch, completed with RC at NOW; a client
 * error kills the connection. */
static void slot_done(struct nl_worker *w, struct nl_conn *c, struct nl_slot *s, int rc, uint64_t now)
{
	size_t i, n = zaris_batch_count(s->b);
	int client_err = rc < 0 ? rc : 0;

	for (i = 0; i < n; i++) {
		const struct zaris_result *res = zaris_batch_result(s->b, i);

		if (!res || res->status < 0) {
			w->r.lost++;
			w->r.errors++;
			if (!client_err)
				client_err = res ? res->status : ZARIS_E_IO;
			continue;
		}
		w->r.ops++;
		hist_record(&w->r.hist, now - s->t0);
		if (res->status > 0) {
			w->r.errors++;
			if (res->value)
				note_error(w, res->value->str ? res->value->str : "?", res->value->len);
			else
				note_error(w, zaris_strerror(res->status),
					   strlen(zaris_strerror(res->status)));
		} else if (res->value && res->value->type == ZARIS_T_NULL) {
			w->r.nils++;
		}
	}
	if (client_err && !c->dead) {
		note_client_error(w, c, client_err);
		c->dead = true;
		w->r.conn_errors++;
	}
}

/* Sends batches on C until DEPTH are in flight or the budget is spent. */
static void conn_fill(struct nl_worker *w, struct nl_conn *c, bool draining)
{
	unsigned i;

	for (i = 0; i < w->cfg->depth && !c->dead && !draining; i++) {
		struct nl_slot *s = &c->slots[i];
		int rc;

		if (s->in_flight)
			continue;
		zaris_batch_reset(s->b);
		rc = batch_fill(w, s->b);
		if (rc <= 0) {
			if (rc < 0) {
				note_error(w, zaris_strerror(rc), strlen(zaris_strerror(rc)));
				c->dead = true;
				w->r.conn_errors++;
			}
			return;
		}
		s->t0 = now_ns();
		rc = zaris_send(c->z, s->b);
		if (rc < 0) {
			/* not in flight: its operations got no answer */
			slot_done(w, c, s, rc, s->t0);
			return;
		}
		s->in_flight = true;
		c->in_flight++;
		w->in_flight++;
	}
}

/* Takes what completed on C within TIMEOUT_MS. Returns how many batches. */
static unsigned conn_harvest(struct nl_worker *w, struct nl_conn *c, int timeout_ms)
{
	unsigned got = 0;

	while (c->in_flight > 0) {
		struct zaris_batch *done = NULL;
		int rc = 0, n = zaris_wait_any(c->z, timeout_ms, &done, &rc);
		uint64_t now = now_ns();
		unsigned i;

		if (n <= 0 || !done) {
			if (n < 0 && !c->dead) {
				note_client_error(w, c, n);
				c->dead = true;
				w->r.conn_errors++;
			}
			return got;
		}
		for (i = 0; i < w->cfg->depth; i++)
			if (c->slots[i].b == done)
				break;
		if (i == w->cfg->depth || !c->slots[i].in_flight) {
			static const char why[] = "libzaris returned a batch not in flight";

			note_error(w, why, sizeof(why) - 1);
			c->dead = true;
			return got;
		}
		c->slots[i].in_flight = false;
		c->in_flight--;
		w->in_flight--;
		slot_done(w, c, &c->slots[i], rc, now);
		got++;
		timeout_ms = 0; /* then only what has already come */
	}
	return got;
}

/* A connection done with (dead, or the run over): its client's redirect
 * and topology counters into W's result, then it is closed and its batches
 * still in flight (zaris_close marks them failed) count as lost. */
static void conn_close(struct nl_worker *w, struct nl_conn *c)
{
	struct zaris_stats st;
	unsigned i;

	if (!c->z)
		return;
	zaris_get_stats(c->z, &st);
	w->r.moved += st.moved;
	w->r.asks += st.ask;
	w->r.refreshes += st.topology_reads;
	zaris_close(c->z);
	c->z = NULL;
	for (i = 0; i < w->cfg->depth; i++) {
		struct nl_slot *s = &c->slots[i];

		if (!s->in_flight)
			continue;
		w->r.lost += zaris_batch_count(s->b);
		w->r.errors += zaris_batch_count(s->b);
		s->in_flight = false;
		c->in_flight--;
		w->in_flight--;
	}
}

static void worker_publish(struct nl_worker *w)
{
	atomic_store_explicit(&w->pub_ops, w->r.ops, memory_order_relaxed);
	atomic_store_explicit(&w->pub_errors, w->r.errors + w->r.conn_errors, memory_order_relaxed);
	atomic_store_explicit(&w->pub_lat_ns, w->r.hist.sum, memory_order_relaxed);
}

/* One poll() over every connection of a worker: the descriptors their
 * clients wait on (zaris_pollfds), each entry's connection in OWNER, and
 * the connections with work that no descriptor announces (DUE). */
struct nl_pollset {
	struct pollfd *fds;
	unsigned *owner;
	size_t len, cap;
	bool *due; /* per connection */
};

/* Room for N more entries: false when out of memory. */
static bool pollset_room(struct nl_pollset *ps, size_t n)
{
	size_t cap = ps->cap ? ps->cap : 16;
	struct pollfd *fds;
	unsigned *owner;

	if (ps->len + n <= ps->cap)
		return true;
	while (cap < ps->len + n)
		cap *= 2;
	fds = realloc(ps->fds, cap * sizeof(*fds));
	if (!fds)
		return false;
	ps->fds = fds;
	owner = realloc(ps->owner, cap * sizeof(*owner));
	if (!owner)
		return false;
	ps->owner = owner;
	ps->cap = cap;
	return true;
}

/* Adds connection I's descriptors; lowers *TIMEOUT_MS to its next due
 * work. False when out of memory. */
static bool pollset_add(struct nl_pollset *ps, struct nl_conn *c, unsigned i, int *timeout_ms)
{
	int due = -1, n;

	for (;;) {
		n = zaris_pollfds(c->z, ps->fds + ps->len, (int)(ps->cap - ps->len), &due);
		if ((size_t)n <= ps->cap - ps->len)
			break;
		if (!pollset_room(ps, (size_t)n))
			return false;
		due = -1;
	}
	for (int k = 0; k < n; k++)
		ps->owner[ps->len + (size_t)k] = i;
	ps->len += (size_t)n;
	ps->due[i] = due == 0;
	if (due >= 0 && due < *timeout_ms)
		*timeout_ms = due;
	return true;
}

static void worker_loop(struct nl_worker *w)
{
	uint64_t drain_deadline = 0;
	bool draining = false;
	struct nl_pollset ps = { 0 };
	unsigned i, live;

	ps.due = calloc(w->nconns, sizeof(*ps.due));
	if (!ps.due || !pollset_room(&ps, w->nconns)) {
		static const char why[] = "out of memory for the poll set";

		note_error(w, why, sizeof(why) - 1);
		goto out;
	}
	for (;;) {
		/* 50 ms bounds how late a stop is seen */
		int timeout_ms = 50, ready;

		if (!draining && atomic_load_explicit(&w->sh->stop, memory_order_relaxed)) {
			draining = true;
			drain_deadline = now_ns() + (uint64_t)(w->cfg->lg->drain_timeout_s * 1e9);
		}
		if (draining && now_ns() > drain_deadline)
			break;
		ps.len = 0;
		for (i = 0; i < w->nconns; i++) {
			struct nl_conn *c = &w->conns[i];

			ps.due[i] = false;
			if (!c->z)
				continue;
			conn_fill(w, c, draining);
			if (!c->dead && !pollset_add(&ps, c, i, &timeout_ms))
				c->dead = true;
		}
		ready = ps.len ? poll(ps.fds, (nfds_t)ps.len, timeout_ms) : 0;
		/* a descriptor ready or work due: that connection's I/O and
		 * completions; after a timeout every connection, for its
		 * request timeouts */
		for (size_t k = 0; ready > 0 && k < ps.len; k++)
			if (ps.fds[k].revents)
				ps.due[ps.owner[k]] = true;
		for (i = 0, live = 0; i < w->nconns; i++) {
			struct nl_conn *c = &w->conns[i];

			if (!c->z)
				continue;
			if (!c->dead && (ps.due[i] || ready == 0))
				conn_harvest(w, c, 0);
			if (c->dead)
				conn_close(w, c);
			else
				live++;
		}
		worker_publish(w);
		if (live == 0 || (w->in_flight == 0 && (draining || w->r.sent >= w->budget)))
			break;
	}
out:
	/* a timed-out drain: what is still in flight is lost */
	for (i = 0; i < w->nconns; i++)
		conn_close(w, &w->conns[i]);
	worker_publish(w);
	free(ps.fds);
	free(ps.owner);
	free(ps.due);
}

static int worker_connect(struct nl_worker *w)
{
	const struct nl_config *cfg = w->cfg;
	struct zaris_options o;
	unsigned i, j;

	zaris_options_init(&o);
	o.host = cfg->lg->host;
	o.port = (uint16_t)cfg->lg->port;
	o.cluster = cfg->cluster ? ZARIS_CLUSTER_ON : ZARIS_CLUSTER_OFF;
	o.native_port_offset = cfg->native_port_offset;
	for (i = 0; i < w->nconns; i++) {
		struct nl_conn *c = &w->conns[i];
		char err[160];
		int rc = zaris_connect(&o, &c->z, err, sizeof(err));

		if (rc < 0) {
			char what[256];

			snprintf(what, sizeof(what), "connect to %s:%d: %s", o.host, o.port, err);
			note_error(w, what, strlen(what));
			return rc == ZARIS_E_AUTH      ? -EACCES
			       : rc == ZARIS_E_TIMEOUT ? -ETIMEDOUT
						       : -ECONNREFUSED;
		}
		if (i == 0) {
			w->server_flags = zaris_server_flags(c->z);
			w->nodes = (unsigned)zaris_node_count(c->z);
		}
		c->slots = calloc(cfg->depth, sizeof(*c->slots));
		if (!c->slots)
			return -ENOMEM;
		for (j = 0; j < cfg->depth; j++)
			if (!(c->slots[j].b = zaris_batch_new()))
				return -ENOMEM;
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct nl_worker *w = arg;
	unsigned i, j;

	w->start_err = worker_connect(w);
	pthread_barrier_wait(&w->sh->start);
	if (w->start_err == 0)
		worker_loop(w);
	for (i = 0; i < w->nconns; i++) {
		struct nl_conn *c = &w->conns[i];

		conn_close(w, c); /* one the loop never ran on */
		if (c->slots)
			for (j = 0; j < w->cfg->depth; j++)
				zaris_batch_free(c->slots[j].b);
		free(c->slots);
	}
	atomic_store_explicit(&w->finished, true, memory_order_release);
	return NULL;
}

/* Slice I of T over [0, N), as loadgen.c's. */
static uint64_t slice_lo(uint64_t n, unsigned i, unsigned t)
{
	return (uint64_t)(((unsigned __int128)n * i) / t);
}

static int workers_init(const struct nl_config *cfg, struct nl_shared *sh, struct nl_worker *ws,
			const char *value)
{
	const struct lg_config *lg = cfg->lg;
	size_t plen = strlen(cfg->key_prefix);
	unsigned i;

	for (i = 0; i < lg->threads; i++) {
		struct nl_worker *w = &ws[i];
		uint64_t lo = slice_lo(lg->keyspace, i, lg->threads);
		uint64_t hi = slice_lo(lg->keyspace, i + 1, lg->threads);
		int rc;

		w->cfg = cfg;
		w->sh = sh;
		w->value = value;
		w->nconns = lg->conns / lg->threads + (i < lg->conns % lg->threads);
		w->conns = calloc(w->nconns, sizeof(*w->conns));
		w->klen = plen + TPL_KEY_DIGITS;
		w->key = malloc(w->klen);
		if (!w->conns || !w->key)
			return -ENOMEM;
		memcpy(w->key, cfg->key_prefix, plen);
		w->budget = lg->requests ? slice_lo(lg->requests, i + 1, lg->threads) -
						   slice_lo(lg->requests, i, lg->threads)
					 : UINT64_MAX;
		/* the RESP mode's seeds and slices: the same keys in the same
		 * order for a given --seed */
		rc = keygen_init(&w->kg, lg->dist, lg->keyspace, lo < hi ? lo : 0,
				 lo < hi ? hi : lg->keyspace, lg->zipf_s,
				 lg->seed * 0x100000001b3ULL + i + 1);
		if (rc < 0)
			return rc;
		hist_init(&w->r.hist);
	}
	return 0;
}

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

/* The control thread: a progress line each second (the RESP mode's
 * format), the stop at the deadline, back when every worker finished. */
static void control_loop(const struct lg_config *cfg, struct nl_shared *sh, struct nl_worker *ws, uint64_t t0)
{
	uint64_t deadline = cfg->requests ? UINT64_MAX : t0 + (uint64_t)(cfg->duration_s * 1e9);
	uint64_t next_tick = t0 + 1000000000ULL, last_t = t0, last_ops = 0, last_lat = 0;
	uint64_t last_cpu = procstat_self_cpu_us(), last_srv = 0;
	bool have_srv = servers_cpu_us(cfg, &last_srv) == 0;
	struct timespec nap = { 0, 20 * 1000000L };

	for (;;) {
		uint64_t now, ops = 0, errs = 0, lat = 0, cpu, srv = 0;
		unsigned i, done = 0;
		char srvbuf[32] = "";
		double dt;

		nanosleep(&nap, NULL);
		now = now_ns();
		for (i = 0; i < cfg->threads; i++)
			done += atomic_load_explicit(&ws[i].finished, memory_order_relaxed);
		if (done == cfg->threads)
			return;
		if (now >= deadline)
			atomic_store_explicit(&sh->stop, true, memory_order_relaxed);
		if (now < next_tick || !cfg->progress)
			continue;
		for (i = 0; i < cfg->threads; i++) {
			ops += atomic_load_explicit(&ws[i].pub_ops, memory_order_relaxed);
			errs += atomic_load_explicit(&ws[i].pub_errors, memory_order_relaxed);
			lat += atomic_load_explicit(&ws[i].pub_lat_ns, memory_order_relaxed);
		}
		dt = (double)(now - last_t) / 1e9;
		cpu = procstat_self_cpu_us();
		if (have_srv && servers_cpu_us(cfg, &srv) == 0) {
			snprintf(srvbuf, sizeof(srvbuf), "  server-cpu %3.0f%%",
				 (double)(srv - last_srv) / 1e4 / dt);
			last_srv = srv;
		}
		fprintf(stderr,
			"[%6.1fs] %10.0f ops/s  total %llu  errors %llu  mean %.1f us  client-cpu %3.0f%%%s\n",
			(double)(now - t0) / 1e9, (double)(ops - last_ops) / dt, (unsigned long long)ops,
			(unsigned long long)errs,
			ops > last_ops ? (double)(lat - last_lat) / (double)(ops - last_ops) / 1e3 : 0.0,
			(double)(cpu - last_cpu) / 1e4 / dt, srvbuf);
		last_cpu = cpu;
		last_t = now;
		last_ops = ops;
		last_lat = lat;
		next_tick += 1000000000ULL;
	}
}

static void sum_results(const struct lg_config *cfg, struct nl_worker *ws, struct nl_result *res)
{
	unsigned i;

	for (i = 0; i < cfg->threads; i++) {
		struct lg_result *r = &ws[i].r;

		res->lg.ops += r->ops;
		res->lg.sent += r->sent;
		res->lg.errors += r->errors;
		res->lg.nils += r->nils;
		res->lg.conn_errors += r->conn_errors;
		res->lg.lost += r->lost;
		res->lg.moved += r->moved;
		res->lg.asks += r->asks;
		res->lg.refreshes += r->refreshes;
		hist_merge(&res->lg.hist, &r->hist);
		if (!res->lg.first_error[0] && r->first_error[0])
			memcpy(res->lg.first_error, r->first_error, sizeof(res->lg.first_error));
		if (ws[i].start_err == 0 && res->nodes == 0) {
			res->server_flags = ws[i].server_flags;
			res->nodes = ws[i].nodes;
		}
	}
}

/* Whether every template of MIX is a SET or a GET (by name). */
static bool mix_is_setget(const struct tpl_mix *mix)
{
	unsigned i;

	for (i = 0; i < mix->n; i++)
		if (strcmp(mix->t[i].name, "SET") != 0 && strcmp(mix->t[i].name, "GET") != 0)
			return false;
	return true;
}

int nl_run(const struct nl_config *cfg, struct nl_result *res)
{
	const struct lg_config *lg = cfg->lg;
	struct nl_shared sh;
	struct nl_worker *ws;
	uint64_t t0, t1, cpu0, srv0 = 0, srv1 = 0;
	char *value;
	bool have_srv;
	unsigned i;
	int rc, start_err = 0, ok_workers = 0;

	memset(res, 0, sizeof(*res));
	hist_init(&res->lg.hist);
	res->lg.server_cpu_us = -1;
	if (!mix_is_setget(cfg->mix) || cfg->batch < 1 || cfg->batch > 65535 || cfg->depth < 1)
		return -EINVAL;
	value = malloc(cfg->value_size ? cfg->value_size : 1);
	ws = calloc(lg->threads, sizeof(*ws));
	if (!value || !ws) {
		rc = -ENOMEM;
		goto out_free;
	}
	memset(value, 'x', cfg->value_size);
	memset(&sh, 0, sizeof(sh));
	rc = workers_init(cfg, &sh, ws, value);
	if (rc < 0)
		goto out_free;
	pthread_barrier_init(&sh.start, NULL, lg->threads + 1);
	for (i = 0; i < lg->threads; i++) {
		rc = -pthread_create(&ws[i].tid, NULL, worker_main, &ws[i]);
		if (rc < 0) {
			/* the barrier counts on every worker */
			fprintf(stderr, "zaris-bench: pthread_create: %s\n", strerror(-rc));
			abort();
		}
	}
	pthread_barrier_wait(&sh.start);
	t0 = now_ns();
	cpu0 = procstat_self_cpu_us();
	have_srv = servers_cpu_us(lg, &srv0) == 0;
	control_loop(lg, &sh, ws, t0);
	t1 = now_ns();
	res->lg.client_cpu_us = procstat_self_cpu_us() - cpu0;
	if (have_srv && servers_cpu_us(lg, &srv1) == 0)
		res->lg.server_cpu_us = (int64_t)(srv1 - srv0);
	res->lg.elapsed_s = (double)(t1 - t0) / 1e9;
	for (i = 0; i < lg->threads; i++)
		pthread_join(ws[i].tid, NULL);
	pthread_barrier_destroy(&sh.start);
	for (i = 0; i < lg->threads; i++) {
		if (ws[i].start_err < 0)
			start_err = ws[i].start_err;
		else
			ok_workers++;
	}
	sum_results(lg, ws, res);
	rc = ok_workers == 0 ? start_err : 0;
	if (start_err < 0 && ok_workers > 0)
		res->lg.conn_errors++;

out_free:
	if (ws)
		for (i = 0; i < lg->threads; i++) {
			free(ws[i].conns);
			free(ws[i].key);
		}
	free(ws);
	free(value);
	return rc;
}
