/* uring — the io_uring backend of a worker (liburing).
 *
 * One ring per worker, created on the worker's own thread (SINGLE_ISSUER,
 * DEFER_TASKRUN where the kernel has them). Every SQE carries a typed
 * cookie in user_data: a pointer (conn) or index (listener) shifted past a
 * 3-bit tag, so a completion says what it completes.
 *
 * Accept: one multishot accept per listener; re-armed when a completion
 * comes without IORING_CQE_F_MORE.
 *
 * Receive, and the provided-buffer lifecycle: each worker registers one
 * buffer ring (group URING_BGID) of URING_NBUFS buffers of URING_BUFSZ
 * bytes. Every connection has one multishot recv that picks a buffer from
 * the ring for each completion. The buffer id is in cqe->flags >>
 * IORING_CQE_BUFFER_SHIFT; its bytes are parsed in place (conn_feed) and
 * the buffer is handed back to the ring right after, so a buffer is never
 * held across loop turns. When the ring is empty the kernel ends the
 * multishot recv with -ENOBUFS (no F_MORE): the recv is re-armed, by then
 * the buffers have been returned. Any completion without F_MORE means the
 * recv is no longer armed; it is re-armed unless the conn is closing.
 *
 * Backpressure (conn.h): while a conn's requests are held (conn_reading()
 * false) it keeps no recv armed: the multishot recv is cancelled by its
 * cookie (recv_stopping), the completions already on their way are fed as
 * usual (conn_feed keeps their bytes in the query buffer, so buffers are
 * still handed back at once), and its -ECANCELED ends the recv without
 * closing the conn. The bytes the client sends meanwhile stay in the
 * socket and TCP's window closes. When the hold ends the worker calls
 * uring_reading(), which arms a new recv (after the cancelled one's last
 * completion if it is still to come).
 *
 * Send: at most one send per connection in flight, of the output buffer's
 * first chunk; replies produced during a loop turn are sent once at its
 * end (worker_turn_end). A short send re-queues the rest.
 *
 * Connect (an outbound conn, worker_connect): one connect SQE; its
 * completion tells the worker (worker_connected), which arms the recv on
 * success and closes the conn with the error otherwise.
 *
 * Close: the recv (or a pending connect) is cancelled by its cookie; the
 * conn is freed once neither a recv, a send nor a connect holds it. A
 * failed recv or send is the error the session's close learns.
 *
 * Completions are copied out of the CQ ring into the state's batch, and the
 * ring advanced, before any is handled: a script that runs past
 * busy-reply-threshold serves the worker's other conns from its hook
 * (uring_serve_others), which goes on with the batch and then takes new
 * completions while the handler of the script's request is still on the
 * stack. Completions that must wait for the script to end (worker.h:
 * its conn's, wake-ups, connects, and any after one held for the same
 * conn) go to the held list, which is handled in order once the script's
 * handler returned (busy_over); so are conns freed meanwhile.
 */
#include <errno.h>
#include <liburing.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/server/stats.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/net/conn.h"
#include "zarisd/net/worker.h"

#define URING_ENTRIES 1024
#define URING_CQ_ENTRIES (2 * URING_ENTRIES) /* the kernel's default CQ size */
/* 2 MiB of receive buffers per worker: a buffer is handed back right after
 * its bytes are parsed, so only completions not yet handled hold one. The
 * pool is mmap'd rather than taken from the heap: it is the loop's fixed
 * cost, not data, and is left out of used_memory (what maxmemory limits). */
#define URING_NBUFS 512
#define URING_BUFSZ 4096
#define URING_BGID 1

enum uring_tag {
	TAG_ACCEPT = 1,
	TAG_RECV = 2,
	TAG_SEND = 3,
	TAG_EVENT = 4,
	TAG_CANCEL = 5,
	TAG_CONNECT = 6,
};
#define TAG_BITS 3
#define TAG_MASK ((1ULL << TAG_BITS) - 1)

struct uring_state {
	struct io_uring ring;
	struct io_uring_buf_ring *br;
	char *bufs;
	uint64_t event_value;
	struct conn
		*handling; /* conn whose completion is being handled: freed by the handler, not by close */
	/* the completions taken from the CQ ring, handled from POS on */
	struct io_uring_cqe *batch;
	unsigned nbatch, pos;
	/* completions held while a busy script runs (the file header),
	 * handled from HELD_POS on once it ended */
	struct io_uring_cqe *held;
	unsigned nheld, held_pos, held_cap;
	struct conn *free_later; /* conns closed while a busy script ran (linked by close_next) */
};

