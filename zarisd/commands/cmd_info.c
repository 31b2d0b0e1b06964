/* cmd_info — INFO [section ...]. The state behind it (the
 * instantaneous-rate sampler, the CONFIG RESETSTAT baselines and the
 * error-code counters) is server/info.h.
 *
 * Sections follow Redis 7.0's names, fields and order; zarisd adds
 * zaris_version to Server, per-thread CPU lines to CPU and a Threads section
 * with each worker's counters. Counters of other workers are read through
 * their relaxed atomics (stats.h); clients of other workers only through
 * registry_foreach() and their shared fields.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/blocking.h"
#include "zarisd/script/script.h"
#include "zarisd/server/client.h"
#include "zarisd/server/info.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/commands/table.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/persist/persist.h"
#include "zarisd/proto/reply.h"
#include "zarisd/repl/repl.h"
#include "zarisd/store/store.h"
#include "zarisd/store/write.h"

#define INFO_REDIS_VERSION "7.0.15"

/* --- formatting helpers -------------------------------------------------------------- */

/* Redis's bytesToHuman(): 1023B, 1.00K, 12.50M ... */
static void bytes_human(char *buf, size_t size, unsigned long long n)
{
	static const char units[] = "KMGTPE";
	if (n < 1024) {
		snprintf(buf, size, "%lluB", n);
		return;
	}
	double d = (double)n / 1024;
	int u = 0;
	while (d >= 1024 && u < 5) {
		d /= 1024;
		u++;
	}
	snprintf(buf, size, "%.2f%c", d, units[u]);
}

/* --- sections --------------------------------------------------------------------------- */

static void section_server(struct textbuf *t, struct client *c)
{
	struct server *srv = c->srv;
	struct utsname un;
	if (uname(&un) != 0)
		memset(&un, 0, sizeof(un));
	int64_t uptime = (zr_mono_us() - srv->start_mono_us) / 1000000;
	textbuf_printf(t,
		       "redis_version:" INFO_REDIS_VERSION "\r\n"
		       "zaris_version:" ZARIS_VERSION "\r\n"
		       "redis_git_sha1:00000000\r\n"
		       "redis_git_dirty:0\r\n"
		       "redis_build_id:0\r\n"
		       "redis_mode:%s\r\n"
		       "os:%s %s %s\r\n"
		       "arch_bits:%d\r\n"
		       "monotonic_clock:POSIX clock_gettime\r\n"
		       "multiplexing_api:%s\r\n"
		       "atomicvar_api:c11-builtin\r\n"
		       "gcc_version:%d.%d.%d\r\n"
		       "process_id:%ld\r\n"
		       "process_supervised:%s\r\n"
		       "run_id:%s\r\n"
		       "tcp_port:%d\r\n"
		       "server_time_usec:%lld\r\n"
		       "uptime_in_seconds:%lld\r\n"
		       "uptime_in_days:%lld\r\n"
		       "hz:%d\r\n"
		       "configured_hz:%d\r\n"
		       "lru_clock:%lld\r\n"
		       "executable:%s\r\n"
		       "config_file:%s\r\n"
		       "io_threads_active:0\r\n",
		       srv->cluster ? "cluster" : "standalone", un.sysname, un.release, un.machine,
		       (int)(sizeof(long) * 8), srv->io_backend ? srv->io_backend : "", __GNUC__,
		       __GNUC_MINOR__, __GNUC_PATCHLEVEL__, (long)getpid(),
		       getenv("NOTIFY_SOCKET") ? "systemd" : "no", srv->run_id, srv->cfg->port,
		       (long long)zr_time_us(), (long long)uptime, (long long)(uptime / 86400),
		       atomic_load_explicit(&srv->cfg->hz, memory_order_relaxed),
		       atomic_load_explicit(&srv->cfg->hz, memory_order_relaxed),
		       (long long)((zr_time_ms() / 1000) & ((1 << 24) - 1)),
		       srv->executable ? srv->executable : "", srv->config_file ? srv->config_file : "");
}

struct client_scan {
	uint64_t max_qbuf, max_omem, count;
};

static void client_scan_visit(struct client *cl, void *ctx)
{
	struct client_scan *s = ctx;
	uint64_t q = atomic_load_explicit(&cl->shared_qbuf, memory_order_relaxed);
	uint64_t o = atomic_load_explicit(&cl->shared_omem, memory_order_relaxed);
	if (q > s->max_qbuf)
		s->max_qbuf = q;
	if (o > s->max_omem)
		s->max_omem = o;
	s->count++;
}

