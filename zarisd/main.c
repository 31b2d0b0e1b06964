/* zarisd — start-up and shutdown: settings from the cluster file and the
 * command line, the keyspace, the workers (one event loop per thread, each
 * with its own SO_REUSEPORT listener), and the signal handling of the main
 * thread, which only waits for a reason to stop.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/zconf.h"
#include "zarisd/server/client.h"
#include "zarisd/server/info.h"
#include "zarisd/net/msgq.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/slowlog.h"
#include "zarisd/server/stats.h"
#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/propagate.h"
#include "zarisd/commands/replay_apply.h"
#include "zarisd/net/net.h"
#include "zarisd/net/worker.h"
#include "zarisd/journal/stream.h"
#include "zarisd/persist/load.h"
#include "zarisd/persist/persist.h"
#include "zarisd/repl/repl.h"
#include "zarisd/store/store.h"

#ifndef ZARIS_VERSION
#define ZARIS_VERSION "0.0.0"
#endif

static void usage(FILE *f)
{
	fprintf(f, "Usage: zarisd [--config FILE [--node NAME]] [--SETTING VALUE ...]\n"
		   "       zarisd --version | --help\n\n"
		   "A Redis-compatible in-memory key-value server that runs commands on every core.\n"
		   "Without --config it runs on built-in defaults (127.0.0.1:6379). Flags override the\n"
		   "cluster file. Settings (also CONFIG GET/SET names where marked):\n");
	settings_print_help(f);
}

struct start_args {
	const char *config;
	const char *node;
	int nflags;
	const char **names;
	const char **values;
};

/* Parses argv into START; exits on --help/--version and on bad usage. */
static void parse_args(int argc, char **argv, struct start_args *a)
{
	a->names = zr_calloc((size_t)argc, sizeof(char *));
	a->values = zr_calloc((size_t)argc, sizeof(char *));
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		if (!strcmp(arg, "--version") || !strcmp(arg, "-v")) {
			printf("Zaris server v=%s (Redis 7.0.15 protocol compatible) bits=64 malloc=%s\n",
			       ZARIS_VERSION, zr_mem_allocator());
			exit(0);
		}
		if (!strcmp(arg, "--check-data")) {
			/* zarisd --check-data DIR [--fix]: check (and repair) the data files */
			if (i + 1 >= argc) {
				fprintf(stderr, "zarisd: --check-data needs a directory\n");
				exit(2);
			}
			bool fix = i + 2 < argc && !strcmp(argv[i + 2], "--fix");
			exit(persist_check_data(argv[i + 1], fix));
		}
		if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
			usage(stdout);
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0 || i + 1 >= argc) {
			fprintf(stderr, "zarisd: %s '%s'\n",
				strncmp(arg, "--", 2) ? "unexpected argument" : "missing value for", arg);
			usage(stderr);
			exit(2);
		}
		const char *name = arg + 2, *value = argv[++i];
		if (!strcmp(name, "config")) {
			a->config = value;
		} else if (!strcmp(name, "node")) {
			a->node = value;
		} else if (settings_exists(name)) {
			a->names[a->nflags] = name;
			a->values[a->nflags++] = value;
		} else {
			fprintf(stderr, "zarisd: unknown setting '--%s' (see zarisd --help)\n", name);
			exit(2);
		}
	}
}

struct apply_ctx {
	struct settings *cfg;
	const char *node;
	int failed;
};

static int apply_file_setting(const char *key, const char *value, void *arg)
{
	struct apply_ctx *ctx = arg;
	char err[256];
	if (!settings_exists(key)) {
		/* keys for later subsystems (persistence, replication) */
		zr_log(ZR_LOG_NOTICE,
		       "config: node %s: setting '%s' is not supported by this zarisd yet, ignored",
		       ctx->node, key);
		return 0;
	}
	if (settings_set(ctx->cfg, key, value, true, err, sizeof(err)) < 0) {
		fprintf(stderr, "zarisd: node %s: %s = '%s': %s\n", ctx->node, key, value, err);
		ctx->failed = 1;
		return 1;
	}
	return 0;
}