static inline uint64_t cookie_ptr(void *p, enum uring_tag tag)
{
	return (uint64_t)(uintptr_t)p | tag; /* conns are 16-byte aligned */
}

static struct io_uring_sqe *get_sqe(struct uring_state *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	if (!sqe) {
		io_uring_submit(&u->ring);
		sqe = io_uring_get_sqe(&u->ring);
	}
	return sqe; /* never NULL after a submit: the SQ was just emptied */
}

static void arm_accept(struct uring_state *u, struct worker *w, int idx)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	io_uring_prep_multishot_accept(sqe, w->listeners[idx].fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	io_uring_sqe_set_data64(sqe, ((uint64_t)idx << TAG_BITS) | TAG_ACCEPT);
}

static void arm_recv(struct uring_state *u, struct conn *c)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	io_uring_prep_recv_multishot(sqe, c->fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = URING_BGID;
	c->recv_user_data = cookie_ptr(c, TAG_RECV);
	io_uring_sqe_set_data64(sqe, c->recv_user_data);
	c->recv_armed = true;
}

static void arm_event(struct uring_state *u, struct worker *w)
{
	struct io_uring_sqe *sqe = get_sqe(u);
	io_uring_prep_read(sqe, w->event_fd, &u->event_value, sizeof(u->event_value), 0);
	io_uring_sqe_set_data64(sqe, TAG_EVENT);
}

static int uring_setup(struct io_uring *ring)
{
	static const unsigned flag_sets[] = {
		IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
		IORING_SETUP_COOP_TASKRUN,
		0,
	};
	int rc = -EINVAL;
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct io_uring_params p = { .flags = flag_sets[i] };
		rc = io_uring_queue_init_params(URING_ENTRIES, ring, &p);
		if (rc == 0)
			return 0;
	}
	return rc;
}

static int uring_init_in_thread(struct worker *w)
{
	struct uring_state *u = zr_calloc(1, sizeof(*u));
	int rc = uring_setup(&u->ring);
	if (rc < 0)
		goto out_free;
	size_t brsize = sizeof(struct io_uring_buf) * URING_NBUFS;
	u->br = mmap(NULL, brsize, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (u->br == MAP_FAILED) {
		rc = -errno;
		goto out_exit;
	}
	struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)u->br,
					.ring_entries = URING_NBUFS,
					.bgid = URING_BGID };
	rc = io_uring_register_buf_ring(&u->ring, &reg, 0);
	if (rc < 0)
		goto out_unmap;
	u->bufs = mmap(NULL, (size_t)URING_NBUFS * URING_BUFSZ, PROT_READ | PROT_WRITE,
		       MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
	if (u->bufs == MAP_FAILED) {
		rc = -errno;
		goto out_unregister;
	}
	io_uring_buf_ring_init(u->br);
	for (int i = 0; i < URING_NBUFS; i++)
		io_uring_buf_ring_add(u->br, u->bufs + (size_t)i * URING_BUFSZ, URING_BUFSZ,
				      (unsigned short)i, io_uring_buf_ring_mask(URING_NBUFS), i);
	io_uring_buf_ring_advance(u->br, URING_NBUFS);
	u->batch = zr_malloc(sizeof(*u->batch) * URING_CQ_ENTRIES);
	w->bstate = u;
	for (int i = 0; i < w->nlisten; i++)
		arm_accept(u, w, i);
	arm_event(u, w);
	return 0;
out_unregister:
	io_uring_unregister_buf_ring(&u->ring, URING_BGID);
out_unmap:
	munmap(u->br, brsize);
out_exit:
	io_uring_queue_exit(&u->ring);
out_free:
	zr_free(u);
	return rc;
}

/* The ring is made on the worker's own thread (SINGLE_ISSUER binds it to
 * its creator), so init only checks here that io_uring can be set up. */
static int uring_init(struct worker *w)
{
	(void)w;
	return 0;
}

/* Frees C once closing and nothing holds it: no recv armed, no send in
 * flight, not on the worker's pending-send list. */
static void maybe_free(struct worker *w, struct conn *c)
{
	if (c->state != CONN_CLOSING || c->recv_armed || c->send_inflight || c->send_queued ||
	    c->connect_inflight)
		return;
	if (w->busy) {
		/* a script runs (or its request's handler has not returned):
		 * the session's cleanup may need the shard locks it holds */
		if (!c->free_pending) {
			struct uring_state *u = w->bstate;
			c->free_pending = true;
			c->close_next = u->free_later;
			u->free_later = c;
		}
		return;
	}
	worker_unlink(w, c);
	conn_destroy(c);
}

