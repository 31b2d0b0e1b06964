/* worker — see worker.h. */
#include "zarisd/net/worker.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/net/msgq.h"
#include "zarisd/commands/propagate.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/net/conn.h"
#include "zarisd/net/native_session.h"
#include "zarisd/net/resp_session.h"
#include "zarisd/persist/persist.h"
#include "zarisd/script/script.h"
#include "zarisd/store/store.h"

/* The listener table: each row a kind of listener, the port it takes
 * from the settings and the protocol its connections speak; every row
 * listens on every bind address: RESP on `port`, the native protocol on
 * `native-port` when it is set. */
struct listener_kind {
	const char *proto;
	int (*port)(const struct settings *cfg); /* < 0: this kind is off */
	const struct proto_ops *ops;
};

static int resp_port(const struct settings *cfg)
{
	return cfg->port;
}

static int native_port(const struct settings *cfg)
{
	return cfg->native_port ? cfg->native_port : -1;
}

static const struct listener_kind listener_kinds[] = {
	{ "resp", resp_port, &resp_session_ops },
	{ "native", native_port, &native_session_ops },
};
#define NKINDS (sizeof(listener_kinds) / sizeof(listener_kinds[0]))

/* Whether anyone already listens on the address of RES: a bind without
 * SO_REUSEPORT conflicts with any listener there, our kind included, which
 * the workers' SO_REUSEPORT binds would not (a second zarisd of the same
 * user on the port would join the first's group and take half its
 * connections, where Redis refuses to start). 0 or -errno. */
static int probe_port_free(const struct addrinfo *res)
{
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (res->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	int rc = bind(fd, res->ai_addr, res->ai_addrlen) < 0 ? -errno : 0;
	close(fd);
	return rc;
}

/* Opens one SO_REUSEPORT listener on ADDR:PORT; FIRST (the first worker's)
 * checks first that nobody else listens there. Returns the fd or -errno. */
static int listen_one(const char *addr, int port, int backlog, bool first)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_PASSIVE };
	struct addrinfo *res;
	char portbuf[16];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	int rc = getaddrinfo(addr, portbuf, &hints, &res);
	if (rc != 0)
		return -EADDRNOTAVAIL;
	if (first && (rc = probe_port_free(res)) < 0)
		goto out_free;
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rc = -errno;
		goto out_free;
	}
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* every worker has its own listener on the same port; the kernel
	 * spreads new connections over them */
	setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one));
	if (res->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, res->ai_addr, res->ai_addrlen) < 0 || listen(fd, backlog) < 0) {
		rc = -errno;
		close(fd);
		goto out_free;
	}
	rc = fd;
out_free:
	freeaddrinfo(res);
	return rc;
}

int worker_listen(struct worker *w)
{
	struct settings *cfg = w->srv->cfg;
	int n = 0, cap = 4;
	w->listeners = zr_malloc(sizeof(*w->listeners) * (size_t)cap);
	int rc = 0;
	for (size_t k = 0; k < NKINDS && rc == 0; k++) {
		const struct listener_kind *kind = &listener_kinds[k];
		int port = kind->port(cfg);
		if (port < 0)
			continue;
		char *addrs = zr_strdup(cfg->bind);
		char *save = NULL;
		for (char *a = strtok_r(addrs, " ", &save); a; a = strtok_r(NULL, " ", &save)) {
			/* Redis: a leading '-' marks an address that may be unavailable */
			bool optional = a[0] == '-';
			if (optional)
				a++;
			if (!strcmp(a, "*"))
				a = "0.0.0.0";
			int fd = listen_one(a, port, cfg->tcp_backlog, w->index == 0);
			if (fd < 0) {
				if (optional)
					continue;
				zr_log(ZR_LOG_WARNING,
				       "Could not create server TCP listening socket %s:%d: %s", a, port,
				       strerror(-fd));
				rc = fd;
				break;
			}
			if (n == cap) {
				cap *= 2;
				w->listeners = zr_realloc(w->listeners, sizeof(*w->listeners) * (size_t)cap);
			}
			w->listeners[n++] = (struct net_listener){ .fd = fd, .port = port, .ops = kind->ops };
		}
		zr_free(addrs);
	}
	w->nlisten = n;
	/* The event fd exists before any worker runs: a worker may wake any
	 * other from its first command on (TSan saw a wake race with its
	 * creation when it was made at thread start). */
	if (rc == 0 && n > 0) {
		w->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (w->event_fd < 0)
			rc = -errno;
	}
	if (rc == 0 && n == 0) {
		zr_log(ZR_LOG_WARNING, "No listening address could be bound (bind '%s')", cfg->bind);
		rc = -EADDRNOTAVAIL;
	}
	if (rc < 0) {
		for (int i = 0; i < n; i++)
			close(w->listeners[i].fd);
		w->nlisten = 0;
	}
	return rc;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	zr_thread_set_worker((int)w->index); /* the owner checks' identity (core/thread.h) */
	zr_mem_thread_slot(w->index + 1);
	zr_clock_init(); /* its ~2 ms calibration now, not in a first command */
	char name[16];
	snprintf(name, sizeof(name), "zaris-w%u", w->index);
	pthread_setname_np(pthread_self(), name);
	w->backend->run(w);
	/* this thread's buffers in the modules below */
	propagate_thread_exit();
	store_evict_pool_clear();
	return NULL;
}

