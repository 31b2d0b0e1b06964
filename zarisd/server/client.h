/* client — the per-connection state that command handlers see.
 *
 * A client belongs to exactly one worker thread (the one whose listener
 * accepted it) for its whole life; only that thread touches it, except the
 * fields marked "shared", which other workers read for CLIENT LIST / INFO /
 * CLIENT KILL (relaxed atomics, or under the owning worker's client-list
 * lock for the name).
 */
#ifndef ZR_CLIENT_H
#define ZR_CLIENT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "zarisd/proto/reply.h"
#include "zarisd/proto/resp.h"

struct server;
struct command;
struct worker_stats;

enum client_flag {
	CLIENT_AUTHENTICATED = 1u << 0,
	CLIENT_CLOSE_AFTER_REPLY = 1u << 1, /* QUIT, protocol errors: close once out is sent */
	CLIENT_REPLY_OFF = 1u << 2,	    /* CLIENT REPLY OFF */
	CLIENT_REPLY_SKIP_NEXT = 1u << 3,   /* CLIENT REPLY SKIP: mute the next command */
	CLIENT_REPLY_SKIP = 1u << 4,	    /* muting the current command */
	CLIENT_NO_EVICT = 1u << 5,
	CLIENT_PROTECTED = 1u << 6, /* protected mode: answer DENIED and close */
	CLIENT_LOOPBACK = 1u << 7,  /* peer address is loopback or unix */
	CLIENT_IN_EXEC = 1u << 8,   /* running EXEC's queued commands: blocking commands do not block */
	CLIENT_IN_MULTI = 1u << 9,  /* between MULTI and EXEC/DISCARD (CLIENT LIST flag x) */
	CLIENT_BLOCKED = 1u << 10,  /* blocked on keys (commands/blocking.h): run no further request */
	CLIENT_HANDED_OFF =
		1u << 11, /* PSYNC: its socket now belongs to replication; close, never shut down */
	CLIENT_CLUSTER_READONLY = 1u << 12, /* READONLY: a replica serves its reads (cluster mode) */
	CLIENT_ASKING = 1u << 13,	    /* ASKING: the next command may use an importing slot */
	CLIENT_SAME_HOST = 1u << 14,	    /* peer address is the socket's own address (this machine) */
	CLIENT_REPLAY =
		1u
		<< 15, /* the replay applier's: a record runs as it first did (no FUNCTION LOAD time limit) */
	/* native-rf1: one copy, nobody reads the change stream (no log, no
	 * replica, both refused while it is on), so this client's writes are
	 * not even numbered there (commands/propagate.c) */
	CLIENT_NO_JOURNAL = 1u << 16,
	/* a script's writes after redis.set_repl(REPL_AOF / REPL_REPLICA):
	 * their records are for the log only / for replicas only
	 * (JR_TAIL_DEST); REPL_NONE is CLIENT_NO_JOURNAL */
	CLIENT_JOURNAL_LOG_ONLY = 1u << 17,
	CLIENT_JOURNAL_REPLICAS_ONLY = 1u << 18,
	/* the running command's handler answered -BUSY in its place (a wait
	 * for a busy script's shard given up: dispatch_refuse_busy_here): a
	 * rejected call, not a call */
	CLIENT_REFUSED_BUSY = 1u << 19,
};

struct client {
	uint64_t id;		    /* CLIENT ID: unique for the process's life */
	struct server *srv;	    /* shared server state (store, settings, registry) */
	struct worker_stats *stats; /* the owning worker's counters */
	unsigned worker;	    /* owning worker's index */
	void *conn;		    /* owning connection (net layer), opaque here */

	struct obuf out;       /* pending replies */
	struct resp_arg *argv; /* current command's arguments (borrowed from the parser) */
	int argc;
	const struct command *cmd; /* row being executed (subcommand row for containers) */
	int64_t now_ms;		   /* wall clock sampled once per command: one instant for TTL checks */
	/* The command clock (zr_clock_us) read when the last command this
	 * client ran was done, and whether the next command may start from it
	 * instead of reading the clock again: the connection layer allows it
	 * between the requests of one batch, where one's end is the next's
	 * start (the dispatcher clears it, so it never outlives one request). */
	int64_t clock_end_us;
	bool clock_chained;

	unsigned db;	  /* selected database */
	uint32_t flags;	  /* enum client_flag */
	int64_t ctime_ms; /* connect time */

	/* shared: read by other workers for CLIENT LIST / KILL */
	_Atomic int64_t last_interaction_ms;
	_Atomic(const struct command *) last_cmd;
	_Atomic unsigned shared_db;
	_Atomic bool kill_requested;
	_Atomic uint64_t shared_qbuf; /* query buffer bytes, published once per loop turn */
	_Atomic uint64_t shared_omem; /* output buffer bytes held */
	_Atomic uint64_t shared_tot_net_in;
	_Atomic uint64_t shared_tot_net_out;
	_Atomic uint64_t shared_tot_cmds;
	_Atomic int shared_flags;	    /* copy of flags for CLIENT LIST (N, x...) */
	_Atomic int shared_resp;	    /* copy of resp */
	struct client *reg_next, *reg_prev; /* registry list, under the worker's lock */
	struct client *reg_hnext;	    /* registry id index chain (owning worker only) */
	char *name;			    /* CLIENT SETNAME; guarded by the worker's client-list lock */
	char addr[64];			    /* "ip:port" of the peer */
	char laddr[64];			    /* "ip:port" of our end */
	int fd;
	uint8_t resp; /* 2 or 3, mirrored in out.resp */
	/* appendfsync always: the replies queued so far may be sent only once
	 * srv->journal_durable >= journal_seq (0 = nothing to wait for) */
	uint64_t journal_seq;
	/* replica-ack: the replies queued so far may be sent only once
	 * srv->repl_acked >= repl_seq (0 = nothing to wait for) */
	uint64_t repl_seq;
	uint64_t last_write_seq; /* seq of this client's last record (WAIT waits for it) */
	int repl_listen_port;	 /* REPLCONF listening-port of a replica's handshake */
	/* store_hash() of argv[key_hash_argi], computed by the dispatcher to
	 * pick the shard; valid while argv == key_hash_argv (cmd_key_hash) */
	uint64_t key_hash;
	const struct resp_arg *key_hash_argv;
	int key_hash_argi;
	struct multi_state *multi;   /* MULTI..EXEC queue, NULL outside a transaction */
	struct watch_state *watched; /* WATCHed keys, NULL when none */
};

#endif
