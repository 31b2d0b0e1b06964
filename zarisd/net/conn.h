/* conn — one transport connection as both I/O backends see it: the socket,
 * the receive (query) buffer, the output queue, the limits and
 * backpressure, the backend's bookkeeping. What the bytes mean is its
 * protocol session's business (struct proto_ops below; RESP is
 * net/resp_session.c): the transport never parses.
 *
 * Input: the backends hand received bytes to conn_feed(), which gives them
 * to the session's consume() — one indirect call per received batch, which
 * parses, dispatches and replies for every complete request in it. When
 * the receive buffer is empty the session reads straight out of the bytes
 * the kernel delivered (the provided buffer, for io_uring) and only what
 * it left (a partial request, or requests it holds) is copied. Owned by one
 * worker thread for its whole life, accepted or outbound (conn_connect).
 *
 * Backpressure: a session whose pending output passes CONN_BP_HIGH sets
 * bp_hold (conn_over_backpressure tells it when): its further requests stay
 * unparsed in the receive buffer and the backend stops reading the socket
 * (conn_reading()), so TCP's window closes on the peer instead of zarisd
 * holding every reply of a long pipeline. Below CONN_BP_LOW the hold ends:
 * the buffered requests run, then reading resumes. The output limits then
 * apply only to output that grows without new requests being read
 * (pub/sub messages, one huge reply).
 */
#ifndef ZR_CONN_H
#define ZR_CONN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "zarisd/proto/reply.h"

struct worker;
struct store;
struct conn;
struct conn_group;

enum conn_state {
	CONN_OPEN = 0,
	CONN_CLOSING,	 /* waiting for in-flight operations before it is freed */
	CONN_CONNECTING, /* outbound: the connect has not completed yet */
};

/* A protocol session behind a transport. Every function runs on the
 * conn's worker thread. */
struct proto_ops {
	const char *name;    /* "resp" */
	size_t session_size; /* bytes of session state, allocated with the conn (conn_session) */
	/* An accepted socket, before its conn exists: false refuses it (the
	 * session wrote its own error and the fd is closed by the caller). */
	bool (*admit)(struct worker *w, int fd);
	/* The session of C starts: accepted (the peer is connected) or, for
	 * an outbound conn, created (connected() follows). */
	void (*open)(struct conn *c, void *arg);
	/* Outbound: the connect completed; the session may queue output. */
	void (*connected)(struct conn *c);
	/* Consumes what it can of BUF[0..LEN): runs every complete request
	 * (or reply), writing output to *c->out. Returns the bytes consumed;
	 * the rest waits in the receive buffer. BUF is writable (RESP unescapes
	 * inline requests in place). Sets c->close_after_send or c->bp_hold as
	 * needed; sets c->obuf_overflow (and returns) when C must close now. */
	size_t (*consume)(struct conn *c, char *buf, size_t len);
	/* Optional (NULL: nothing to prefetch): adds the keys of the requests
	 * at the start of BUF to the loop turn's prefetch group. */
	void (*group_add)(struct conn_group *g, const struct conn *c, char *buf, size_t len);
	/* Whether the output queued so far may grow this far (the session's
	 * output limits); false closes C (logged by the session). */
	bool (*output_ok)(struct conn *c, int64_t now_ms);
	/* The worker's scan of its conns (after a wake-up, and on the timer
	 * when TIMER): kill requests, pauses, idle timeouts, published fields.
	 * Adds 1 to *PAUSED for a conn still held by a pause. False closes C. */
	bool (*tick)(struct conn *c, bool timer, unsigned *paused);
	/* Optional (NULL: a RESP error reply): drops everything queued for C
	 * and queues ERROR (Redis's text, without '-') in the session's
	 * protocol as the last thing C is sent; the caller then closes C after
	 * sending (replica-ack timed out, the write lease lapsed). */
	void (*final_error)(struct conn *c, const char *error);
	/* C is being freed: the session lets go of what it holds. ERROR is 0
	 * for an orderly close (either side), else -errno (a refused or failed
	 * connect, a reset): an outbound conn's owner learns it here. */
	void (*close)(struct conn *c, int error);
};

