/* failover — the poll loop's side of coordination through etcd (the
 * coordinator's thread and the protocol are coord.h): observations in,
 * recorded primaries, topology epoch and write leases out. Poll loop only.
 */
#ifndef SV_FAILOVER_H
#define SV_FAILOVER_H

#include "supervisor/supervisor.h"

#include <stdbool.h>

/* Starts the coordinator when the file has a coordination section (the
 * instances must exist: each starts fenced). Returns 0, or -1 (logged)
 * when it cannot start. */
int sv_failover_start(struct sv *s);
/* Stops it; RELEASE revokes the session so the replicas elect at once. */
void sv_failover_stop(struct sv *s, bool release);
/* Applies the primaries etcd recorded to CONF (a reloaded file), so a
 * reload compares like with like. */
void sv_failover_apply_conf(struct sv *s, struct zconf *conf);
/* zarisctl failover SHARD [TARGET] [force]: asks the coordinator; CONN_ID
 * gets the result once the view shows the new primary (or the time is up:
 * catch-up-timeout + lease-ttl). Returns 0, or -1 with the reason in WHY
 * (no coordination, unknown shard or target, one already running). */
int sv_failover_request(struct sv *s, const char *shard, const char *target, bool force, uint64_t conn_id,
			int64_t now, char *why, size_t whysize);
/* The shard instance NAME leads from here (coordination), or NULL: a
 * rolling restart hands that shard over first. */
const char *sv_failover_led_shard(const struct sv *s, const char *name);
/* Every loop iteration: observations to the coordinator, its view to the
 * instances. */
void sv_failover_step(struct sv *s, int64_t now);

#endif
