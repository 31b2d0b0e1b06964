/* native_load — see native_load.h.
 *
 * Threads: as runner.h says. A worker's clients and batches are its own
 * until pthread_join().
 */
#include "bench/native_load.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/runner.h"
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

struct nl_worker {
	struct run_worker run; /* first: runner.h walks an array of these */
	const struct nl_config *cfg;
	struct nl_conn *conns;
	unsigned nconns;
	unsigned slot;	    /* position in the mix's cycle */
	uint64_t in_flight; /* batches in flight over all conns */
	char *key;	    /* scratch: prefix + digits */
	size_t klen;
	const char *value; /* shared, read-only */
	unsigned server_flags, nodes;
};

static void note_error(struct nl_worker *w, const char *what, size_t len)
{
	/* a RESP3 error value ends in CRLF: not part of the text */
	while (len > 0 && (what[len - 1] == '\n' || what[len - 1] == '\r'))
		len--;
	run_note_error(&w->run, "%.*s", what, len);
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

/* Fills B with up to LIMIT operations of the mix. Returns the count
 * added (0 when the budget is spent), or a ZARIS_E_*. */
static int batch_fill(struct nl_worker *w, struct zaris_batch *b, unsigned limit)
{
	const struct tpl_mix *mix = w->cfg->mix;
	unsigned n;

	for (n = 0; n < limit && w->run.r.sent < w->run.budget; n++) {
		const struct tpl *t = &mix->t[mix->order[w->slot]];
		int rc;

		if (++w->slot == mix->cycle)
			w->slot = 0;
		render_key(w, keygen_next(&w->run.kg));
		if (t->name[0] == 'S')
			rc = zaris_add_set(b, w->key, w->klen, w->value, w->cfg->value_size, NULL);
		else
			rc = zaris_add_get(b, w->key, w->klen);
		if (rc < 0)
			return rc;
		w->run.r.sent++;
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
			w->run.r.lost++;
			w->run.r.errors++;
			if (!client_err)
				client_err = res ? res->status : ZARIS_E_IO;
			continue;
		}
		w->run.r.ops++;
		hist_record(&w->run.r.hist, now - s->t0);
		if (res->status > 0) {
			w->run.r.errors++;
			if (res->value)
				note_error(w, res->value->str ? res->value->str : "?", res->value->len);
			else
				note_error(w, zaris_strerror(res->status),
					   strlen(zaris_strerror(res->status)));
		} else if (res->value && res->value->type == ZARIS_T_NULL) {
			w->run.r.nils++;
		}
	}
	if (client_err && !c->dead) {
		note_client_error(w, c, client_err);
		c->dead = true;
		w->run.r.conn_errors++;
	}
}

/* The operations of one batch on C: cfg->batch for each node it routes
 * to, so that each node's frame carries about cfg->batch of them, as each
 * node socket of the RESP cluster mode keeps its pipeline (a batch of
 * cfg->batch split over N nodes would send frames of batch / N). */
static unsigned batch_ops(const struct nl_worker *w, const struct nl_conn *c)
{
	int nodes = w->cfg->cluster ? zaris_node_count(c->z) : 1;

	return w->cfg->batch * (unsigned)(nodes > 1 ? nodes : 1);
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
		rc = batch_fill(w, s->b, batch_ops(w, c));
		if (rc <= 0) {
			if (rc < 0) {
				note_error(w, zaris_strerror(rc), strlen(zaris_strerror(rc)));
				c->dead = true;
				w->run.r.conn_errors++;
			}
			return;
		}
		s->t0 = run_now_ns();
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
		uint64_t now = run_now_ns();
		unsigned i;

		if (n <= 0 || !done) {
			if (n < 0 && !c->dead) {
				note_client_error(w, c, n);
				c->dead = true;
				w->run.r.conn_errors++;
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
	w->run.r.moved += st.moved;
	w->run.r.asks += st.ask;
	w->run.r.refreshes += st.topology_reads;
	zaris_close(c->z);
	c->z = NULL;
	for (i = 0; i < w->cfg->depth; i++) {
		struct nl_slot *s = &c->slots[i];

		if (!s->in_flight)
			continue;
		w->run.r.lost += zaris_batch_count(s->b);
		w->run.r.errors += zaris_batch_count(s->b);
		s->in_flight = false;
		c->in_flight--;
		w->in_flight--;
	}
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

		if (!draining && run_should_stop(&w->run)) {
			draining = true;
			drain_deadline = run_now_ns() + (uint64_t)(w->run.cfg->drain_timeout_s * 1e9);
		}
		if (draining && run_now_ns() > drain_deadline)
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
		run_publish(&w->run);
		if (live == 0 || (w->in_flight == 0 && (draining || w->run.r.sent >= w->run.budget)))
			break;
	}
out:
	/* a timed-out drain: what is still in flight is lost */
	for (i = 0; i < w->nconns; i++)
		conn_close(w, &w->conns[i]);
	run_publish(&w->run);
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

	run_worker_ready(&w->run, worker_connect(w));
	if (w->run.start_err == 0)
		worker_loop(w);
	for (i = 0; i < w->nconns; i++) {
		struct nl_conn *c = &w->conns[i];

		conn_close(w, c); /* one the loop never ran on */
		if (c->slots)
			for (j = 0; j < w->cfg->depth; j++)
				zaris_batch_free(c->slots[j].b);
		free(c->slots);
	}
	run_worker_done(&w->run);
	return NULL;
}

static int workers_init(const struct nl_config *cfg, struct nl_worker *ws, const char *value)
{
	const struct lg_config *lg = cfg->lg;
	size_t plen = strlen(cfg->key_prefix);
	unsigned i;

	for (i = 0; i < lg->threads; i++) {
		struct nl_worker *w = &ws[i];
		/* the RESP mode's seeds and slices: the same keys in the same
		 * order for a given --seed */
		int rc = run_worker_init(&w->run, lg, i);

		if (rc < 0)
			return rc;
		w->cfg = cfg;
		w->value = value;
		w->nconns = run_share(lg->conns, i, lg->threads);
		w->conns = calloc(w->nconns, sizeof(*w->conns));
		w->klen = plen + TPL_KEY_DIGITS;
		w->key = malloc(w->klen);
		if (!w->conns || !w->key)
			return -ENOMEM;
		memcpy(w->key, cfg->key_prefix, plen);
	}
	return 0;
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
	struct nl_worker *ws;
	char *value;
	unsigned i;
	int rc;

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
	rc = workers_init(cfg, ws, value);
	if (rc < 0)
		goto out_free;
	rc = run_load(lg, ws, sizeof(*ws), worker_main, &res->lg);
	/* the HELLO of the first worker that connected */
	for (i = 0; i < lg->threads && res->nodes == 0; i++)
		if (ws[i].run.start_err == 0) {
			res->server_flags = ws[i].server_flags;
			res->nodes = ws[i].nodes;
		}

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
