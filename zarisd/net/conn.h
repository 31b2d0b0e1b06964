/* conn — one client connection as both I/O backends see it: the socket,
 * the query buffer, the parser, and the client (commands layer) inside.
 *
 * Input handling is shared by the backends: they hand received bytes to
 * conn_feed(), which parses and dispatches every complete request and
 * leaves replies in client.out; the backend then sends them. When the
 * query buffer is empty, requests are parsed straight out of the bytes the
 * kernel delivered (the provided buffer, for io_uring) and only a partial
 * tail is copied. Owned by one worker thread for its whole life.
 *
 * Backpressure: a normal client whose pending output (held replies under
 * appendfsync always included) passes CONN_BP_HIGH has its further
 * requests left unparsed in the query buffer, and the backend stops
 * reading its socket (conn_reading()), so TCP's window closes on the
 * client instead of zarisd holding every reply of a long pipeline. Below
 * CONN_BP_LOW the hold ends: the buffered requests run, then reading
 * resumes. The output buffer limits then apply only to output that grows
 * without new requests being read (pub/sub messages, one huge reply).
 */
#ifndef ZR_CONN_H
#define ZR_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/server/client.h"
#include "zarisd/proto/resp.h"

struct worker;
struct store;

enum conn_state {
	CONN_OPEN = 0,
	CONN_CLOSING, /* waiting for in-flight operations before it is freed */
};

struct conn {
	struct client client; /* must stay first: client.conn points back here */
	struct worker *w;
	int fd;
	enum conn_state state;
	char *qbuf; /* unparsed bytes (partial request), or NULL */
	size_t qlen, qcap;
	struct resp_parser parser;
	bool paused;	  /* CLIENT PAUSE holds the request at the start of qbuf */
	bool send_queued; /* on the worker's pending-send list */
	bool close_after_send;
	bool obuf_overflow;	    /* over the output limit: closed without sending */
	int inflight;		    /* backend operations still holding the conn */
	int64_t obuf_soft_since_ms; /* when the soft output limit was first exceeded, 0 = not */
	struct conn *next, *prev;   /* worker's list of all conns */
	struct conn *send_next;	    /* worker's pending-send list */
	struct conn *close_next;    /* epoll: closed, waiting to be freed */
	struct conn *durable_next;  /* worker's list of conns whose replies wait for fsync */
	bool durable_waiting;
	uint64_t recv_user_data; /* io_uring: cookie of the armed multishot recv */
	bool recv_armed;
	bool send_inflight;
	bool epollout;	    /* epoll: EPOLLOUT registered */
	bool epoll_noin;    /* epoll: EPOLLIN dropped while the conn is not reading */
	bool recv_stopping; /* io_uring: recv cancelled for backpressure, its last completion pending */
	/* Backpressure (see the header): at most one of bp_hold, bp_lifted. */
	bool bp_hold;		/* requests wait unparsed until the output drains to CONN_BP_LOW */
	bool bp_lifted;		/* a stalled hold was given up: no new hold until the output drains */
	bool bp_release;	/* the hold ended: the worker runs the held requests (conn_release) */
	int64_t bp_progress_ms; /* when the held output last shrank (or the hold began) */
};

/* Whether the backend should read C's socket: not while its requests are
 * held for backpressure. */
static inline bool conn_reading(const struct conn *c)
{
	return !c->bp_hold;
}

/* Allocates a connection for FD accepted by worker W and registers its
 * client. The caller owns it until conn_destroy(). */
struct conn *conn_create(struct worker *w, int fd);
/* Unregisters and frees the connection and closes its fd. */
void conn_destroy(struct conn *c);

/* Processes LEN received bytes: runs every complete request. Returns false
 * when the connection must close now (protocol error, query buffer limit,
 * QUIT after its reply is sent is signalled by close_after_send instead). */
bool conn_feed(struct conn *c, const char *data, size_t len);
/* Re-runs requests held by CLIENT PAUSE; false when the conn must close. */
bool conn_resume(struct conn *c);
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
/* Checks the output buffer limits after replies were added; false when the
 * client must be closed (logged). */
bool conn_check_output_limits(struct conn *c, int64_t now_ms);
/* Publishes the shared fields other workers read (CLIENT LIST). */
void conn_publish(struct conn *c);
/* Accounts N bytes of c->client.out written to the socket by a backend:
 * drops them from the buffer; like Redis, a write is an interaction, so a
 * client that is sent a reply or a message is not idle (--timeout). Ends a
 * backpressure hold once the output is down to CONN_BP_LOW (bp_release:
 * the backend queues C so that the worker runs what was held). */
void conn_sent(struct conn *c, size_t n);

/* Group prefetching across connections. Without a pipeline each
 * connection brings one request per receive, so the prefetching conn_feed
 * does within one connection's batch has nothing to overlap, and every
 * lookup waited for its own cache misses. A backend that got bytes for
 * several connections in one loop turn first passes each connection's
 * bytes to conn_group_add() (which parses the whole requests at their
 * start and hashes their keys), then calls conn_group_prefetch() once, and
 * only then feeds them: the store's prefetch steps are taken across the
 * group, so the misses overlap. Neither changes any state; the conns must
 * stay allocated until conn_group_prefetch() returns. The epoll backend,
 * which reads one socket at a time into one buffer, does not group.
 * Start a group with n = 0. */
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

#endif
