/* etcd_run — the etcd member a supervisor runs for its machine when the
 * file says `etcd = "run"` (coordination): started before the
 * coordinator, restarted after a crash (1 s, doubling to 16 s), stopped
 * last. Its data directory is zconf_etcd_member_dir(); a member whose
 * directory already holds data rejoins (etcd ignores the initial-cluster
 * flags then). Poll loop only.
 */
#ifndef SV_ETCD_RUN_H
#define SV_ETCD_RUN_H

#include "config/zconf.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sv_etcd_run {
	bool enabled;	    /* this supervisor runs a member */
	pid_t pid;	    /* 0 when not running */
	int crashes;	    /* exits in a row, for the backoff */
	int64_t restart_ms; /* when to start it again, 0 none */
	int64_t started_ms;
	char path[256]; /* the etcd binary ($ZARIS_ETCD, else "etcd" on PATH) */
};

/* Sets R up for CONF and starts the member (no-op without `etcd = "run"`
 * or when this machine is not known: then -EINVAL with a message logged).
 * Returns 0, or a negative errno. */
int sv_etcd_run_start(struct sv_etcd_run *r, const struct zconf *conf, int64_t now);
/* PID exited (STATUS from waitpid): true when it was the member, which is
 * then restarted after the backoff. */
bool sv_etcd_run_exited(struct sv_etcd_run *r, pid_t pid, int status, int64_t now);
/* Restarts it when due. */
void sv_etcd_run_tick(struct sv_etcd_run *r, const struct zconf *conf, int64_t now);
/* The next time sv_etcd_run_tick has something to do, or INT64_MAX. */
int64_t sv_etcd_run_next(const struct sv_etcd_run *r);
/* SIGTERM, then SIGKILL after GRACE_MS; waits for it. */
void sv_etcd_run_stop(struct sv_etcd_run *r, int grace_ms);

#endif
