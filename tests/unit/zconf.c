/* Unit tests of config/ (zconf): units, loading, effective settings, argv,
 * local detection and errors with file:line. */
#include "config/zconf.h"
#include "tests/tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/zconf-unit-XXXXXX";

static const char *write_file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

struct collect {
	char buf[1024];
	size_t len;
};

static int collect_fn(const char *key, const char *value, void *ctx)
{
	struct collect *c = ctx;

	c->len += (size_t)snprintf(c->buf + c->len, sizeof(c->buf) - c->len, "%s=%s ", key, value);
	return 0;
}

static int stop_at_cores(const char *key, const char *value, void *ctx)
{
	return strcmp(key, "cores") == 0 ? 42 : 0;
}

static void test_units(void)
{
	unsigned long long v;
	long long d;
	cpu_set_t set;
	char norm[64];

	ok(zconf_parse_size("12gb", 0, &v) == 0 && v == 12ULL << 30, "12gb");
	ok(zconf_parse_size("1k", 0, &v) == 0 && v == 1000, "1k is 1000 (Redis)");
	ok(zconf_parse_size("1KB", 0, &v) == 0 && v == 1024, "1KB is 1024, case-insensitive");
	ok(zconf_parse_size("100", 0, &v) == 0 && v == 100, "bare bytes");
	ok(zconf_parse_size("75%", 1000, &v) == 0 && v == 750, "75%% of 1000");
	ok(zconf_parse_size("75%", 0, &v) == -EINVAL, "percent needs a total");
	ok(zconf_parse_size("101%", 1000, &v) == -EINVAL, "more than 100%% refused");
	ok(zconf_parse_size("12zb", 0, &v) == -EINVAL, "unknown unit refused");
	ok(zconf_parse_size("", 0, &v) == -EINVAL, "empty refused");
	ok(zconf_parse_size("99999999999999999999", 0, &v) == -EINVAL, "overflow refused");
	ok(zconf_parse_size("17179869184gb", 0, &v) == -EINVAL, "overflow through the unit refused");
	ok(zconf_parse_duration_ms("500ms", &d) == 0 && d == 500, "500ms");
	ok(zconf_parse_duration_ms("2s", &d) == 0 && d == 2000, "2s");
	ok(zconf_parse_duration_ms("1m", &d) == 0 && d == 60000, "1m");
	ok(zconf_parse_duration_ms("250", &d) == 0 && d == 250, "bare number is ms");
	ok(zconf_parse_duration_ms("1 s", &d) == -EINVAL, "space refused");
	ok(zconf_parse_cores("3,0-1,6", &set, norm, sizeof(norm)) == 0 && CPU_COUNT(&set) == 4, "cores list");
	is_str(norm, "0-1,3,6", "cores normalised");
	ok(zconf_parse_cores("2-1", &set, norm, sizeof(norm)) == -EINVAL, "reversed range refused");
	ok(zconf_parse_cores("0,", &set, norm, sizeof(norm)) == -EINVAL, "trailing comma refused");
	ok(zconf_parse_cores("4096", &set, norm, sizeof(norm)) == -EINVAL, "core beyond CPU_SETSIZE refused");
}

