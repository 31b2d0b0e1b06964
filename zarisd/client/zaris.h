/* zaris.h — libzaris, the C client of zarisd's native protocol
 * (zarisd/proto/PROTOCOL.md is the wire contract; this header needs none of
 * its constants).
 *
 * Model. A `struct zaris` is a client: one connection per node (one node
 * outside cluster mode), the slot map, and the requests in flight. Work is
 * a `struct zaris_batch`: operations added to it, sent as one REQUEST frame
 * per node (more when past the server's max frame or 65,535 ops), answered per operation with a status and a parsed RESP3 value.
 * Several batches may be in flight at once (zaris_send / zaris_wait): that
 * is how a caller keeps N requests outstanding on each node connection.
 *
 * Threads. No locks inside: one thread at a time per `struct zaris` (use one
 * per thread, or serialize yourself). A batch belongs to one `struct zaris`
 * while in flight and is not touched by the caller until it completed.
 * Distinct `struct zaris` objects share nothing and may run in parallel.
 * The library has no mutable global state.
 *
 * Errors. Functions returning int give >= 0 on success and a negative
 * ZARIS_E_* on failure; zaris_errstr(z) then has a text with context
 * (borrowed until the next call on z). Per operation, a result's status is
 * ZARIS_S_OK, a server error (ZARIS_S_* > 0, the value is the RESP3 error
 * with Redis's text), or a client error (ZARIS_E_* < 0: the operation got
 * no answer; its value is NULL).
 *
 * Cluster. With cluster mode on (asked, or ZARIS_CLUSTER_AUTO and the seed's
 * HELLO says so) the client reads TOPOLOGY from the seed, routes every key
 * to the primary of its slot (CRC16 with {hash tags}, as Redis Cluster),
 * and keeps one connection per primary. MGET and MSET whose keys span slots
 * are split per slot (grouped per node into one frame) and reassembled:
 * such an MSET is then not atomic across slots. INVALIDATE goes to every
 * primary and its counts are summed. COMMAND is routed by argv[1] when
 * argc >= 2 (most commands' first key), else to any node. TOPOLOGY goes to
 * any node.
 *   MOVED: the slot is pointed at the named node at once, TOPOLOGY is read
 * again (at most once per topology_interval_ms), and the operation is sent
 * to the new owner. MOVED and ASK name a node's RESP address: the client
 * maps it to the node's native port through TOPOLOGY, and for a node it
 * does not know yet holds the operation until a TOPOLOGY read ends. ASK: the operation is sent once to the named node,
 * preceded by COMMAND ASKING in the same request. Both count against
 * max_redirects per operation; past it the MOVED/ASK result is returned.
 *   Connection loss: every in-flight request on that connection is lost.
 * Operations that only read (GET, EXISTS, MGET, PTTL, METAGET, TOPOLOGY)
 * are sent again after one reconnect; every other one gets ZARIS_E_IO,
 * since it may or may not have run. A lost connection is made again on the
 * next use, at once; a connect that fails starts a backoff
 * (reconnect_min_ms doubling up to reconnect_max_ms, reset by a success)
 * during which an operation for that node fails at once with ZARIS_E_IO. In
 * cluster mode a failed connection also makes the client re-read TOPOLOGY.
 *
 * Timeouts. connect_timeout_ms bounds each connect plus handshake.
 * request_timeout_ms bounds each request frame from when it is queued on
 * its node's connection: when the oldest one on a connection is still
 * unanswered past it, every operation in flight on that connection gets
 * ZARIS_E_TIMEOUT and the connection is closed (a late answer could not be
 * told from the next one's; the next use reconnects, without backoff).
 * Both are poll()-based and enforced while a zaris_* call runs the client
 * (exec, wait, wait_any, the helpers).
 */
#ifndef ZARIS_H
#define ZARIS_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZARIS_VERSION_MAJOR 1

/* Client errors (negative). */
enum zaris_error {
	ZARIS_E_IO = -1,      /* connect/read/write failed, connection lost, node in backoff */
	ZARIS_E_TIMEOUT = -2, /* connect or request timeout */
	ZARIS_E_PROTO = -3,   /* the server broke the protocol, or sent GOODBYE */
	ZARIS_E_AUTH = -4,    /* HELLO refused (WRONGPASS, NOAUTH) */
	ZARIS_E_NOMEM = -5,   /* allocation failed */
	ZARIS_E_INVAL = -6,   /* bad argument (too many ops/keys, NULL where not allowed) */
	ZARIS_E_SERVER = -7,  /* a synchronous helper's operation got a server error */
	ZARIS_E_BUSY = -8,    /* the batch is in flight (or not sent, for zaris_wait) */
	ZARIS_E_NOROUTE = -9, /* cluster: no known node owns the key's slot */
};

