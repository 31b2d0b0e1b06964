/* worker — one event-loop thread: its listeners (each with the protocol
 * it serves), its connections (accepted, and outbound ones it opened), its
 * counters, its timer work (idle timeouts, active expiry share, kill and
 * pause requests). The loop itself is an I/O backend (io_uring or epoll)
 * behind struct net_backend; everything a backend needs to do with a
 * connection's bytes is here, so both backends behave the same.
 *
 * Only the worker's own thread touches a worker, except worker_wake()
 * (any thread) and the fields the commands layer reads through the
 * registry.
 */
#ifndef ZR_WORKER_H
#define ZR_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <sys/socket.h>

struct server;
struct worker_stats;
struct conn;
struct worker;
struct proto_ops;

struct net_backend {
	const char *name; /* "io_uring" or "epoll" (INFO multiplexing_api) */
	/* Sets up the loop and arms the listeners; 0 or -errno. */
	int (*init)(struct worker *w);
	/* Runs until the server shuts down. */
	void (*run)(struct worker *w);
	/* Starts closing C; it is freed once no operation holds it. */
	void (*close_conn)(struct worker *w, struct conn *c);
	/* Sends what C's output buffer holds (called once per loop turn). */
	void (*send)(struct worker *w, struct conn *c);
	/* conn_reading(C) may have changed (a backpressure hold ended or
	 * began): arm its receive again, or stop it. */
	void (*reading)(struct worker *w, struct conn *c);
	/* Starts the non-blocking connect of outbound conn C (CONN_CONNECTING,
	 * its socket made, c->peer set); its completion calls
	 * worker_connected(), or closes C with the error. */
	void (*connect)(struct worker *w, struct conn *c);
	/* C, closing, was just taken off the pending-send list: the worker
	 * holds no more references to it (the backend may free it now). */
	void (*released)(struct worker *w, struct conn *c);
	/* A script on this worker ran past busy-reply-threshold
	 * (worker_serve_others, w->busy its conn): without waiting, handles
	 * the events that came for the worker's other conns (new conns, their
	 * requests, sent replies) and sends their replies
	 * (worker_send_queued). What must wait for the script to end (w->busy's
	 * own events, wake-ups, connects, and the events that follow one
	 * held) is kept in order and handled once the script's request
	 * returned; so is freeing a conn that closed meanwhile (its session's
	 * cleanup may need shard locks the script holds). The backend calls
	 * worker_busy_over() then. */
	void (*serve_others)(struct worker *w);
	/* Frees the loop; every conn has been destroyed. */
	void (*destroy)(struct worker *w);
};

extern const struct net_backend net_backend_uring;
extern const struct net_backend net_backend_epoll;

/* One listening socket of a worker and the protocol it serves (a row of
 * worker.c's listener table, on one bind address). */
struct net_listener {
	int fd;
	int port;
	const struct proto_ops *ops;
};

struct worker {
	unsigned index;
	struct server *srv;
	struct worker_stats *stats;
	const struct net_backend *backend;
	void *bstate; /* the backend's own state */
	pthread_t thread;
	int cpu;			/* pinned CPU, -1 = none */
	struct net_listener *listeners; /* this worker's SO_REUSEPORT listeners */
	int nlisten;
	int event_fd;		   /* wake-ups from other threads */
	struct conn *conns;	   /* every open conn */
	struct conn *send_head;	   /* conns with replies to send this turn */
	struct conn *durable_head; /* conns holding replies until the journal is on disk */
	unsigned npaused;	   /* conns holding a request for CLIENT PAUSE */
	int64_t now_ms;		   /* wall clock, sampled once per loop turn */
	int64_t next_cron_us;	   /* monotonic deadline of the next timer run */
	int64_t last_publish_ms;
	size_t obuf_hard_cached; /* hard output limit (SIZE_MAX = none), read once per feed */
	/* the conn whose script ran past busy-reply-threshold and served the
	 * others (worker_serve_others), until worker_busy_over(); NULL */
	struct conn *busy;
	bool serving_others; /* inside worker_serve_others */
};

/* Creates the listeners of worker W (the listener table's rows × bind
 * addresses, SO_REUSEPORT) and its wake-up event fd. Returns 0 or -errno (logged). */
