/* zaris-bench — a RESP load generator (with --native, over zarisd's native
 * protocol through libzaris: native_load.c), and with --serve the
 * comparison's floor (a canned-reply responder).
 *
 * This file only turns the command line into an lg_config (or serve_opts),
 * runs it and prints the results: a human summary and one final
 * machine-readable line on stdout,
 *   RESULT ops=N sent=N errors=N ... ops_per_s=X lat_p50_us=X ...
 * (space-separated key=value, no spaces inside values), which
 * bench/compare and the tests parse. Progress lines go to stderr.
 * Exit status: 0 when every request was answered and no connection was
 * lost (error replies do not count: a template may be meant to fail),
 * 1 otherwise, 2 on bad usage.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/hist.h"
#include "bench/keygen.h"
#include "bench/loadgen.h"
#include "bench/native_load.h"
#include "bench/serve.h"
#include "bench/slotmap.h"
#include "bench/tpl.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: zaris-bench [options]            generate load against a RESP server\n"
		   "       zaris-bench --serve [options]    answer every command with a canned reply\n"
		   "\n"
		   "  -H, --host ADDR        server address (127.0.0.1)\n"
		   "  -p, --port N           server port (6379)\n"
		   "  -t, --threads N        event-loop threads (1)\n"
		   "  -c, --conns N          connections in total, spread over the threads (50)\n"
		   "  -P, --pipeline N       requests in flight per connection (1)\n"
		   "  -n, --requests N       stop after N requests in total\n"
		   "  -D, --duration SECS    else run this long (10)\n"
		   "  -k, --keyspace N       keys are key:000000000000 .. N-1 (1000000)\n"
		   "      --dist D           uniform | seq | zipf (uniform)\n"
		   "      --zipf-s S         Zipf exponent (0.99)\n"
		   "  -d, --value-size N     bytes of __data__ (100)\n"
		   "  -r, --ratio S:G        SET:GET mix, e.g. 1:1, 1:9, 1:0 (1:1)\n"
		   "      --command TPL      a command template instead of --ratio, repeatable,\n"
		   "                         e.g. 'SET __key__ __data__' 'INCR counter:__key__'\n"
		   "      --weights W,W,...  weights of the --command templates (all 1)\n"
		   "      --key-prefix S     key name prefix (key:)\n"
		   "      --prefill          SET every key once in order: --dist seq --ratio 1:0\n"
		   "                         --requests KEYSPACE\n"
		   "      --seed N           random seed (1)\n"
		   "      --server-pid PID[,PID...]  also report these processes' CPU use over\n"
		   "                         the run, summed (a cluster's nodes)\n"
		   "      --cluster          Redis Cluster: read CLUSTER SLOTS from --host/--port,\n"
		   "                         open each of --conns to every primary, route each key\n"
		   "                         to its slot's owner, follow -MOVED and -ASK\n"
		   "      --cluster-stale-map  with --cluster, start from a wrong map (each slot\n"
		   "                         on the next primary) to exercise -MOVED\n"
		   "      --native           zarisd's native protocol (libzaris): --port is the\n"
		   "                         native port; SET/GET mixes only (--ratio, no --command)\n"
		   "      --batch N          with --native: operations per REQUEST frame, with\n"
		   "                         --cluster per node (16)\n"
		   "      --depth N          with --native: requests in flight per connection (1)\n"
		   "      --native-port-offset N  with --native --cluster: a node the topology lists\n"
		   "                         without a native port is reached on its RESP port + N\n"
		   "  -q, --quiet            no progress lines\n"
		   "      --serve            be the floor server (uses --host, --port, --threads,\n"
		   "                         --value-size)\n"
		   "      --serve-backend B  auto | zarisd | standin (auto)\n"
		   "      --cores LIST       with --serve (zarisd backend): pin loop i to the\n"
		   "                         i-th CPU of LIST, as zarisd --cores (e.g. 0,1)\n"
		   "  -h, --help\n");
}

enum {
	OPT_DIST = 256,
	OPT_ZIPF_S,
	OPT_COMMAND,
	OPT_WEIGHTS,
	OPT_KEY_PREFIX,
	OPT_PREFILL,
	OPT_SEED,
	OPT_SERVER_PID,
	OPT_SERVE,
	OPT_SERVE_BACKEND,
	OPT_CORES,
	OPT_CLUSTER,
	OPT_CLUSTER_STALE,
	OPT_NATIVE,
	OPT_BATCH,
	OPT_DEPTH,
	OPT_NATIVE_OFFSET,
};

static const struct option long_opts[] = {
	{ "host", required_argument, NULL, 'H' },
	{ "port", required_argument, NULL, 'p' },
	{ "threads", required_argument, NULL, 't' },
	{ "conns", required_argument, NULL, 'c' },
	{ "pipeline", required_argument, NULL, 'P' },
	{ "requests", required_argument, NULL, 'n' },
	{ "duration", required_argument, NULL, 'D' },
	{ "keyspace", required_argument, NULL, 'k' },
	{ "dist", required_argument, NULL, OPT_DIST },
	{ "zipf-s", required_argument, NULL, OPT_ZIPF_S },
	{ "value-size", required_argument, NULL, 'd' },
	{ "ratio", required_argument, NULL, 'r' },
	{ "command", required_argument, NULL, OPT_COMMAND },
	{ "weights", required_argument, NULL, OPT_WEIGHTS },
	{ "key-prefix", required_argument, NULL, OPT_KEY_PREFIX },
	{ "prefill", no_argument, NULL, OPT_PREFILL },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "server-pid", required_argument, NULL, OPT_SERVER_PID },
	{ "quiet", no_argument, NULL, 'q' },
	{ "serve", no_argument, NULL, OPT_SERVE },
	{ "serve-backend", required_argument, NULL, OPT_SERVE_BACKEND },
	{ "cores", required_argument, NULL, OPT_CORES },
	{ "cluster", no_argument, NULL, OPT_CLUSTER },
	{ "cluster-stale-map", no_argument, NULL, OPT_CLUSTER_STALE },
	{ "native", no_argument, NULL, OPT_NATIVE },
	{ "batch", required_argument, NULL, OPT_BATCH },
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "native-port-offset", required_argument, NULL, OPT_NATIVE_OFFSET },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct args {
	struct lg_config lg;
	const char *commands[TPL_MAX];
	unsigned ncommands;
	unsigned weights[TPL_MAX];
	unsigned nweights;
	unsigned ratio_set, ratio_get;
	const char *key_prefix;
	size_t value_size;
	int prefill;
	int serve;
	int serve_backend;
	const char *cores;	/* --cores, NULL when not given */
	int cluster;		/* --cluster */
	int stale_map;		/* --cluster-stale-map */
	int native;		/* --native */
	unsigned batch;		/* --batch (native) */
	unsigned depth;		/* --depth (native) */
	int pipeline_set;	/* -P given (refused with --native) */
	int native_port_offset; /* --native-port-offset, 0 = none */
};

