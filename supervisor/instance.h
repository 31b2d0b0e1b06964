/* instance — one supervised zarisd: its process, its health and its state
 * machine. Every change of state goes through sv_instance_event(), which
 * looks up what EVENT does in the current state in one [state][event] table
 * (s6-supervise's design) — no other code assigns `state`.
 *
 *   down --start--> starting --health ok--> up --health fail--> unhealthy
 *   unhealthy --N fails--> stopping --exit--> backoff/crash-loop --timer--> starting
 *   any running state --exit (unexpected)--> backoff (crash-loop after
 *   crash-loop-restarts crashes in a row) --timer--> starting
 *   stopping --timer (grace over)--> SIGKILL
 *
 * Owned and driven by the supervisor's poll loop (single-threaded). Times
 * are monotonic milliseconds.
 */
#ifndef SV_INSTANCE_H
#define SV_INSTANCE_H

#include "config/zconf.h"
#include "supervisor/health.h"
#include "supervisor/topology.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum sv_state {
	SV_DOWN,      /* not running and not wanted (stopped, or never started) */
	SV_STARTING,  /* spawned, has not answered PING yet */
	SV_UP,	      /* answered the last health check */
	SV_UNHEALTHY, /* running, last check(s) failed, fewer than health-failures */
	SV_STOPPING,  /* SIGTERM sent, waiting for it to exit (SIGKILL at the timer) */
	SV_BACKOFF,   /* exited unexpectedly, restarts when the timer fires */
	SV_CRASHLOOP, /* as BACKOFF, after crash-loop-restarts crashes in a row */
	SV__NSTATES
};

enum sv_event {
	SV_EV_START,	   /* the operator or a reload wants it up */
	SV_EV_STOP,	   /* the operator, a reload or shutdown wants it down */
	SV_EV_RESTART,	   /* stop (cleanly) and start again */
	SV_EV_EXIT,	   /* the child exited (status in exit_status) */
	SV_EV_HEALTH_OK,   /* a health check passed */
	SV_EV_HEALTH_FAIL, /* a health check failed (reason in last_error) */
	SV_EV_TIMER,	   /* the state's deadline (timer_ms) passed */
	SV__NEVENTS
};

/* The live changes a health check can carry: the zarisd settings of the
 * cluster file (CONFIG SET, indexed by enum zconf_key), then the two that
 * follow the node's place in replication: masterauth (CONFIG SET, the
 * primary's password) and the primary itself (REPLICAOF "HOST PORT", or
 * "NO ONE" for a primary), sent in this order, after AUTH. */
enum {
	SV_SET_MASTERAUTH = ZCONF_K__COUNT,
	SV_SET_REPLICAOF,
	SV_SET__COUNT
};

/* What an instance needs from the supervisor to act. */
struct sv_params {
	const struct zconf *conf;	/* current configuration */
	const char *zarisd;		/* path of the zarisd binary */
	const struct sv_topology *topo; /* cluster mode when topo->enabled */
};

/* An instance's topology as its checks see it (cluster mode). */
struct sv_topo_view {
	bool synced;	      /* its CLUSTER TOPOLOGY is the document it should have */
	long long epoch;      /* the epoch it reported, -1 none or not known */
	long long ahead;      /* an epoch it has that is not older than ours with another layout: the
			       * supervisor must pass it (sv_topology_pass); 0 when none */
	int pushes;	      /* pushes answered +OK */
	char push_error[200]; /* its last refusal of a push, "" when none */
};

struct sv_instance {
	char *name; /* == the node's name, owned */
	enum sv_state state;
	pid_t pid;			  /* 0 when no process */
	bool want_up;			  /* after the current stop, start again */
	bool stop_is_failure;		  /* the current stop counts as a crash */
	bool removed;			  /* dropped by a reload: freed once down */
	bool loading;			  /* up, and its last check was answered -LOADING */
	int64_t timer_ms;		  /* deadline of the state, 0 = none */
	int64_t started_ms;		  /* last spawn */
	int64_t up_since_ms;		  /* entered UP (0 when not up) */
	int64_t next_check_ms;		  /* next health check */
	int restarts;			  /* spawns after the first */
	int crashes;			  /* unexpected exits in a row */
	int health_fails;		  /* failed checks in a row */
	int exit_status;		  /* last wait status (for SV_EV_EXIT) */
	char last_error[256];		  /* latest problem, "" when none */
	char *password;			  /* requirepass the process runs with, or NULL */
	char *pending_set[SV_SET__COUNT]; /* live changes to send with the next check */
	char *sent_set[SV_SET__COUNT];	  /* live changes the check in flight carries */
	struct sv_health check;		  /* the exchange in flight */
	struct sv_info info;		  /* from the last good INFO */
	struct sv_topo_view topo;	  /* cluster mode */
	/* coordination: the write lease its zarisd may hold until (monotonic
	 * ms, sent with every check as CLUSTER LEASE; 0 fenced), -1 when off */
	int64_t lease_until_ms;
	int64_t lease_sent_ms;	  /* what the check in flight carries */
	int64_t lease_applied_ms; /* what the last passed check carried (its INFO is after it), -1 none */
	int64_t last_ok_ms;	  /* its last passed check, 0 never */
	int64_t link_up_ms;	  /* last time its INFO showed the link in sync */
};

/* A new instance for node NAME, in SV_DOWN. Never NULL (aborts on OOM). */
struct sv_instance *sv_instance_new(const char *name);
/* Frees I (must be down: no process). */
void sv_instance_free(struct sv_instance *i);

/* Feeds EVENT to I at NOW: runs the table's action for its state. */
void sv_instance_event(struct sv_instance *i, enum sv_event event, const struct sv_params *p, int64_t now);

/* Health checks: starts one when due and none is in flight (returns true
 * when one was started), and turns a finished one into HEALTH_OK/FAIL. */
bool sv_instance_check_start(struct sv_instance *i, const struct sv_params *p, int64_t now);
void sv_instance_check_done(struct sv_instance *i, const struct sv_params *p, int64_t now);

/* Queues live change K (an enum zconf_key or SV_SET_*) with VALUE for the
 * next health check, which is made due now; replaces one queued before. */
void sv_instance_queue_set(struct sv_instance *i, int k, const char *value);
/* Name of live change K in messages ("maxmemory", "masterauth", "replicaof"). */
const char *sv_set_name(int k);

/* Whether the process runs (a pid we have not reaped). */
bool sv_instance_is_running(const struct sv_instance *i);

const char *sv_state_name(enum sv_state s);
/* Restart delay after the CRASHES-th crash in a row: backoff-min doubled
 * each time, capped at backoff-max. */
int64_t sv_backoff_ms(const struct zconf_supervisor *t, int crashes);

#endif