static void test_load(void)
{
	const char *path = write_file(
		"ok.conf", "cluster = { name = \"c\"; maxmemory = \"64mb\"; io-backend = \"epoll\";\n"
			   "  protected-mode = false; };\n"
			   "supervisor = { health-interval = \"250ms\"; health-failures = 5; };\n"
			   "nodes = (\n"
			   "  { name = \"a\"; address = \"127.0.0.1\"; port = 7001; cores = [1, 0];\n"
			   "    maxmemory = 1048576; enable-debug-command = \"local\"; disable-thp = false;\n"
			   "    jemalloc-bg-thread = false; },\n"
			   "  { name = \"b\"; address = \"10.255.255.1\"; port = 7001; threads = 3;\n"
			   "    replica-of = \"a\"; }\n"
			   ");\n");
	struct zconf *conf;
	struct zconf_error err;
	struct collect c = { .len = 0 };
	const struct zconf_node *a, *b;
	char **argv;

	ok(zconf_load(path, &conf, &err) == 0, "valid file loads (%s)", err.message);
	if (!conf)
		return;
	is_str(conf->cluster_name, "c", "cluster name");
	is_int(conf->sv.health_interval_ms, 250, "health-interval in ms");
	is_int(conf->sv.health_failures, 5, "health-failures");
	is_int(conf->sv.stop_timeout_ms, 10000, "stop-timeout default");
	a = zconf_find_node(conf, "a");
	b = zconf_find_node(conf, "b");
	ok(a && b && !zconf_find_node(conf, "zz"), "find nodes");
	ok(a->is_local, "127.0.0.1 is local");
	ok(!b->is_local, "10.255.255.1 is not local");
	is_int(conf->n_local, 1, "one local node");
	is_int(a->maxmemory, 1048576, "node's maxmemory overrides the cluster's");
	is_int(b->maxmemory, 64 << 20, "b inherits the cluster's maxmemory");
	ok(b->role == ZCONF_ROLE_REPLICA && strcmp(b->replica_of, "a") == 0,
	   "replica-of implies role replica");
	zconf_node_foreach_setting(conf, a, collect_fn, &c);
	is_str(c.buf,
	       "port=7001 bind=127.0.0.1 cores=0-1 io-backend=epoll maxmemory=1048576 protected-mode=no dir=./a "
	       "enable-debug-command=local disable-thp=no jemalloc-bg-thread=no ",
	       "effective settings of a, with zarisd's flag names (dir: its own under the cluster's)");
	{
		char da[256], db[256];
		zconf_node_dir(conf, a, da, sizeof(da));
		zconf_node_dir(conf, b, db, sizeof(db));
		ok(strcmp(da, db) != 0, "two nodes never share a data directory (%s, %s)", da, db);
	}
	is_int(zconf_node_foreach_setting(conf, a, stop_at_cores, NULL), 42, "foreach stops at fn's result");
	argv = zconf_node_argv(conf, b, "/usr/sbin/zarisd");
	ok(argv && strcmp(argv[0], "/usr/sbin/zarisd") == 0 && strcmp(argv[1], "--port") == 0 &&
		   strcmp(argv[2], "7001") == 0 && strcmp(argv[3], "--bind") == 0 &&
		   strcmp(argv[4], "10.255.255.1") == 0 && strcmp(argv[5], "--threads") == 0 &&
		   strcmp(argv[6], "3") == 0,
	   "argv for b");
	zconf_argv_free(argv);
	ok(zconf_key_is_live(ZCONF_K_MAXMEMORY) && !zconf_key_is_live(ZCONF_K_CORES),
	   "maxmemory is live, cores is not");
	zconf_free(conf);

	ok(zconf_load_local(path, "b", &conf, &err) == 0 && conf, "--node b");
	ok(conf && !zconf_find_node(conf, "a")->is_local && zconf_find_node(conf, "b")->is_local,
	   "--node b makes only b local");
	zconf_free(conf);
	ok(zconf_load_local(path, "a,zz", &conf, &err) == -EINVAL && !conf,
	   "--node with an unknown name fails");
	ok(strstr(err.message, "--node zz") != NULL, "and names it: %s", err.message);
}