int worker_start(struct worker *w)
{
	w->now_ms = zr_time_ms();
	w->next_cron_us = zr_mono_us();
	int rc = w->backend->init(w);
	if (rc < 0)
		return rc;
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (w->cpu >= 0) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(w->cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	rc = -pthread_create(&w->thread, &attr, worker_main, w);
	pthread_attr_destroy(&attr);
	return rc;
}

void worker_join(struct worker *w)
{
	pthread_join(w->thread, NULL);
}

bool worker_try_join(struct worker *w)
{
	return pthread_tryjoin_np(w->thread, NULL) == 0;
}

void worker_drop_conns(struct worker *w)
{
	while (w->conns) {
		struct conn *c = w->conns;
		worker_unlink(w, c);
		conn_destroy(c);
	}
}

void worker_destroy(struct worker *w)
{
	w->backend->destroy(w);
	worker_close_listeners(w);
}

void worker_close_listeners(struct worker *w)
{
	if (w->event_fd >= 0)
		close(w->event_fd);
	w->event_fd = -1;
	for (int i = 0; i < w->nlisten; i++)
		close(w->listeners[i].fd);
	w->nlisten = 0;
	ZR_FREE(w->listeners);
}

void worker_wake(struct worker *w)
{
	uint64_t one = 1;
	ssize_t n = write(w->event_fd, &one, sizeof(one));
	(void)n; /* EAGAIN means a wake-up is already pending: good enough */
}

bool worker_stopping(const struct worker *w)
{
	return atomic_load_explicit(&w->srv->shutdown, memory_order_acquire) != 0;
}

void worker_link(struct worker *w, struct conn *c)
{
	ZR_ASSERT_ON_WORKER(w->index);
	c->prev = NULL;
	c->next = w->conns;
	if (w->conns)
		w->conns->prev = c;
	w->conns = c;
}

void worker_unlink(struct worker *w, struct conn *c)
{
	ZR_ASSERT_ON_WORKER(w->index);
	if (c->prev)
		c->prev->next = c->next;
	else
		w->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->next = c->prev = NULL;
}

/* TCP options of every connection, accepted or outbound. */
static void set_tcp_options(struct worker *w, int fd)
{
	struct settings *cfg = w->srv->cfg;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int ka = atomic_load_explicit(&cfg->tcp_keepalive, memory_order_relaxed);
	if (ka > 0) {
		setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
		int idle = ka, intvl = ka / 3 ? ka / 3 : 1, cnt = 3;
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	}
}

struct conn *worker_accept(struct worker *w, int listener, int fd)
{
	const struct proto_ops *ops = w->listeners[listener].ops;
	STAT_INC(w->stats, connections_received);
	if (ops->admit && !ops->admit(w, fd)) {
		close(fd);
		return NULL;
	}
	set_tcp_options(w, fd);
	struct conn *c = conn_create(w, fd, ops, NULL);
	worker_link(w, c);
	return c;
}

struct conn *worker_connect(struct worker *w, const char *host, int port, const struct proto_ops *ops,
			    void *arg, int *err)
{
	ZR_ASSERT_ON_WORKER(w->index); /* another thread posts a worker message */
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST };
	struct addrinfo *res;
	char portbuf[16];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	if (port <= 0 || port > 65535 || getaddrinfo(host, portbuf, &hints, &res) != 0) {
		*err = -EADDRNOTAVAIL;
		return NULL;
	}
	int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		*err = -errno;
		freeaddrinfo(res);
		return NULL;
	}
	set_tcp_options(w, fd);
	struct conn *c = conn_create(w, fd, ops, arg);
	memcpy(&c->peer, res->ai_addr, res->ai_addrlen);
	c->peer_len = res->ai_addrlen;
	freeaddrinfo(res);
	c->outbound = true;
	c->state = CONN_CONNECTING;
	worker_link(w, c);
	w->backend->connect(w, c);
	return c;
}

