/* supervisor — the state of one zaris-supervisor: the configuration in
 * force, the local instances, the serial restart job (rolling restarts and
 * the restarts a reload needs), readiness and the status it reports. The
 * poll loop in main.c drives it; everything here runs on that one thread.
 *
 * Reload = load and validate the file into a new struct zconf; if that
 * fails nothing changes except config_error (shown in status and STATUS=).
 * Otherwise the difference is applied: removed instances stop, new ones
 * start, instances whose restart-only settings changed are queued on the
 * restart job (one at a time, each up again before the next), and settings
 * zarisd can change live are sent with CONFIG SET on the next health check.
 * In cluster mode a reload that moves a slot to another primary is refused
 * (slot moves come later); one that changes addresses raises the topology
 * epoch and every instance is pushed the new document (topology.h).
 */
#ifndef SV_SUPERVISOR_H
#define SV_SUPERVISOR_H

#include "config/zconf.h"
#include "supervisor/control.h"
#include "supervisor/coord.h"
#include "supervisor/etcd_run.h"
#include "supervisor/instance.h"
#include "supervisor/notify.h"
#include "supervisor/topology.h"

#include <stdbool.h>
#include <stdint.h>

#define SV_MAX_INSTANCES 64

/* The serial restart queue. Invariant: at most one instance of the queue is
 * being restarted at a time (step_started), and a step starts only when
 * every other wanted instance is up, so two are never down at once by our
 * doing. Replicas go first (the deepest of a chain first), then primaries,
 * each group in file order; a restarted replica's step ends only once it
 * has caught up with its primary (link up, within catch-up-lag bytes), so
 * a primary is restarted while its replicas hold its data. */
struct sv_job {
	char *names[SV_MAX_INSTANCES]; /* instances still to restart, in order */
	size_t n;
	size_t done, total;  /* progress for the messages */
	bool step_started;   /* names[0] has been told to restart */
	bool catching_up;    /* names[0] is up again; waiting for it to catch up */
	pid_t old_pid;	     /* its pid before the restart */
	int64_t deadline_ms; /* the current step (or the wait before it) fails after */
	uint64_t conn_id;    /* control connection to report to, 0 = none */
	bool conn_json;
	bool reload_ready; /* send READY=1 when the queue empties */
};

struct sv {
	struct zconf *conf; /* in force; never NULL after sv_init */
	char *config_path;
	char *node_list; /* --node, or NULL for auto */
	char *zarisd;
	struct sv_instance *inst[SV_MAX_INSTANCES];
	size_t n_inst;
	struct sv_job job;
	struct sv_topology topo; /* cluster mode: the document pushed and its epoch */
	struct sv_notify notify;
	struct sv_control control;
	bool ready_sent;	/* READY=1 was sent for start-up */
	bool stopping;		/* SIGTERM received */
	char config_error[700]; /* last failed reload, "" when none */
	int64_t started_ms;
	int64_t loaded_ms;	 /* when the configuration in force was loaded */
	struct sv_coord *coord;	 /* coordination through etcd, NULL when off (failover.h) */
	struct sv_etcd_run etcd; /* the etcd member this supervisor runs (etcd = "run") */
	struct {		 /* a zarisctl failover waiting for its result */
		bool active;
		char shard[SV_COORD_NAME], target[SV_COORD_NAME], old[SV_COORD_NAME];
		uint64_t conn_id;
		int64_t start_ms, deadline_ms;
	} sw;
	struct sv_coord_view coord_view; /* its last view the loop applied */
	unsigned long coord_gen;	 /* that view's generation */
};

/* Loads the configuration and prepares S (instances created, not started).
 * Returns 0, or the zconf_load error (ERR filled in). */
int sv_init(struct sv *s, const char *config_path, const char *node_list, const char *zarisd, int64_t now,
	    struct zconf_error *err);
void sv_fini(struct sv *s);

/* The parameters instances act with. */
struct sv_params sv_params(const struct sv *s);
/* Instance called NAME, or NULL. */
struct sv_instance *sv_find(struct sv *s, const char *name);
/* Sends EVENT to instance I. */
void sv_event(struct sv *s, struct sv_instance *i, enum sv_event event, int64_t now);

/* Reloads the file (see the file comment). Returns 0, or -EINVAL when the
 * file is invalid (S unchanged, config_error set, logged). CONN_ID, when
 * not 0, receives the progress of the restarts it causes. */
int sv_reload(struct sv *s, int64_t now, uint64_t conn_id, bool json);

/* Queues NAMES (all instances when N is 0) on the restart job, replicas
 * before primaries (see struct sv_job). Returns -EBUSY when a job is
 * already running for another client. */
int sv_job_queue(struct sv *s, const char *const *names, size_t n, uint64_t conn_id, bool json, int64_t now);
/* Advances the job; call every loop iteration. */
void sv_job_step(struct sv *s, int64_t now);

/* Frees removed instances that are down; refreshes STATUS= and sends
 * READY=1 when due. Call every loop iteration. */
void sv_housekeeping(struct sv *s, int64_t now);
/* Whether every instance that should be up answers health checks. */
bool sv_all_up(const struct sv *s);
/* Whether no instance has a process (shutdown may finish). */
bool sv_all_down(const struct sv *s);

/* Replication as the instances' last INFO shows it (replication.c). */
/* Whether I's INFO says it is a replica (role:slave); false when unknown. */
bool sv_is_replica(const struct sv_instance *i);
/* The local instance I replicates from by its INFO (the node whose address
 * and port are its master_host and master_port), or NULL. */
struct sv_instance *sv_primary_of(struct sv *s, const struct sv_instance *i);
/* The node of the file at I's master_host:master_port, or NULL. */
const struct zconf_node *sv_primary_node(const struct sv *s, const struct sv_instance *i);
/* Whether I replicates from where the file says (a replica of its
 * replica-of's address and port), or is a primary as declared. False when
 * its INFO is not known. */
bool sv_role_as_declared(const struct sv *s, const struct sv_instance *i);
/* How far replica I is behind its primary in bytes: the primary's
 * master_repl_offset minus I's slave_repl_offset, both from their last
 * health checks (up to a health-interval apart, so it is at least 0 here).
 * -1 when not known: I is not a replica by its INFO, or its primary is not
 * a local instance with an answered INFO. */
long long sv_replica_lag(struct sv *s, const struct sv_instance *i);

/* status.c: writes the status table (or JSON) as data lines to CONN. */
void sv_status_write(struct sv *s, struct sv_conn *conn, int64_t now);
/* One-line summary for STATUS= ("2/2 up" ...). */
void sv_status_summary(const struct sv *s, char *buf, size_t size);

#endif
