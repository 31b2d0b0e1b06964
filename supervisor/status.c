/* status — what `zarisctl status` and STATUS= show: a table (or one JSON
 * object per instance after one for the supervisor) and a one-line summary.
 * Part of the supervisor module (API in supervisor.h). */
#include "supervisor/supervisor.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static void human_bytes(long long v, char *buf, size_t size)
{
	static const char units[] = "BKMGT";
	double d = (double)v;
	int u = 0;

	if (v < 0) {
		snprintf(buf, size, "-");
		return;
	}
	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%lldB", v);
	else
		snprintf(buf, size, "%.1f%c", d, units[u]);
}

static void human_duration(int64_t ms, char *buf, size_t size)
{
	long long s = ms / 1000;

	if (ms < 0)
		snprintf(buf, size, "-");
	else if (s < 60)
		snprintf(buf, size, "%llds", s);
	else if (s < 3600)
		snprintf(buf, size, "%lldm%llds", s / 60, s % 60);
	else if (s < 86400)
		snprintf(buf, size, "%lldh%lldm", s / 3600, s / 60 % 60);
	else
		snprintf(buf, size, "%lldd%lldh", s / 86400, s / 3600 % 24);
}

static void health_text(const struct sv_instance *i, const struct sv *s, int64_t now, char *buf, size_t size)
{
	switch (i->state) {
	case SV_UNHEALTHY:
		snprintf(buf, size, "unhealthy %d/%d", i->health_fails, s->conf->sv.health_failures);
		break;
	case SV_BACKOFF:
	case SV_CRASHLOOP:
		snprintf(buf, size, "%s (%d crashes, retry in %.1fs)", sv_state_name(i->state), i->crashes,
			 (double)(i->timer_ms > now ? i->timer_ms - now : 0) / 1000.0);
		break;
	case SV_DOWN:
		snprintf(buf, size, "%s", i->removed ? "removed" : "stopped");
		break;
	case SV_UP:
		snprintf(buf, size, "%s", i->loading ? "up (loading)" : "up");
		break;
	default:
		snprintf(buf, size, "%s", sv_state_name(i->state));
	}
}

/* Writes S as a JSON string literal (quotes included) into BUF. */
static void json_str(const char *s, char *buf, size_t size)
{
	size_t n = 0;

	if (size < 3) {
		buf[0] = '\0';
		return;
	}
	buf[n++] = '"';
	for (; s && *s && n + 8 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\') {
			buf[n++] = '\\';
			buf[n++] = (char)c;
		} else if (c < 0x20) {
			n += (size_t)snprintf(buf + n, size - n, "\\u%04x", c);
		} else {
			buf[n++] = (char)c;
		}
	}
	buf[n++] = '"';
	buf[n] = '\0';
}

enum {
	C_NAME,
	C_PID,
	C_ROLE,
	C_LINK,
	C_OFFSET,
	C_LAG,
	C_ADDR,
	C_NATIVE, /* only when some instance declares a native-port */
	C_SLOTS,  /* cluster mode only */
	C_CORES,
	C_MEM,
	C_UPTIME,
	C_RESTARTS,
	C_HEALTH,
	C_ERROR,
	C__N
};

struct row {
	char cell[C__N][300];
	bool differs; /* runs in another role than the file declares */
};

/* Replication as INFO shows it, for the table and JSON. */
struct repl_view {
	bool known;	    /* the process answered an INFO with a role */
	bool replica;	    /* role:slave */
	char from[140];	    /* replica: the node it follows, else "host:port" */
	long long offset;   /* slave_repl_offset on a replica, else master_repl_offset */
	long long lag;	    /* bytes behind its primary, -1 unknown */
	long long last_io;  /* replica: master_last_io_seconds_ago, -1 unknown */
	const char *link;   /* replica: "up"/"down", NULL unknown */
	long long replicas; /* connected_slaves, -1 unknown */
	bool syncing;	    /* master_sync_in_progress:1 */
};

static void repl_view(struct sv *s, const struct sv_instance *i, struct repl_view *v)
{
	const struct zconf_node *p = sv_primary_node(s, i);

	memset(v, 0, sizeof(*v));
	v->offset = v->lag = v->last_io = v->replicas = -1;
	if (i->pid <= 0 || !i->info.role[0])
		return;
	v->known = true;
	v->replica = sv_is_replica(i);
	v->replicas = i->info.connected_slaves;
	if (!v->replica) {
		v->offset = i->info.master_repl_offset;
		return;
	}
	if (p)
		snprintf(v->from, sizeof(v->from), "%s", p->name);
	else
		snprintf(v->from, sizeof(v->from), "%s:%lld", i->info.master_host, i->info.master_port);
	v->offset = i->info.slave_repl_offset;
	v->lag = sv_replica_lag(s, i);
	v->last_io = i->info.master_last_io_seconds_ago;
	v->link = i->info.master_link_status[0] ? i->info.master_link_status : NULL;
	v->syncing = i->info.master_sync_in_progress == 1;
}