void worker_connected(struct worker *w, struct conn *c, int res)
{
	if (c->state != CONN_CONNECTING)
		return;
	if (res < 0) {
		c->error = res;
		c->state = CONN_OPEN; /* so that the backend's close runs its course */
		w->backend->close_conn(w, c);
		return;
	}
	c->state = CONN_OPEN;
	if (c->ops->connected)
		c->ops->connected(c);
	if (c->out->bytes || c->close_after_send)
		worker_queue_send(w, c);
}

void worker_close(struct worker *w, struct conn *c)
{
	ZR_ASSERT_ON_WORKER(w->index);
	if (c->state == CONN_CONNECTING)
		c->state = CONN_OPEN; /* the backend's close cancels the connect too */
	if (c->state == CONN_OPEN)
		w->backend->close_conn(w, c);
}

void worker_queue_send(struct worker *w, struct conn *c)
{
	ZR_ASSERT_ON_WORKER(w->index);
	if (c->send_queued)
		return;
	c->send_queued = true;
	c->send_next = w->send_head;
	w->send_head = c;
}

bool worker_input(struct worker *w, struct conn *c, const char *data, size_t len)
{
	if (c->state != CONN_OPEN)
		return true;
	if (!conn_feed(c, data, len))
		return false;
	if (c->out->bytes || c->close_after_send)
		worker_queue_send(w, c);
	return true;
}

void worker_track_paused(struct worker *w, struct conn *c)
{
	(void)c;
	w->npaused++;
}

static void close_conn(struct worker *w, struct conn *c)
{
	if (c->state == CONN_OPEN)
		w->backend->close_conn(w, c);
}

/* Kill requests, pause ends, idle timeouts, published shared fields: the
 * sessions' tick. */
static void scan_conns(struct worker *w, bool timer)
{
	unsigned still_paused = 0;
	for (struct conn *c = w->conns, *next; c; c = next) {
		next = c->next;
		if (c->state != CONN_OPEN)
			continue;
		if (!c->ops->tick(c, timer, &still_paused))
			close_conn(w, c);
	}
	w->npaused = still_paused;
}

void worker_conn_closing(struct worker *w, struct conn *c)
{
	if (!c->durable_waiting)
		return;
	/* the held list is short: only conns whose fsync is pending */
	for (struct conn **pp = &w->durable_head; *pp; pp = &(*pp)->durable_next)
		if (*pp == c) {
			*pp = c->durable_next;
			break;
		}
	c->durable_waiting = false;
	c->durable_next = NULL;
}

static void mail_touched(struct client *c, void *ctx)
{
	struct worker *w = ctx;
	struct conn *conn = c->conn;
	/* commands/blocking.h: an unblocked client runs the requests it
	 * stopped at (CLIENT_BLOCKED is cleared by the mail that answered);
	 * one still blocked or paused takes none of them */
	if (conn->state == CONN_OPEN && conn->qlen && !conn_retry(conn)) {
		close_conn(w, conn);
		return;
	}
	if (conn->out->bytes || conn->close_after_send)
		worker_queue_send(w, conn);
}

void worker_woken(struct worker *w)
{
	ZR_ASSERT_ON_WORKER(w->index);
	uint64_t v;
	ssize_t n = read(w->event_fd, &v, sizeof(v));
	(void)n;
	w->now_ms = zr_time_ms();
	if (w->srv->msgq)
		msgq_drain(w->srv, w->index, mail_touched, w);
	/* the journal may have reached disk: retry held replies */
	struct conn *held = w->durable_head;
	w->durable_head = NULL;
	while (held) {
		struct conn *c = held;
		held = c->durable_next;
		c->durable_waiting = false;
		c->durable_next = NULL;
		if (c->state == CONN_OPEN)
			worker_queue_send(w, c);
	}
	scan_conns(w, false);
}

/* replica-ack: a conn whose replies waited replica-ack-timeout for their
 * replicas gets -NOREPLICAS and is closed; nothing it had pending is
 * claimed (its held replies are dropped unsent: the writes may or may not
 * have reached a replica, and a later reply must not seem to confirm
 * them). A conn with a send in flight waits for the next tick. */