static void section_clients(struct textbuf *t, struct client *c)
{
	struct server *srv = c->srv;
	struct client_scan s = { 0 };
	registry_foreach(srv->clients, client_scan_visit, &s);
	textbuf_printf(t,
		       "connected_clients:%llu\r\n"
		       "cluster_connections:0\r\n"
		       "maxclients:%lld\r\n"
		       "client_recent_max_input_buffer:%llu\r\n"
		       "client_recent_max_output_buffer:%llu\r\n"
		       "blocked_clients:%llu\r\n"
		       "tracking_clients:0\r\n"
		       "clients_in_timeout_table:0\r\n",
		       (unsigned long long)registry_count(srv->clients),
		       atomic_load_explicit(&srv->cfg->maxclients, memory_order_relaxed),
		       (unsigned long long)s.max_qbuf, (unsigned long long)s.max_omem,
		       (unsigned long long)blocking_count(srv)); /* commands/blocking.h */
}

static void section_memory(struct textbuf *t, struct client *c)
{
	struct settings *cfg = c->srv->cfg;
	size_t used = zr_mem_used(), rss = zr_mem_rss(), peak = zr_mem_peak();
	uint64_t nscripts, script_bytes;
	script_registry_stats(&nscripts, &script_bytes); /* script/script.h */
	uint64_t nlibs, nfns, vm_eval, vm_fns;
	function_counts(&nlibs, &nfns);
	script_vm_memory(&vm_eval, &vm_fns);
	uint64_t fn_bytes = function_memory();
	if (peak < used)
		peak = used;
	long long maxmem = atomic_load_explicit(&cfg->maxmemory, memory_order_relaxed);
	long pages = sysconf(_SC_PHYS_PAGES), pagesize = sysconf(_SC_PAGESIZE);
	unsigned long long sysmem =
		pages > 0 && pagesize > 0 ? (unsigned long long)pages * (unsigned long long)pagesize : 0;
	char used_h[32], rss_h[32], peak_h[32], sys_h[32], max_h[32], lua_h[32], vm_h[32], scripts_h[32];
	bytes_human(lua_h, sizeof(lua_h), vm_eval);
	bytes_human(vm_h, sizeof(vm_h), vm_eval + vm_fns);
	bytes_human(scripts_h, sizeof(scripts_h), script_bytes + fn_bytes);
	bytes_human(used_h, sizeof(used_h), used);
	bytes_human(rss_h, sizeof(rss_h), rss);
	bytes_human(peak_h, sizeof(peak_h), peak);
	bytes_human(sys_h, sizeof(sys_h), sysmem);
	bytes_human(max_h, sizeof(max_h), (unsigned long long)maxmem);
	textbuf_printf(
		t,
		"used_memory:%zu\r\n"
		"used_memory_human:%s\r\n"
		"used_memory_rss:%zu\r\n"
		"used_memory_rss_human:%s\r\n"
		"used_memory_peak:%zu\r\n"
		"used_memory_peak_human:%s\r\n"
		"used_memory_peak_perc:%.2f%%\r\n"
		"total_system_memory:%llu\r\n"
		"total_system_memory_human:%s\r\n"
		"used_memory_lua:%llu\r\n"
		"used_memory_vm_eval:%llu\r\n"
		"used_memory_lua_human:%s\r\n"
		"used_memory_scripts_eval:%llu\r\n"
		"number_of_cached_scripts:%llu\r\n"
		"number_of_functions:%llu\r\n"
		"number_of_libraries:%llu\r\n"
		"used_memory_vm_functions:%llu\r\n"
		"used_memory_vm_total:%llu\r\n"
		"used_memory_vm_total_human:%s\r\n"
		"used_memory_functions:%llu\r\n"
		"used_memory_scripts:%llu\r\n"
		"used_memory_scripts_human:%s\r\n"
		"maxmemory:%lld\r\n"
		"maxmemory_human:%s\r\n"
		"maxmemory_policy:%s\r\n"
		"mem_fragmentation_ratio:%.2f\r\n"
		"mem_fragmentation_bytes:%lld\r\n"
		"mem_not_counted_for_evict:%llu\r\n"
		"mem_replication_backlog:0\r\n"
		"mem_total_replication_buffers:0\r\n"
		"mem_clients_slaves:0\r\n"
		"mem_allocator:%s\r\n"
		"lazyfree_pending_objects:0\r\n"
		"lazyfreed_objects:0\r\n",
		used, used_h, rss, rss_h, peak, peak_h, peak ? 100.0 * (double)used / (double)peak : 0.0,
		sysmem, sys_h, (unsigned long long)vm_eval, (unsigned long long)vm_eval, lua_h,
		(unsigned long long)script_bytes, (unsigned long long)nscripts, (unsigned long long)nfns,
		(unsigned long long)nlibs, (unsigned long long)vm_fns, (unsigned long long)(vm_eval + vm_fns),
		vm_h, (unsigned long long)fn_bytes, (unsigned long long)(script_bytes + fn_bytes), scripts_h,
		maxmem, max_h,
		store_evict_policy_name(atomic_load_explicit(&cfg->maxmemory_policy, memory_order_relaxed)),
		used ? (double)rss / (double)used : 0.0, (long long)rss - (long long)used,
		(unsigned long long)store_mem_not_counted(c->srv->store), zr_mem_allocator());
}

