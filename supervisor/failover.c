/* failover — the poll loop's side of coordination (coord.h): feeds the
 * coordinator what the health checks saw, and applies its view: the
 * recorded primaries (zconf_promote on the conf in force, re-points by
 * REPLICAOF, the topology at etcd's epoch) and the write-lease grants that
 * go to zarisd with each check as CLUSTER LEASE. Poll loop only. */
#include "supervisor/failover.h"

#include "supervisor/log.h"

#include <stdio.h>
#include <string.h>

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

int sv_failover_start(struct sv *s)
{
	char err[300];

	s->coord = NULL;
	s->coord_gen = 0;
	for (size_t k = 0; k < s->n_inst; k++)
		s->inst[k]->lease_until_ms = s->conf->coord.enabled ? 0 : -1;
	if (!s->conf->coord.enabled)
		return 0;
	s->coord = sv_coord_start(s->conf, s->topo.epoch, err, sizeof(err));
	if (!s->coord) {
		sv_log(LOG_ERR, "coordination: %s", err);
		return -1;
	}
	sv_log(LOG_NOTICE, "coordination through etcd at %s (lease %d ms); instances start fenced",
	       s->conf->coord.endpoints, s->conf->coord.lease_ttl_ms);
	return 0;
}

void sv_failover_stop(struct sv *s, bool release)
{
	sv_coord_stop(s->coord, release);
	s->coord = NULL;
}

void sv_failover_apply_conf(struct sv *s, struct zconf *conf)
{
	if (!s->coord)
		return;
	for (size_t k = 0; k < s->coord_view.n_shards; k++) {
		const struct sv_coord_shard *sh = &s->coord_view.shard[k];
		if (sh->primary[0] && zconf_promote(conf, sh->primary) < 0)
			sv_log(LOG_ERR,
			       "coordination: shard %s: etcd records primary %s, which the file does not "
			       "have in that shard",
			       sh->name, sh->primary);
	}
}

/* The observations the coordinator needs, from the last checks. */
static void observe(struct sv *s, int64_t now)
{
	struct sv_coord_obs obs[SV_COORD_MAX_SHARDS];
	size_t n = 0;

	for (size_t k = 0; k < s->n_inst && n < SV_COORD_MAX_SHARDS; k++) {
		const struct sv_instance *i = s->inst[k];
		struct sv_coord_obs *o = &obs[n++];
		memset(o, 0, sizeof(*o));
		copy(o->name, sizeof(o->name), i->name);
		o->pid = sv_instance_is_running(i) ? i->pid : 0;
		o->up = i->state == SV_UP && i->last_ok_ms && now - i->last_ok_ms < 10 * 60 * 1000;
		o->last_ok_ms = i->last_ok_ms;
		o->is_primary = strcmp(i->info.role, "master") == 0;
		o->offset = o->is_primary ? i->info.master_repl_offset : i->info.slave_repl_offset;
		if (o->offset < 0)
			o->offset = 0;
		o->syncing = i->info.master_sync_in_progress > 0;
		o->link_up_ms = i->link_up_ms;
		o->lease_applied_ms = i->lease_applied_ms;
	}
	sv_coord_observe(s->coord, obs, n);
}

/* Node NAME's place changed: REPLICAOF as the conf in force says. */
static void repoint(struct sv *s, struct sv_instance *i)
{
	const struct zconf_node *n = zconf_find_node(s->conf, i->name);
	char target[128];

	if (!n)
		return;
	zconf_replicaof(s->conf, n, target, sizeof(target));
	sv_instance_queue_set(i, SV_SET_REPLICAOF, target[0] ? target : "NO ONE");
	sv_log(LOG_NOTICE, "%s: coordination: REPLICAOF %s", i->name, target[0] ? target : "NO ONE");
}

int sv_failover_request(struct sv *s, const char *shard, const char *target, bool force, uint64_t conn_id,
			int64_t now, char *why, size_t whysize)
{
	const char *members[SV_COORD_MAX_MEMBERS];
	size_t m;

	if (!s->coord) {
		snprintf(why, whysize, "failover needs coordination (a coordination section in %s)",
			 s->config_path);
		return -1;
	}
	if (s->sw.active) {
		snprintf(why, whysize, "a failover of shard %s is already running", s->sw.shard);
		return -1;
	}
	m = sv_coord_members(s->coord, shard, members, SV_COORD_MAX_MEMBERS);
	if (!m) {
		snprintf(why, whysize, "no shard '%s' (shards are named by their declared primary)", shard);
		return -1;
	}
	bool known = !target[0];
	for (size_t k = 0; k < m; k++)
		known |= strcmp(members[k], target) == 0;
	if (!known) {
		snprintf(why, whysize, "%s is not a member of shard %s", target, shard);
		return -1;
	}
	const char *old = "";
	for (size_t k = 0; k < s->coord_view.n_shards; k++)
		if (strcmp(s->coord_view.shard[k].name, shard) == 0)
			old = s->coord_view.shard[k].primary;
	if (target[0] && strcmp(old, target) == 0 && !force) {
		snprintf(why, whysize, "%s is already the primary of shard %s", target, shard);
		return -1;
	}
	s->sw.active = true;
	copy(s->sw.shard, sizeof(s->sw.shard), shard);
	copy(s->sw.target, sizeof(s->sw.target), target);
	copy(s->sw.old, sizeof(s->sw.old), old);
	s->sw.conn_id = conn_id;
	s->sw.start_ms = now;
	s->sw.deadline_ms = now + s->conf->sv.catch_up_timeout_ms + s->conf->coord.lease_ttl_ms;
	sv_log(LOG_NOTICE, "coordination: switchover of shard %s from %s to %s requested%s", shard, old,
	       target[0] ? target : "another member", force ? " (forced)" : "");
	sv_coord_switchover(s->coord, shard, target, force);
	return 0;
}