/* Cluster mode: the slots the file gives N (a replica: its primary's, in
 * parentheses), cut at 40 characters, then the epoch the instance shows,
 * "!" after it when that is not the document it should have. */
static void slots_cell(const struct sv *s, const struct sv_instance *i, const struct zconf_node *n, char *buf,
		       size_t size)
{
	const struct zconf_node *p =
		n && n->role == ZCONF_ROLE_REPLICA ? zconf_find_node(s->conf, n->replica_of) : n;
	char epoch[32] = "e-";

	if (!s->topo.enabled || !p || !p->slots) {
		snprintf(buf, size, "-");
		return;
	}
	if (i->topo.epoch >= 0)
		snprintf(epoch, sizeof(epoch), "e%lld%s", i->topo.epoch, i->topo.synced ? "" : "!");
	else if (i->pid > 0)
		snprintf(epoch, sizeof(epoch), "e-!");
	snprintf(buf, size, "%s%.40s%s%s %s", p != n ? "(" : "", *p->slots ? p->slots : "none",
		 strlen(p->slots) > 40 ? "..." : "", p != n ? ")" : "", epoch);
}

static void fill_row(struct sv *s, const struct sv_instance *i, int64_t now, struct row *r)
{
	const struct zconf_node *n = zconf_find_node(s->conf, i->name);
	char used[32], limit[32], lag[32];
	struct repl_view v;

	snprintf(r->cell[C_NAME], sizeof(r->cell[0]), "%s", i->name);
	snprintf(r->cell[C_PID], sizeof(r->cell[0]), "%s", "-");
	if (i->pid > 0)
		snprintf(r->cell[C_PID], sizeof(r->cell[0]), "%d", (int)i->pid);
	repl_view(s, i, &v);
	r->differs = v.known && !sv_role_as_declared(s, i);
	if (v.known && v.replica)
		snprintf(r->cell[C_ROLE], sizeof(r->cell[0]), "replica of %s%s", v.from,
			 r->differs ? "!" : "");
	else if (v.known)
		snprintf(r->cell[C_ROLE], sizeof(r->cell[0]), "primary%s", r->differs ? "!" : "");
	else if (n && n->role == ZCONF_ROLE_REPLICA)
		snprintf(r->cell[C_ROLE], sizeof(r->cell[0]), "replica of %s", n->replica_of);
	else
		snprintf(r->cell[C_ROLE], sizeof(r->cell[0]), "primary");
	if (v.known && v.replica)
		snprintf(r->cell[C_LINK], sizeof(r->cell[0]), "%s%s", v.link ? v.link : "-",
			 v.syncing ? " (sync)" : "");
	else if (v.known && v.replicas >= 0)
		snprintf(r->cell[C_LINK], sizeof(r->cell[0]), "%lld replica%s", v.replicas,
			 v.replicas == 1 ? "" : "s");
	else
		snprintf(r->cell[C_LINK], sizeof(r->cell[0]), "-");
	if (v.offset >= 0)
		snprintf(r->cell[C_OFFSET], sizeof(r->cell[0]), "%lld", v.offset);
	else
		snprintf(r->cell[C_OFFSET], sizeof(r->cell[0]), "-");
	/* bytes behind / seconds since the primary was last heard */
	human_bytes(v.lag, lag, sizeof(lag));
	if (v.known && v.replica && v.last_io >= 0)
		snprintf(r->cell[C_LAG], sizeof(r->cell[0]), "%s/%llds", lag, v.last_io);
	else if (v.known && v.replica)
		snprintf(r->cell[C_LAG], sizeof(r->cell[0]), "%s/-", lag);
	else
		snprintf(r->cell[C_LAG], sizeof(r->cell[0]), "-");
	if (n)
		snprintf(r->cell[C_ADDR], sizeof(r->cell[0]), "%s:%d", n->address, n->port);
	else
		snprintf(r->cell[C_ADDR], sizeof(r->cell[0]), "-");
	if (n && zconf_node_native_port(s->conf, n))
		snprintf(r->cell[C_NATIVE], sizeof(r->cell[0]), "%d", zconf_node_native_port(s->conf, n));
	else
		snprintf(r->cell[C_NATIVE], sizeof(r->cell[0]), "-");
	slots_cell(s, i, n, r->cell[C_SLOTS], sizeof(r->cell[0]));
	if (n && CPU_COUNT(&n->cores))
		zconf_format_cores(&n->cores, r->cell[C_CORES], sizeof(r->cell[0]));
	else
		snprintf(r->cell[C_CORES], sizeof(r->cell[0]), "any");
	human_bytes(i->pid > 0 ? i->info.used_memory : -1, used, sizeof(used));
	if (n && n->maxmemory)
		human_bytes((long long)n->maxmemory, limit, sizeof(limit));
	else
		snprintf(limit, sizeof(limit), "none");
	snprintf(r->cell[C_MEM], sizeof(r->cell[0]), "%s/%s", used, limit);
	human_duration(i->pid > 0 ? now - i->started_ms : -1, r->cell[C_UPTIME], sizeof(r->cell[0]));
	snprintf(r->cell[C_RESTARTS], sizeof(r->cell[0]), "%d", i->restarts);
	health_text(i, s, now, r->cell[C_HEALTH], sizeof(r->cell[0]));
	snprintf(r->cell[C_ERROR], sizeof(r->cell[0]), "%s", i->last_error[0] ? i->last_error : "-");
}