static void fail_unreplicated(struct worker *w)
{
	struct server *srv = w->srv;
	uint64_t acked = atomic_load_explicit(&srv->repl_acked, memory_order_acquire);
	int64_t timeout = atomic_load_explicit(&srv->cfg->replica_ack_timeout, memory_order_relaxed);
	for (struct conn **pp = &w->durable_head; *pp;) {
		struct conn *c = *pp;
		uint64_t *rseq = c->repl_seq;
		if (c->state != CONN_OPEN || c->send_inflight || !rseq || *rseq <= acked ||
		    !c->held_since_ms || w->now_ms - c->held_since_ms < timeout) {
			pp = &c->durable_next;
			continue;
		}
		*pp = c->durable_next;
		c->durable_waiting = false;
		c->durable_next = NULL;
		c->held_since_ms = 0;
		*rseq = 0;
		if (c->durable_seq)
			*c->durable_seq = 0;
		char err[160];
		snprintf(err, sizeof(err),
			 "NOREPLICAS write not confirmed by %d replica(s) within %lld ms; it may or may not "
			 "be applied, closing the connection",
			 atomic_load_explicit(&srv->cfg->replica_ack, memory_order_relaxed),
			 (long long)timeout);
		conn_final_error(c, err);
		zr_log(ZR_LOG_WARNING,
		       "client id=%" PRIu64 " addr=%s: replica-ack timed out, connection closed", c->log_id,
		       c->log_addr ? c->log_addr : "?");
		worker_queue_send(w, c);
	}
}

/* write-lease: C's held write replies are due (their replicas acked) but
 * the lease lapsed while they waited (the process stopped, a slow ack):
 * they are dropped unsent and C gets the fenced error and is closed.
 * Sending them now would acknowledge writes after this node may have lost
 * the shard's leader key: another node may be primary for the same slots
 * and acknowledging writes of its own, and two primaries must never
 * acknowledge writes for the same slots at once (one side's would be lost
 * when the old primary re-points at the new one). Whether the writes
 * survive is not known to the client: said in the error. C has no send in
 * flight (its bytes are dropped). */
static void drop_unleased(struct worker *w, struct conn *c)
{
	struct server *srv = w->srv;
	atomic_fetch_add_explicit(&srv->write_lease_acks_dropped, 1, memory_order_relaxed);
	conn_final_error(c, SERVER_ERR_FENCED ", the write may or may not be applied");
	zr_log(ZR_LOG_WARNING,
	       "client id=%" PRIu64 " addr=%s: write lease lapsed while replies waited for replicas, "
	       "connection closed",
	       c->log_id, c->log_addr ? c->log_addr : "?");
}

static void worker_cron(struct worker *w)
{
	struct server *srv = w->srv;
	int hz = atomic_load_explicit(&srv->cfg->hz, memory_order_relaxed);
	int64_t period_us = 1000000 / (hz > 0 ? hz : 10);
	int64_t t0 = zr_mono_us();
	if (w->index == 0) {
		store_tick(srv->store, w->now_ms);
		if (srv->cron_sample)
			srv->cron_sample(srv);
	}
	int effort = atomic_load_explicit(&srv->cfg->active_expire_effort, memory_order_relaxed);
	/* Redis spends up to 25% of each period on active expiry (effort 1) */
	store_active_expire(srv->store, w->index, srv->nworkers, w->now_ms,
			    period_us / 4 + period_us * (effort - 1) / 40);
	STAT_ADD(w->stats, expire_cycle_us, zr_mono_us() - t0);
	scan_conns(w, true);
	fail_unreplicated(w);
	script_thread_tick();
	w->next_cron_us = t0 + period_us;
}

/* Blocked clients' timeouts have a timer of their own rather than the
 * cron's tick, which made every short timeout a tenth of a second (BLPOP
 * k 0.001 answered after up to 100 ms; redis-server 7.0 does the same: its
 * beforeSleep walks the timeout radix tree, but it sleeps until its next
 * hz tick). Times out the clients whose deadline has passed; returns the
 * microseconds until the next deadline of this worker's blocked clients
 * (INT64_MAX when none): the backend's wait for events ends then at the
 * latest (io_uring's wait timeout, epoll_wait's timeout rounded up to a
 * millisecond). */
static int64_t blocked_timer(struct worker *w)
{
	int64_t deadline_ms = blocking_next_deadline(w->srv, w->index);
	if (!deadline_ms)
		return INT64_MAX;
	int64_t now_us = zr_time_us();
	if (deadline_ms <= now_us / 1000) {
		/* the timed-out clients' replies come back through the message queue
		 * (an event fd write): the next turn sends them */
		blocking_cron(w->srv, w->index, now_us / 1000);
		deadline_ms = blocking_next_deadline(w->srv, w->index);
		if (!deadline_ms)
			return INT64_MAX;
	}
	if (deadline_ms > INT64_MAX / 1000)
		return INT64_MAX; /* a timeout too far off to matter: the cron's tick comes first */
	int64_t left_us = deadline_ms * 1000 - now_us;
	return left_us > 0 ? left_us : 0;
}