/* Applies the cluster file's settings of the selected node. Exits on error. */
static void load_config_file(struct settings *cfg, const struct start_args *a)
{
	struct zconf *conf = NULL;
	struct zconf_error zerr;
	if (zconf_load_local(a->config, a->node, &conf, &zerr) < 0) {
		char buf[512];
		zconf_error_format(&zerr, buf, sizeof(buf));
		fprintf(stderr, "zarisd: %s\n", buf);
		exit(1);
	}
	const struct zconf_node *node = NULL;
	if (a->node) {
		node = zconf_find_node(conf, a->node);
	} else {
		for (size_t i = 0; i < conf->n_nodes; i++)
			if (conf->nodes[i].is_local) {
				if (node) {
					fprintf(stderr,
						"zarisd: %s: several nodes are local here; choose one with --node\n",
						a->config);
					exit(1);
				}
				node = &conf->nodes[i];
			}
	}
	if (!node) {
		fprintf(stderr, "zarisd: %s: %s\n", a->config,
			a->node ? "no node of that name (--node)"
				: "no node of this file runs on this machine");
		exit(1);
	}
	struct apply_ctx ctx = { .cfg = cfg, .node = node->name };
	zconf_node_foreach_setting(conf, node, apply_file_setting, &ctx);
	zconf_free(conf);
	if (ctx.failed)
		exit(1);
}

/* Runs one request of C on its worker. Once a stop was asked for, requests
 * are left unread (paused, as CLIENT PAUSE does): what ran before the final
 * save's instant is in it, nothing later is acknowledged. The request's
 * name is published for the shutdown's log of busy workers (stats.h). */
static int execute_command(struct client *c)
{
	if (atomic_load_explicit(&c->srv->shutdown, memory_order_relaxed))
		return DISPATCH_PAUSED;
	uint64_t name[2] = { 0, 0 };
	if (c->argc > 0)
		memcpy(name, c->argv[0].ptr, c->argv[0].len < sizeof(name) ? c->argv[0].len : sizeof(name));
	if (!name[0])
		name[0] = 1; /* an empty name still reads as busy */
	atomic_store_explicit(&c->stats->running[1], name[1], memory_order_relaxed);
	atomic_store_explicit(&c->stats->running[0], name[0], memory_order_relaxed);
	int rc = (int)dispatch_command(c);
	atomic_store_explicit(&c->stats->running[0], 0, memory_order_relaxed);
	return rc;
}

struct ready_ctx {
	struct settings *cfg;
	unsigned nworkers;
	const char *backend;
};

static void write_pidfile(const char *path);

/* The machine's THP mode: the bracketed word of the sysfs switch
 * ("always", "madvise", "never"), or "unknown". */
static const char *thp_machine_mode(void)
{
	static const char *const modes[] = { "always", "madvise", "never" };
	char line[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		char mark[16];
		snprintf(mark, sizeof(mark), "[%s]", modes[i]);
		if (strstr(line, mark))
			return modes[i];
	}
	return "unknown";
}

/* The system checks Redis makes at start-up, as far as they apply here. */
static void system_checks(const struct settings *cfg)
{
	/* main() turned transparent huge pages off before the heap grew; with
	 * disable-thp no the machine's policy applies again: "always" backs
	 * the heap with them, "madvise" only where asked (jemalloc asks with
	 * MALLOC_CONF=thp:always in zarisd's environment). No fork here, so
	 * Redis's copy-on-write reason for turning them off does not apply;
	 * the RSS one does. */
	if (!cfg->disable_thp) {
		if (prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0) < 0)
			zr_log(ZR_LOG_WARNING,
			       "WARNING: could not enable transparent huge pages for zarisd: %s",
			       strerror(errno));
		else
			zr_log(ZR_LOG_NOTICE,
			       "disable-thp no: transparent huge pages follow the machine's setting (%s)",
			       thp_machine_mode());
	}
	FILE *f = fopen("/proc/sys/net/core/somaxconn", "r");
	int somaxconn = 0;
	if (f) {
		if (fscanf(f, "%d", &somaxconn) != 1)
			somaxconn = 0;
		fclose(f);
	}
	if (somaxconn > 0 && somaxconn < cfg->tcp_backlog)
		zr_log(ZR_LOG_WARNING,
		       "WARNING: The TCP backlog setting of %d cannot be enforced because "
		       "/proc/sys/net/core/somaxconn is set to the lower value of %d.",
		       cfg->tcp_backlog, somaxconn);
}

static void on_ready(void *arg)
{
	struct ready_ctx *r = arg;
	write_pidfile(r->cfg->pidfile);
	zr_log(ZR_LOG_NOTICE, "Zaris %s, %u worker thread%s, %s backend, port %d%s%s", ZARIS_VERSION,
	       r->nworkers, r->nworkers == 1 ? "" : "s", r->backend, r->cfg->port,
	       r->cfg->ncores ? ", cores " : "", r->cfg->ncores ? r->cfg->cores_text : "");
	zr_log(ZR_LOG_NOTICE, "Ready to accept connections tcp");
}