const char *sv_failover_led_shard(const struct sv *s, const char *name)
{
	if (!s->coord)
		return NULL;
	for (size_t k = 0; k < s->coord_view.n_shards; k++) {
		const struct sv_coord_shard *sh = &s->coord_view.shard[k];
		if (sh->leader_here && strcmp(sh->leader, name) == 0)
			return sh->name;
	}
	return NULL;
}

/* The waiting zarisctl failover gets its answer when the view shows it. */
static void switchover_result(struct sv *s, int64_t now)
{
	if (!s->sw.active)
		return;
	const struct sv_coord_shard *sh = NULL;
	for (size_t k = 0; k < s->coord_view.n_shards; k++)
		if (strcmp(s->coord_view.shard[k].name, s->sw.shard) == 0)
			sh = &s->coord_view.shard[k];
	bool done = sh && strcmp(sh->leader, sh->primary) == 0 &&
		    (s->sw.target[0] ? strcmp(sh->primary, s->sw.target) == 0
				     : strcmp(sh->primary, s->sw.old) != 0);
	if (!done && now < s->sw.deadline_ms)
		return;
	struct sv_conn *conn = sv_control_find(&s->control, s->sw.conn_id);
	if (conn && done)
		sv_control_end(conn, true,
			       "shard %s: primary %s (was %s), epoch %lld; writes paused at most %lld ms",
			       s->sw.shard, sh->primary, s->sw.old, s->coord_view.epoch,
			       (long long)(now - s->sw.start_ms));
	else if (conn)
		sv_control_end(conn, false,
			       "shard %s: switchover not done within %lld ms (primary %s, leader %s)",
			       s->sw.shard, (long long)(now - s->sw.start_ms), sh ? sh->primary : "?",
			       sh && sh->leader[0] ? sh->leader : "none");
	s->sw.active = false;
}

void sv_failover_step(struct sv *s, int64_t now)
{
	if (!s->coord)
		return;
	observe(s, now);
	struct sv_coord_view v;
	sv_coord_view(s->coord, &v);
	/* an instance ahead of etcd's epoch (etcd's data lost): raise it */
	for (size_t k = 0; k < s->n_inst; k++)
		if (s->inst[k]->topo.ahead > 0 && s->inst[k]->topo.ahead >= v.epoch)
			sv_coord_raise_epoch(s->coord, s->inst[k]->topo.ahead);
	if (v.generation == s->coord_gen) {
		switchover_result(s, now);
		return;
	}
	s->coord_gen = v.generation;
	s->coord_view = v;
	if (v.etcd_ok && v.epoch > 0) {
		/* the recorded primaries, as a failover of the conf in force */
		for (size_t k = 0; k < v.n_shards; k++) {
			const struct zconf_node *p = zconf_find_node(s->conf, v.shard[k].primary);
			if (!p || p->role == ZCONF_ROLE_PRIMARY)
				continue;
			char old[128];
			copy(old, sizeof(old), p->replica_of);
			if (zconf_promote(s->conf, v.shard[k].primary) < 0)
				continue;
			sv_log(LOG_WARNING, "coordination: shard %s: primary is now %s (was %s), epoch %lld",
			       v.shard[k].name, v.shard[k].primary, old, v.epoch);
			const char *members[SV_COORD_MAX_MEMBERS];
			size_t m = sv_coord_members(s->coord, v.shard[k].name, members, SV_COORD_MAX_MEMBERS);
			for (size_t j = 0; j < m; j++) {
				struct sv_instance *i = sv_find(s, members[j]);
				if (i && sv_instance_is_running(i))
					repoint(s, i);
			}
		}
		if (sv_topology_adopt(&s->topo, s->conf, v.epoch))
			for (size_t k = 0; k < s->n_inst; k++) {
				s->inst[k]->topo.synced = false;
				s->inst[k]->topo.ahead = 0;
				s->inst[k]->next_check_ms = 0;
			}
	}
	for (size_t k = 0; k < s->n_inst; k++) {
		struct sv_instance *i = s->inst[k];
		int64_t until = 0;
		for (size_t g = 0; g < v.n_grants; g++)
			if (strcmp(v.grant[g].name, i->name) == 0)
				until = v.grant[g].until_ms;
		if (until != i->lease_until_ms) {
			if ((until > 0) != (i->lease_until_ms > 0))
				sv_log(LOG_NOTICE, "%s: write lease %s", i->name,
				       until > 0 ? "granted (leads its shard)" : "withdrawn: fenced");
			i->lease_until_ms = until;
			i->next_check_ms = 0; /* the new lease goes now */
		}
	}
	switchover_result(s, now);
}