static int bad(const char *opt, const char *val)
{
	fprintf(stderr, "zaris-bench: bad value for %s: '%s'\n", opt, val);
	return -EINVAL;
}

/* Parses a non-negative integer in [MIN, MAX]; accepts k/m suffixes
 * (1000s) since request counts and keyspaces are big round numbers. */
static int parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *s == '-')
		return bad(opt, s);
	if (*end == 'k' || *end == 'K')
		v *= 1000, end++;
	else if (*end == 'm' || *end == 'M')
		v *= 1000000, end++;
	if (*end || v < min || v > max)
		return bad(opt, s);
	*out = v;
	return 0;
}

static int parse_double(const char *opt, const char *s, double min, double *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end || !(v >= min))
		return bad(opt, s);
	*out = v;
	return 0;
}

static int parse_ratio(const char *s, struct args *a)
{
	unsigned set, get;
	char tail;

	if (sscanf(s, "%u:%u%c", &set, &get, &tail) != 2 || set + get == 0 || set + get > TPL_MAX_CYCLE)
		return bad("--ratio", s);
	a->ratio_set = set;
	a->ratio_get = get;
	return 0;
}

static int parse_weights(const char *s, struct args *a)
{
	const char *p = s;
	char *end;

	a->nweights = 0;
	while (*p) {
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || a->nweights == TPL_MAX || v > TPL_MAX_CYCLE)
			return bad("--weights", s);
		a->weights[a->nweights++] = (unsigned)v;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return bad("--weights", s);
	}
	return 0;
}