int worker_listen(struct worker *w);
/* Closes the listeners of a worker that never started. */
void worker_close_listeners(struct worker *w);
/* Starts / joins the worker's thread. */
int worker_start(struct worker *w);
void worker_join(struct worker *w);
/* Joins the worker's thread if it has ended; true when it has (shutdown's
 * bounded wait). */
bool worker_try_join(struct worker *w);
/* After every worker has joined: frees W's conns (their cleanup may still
 * wake other workers, whose event fds are open until worker_destroy). */
void worker_drop_conns(struct worker *w);
/* Last: frees W's loop, listeners and event fd. */
void worker_destroy(struct worker *w);
/* Wakes W's loop; any thread. */
void worker_wake(struct worker *w);

/* Opens an outbound connection owned by W (W's thread only; from another
 * thread post a worker message, msgq_post_worker) to the numeric address
 * HOST:PORT, its session speaking OPS (ops->open(c, ARG) now). The connect
 * is non-blocking: ops->connected() follows once it completed (the
 * session then queues its first output), or ops->close() with -errno (a
 * refused connect: -ECONNREFUSED). The conn lives on W until it closes
 * (either side: ops->close(c, 0), or the error of a reset) or W stops.
 * Returns the conn, or NULL and *ERR (-errno: a bad address, no socket)
 * without calling OPS. */
struct conn *worker_connect(struct worker *w, const char *host, int port, const struct proto_ops *ops,
			    void *arg, int *err);
/* Closes C (W's thread): what is queued is not sent; ops->close follows
 * once no operation holds it. */
void worker_close(struct worker *w, struct conn *c);

/* --- for the backends -------------------------------------------------- */

/* A new socket was accepted by listener LISTENER: returns its conn, or
 * NULL when its protocol refused it (RESP's maxclients, protected mode: the
 * error was written and the fd closed). */
struct conn *worker_accept(struct worker *w, int listener, int fd);
/* Outbound C's connect completed (RES 0) or failed (-errno): on success
 * the session is told and its output queued; on failure C is closed with
 * the error. The backend arms its receive after a success. */
void worker_connected(struct worker *w, struct conn *c, int res);
/* Bytes arrived on C; false when C must be closed now. */
bool worker_input(struct worker *w, struct conn *c, const char *data, size_t len);
/* Queues C for sending at the end of this loop turn. */
void worker_queue_send(struct worker *w, struct conn *c);
/* A backend read EOF on C: true when C stays open to send what is queued
 * (its replies to the requests that came before the EOF, a GOODBYE), then
 * closes (close_after_send; nothing more is read), as Redis answers a
 * client that half-closed after its requests; false when C must close
 * now (nothing queued). */
bool worker_peer_eof(struct worker *w, struct conn *c);
/* End of a loop turn: sends every queued reply; runs the timer when due
 * and times out blocked clients whose deadline has passed. Returns the
 * microseconds until the next timer run or blocked client's deadline,
 * whichever comes first: the backend waits for events no longer. */
int64_t worker_turn_end(struct worker *w);
/* Sends every queued reply (the first part of worker_turn_end; while
 * serving others, all but w->busy's). False when replies are frozen
 * (a busy shutdown's final save): nothing was sent. */
bool worker_send_queued(struct worker *w);
/* Called from the hook of a script that runs past busy-reply-threshold on
 * conn BUSY of W (server.h's serve_others): W serves its other conns once,
 * through its backend's serve_others, without waiting. Not re-entered. */
void worker_serve_others(struct worker *w, struct conn *busy);
/* The backend is back where the busy script's request started (it
 * returned): w->busy is cleared and paused requests are retried. */
void worker_busy_over(struct worker *w);
/* The event fd was signalled: looks at kill, pause and shutdown requests. */
void worker_woken(struct worker *w);
/* C starts closing: the worker drops it from its lists other than the
 * pending-send list (which the backend's released hook handles). */
void worker_conn_closing(struct worker *w, struct conn *c);
/* Notes a conn held by CLIENT PAUSE. */
void worker_track_paused(struct worker *w, struct conn *c);
/* Links / unlinks a conn in w->conns. */
void worker_link(struct worker *w, struct conn *c);
void worker_unlink(struct worker *w, struct conn *c);
/* Whether the server is stopping. */
bool worker_stopping(const struct worker *w);

#endif
