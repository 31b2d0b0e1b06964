/* server — the state every command handler may reach through c->srv:
 * the keyspace, the settings, the client registry and the per-worker
 * counters. Created by main before the workers start; the pointers in it
 * never change afterwards (the objects they point to synchronize
 * themselves).
 */
#ifndef ZR_SERVER_H
#define ZR_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct store;
struct settings;
struct registry;
struct worker_stats;
struct slowlog;
struct client;
struct msgq;
struct persist;
struct stream;
struct repl;
struct cluster;

/* What SHUTDOWN asked for the final save (srv->shutdown_save). */
enum server_shutdown_save {
	SERVER_SHUTDOWN_DEFAULT = 0, /* save when save rules are set (SIGTERM, bare SHUTDOWN) */
	SERVER_SHUTDOWN_NOSAVE = 1,
	SERVER_SHUTDOWN_SAVE = 2,
};

enum pause_mode {
	PAUSE_NONE = 0,
	PAUSE_WRITE = 1, /* CLIENT PAUSE ms WRITE: writes wait */
	PAUSE_ALL = 2,	 /* CLIENT PAUSE ms [ALL]: every command waits */
};

struct server {
	struct store *store;
	struct settings *cfg;
	struct registry *clients;     /* every connection, grouped by worker */
	struct worker_stats **wstats; /* [nworkers], each written only by its worker */
	struct slowlog *slowlog;
	struct msgq *msgq; /* each worker's message queue (net/msgq.h) */
	/* Posts work for a client of any worker (server_post); the network
	 * layer's msgq_post, set by main before the workers start. */
	void (*post)(struct server *srv, unsigned worker, uint64_t client_id,
		     void (*fn)(struct client *c, void *arg), void *arg);
	struct persist *persist; /* snapshots and the append-only log (persist.h); NULL in unit tests */
	struct stream *stream;	 /* the change stream (journal/stream.h); NULL in unit tests */
	struct repl *repl;	 /* replication (repl/repl.h); NULL in unit tests */
	struct cluster *cluster; /* cluster/cluster.h; NULL unless cluster-enabled */
	unsigned nworkers;
	int64_t start_ms; /* wall clock at start */
	int64_t start_mono_us;
	char run_id[41];
	const char *executable;
	const char *config_file; /* NULL when started without --config */
	const char *io_backend;	 /* "io_uring" or "epoll", what the workers run */

	/* Runs one parsed request of a client (dispatch_command for zarisd; a
	 * canned responder for the bench floor). Returns enum dispatch_result. */
	int (*execute)(struct client *c);
	/* Samples the counters for INFO's instantaneous rates (info_sample,
	 * set by main and by the bench floor; NULL: no samples). Called by
	 * worker 0's timer only. */
	void (*cron_sample)(struct server *srv);

	/* Serves, once, the other clients of C's worker while C runs a script
	 * past busy-reply-threshold (worker.h, worker_serve_others); set by
	 * the network layer (NULL in unit tests). C's thread. */
	void (*serve_others)(struct client *c);
	/* Wakes worker W's event loop so it looks at shutdown / kill / pause
	 * requests; set by the network layer, callable from any thread. */
	void (*wake)(void *ctx, unsigned worker);
	void *wake_ctx;
	pthread_rwlock_t wake_lock; /* guards wake and wake_ctx (see server_wake) */

