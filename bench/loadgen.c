/* loadgen — see loadgen.h.
 *
 * Threads: as runner.h says. A worker's connections and (cluster mode)
 * its copy of the slot map and its per-node queues are its own until
 * pthread_join(). The map given in the config is only read.
 */
#include "bench/loadgen.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bench/runner.h"
#include "zarisd/proto/resp_reader.h"

#define LG_RBUF_MIN (64 * 1024)
#define LG_EVENTS 256

static const char asking_req[] = "*1\r\n$6\r\nASKING\r\n";

/* Cluster mode: one request in flight or queued for a node. */
struct lg_req {
	uint64_t key; /* key index */
	uint64_t t0;  /* first send (ns), 0 = never sent */
	uint8_t tpl;  /* index into the mix */
	uint8_t kind; /* LG_REQ_* */
};

enum {
	LG_REQ_PLAIN,  /* an ordinary request */
	LG_REQ_ASK,    /* queued: send ASKING before it */
	LG_REQ_ASKING, /* in flight: the ASKING itself (its +OK is no op) */
};

/* Cluster mode: the requests waiting for a socket of one node (a ring). */
struct lg_queue {
	struct lg_req *q;
	unsigned cap, head, n;
	bool dead; /* every socket to the node is lost: nothing more queues */
};

struct lg_conn {
	int fd;		/* -1 once dead */
	bool out_armed; /* EPOLLOUT registered: a write is pending */
	char *wbuf;	/* unsent requests in [woff, wlen) */
	size_t wcap, wlen, woff;
	char *rbuf; /* unparsed reply bytes in [0, rlen) */
	size_t rcap, rlen;
	uint64_t *stamp;    /* send time (ns) of request i at [i & mask] */
	uint64_t issued;    /* requests written into wbuf so far */
	uint64_t answered;  /* replies parsed so far; issued - answered in flight */
	unsigned node;	    /* cluster: index of its node in the map */
	struct lg_req *req; /* cluster: request i at [i & mask] */
};

struct lg_worker {
	struct run_worker run; /* first: runner.h walks an array of these */
	const struct lg_config *cfg;
	int epfd;
	struct lg_conn *conns;
	unsigned nconns;
	unsigned live;	    /* connections not dead */
	unsigned mask;	    /* stamp ring size - 1 (power of two >= pipeline) */
	unsigned slot;	    /* position in the template cycle */
	uint64_t in_flight; /* sum over conns of issued - answered */
	/* cluster mode only: */
	const struct slotmap *map; /* the config's, for addresses */
	uint8_t *owner;		   /* this worker's slot -> node, updated by -MOVED */
	struct lg_queue *queue;	   /* per node */
	unsigned queue_limit;	   /* a queue this long stops drawing */
	unsigned nfull;		   /* queues at or over queue_limit */
	uint64_t queued;	   /* requests in all queues */
	uint64_t drawn;		   /* requests drawn from the key stream */
	bool starved;		   /* a fill stopped for a full queue: top up all */
	char *keybuf;		   /* scratch for a key argument */
	int refresh_from;	   /* node to re-read CLUSTER SLOTS from, -1 = none */
	uint64_t next_refresh;	   /* no re-read before this time (ns) */
	struct slotmap *fresh;	   /* scratch for a re-read map */
};

static void note_error(struct lg_worker *w, const char *fmt, const char *what, size_t len)
{
	run_note_error(&w->run, fmt, what, len);
}

static void queue_pop(struct lg_worker *w, unsigned node);

/* Cluster mode: when the last socket to NODE is lost, what waits for it is
 * dropped (the sent part counts as lost) and no more is queued for it, so
 * the run can still end. */
static void node_check(struct lg_worker *w, unsigned node)
{
	struct lg_queue *q = &w->queue[node];
	unsigned i;

	for (i = 0; i < w->nconns; i++)
		if (w->conns[i].node == node && w->conns[i].fd >= 0)
			return;
	q->dead = true;
	for (; q->n > 0; queue_pop(w, node))
		w->run.r.lost += q->q[q->head].t0 != 0;
}

