/* epoll — the epoll backend of a worker, for kernels or sandboxes without
 * io_uring (or --io-backend epoll). Level-triggered: listeners and the
 * event fd for reading, connections for reading and, while a reply is
 * stuck on a full socket buffer, for writing. Received bytes go through
 * the same worker_input() as io_uring's; replies of a loop turn are
 * written at its end with writev. While a conn's requests are held for
 * backpressure (conn_reading() false, conn.h) EPOLLIN is dropped, so its
 * bytes stay in the socket; EPOLLHUP/EPOLLERR still come, and a held conn
 * always has output to write, whose failure closes it. An outbound conn
 * is watched for writing until its non-blocking connect completes.
 *
 * A script that runs past busy-reply-threshold serves the worker's other
 * conns from its hook (epoll_serve_others): a non-blocking epoll_wait whose
 * events are handled as the loop's, but for the script's own conn, the
 * event fd and connecting conns, which stay ready (level-triggered) for
 * the loop's next wait. Bytes read then go to a buffer of their own: the
 * loop's may hold the request the script runs for.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "zarisd/server/stats.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/net/conn.h"
#include "zarisd/net/worker.h"

#define EPOLL_EVENTS 256
#define EPOLL_READSZ 16384
#define EPOLL_IOV 64

/* Cookies in epoll_event.data.u64: conns are aligned pointers; listeners
 * and the event fd are small tagged integers. */
#define EP_LISTENER 1
#define EP_EVENTFD 2
#define EP_TAG_MASK 7ULL

struct epoll_state {
	int epfd;
	struct conn *closed; /* closed this turn, freed by reap() (linked by close_next) */
	char buf[EPOLL_READSZ];
	char busy_buf[EPOLL_READSZ]; /* epoll_serve_others' reads */
};

static int ep_add(int epfd, int fd, uint32_t events, uint64_t cookie)
{
	struct epoll_event ev = { .events = events, .data.u64 = cookie };
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

static int epoll_init(struct worker *w)
{
	struct epoll_state *e = zr_calloc(1, sizeof(*e));
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epfd < 0) {
		int rc = -errno;
		zr_free(e);
		return rc;
	}
	for (int i = 0; i < w->nlisten; i++)
		ep_add(e->epfd, w->listeners[i].fd, EPOLLIN, ((uint64_t)i << 3) | EP_LISTENER);
	ep_add(e->epfd, w->event_fd, EPOLLIN, EP_EVENTFD);
	w->bstate = e;
	return 0;
}

static void epoll_close_conn(struct worker *w, struct conn *c)
{
	struct epoll_state *e = w->bstate;
	if (c->state != CONN_OPEN)
		return;
	c->state = CONN_CLOSING;
	worker_conn_closing(w, c);
	epoll_ctl(e->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	/* the peer sees the close now, not when reap() frees the conn (which
	 * waits for the end of a busy script); a socket handed off lives on in
	 * its new owner's descriptor */
	if (!c->handed_off)
		shutdown(c->fd, SHUT_RDWR);
	/* Nothing is in flight with epoll, but the conn may still be on this
	 * turn's pending-send list (which skips closing conns) or be the conn
	 * whose event is being handled: it is freed by reap(). */
	c->close_next = e->closed;
	e->closed = c;
}

/* Watches C for writing when ON, and for reading while conn_reading(). */
static void set_epollout(struct epoll_state *e, struct conn *c, bool on)
{
	bool noin = !conn_reading(c);
	if (c->epollout == on && c->epoll_noin == noin)
		return;
	struct epoll_event ev = { .events = (noin ? 0 : EPOLLIN) | (on ? EPOLLOUT : 0),
				  .data.u64 = (uint64_t)(uintptr_t)c };
	epoll_ctl(e->epfd, EPOLL_CTL_MOD, c->fd, &ev);
	c->epollout = on;
	c->epoll_noin = noin;
}

static void epoll_reading(struct worker *w, struct conn *c)
{
	if (c->state == CONN_OPEN)
		set_epollout(w->bstate, c, c->epollout);
}

static void epoll_send(struct worker *w, struct conn *c)
{
	struct epoll_state *e = w->bstate;
	struct iovec iov[EPOLL_IOV];
	bool blocked = false;
	while (c->out->bytes) {
		int n = obuf_iov(c->out, iov, EPOLL_IOV);
		ssize_t r = writev(c->fd, iov, n);
		STAT_INC(w->stats, total_writes);
		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				blocked = true;
				break;
			}
			if (errno == EINTR)
				continue;
			c->error = -errno;
			epoll_close_conn(w, c);
			return;
		}
		conn_sent(c, (size_t)r);
	}
	set_epollout(e, c, blocked);
	if (c->bp_release)
		worker_queue_send(w, c); /* the turn's end runs the held requests */
	if (!blocked && c->close_after_send)
		epoll_close_conn(w, c);
}

static void on_listener(struct worker *w, struct epoll_state *e, int idx)
{
	for (int i = 0; i < 64; i++) { /* bounded: let other events run too */
		int fd = accept4(w->listeners[idx].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
				zr_log(ZR_LOG_WARNING, "accept: %s", strerror(errno));
			return;
		}
		struct conn *c = worker_accept(w, idx, fd);
		if (c && ep_add(e->epfd, fd, EPOLLIN, (uint64_t)(uintptr_t)c) < 0)
			epoll_close_conn(w, c);
	}
}