static void write_pidfile(const char *path)
{
	if (!path || !*path)
		return;
	FILE *f = fopen(path, "w");
	if (!f) {
		zr_log(ZR_LOG_WARNING, "Failed to write PID file %s: %s", path, strerror(errno));
		return;
	}
	fprintf(f, "%d\n", (int)getpid());
	fclose(f);
}

/* How long the final save of a shutdown may wait for the shard locks
 * once net_serve gave up on a busy worker (zarisd/README.md, "Stopping"). */
#define SHUTDOWN_LOCK_WAIT_MS 5000

/* A worker did not stop within NET_STOP_WAIT_MS (net.h, logged): the final
 * save if the shard locks come in time, the log on disk, then the process
 * ends here, at once. Nothing is freed and exit handlers do not run: the
 * busy worker still uses the server. Exit status 0 when what was due is
 * saved, 1 when it could not be saved consistently. */
/* persist.h reads SHUTDOWN's choice with its own names */
_Static_assert(PERSIST_FINAL_DEFAULT == SERVER_SHUTDOWN_DEFAULT &&
		       PERSIST_FINAL_NOSAVE == SERVER_SHUTDOWN_NOSAVE &&
		       PERSIST_FINAL_SAVE == SERVER_SHUTDOWN_SAVE,
	       "persist.h and server.h disagree on the final save");

static void exit_busy(struct server *srv)
{
	int r = persist_shutdown_busy(srv->persist, SHUTDOWN_LOCK_WAIT_MS);
	zr_log(ZR_LOG_WARNING, "%s",
	       r == 0 ? "Zaris is now ready to exit, bye bye..."
		      : "Zaris exits without a consistent final save.");
	_exit(r == 0 ? 0 : 1);
}

/* Transparent huge pages make a 4 KiB write fault in 2 MiB and can inflate
 * RSS; Redis asks for them off and so does disable-thp's default. Off
 * first, whatever the machine-wide setting, so that nothing the process
 * touches before the configuration is read gets them; system_checks()
 * turns them back on for disable-thp no. */
static void thp_off_at_start(void)
{
	if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) < 0)
		fprintf(stderr, "zarisd: WARNING: could not disable transparent huge pages: %s\n",
			strerror(errno));
}