static void conn_fail(struct lg_worker *w, struct lg_conn *c, const char *why)
{
	uint64_t pending = c->issued - c->answered;

	if (c->fd < 0)
		return;
	note_error(w, "connection lost: %.*s", why, strlen(why));
	epoll_ctl(w->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
	w->live--;
	w->run.r.conn_errors++;
	w->run.r.lost += pending;
	w->in_flight -= pending;
	c->answered = c->issued;
	if (w->map)
		node_check(w, c->node);
}

static int set_out(struct lg_worker *w, struct lg_conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };

	if (epoll_ctl(w->epfd, EPOLL_CTL_MOD, c->fd, &ev) < 0)
		return -errno;
	c->out_armed = on;
	return 0;
}

/* Writes what is pending; arms EPOLLOUT when the socket is full. */
static void conn_flush(struct lg_worker *w, struct lg_conn *c)
{
	while (c->woff < c->wlen) {
		ssize_t n = write(c->fd, c->wbuf + c->woff, c->wlen - c->woff);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!c->out_armed && set_out(w, c, true) < 0)
					conn_fail(w, c, strerror(errno));
				return;
			}
			conn_fail(w, c, strerror(errno));
			return;
		}
		c->woff += (size_t)n;
	}
	c->wlen = c->woff = 0;
	if (c->out_armed && set_out(w, c, false) < 0)
		conn_fail(w, c, strerror(errno));
}

/* Tops C up to `pipeline` requests in flight, stamping them NOW. */
static void conn_fill(struct lg_worker *w, struct lg_conn *c, uint64_t now)
{
	const struct tpl_mix *mix = w->cfg->mix;
	unsigned pipeline = w->cfg->pipeline;

	if (c->fd < 0)
		return;
	if (c->woff > 0) {
		memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
		c->wlen -= c->woff;
		c->woff = 0;
	}
	while (c->issued - c->answered < pipeline && w->run.r.sent < w->run.budget) {
		const struct tpl *t = &mix->t[mix->order[w->slot]];

		if (++w->slot == mix->cycle)
			w->slot = 0;
		/* Unsent bytes belong to requests in flight, so a buffer of
		 * pipeline * max_len always has room here. */
		c->wlen += tpl_render(t, c->wbuf + c->wlen, keygen_next(&w->run.kg));
		c->stamp[c->issued & w->mask] = now;
		c->issued++;
		w->in_flight++;
		w->run.r.sent++;
	}
}

/* Consumes the complete replies in C's read buffer. */
static void conn_parse(struct lg_worker *w, struct lg_conn *c, uint64_t now)
{
	size_t pos = 0;

	while (pos < c->rlen) {
		struct resp_reply rep;
		long len = resp_reader_next(c->rbuf + pos, c->rlen - pos, &rep);

		if (len == 0)
			break;
		if (len < 0) {
			conn_fail(w, c, "protocol error in reply");
			return;
		}
		if (rep.type == RESP_REPLY_PUSH) {
			w->run.r.pushes++;
			pos += (size_t)len;
			continue;
		}
		if (c->answered == c->issued) {
			conn_fail(w, c, "reply without a request");
			return;
		}
		hist_record(&w->run.r.hist, now - c->stamp[c->answered & w->mask]);
		c->answered++;
		w->in_flight--;
		w->run.r.ops++;
		if (rep.type == RESP_REPLY_ERROR) {
			w->run.r.errors++;
			note_error(w, "%.*s", c->rbuf + pos, (size_t)len > 2 ? (size_t)len - 2 : 0);
		} else if (rep.type == RESP_REPLY_NULL) {
			w->run.r.nils++;
		}
		pos += (size_t)len;
	}
	if (pos > 0 && pos < c->rlen)
		memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
	c->rlen -= pos;
}

/* --- cluster mode: routing, queues, redirections ----------------------- */

/* Doubles Q's ring. A redirect can push past the draw limit (ASK sends
 * what a node's own queue held to another node's), so the ring grows
 * instead of refusing; the total is bounded by what is drawn and not yet
 * answered, so this happens a few times per run at most. */