static void test_replicas(void)
{
	const char *path =
		write_file("repl.conf",
			   "cluster = { requirepass = \"pw\"; bind = \"0.0.0.0\"; };\n"
			   "supervisor = { catch-up-lag = \"64kb\"; catch-up-timeout = \"5s\"; };\n"
			   "nodes = (\n"
			   "  { name = \"c\"; address = \"127.0.0.3\"; port = 7003; replica-of = \"b\"; },\n"
			   "  { name = \"a\"; address = \"127.0.0.1\"; port = 7001; },\n"
			   "  { name = \"b\"; address = \"127.0.0.2\"; port = 7002; role = \"replica\";\n"
			   "    replica-of = \"a\"; requirepass = \"own\"; }\n"
			   ");\n");
	struct zconf *conf;
	struct zconf_error err;
	struct collect c = { .len = 0 };
	char target[128];
	const struct zconf_node *a, *b, *cn;

	ok(zconf_load(path, &conf, &err) == 0, "a chain c -> b -> a loads (%s)", err.message);
	if (!conf)
		return;
	a = zconf_find_node(conf, "a");
	b = zconf_find_node(conf, "b");
	cn = zconf_find_node(conf, "c");
	is_int(conf->sv.catch_up_lag, 65536, "catch-up-lag in bytes");
	is_int(conf->sv.catch_up_timeout_ms, 5000, "catch-up-timeout in ms");
	ok(zconf_replicaof(conf, a, target, sizeof(target)) == NULL && target[0] == '\0',
	   "a primary follows nobody");
	ok(zconf_replicaof(conf, b, target, sizeof(target)) == a && strcmp(target, "127.0.0.1 7001") == 0,
	   "b follows a at its declared address, though a binds 0.0.0.0 (%s)", target);
	ok(zconf_replicaof(conf, cn, target, sizeof(target)) == b && strcmp(target, "127.0.0.2 7002") == 0,
	   "c follows b (%s)", target);
	is_int(zconf_replica_depth(conf, a), 0, "depth of a primary");
	is_int(zconf_replica_depth(conf, b), 1, "depth of a replica of a primary");
	is_int(zconf_replica_depth(conf, cn), 2, "depth of a replica of a replica");
	ok(zconf_masterauth(conf, a) == NULL, "a primary has no masterauth");
	is_str(zconf_masterauth(conf, b), "pw", "b authenticates with a's requirepass");
	is_str(zconf_masterauth(conf, cn), "own", "c with b's own requirepass");
	zconf_node_foreach_setting(conf, b, collect_fn, &c);
	ok(strstr(c.buf, " replicaof=127.0.0.1 7001 masterauth=pw ") != NULL &&
		   strcmp(c.buf + strlen(c.buf) - strlen("masterauth=pw "), "masterauth=pw ") == 0,
	   "b's settings end with replicaof and masterauth: %s", c.buf);
	c.len = 0;
	c.buf[0] = '\0';
	zconf_node_foreach_setting(conf, a, collect_fn, &c);
	ok(strstr(c.buf, "replicaof") == NULL && strstr(c.buf, "masterauth") == NULL,
	   "a primary gets neither: %s", c.buf);
	zconf_free(conf);

	path = write_file("repl.conf", "nodes = (\n"
				       "  { name = \"a\"; address = \"127.0.0.1\"; port = 7001; },\n"
				       "  { name = \"b\"; address = \"127.0.0.1\"; port = 7002;\n"
				       "    replica-of = \"a\"; }\n"
				       ");\n");
	ok(zconf_load(path, &conf, &err) == 0, "replica without requirepass loads");
	c.len = 0;
	c.buf[0] = '\0';
	if (conf)
		zconf_node_foreach_setting(conf, zconf_find_node(conf, "b"), collect_fn, &c);
	ok(strstr(c.buf, "replicaof=127.0.0.1 7001 ") != NULL && strstr(c.buf, "masterauth") == NULL,
	   "no masterauth when the primary has no password: %s", c.buf);
	zconf_free(conf);

	path = write_file("repl.conf",
			  "nodes = (\n"
			  "  { name = \"a\"; address = \"127.0.0.1\"; port = 7001;\n"
			  "    replica-of = \"b\"; },\n"
			  "  { name = \"b\"; address = \"127.0.0.1\"; port = 7002; replica-of = \"a\"; }\n"
			  ");\n");
	ok(zconf_load(path, &conf, &err) == -EINVAL && !conf, "a loop of two is refused");
	is_int(err.line, 3, "at the first member's replica-of line");
	ok(strstr(err.message, "loop (a -> b -> a)") != NULL, "naming the loop: %s", err.message);
	path = write_file("repl.conf",
			  "supervisor = { catch-up-lag = \"2gb\"; };\n"
			  "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 7001; } );\n");
	ok(zconf_load(path, &conf, &err) == -EINVAL && strstr(err.message, "catch-up-lag") != NULL,
	   "catch-up-lag past 1 GiB refused: %s", err.message);
	unlink(write_file("repl.conf", ""));
}