int main(int argc, char **argv)
{
	thp_off_at_start();
	zr_mem_thread_slot(0);
	zr_hash_init();
	command_table_init();

	struct settings cfg;
	settings_init(&cfg);
	struct start_args args = { 0 };
	parse_args(argc, argv, &args);
	if (args.config)
		load_config_file(&cfg, &args);
	for (int i = 0; i < args.nflags; i++) {
		char err[256];
		if (settings_set(&cfg, args.names[i], args.values[i], true, err, sizeof(err)) < 0) {
			fprintf(stderr, "zarisd: --%s '%s': %s\n", args.names[i], args.values[i], err);
			zr_free(args.names);
			zr_free(args.values);
			settings_free(&cfg);
			return 2;
		}
	}
	zr_free(args.names);
	zr_free(args.values);
	const char *rf1 = settings_rf1_conflict(&cfg);
	if (rf1) {
		fprintf(stderr, "zarisd: %s\n", rf1);
		settings_free(&cfg);
		return 2;
	}
	if (cfg.logfile[0] && zr_log_open(cfg.logfile) < 0) {
		fprintf(stderr, "zarisd: cannot open log file %s: %s\n", cfg.logfile, strerror(errno));
		settings_free(&cfg);
		return 1;
	}
	zr_log_set_level((enum zr_log_level)atomic_load(&cfg.loglevel));
	if (cfg.dir[0] && chdir(cfg.dir) < 0) {
		fprintf(stderr, "zarisd: cannot chdir to %s: %s\n", cfg.dir, strerror(errno));
		settings_free(&cfg);
		return 1;
	}

	/* Before any thread exists (the loaders and the log writer start in
	 * persist_init): every thread inherits these blocked and net_serve
	 * takes them with sigtimedwait. A thread created earlier with them
	 * unblocked could take a SIGTERM sent between two sigtimedwait calls
	 * and die by its default action: no final save, no log flush. */
	sigset_t stop_signals;
	net_block_stop_signals(&stop_signals);
	/* jemalloc's purging thread (Redis's jemalloc-bg-thread, on by default
	 * there too); jemalloc blocks every signal in it */
	int purge_rc = zr_mem_background_purge(atomic_load(&cfg.jemalloc_bg_thread));
	if (purge_rc < 0 && purge_rc != -ENOTSUP)
		fprintf(stderr, "zarisd: WARNING: jemalloc-bg-thread: %s\n", strerror(-purge_rc));

	unsigned nworkers = (unsigned)cfg.threads;
	if (nworkers == 0)
		nworkers = cfg.ncores ? (unsigned)cfg.ncores : (unsigned)sysconf(_SC_NPROCESSORS_ONLN);
	if (nworkers == 0)
		nworkers = 1;
	system_checks(&cfg);
	const struct net_backend *backend = net_choose_backend(cfg.io_backend);

	struct server srv = { 0 };
	srv.cfg = &cfg;
	srv.write_lease = cfg.write_lease != 0; /* fenced until a CLUSTER LEASE */
	pthread_rwlock_init(&srv.wake_lock, NULL);
	srv.execute = execute_command;
	srv.cron_sample = info_sample;
	srv.store = store_create((unsigned)cfg.databases, (unsigned)cfg.shard_bits);
	if (!srv.store) {
		fprintf(stderr, "zarisd: cannot create the keyspace (databases %d, shard-bits %d)\n",
			cfg.databases, cfg.shard_bits);
		settings_free(&cfg);
		return 1;
	}
	if (cfg.cluster_enabled) {
		/* the node id and the last topology, from the data directory
		 * (main is in it since the chdir above) */
		char err[512];
		srv.cluster = cluster_create(".", nworkers, err, sizeof(err));
		if (!srv.cluster) {
			fprintf(stderr, "zarisd: cluster: %s\n", err);
			store_destroy(srv.store);
			settings_free(&cfg);
			return 1;
		}
	}
	server_settings_changed(&srv);
	srv.clients = registry_create(nworkers);
	srv.slowlog = slowlog_create();
	srv.msgq = msgq_create(nworkers);
	srv.post = msgq_post;
	srv.nworkers = nworkers;
	srv.start_ms = zr_time_ms();
	srv.start_mono_us = zr_mono_us();
	srv.executable = argv[0];
	srv.config_file = args.config;
	srv.io_backend = backend->name;
	atomic_store(&srv.lastsave, (int64_t)time(NULL));
	for (int i = 0; i < 40; i++)
		srv.run_id[i] = "0123456789abcdef"[zr_hash(&i, sizeof(i)) & 15];
	/* persistence: load the snapshot and the log tail, start the log; a
	 * failure (logged there) ends the start with everything freed; the
	 * loader runs saved commands through commands/ (replay_apply.h) */
	srv.stream = stream_create(); /* before the data loads: it numbers the records after them */
	replay_apply_install(&srv);
	struct persist_env penv = {
		.store = srv.store,
		.stream = srv.stream,
		.cfg = srv.cfg,
		.nworkers = nworkers,
		.lastsave = &srv.lastsave,
		.shutdown_save = &srv.shutdown_save,
		.durable = server_publish_durable,
		.durable_ctx = &srv,
	};
	int rc = persist_init(&penv, &srv.persist);
	if (rc == 0) {
		propagate_start(&srv); /* expiries and evictions from now on are records */
		srv.repl = repl_create(&srv, load_get_apply(), nworkers);
		repl_start(srv.repl); /* the link, when replicaof is set */
		struct ready_ctx ready = { .cfg = &cfg, .nworkers = nworkers, .backend = backend->name };
		rc = net_serve(&srv, backend, nworkers, cfg.cores, cfg.ncores, on_ready, &ready);
		if (cfg.pidfile[0])
			unlink(cfg.pidfile);
		if (rc == -EBUSY)
			exit_busy(&srv);
		repl_destroy(srv.repl);
		srv.repl = NULL;
		propagate_stop(&srv);
		persist_shutdown(srv.persist);
		srv.persist = NULL; /* the final save (unless SHUTDOWN NOSAVE), log flushed */
		if (rc == 0)
			zr_log(ZR_LOG_WARNING, "Zaris is now ready to exit, bye bye...");
	}
	stream_destroy(srv.stream);
	msgq_destroy(srv.msgq);
	slowlog_destroy(srv.slowlog);
	registry_destroy(srv.clients);
	cluster_free(srv.cluster);
	store_destroy(srv.store);
	settings_free(&cfg);
	return rc == 0 ? 0 : 1;
}