/* Coordination: etcd's state and, per shard, primary, leader and lease. */
static void coord_text(struct sv *s, struct sv_conn *conn, int64_t now)
{
	const struct sv_coord_view *v = &s->coord_view;

	sv_control_data(conn, "coordination: etcd %s%s%s, epoch %lld, session lease %s",
			v->etcd_ok ? "ok" : "unreachable", v->etcd_ok ? "" : ": ",
			v->etcd_ok ? "" : v->etcd_error, v->epoch, v->session ? "held" : "none");
	for (size_t k = 0; k < v->n_shards; k++) {
		const struct sv_coord_shard *sh = &v->shard[k];
		char lag[400] = "";
		size_t len = 0;
		const char *members[SV_COORD_MAX_MEMBERS];
		size_t m = sv_coord_members(s->coord, sh->name, members, SV_COORD_MAX_MEMBERS);
		for (size_t j = 0; j < m; j++) {
			const struct sv_instance *i = sv_find(s, members[j]);
			if (!i || strcmp(members[j], sh->primary) == 0)
				continue;
			long long l = sv_replica_lag(s, i);
			if (l >= 0)
				len += (size_t)snprintf(lag + len, sizeof(lag) - len, " %s %lldB behind",
							i->name, l);
			else
				len += (size_t)snprintf(lag + len, sizeof(lag) - len, " %s lag -", i->name);
		}
		const struct sv_instance *pi = sv_find(s, sh->primary);
		sv_control_data(conn, "  shard %s: primary %s, leader %s%s%s%s%s", sh->name,
				sh->primary[0] ? sh->primary : "?",
				sh->leader[0] ? sh->leader : "none (election)",
				sh->leader_here ? " (this machine)" : "",
				pi ? (pi->lease_until_ms > now ? ", write lease held" : ", fenced") : "",
				len ? ";" : "", lag);
	}
}