struct conn {
	struct worker *w;
	const struct proto_ops *ops;
	int fd;
	enum conn_state state;
	int error;	  /* why it closed (proto_ops.close), 0 = orderly */
	struct obuf *out; /* the session's output, which the backends send */
	/* where activity is recorded (idle timeouts, CLIENT LIST idle), the
	 * session's; written with relaxed stores */
	_Atomic int64_t *last_interaction_ms;
	/* appendfsync always: output may be sent only once srv->journal_durable
	 * >= *durable_seq (0 = nothing to wait for); the session's, or NULL */
	uint64_t *durable_seq;
	/* replica-ack: likewise until srv->repl_acked >= *repl_seq; the
	 * session's, or NULL */
	uint64_t *repl_seq;
	int64_t held_since_ms; /* when its output was first held (replica-ack-timeout), 0 = not held */
	uint64_t log_id;       /* for the log: the session's client id */
	const char *log_addr;  /* for the log: the peer's address */
	char *qbuf;	       /* unconsumed bytes (partial request, held requests), or NULL */
	size_t qlen, qcap;
	bool send_queued; /* on the worker's pending-send list */
	bool close_after_send;
	bool peer_eof;		    /* the peer closed its side: nothing more is read (worker_peer_eof) */
	bool obuf_overflow;	    /* over the output limit: closed without sending */
	bool outbound;		    /* made by conn_connect */
	int64_t obuf_soft_since_ms; /* when the soft output limit was first exceeded, 0 = not */
	struct conn *next, *prev;   /* worker's list of all conns */
	struct conn *send_next;	    /* worker's pending-send list */
	struct conn *close_next;    /* closed, waiting to be freed (epoll: reap; io_uring: a busy script) */
	bool free_pending;	    /* io_uring: on the list of conns freed once a busy script ended */
	unsigned held_cqes;	    /* io_uring: its completions held until a busy script ended */
	struct conn *durable_next;  /* worker's list of conns whose replies wait for fsync */
	bool durable_waiting;
	bool handed_off;	 /* its socket went to another owner (PSYNC): closed without shutdown() */
	uint64_t recv_user_data; /* io_uring: cookie of the armed multishot recv */
	bool recv_armed;
	bool send_inflight;
	bool connect_inflight; /* io_uring: the connect's completion is pending */
	bool epollout;	       /* epoll: EPOLLOUT registered */
	bool epoll_noin;       /* epoll: EPOLLIN dropped while the conn is not reading */
	bool recv_stopping;    /* io_uring: recv cancelled for backpressure, its last completion pending */
	/* Backpressure (see the header): at most one of bp_hold, bp_lifted. */
	bool bp_hold;		      /* requests wait unparsed until the output drains to CONN_BP_LOW */
	bool bp_lifted;		      /* a stalled hold was given up: no new hold until the output drains */
	bool bp_release;	      /* the hold ended: the worker runs the held requests (conn_release) */
	int64_t bp_progress_ms;	      /* when the held output last shrank (or the hold began) */
	struct sockaddr_storage peer; /* outbound: where to connect */
	socklen_t peer_len;
	/* the session's state follows (conn_session), aligned for any type */
	_Alignas(16) char session[];
};

/* The session state of C (ops->session_size bytes, zeroed at creation). */
static inline void *conn_session(struct conn *c)
{
	return c->session;
}
static inline const void *conn_session_const(const struct conn *c)
{
	return c->session;
}

/* Whether the backend should read C's socket: not while its requests are
 * held for backpressure, nor after the peer's EOF. */
static inline bool conn_reading(const struct conn *c)
{
	return !c->bp_hold && !c->peer_eof;
}

/* Allocates a connection for FD accepted by worker W, speaking OPS, and
 * opens its session (ops->open with ARG). The caller owns it until
 * conn_destroy(). */
struct conn *conn_create(struct worker *w, int fd, const struct proto_ops *ops, void *arg);
/* Closes the session (ops->close with c->error), frees the connection and
 * closes its fd. */
void conn_destroy(struct conn *c);

/* Drops C's queued output, queues ERROR as its last words
 * (proto_ops.final_error) and has C closed once they are sent. */
void conn_final_error(struct conn *c, const char *error);

/* Processes LEN received bytes: hands them to the session. Returns false
 * when the connection must close now (protocol error, receive buffer
 * limit; QUIT after its reply is sent is signalled by close_after_send
 * instead). */
bool conn_feed(struct conn *c, const char *data, size_t len);
/* Gives the session the bytes it left in the receive buffer again (it
 * held them: a pause ended, a blocked client was answered, a
 * backpressure hold ended). False when the conn must close. */