bool worker_send_queued(struct worker *w)
{
	/* a busy shutdown's final save has its image (persist.h): a reply now
	 * could acknowledge a write that is not in it; the process is ending */
	if (w->send_head && persist_replies_frozen(w->srv->persist))
		return false;
	/* while a script runs, its own conn is mid-request: it stays queued */
	struct conn *busy = w->serving_others ? w->busy : NULL;
	bool busy_queued = false;
	while (w->send_head) {
		struct conn *c = w->send_head;
		w->send_head = c->send_next;
		c->send_queued = false;
		c->send_next = NULL;
		if (c == busy) {
			busy_queued = true;
			continue;
		}
		if (c->state != CONN_OPEN) {
			w->backend->released(w, c);
			continue;
		}
		if (c->bp_release) {
			/* a backpressure hold ended: its requests run, then the
			 * socket is read again (unless they began a new hold) */
			if (!conn_release(c)) {
				close_conn(w, c);
				continue;
			}
			w->backend->reading(w, c);
		}
		if (!c->ops->output_ok(c, w->now_ms)) {
			close_conn(w, c);
			continue;
		}
		uint64_t *seq = c->durable_seq, *rseq = c->repl_seq;
		if ((seq && *seq &&
		     *seq > atomic_load_explicit(&w->srv->journal_durable, memory_order_acquire)) ||
		    (rseq && *rseq &&
		     *rseq > atomic_load_explicit(&w->srv->repl_acked, memory_order_acquire))) {
			/* appendfsync always: acknowledged only once on disk;
			 * replica-ack: only once that many replicas applied it */
			if (!c->held_since_ms)
				c->held_since_ms = w->now_ms ? w->now_ms : 1;
			if (!c->durable_waiting) {
				c->durable_waiting = true;
				c->durable_next = w->durable_head;
				w->durable_head = c;
			}
			continue;
		}
		if (rseq && *rseq && w->srv->write_lease && server_fenced(w->srv)) {
			if (c->send_inflight)
				continue; /* its completion queues it again */
			drop_unleased(w, c);
		}
		c->held_since_ms = 0;
		if (seq)
			*seq = 0;
		if (rseq)
			*rseq = 0;
		if (c->out->bytes)
			w->backend->send(w, c);
		else if (c->close_after_send)
			close_conn(w, c);
	}
	if (busy_queued)
		worker_queue_send(w, busy);
	return true;
}

int64_t worker_turn_end(struct worker *w)
{
	ZR_ASSERT_ON_WORKER(w->index);
	STAT_INC(w->stats, loop_iterations);
	if (!worker_send_queued(w))
		return 0;
	int64_t now = zr_mono_us();
	if (now >= w->next_cron_us) {
		w->now_ms = zr_time_ms();
		worker_cron(w);
		now = zr_mono_us();
	}
	int64_t blocked_us = blocked_timer(w); /* times out the blocked clients due */
	if (w->send_head)
		return 0; /* the timer queued sends (a hold given up, a pause over) */
	int64_t wait_us = w->next_cron_us > now ? w->next_cron_us - now : 0;
	return blocked_us < wait_us ? blocked_us : wait_us;
}

void worker_serve_others(struct worker *w, struct conn *busy)
{
	ZR_ASSERT_ON_WORKER(w->index);
	if (w->serving_others || !w->backend->serve_others)
		return;
	/* the request the shutdown's log names stays the script's */
	uint64_t running[2] = { atomic_load_explicit(&w->stats->running[0], memory_order_relaxed),
				atomic_load_explicit(&w->stats->running[1], memory_order_relaxed) };
	w->busy = busy;
	w->serving_others = true;
	w->now_ms = zr_time_ms();
	w->backend->serve_others(w);
	w->serving_others = false;
	atomic_store_explicit(&w->stats->running[1], running[1], memory_order_relaxed);
	atomic_store_explicit(&w->stats->running[0], running[0], memory_order_relaxed);
}

void worker_busy_over(struct worker *w)
{
	w->busy = NULL;
	/* a WATCH that waited for the script's shard locks runs now */
	if (w->npaused)
		scan_conns(w, false);
}

bool worker_peer_eof(struct worker *w, struct conn *c)
{
	if (!c->out->bytes || c->obuf_overflow)
		return false;
	c->peer_eof = true;
	c->close_after_send = true;
	worker_queue_send(w, c);
	return true;
}