static void write_text(struct sv *s, struct sv_conn *conn, int64_t now)
{
	static const char *const head[C__N] = { "INSTANCE", "PID",     "ROLE",	   "LINK",   "OFFSET",
						"LAG",	    "ADDRESS", "NATIVE",   "SLOTS",  "CORES",
						"MEMORY",   "UPTIME",  "RESTARTS", "HEALTH", "LAST ERROR" };
	static struct row rows[SV_MAX_INSTANCES];
	int width[C__N];
	char up[32], line[4096];
	bool differs = false, native = false;

	for (size_t k = 0; k < s->n_inst; k++) {
		const struct zconf_node *n = zconf_find_node(s->conf, s->inst[k]->name);

		native |= n && zconf_node_native_port(s->conf, n) > 0;
	}

	human_duration(now - s->started_ms, up, sizeof(up));
	sv_control_data(conn, "cluster %s, config %s, supervisor pid %d up %s",
			s->conf->cluster_name ? s->conf->cluster_name : "-", s->config_path, (int)getpid(),
			up);
	if (s->config_error[0])
		sv_control_data(conn,
				"config error (last reload refused, previous config still in force): %s",
				s->config_error);
	if (s->topo.enabled) {
		size_t synced = 0, running = 0;

		for (size_t k = 0; k < s->n_inst; k++) {
			synced += s->inst[k]->topo.synced;
			running += s->inst[k]->pid > 0;
		}
		sv_control_data(conn,
				"cluster mode: topology epoch %lld, %zu/%zu running instances have it%s%s",
				s->topo.epoch, synced, running, s->topo.error[0] ? "; state file: " : "",
				s->topo.error);
	}
	if (s->coord)
		coord_text(s, conn, now);
	if (s->job.n)
		sv_control_data(conn, "restart job: %zu/%zu done, %s %s", s->job.done, s->job.total,
				s->job.step_started ? "restarting" : "next", s->job.names[0]);
	for (int c = 0; c < C__N; c++)
		width[c] = (int)strlen(head[c]);
	for (size_t k = 0; k < s->n_inst; k++) {
		fill_row(s, s->inst[k], now, &rows[k]);
		differs |= rows[k].differs;
		for (int c = 0; c < C__N; c++)
			if ((int)strlen(rows[k].cell[c]) > width[c])
				width[c] = (int)strlen(rows[k].cell[c]);
	}
	for (size_t k = 0; k <= s->n_inst; k++) {
		size_t len = 0;

		for (int c = 0; c < C__N; c++)
			if ((c != C_SLOTS || s->topo.enabled) && (c != C_NATIVE || native))
				len += (size_t)snprintf(line + len, sizeof(line) - len, "%-*s%s",
							c == C__N - 1 ? 0 : width[c],
							k == 0 ? head[c] : rows[k - 1].cell[c],
							c == C__N - 1 ? "" : "  ");
		sv_control_data(conn, "%s", line);
	}
	if (s->n_inst == 0)
		sv_control_data(conn, "(no local instances in %s)", s->config_path);
	if (differs)
		sv_control_data(conn, "! not the role the file declares: a re-point not applied yet, or a "
				      "REPLICAOF given by hand (a reload re-applies the file)");
}

