/* stats — per-worker counters, declared once and summed for INFO.
 *
 * Each worker owns one struct worker_stats and is its only writer; INFO on
 * any worker reads all of them. Fields are relaxed atomics: a reader needs
 * no ordering with anything, only untorn values, and on x86-64 a relaxed
 * load+store costs what a plain increment does. (memcached's
 * THREAD_STATS_FIELDS habit.)
 */
#ifndef ZR_STATS_H
#define ZR_STATS_H

#include <stdatomic.h>
#include <stdint.h>

struct info_errtable;

#define WORKER_STATS_FIELDS(X)                                                    \
	X(commands_processed)	/* commands executed on this worker */            \
	X(connections_received) /* connections accepted */                        \
	X(rejected_connections) /* refused by maxclients */                       \
	X(connected_clients)	/* currently open (gauge) */                      \
	X(net_input_bytes)                                                        \
	X(net_output_bytes)                                                       \
	X(errorstat_total) /* error replies sent */                               \
	X(unexpected_error_replies)                                               \
	X(total_reads)	/* recv completions */                                    \
	X(total_writes) /* send submissions */                                    \
	X(loop_iterations)                                                        \
	X(client_query_buffer_limit_disconnections)                               \
	X(client_output_buffer_limit_disconnections)                              \
	X(protocol_errors)                                                        \
	X(native_protocol_errors) /* native connections closed for a violation */ \
	X(native_connections)	  /* native connections accepted */               \
	X(native_requests)	  /* native REQUEST frames run */                 \
	X(native_ops)		  /* operations in them */                        \
	X(expire_cycle_us)	  /* time spent in active expiry */

/* Per-command counters, indexed by struct command.id. */
struct cmd_stat {
	_Atomic uint64_t calls;
	_Atomic uint64_t usec;
	_Atomic uint64_t rejected_calls; /* refused before running (arity, auth, OOM) */
	_Atomic uint64_t failed_calls;	 /* ran and replied an error */
};

struct worker_stats {
#define WORKER_STATS_DECLARE(name) _Atomic uint64_t name;
	WORKER_STATS_FIELDS(WORKER_STATS_DECLARE)
#undef WORKER_STATS_DECLARE
	struct cmd_stat *cmd; /* [command_table_size()] */
	/* INFO errorstats: this worker's counts by error code (info.h);
	 * NULL in a worker_stats that INFO does not read */
	struct info_errtable *errors;
	/* failed_calls (dispatch.c), the owner's alone: error replies of any
	 * kind (counted or reply_error_nostats), and their number when the
	 * running command started or the last command nested in it ended
	 * (Redis's prev_err_count) */
	uint64_t error_events, error_mark;
	unsigned worker;
	/* The request this worker is executing: the first 16 bytes of its
	 * name (NUL padded), running[0] 0 between requests. Written by the
	 * worker around each request (main.c), read by the main thread when a
	 * worker does not stop at shutdown, to name what it is busy with. */
	_Atomic uint64_t running[2];
};

/* Adds N to a counter; only the owning worker calls these. */
#define STAT_ADD(ws, field, n)                                                                          \
	atomic_store_explicit(&(ws)->field,                                                             \
			      atomic_load_explicit(&(ws)->field, memory_order_relaxed) + (uint64_t)(n), \
			      memory_order_relaxed)
#define STAT_INC(ws, field) STAT_ADD(ws, field, 1)
#define STAT_GET(ws, field) atomic_load_explicit(&(ws)->field, memory_order_relaxed)

#endif
