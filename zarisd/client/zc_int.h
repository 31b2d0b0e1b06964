/* zc_int — libzaris's internal types, shared by its files (never installed).
 *
 * Ownership: a `struct zaris` owns its nodes (never removed before
 * zaris_close, so a node index stays valid), each node owns its socket,
 * buffers and the FIFO of its requests in flight; a request owns its parts'
 * key-position arrays. A batch owns its operations' encoded fields, their
 * results and the arena their values live in; while in flight it is
 * referenced (not owned) by the parts of requests and by the client's
 * completed queue.
 */
#ifndef ZC_INT_H
#define ZC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "zarisd/client/zaris.h"
#include "zarisd/client/zc_arena.h"

/* --- batches ---------------------------------------------------------------- */

enum zc_batch_state {
	ZC_IDLE,     /* being filled, or never sent */
	ZC_INFLIGHT, /* sent, some operation unanswered */
	ZC_DONE,     /* every operation answered, in the client's completed queue */
	ZC_RETURNED, /* returned by a wait: results readable, may be sent again */
};

/* One operation as added. Its wire fields (what follows the op header)
 * are args[off, off+len) of its batch. */
struct zc_op {
	uint8_t code, flags;
	int db;		   /* < 0: the client's options.db */
	uint32_t off, len; /* its fields in the batch's args */
	uint32_t key_off;  /* the routing key's bytes in args (single-key ops, COMMAND) */
	uint32_t key_len;
	bool has_key;	/* key_off/key_len are meaningful */
	uint32_t nkeys; /* MGET/MSET: keys */
	uint32_t koffs; /* MGET/MSET: index of its first key in the batch's koff[] */
	/* state while in flight */
	uint32_t pending;		     /* parts unanswered */
	uint32_t parts;			     /* parts it was split into */
	int err;			     /* first error of a part: ZARIS_S_* > 0 or ZARIS_E_* */
	const struct zaris_value *err_value; /* a server error's value */
	struct zaris_value *gathered;	     /* split MGET: its n results */
	int64_t sum;			     /* INVALIDATE over several nodes */
	struct zaris_result res;
};

struct zaris_batch {
	struct zc_op *ops;
	size_t nops, ops_cap;
	unsigned char *args; /* every operation's wire fields, back to back */
	size_t alen, acap;
	uint32_t *koff; /* MGET/MSET keys' offsets in args (of the key's str) */
	size_t nkoff, koff_cap;
	int db;
	struct zc_arena arena; /* result values */
	enum zc_batch_state state;
	size_t unanswered;	       /* operations still pending while in flight */
	int rc;			       /* zaris_exec's result */
	uint64_t seq;		       /* send order, for sorting retried parts */
	struct zaris *owner;	       /* while in flight or done */
	struct zaris_batch *next_done; /* the client's completed queue */
	/* internal batches (TOPOLOGY refreshes) are not queued: this runs */
	void (*on_done)(struct zaris *z, struct zaris_batch *b);
};

/* --- requests and parts ----------------------------------------------------------- */

/* What one operation of a request frame answers. */
struct zc_part {
	struct zaris_batch *b; /* NULL: an ASKING prelude, its result dropped */
	uint32_t op;	       /* index in b */
	uint32_t *pos;	       /* split MGET/MSET: the key positions carried (owned) */
	uint32_t npos;
	int node;	    /* target node, -1: route by the slot map */
	uint8_t asking;	    /* send a COMMAND ASKING just before */
	uint8_t redirects;  /* MOVED/ASK followed so far */
	uint8_t io_retried; /* sent again after a lost connection */
	uint8_t answered;   /* within its request */
};

struct zc_req {
	uint32_t id;
	uint64_t sent_ms;
	struct zc_part *parts; /* in frame order: a result's index is its part */
	uint32_t nparts, answered;
	struct zc_req *next;
};

/* --- nodes ---------------------------------------------------------------- */

struct zc_node {
	char *host;	     /* as the topology (or the options) name it */
	uint16_t port;	     /* native port; 0: unknown (not routable) */
	uint16_t resp_port;  /* RESP port, what MOVED/ASK name; 0 unknown */
	char id[41];	     /* cluster node id, "" when not known */
	bool primary;	     /* owns slots in the current topology */
	int fd;		     /* -1 when not connected */
	uint32_t max_frame;  /* HELLO's */
	unsigned char *rbuf; /* received bytes not yet consumed */
	size_t rlen, rcap;
	unsigned char *wbuf; /* frames not yet written: [woff, wlen) */
	size_t wlen, woff, wcap;
	struct zc_req *head, *tail; /* in flight, oldest first */
	uint64_t next_connect_ms;   /* no connect before this */
	int backoff_ms;		    /* last backoff; 0 after a success */
};

/* --- the client ------------------------------------------------------------- */

