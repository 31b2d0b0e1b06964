/* supervisor — see supervisor.h: configuration in force, reload by
 * difference, the serial restart job, readiness. */
#include "supervisor/supervisor.h"

#include "supervisor/failover.h"
#include "supervisor/log.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* How often a replica and its primary are checked while a restart job
 * waits for the replica to catch up. */
#define SV_CATCH_UP_CHECK_MS 100

/* Values zarisd has when a live key is no longer set in the file (Redis's
 * defaults), so removing a line from the file also reverts it live. */
static const char *live_default(enum zconf_key k)
{
	switch (k) {
	case ZCONF_K_MAXMEMORY:
		return "0";
	case ZCONF_K_MAXMEMORY_POLICY:
		return "noeviction";
	case ZCONF_K_REQUIREPASS:
		return "";
	case ZCONF_K_MAXCLIENTS:
		return "10000";
	case ZCONF_K_TIMEOUT:
		return "0";
	case ZCONF_K_PROTECTED_MODE:
		return "yes";
	case ZCONF_K_LOGLEVEL:
		return "notice";
	case ZCONF_K_REPLICA_ACK:
		return "0";
	case ZCONF_K_REPLICA_ACK_TIMEOUT:
		return "1000";
	default:
		return NULL;
	}
}

struct sv_params sv_params(const struct sv *s)
{
	return (struct sv_params){ .conf = s->conf, .zarisd = s->zarisd, .topo = &s->topo };
}

struct sv_instance *sv_find(struct sv *s, const char *name)
{
	for (size_t k = 0; k < s->n_inst; k++)
		if (strcmp(s->inst[k]->name, name) == 0)
			return s->inst[k];
	return NULL;
}

void sv_event(struct sv *s, struct sv_instance *i, enum sv_event event, int64_t now)
{
	struct sv_params p = sv_params(s);

	sv_instance_event(i, event, &p, now);
}

static void add_instances(struct sv *s)
{
	for (size_t k = 0; k < s->conf->n_nodes; k++) {
		const struct zconf_node *n = &s->conf->nodes[k];

		if (!n->is_local || sv_find(s, n->name))
			continue;
		if (s->n_inst == SV_MAX_INSTANCES) {
			sv_log(LOG_ERR, "more than %d local nodes; %s is not started", SV_MAX_INSTANCES,
			       n->name);
			continue;
		}
		s->inst[s->n_inst++] = sv_instance_new(n->name);
	}
}

int sv_init(struct sv *s, const char *config_path, const char *node_list, const char *zarisd, int64_t now,
	    struct zconf_error *err)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->control.listen_fd = -1;
	rc = zconf_load_local(config_path, node_list, &s->conf, err);
	if (rc < 0)
		return rc;
	/* Absolute, so messages name the file unambiguously. */
	s->config_path = realpath(config_path, NULL);
	if (!s->config_path)
		s->config_path = strdup(config_path);
	s->node_list = node_list ? strdup(node_list) : NULL;
	s->zarisd = strdup(zarisd);
	if (!s->config_path || !s->zarisd || (node_list && !s->node_list))
		abort();
	s->started_ms = s->loaded_ms = now;
	sv_topology_init(&s->topo, s->conf);
	add_instances(s);
	return 0;
}

static void job_clear(struct sv_job *j)
{
	for (size_t k = 0; k < j->n; k++)
		free(j->names[k]);
	memset(j, 0, sizeof(*j));
}