static void section_persistence(struct textbuf *t, struct client *c)
{
	if (c->srv->persist) { /* the persistence module's own figures */
		persist_info(c->srv->persist, t);
		return;
	}
	textbuf_printf(t,
		       "loading:0\r\n"
		       "async_loading:0\r\n"
		       "current_cow_peak:0\r\n"
		       "current_cow_size:0\r\n"
		       "current_cow_size_age:0\r\n"
		       "current_fork_perc:0.00\r\n"
		       "current_save_keys_processed:0\r\n"
		       "current_save_keys_total:0\r\n"
		       "rdb_changes_since_last_save:0\r\n"
		       "rdb_bgsave_in_progress:0\r\n"
		       "rdb_last_save_time:%lld\r\n"
		       "rdb_last_bgsave_status:ok\r\n"
		       "rdb_last_bgsave_time_sec:-1\r\n"
		       "rdb_current_bgsave_time_sec:-1\r\n"
		       "rdb_saves:0\r\n"
		       "rdb_last_cow_size:0\r\n"
		       "rdb_last_load_keys_expired:0\r\n"
		       "rdb_last_load_keys_loaded:0\r\n"
		       "aof_enabled:0\r\n"
		       "aof_rewrite_in_progress:0\r\n"
		       "aof_rewrite_scheduled:0\r\n"
		       "aof_last_rewrite_time_sec:-1\r\n"
		       "aof_current_rewrite_time_sec:-1\r\n"
		       "aof_last_bgrewrite_status:ok\r\n"
		       "aof_rewrites:0\r\n"
		       "aof_rewrites_consecutive_failures:0\r\n"
		       "aof_last_write_status:ok\r\n"
		       "aof_last_cow_size:0\r\n"
		       "module_fork_in_progress:0\r\n"
		       "module_fork_last_cow_size:0\r\n",
		       (long long)atomic_load_explicit(&c->srv->lastsave, memory_order_relaxed));
}