static int queue_grow(struct lg_queue *q)
{
	struct lg_req *nq = malloc(2 * (size_t)q->cap * sizeof(*nq));
	unsigned i;

	if (!nq)
		return -ENOMEM;
	for (i = 0; i < q->n; i++)
		nq[i] = q->q[(q->head + i) % q->cap];
	free(q->q);
	q->q = nq;
	q->head = 0;
	q->cap *= 2;
	return 0;
}

/* Queues R for NODE; false when the node is gone or out of memory. */
static bool queue_push(struct lg_worker *w, unsigned node, const struct lg_req *r)
{
	struct lg_queue *q = &w->queue[node];

	if (q->dead || (q->n == q->cap && queue_grow(q) < 0))
		return false;
	q->q[(q->head + q->n) % q->cap] = *r;
	if (++q->n == w->queue_limit)
		w->nfull++;
	w->queued++;
	return true;
}

static void queue_pop(struct lg_worker *w, unsigned node)
{
	struct lg_queue *q = &w->queue[node];

	if (q->n-- == w->queue_limit)
		w->nfull--;
	q->head = (q->head + 1) % q->cap;
	w->queued--;
}

/* The slot owner of request R (SM_NONE for no key or an unserved slot). */
static unsigned request_owner(struct lg_worker *w, const struct lg_req *r)
{
	const struct tpl *t = &w->cfg->mix->t[r->tpl];

	if (t->nkeys == 0)
		return SM_NONE;
	tpl_key_arg(t, w->keybuf, r->key);
	return w->owner[zr_key_slot(w->keybuf, t->arg_len)];
}

/* The next request for a socket of NODE with ROOM free pipeline places:
 * NODE's queue first, else drawn from the key stream (queueing those that
 * belong elsewhere). False when there is none for now. */
static bool next_request(struct lg_worker *w, unsigned node, unsigned room, struct lg_req *out)
{
	const struct tpl_mix *mix = w->cfg->mix;
	struct lg_queue *q = &w->queue[node];

	for (;;) {
		unsigned owner;

		if (q->n > 0) {
			*out = q->q[q->head];
			if (out->kind == LG_REQ_ASK && room < 2)
				return false;
			queue_pop(w, node);
			return true;
		}
		if (w->drawn >= w->run.budget)
			return false;
		if (w->nfull > 0) {
			w->starved = true;
			return false;
		}
		out->tpl = mix->order[w->slot];
		if (++w->slot == mix->cycle)
			w->slot = 0;
		out->key = keygen_next(&w->run.kg);
		out->t0 = 0;
		out->kind = LG_REQ_PLAIN;
		w->drawn++;
		owner = request_owner(w, out);
		/* no key, or a slot nobody serves: any node answers (the
		 * latter with the error the run should show) */
		if (owner == node || owner == SM_NONE)
			return true;
		if (w->queue[owner].dead)
			continue; /* its node is gone: the key is not sent */
		if (!queue_push(w, owner, out))
			return true; /* out of memory: it goes here, to be redirected */
	}
}

/* Appends an ASKING to C's write buffer: it takes a pipeline place, and
 * its reply is consumed without counting as an op. */
static void conn_put_asking(struct lg_worker *w, struct lg_conn *c, uint64_t now)
{
	memcpy(c->wbuf + c->wlen, asking_req, sizeof(asking_req) - 1);
	c->wlen += sizeof(asking_req) - 1;
	c->stamp[c->issued & w->mask] = now;
	c->req[c->issued & w->mask] = (struct lg_req){ .kind = LG_REQ_ASKING };
	c->issued++;
	w->in_flight++;
}