	_Atomic int shutdown; /* 1 once SHUTDOWN or a signal asked to stop */
	/* Journal sequence known to be on disk. The persistence module raises
	 * it (release) after each group fsync and then wakes every worker;
	 * replies of clients whose journal_seq is above it are held back. */
	_Atomic uint64_t journal_durable;
	/* Replication's view for the dispatcher and the workers, written by
	 * repl/ (relaxed unless said): */
	_Atomic int repl_replica;	/* 1: this server is a replica (REPLICAOF host port) */
	_Atomic int repl_link_up;	/* a replica's link to its primary is up and in sync */
	_Atomic int repl_loading;	/* a replica loads a full sync: -LOADING */
	_Atomic int repl_good_replicas; /* replicas acked within min-replicas-max-lag */
	/* replica-ack: the highest seq that replica-ack replicas have applied
	 * (release, then the workers are woken); replies of clients whose
	 * repl_seq is above it are held back */
	_Atomic uint64_t repl_acked;
	_Atomic uint64_t next_client_id;
	_Atomic int64_t pause_end_ms;	/* CLIENT PAUSE: until when */
	_Atomic int pause_mode;		/* enum pause_mode */
	_Atomic int64_t lastsave;	/* unix seconds of the last save */
	_Atomic uint64_t stat_reset_ms; /* CONFIG RESETSTAT time */
	_Atomic int shutdown_save;	/* enum server_shutdown_save, set by SHUTDOWN */

	/* write-lease yes: a primary accepts writes only until
	 * write_lease_until_ms, an absolute CLOCK_MONOTONIC time its
	 * supervisor sets with CLUSTER LEASE (0 at start: fenced). Relaxed:
	 * the deadline publishes no other data, and each reader compares it
	 * with its own clock read; a new value is seen by the next command
	 * of any worker. The counters are INFO's, bumped only on the fenced
	 * (rare) path, so one shared word each is cheap enough. */
	bool write_lease; /* the setting, copied at start (start-up only) */
	_Atomic int64_t write_lease_until_ms;
	_Atomic bool write_lease_ever; /* a lease in the future was set since start: replicas are served */
	_Atomic uint64_t write_lease_refused;	   /* write commands refused while fenced */
	_Atomic uint64_t write_lease_acks_dropped; /* conns whose held write replies were dropped */
};

/* A write refused while fenced. CLUSTERDOWN makes cluster clients re-read
 * the slots and retry, by then against the new primary. */
#define SERVER_ERR_FENCED \
	"CLUSTERDOWN write lease lapsed: this node is fenced until its supervisor confirms its leadership"

/* A function run on a client's own worker (server_post). C is NULL when
 * the client has gone since the post: the function must still release
 * ARG. */
typedef void (*mail_fn)(struct client *c, void *arg);

/* Queues FN(client CLIENT_ID, ARG) to run on WORKER, the client's owner,
 * and wakes it. Any thread; takes only that worker's queue mutex
 * (callable with shard locks held). Messages one thread posts to one
 * worker run in the order posted. */
static inline void server_post(struct server *srv, unsigned worker, uint64_t client_id, mail_fn fn, void *arg)
{
	srv->post(srv, worker, client_id, fn, arg);
}

/* The write lease's remaining milliseconds: -1 when write-lease is off, 0
 * when it has lapsed (or was never given). Any thread; one
 * clock_gettime(CLOCK_MONOTONIC) (the vDSO: no system call). */
int64_t server_write_lease_remaining(struct server *srv);
/* Whether writes are refused now: write-lease yes and no lease in force. */
static inline bool server_fenced(struct server *srv)
{
	return srv->write_lease && server_write_lease_remaining(srv) == 0;
}

/* Asks every worker to stop after their current loop turn. Any thread. */
void server_request_shutdown(struct server *srv);
/* Pushes the settings the keyspace keeps its own copy of (eviction policy
 * and samples, LFU parameters) into srv->store; at start-up and after
 * every CONFIG SET. Any thread. */
void server_settings_changed(struct server *srv);
/* Wakes worker W's loop if the workers run (srv->wake set). Any thread:
 * holds wake_lock for reading, so the network layer can take the wake
 * function away (write lock) before it closes the workers' event fds. */
void server_wake(struct server *srv, unsigned worker);
/* Wakes every worker (after changing shared state they must notice). */
void server_wake_all(struct server *srv);
/* The append-only log's durability callback (CTX: the server): publishes
 * SEQ as journal_durable (release: a worker that sees it and sends a held
 * reply also sees the log's I/O done), then wakes every worker. */
void server_publish_durable(void *ctx, uint64_t seq);

#endif
