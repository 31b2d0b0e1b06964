/* repl_int — what the files of repl/ share (not an API: repl.h is). */
#ifndef ZR_REPL_INT_H
#define ZR_REPL_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "zarisd/persist/load.h"

struct server;
struct stream_consumer;

enum peer_state {
	PEER_SYNC = 0,	 /* full sync: the snapshot is being sent */
	PEER_ONLINE = 1, /* streaming */
};

/* One replica of this server (primary.c). */
struct peer {
	struct repl *r;
	struct peer *next;
	uint64_t id;
	int fd;
	char ip[64];
	int port; /* its listening port */
	pthread_t reader;
	bool reader_started;
	_Atomic int state;	  /* enum peer_state */
	_Atomic bool stop;	  /* ask its threads to end */
	_Atomic uint64_t ack_off; /* the offset it acknowledged */
	_Atomic uint64_t ack_seq; /* the seq it acknowledged */
	_Atomic int64_t ack_ms;	  /* when (wall clock), 0 = never */
	char replid[41];	  /* PSYNC's */
	long long offset;	  /* PSYNC's */
};

/* The link of this server to its primary (replica.c). */
struct link {
	struct repl *r;
	char *host;
	int port;
	pthread_t thread;
	_Atomic bool stop;
	_Atomic int fd; /* -1 when none: repl_replicaof shuts it down to stop */
	_Atomic int up; /* in sync, streaming */
	_Atomic int syncing;
	_Atomic int64_t last_io_ms;
	_Atomic uint64_t sync_bytes;   /* of the snapshot being received */
	_Atomic int64_t down_since_ms; /* wall ms the link last left sync; 0 = never in sync */
};

struct wait_req {
	struct wait_req *next;
	unsigned worker;
	uint64_t client_id;
	uint64_t seq;	  /* the client's last write */
	long long needed; /* replicas */
	int64_t deadline; /* wall ms, 0 = none */
};

struct repl {
	struct server *srv;
	struct load_apply apply;
	unsigned load_threads; /* a full sync's loader threads */
	pthread_mutex_t mu;
	pthread_cond_t cv; /* peers ended (repl_destroy waits) */
	char replid[41], replid2[41];
	long long second_off; /* -1: none */
	struct peer *peers;
	unsigned npeers; /* threads of peers alive */
	uint64_t next_peer_id;
	struct wait_req *waits;
	struct link *link; /* NULL: a primary */
	pthread_t timer;
	bool stopping;
	bool started;  /* repl_start ran: REPLICAOF now comes from a client */
	bool no_timer; /* its thread could not be made */
	/* no history of its own to continue: started empty (no snapshot
	 * origin), never synced, never a primary turned replica; it asks
	 * PSYNC ? -1 as a new Redis replica does. Under mu. */
	bool fresh;
	_Atomic uint64_t sync_full, sync_partial_ok, sync_partial_err;
	/* a replica's records applied in parallel batches and alone (INFO) */
	_Atomic uint64_t applied_batched, applied_alone;
	_Atomic unsigned apply_threads; /* of the link's last session */
};

/* primary.c: the sender thread's body (started by repl_attach). */
void *peer_main(void *arg);
/* repl.c: recomputes repl_acked, the good-replica count and the WAITs
 * after a peer's acknowledgement changed or a peer went. mu not held. */
void repl_acks_changed(struct repl *r);
/* repl.c: a peer's threads ended: unlinks and frees it. */
void repl_peer_gone(struct repl *r, struct peer *p);
/* replica.c */
struct link *link_start(struct repl *r, const char *host, int port);
void link_stop(struct link *l); /* asks it to end, any thread */
void link_join(struct link *l); /* waits for its end and frees it */
/* repl.c: a new random replication id into OUT. */
void repl_new_id(char out[41]);
/* repl.c, the replica's link after a full sync: takes REPLID as its own. */
void repl_take_id(struct repl *r, const char *replid);
/* repl.c, the replica's link: its data no longer follow its stream (a
 * batch failed part-applied), so its next sync must be a full one. */
void repl_forget_history(struct repl *r);
/* repl.c: whether this server has no history to continue (fresh). */
bool repl_fresh(struct repl *r);
/* repl.c: closes every peer's link (they reconnect and resync). */
void repl_drop_peers(struct repl *r);

#endif