/* Server statuses (positive): the first word of Redis's error text, as
 * PROTOCOL.md 5. */
enum zaris_status {
	ZARIS_S_OK = 0,
	ZARIS_S_ERR = 1,
	ZARIS_S_WRONGTYPE = 2,
	ZARIS_S_MOVED = 3,
	ZARIS_S_ASK = 4,
	ZARIS_S_OOM = 5,
	ZARIS_S_NOAUTH = 6,
	ZARIS_S_BUSY = 7,
	ZARIS_S_READONLY = 8,
	ZARIS_S_NOREPLICAS = 9,
	ZARIS_S_CROSSSLOT = 10,
	ZARIS_S_TRYAGAIN = 11,
	ZARIS_S_CLUSTERDOWN = 12,
	ZARIS_S_LOADING = 13,
	ZARIS_S_NOSCRIPT = 14,
	ZARIS_S_EXECABORT = 15,
	ZARIS_S_MASTERDOWN = 16,
	ZARIS_S_MISCONF = 17,
	ZARIS_S_NOPERM = 18,
	ZARIS_S_FENCED = 19,
	ZARIS_S_UNKILLABLE = 20,
	ZARIS_S_NOTBUSY = 21,
	ZARIS_S_BUSYKEY = 22,
	ZARIS_S_OTHER = 255,
};

/* A short constant text for a ZARIS_E_* or ZARIS_S_* code. */
const char *zaris_strerror(int code);

/* --- values: RESP3 as parsed from a result ------------------------------- */

enum zaris_type {
	ZARIS_T_SIMPLE,	  /* + : str/len */
	ZARIS_T_ERROR,	  /* - or ! : str/len, the whole error text */
	ZARIS_T_INTEGER,  /* : integer */
	ZARIS_T_BULK,	  /* $ : str/len */
	ZARIS_T_NULL,	  /* _ (and RESP2-style $-1 / *-1) */
	ZARIS_T_DOUBLE,	  /* , : dbl; str/len its text (inf, -inf, nan too) */
	ZARIS_T_BOOL,	  /* # : integer 0 or 1 */
	ZARIS_T_BIGNUM,	  /* ( : str/len, the digits */
	ZARIS_T_VERBATIM, /* = : str/len the text after "fmt:", format[] the fmt */
	ZARIS_T_ARRAY,	  /* * : elements[n] */
	ZARIS_T_MAP,	  /* % : elements[n], n = 2 x pairs: key, value, key, ... */
	ZARIS_T_SET,	  /* ~ : elements[n] */
	ZARIS_T_PUSH,	  /* > : elements[n] */
};

/* A parsed value. Strings are NUL-terminated (the NUL is not in len) and
 * may hold NULs. Attributes (|) are parsed and dropped. Everything is owned
 * by the batch that holds the result: valid until zaris_batch_reset,
 * zaris_batch_free or the batch is sent again. */
struct zaris_value {
	enum zaris_type type;
	int64_t integer;		    /* INTEGER, BOOL */
	double dbl;			    /* DOUBLE */
	const char *str;		    /* SIMPLE, ERROR, BULK, DOUBLE, BIGNUM, VERBATIM */
	size_t len;			    /* bytes at str */
	char format[4];			    /* VERBATIM: "txt", "mkd", NUL-terminated */
	const struct zaris_value *elements; /* ARRAY, MAP, SET, PUSH */
	size_t n;			    /* count of elements */
};

/* The value of MAP M's key KEY (a SIMPLE or BULK string equal to it), or
 * NULL when M is no map or has no such key. */
const struct zaris_value *zaris_map_get(const struct zaris_value *m, const char *key);

/* --- connecting ------------------------------------------------------------ */

enum zaris_cluster_mode {
	ZARIS_CLUSTER_AUTO = 0, /* cluster routing when the seed's HELLO has the cluster flag */
	ZARIS_CLUSTER_OFF,	/* every operation to the seed */
	ZARIS_CLUSTER_ON,	/* cluster routing; refuse a seed not in cluster mode */
};

