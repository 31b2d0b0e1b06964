/* coord — failover through etcd (DESIGN.md §8.4): which instance of each
 * shard is its primary, decided in etcd, and the write leases that fence
 * the local primaries.
 *
 * A shard is named by the primary the file declares for it; its members
 * are that node and its replicas. The keys, under "<prefix>/<cluster>/":
 *   epoch                     the cluster's topology epoch (decimal)
 *   shard/<s>/primary         the node that is the shard's primary
 *   shard/<s>/leader          the same node while its supervisor leads,
 *                             attached to that supervisor's session lease
 *   shard/<s>/cand/<node>     "<epoch> <offset>": a candidate in an
 *                             election, attached to its supervisor's lease
 *   shard/<s>/led             "1" once the shard has had a leader: from then
 *                             on a recorded primary restarted empty (no
 *                             persistence, offset 0) is no candidate
 *   shard/<s>/switchover      "<target|-> <force>": zarisctl failover
 *   shard/<s>/handover        "<target> <offset> <force>": see below
 *
 * One session lease per supervisor (lease-ttl), kept alive every third of
 * its TTL. A leader's instance may acknowledge writes until the send time
 * of the last successful keepalive + TTL - margin (margin a quarter of the
 * TTL): etcd starts the TTL when it receives the keepalive, which is after
 * we sent it, so the instance is fenced before etcd can let the lease
 * expire (Patroni's rule), and only monotonic clocks are compared. The
 * grant reaches zarisd as CLUSTER LEASE <until> (CLOCK_MONOTONIC ms, the
 * machine's clock both processes read). A leader whose instance exited,
 * restarted or failed its checks for half a TTL releases the key at once.
 *
 * Election, when a shard has no leader key: every supervisor publishes its
 * running members of the shard as candidates with their replication
 * offsets (a replica only if its link to the primary was up within
 * replica-validity + lease-ttl); after a window of 500 ms the
 * best candidate (highest offset; the recorded primary, then the smaller
 * name on ties) is taken by its own supervisor in one transaction: leader
 * key absent and epoch unchanged -> leader, primary and epoch + 1. The
 * topology is then rebuilt from the file with each shard's recorded
 * primary, at etcd's epoch, by every supervisor.
 *
 * Planned switchover (zarisctl failover SHARD [TO NODE] [--force]): the
 * request becomes shard/<s>/switchover = "<target|-> <force>"; the leader's
 * supervisor fences its instance (CLUSTER LEASE 0), and once a check
 * confirmed that and read its final offset O, replaces its leader key
 * with shard/<s>/handover = "<target> <O> <force>" in one transaction.
 * Only the target stands then: its supervisor takes the lead once the
 * target has applied O (every record; --force: at once), epoch + 1. A
 * handover nobody takes within catch-up-timeout is dropped by the old
 * leader's supervisor and an ordinary election follows. A forced
 * switchover of a shard without a leader (no candidate was eligible) is
 * taken by the target's supervisor as it stands.
 *
 * Threads: the etcd calls block (bounded by short timeouts), so they run on
 * the coordinator's own thread. The poll loop exchanges state with it only
 * through sv_coord_observe() and sv_coord_view(), under the module's mutex.
 */
#ifndef SV_COORD_H
#define SV_COORD_H

#include "config/zconf.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_COORD_MAX_SHARDS 64
#define SV_COORD_MAX_MEMBERS 8
#define SV_COORD_NAME 64

struct sv_coord;

/* What the poll loop saw of one local instance at its last check. */
struct sv_coord_obs {
	char name[SV_COORD_NAME];
	pid_t pid;		  /* 0 when not running */
	bool up;		  /* answered its last health check */
	int64_t last_ok_ms;	  /* its last answered check, 0 never */
	bool is_primary;	  /* INFO role:master */
	long long offset;	  /* master_repl_offset (primary) or slave_repl_offset */
	bool syncing;		  /* a full sync in progress */
	int64_t link_up_ms;	  /* last check that saw its master link up, 0 never */
	int64_t lease_applied_ms; /* the lease its last passed check set (its INFO came after), -1 none */
};

/* One shard as etcd says it. */
struct sv_coord_shard {
	char name[SV_COORD_NAME];    /* the declared primary */
	char primary[SV_COORD_NAME]; /* recorded primary, "" unknown */
	char leader[SV_COORD_NAME];  /* leader key's value, "" none */
	bool leader_here;	     /* held by this supervisor's session */
	long long leader_ttl;	     /* -1 unknown */
};

/* The decisions for the poll loop. */
struct sv_coord_view {
	bool etcd_ok;	      /* the last read of etcd succeeded */
	char etcd_error[240]; /* why not, "" when ok */
	long long epoch;      /* etcd's epoch, 0 before the first read */
	int64_t session;      /* this supervisor's lease id, 0 none */
	size_t n_shards;
	struct sv_coord_shard shard[SV_COORD_MAX_SHARDS];
	/* per local instance (by name, the order sv_coord_observe was given):
	 * the write lease its zarisd may hold until (monotonic ms; 0 = fenced) */
	size_t n_grants;
	struct {
		char name[SV_COORD_NAME];
		int64_t until_ms;
	} grant[SV_COORD_MAX_SHARDS];
	unsigned long generation; /* bumped on every change */
};

/* Starts the coordinator for CONF (coordination enabled) with the
 * topology epoch the supervisor starts from (the bootstrap value when etcd
 * has none). Returns NULL with ERR filled when the endpoints are invalid
 * or the thread cannot start. */
struct sv_coord *sv_coord_start(const struct zconf *conf, long long epoch, char *err, size_t errlen);
/* Stops the thread, releases this supervisor's leadership (revokes its
 * session, so the replicas need not wait out the TTL) when RELEASE, frees. */
void sv_coord_stop(struct sv_coord *c, bool release);

/* Hands the coordinator the latest observations of the local instances
 * (N of them). Poll loop. */
void sv_coord_observe(struct sv_coord *c, const struct sv_coord_obs *obs, size_t n);
/* Asks for the epoch to become at least EPOCH (an instance showed one that
 * high). Poll loop. */
void sv_coord_raise_epoch(struct sv_coord *c, long long epoch);
/* Asks for a switchover of SHARD to TARGET ("" = the first other member)
 * through etcd; the view's shard shows the new primary when it is done.
 * Poll loop. */
void sv_coord_switchover(struct sv_coord *c, const char *shard, const char *target, bool force);
/* Copies the current view into OUT. Poll loop. */
void sv_coord_view(struct sv_coord *c, struct sv_coord_view *out);

/* The shard (its declared primary's name) node NAME belongs to, or NULL.
 * The table is the file's as started, never changed: any thread. */
const char *sv_coord_shard_name(const struct sv_coord *c, const char *name);
/* The members of shard SHARD (N names into OUT, at most MAX); 0 unknown. */
size_t sv_coord_members(const struct sv_coord *c, const char *shard, const char **out, size_t max);

#endif