/* Cluster mode: the automatic split is redis-cli --cluster create's (its
 * 3- and 5-primary layouts are the ones it prints), explicit slots are
 * normalised, node ids are SHA-1 of "<cluster>/<node>", and zarisd starts
 * with --cluster-enabled yes. */
static void test_cluster(void)
{
	static const char *const want5[] = { "0-3276", "3277-6553", "6554-9829", "9830-13106",
					     "13107-16383" };
	char text[2048], id[41], norm[64], why[200];
	size_t len;
	struct zconf *conf;
	struct zconf_error err;
	unsigned char owned[ZCONF_SLOTS / 8] = { 0 };
	char **argv;
	bool ok5 = true, last_yes;

	len = (size_t)snprintf(text, sizeof(text),
			       "cluster = { name = \"c\"; enabled = true; };\nnodes = (\n");
	for (int i = 0; i < 5; i++)
		len += (size_t)snprintf(
			text + len, sizeof(text) - len,
			"  { name = \"%c\"; address = \"127.0.0.1\"; port = %d; },\n"
			"  { name = \"r%d\"; address = \"127.0.0.1\"; port = %d; replica-of = \"%c\"; },\n",
			'a' + i, 7001 + i, i, 8001 + i, 'a' + i);
	snprintf(text + len - 2, sizeof(text) - len + 2, "\n);\n");
	ok(zconf_load_local(write_file("c5.conf", text), "a", &conf, &err) == 0,
	   "5+5 auto cluster loads (%s)", err.message);
	if (!conf)
		return;
	ok(conf->cluster_enabled && conf->slots_auto, "cluster mode, automatic slots");
	for (int i = 0; i < 5; i++) {
		ok5 &= strcmp(conf->nodes[2 * i].slots, want5[i]) == 0;
		ok5 &= strcmp(conf->nodes[2 * i + 1].slots, "") == 0;
	}
	ok(ok5, "five primaries split as redis-cli: %s %s %s %s %s", conf->nodes[0].slots,
	   conf->nodes[2].slots, conf->nodes[4].slots, conf->nodes[6].slots, conf->nodes[8].slots);
	zconf_node_id(conf, &conf->nodes[0], id);
	is_str(id, "37389b93db47167535bfc384879ff4d7bc01e8e2", "node id of a = sha1(\"c/a\")");
	argv = zconf_node_argv(conf, &conf->nodes[0], "zarisd");
	for (len = 0; argv && argv[len]; len++)
		;
	last_yes = argv && len >= 2 && strcmp(argv[len - 2], "--cluster-enabled") == 0 &&
		   strcmp(argv[len - 1], "yes") == 0;
	ok(last_yes, "zarisd starts with --cluster-enabled yes");
	zconf_argv_free(argv);
	zconf_free(conf);

	ok(zconf_load(write_file("c3.conf",
				 "cluster = { name = \"c\"; enabled = true; slots = \"auto\"; };\n"
				 "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 1; },\n"
				 " { name = \"b\"; address = \"127.0.0.1\"; port = 2; },\n"
				 " { name = \"c\"; address = \"127.0.0.1\"; port = 3; } );\n"),
		      &conf, &err) == 0,
	   "3 primaries load");
	if (conf) {
		ok(strcmp(conf->nodes[0].slots, "0-5460") == 0 &&
			   strcmp(conf->nodes[1].slots, "5461-10922") == 0 &&
			   strcmp(conf->nodes[2].slots, "10923-16383") == 0,
		   "three primaries split as redis-cli: %s %s %s", conf->nodes[0].slots, conf->nodes[1].slots,
		   conf->nodes[2].slots);
		ok(conf->slot_owner[5460] == 0 && conf->slot_owner[5461] == 1 && conf->slot_owner[16383] == 2,
		   "slot_owner follows the split");
		zconf_free(conf);
	}
	ok(zconf_load(write_file("cx.conf", "cluster = { name = \"c\"; enabled = true; };\n"
					    "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 1;"
					    " slots = \"16383, 0-99,100-200 ,8000\"; },\n"
					    " { name = \"b\"; address = \"127.0.0.1\"; port = 2;"
					    " slots = \"201-7999,8001-16382\"; } );\n"),
		      &conf, &err) == 0,
	   "explicit slots load (%s)", err.message);
	if (conf) {
		is_str(conf->nodes[0].slots, "0-200,8000,16383", "explicit slots normalised");
		zconf_free(conf);
	}
	ok(zconf_parse_slots("1-2,x", owned, why, sizeof(why)) == -EINVAL && strstr(why, "\"x\""),
	   "a bad item is named: %s", why);
	ok(zconf_parse_slots("5,1-9", owned, why, sizeof(why)) == -EINVAL &&
		   strstr(why, "slot 5 is listed twice"),
	   "a slot twice in one list: %s", why);
	ok(zconf_parse_slots("", owned, why, sizeof(why)) == -EINVAL, "an empty list is refused");
	ok(zconf_parse_slots("3-5,7", owned, why, sizeof(why)) == 0, "3-5,7 parses");
	zconf_format_slots(owned, norm, sizeof(norm));
	is_str(norm, "3-5,7", "and formats back");
	ok(zconf_load(write_file("off.conf",
				 "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 1; } );\n"),
		      &conf, &err) == 0 &&
		   !conf->cluster_enabled && !conf->slot_owner && !conf->nodes[0].slots,
	   "cluster mode is off by default");
	zconf_free(conf);
}