static void uring_close_conn(struct worker *w, struct conn *c)
{
	struct uring_state *u = w->bstate;
	if (c->state != CONN_OPEN)
		return;
	c->state = CONN_CLOSING;
	worker_conn_closing(w, c);
	if (c->recv_armed) {
		struct io_uring_sqe *sqe = get_sqe(u);
		io_uring_prep_cancel64(sqe, c->recv_user_data, 0);
		io_uring_sqe_set_data64(sqe, TAG_CANCEL);
	}
	if (c->connect_inflight) {
		struct io_uring_sqe *sqe = get_sqe(u);
		io_uring_prep_cancel64(sqe, cookie_ptr(c, TAG_CONNECT), 0);
		io_uring_sqe_set_data64(sqe, TAG_CANCEL);
	}
	/* a send stuck on a full socket buffer completes with an error (a
	 * socket handed off lives on in its new owner's descriptor) */
	if (!c->handed_off)
		shutdown(c->fd, SHUT_RDWR);
	if (u->handling != c)
		maybe_free(w, c);
}

/* Arms C's recv if it should read and has none, cancels it if it should
 * not (see the file header). */
static void uring_reading(struct worker *w, struct conn *c)
{
	struct uring_state *u = w->bstate;
	if (c->state != CONN_OPEN)
		return;
	if (conn_reading(c)) {
		if (!c->recv_armed)
			arm_recv(u, c);
	} else if (c->recv_armed && !c->recv_stopping) {
		struct io_uring_sqe *sqe = get_sqe(u);
		io_uring_prep_cancel64(sqe, c->recv_user_data, 0);
		io_uring_sqe_set_data64(sqe, TAG_CANCEL);
		c->recv_stopping = true;
	}
}

static void uring_send(struct worker *w, struct conn *c)
{
	struct uring_state *u = w->bstate;
	if (c->send_inflight || c->state != CONN_OPEN)
		return;
	struct iovec iov;
	if (obuf_iov(c->out, &iov, 1) == 0)
		return;
	struct io_uring_sqe *sqe = get_sqe(u);
	io_uring_prep_send(sqe, c->fd, iov.iov_base, iov.iov_len, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, cookie_ptr(c, TAG_SEND));
	c->send_inflight = true;
	STAT_INC(w->stats, total_writes);
}

static void on_recv(struct worker *w, struct uring_state *u, struct conn *c, struct io_uring_cqe *cqe)
{
	int res = cqe->res;
	bool more = cqe->flags & IORING_CQE_F_MORE;
	bool stopping = c->recv_stopping;
	if (!more)
		c->recv_armed = c->recv_stopping = false;
	if (res > 0) {
		unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		char *data = u->bufs + (size_t)bid * URING_BUFSZ;
		STAT_INC(w->stats, total_reads);
		bool ok = worker_input(w, c, data, (size_t)res);
		io_uring_buf_ring_add(u->br, data, URING_BUFSZ, (unsigned short)bid,
				      io_uring_buf_ring_mask(URING_NBUFS), 0);
		io_uring_buf_ring_advance(u->br, 1);
		if (!ok)
			uring_close_conn(w, c);
	} else if (res != -ENOBUFS && !(res == -ECANCELED && stopping)) {
		/* 0 = peer closed; -ECANCELED after our own cancel (of a
		 * closing conn; a backpressure cancel only stops reading);
		 * others are errors, which the session learns */
		if (res < 0 && res != -ECANCELED && c->state == CONN_OPEN)
			c->error = res;
		if (!(res == 0 && c->state == CONN_OPEN && worker_peer_eof(w, c)))
			uring_close_conn(w, c);
	}
	uring_reading(w, c);
	maybe_free(w, c);
}

static void on_send(struct worker *w, struct uring_state *u, struct conn *c, int res)
{
	(void)u;
	c->send_inflight = false;
	if (res < 0) {
		if (c->state == CONN_OPEN)
			c->error = res;
		uring_close_conn(w, c);
	} else if (c->state == CONN_OPEN) {
		conn_sent(c, (size_t)res);
		if (c->out->bytes || c->close_after_send || c->bp_release)
			worker_queue_send(w, c);
	}
	maybe_free(w, c);
}