/* Tops C up to `pipeline` requests in flight (cluster mode). */
static void conn_fill_cluster(struct lg_worker *w, struct lg_conn *c, uint64_t now)
{
	const struct tpl_mix *mix = w->cfg->mix;
	unsigned pipeline = w->cfg->pipeline;
	struct lg_req r;

	if (c->fd < 0)
		return;
	if (c->woff > 0) {
		memmove(c->wbuf, c->wbuf + c->woff, c->wlen - c->woff);
		c->wlen -= c->woff;
		c->woff = 0;
	}
	while (c->issued - c->answered < pipeline &&
	       next_request(w, c->node, pipeline - (unsigned)(c->issued - c->answered), &r)) {
		const struct tpl *t = &mix->t[r.tpl];

		if (r.kind == LG_REQ_ASK) {
			conn_put_asking(w, c, now);
			r.kind = LG_REQ_PLAIN;
		}
		if (r.t0 == 0) {
			r.t0 = now;
			w->run.r.sent++;
		}
		/* The buffer holds pipeline * max(max_len, ASKING) bytes. */
		tpl_render(t, c->wbuf + c->wlen, r.key);
		c->wlen += t->len;
		c->stamp[c->issued & w->mask] = r.t0;
		c->req[c->issued & w->mask] = r;
		c->issued++;
		w->in_flight++;
	}
}

/* After a MOVED, at most once a second: the whole map again, from the
 * node that redirected (it knows the newer layout). A blocking exchange on
 * loopback, a fraction of a millisecond. Only slots owned by nodes we have
 * sockets to are taken; the rest keep their owner (and MOVED, if they are
 * wrong, comes again). */
static void cluster_refresh(struct lg_worker *w, uint64_t now)
{
	const struct sm_node *from;
	char err[160];
	unsigned s;

	if (w->refresh_from < 0 || now < w->next_refresh)
		return;
	from = &w->map->node[w->refresh_from];
	w->refresh_from = -1;
	w->next_refresh = now + 1000000000ULL;
	if (slotmap_fetch(from->host, from->port, w->fresh, err, sizeof(err)) < 0) {
		note_error(w, "refreshing the slot map: %.*s", err, strlen(err));
		return;
	}
	w->run.r.refreshes++;
	for (s = 0; s < ZR_KEY_SLOTS; s++) {
		const struct sm_node *n;
		int idx;

		if (w->fresh->owner[s] == SM_NONE)
			continue;
		n = &w->fresh->node[w->fresh->owner[s]];
		idx = slotmap_find(w->map, n->host, strlen(n->host), n->port);
		if (idx >= 0)
			w->owner[s] = (uint8_t)idx;
	}
}

/* After a wake-up: queued requests (drawn for, or redirected to, another
 * node) go out on their node's sockets with room, and when a fill stopped
 * for a full queue every socket is topped up again. */
static void cluster_pump(struct lg_worker *w, uint64_t now)
{
	bool all;
	unsigned i;

	cluster_refresh(w, now);
	if (w->queued == 0 && !w->starved)
		return;
	all = w->starved;
	w->starved = false; /* set again by a fill below that stops short */
	for (i = 0; i < w->nconns; i++) {
		struct lg_conn *c = &w->conns[i];

		if (c->fd < 0 || c->issued - c->answered >= w->cfg->pipeline)
			continue;
		if (!all && w->queue[c->node].n == 0)
			continue;
		conn_fill_cluster(w, c, now);
		if (!c->out_armed && c->fd >= 0)
			conn_flush(w, c);
	}
}

/* A -MOVED or -ASK for request R: true when followed (R queued again for
 * the node named), false when it names no node of the map (then it is an
 * ordinary error reply). */
static bool follow_redirect(struct lg_worker *w, const struct resp_reply *rep, const struct lg_req *r)
{
	struct sm_redirect rd;
	struct lg_req again = *r;
	int node;

	if (!slotmap_parse_redirect(rep->str, rep->len, &rd))
		return false;
	node = slotmap_find(w->map, rd.host, rd.hlen, rd.port);
	if (node < 0)
		return false;
	if (rd.ask) {
		w->run.r.asks++;
		again.kind = LG_REQ_ASK;
	} else {
		w->run.r.moved++;
		w->owner[rd.slot] = (uint8_t)node;
		/* one slot moved: others probably did too */
		w->refresh_from = node;
	}
	return queue_push(w, (unsigned)node, &again);
}