static const char coord_run[] =
	"cluster = { name = \"c\"; enabled = true; slots = \"auto\"; dir = \"/var/lib/z\"; };\n"
	"coordination = {\n"
	"  etcd = \"run\";\n"
	"  machines = (\n"
	"    { name = \"m1\"; address = \"127.0.0.1\"; },\n"
	"    { name = \"m2\"; address = \"127.0.0.2\"; },\n"
	"    { name = \"m3\"; address = \"127.0.0.1\"; etcd-client-port = 3379; etcd-peer-port = 3380; }\n"
	"  );\n"
	"};\n"
	"nodes = (\n"
	"  { name = \"a\"; address = \"127.0.0.1\"; port = 7001; machine = \"m1\"; },\n"
	"  { name = \"b\"; address = \"127.0.0.2\"; port = 7002; },\n"
	"  { name = \"c\"; address = \"127.0.0.1\"; port = 7003; machine = \"m3\"; },\n"
	"  { name = \"rb\"; address = \"127.0.0.1\"; port = 7004; replica-of = \"b\"; machine = \"m1\"; }\n"
	");\n";

static void test_coord(void)
{
	struct zconf *conf;
	struct zconf_error err;
	struct collect col = { .len = 0 };
	char buf[512];
	const char *path = write_file(
		"co1.conf", "cluster = { name = \"c\"; enabled = true; };\n"
			    "coordination = { etcd = \"http://10.0.0.1:2379,http://[::1]:2379\"; };\n"
			    "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 7001; } );\n");

	ok(zconf_load(path, &conf, &err) == 0, "endpoint list, no machines, loads (%s)", err.message);
	if (!conf)
		return;
	ok(conf->coord.enabled && !conf->coord.run_etcd && conf->coord.line == 2, "coordination on, line 2");
	is_str(conf->coord.endpoints, "http://10.0.0.1:2379,http://[::1]:2379", "endpoints as given");
	is_int(conf->coord.lease_ttl_ms, 5000, "lease-ttl defaults to 5s");
	is_int(conf->coord.replica_validity_ms, 10000, "replica-validity defaults to 10s");
	is_str(conf->coord.prefix, "/zaris", "prefix defaults to /zaris");
	ok(!conf->coord.etcd_dir && conf->coord.n_machines == 0, "no etcd-dir, no machines");
	ok(conf->nodes[0].machine == -1 && conf->coord.local_machine == -1, "nodes have no machine (-1)");
	zconf_node_foreach_setting(conf, &conf->nodes[0], collect_fn, &col);
	ok(col.len > 36 && strcmp(col.buf + col.len - 36, "cluster-enabled=yes write-lease=yes ") == 0,
	   "zarisd gets write-lease yes last: %s", col.buf);
	zconf_free(conf);

	path = write_file("co1.conf",
			  "cluster = { name = \"c\"; enabled = true; };\n"
			  "coordination = { etcd = \"http://127.0.0.1:2379\"; lease-ttl = \"2s\";\n"
			  "  replica-validity = 1500; prefix = \"/z/prod\"; etcd-dir = \"/srv/etcd\"; };\n"
			  "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 7001; } );\n");
	ok(zconf_load(path, &conf, &err) == 0, "every key set loads (%s)", err.message);
	if (conf) {
		ok(conf->coord.lease_ttl_ms == 2000 && conf->coord.replica_validity_ms == 1500,
		   "lease-ttl 2s, replica-validity 1500 (a bare number is ms)");
		ok(strcmp(conf->coord.prefix, "/z/prod") == 0 &&
			   strcmp(conf->coord.etcd_dir, "/srv/etcd") == 0,
		   "prefix and etcd-dir");
		zconf_free(conf);
	}

	path = write_file("co2.conf", coord_run);
	ok(zconf_load_local(path, "machine:m1", &conf, &err) == 0, "etcd = run with 3 machines loads (%s)",
	   err.message);
	if (!conf)
		return;
	ok(conf->coord.run_etcd && conf->coord.n_machines == 3, "run, 3 machines");
	is_str(conf->coord.endpoints, "http://127.0.0.1:2379,http://127.0.0.2:2379,http://127.0.0.1:3379",
	       "endpoints built from the machines' client ports");
	ok(conf->coord.machines[0].etcd_client_port == 2379 && conf->coord.machines[0].etcd_peer_port == 2380,
	   "ports default to 2379/2380");
	zconf_etcd_initial_cluster(conf, buf, sizeof(buf));
	is_str(buf, "m1=http://127.0.0.1:2380,m2=http://127.0.0.2:2380,m3=http://127.0.0.1:3380",
	       "initial cluster from the peer ports");
	ok(zconf_etcd_member_dir(conf, &conf->coord.machines[1], buf, sizeof(buf)) > 0, "member dir");
	is_str(buf, "/var/lib/z/etcd-m2", "default member dir: the cluster dir + /etcd-<machine>");
	ok(zconf_etcd_member_dir(conf, &conf->coord.machines[1], buf, 8) == -ENAMETOOLONG,
	   "too long refused");
	ok(conf->nodes[0].machine == 0 && conf->nodes[1].machine == 1 && conf->nodes[2].machine == 2 &&
		   conf->nodes[3].machine == 0,
	   "machine by name, else by address (b on m2 by 127.0.0.2): %d %d %d %d", conf->nodes[0].machine,
	   conf->nodes[1].machine, conf->nodes[2].machine, conf->nodes[3].machine);
	ok(conf->coord.local_machine == 0 && conf->coord.machines[0].is_local &&
		   !conf->coord.machines[1].is_local,
	   "--machine m1 is the local machine");
	ok(conf->n_local == 2 && conf->nodes[0].is_local && conf->nodes[3].is_local &&
		   !conf->nodes[1].is_local && !conf->nodes[2].is_local,
	   "--machine m1: exactly its nodes a and rb are local");
	ok(zconf_find_machine(conf, "m3") == &conf->coord.machines[2] && !zconf_find_machine(conf, "m9"),
	   "zconf_find_machine");
	zconf_free(conf);

	ok(zconf_load_local(path, "machine:m2", &conf, &err) == 0 && conf->n_local == 1 &&
		   conf->nodes[1].is_local && conf->coord.local_machine == 1,
	   "--machine m2: node b only");
	zconf_free(conf);
	ok(zconf_load_local(path, "machine:m9", &conf, &err) == -EINVAL && !conf && err.line == 0 &&
		   strstr(err.message, "--machine m9: no machine of that name"),
	   "--machine with an unknown name: %s", err.message);
	ok(zconf_load_local(path, "a,rb", &conf, &err) == 0 && conf->coord.local_machine == 0,
	   "--node a,rb: their machine m1 is local");
	zconf_free(conf);
	ok(zconf_load_local(path, "a,b", &conf, &err) == -EINVAL && !conf &&
		   strstr(err.message, "must share one machine"),
	   "--node a,b on two machines refused: %s", err.message);
	/* All of 127.0.0.0/8 is local on Linux: every node is, on three machines. */
	ok(zconf_load(path, &conf, &err) == 0 && conf->n_local == 4 && conf->coord.local_machine == -1,
	   "found by address on several machines: local machine unknown (-1)");
	zconf_free(conf);

	ok(zconf_load_local(write_file("co3.conf", "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; "
						   "port = 7001; } );\n"),
			    NULL, &conf, &err) == 0 &&
		   !conf->coord.enabled && conf->coord.local_machine == -1 && conf->nodes[0].machine == -1,
	   "no coordination section: off, no machines");
	col.len = 0;
	col.buf[0] = '\0';
	zconf_node_foreach_setting(conf, &conf->nodes[0], collect_fn, &col);
	ok(!strstr(col.buf, "write-lease"), "and no write-lease: %s", col.buf);
	zconf_free(conf);
	ok(zconf_load_local(write_file("co3.conf", "nodes = ( { name = \"a\"; address = \"127.0.0.1\"; "
						   "port = 7001; } );\n"),
			    "machine:m1", &conf, &err) == -EINVAL &&
		   strstr(err.message, "declares no machines"),
	   "--machine on a file without machines: %s", err.message);
}