bool conn_retry(struct conn *c);
/* Runs the requests a backpressure hold kept back, once it has ended
 * (c->bp_release, set by conn_sent or conn_check_stall); clears
 * bp_release. False when the conn must close. The caller then lets the
 * backend start reading again (the hold may also have begun anew). */
bool conn_release(struct conn *c);
/* Timer: gives up a hold that may be a deadlock — nothing sent for a
 * while and request bytes waiting in the socket: a client that writes its
 * whole pipeline before reading any reply (redis-py, Jedis pipelines)
 * would wait forever for zarisd to read. Such a client is then served as
 * Redis serves it (its output grows) until the output drains. True when
 * the hold ended (bp_release set: queue C for the turn's end). */
bool conn_check_stall(struct conn *c, int64_t now_ms);
/* Checks output limits HARD and SOFT (0 = none; SOFT for more than SECS
 * seconds) against the output queued; false when C must be closed
 * (logged). The session picks the limits (its client class).
 * conn_output_over() is its part for output over one of them. */
bool conn_output_over(struct conn *c, int64_t now_ms, unsigned long long hard, unsigned long long soft,
		      long long secs);
static inline bool conn_check_output_limits(struct conn *c, int64_t now_ms, unsigned long long hard,
					    unsigned long long soft, long long secs)
{
	size_t used = c->out->bytes;
	/* the common case, inline: under both limits */
	if ((!hard || used <= hard) && (!soft || used <= soft)) {
		c->obuf_soft_since_ms = 0;
		return true;
	}
	return conn_output_over(c, now_ms, hard, soft, secs);
}
/* Accounts N bytes of *c->out written to the socket by a backend: drops
 * them from the buffer; like Redis, a write is an interaction, so a
 * client that is sent a reply or a message is not idle (--timeout). Ends a
 * backpressure hold once the output is down to CONN_BP_LOW (bp_release:
 * the backend queues C so that the worker runs what was held). */
void conn_sent(struct conn *c, size_t n);

/* Backpressure thresholds (see the header). 4 MiB is what Linux lets a
 * TCP socket buffer grow to for sending (tcp_wmem's default maximum): the
 * kernel already holds that much ahead of a fast reader, so holding as
 * much again keeps its socket full while the next requests run, and a
 * conn's replies cost at most this plus its largest reply. Resuming at
 * half of it makes a hold and its end take whole replies, not one send's
 * worth at a time. A fixed value and not a setting: it changes no reply,
 * and a client never sees it but as TCP flow control. */
#define CONN_BP_HIGH (4u << 20)
#define CONN_BP_LOW (CONN_BP_HIGH / 2)

/* Whether the output of C calls for a backpressure hold now (the session
 * asks after each request; one whose output is mostly not replies, a
 * subscriber's, does not ask). */
static inline bool conn_over_backpressure(const struct conn *c)
{
	return c->out->bytes > CONN_BP_HIGH && !c->bp_lifted;
}

/* Group prefetching across connections. Without a pipeline each
 * connection brings one request per receive, so the prefetching a session
 * does within one connection's batch has nothing to overlap, and every
 * lookup waited for its own cache misses. A backend that got bytes for
 * several connections in one loop turn first passes each connection's
 * bytes to conn_group_add() (which has the session parse the whole
 * requests at their start and hash their keys), then calls
 * conn_group_prefetch() once, and only then feeds them: the store's
 * prefetch steps are taken across the group, so the misses overlap.
 * Neither changes any state; the conns must stay allocated until
 * conn_group_prefetch() returns. The epoll backend, which reads one socket
 * at a time into one buffer, does not group. Start a group with n = 0. */
#define CONN_GROUP_MAX 64
struct conn_prefetch_key {
	uint64_t hash;	 /* store_hash(key) */
	const char *key; /* in the received bytes */
	size_t klen;
	unsigned db;
};
struct conn_group {
	struct store *store;
	unsigned n;
	struct conn_prefetch_key key[CONN_GROUP_MAX];
};
void conn_group_add(struct conn_group *g, const struct conn *c, char *data, size_t len);
void conn_group_prefetch(const struct conn_group *g);
/* The store's prefetch steps after the first (store.h: bucket, entry, next
 * entry) for N keys, each step over all keys before the next. */
void conn_prefetch_keys(struct store *s, const struct conn_prefetch_key *k, unsigned n);

#endif