static int parse_pids(const char *s, struct lg_config *c)
{
	const char *p = s;
	char *end;

	c->nserver_pids = 0;
	while (*p) {
		long v = strtol(p, &end, 10);

		if (end == p || v < 1 || v > 0x7fffffff || c->nserver_pids == LG_MAX_SERVER_PIDS ||
		    (*end && *end != ','))
			return bad("--server-pid", s);
		c->server_pids[c->nserver_pids++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return c->nserver_pids ? 0 : bad("--server-pid", s);
}

static int parse_one(int opt, const char *arg, struct args *a)
{
	struct lg_config *c = &a->lg;
	uint64_t v;
	int rc;

	switch (opt) {
	case 'H':
		c->host = arg;
		return 0;
	case 'p':
		rc = parse_u64("--port", arg, 1, 65535, &v);
		c->port = (int)v;
		return rc;
	case 't':
		rc = parse_u64("--threads", arg, 1, 1024, &v);
		c->threads = (unsigned)v;
		return rc;
	case 'c':
		rc = parse_u64("--conns", arg, 1, 100000, &v);
		c->conns = (unsigned)v;
		return rc;
	case 'P':
		rc = parse_u64("--pipeline", arg, 1, 65536, &v);
		c->pipeline = (unsigned)v;
		a->pipeline_set = 1;
		return rc;
	case 'n':
		return parse_u64("--requests", arg, 1, UINT64_MAX / 2, &c->requests);
	case 'D':
		return parse_double("--duration", arg, 0.001, &c->duration_s);
	case 'k':
		return parse_u64("--keyspace", arg, 1, 1000000000000ULL, &c->keyspace);
	case OPT_DIST:
		rc = keygen_parse_dist(arg);
		if (rc < 0)
			return bad("--dist", arg);
		c->dist = (enum keygen_dist)rc;
		return 0;
	case OPT_ZIPF_S:
		return parse_double("--zipf-s", arg, 1e-9, &c->zipf_s);
	case 'd':
		rc = parse_u64("--value-size", arg, 0, 512ULL * 1024 * 1024, &v);
		a->value_size = (size_t)v;
		return rc;
	case 'r':
		return parse_ratio(arg, a);
	case OPT_COMMAND:
		if (a->ncommands == TPL_MAX)
			return bad("--command (too many)", arg);
		a->commands[a->ncommands++] = arg;
		return 0;
	case OPT_WEIGHTS:
		return parse_weights(arg, a);
	case OPT_KEY_PREFIX:
		a->key_prefix = arg;
		return 0;
	case OPT_PREFILL:
		a->prefill = 1;
		return 0;
	case OPT_SEED:
		return parse_u64("--seed", arg, 0, UINT64_MAX, &c->seed);
	case OPT_SERVER_PID:
		return parse_pids(arg, c);
	case 'q':
		c->progress = false;
		return 0;
	case OPT_SERVE:
		a->serve = 1;
		return 0;
	case OPT_SERVE_BACKEND:
		a->serve_backend = serve_parse_backend(arg);
		return a->serve_backend < 0 ? bad("--serve-backend", arg) : 0;
	case OPT_CORES:
		a->cores = arg;
		return 0;
	case OPT_CLUSTER:
		a->cluster = 1;
		return 0;
	case OPT_CLUSTER_STALE:
		a->stale_map = 1;
		return 0;
	case OPT_NATIVE:
		a->native = 1;
		return 0;
	case OPT_BATCH:
		rc = parse_u64("--batch", arg, 1, 65535, &v);
		a->batch = (unsigned)v;
		return rc;
	case OPT_DEPTH:
		rc = parse_u64("--depth", arg, 1, 65536, &v);
		a->depth = (unsigned)v;
		return rc;
	case OPT_NATIVE_OFFSET:
		rc = parse_u64("--native-port-offset", arg, 1, 65535, &v);
		a->native_port_offset = (int)v;
		return rc;
	default:
		return -EINVAL;
	}
}

static int parse_args(int argc, char **argv, struct args *a)
{
	int opt;

	memset(a, 0, sizeof(*a));
	a->lg = (struct lg_config){
		.host = "127.0.0.1",
		.port = 6379,
		.threads = 1,
		.conns = 50,
		.pipeline = 1,
		.duration_s = 10,
		.drain_timeout_s = 10,
		.dist = KEYGEN_UNIFORM,
		.keyspace = 1000000,
		.zipf_s = 0.99,
		.seed = 1,
		.progress = true,
	};
	a->ratio_set = a->ratio_get = 1;
	a->key_prefix = "key:";
	a->value_size = 100;
	a->serve_backend = SERVE_AUTO;
	a->batch = 16;
	a->depth = 1;
	while ((opt = getopt_long(argc, argv, "H:p:t:c:P:n:D:k:d:r:qh", long_opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			exit(0);
		}
		if (opt == '?' || parse_one(opt, optarg, a) < 0) {
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "zaris-bench: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (a->prefill) {
		a->lg.dist = KEYGEN_SEQ;
		a->ratio_set = 1;
		a->ratio_get = 0;
		a->ncommands = 0;
		a->lg.requests = a->lg.keyspace;
	}
	if (a->cores && (!a->serve || a->serve_backend == SERVE_STANDIN)) {
		/* the load generator is pinned from outside (taskset), and the
		 * stand-in does not pin: refuse rather than ignore */
		fprintf(stderr, "zaris-bench: --cores needs --serve with the zarisd backend\n");
		return -EINVAL;
	}
	if ((a->cluster && a->serve) || (a->stale_map && !a->cluster)) {
		fprintf(stderr, "zaris-bench: --cluster is for load, and --cluster-stale-map needs it\n");
		return -EINVAL;
	}
	if (a->native_port_offset && !(a->native && a->cluster)) {
		fprintf(stderr, "zaris-bench: --native-port-offset needs --native --cluster\n");
		return -EINVAL;
	}
	if (a->native && (a->serve || a->stale_map || a->ncommands || a->pipeline_set)) {
		/* the native mode's batch and depth are its pipeline; its
		 * operations are SET and GET only (no templates to render) */
		fprintf(stderr, "zaris-bench: --native takes --batch/--depth, not -P, and no --command, "
				"--serve or --cluster-stale-map\n");
		return -EINVAL;
	}
	if (a->lg.conns < a->lg.threads) {
		fprintf(stderr, "zaris-bench: --conns must be at least --threads\n");
		return -EINVAL;
	}
	if (a->nweights && a->nweights != a->ncommands) {
		fprintf(stderr, "zaris-bench: --weights needs one weight per --command\n");
		return -EINVAL;
	}
	return 0;
}

static double us(uint64_t ns)
{
	return (double)ns / 1000.0;
}

/* Prints the summary and the RESULT line. NATIVE is the native run's
 * result (its HELLO flags and node count), NULL for a RESP run. */
static void print_results(const struct args *a, const struct tpl_mix *mix, const struct lg_result *r,
			  const struct nl_result *native)
{
	const struct lg_config *c = &a->lg;
	const struct hist *h = &r->hist;
	double ops_s = r->elapsed_s > 0 ? (double)r->ops / r->elapsed_s : 0;
	double ccpu = r->elapsed_s > 0 ? (double)r->client_cpu_us / 1e4 / r->elapsed_s : 0;
	double ccpu_op = r->ops ? (double)r->client_cpu_us / (double)r->ops : 0;
	char mixs[256] = "", srv[400] = "server_pid=0 server_cpu_pct=-1 server_cpu_us_per_op=-1";
	char pids[200] = "", mode[96] = "mode=resp";
	unsigned nodes = c->map ? c->map->nnodes : 1;
	size_t off = 0;
	unsigned i;

	for (i = 0, off = 0; i < c->nserver_pids && off < sizeof(pids); i++)
		off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%d", i ? "," : "",
					(int)c->server_pids[i]);
	off = 0;
	for (i = 0; i < mix->n && off < sizeof(mixs); i++)
		off += (size_t)snprintf(mixs + off, sizeof(mixs) - off, "%s%s:%u", i ? "," : "",
					mix->t[i].name, mix->t[i].weight);
	if (native) {
		snprintf(mode, sizeof(mode), "mode=native batch=%u depth=%u rf1=%u", a->batch, a->depth,
			 native->server_flags & 1u);
		nodes = native->nodes ? native->nodes : 1;
	}
	if (c->nserver_pids > 0 && r->server_cpu_us >= 0)
		snprintf(srv, sizeof(srv), "server_pid=%s server_cpu_pct=%.1f server_cpu_us_per_op=%.3f",
			 pids, r->elapsed_s > 0 ? (double)r->server_cpu_us / 1e4 / r->elapsed_s : 0,
			 r->ops ? (double)r->server_cpu_us / (double)r->ops : 0);

	printf("%llu requests, %llu replies in %.3f s: %.0f ops/s\n", (unsigned long long)r->sent,
	       (unsigned long long)r->ops, r->elapsed_s, ops_s);
	printf("errors %llu, nil %llu, connections lost %llu, requests lost %llu\n",
	       (unsigned long long)r->errors, (unsigned long long)r->nils, (unsigned long long)r->conn_errors,
	       (unsigned long long)r->lost);
	if (r->first_error[0])
		printf("first error: %s\n", r->first_error);
	printf("latency us: mean %.1f  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  p99.99 %.1f  max %.1f\n",
	       hist_mean(h) / 1000.0, us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
	       us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)), us(hist_percentile(h, 99.99)),
	       us(h->max));
	printf("client cpu: %.1f%% (%.3f us/op)\n", ccpu, ccpu_op);
	if (c->map || (native && a->cluster))
		printf("cluster: %u primaries, redirects followed: %llu MOVED, %llu ASK; map re-read %llu times\n",
		       nodes, (unsigned long long)r->moved, (unsigned long long)r->asks,
		       (unsigned long long)r->refreshes);
	printf("RESULT ops=%llu sent=%llu errors=%llu nils=%llu pushes=%llu conn_errors=%llu lost=%llu "
	       "elapsed_s=%.4f ops_per_s=%.1f lat_mean_us=%.2f lat_p50_us=%.2f lat_p90_us=%.2f "
	       "lat_p99_us=%.2f lat_p999_us=%.2f lat_max_us=%.2f client_cpu_pct=%.1f "
	       "client_cpu_us_per_op=%.3f %s threads=%u conns=%u pipeline=%u keyspace=%llu "
	       "dist=%s value_size=%zu mix=%s nodes=%u moved=%llu asks=%llu refreshes=%llu %s\n",
	       (unsigned long long)r->ops, (unsigned long long)r->sent, (unsigned long long)r->errors,
	       (unsigned long long)r->nils, (unsigned long long)r->pushes, (unsigned long long)r->conn_errors,
	       (unsigned long long)r->lost, r->elapsed_s, ops_s, hist_mean(h) / 1000.0,
	       us(hist_percentile(h, 50)), us(hist_percentile(h, 90)), us(hist_percentile(h, 99)),
	       us(hist_percentile(h, 99.9)), us(h->max), ccpu, ccpu_op, srv, c->threads, c->conns,
	       native ? a->depth : c->pipeline, (unsigned long long)c->keyspace, keygen_dist_name(c->dist),
	       a->value_size, mixs, nodes, (unsigned long long)r->moved, (unsigned long long)r->asks,
	       (unsigned long long)r->refreshes, mode);
	fflush(stdout);
}

/* --cluster: the slot map from the seed node, made wrong on purpose with
 * --cluster-stale-map. Returns 0, or the exit status. */
static int load_map(struct args *a)
{
	struct slotmap *m = malloc(sizeof(*m));
	char err[256];
	unsigned s;

	if (!m)
		return 1;
	if (slotmap_fetch(a->lg.host, a->lg.port, m, err, sizeof(err)) < 0) {
		fprintf(stderr, "zaris-bench --cluster: %s\n", err);
		free(m);
		return 1;
	}
	if (a->stale_map && m->nnodes > 1)
		for (s = 0; s < ZR_KEY_SLOTS; s++)
			if (m->owner[s] != SM_NONE)
				m->owner[s] = (uint8_t)((m->owner[s] + 1) % m->nnodes);
	a->lg.map = m;
	return 0;
}

/* --native: the load through libzaris. Consumes MIX. Returns the exit
 * status. */
static int run_native(struct args *a, struct tpl_mix *mix)
{
	static struct nl_result res; /* holds a histogram: keep it off the stack */
	struct nl_config nc = {
		.lg = &a->lg,
		.mix = mix,
		.batch = a->batch,
		.depth = a->depth,
		.key_prefix = a->key_prefix,
		.value_size = a->value_size,
		.cluster = a->cluster,
		.native_port_offset = a->native_port_offset,
	};
	int rc = nl_run(&nc, &res);

	if (rc < 0) {
		fprintf(stderr, "zaris-bench --native: %s:%d: %s%s%s\n", a->lg.host, a->lg.port,
			strerror(-rc), res.lg.first_error[0] ? " — " : "", res.lg.first_error);
		tpl_mix_free(mix);
		free(mix);
		return rc == -EINVAL ? 2 : 1;
	}
	print_results(a, mix, &res.lg, &res);
	tpl_mix_free(mix);
	free(mix);
	return res.lg.conn_errors || res.lg.lost || res.lg.ops != res.lg.sent ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const char *const set_get[] = { "SET __key__ __data__", "GET __key__" };
	static struct lg_result res; /* holds a histogram: keep it off the stack */
	struct tpl_mix *mix;
	struct args a;
	char err[256];
	int rc;

	if (parse_args(argc, argv, &a) < 0)
		return 2;
	/* A peer that closes mid-write must cost a connection (EPIPE), not
	 * the process. */
	signal(SIGPIPE, SIG_IGN);
	if (a.serve) {
		struct serve_opts so = {
			.bind = a.lg.host,
			.port = a.lg.port,
			.threads = a.lg.threads,
			.value_size = a.value_size,
			.backend = (enum serve_backend)a.serve_backend,
			.cores = a.cores,
		};

		rc = serve_run(&so, err, sizeof(err));
		if (rc == -EINTR)
			return 0; /* stopped by a signal, as intended */
		fprintf(stderr, "zaris-bench --serve: %s\n",
			err[0]		? err
			: rc == -ENOSYS ? "the zarisd backend is not available"
					: strerror(-rc));
		return rc == -EINVAL ? 2 : 1;
	}
	mix = malloc(sizeof(*mix));
	if (!mix)
		return 1;
	if (a.ncommands == 0) {
		unsigned w[2] = { a.ratio_set, a.ratio_get };

		rc = tpl_mix_init(mix, set_get, w, 2, a.key_prefix, a.value_size, err, sizeof(err));
	} else {
		rc = tpl_mix_init(mix, a.commands, a.nweights ? a.weights : NULL, a.ncommands, a.key_prefix,
				  a.value_size, err, sizeof(err));
	}
	if (rc < 0) {
		fprintf(stderr, "zaris-bench: %s\n", err);
		free(mix);
		return 2;
	}
	a.lg.mix = mix;
	if (a.native)
		return run_native(&a, mix);
	if (a.cluster && (rc = load_map(&a)) != 0) {
		tpl_mix_free(mix);
		free(mix);
		return rc;
	}
	rc = lg_run(&a.lg, &res);
	if (rc < 0) {
		fprintf(stderr, "zaris-bench: %s:%d: %s%s%s\n", a.lg.host, a.lg.port, strerror(-rc),
			res.first_error[0] ? " — " : "", res.first_error);
		tpl_mix_free(mix);
		free(mix);
		free((void *)a.lg.map);
		return 1;
	}
	print_results(&a, mix, &res, NULL);
	tpl_mix_free(mix);
	free(mix);
	free((void *)a.lg.map);
	return res.conn_errors || res.lost || res.ops != res.sent ? 1 : 0;
}