/* Consumes the complete replies in C's read buffer (cluster mode). */
static void conn_parse_cluster(struct lg_worker *w, struct lg_conn *c, uint64_t now)
{
	size_t pos = 0;

	while (pos < c->rlen) {
		struct resp_reply rep;
		long len = resp_reader_next(c->rbuf + pos, c->rlen - pos, &rep);
		struct lg_req *r;

		if (len == 0)
			break;
		if (len < 0) {
			conn_fail(w, c, "protocol error in reply");
			return;
		}
		pos += (size_t)len;
		if (rep.type == RESP_REPLY_PUSH) {
			w->run.r.pushes++;
			continue;
		}
		if (c->answered == c->issued) {
			conn_fail(w, c, "reply without a request");
			return;
		}
		r = &c->req[c->answered & w->mask];
		c->answered++;
		w->in_flight--;
		if (r->kind == LG_REQ_ASKING) {
			if (rep.type == RESP_REPLY_ERROR)
				note_error(w, "ASKING: %.*s", rep.str, rep.len);
			continue;
		}
		if (rep.type == RESP_REPLY_ERROR && follow_redirect(w, &rep, r))
			continue;
		hist_record(&w->run.r.hist, now - r->t0);
		w->run.r.ops++;
		if (rep.type == RESP_REPLY_ERROR) {
			w->run.r.errors++;
			note_error(w, "%.*s", rep.str, rep.len);
		} else if (rep.type == RESP_REPLY_NULL) {
			w->run.r.nils++;
		}
	}
	if (pos > 0 && pos < c->rlen)
		memmove(c->rbuf, c->rbuf + pos, c->rlen - pos);
	c->rlen -= pos;
}

static void conn_readable(struct lg_worker *w, struct lg_conn *c, uint64_t now)
{
	ssize_t n;

	if (c->rlen == c->rcap) {
		/* One reply larger than the buffer (a big MGET, say): grow.
		 * Rare, and never per request. */
		char *nb = realloc(c->rbuf, c->rcap * 2);

		if (!nb) {
			conn_fail(w, c, "out of memory for a large reply");
			return;
		}
		c->rbuf = nb;
		c->rcap *= 2;
	}
	n = read(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen);
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			conn_fail(w, c, strerror(errno));
		return;
	}
	if (n == 0) {
		conn_fail(w, c, "closed by the server");
		return;
	}
	c->rlen += (size_t)n;
	if (w->map) {
		conn_parse_cluster(w, c, now);
		if (c->fd < 0)
			return;
		conn_fill_cluster(w, c, now);
	} else {
		conn_parse(w, c, now);
		if (c->fd < 0)
			return;
		conn_fill(w, c, now);
	}
	if (!c->out_armed)
		conn_flush(w, c);
}

static int fcntl_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static int conn_open(struct lg_worker *w, struct lg_conn *c, const struct addrinfo *ai)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
	int one = 1, rc;

	c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (c->fd < 0)
		return -errno;
	/* Blocking connect: loopback answers at once, and this happens
	 * before the clock starts. */
	if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		rc = -errno;
		goto out_close;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (fcntl_nonblock(c->fd) < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, c->fd, &ev) < 0) {
		rc = -errno;
		goto out_close;
	}
	c->wcap = (size_t)w->cfg->pipeline * w->cfg->mix->max_len;
	if (w->map) {
		size_t req_max =
			w->cfg->mix->max_len > sizeof(asking_req) ? w->cfg->mix->max_len : sizeof(asking_req);

		c->wcap = (size_t)w->cfg->pipeline * req_max;
		c->req = calloc((size_t)w->mask + 1, sizeof(*c->req));
	}
	c->wbuf = malloc(c->wcap);
	c->rcap = LG_RBUF_MIN;
	c->rbuf = malloc(c->rcap);
	c->stamp = calloc((size_t)w->mask + 1, sizeof(*c->stamp));
	if (!c->wbuf || !c->rbuf || !c->stamp || (w->map && !c->req)) {
		rc = -ENOMEM;
		goto out_close;
	}
	w->live++;
	return 0;