static void section_stats(struct textbuf *t, struct client *c)
{
	struct server *srv = c->srv;
	uint64_t v[INFO_STAT_COUNT];
	info_total_counters(srv, v);
	struct store_stats ss;
	store_stats(srv->store, &ss);
	uint64_t syncs[3];
	repl_sync_counts(srv->repl, syncs);
	textbuf_printf(t,
		       "total_connections_received:%llu\r\n"
		       "total_commands_processed:%llu\r\n"
		       "instantaneous_ops_per_sec:%llu\r\n"
		       "total_net_input_bytes:%llu\r\n"
		       "total_net_output_bytes:%llu\r\n"
		       "total_net_repl_input_bytes:0\r\n"
		       "total_net_repl_output_bytes:0\r\n"
		       "instantaneous_input_kbps:%.2f\r\n"
		       "instantaneous_output_kbps:%.2f\r\n"
		       "instantaneous_input_repl_kbps:0.00\r\n"
		       "instantaneous_output_repl_kbps:0.00\r\n"
		       "rejected_connections:%llu\r\n"
		       "sync_full:%llu\r\n"
		       "sync_partial_ok:%llu\r\n"
		       "sync_partial_err:%llu\r\n"
		       "expired_keys:%llu\r\n"
		       "expired_stale_perc:0.00\r\n"
		       "expired_time_cap_reached_count:0\r\n"
		       "expire_cycle_cpu_milliseconds:%llu\r\n"
		       "evicted_keys:%llu\r\n"
		       "evicted_clients:0\r\n"
		       "total_eviction_exceeded_time:0\r\n"
		       "current_eviction_exceeded_time:0\r\n"
		       "keyspace_hits:%llu\r\n"
		       "keyspace_misses:%llu\r\n"
		       "pubsub_channels:%lu\r\n"
		       "pubsub_patterns:%lu\r\n"
		       "pubsubshard_channels:%lu\r\n"
		       "latest_fork_usec:0\r\n"
		       "total_forks:0\r\n"
		       "migrate_cached_sockets:0\r\n"
		       "slave_expires_tracked_keys:0\r\n"
		       "active_defrag_hits:0\r\n"
		       "active_defrag_misses:0\r\n"
		       "active_defrag_key_hits:0\r\n"
		       "active_defrag_key_misses:0\r\n"
		       "total_active_defrag_time:0\r\n"
		       "current_active_defrag_time:0\r\n"
		       "tracking_total_keys:0\r\n"
		       "tracking_total_items:0\r\n"
		       "tracking_total_prefixes:0\r\n"
		       "unexpected_error_replies:%llu\r\n"
		       "total_error_replies:%llu\r\n"
		       "dump_payload_sanitizations:0\r\n"
		       "total_reads_processed:%llu\r\n"
		       "total_writes_processed:%llu\r\n"
		       "io_threaded_reads_processed:0\r\n"
		       "io_threaded_writes_processed:0\r\n"
		       "client_query_buffer_limit_disconnections:%llu\r\n"
		       "client_output_buffer_limit_disconnections:%llu\r\n"
		       "reply_buffer_shrinks:0\r\n"
		       "reply_buffer_expands:0\r\n",
		       (unsigned long long)v[INFO_STAT_connections_received],
		       (unsigned long long)v[INFO_STAT_commands_processed],
		       (unsigned long long)info_rate_total(INFO_RATE_OPS),
		       (unsigned long long)v[INFO_STAT_net_input_bytes],
		       (unsigned long long)v[INFO_STAT_net_output_bytes],
		       (double)info_rate_total(INFO_RATE_NET_IN) / 1024,
		       (double)info_rate_total(INFO_RATE_NET_OUT) / 1024,
		       (unsigned long long)v[INFO_STAT_rejected_connections], (unsigned long long)syncs[0],
		       (unsigned long long)syncs[1], (unsigned long long)syncs[2],
		       (unsigned long long)ss.expired_keys,
		       (unsigned long long)(v[INFO_STAT_expire_cycle_us] / 1000),
		       (unsigned long long)ss.evicted_keys, (unsigned long long)ss.keyspace_hits,
		       (unsigned long long)ss.keyspace_misses, pubsub_names(c->srv, PUBSUB_CHANNEL),
		       pubsub_names(c->srv, PUBSUB_PATTERN), pubsub_names(c->srv, PUBSUB_SHARD),
		       (unsigned long long)v[INFO_STAT_unexpected_error_replies],
		       (unsigned long long)v[INFO_STAT_errorstat_total],
		       (unsigned long long)v[INFO_STAT_total_reads],
		       (unsigned long long)v[INFO_STAT_total_writes],
		       (unsigned long long)v[INFO_STAT_client_query_buffer_limit_disconnections],
		       (unsigned long long)v[INFO_STAT_client_output_buffer_limit_disconnections]);
	/* zarisd's own (script/script.h) */
	textbuf_printf(t, "scripts_all_shards_locked:%llu\r\n", (unsigned long long)script_all_locked_runs());
	/* the native protocol's (net/native_session.h) */
	textbuf_printf(t,
		       "total_native_connections_received:%llu\r\ntotal_native_protocol_errors:%llu\r\n"
		       "total_native_requests:%llu\r\ntotal_native_ops:%llu\r\n",
		       (unsigned long long)v[INFO_STAT_native_connections],
		       (unsigned long long)v[INFO_STAT_native_protocol_errors],
		       (unsigned long long)v[INFO_STAT_native_requests],
		       (unsigned long long)v[INFO_STAT_native_ops]);
	/* zarisd's own: writes made outside a write bracket (store/write.h),
	 * each a bug a snapshot may have missed; 0 in a sound build */
	textbuf_printf(t, "write_outside_bracket:%llu\r\n", (unsigned long long)store_write_breaches());
}

static void section_replication(struct textbuf *t, struct client *c)
{
	if (c->srv->repl) {
		repl_info(c->srv->repl, t);
		return;
	}
	textbuf_printf(t, "role:master\r\nconnected_slaves:0\r\n");
}