static void write_json(struct sv *s, struct sv_conn *conn, int64_t now)
{
	char name[200], path[600], cerr[1500], summary[256], js[300];

	sv_status_summary(s, summary, sizeof(summary));
	json_str(s->conf->cluster_name ? s->conf->cluster_name : "", name, sizeof(name));
	json_str(s->config_path, path, sizeof(path));
	json_str(s->config_error, cerr, sizeof(cerr));
	json_str(summary, js, sizeof(js));
	sv_control_data(conn,
			"{\"type\":\"supervisor\",\"cluster\":%s,\"config\":%s,\"config_error\":%s,"
			"\"pid\":%d,\"uptime_ms\":%lld,\"ready\":%s,\"summary\":%s,\"job_pending\":%zu,"
			"\"cluster_epoch\":%lld}",
			name, path, s->config_error[0] ? cerr : "null", (int)getpid(),
			(long long)(now - s->started_ms), s->ready_sent ? "true" : "false", js, s->job.n,
			s->topo.enabled ? s->topo.epoch : -1);
	for (size_t k = 0; s->coord && k < s->coord_view.n_shards; k++) {
		const struct sv_coord_shard *sh = &s->coord_view.shard[k];
		const struct sv_instance *pi = sv_find(s, sh->primary);
		sv_control_data(conn,
				"{\"type\":\"shard\",\"shard\":\"%s\",\"primary\":\"%s\",\"leader\":%s%s%s,"
				"\"leader_here\":%s,\"epoch\":%lld,\"etcd_ok\":%s,\"write_lease\":%s}",
				sh->name, sh->primary, sh->leader[0] ? "\"" : "",
				sh->leader[0] ? sh->leader : "null", sh->leader[0] ? "\"" : "",
				sh->leader_here ? "true" : "false", s->coord_view.epoch,
				s->coord_view.etcd_ok ? "true" : "false",
				pi ? (pi->lease_until_ms > now ? "true" : "false") : "null");
	}
	for (size_t k = 0; k < s->n_inst; k++) {
		const struct sv_instance *i = s->inst[k];
		const struct zconf_node *n = zconf_find_node(s->conf, i->name);
		char iname[200], addr[120], cores[300], err[600], health[300], role[200], from[200];
		char link[32], offset[32], lagb[32], io[32], repl[32], syncing[8], slots[ZCONF_SLOTS * 3];
		struct repl_view v;
		struct row r;

		fill_row(s, i, now, &r);
		repl_view(s, i, &v);
		json_str(v.from, from, sizeof(from));
		json_str(v.link, link, sizeof(link));
		snprintf(offset, sizeof(offset), v.offset >= 0 ? "%lld" : "null", v.offset);
		snprintf(lagb, sizeof(lagb), v.lag >= 0 ? "%lld" : "null", v.lag);
		snprintf(io, sizeof(io), v.last_io >= 0 ? "%lld" : "null", v.last_io);
		snprintf(repl, sizeof(repl), v.replicas >= 0 ? "%lld" : "null", v.replicas);
		snprintf(syncing, sizeof(syncing), "%s",
			 !v.known || !v.replica ? "null"
			 : v.syncing		? "true"
						: "false");
		json_str(i->name, iname, sizeof(iname));
		json_str(r.cell[C_ADDR], addr, sizeof(addr));
		json_str(n && CPU_COUNT(&n->cores) ? r.cell[C_CORES] : "", cores, sizeof(cores));
		json_str(i->last_error, err, sizeof(err));
		json_str(n && n->slots ? n->slots : "", slots, sizeof(slots));
		json_str(r.cell[C_HEALTH], health, sizeof(health));
		json_str(n && n->replica_of ? n->replica_of : "", role, sizeof(role));
		sv_control_data(
			conn,
			"{\"type\":\"instance\",\"name\":%s,\"pid\":%d,\"role\":%s,\"declared_role\":\"%s\","
			"\"replica_of\":%s,\"as_declared\":%s,\"replicating_from\":%s,\"link\":%s,"
			"\"sync_in_progress\":%s,\"connected_replicas\":%s,\"offset\":%s,\"lag_bytes\":%s,"
			"\"last_io_seconds\":%s,"
			"\"address\":%s,\"native_port\":%d,\"cores\":%s,\"used_memory\":%lld,\"maxmemory\":%llu,"
			"\"uptime_ms\":%lld,\"restarts\":%d,\"crashes\":%d,\"state\":\"%s\","
			"\"health\":%s,\"health_fails\":%d,\"last_error\":%s,\"slots\":%s,"
			"\"topology_epoch\":%lld,\"topology_synced\":%s}",
			iname, (int)i->pid,
			!v.known    ? "null"
			: v.replica ? "\"replica\""
				    : "\"primary\"",
			n && n->role == ZCONF_ROLE_REPLICA ? "replica" : "primary",
			n && n->replica_of ? role : "null",
			!v.known    ? "null"
			: r.differs ? "false"
				    : "true",
			v.replica ? from : "null", v.link ? link : "null", syncing, repl, offset, lagb, io,
			addr, n ? zconf_node_native_port(s->conf, n) : 0, cores,
			i->pid > 0 ? i->info.used_memory : -1, n ? n->maxmemory : 0ULL,
			(long long)(i->pid > 0 ? now - i->started_ms : -1), i->restarts, i->crashes,
			sv_state_name(i->state), health, i->health_fails, i->last_error[0] ? err : "null",
			s->topo.enabled && n && n->slots ? slots : "null", i->topo.epoch,
			i->topo.synced ? "true" : "false");
	}
}

void sv_status_write(struct sv *s, struct sv_conn *conn, int64_t now)
{
	if (conn->json)
		write_json(s, conn, now);
	else
		write_text(s, conn, now);
}

void sv_status_summary(const struct sv *s, char *buf, size_t size)
{
	size_t up = 0, wanted = 0, len;

	for (size_t k = 0; k < s->n_inst; k++) {
		const struct sv_instance *i = s->inst[k];

		if (i->removed || (i->state == SV_DOWN && !i->want_up))
			continue;
		wanted++;
		up += i->state == SV_UP;
	}
	len = (size_t)snprintf(buf, size, "%zu/%zu instances up", up, wanted);
	for (size_t k = 0; k < s->n_inst && len < size; k++) {
		const struct sv_instance *i = s->inst[k];

		if (i->state == SV_UP || i->removed)
			continue;
		if (i->state == SV_DOWN && !i->want_up) {
			len += (size_t)snprintf(buf + len, size - len, "; %s stopped", i->name);
			continue;
		}
		len += (size_t)snprintf(buf + len, size - len, "; %s %s", i->name, sv_state_name(i->state));
		if ((i->state == SV_BACKOFF || i->state == SV_CRASHLOOP) && len < size)
			len += (size_t)snprintf(buf + len, size - len, " (%d crashes)", i->crashes);
	}
	if (s->stopping && len < size)
		len += (size_t)snprintf(buf + len, size - len, "; stopping");
	if (s->job.n && len < size)
		len += (size_t)snprintf(buf + len, size - len, "; restarting %zu/%zu", s->job.done + 1,
					s->job.total);
	if (s->config_error[0] && len < size)
		snprintf(buf + len, size - len, "; config error: %s", s->config_error);
}