out_close:
	close(c->fd);
	c->fd = -1;
	return rc;
}

/* The worker's loop: runs until its budget is spent and answered, or the
 * stop flag is seen and the replies in flight are drained (or the drain
 * times out), or every connection is lost. */
static void worker_loop(struct lg_worker *w)
{
	struct epoll_event ev[LG_EVENTS];
	uint64_t now = run_now_ns(), drain_deadline = 0;
	bool draining = false;
	unsigned i;
	int n;

	for (i = 0; i < w->nconns; i++) {
		if (w->map)
			conn_fill_cluster(w, &w->conns[i], now);
		else
			conn_fill(w, &w->conns[i], now);
		conn_flush(w, &w->conns[i]);
	}
	if (w->map)
		cluster_pump(w, now);
	while (w->live > 0) {
		if (!draining && run_should_stop(&w->run)) {
			draining = true;
			/* no more draws; what is queued (drawn or redirected)
			 * still goes out */
			w->run.budget = w->map ? w->drawn : w->run.r.sent;
			drain_deadline = now + (uint64_t)(w->cfg->drain_timeout_s * 1e9);
		}
		if (w->in_flight == 0 && w->queued == 0 &&
		    (w->map ? w->drawn : w->run.r.sent) >= w->run.budget)
			break;
		if (draining && now > drain_deadline)
			break;
		/* The timeout only bounds how late a stop is seen. */
		n = epoll_wait(w->epfd, ev, LG_EVENTS, 50);
		if (n < 0 && errno != EINTR) {
			note_error(w, "epoll_wait: %.*s", strerror(errno), strlen(strerror(errno)));
			break;
		}
		now = run_now_ns();
		for (i = 0; i < (unsigned)(n > 0 ? n : 0); i++) {
			struct lg_conn *c = ev[i].data.ptr;

			if (c->fd >= 0 && (ev[i].events & EPOLLOUT))
				conn_flush(w, c);
			if (c->fd >= 0 && (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				conn_readable(w, c, now);
		}
		if (w->map)
			cluster_pump(w, now);
		run_publish(&w->run);
	}
	/* Whatever is still in flight after a timed-out drain is lost, and
	 * so is what was sent once and still waits in a queue. */
	w->run.r.lost += w->in_flight;
	if (w->map)
		for (i = 0; i < w->map->nnodes; i++)
			for (; w->queue[i].n > 0; queue_pop(w, i))
				w->run.r.lost += w->queue[i].q[w->queue[i].head].t0 != 0;
	run_publish(&w->run);
}

/* Opens the connections of W that go to HOST:PORT (node NODE in cluster
 * mode, every connection otherwise). */
static int worker_connect(struct lg_worker *w, const char *host, int port, unsigned node)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char ports[16];
	unsigned i;
	int rc = 0;

	snprintf(ports, sizeof(ports), "%d", port);
	if (getaddrinfo(host, ports, &hints, &ai) != 0) {
		note_error(w, "cannot resolve %.*s", host, strlen(host));
		return -EHOSTUNREACH;
	}
	for (i = 0; i < w->nconns && rc == 0; i++)
		if (!w->map || w->conns[i].node == node)
			rc = conn_open(w, &w->conns[i], ai);
	if (rc < 0) {
		char what[128];

		snprintf(what, sizeof(what), "%s:%d: %s", host, port, strerror(-rc));
		note_error(w, "connect to %.*s", what, strlen(what));
	}
	freeaddrinfo(ai);
	return rc;
}

static void *worker_main(void *arg)
{
	struct lg_worker *w = arg;
	const struct lg_config *cfg = w->cfg;
	unsigned i;

	int err = 0;

	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->epfd < 0)
		err = -errno;
	else if (!w->map)
		err = worker_connect(w, cfg->host, cfg->port, 0);
	else
		for (i = 0; i < w->map->nnodes && err == 0; i++)
			err = worker_connect(w, w->map->node[i].host, w->map->node[i].port, i);
	run_worker_ready(&w->run, err);
	if (err == 0)
		worker_loop(w);
	for (i = 0; i < w->nconns; i++) {
		if (w->conns[i].fd >= 0)
			close(w->conns[i].fd);
		free(w->conns[i].wbuf);
		free(w->conns[i].rbuf);
		free(w->conns[i].stamp);
		free(w->conns[i].req);
	}
	if (w->epfd >= 0)
		close(w->epfd);
	run_worker_done(&w->run);
	return NULL;
}