struct zaris_options {
	const char *host;     /* seed address (IPv4/IPv6 literal or name); "127.0.0.1" if NULL */
	uint16_t port;	      /* the seed's native port (required) */
	const char *username; /* NULL or "" or "default" */
	const char *password; /* NULL = none */
	enum zaris_cluster_mode cluster;
	uint16_t db;		  /* database of operations added without zaris_batch_db */
	int connect_timeout_ms;	  /* 0: 2000; < 0: no limit */
	int request_timeout_ms;	  /* 0: 5000; < 0: no limit */
	int reconnect_min_ms;	  /* 0: 100 */
	int reconnect_max_ms;	  /* 0: 5000 */
	int max_redirects;	  /* MOVED/ASK follow-ups per operation; 0: 5 */
	int topology_interval_ms; /* least time between TOPOLOGY reads; 0: 100 */
	/* When a topology lists a node without a native port (0), use its RESP
	 * port plus this offset; 0 (default): such a node is not routable. */
	int native_port_offset;
};

/* Fills O with the defaults above (all zero, host NULL). */
void zaris_options_init(struct zaris_options *o);

struct zaris;

/* Connects to the seed, does the HELLO handshake and (cluster mode) reads
 * TOPOLOGY. On success *OUT is a new client the caller owns (zaris_close)
 * and 0 is returned; on failure a ZARIS_E_*, *OUT is NULL and ERR (ERRLEN
 * bytes, may be NULL/0) has the reason. O is copied (strings too). */
int zaris_connect(const struct zaris_options *o, struct zaris **out, char *err, size_t errlen);

/* Closes every connection and frees Z, with any batch still in flight on
 * it left marked ZARIS_E_IO (the caller still owns and frees them). NULL is
 * fine. */
void zaris_close(struct zaris *z);

/* The last error's text on Z (never NULL; "" when none). Borrowed until the
 * next call on Z. */
const char *zaris_errstr(const struct zaris *z);

/* Whether Z routes by slot (cluster mode). */
int zaris_is_cluster(const struct zaris *z);

/* The seed's HELLO: its client id and node id (borrowed, "" outside
 * cluster mode) and flags (bit 0 RF1, bit 1 cluster). */
uint64_t zaris_client_id(const struct zaris *z);
unsigned zaris_server_flags(const struct zaris *z);

/* Reads TOPOLOGY again now (cluster mode; outside it a no-op returning 0),
 * ignoring topology_interval_ms. */
int zaris_refresh_topology(struct zaris *z);

/* Routing, for callers that build one batch per node: the number of nodes
 * Z knows (1 outside cluster mode; in cluster mode every node a topology
 * listed, replicas and former owners included: some may own no slot), and
 * the index (0..count-1) of the node owning KEY's slot now, or
 * ZARIS_E_NOROUTE. A node keeps its index until zaris_close; which node
 * owns a slot changes with the topology. zaris_key_slot: the slot of a
 * key (0..16383), Redis Cluster's. */
int zaris_node_count(const struct zaris *z);
int zaris_key_node(const struct zaris *z, const void *key, size_t klen);
unsigned zaris_key_slot(const void *key, size_t klen);

/* Counters since connect, for tests and benchmarks. */
struct zaris_stats {
	uint64_t requests;	 /* REQUEST frames sent */
	uint64_t ops;		 /* operations sent (retries included) */
	uint64_t moved;		 /* MOVED results followed */
	uint64_t ask;		 /* ASK results followed */
	uint64_t retries;	 /* reads sent again after a lost connection */
	uint64_t connects;	 /* successful connects (the first ones included) */
	uint64_t topology_reads; /* TOPOLOGY reads made by the client itself */
	uint64_t epoch;		 /* the epoch of the slot map in use */
};
void zaris_get_stats(const struct zaris *z, struct zaris_stats *s);

/* --- batches -------------------------------------------------------------- */

struct zaris_batch;

/* A new, empty batch (caller owns: zaris_batch_free), or NULL without
 * memory. */
struct zaris_batch *zaris_batch_new(void);
void zaris_batch_free(struct zaris_batch *b); /* NULL is fine; not while in flight */
/* Drops B's operations and results, keeping its memory for reuse. Not while
 * in flight (ZARIS_E_BUSY). */