static void on_accept(struct worker *w, struct uring_state *u, int idx, struct io_uring_cqe *cqe)
{
	if (cqe->res >= 0) {
		struct conn *c = worker_accept(w, idx, cqe->res);
		if (c)
			arm_recv(u, c);
	} else if (cqe->res != -EAGAIN && cqe->res != -ECANCELED) {
		zr_log(ZR_LOG_WARNING, "accept: %s", strerror(-cqe->res));
	}
	if (!(cqe->flags & IORING_CQE_F_MORE) && !worker_stopping(w))
		arm_accept(u, w, idx);
}

static void uring_connect(struct worker *w, struct conn *c)
{
	struct uring_state *u = w->bstate;
	struct io_uring_sqe *sqe = get_sqe(u);
	io_uring_prep_connect(sqe, c->fd, (struct sockaddr *)&c->peer, c->peer_len);
	io_uring_sqe_set_data64(sqe, cookie_ptr(c, TAG_CONNECT));
	c->connect_inflight = true;
}

static void on_connect(struct worker *w, struct uring_state *u, struct conn *c, int res)
{
	c->connect_inflight = false;
	if (c->state == CONN_CONNECTING) {
		worker_connected(w, c, res);
		if (c->state == CONN_OPEN)
			arm_recv(u, c);
	}
	maybe_free(w, c);
}

static void handle_cqe(struct worker *w, struct uring_state *u, struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	enum uring_tag tag = (enum uring_tag)(ud & TAG_MASK);
	u->handling = (tag == TAG_RECV || tag == TAG_SEND || tag == TAG_CONNECT)
			      ? (struct conn *)(uintptr_t)(ud & ~TAG_MASK)
			      : NULL;
	switch (tag) {
	case TAG_ACCEPT:
		on_accept(w, u, (int)(ud >> TAG_BITS), cqe);
		break;
	case TAG_RECV:
		on_recv(w, u, (struct conn *)(uintptr_t)(ud & ~TAG_MASK), cqe);
		break;
	case TAG_SEND:
		on_send(w, u, (struct conn *)(uintptr_t)(ud & ~TAG_MASK), cqe->res);
		break;
	case TAG_EVENT:
		worker_woken(w);
		if (!worker_stopping(w))
			arm_event(u, w);
		break;
	case TAG_CONNECT:
		on_connect(w, u, (struct conn *)(uintptr_t)(ud & ~TAG_MASK), cqe->res);
		break;
	case TAG_CANCEL:
		break;
	}
	u->handling = NULL;
}

/* Received bytes of CQE, if any, join the loop turn's prefetch group
 * (conn.h): every conn a completion names is still allocated until that
 * completion is handled. */
static void group_add(struct uring_state *u, struct conn_group *g, const struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	if ((ud & TAG_MASK) != TAG_RECV || cqe->res <= 0)
		return;
	unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
	conn_group_add(g, (struct conn *)(uintptr_t)(ud & ~TAG_MASK), u->bufs + (size_t)bid * URING_BUFSZ,
		       (size_t)cqe->res);
}

/* Takes every completion the CQ ring has into the batch. */
static void fetch_cqes(struct uring_state *u)
{
	unsigned head, n = 0;
	struct io_uring_cqe *cqe;
	io_uring_for_each_cqe(&u->ring, head, cqe) {
		if (n == URING_CQ_ENTRIES)
			break;
		u->batch[n++] = *cqe;
	}
	io_uring_cq_advance(&u->ring, n);
	u->nbatch = n;
	u->pos = 0;
}

/* The conn a completion names, or NULL (a listener, the event fd, a cancel). */
static struct conn *cqe_conn(const struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	enum uring_tag tag = (enum uring_tag)(ud & TAG_MASK);
	if (tag == TAG_RECV || tag == TAG_SEND || tag == TAG_CONNECT)
		return (struct conn *)(uintptr_t)(ud & ~TAG_MASK);
	return NULL;
}

/* While W's busy script runs: whether CQE must wait until it ended. */
static bool must_wait(const struct worker *w, const struct io_uring_cqe *cqe)
{
	enum uring_tag tag = (enum uring_tag)(io_uring_cqe_get_data64(cqe) & TAG_MASK);
	if (tag == TAG_EVENT || tag == TAG_CONNECT)
		return true; /* kill and pause requests, mail; outbound conns' sessions */
	struct conn *c = cqe_conn(cqe);
	return c && (c == w->busy || c->held_cqes > 0);
}