/* W's copy of the slot map, its queues and scratch (cluster mode). */
static int cluster_init(struct lg_worker *w)
{
	const struct lg_config *cfg = w->cfg;
	unsigned n, per_node = w->nconns / cfg->map->nnodes;

	w->map = cfg->map;
	w->owner = malloc(ZR_KEY_SLOTS);
	w->queue = calloc(cfg->map->nnodes, sizeof(*w->queue));
	w->keybuf = malloc(cfg->mix->max_len);
	w->fresh = malloc(sizeof(*w->fresh));
	w->refresh_from = -1;
	if (!w->owner || !w->queue || !w->keybuf || !w->fresh)
		return -ENOMEM;
	memcpy(w->owner, cfg->map->owner, ZR_KEY_SLOTS);
	/* Draws stop at the limit; above it there is room for every request
	 * the worker has in flight to be redirected (and queue_grow() for
	 * more). */
	w->queue_limit = 2 * per_node * cfg->pipeline + 64;
	for (n = 0; n < cfg->map->nnodes; n++) {
		w->queue[n].cap = w->queue_limit + w->nconns * cfg->pipeline;
		w->queue[n].q = calloc(w->queue[n].cap, sizeof(*w->queue[n].q));
		if (!w->queue[n].q)
			return -ENOMEM;
	}
	return 0;
}

static void cluster_free(struct lg_worker *w)
{
	unsigned n;

	if (w->queue)
		for (n = 0; n < w->cfg->map->nnodes; n++)
			free(w->queue[n].q);
	free(w->queue);
	free(w->owner);
	free(w->keybuf);
	free(w->fresh);
}

static int workers_init(const struct lg_config *cfg, struct lg_worker *ws)
{
	unsigned i, j, ring = 1;

	while (ring < cfg->pipeline)
		ring <<= 1;
	for (i = 0; i < cfg->threads; i++) {
		struct lg_worker *w = &ws[i];
		int rc = run_worker_init(&w->run, cfg, i);

		if (rc < 0)
			return rc;
		w->cfg = cfg;
		w->epfd = -1;
		w->mask = ring - 1;
		w->nconns = run_share(cfg->conns, i, cfg->threads);
		if (cfg->map)
			w->nconns *= cfg->map->nnodes; /* one socket per node each */
		w->conns = calloc(w->nconns, sizeof(*w->conns));
		if (!w->conns)
			return -ENOMEM;
		for (j = 0; j < w->nconns; j++) {
			w->conns[j].fd = -1;
			w->conns[j].node = cfg->map ? j % cfg->map->nnodes : 0;
		}
		if (cfg->map && (rc = cluster_init(w)) < 0)
			return rc;
	}
	return 0;
}

int lg_run(const struct lg_config *cfg, struct lg_result *res)
{
	struct lg_worker *ws;
	unsigned i;
	int rc;

	memset(res, 0, sizeof(*res));
	hist_init(&res->hist);
	res->server_cpu_us = -1;
	ws = calloc(cfg->threads, sizeof(*ws));
	if (!ws)
		return -ENOMEM;
	rc = workers_init(cfg, ws);
	if (rc == 0)
		rc = run_load(cfg, ws, sizeof(*ws), worker_main, res);
	for (i = 0; i < cfg->threads; i++) {
		free(ws[i].conns);
		cluster_free(&ws[i]);
	}
	free(ws);
	return rc;
}