int zaris_batch_reset(struct zaris_batch *b);
/* Operations in B. */
size_t zaris_batch_count(const struct zaris_batch *b);
/* The database (0..databases-1) of operations added after this call; a
 * negative DB (a new batch's setting) means the client's options.db. */
void zaris_batch_db(struct zaris_batch *b, int db);

/* Adding: each copies its arguments (the caller's buffers may go right
 * after) and returns the operation's index in B (0, 1, ...) or a negative
 * ZARIS_E_* (NOMEM; INVAL for a batch past 65,535 operations, MGET/MSET of
 * 0 or more than 65,535 keys, COMMAND with argc 0, or B in flight). */
int zaris_add_get(struct zaris_batch *b, const void *key, size_t klen);

#define ZARIS_SET_NX 0x01      /* only if the key does not exist */
#define ZARIS_SET_XX 0x02      /* only if it exists */
#define ZARIS_SET_GET 0x04     /* the result is the old value (bulk or null) */
#define ZARIS_SET_KEEPTTL 0x08 /* keep the key's TTL (ttl_ms must be 0) */

/* Per-key metadata (METAPUT's / METASET's). Lengths may be NULL: then the
 * strings are NUL-terminated. */
struct zaris_meta {
	const char *const *labels;
	const size_t *label_lens;
	size_t nlabels;
	const char *entity;	  /* NULL or "": none */
	size_t entity_len;	  /* with entity != NULL; SIZE_MAX: strlen */
	const char *content_type; /* NULL or "": none */
	size_t content_type_len;  /* as entity_len */
};

struct zaris_set_opts {
	int64_t ttl_ms;		       /* 0: no TTL; > 0: PX ttl_ms */
	unsigned flags;		       /* ZARIS_SET_* */
	const struct zaris_meta *meta; /* non-NULL: the key's whole metadata */
};

/* SET; OPTS NULL is a plain SET. Result: +OK, null when NX/XX did not apply,
 * with GET the old value. */
int zaris_add_set(struct zaris_batch *b, const void *key, size_t klen, const void *val, size_t vlen,
		  const struct zaris_set_opts *opts);
int zaris_add_del(struct zaris_batch *b, const void *key, size_t klen);
int zaris_add_exists(struct zaris_batch *b, const void *key, size_t klen);
int zaris_add_incrby(struct zaris_batch *b, const void *key, size_t klen, int64_t delta);
int zaris_add_getset(struct zaris_batch *b, const void *key, size_t klen, const void *val, size_t vlen);
int zaris_add_getdel(struct zaris_batch *b, const void *key, size_t klen);
/* MGET: KEYS[i], KLENS[i] for i < N; the result is an array of N. */
int zaris_add_mget(struct zaris_batch *b, size_t n, const void *const *keys, const size_t *klens);
/* MSET of N pairs; the result is +OK (cluster: one error of its parts when
 * any failed). */
int zaris_add_mset(struct zaris_batch *b, size_t n, const void *const *keys, const size_t *klens,
		   const void *const *vals, const size_t *vlens);
int zaris_add_pttl(struct zaris_batch *b, const void *key, size_t klen);
int zaris_add_pexpire(struct zaris_batch *b, const void *key, size_t klen, int64_t ttl_ms);
int zaris_add_persist(struct zaris_batch *b, const void *key, size_t klen);
int zaris_add_metaget(struct zaris_batch *b, const void *key, size_t klen);
/* METASET: replaces the key's metadata with META (NULL: clears it). */
int zaris_add_metaset(struct zaris_batch *b, const void *key, size_t klen, const struct zaris_meta *meta);
/* Deletes the keys with LABEL (and ENTITY when elen > 0). The result is
 * always an integer, the count deleted (summed over the primaries in
 * cluster mode, where a node answers METAINVALIDATE's map). */
int zaris_add_invalidate(struct zaris_batch *b, const void *label, size_t llen, const void *entity,
			 size_t elen);
int zaris_add_topology(struct zaris_batch *b);
/* Any command; LENS NULL: the args are NUL-terminated. */
int zaris_add_command(struct zaris_batch *b, int argc, const char *const *argv, const size_t *lens);

/* The result of operation I of a completed batch: NULL when I is out of
 * range or the batch has not completed. value is NULL when status < 0. */