/* Reads C; once only when it is held (an EPOLLHUP or EPOLLERR, or an
 * EPOLLIN reported before the hold began): the bytes join its query
 * buffer, an EOF closes it. */
static void on_readable(struct worker *w, struct epoll_state *e, struct conn *c, char *buf)
{
	for (int i = 0; i < 16 && c->state == CONN_OPEN && (i == 0 || conn_reading(c)); i++) {
		ssize_t r = recv(c->fd, buf, EPOLL_READSZ, 0);
		if (r > 0) {
			STAT_INC(w->stats, total_reads);
			if (!worker_input(w, c, buf, (size_t)r))
				epoll_close_conn(w, c);
			if ((size_t)r < EPOLL_READSZ)
				break;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			break;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			c->error = -errno; /* the session learns it; EOF is an orderly close */
		if (r == 0 && worker_peer_eof(w, c))
			break; /* answered first; epoll_reading drops EPOLLIN */
		epoll_close_conn(w, c);
		return;
	}
	epoll_reading(w, c);
}

/* Outbound: a non-blocking connect, watched for writing until it
 * completes (on_connect). */
static void epoll_connect(struct worker *w, struct conn *c)
{
	struct epoll_state *e = w->bstate;
	if (connect(c->fd, (struct sockaddr *)&c->peer, c->peer_len) < 0 && errno != EINPROGRESS) {
		worker_connected(w, c, -errno); /* closed; freed by reap() after this turn */
		return;
	}
	c->epollout = true;
	c->epoll_noin = true;
	if (ep_add(e->epfd, c->fd, EPOLLOUT, (uint64_t)(uintptr_t)c) < 0)
		worker_connected(w, c, -errno);
}

static void on_connect(struct worker *w, struct epoll_state *e, struct conn *c)
{
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		err = errno;
	worker_connected(w, c, -err);
	if (c->state == CONN_OPEN)
		set_epollout(e, c, c->send_queued); /* read; write once output is queued */
}

/* Frees the conns closed so far; called after worker_turn_end(), when no
 * closed conn is left on the pending-send list. */
static void reap(struct worker *w, struct epoll_state *e)
{
	while (e->closed) {
		struct conn *c = e->closed;
		e->closed = c->close_next;
		worker_unlink(w, c);
		conn_destroy(c);
	}
}

/* One event of the loop's wait (BUF: where reads go). */
static void on_event(struct worker *w, struct epoll_state *e, const struct epoll_event *ev, char *buf)
{
	uint64_t ck = ev->data.u64;
	if ((ck & EP_TAG_MASK) == EP_LISTENER) {
		on_listener(w, e, (int)(ck >> 3));
	} else if (ck == EP_EVENTFD) {
		worker_woken(w);
	} else {
		struct conn *c = (struct conn *)(uintptr_t)ck;
		if (c->state == CONN_CONNECTING)
			on_connect(w, e, c);
		if (c->state != CONN_OPEN)
			return;
		if (ev->events & (EPOLLIN | EPOLLHUP | EPOLLERR))
			on_readable(w, e, c, buf);
		if (c->state == CONN_OPEN && (ev->events & EPOLLOUT))
			worker_queue_send(w, c);
	}
}

static void epoll_serve_others(struct worker *w)
{
	struct epoll_state *e = w->bstate;
	struct epoll_event events[EPOLL_EVENTS];
	int n = epoll_wait(e->epfd, events, EPOLL_EVENTS, 0);
	for (int i = 0; i < n; i++) {
		uint64_t ck = events[i].data.u64;
		if (ck == EP_EVENTFD)
			continue; /* worker.h: wake-ups wait for the script's end */
		if ((ck & EP_TAG_MASK) != EP_LISTENER) {
			struct conn *c = (struct conn *)(uintptr_t)ck;
			if (c == w->busy || c->state == CONN_CONNECTING)
				continue;
		}
		on_event(w, e, &events[i], e->busy_buf);
	}
	worker_send_queued(w);
}

static void epoll_run(struct worker *w)
{
	struct epoll_state *e = w->bstate;
	struct epoll_event events[EPOLL_EVENTS];
	while (!worker_stopping(w)) {
		int64_t wait_us = worker_turn_end(w);
		if (w->busy) {
			worker_busy_over(w);
			wait_us = 0; /* the paused requests it ran may have queued replies */
		}
		reap(w, e);
		int n = epoll_wait(e->epfd, events, EPOLL_EVENTS, (int)((wait_us + 999) / 1000));
		w->now_ms = zr_time_ms();
		for (int i = 0; i < n; i++) {
			on_event(w, e, &events[i], e->buf);
			if (w->busy)
				worker_busy_over(w);
		}
	}
	reap(w, e);
}

static void epoll_destroy(struct worker *w)
{
	struct epoll_state *e = w->bstate;
	if (!e)
		return;
	close(e->epfd);
	zr_free(e);
	w->bstate = NULL;
}

/* Closed conns are freed by reap() after each turn; nothing to do here. */
static void epoll_released(struct worker *w, struct conn *c)
{
	(void)w;
	(void)c;
}

const struct net_backend net_backend_epoll = {
	.name = "epoll",
	.init = epoll_init,
	.run = epoll_run,
	.close_conn = epoll_close_conn,
	.send = epoll_send,
	.reading = epoll_reading,
	.connect = epoll_connect,
	.released = epoll_released,
	.serve_others = epoll_serve_others,
	.destroy = epoll_destroy,
};