struct zaris {
	struct zaris_options opts; /* strings owned copies */
	bool cluster;
	struct zc_node **nodes;
	size_t nnodes, nodes_cap;
	int16_t slot_node[16384]; /* node index of a slot's primary, -1 none */
	uint64_t epoch;
	uint64_t client_id;
	unsigned server_flags;
	uint32_t next_id;
	uint64_t next_seq;
	/* parts waiting to be framed and written */
	struct zc_part *outq;
	size_t noutq, outq_cap;
	/* parts waiting for a topology read to finish */
	struct zc_part *parked;
	size_t nparked, parked_cap;
	bool topo_stale;	  /* re-read TOPOLOGY when allowed */
	struct zaris_batch *topo; /* the internal TOPOLOGY batch */
	bool topo_busy;		  /* topo in flight */
	uint64_t topo_last_ms;	  /* when the last read was sent */
	int topo_rc;		  /* the last read's result */
	struct zaris_batch *done_head, *done_tail;
	size_t in_flight;	  /* user batches sent and not yet returned */
	struct zaris_batch *sync; /* the synchronous helpers' batch */
	struct zaris_stats stats;
	unsigned char *fbuf; /* the frame being built */
	size_t fcap;
	struct zc_arena scratch; /* values nobody keeps (ASKING's +OK) */
	char err[256];
};

/* zc_batch.c */
void zc_batch_prepare(struct zaris_batch *b); /* clears results for a send */
/* Records a part's answer on its operation (STATUS, VALUE in b's arena or
 * NULL); completes the operation and the batch when it was the last. */
void zc_op_answer(struct zaris *z, struct zaris_batch *b, const struct zc_part *pt, int status,
		  const struct zaris_value *value);
bool zc_op_is_read(uint8_t code);

/* zc_conn.c */
uint64_t zc_now_ms(void);
/* Connects NODE and runs HELLO within the connect timeout: 0 or a ZARIS_E_*
 * (z->err says why). */
int zc_node_connect(struct zaris *z, struct zc_node *n, unsigned *hello_flags);
void zc_node_close_fd(struct zc_node *n);
/* Appends LEN bytes to the node's write buffer: 0 or ZARIS_E_NOMEM. */
int zc_node_queue(struct zc_node *n, const void *p, size_t len);
/* Writes what it can without blocking: 0, or ZARIS_E_IO (errno kept). */
int zc_node_write(struct zc_node *n);
/* Reads what is there without blocking: > 0 bytes read, 0 at EOF, or
 * ZARIS_E_IO / ZARIS_E_NOMEM; -EAGAIN-like "nothing" is 1 with no bytes. */
int zc_node_read(struct zc_node *n, size_t *got);

/* zc_topo.c */
/* The node at HOST (native) PORT, made when new: its index, or ZARIS_E_NOMEM. */
int zc_node_find(struct zaris *z, const char *host, size_t hlen, uint16_t port);
/* The node whose RESP address is HOST:PORT, or -1. */
int zc_node_by_resp(struct zaris *z, const char *host, size_t hlen, uint16_t port);
/* Applies a TOPOLOGY result: 0, or ZARIS_E_PROTO when it is not one. */
int zc_topo_apply(struct zaris *z, const struct zaris_value *v);

/* zaris.c */
/* A client with its options (defaults applied) and its seed node, not
 * connected: zaris_connect's first step (and unit tests' way in). NULL
 * without memory. zc_client_free undoes it (zaris_close). */
struct zaris *zc_client_new(const struct zaris_options *o);
void zc_client_free(struct zaris *z);
void zc_set_err(struct zaris *z, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* zc_engine.c: routing, framing, sending; zc_recv.c: receiving, the I/O loop */
/* Ends part PT: its operation gets STATUS (a ZARIS_S_* with V, or a
 * ZARIS_E_*); frees the part's positions. */
void zc_part_answer(struct zaris *z, struct zc_part *pt, int status, const struct zaris_value *v);
/* Queues PT (copied; its positions move with it) for sending, or for the
 * end of the TOPOLOGY read in flight (zc_park). */
void zc_outq_push(struct zaris *z, struct zc_part *pt);
void zc_park(struct zaris *z, struct zc_part *pt);
/* Closes node IDX's connection after ERR (WHY for the error text): its
 * read-only parts go back to the queue once, the others are answered ERR. */
void zc_conn_fail(struct zaris *z, int idx, int err, const char *why);
void zc_req_free(struct zc_req *r);
/* Routes, frames and writes every queued part (and a due TOPOLOGY read). */
void zc_flush(struct zaris *z);
/* Runs the I/O loop once: sends queued parts, waits up to TIMEOUT_MS (< 0:
 * no limit, but never past the oldest request's deadline) for readiness,
 * handles what arrived, times out old requests, sends what that queued.
 * Returns 1 when it waited on something, 0 when nothing was in flight. */
int zc_pump(struct zaris *z, int timeout_ms);
/* Routes batch B's operations (B prepared, in flight) into the send queue
 * and sends them. */
void zc_submit(struct zaris *z, struct zaris_batch *b);
/* Starts a TOPOLOGY read now when none is in flight. */
void zc_topo_start(struct zaris *z);
/* Drops every request, queued part and node of Z (zaris_close's work):
 * batches still referenced are marked returned with ZARIS_E_IO. */
void zc_engine_free(struct zaris *z);

#endif