/* utime and stime of task TID of this process, in seconds; false when gone. */
static bool task_cpu(const char *tid, char *comm, size_t commlen, double *user, double *sys)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/self/task/%s/stat", tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "tid (comm) state ...": comm may hold spaces and parentheses, so the
	 * fields start after the last ')' */
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	if (!open || !close || close < open)
		return false;
	size_t clen = (size_t)(close - open - 1);
	if (clen >= commlen)
		clen = commlen - 1;
	memcpy(comm, open + 1, clen);
	comm[clen] = '\0';
	for (char *p = comm; *p; p++)
		if (*p == ' ' || *p == ',' || *p == ':' || *p == '=')
			*p = '_';
	unsigned long long ut = 0, st = 0;
	/* after ')': state(3) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(14) stime(15) */
	if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return false;
	long hz = sysconf(_SC_CLK_TCK);
	if (hz <= 0)
		hz = 100;
	*user = (double)ut / (double)hz;
	*sys = (double)st / (double)hz;
	return true;
}

static void section_cpu(struct textbuf *t, struct client *c)
{
	struct rusage self, children;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	textbuf_printf(t,
		       "used_cpu_sys:%ld.%06ld\r\n"
		       "used_cpu_user:%ld.%06ld\r\n"
		       "used_cpu_sys_children:%ld.%06ld\r\n"
		       "used_cpu_user_children:%ld.%06ld\r\n",
		       (long)self.ru_stime.tv_sec, (long)self.ru_stime.tv_usec, (long)self.ru_utime.tv_sec,
		       (long)self.ru_utime.tv_usec, (long)children.ru_stime.tv_sec,
		       (long)children.ru_stime.tv_usec, (long)children.ru_utime.tv_sec,
		       (long)children.ru_utime.tv_usec);
	char comm[64], pid[24];
	double user, sys;
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	if (task_cpu(pid, comm, sizeof(comm), &user, &sys))
		textbuf_printf(t, "used_cpu_sys_main_thread:%.6f\r\nused_cpu_user_main_thread:%.6f\r\n", sys,
			       user);
	/* every thread of the process: workers carry their names (comm) */
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return;
	for (struct dirent *de; (de = readdir(d));) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		if (task_cpu(de->d_name, comm, sizeof(comm), &user, &sys))
			textbuf_printf(t, "thread_%s:name=%s,used_cpu_sys=%.6f,used_cpu_user=%.6f\r\n",
				       de->d_name, comm, sys, user);
	}
	closedir(d);
}

static void section_commandstats(struct textbuf *t, struct client *c)
{
	unsigned n = command_table_size();
	for (unsigned id = 0; id < n; id++) {
		struct info_cmd_counts s;
		info_cmd_counters(c->srv, id, &s);
		if (!s.calls && !s.failed_calls && !s.rejected_calls)
			continue;
		char name[96];
		command_full_name(command_by_id(id), name, sizeof(name));
		textbuf_printf(
			t,
			"cmdstat_%s:calls=%llu,usec=%llu,usec_per_call=%.2f,rejected_calls=%llu,failed_calls=%llu\r\n",
			name, (unsigned long long)s.calls, (unsigned long long)s.usec,
			s.calls ? (double)s.usec / (double)s.calls : 0.0,
			(unsigned long long)s.rejected_calls, (unsigned long long)s.failed_calls);
	}
}

static void section_errorstats(struct textbuf *t, struct client *c)
{
	info_errorstats_write(c->srv, t);
}

static void section_modules(struct textbuf *t, struct client *c)
{
}

static void section_cluster(struct textbuf *t, struct client *c)
{
	struct server *srv = c->srv;
	textbuf_printf(t, "cluster_enabled:%d\r\n", srv->cluster != NULL);
	uint64_t epoch = 0;
	if (srv->cluster) {
		const struct topology *top = cluster_read_begin(srv->cluster, c->worker);
		epoch = top ? top->epoch : 0;
		cluster_read_end(srv->cluster, c->worker);
	}
	int64_t left = server_write_lease_remaining(srv);
	const char *lease = left < 0 ? "off" : left > 0 ? "held" : "lapsed";
	uint64_t refused = atomic_load_explicit(&srv->write_lease_refused, memory_order_relaxed);
	uint64_t dropped = atomic_load_explicit(&srv->write_lease_acks_dropped, memory_order_relaxed);
	textbuf_printf(t,
		       "cluster_topology_epoch:%llu\r\nwrite_lease:%s\r\nwrite_lease_remaining_ms:%lld\r\n"
		       "write_lease_refused:%llu\r\nwrite_lease_acks_dropped:%llu\r\n",
		       (unsigned long long)epoch, lease, (long long)(left > 0 ? left : 0),
		       (unsigned long long)refused, (unsigned long long)dropped);
}