struct zaris_result {
	int status;			 /* ZARIS_S_* (>= 0) or ZARIS_E_* (< 0) */
	const struct zaris_value *value; /* owned by the batch */
};
const struct zaris_result *zaris_batch_result(const struct zaris_batch *b, size_t i);

/* --- running -------------------------------------------------------------- */

/* Sends B and waits for all its results. Returns 0 when every operation got
 * a server answer (each may still be a server error: see its status), else
 * the first client error (ZARIS_E_*), the other operations' results being
 * filled as far as they came. A batch of 0 operations completes at once. */
int zaris_exec(struct zaris *z, struct zaris_batch *b);

/* Pipelining: sends B (routes it, frames and starts writing its requests)
 * without waiting. B is then in flight on Z: the caller must not touch it
 * until zaris_wait or zaris_wait_any returned it. Returns 0, or
 * ZARIS_E_BUSY when B is already in flight. Operations that cannot be sent
 * (no route, node in backoff, connect failed) are answered at once with
 * their client error, which the wait then reports. */
int zaris_send(struct zaris *z, struct zaris_batch *b);

/* Waits until B (in flight on Z) completed: 0 as zaris_exec. Other batches
 * completing meanwhile are kept complete, for their own wait. */
int zaris_wait(struct zaris *z, struct zaris_batch *b);

/* Waits up to TIMEOUT_MS (< 0: as long as it takes, which request
 * timeouts bound) for any batch in flight on Z to complete, oldest
 * completion first. Returns 1 with *DONE the batch and *RC (may be NULL)
 * its result as zaris_exec's; 0 when none completed in time or none is in
 * flight (*DONE NULL). A batch returned here is no longer in flight. */
int zaris_wait_any(struct zaris *z, int timeout_ms, struct zaris_batch **done, int *rc);

/* Waiting on several clients from one thread (an event loop): the
 * descriptors Z waits on. Fills up to MAX entries of FDS (fd and events,
 * revents cleared) and returns how many Z has, which may exceed MAX (FDS
 * then holds the first MAX). Lowers *TIMEOUT_MS (< 0: no limit so far) to
 * when Z has work that no descriptor announces: 0 when a batch has already
 * completed or operations wait to be sent, else the nearest request
 * timeout or topology re-read. When the wait ends (a descriptor ready or
 * the timeout), zaris_wait_any(Z, 0, ...) does Z's I/O and returns what
 * completed; revents need not be handed back. The set changes with every
 * call on Z: take it afresh before each wait. Returns 0 with nothing in
 * flight. */
int zaris_pollfds(const struct zaris *z, struct pollfd *fds, int max, int *timeout_ms);

/* Batches in flight on Z (sent, not yet returned by a wait). */
size_t zaris_in_flight(const struct zaris *z);

/* --- synchronous helpers (each runs one batch internal to Z) --------------- */

/* GET: 1 and *VAL (malloc'd, NUL-terminated, caller frees) / *VLEN when the
 * key exists, 0 (*VAL NULL) when not, or a ZARIS_E_* (a server error is
 * ZARIS_E_SERVER, its text in zaris_errstr). */
int zaris_get(struct zaris *z, const void *key, size_t klen, char **val, size_t *vlen);
/* SET: 1 when set, 0 when NX/XX did not apply, or a ZARIS_E_*. With
 * ZARIS_SET_GET use a batch instead (INVAL here). */
int zaris_set(struct zaris *z, const void *key, size_t klen, const void *val, size_t vlen,
	      const struct zaris_set_opts *opts);
/* INCRBY: 0 and *OUT the new value, or a ZARIS_E_*. */
int zaris_incrby(struct zaris *z, const void *key, size_t klen, int64_t delta, int64_t *out);
/* INVALIDATE (summed over every primary in cluster mode): the count of
 * keys deleted (>= 0), or a ZARIS_E_*. */
int64_t zaris_invalidate(struct zaris *z, const char *label, const char *entity);
/* Any command: 0 and *REPLY (borrowed from Z until its next call) the
 * reply, a server error included (as ZARIS_T_ERROR, with 0 returned), or a
 * ZARIS_E_* for a client error. LENS as zaris_add_command. */
int zaris_command(struct zaris *z, int argc, const char *const *argv, const size_t *lens,
		  const struct zaris_value **reply);

#ifdef __cplusplus
}
#endif

#endif