void sv_fini(struct sv *s)
{
	for (size_t k = 0; k < s->n_inst; k++)
		sv_instance_free(s->inst[k]);
	job_clear(&s->job);
	sv_topology_fini(&s->topo);
	zconf_free(s->conf);
	free(s->config_path);
	free(s->node_list);
	free(s->zarisd);
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Why the change from (OC, ON) to (NC, NN) needs a restart: the first
 * restart-only setting that differs, or NULL when none does. */
static const char *restart_reason(const struct zconf *oc, const struct zconf_node *on, const struct zconf *nc,
				  const struct zconf_node *nn)
{
	if (on->port != nn->port)
		return "port";
	if (strcmp(on->address, nn->address) != 0)
		return "address";
	for (int k = 0; k < ZCONF_K__COUNT; k++) {
		const char *a = zconf_node_value(oc, on, (enum zconf_key)k);
		const char *b = zconf_node_value(nc, nn, (enum zconf_key)k);

		if (same(a, b))
			continue;
		if (!zconf_key_is_live((enum zconf_key)k) || (!b && !live_default((enum zconf_key)k)))
			return zconf_key_name((enum zconf_key)k);
	}
	return NULL;
}

static void queue_live_changes(struct sv_instance *i, const struct zconf *oc, const struct zconf_node *on,
			       const struct zconf *nc, const struct zconf_node *nn)
{
	for (int k = 0; k < ZCONF_K__COUNT; k++) {
		const char *a = zconf_node_value(oc, on, (enum zconf_key)k);
		const char *b = zconf_node_value(nc, nn, (enum zconf_key)k);

		if (same(a, b))
			continue;
		sv_instance_queue_set(i, k, b ? b : live_default((enum zconf_key)k));
		sv_log(LOG_NOTICE, "%s: %s changes live (CONFIG SET)", i->name,
		       zconf_key_name((enum zconf_key)k));
	}
	/* Its place in replication: a new primary (another node, or the same
	 * one at a new address or port), none any more, or one for the first
	 * time is a REPLICAOF on the running process, as is a new password of
	 * the primary a CONFIG SET masterauth before it. */
	char ot[128], nt[128];
	const char *oa = zconf_masterauth(oc, on), *na = zconf_masterauth(nc, nn);

	zconf_replicaof(oc, on, ot, sizeof(ot));
	zconf_replicaof(nc, nn, nt, sizeof(nt));
	if (!same(oa, na) && (na || nt[0])) {
		sv_instance_queue_set(i, SV_SET_MASTERAUTH, na ? na : "");
		sv_log(LOG_NOTICE, "%s: masterauth changes live (CONFIG SET)", i->name);
	}
	if (strcmp(ot, nt) != 0) {
		sv_instance_queue_set(i, SV_SET_REPLICAOF, nt[0] ? nt : "NO ONE");
		if (nt[0])
			sv_log(LOG_NOTICE, "%s: re-pointed live to %s (%s) with REPLICAOF", i->name,
			       nn->replica_of, nt);
		else
			sv_log(LOG_NOTICE, "%s: becomes a primary live (REPLICAOF NO ONE)", i->name);
	}
}

/* An instance that runs in another role than the file declares (a
 * REPLICAOF by hand, say) is put back as the file says: a reload applies
 * the file. Judged by its last INFO, so not while a REPLICAOF is queued or
 * in flight anyway. */
static void reassert_role(struct sv *s, struct sv_instance *i)
{
	const struct zconf_node *nn = zconf_find_node(s->conf, i->name);
	char nt[128];

	if (!nn || i->removed || i->state != SV_UP || !i->info.role[0] || i->pending_set[SV_SET_REPLICAOF] ||
	    i->sent_set[SV_SET_REPLICAOF] || sv_role_as_declared(s, i))
		return;
	zconf_replicaof(s->conf, nn, nt, sizeof(nt));
	sv_instance_queue_set(i, SV_SET_REPLICAOF, nt[0] ? nt : "NO ONE");
	if (nt[0])
		sv_log(LOG_NOTICE, "%s: not the replica of %s the file declares; REPLICAOF %s", i->name,
		       nn->replica_of, nt);
	else
		sv_log(LOG_NOTICE, "%s: runs as a replica, the file declares a primary; REPLICAOF NO ONE",
		       i->name);
}

static void job_remove(struct sv_job *j, const char *name)
{
	for (size_t k = 0; k < j->n; k++) {
		if (strcmp(j->names[k], name) != 0 || (k == 0 && j->step_started))
			continue;
		free(j->names[k]);
		memmove(&j->names[k], &j->names[k + 1], (j->n - k - 1) * sizeof(j->names[0]));
		j->n--;
		j->total--;
		return;
	}
}

/* Drops the head of the queue (whether or not its step started). */
static void job_pop(struct sv_job *j)
{
	free(j->names[0]);
	memmove(&j->names[0], &j->names[1], (j->n - 1) * sizeof(j->names[0]));
	j->n--;
	j->step_started = false;
	j->catching_up = false;
}

/* Where NAME goes in a restart batch: replicas before primaries, the
 * deepest of a chain first (its primary, itself a replica, comes after),
 * file order otherwise. */
static long job_rank(const struct zconf *conf, const char *name)
{
	const struct zconf_node *n = zconf_find_node(conf, name);

	if (!n)
		return LONG_MAX;
	return -(long)zconf_replica_depth(conf, n) * (long)(conf->n_nodes + 1) + (long)(n - conf->nodes);
}

/* The document changed: every instance is pushed it with its next check,
 * made due now. */
static void topo_unsync_all(struct sv *s)
{
	for (size_t k = 0; k < s->n_inst; k++) {
		s->inst[k]->topo.synced = false;
		s->inst[k]->topo.ahead = 0;
		s->inst[k]->next_check_ms = 0;
	}
}

/* An instance holds an epoch not older than ours with another layout:
 * pass the highest such epoch, so every push is newer than it. */
static void topo_pass_ahead(struct sv *s)
{
	long long seen = 0;

	for (size_t k = 0; k < s->n_inst; k++)
		if (s->inst[k]->topo.ahead > seen)
			seen = s->inst[k]->topo.ahead;
	if (!seen)
		return;
	sv_topology_pass(&s->topo, seen);
	topo_unsync_all(s);
}

int sv_reload(struct sv *s, int64_t now, uint64_t conn_id, bool json)
{
	struct zconf *nc;
	struct zconf_error err;
	const char *restart[SV_MAX_INSTANCES];
	size_t n_restart = 0, n_started = 0, n_stopped = 0, n_live = 0;
	struct sv_params p;
	int rc;

	sv_notify_reloading(&s->notify);
	sv_log(LOG_NOTICE, "reloading %s", s->config_path);
	rc = zconf_load_local(s->config_path, s->node_list, &nc, &err);
	if (rc < 0) {
		zconf_error_format(&err, s->config_error, sizeof(s->config_error));
		sv_log(LOG_ERR, "reload refused, nothing changed: %s", s->config_error);
		sv_notify_ready(&s->notify);
		return -EINVAL;
	}
	/* coordination: the file as etcd's failovers made it, like the conf in force */
	sv_failover_apply_conf(s, nc);
	char refused[300];
	if (sv_topology_refuse(s->conf, nc, refused, sizeof(refused))) {
		snprintf(s->config_error, sizeof(s->config_error), "%s: %s", s->config_path, refused);
		sv_log(LOG_ERR, "reload refused, nothing changed: %s", s->config_error);
		zconf_free(nc);
		sv_notify_ready(&s->notify);
		return -EINVAL;
	}
	s->config_error[0] = '\0';

	for (size_t k = 0; k < s->n_inst; k++) {
		struct sv_instance *i = s->inst[k];
		const struct zconf_node *on = zconf_find_node(s->conf, i->name);
		const struct zconf_node *nn = zconf_find_node(nc, i->name);
		const char *why;

		if (!nn || !nn->is_local) {
			i->removed = true;
			job_remove(&s->job, i->name);
			n_stopped++;
			sv_log(LOG_NOTICE, "%s: no longer in the file (or not local); stopping", i->name);
			continue;
		}
		why = restart_reason(s->conf, on, nc, nn);
		if (why) {
			sv_log(LOG_NOTICE, "%s: %s changed; restart queued", i->name, why);
			restart[n_restart++] = i->name;
			continue;
		}
		size_t before = 0;
		for (int q = 0; q < SV_SET__COUNT; q++)
			before += i->pending_set[q] != NULL;
		queue_live_changes(i, s->conf, on, nc, nn);
		for (int q = 0; q < SV_SET__COUNT; q++)
			n_live += i->pending_set[q] != NULL;
		n_live -= before;
	}
	zconf_free(s->conf);
	s->conf = nc;
	s->loaded_ms = now;
	if (s->coord ? sv_topology_adopt(&s->topo, s->conf, s->coord_view.epoch)
		     : sv_topology_update(&s->topo, s->conf))
		topo_unsync_all(s);
	p = sv_params(s);
	for (size_t k = 0; k < s->n_inst; k++)
		if (s->inst[k]->removed)
			sv_instance_event(s->inst[k], SV_EV_STOP, &p, now);
		else
			reassert_role(s, s->inst[k]);
	size_t before = s->n_inst;
	add_instances(s);
	for (size_t k = before; k < s->n_inst; k++, n_started++)
		sv_instance_event(s->inst[k], SV_EV_START, &p, now);
	sv_log(LOG_NOTICE, "reloaded: %zu started, %zu stopped, %zu to restart, %zu live changes", n_started,
	       n_stopped, n_restart, n_live);
	/* A running job (another client's rolling restart) simply gets these
	 * appended; only an idle job reports to this reload's client. */
	if (n_restart == 0 || sv_job_queue(s, restart, n_restart, s->job.n ? 0 : conn_id, json, now) < 0) {
		sv_notify_ready(&s->notify);
		return 0;
	}
	s->job.reload_ready = true;
	return 1;
}

int sv_job_queue(struct sv *s, const char *const *names, size_t n, uint64_t conn_id, bool json, int64_t now)
{
	struct sv_job *j = &s->job;

	if (j->n && j->conn_id && conn_id)
		return -EBUSY;
	if (j->n == 0) {
		j->done = j->total = 0;
		j->deadline_ms = now + s->conf->sv.start_timeout_ms + s->conf->sv.stop_timeout_ms;
	}
	const char *batch[SV_MAX_INSTANCES];
	size_t nb = 0;

	for (size_t k = 0; k < (n ? n : s->n_inst) && nb < SV_MAX_INSTANCES; k++) {
		if (!n && s->inst[k]->removed)
			continue;
		batch[nb++] = n ? names[k] : s->inst[k]->name;
	}
	/* insertion sort by rank: tiny and stable */
	for (size_t k = 1; k < nb; k++) {
		const char *x = batch[k];
		long rx = job_rank(s->conf, x);
		size_t q = k;

		for (; q > 0 && job_rank(s->conf, batch[q - 1]) > rx; q--)
			batch[q] = batch[q - 1];
		batch[q] = x;
	}
	for (size_t k = 0; k < nb; k++) {
		const char *name = batch[k];
		bool dup = false;

		for (size_t q = 0; q < j->n; q++)
			dup |= strcmp(j->names[q], name) == 0 && !(q == 0 && j->step_started);
		if (dup || j->n == SV_MAX_INSTANCES)
			continue;
		j->names[j->n] = strdup(name);
		if (!j->names[j->n])
			abort();
		j->n++;
		j->total++;
	}
	if (conn_id) {
		j->conn_id = conn_id;
		j->conn_json = json;
	}
	return 0;
}

static void job_report(struct sv *s, const char *name, const char *event, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void job_report(struct sv *s, const char *name, const char *event, const char *fmt, ...)
{
	struct sv_conn *c = s->job.conn_id ? sv_control_find(&s->control, s->job.conn_id) : NULL;
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sv_log(LOG_NOTICE, "restart job: %s", msg);
	if (!c)
		return;
	/* "up" counted the step done; what follows it belongs to that step */
	size_t step = s->job.done + (strcmp(event, "up") == 0 || strcmp(event, "catching-up") == 0 ||
						     strcmp(event, "caught-up") == 0
					     ? 0
					     : 1);

	if (s->job.conn_json)
		sv_control_data(
			c,
			"{\"step\":%zu,\"of\":%zu,\"instance\":\"%s\",\"event\":\"%s\",\"message\":\"%s\"}",
			step, s->job.total, name, event, msg);
	else
		sv_control_data(c, "[%zu/%zu] %s", step, s->job.total, msg);
}

static void job_finish(struct sv *s, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void job_finish(struct sv *s, bool ok, const char *fmt, ...)
{
	struct sv_conn *c = s->job.conn_id ? sv_control_find(&s->control, s->job.conn_id) : NULL;
	bool ready = s->job.reload_ready;
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sv_log(ok ? LOG_NOTICE : LOG_ERR, "restart job: %s", msg);
	if (c)
		sv_control_end(c, ok, "%s", msg);
	job_clear(&s->job);
	if (ready)
		sv_notify_ready(&s->notify);
}

static bool others_up(const struct sv *s, const struct sv_instance *except)
{
	for (size_t k = 0; k < s->n_inst; k++) {
		const struct sv_instance *i = s->inst[k];

		if (i == except || i->removed || (i->state == SV_DOWN && !i->want_up))
			continue;
		if (i->state != SV_UP)
			return false;
	}
	return true;
}

/* The current step is over: on to the next one, or the job is done. */
static void job_next(struct sv *s, int64_t now)
{
	struct sv_job *j = &s->job;

	job_pop(j);
	j->deadline_ms = now + s->conf->sv.stop_timeout_ms + s->conf->sv.start_timeout_ms;
	if (j->n == 0)
		job_finish(s, true, "restart job done: %zu instance(s) restarted", j->done);
}

/* I is up again: a replica's step goes on until it has caught up with its
 * primary (catch_up_step). Returns whether it waits. A primary stopped on
 * purpose, or one that runs elsewhere (its offset is not known here, only
 * the replica's link), is said so. */
static bool catch_up_begin(struct sv *s, struct sv_instance *i, int64_t now)
{
	const struct zconf_node *n = zconf_find_node(s->conf, i->name);
	const struct zconf_node *pn = n && n->replica_of ? zconf_find_node(s->conf, n->replica_of) : NULL;
	const struct sv_instance *pi = pn ? sv_find(s, pn->name) : NULL;

	if (!pn)
		return false;
	if (pi && (pi->removed || (pi->state == SV_DOWN && !pi->want_up))) {
		job_report(s, i->name, "caught-up",
			   "%s: its primary %s is stopped; not waiting for it to catch up", i->name,
			   pn->name);
		return false;
	}
	s->job.catching_up = true;
	s->job.deadline_ms = now + s->conf->sv.catch_up_timeout_ms;
	if (pi)
		job_report(s, i->name, "catching-up",
			   "waiting for %s to catch up with %s (link up, at most %d bytes behind)", i->name,
			   pn->name, s->conf->sv.catch_up_lag);
	else
		job_report(s, i->name, "catching-up",
			   "waiting for %s to catch up with %s (link up and synced; %s is not local, its "
			   "offset is not known here)",
			   i->name, pn->name, pn->name);
	return true;
}

/* Why replica I has not caught up yet, or NULL when it has (LAG set). */
static const char *catch_up_pending(struct sv *s, const struct sv_instance *i, long long *lag)
{
	const struct zconf_node *n = zconf_find_node(s->conf, i->name);
	const struct zconf_node *pn = n && n->replica_of ? zconf_find_node(s->conf, n->replica_of) : NULL;

	*lag = -1;
	if (i->state != SV_UP)
		return "not up";
	if (i->loading)
		return "loading its data";
	if (!sv_role_as_declared(s, i))
		return "not yet a replica of its primary";
	if (strcmp(i->info.master_link_status, "up") != 0)
		return "link down";
	if (i->info.master_sync_in_progress == 1)
		return "sync in progress";
	*lag = sv_replica_lag(s, i);
	if (*lag < 0)
		return pn && sv_find(s, pn->name)
			       ? "its primary's offset is not known (primary not answering)"
			       : NULL;
	return *lag <= s->conf->sv.catch_up_lag ? NULL : "behind";
}

static void catch_up_step(struct sv *s, struct sv_instance *i, int64_t now)
{
	const struct zconf_node *n = zconf_find_node(s->conf, i->name);
	struct sv_instance *pi = n && n->replica_of ? sv_find(s, n->replica_of) : NULL;
	const char *why;
	long long lag;

	if (!n || !n->replica_of) {
		/* a reload made it a primary meanwhile: nothing to catch up with */
		job_report(s, i->name, "caught-up", "%s is no longer a replica; not waiting", i->name);
		job_next(s, now);
		return;
	}
	why = catch_up_pending(s, i, &lag);
	if (!why) {
		if (lag >= 0)
			job_report(s, i->name, "caught-up",
				   "%s caught up with %s (link up, %lld bytes behind)", i->name,
				   n->replica_of, lag);
		else
			job_report(s, i->name, "caught-up", "%s caught up with %s (link up and synced)",
				   i->name, n->replica_of);
		job_next(s, now);
		return;
	}
	if (now >= s->job.deadline_ms || i->state == SV_CRASHLOOP) {
		char detail[64] = "";

		if (lag >= 0)
			snprintf(detail, sizeof(detail), ", %lld bytes behind", lag);
		job_finish(
			s, false,
			"%s did not catch up with %s within catch-up-timeout (%d ms): %s%s; stopped before "
			"the next instance",
			i->name, n->replica_of, s->conf->sv.catch_up_timeout_ms, why, detail);
		return;
	}
	/* look more often than every health-interval while waiting: the
	 * offsets come from the health checks of both */
	if (i->next_check_ms > now + SV_CATCH_UP_CHECK_MS)
		i->next_check_ms = now + SV_CATCH_UP_CHECK_MS;
	if (pi && pi->next_check_ms > now + SV_CATCH_UP_CHECK_MS)
		pi->next_check_ms = now + SV_CATCH_UP_CHECK_MS;
}

void sv_job_step(struct sv *s, int64_t now)
{
	struct sv_job *j = &s->job;
	const struct zconf_supervisor *t = &s->conf->sv;
	struct sv_instance *i = NULL;

	while (j->n) {
		i = sv_find(s, j->names[0]);
		/* Removed by a reload or stopped by the operator, before or during
		 * its step: nothing to wait for. */
		if (!i || i->removed || (i->state == SV_DOWN && !i->want_up)) {
			job_report(s, j->names[0], "skipped", "%s is stopped or gone; skipped", j->names[0]);
			job_pop(j);
			i = NULL;
			continue;
		}
		break;
	}
	if (j->n == 0) {
		if (j->total || j->conn_id || j->reload_ready)
			job_finish(s, true, "restart job done: %zu instance(s) restarted", j->done);
		return;
	}
	if (!i)
		return; /* not reached: the loop above leaves names[0] existing */
	if (!j->step_started) {
		if (!others_up(s, NULL) && !(i->state != SV_UP && others_up(s, i))) {
			if (now >= j->deadline_ms)
				job_finish(s, false,
					   "gave up: instances were not all up before restarting %s",
					   i->name);
			return;
		}
		/* coordination: a primary that leads its shard hands it over
		 * first (a planned switchover), so its restart costs one pause */
		const char *led = sv_failover_led_shard(s, i->name);
		if (led) {
			if (!s->sw.active) {
				char why[300];
				if (sv_failover_request(s, led, "", false, 0, now, why, sizeof(why)) == 0)
					job_report(s, i->name, "switchover",
						   "%s leads shard %s: switching it over before the restart",
						   i->name, led);
				else if (now >= j->deadline_ms)
					job_finish(s, false, "cannot switch shard %s over: %s", led, why);
			}
			if (now >= j->deadline_ms + s->conf->sv.catch_up_timeout_ms)
				job_finish(s, false, "shard %s was not switched over from %s in time", led,
					   i->name);
			return;
		}
		j->old_pid = i->pid;
		j->step_started = true;
		j->deadline_ms = now + t->stop_timeout_ms + t->start_timeout_ms;
		job_report(s, i->name, "restarting", "restarting %s (pid %d)", i->name, (int)i->pid);
		sv_event(s, i, SV_EV_RESTART, now);
		return;
	}
	if (j->catching_up) {
		catch_up_step(s, i, now);
		return;
	}
	if (i->state == SV_UP && i->pid != j->old_pid) {
		j->done++;
		job_report(s, i->name, "up", "%s is up again (pid %d)", i->name, (int)i->pid);
		if (catch_up_begin(s, i, now))
			return;
		job_next(s, now);
		return;
	}
	if (now >= j->deadline_ms || i->state == SV_CRASHLOOP)
		job_finish(s, false, "%s did not come back healthy (%s); stopped before the next instance",
			   i->name, i->last_error[0] ? i->last_error : sv_state_name(i->state));
}

bool sv_all_up(const struct sv *s)
{
	return others_up(s, NULL);
}

bool sv_all_down(const struct sv *s)
{
	for (size_t k = 0; k < s->n_inst; k++)
		if (sv_instance_is_running(s->inst[k]))
			return false;
	return true;
}

void sv_housekeeping(struct sv *s, int64_t now)
{
	char summary[256];

	if (s->topo.enabled)
		topo_pass_ahead(s);
	for (size_t k = 0; k < s->n_inst;) {
		struct sv_instance *i = s->inst[k];

		if (i->removed && i->state == SV_DOWN && !sv_instance_is_running(i)) {
			sv_instance_free(i);
			s->inst[k] = s->inst[--s->n_inst];
			continue;
		}
		k++;
	}
	sv_status_summary(s, summary, sizeof(summary));
	sv_notify_status(&s->notify, summary);
	if (!s->ready_sent && !s->stopping && sv_all_up(s)) {
		s->ready_sent = true;
		sv_log(LOG_NOTICE, "all %zu local instance(s) answer; ready", s->n_inst);
		sv_notify_ready(&s->notify);
	}
}