static void hold(struct uring_state *u, const struct io_uring_cqe *cqe)
{
	if (u->nheld == u->held_cap) {
		u->held_cap = u->held_cap ? u->held_cap * 2 : 64;
		u->held = zr_realloc(u->held, sizeof(*u->held) * u->held_cap);
	}
	u->held[u->nheld++] = *cqe;
	struct conn *c = cqe_conn(cqe);
	if (c)
		c->held_cqes++;
}

static void uring_serve_others(struct worker *w)
{
	struct uring_state *u = w->bstate;
	struct conn *handling = u->handling;
	if (u->pos == u->nbatch) {
		int rc = io_uring_submit_and_get_events(&u->ring);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
			zr_log(ZR_LOG_WARNING, "worker %u: io_uring_submit_and_get_events: %s", w->index,
			       strerror(-rc));
		fetch_cqes(u);
	}
	while (u->pos < u->nbatch) {
		struct io_uring_cqe cqe = u->batch[u->pos++];
		if (must_wait(w, &cqe))
			hold(u, &cqe);
		else
			handle_cqe(w, u, &cqe);
	}
	worker_send_queued(w);
	io_uring_submit(&u->ring);
	u->handling = handling;
}

/* The busy script's request returned: the held completions in their
 * order (one may start another busy script, which holds more), then the
 * conns whose freeing waited. */
static void busy_over(struct worker *w, struct uring_state *u)
{
	while (w->busy) {
		worker_busy_over(w);
		while (!w->busy && u->held_pos < u->nheld) {
			struct io_uring_cqe cqe = u->held[u->held_pos++];
			struct conn *c = cqe_conn(&cqe);
			if (c)
				c->held_cqes--;
			handle_cqe(w, u, &cqe);
		}
	}
	u->nheld = u->held_pos = 0;
	while (u->free_later) {
		struct conn *c = u->free_later;
		u->free_later = c->close_next;
		c->close_next = NULL;
		c->free_pending = false;
		maybe_free(w, c);
	}
}

static void uring_run(struct worker *w)
{
	int rc = uring_init_in_thread(w);
	if (rc < 0) {
		zr_log(ZR_LOG_WARNING, "worker %u: io_uring setup failed: %s", w->index, strerror(-rc));
		abort(); /* main probed io_uring before choosing it: this is a bug or a resource limit */
	}
	struct uring_state *u = w->bstate;
	while (!worker_stopping(w)) {
		int64_t wait_us = worker_turn_end(w);
		if (w->busy) {
			busy_over(w, u);
			wait_us = 0; /* what it handled may have queued replies */
		}
		struct __kernel_timespec ts = { .tv_sec = wait_us / 1000000,
						.tv_nsec = (wait_us % 1000000) * 1000 };
		struct io_uring_cqe *cqe;
		rc = io_uring_submit_and_wait_timeout(&u->ring, &cqe, 1, &ts, NULL);
		if (rc < 0 && rc != -ETIME && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY)
			zr_log(ZR_LOG_WARNING, "worker %u: io_uring_submit_and_wait: %s", w->index,
			       strerror(-rc));
		w->now_ms = zr_time_ms();
		fetch_cqes(u);
		struct conn_group group;
		group.n = 0;
		for (unsigned i = 0; i < u->nbatch; i++)
			group_add(u, &group, &u->batch[i]);
		conn_group_prefetch(&group);
		while (u->pos < u->nbatch) {
			/* a copy: a busy script's hook may take new completions into the batch */
			struct io_uring_cqe one = u->batch[u->pos++];
			handle_cqe(w, u, &one);
			if (w->busy)
				busy_over(w, u);
		}
	}
}

static void uring_destroy(struct worker *w)
{
	struct uring_state *u = w->bstate;
	if (!u)
		return;
	io_uring_queue_exit(&u->ring);
	munmap(u->br, sizeof(struct io_uring_buf) * URING_NBUFS);
	munmap(u->bufs, (size_t)URING_NBUFS * URING_BUFSZ);
	zr_free(u->batch);
	zr_free(u->held);
	zr_free(u);
	w->bstate = NULL;
}

static void uring_released(struct worker *w, struct conn *c)
{
	struct uring_state *u = w->bstate;
	if (u->handling != c)
		maybe_free(w, c);
}

const struct net_backend net_backend_uring = {
	.name = "io_uring",
	.init = uring_init,
	.run = uring_run,
	.close_conn = uring_close_conn,
	.send = uring_send,
	.reading = uring_reading,
	.connect = uring_connect,
	.released = uring_released,
	.serve_others = uring_serve_others,
	.destroy = uring_destroy,
};