static void test_errors(void)
{
	struct zconf *conf;
	struct zconf_error err;
	char msg[900];
	const char *path = write_file("bad.conf", "nodes = (\n  { name = \"a\"; address = \"127.0.0.1\";\n"
						  "    port = 7001; cores = \"0\"; },\n"
						  "  { name = \"b\"; address = \"127.0.0.1\"; port = 7002;\n"
						  "    cores = \"0\"; }\n);\n");

	ok(zconf_load(path, &conf, &err) == -EINVAL && !conf, "overlapping cores rejected");
	is_int(err.line, 5, "at the second node's cores line");
	ok(strstr(err.message, "overlapping cores") != NULL, "message: %s", err.message);
	zconf_error_format(&err, msg, sizeof(msg));
	ok(strncmp(msg, path, strlen(path)) == 0 && strstr(msg, ":5: ") != NULL, "formatted file:line: %s",
	   msg);
	path = write_file("bad.conf", "cluster = {\n  enable-debug-command = \"maybe\";\n};\n");
	ok(zconf_load(path, &conf, &err) == -EINVAL && !conf,
	   "enable-debug-command outside no|yes|local rejected");
	is_int(err.line, 2, "at its line");
	ok(strstr(err.message, "enable-debug-command") != NULL, "message names the key: %s", err.message);
	ok(zconf_load("/nonexistent/zaris.conf", &conf, &err) == -ENOENT, "missing file is -ENOENT");
	is_int(err.line, 0, "no line for a missing file");
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		skip_all("mkdtemp failed");
	test_units();
	test_load();
	test_replicas();
	test_errors();
	test_cluster();
	test_coord();
	unlink(write_file("co1.conf", ""));
	unlink(write_file("co2.conf", ""));
	unlink(write_file("co3.conf", ""));
	unlink(write_file("c5.conf", ""));
	unlink(write_file("c3.conf", ""));
	unlink(write_file("cx.conf", ""));
	unlink(write_file("off.conf", ""));
	unlink(write_file("ok.conf", ""));
	unlink(write_file("bad.conf", ""));
	rmdir(tmpdir);
	return done_testing();
}