static void section_keyspace(struct textbuf *t, struct client *c)
{
	struct store *st = c->srv->store;
	unsigned dbs = store_databases(st);
	for (unsigned db = 0; db < dbs; db++) {
		uint64_t keys = store_dbsize(st, db);
		if (!keys)
			continue;
		textbuf_printf(t, "db%u:keys=%llu,expires=%llu,avg_ttl=0\r\n", db, (unsigned long long)keys,
			       (unsigned long long)store_expires_count(st, db));
	}
}

static void section_threads(struct textbuf *t, struct client *c)
{
	struct server *srv = c->srv;
	textbuf_printf(t, "worker_threads:%u\r\nio_backend:%s\r\n", srv->nworkers,
		       srv->io_backend ? srv->io_backend : "");
	for (unsigned w = 0; w < srv->nworkers; w++) {
		uint64_t v[INFO_STAT_COUNT];
		info_worker_counters(srv, w, v);
		textbuf_printf(t, "worker%u:", w);
		for (int f = 0; f < INFO_STAT_COUNT; f++)
			textbuf_printf(t, "%s=%llu,", info_stat_name[f], (unsigned long long)v[f]);
		textbuf_printf(t, "instantaneous_ops_per_sec=%llu\r\n",
			       (unsigned long long)info_rate_worker(w));
	}
}

/* --- INFO --------------------------------------------------------------------------------- */

#define SEC_DEFAULT 0x1 /* part of INFO / INFO default */
#define SEC_ALL 0x2	/* part of INFO all */

struct info_section {
	const char *name;  /* lower case, as an INFO argument */
	const char *title; /* the "# Title" line */
	unsigned flags;
	void (*fn)(struct textbuf *t, struct client *c);
};

/* Redis 7.0's order; "modules" is the module list, empty here. */
static const struct info_section info_sections[] = {
	{ "server", "Server", SEC_DEFAULT | SEC_ALL, section_server },
	{ "clients", "Clients", SEC_DEFAULT | SEC_ALL, section_clients },
	{ "memory", "Memory", SEC_DEFAULT | SEC_ALL, section_memory },
	{ "persistence", "Persistence", SEC_DEFAULT | SEC_ALL, section_persistence },
	{ "stats", "Stats", SEC_DEFAULT | SEC_ALL, section_stats },
	{ "replication", "Replication", SEC_DEFAULT | SEC_ALL, section_replication },
	{ "cpu", "CPU", SEC_DEFAULT | SEC_ALL, section_cpu },
	{ "modules", "Modules", SEC_DEFAULT | SEC_ALL, section_modules },
	{ "commandstats", "Commandstats", SEC_ALL, section_commandstats },
	{ "errorstats", "Errorstats", SEC_DEFAULT | SEC_ALL, section_errorstats },
	{ "threads", "Threads", SEC_ALL, section_threads },
	{ "cluster", "Cluster", SEC_DEFAULT | SEC_ALL, section_cluster },
	{ "keyspace", "Keyspace", SEC_DEFAULT | SEC_ALL, section_keyspace },
};

#define INFO_SECTION_COUNT (sizeof(info_sections) / sizeof(info_sections[0]))

void cmd_info(struct client *c)
{
	bool want[INFO_SECTION_COUNT] = { false };
	unsigned any = c->argc == 1 ? SEC_DEFAULT : 0;
	for (int i = 1; i < c->argc; i++) {
		if (cmd_arg_is(c, i, "default"))
			any |= SEC_DEFAULT;
		else if (cmd_arg_is(c, i, "all") || cmd_arg_is(c, i, "everything"))
			any |= SEC_ALL;
		else
			for (size_t s = 0; s < INFO_SECTION_COUNT; s++)
				if (cmd_arg_is(c, i, info_sections[s].name))
					want[s] = true;
	}
	struct textbuf t = TEXTBUF_INIT;
	int emitted = 0;
	for (size_t s = 0; s < INFO_SECTION_COUNT; s++) {
		if (!want[s] && !(info_sections[s].flags & any))
			continue;
		if (emitted++)
			textbuf_append(&t, "\r\n", 2);
		textbuf_printf(&t, "# %s\r\n", info_sections[s].title);
		info_sections[s].fn(&t, c);
	}
	reply_verbatim(&c->out, t.p ? t.p : "", t.len, "txt");
	textbuf_free(&t);
}
