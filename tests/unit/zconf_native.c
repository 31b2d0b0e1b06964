/* Unit tests of config/zconf_native.c and the native settings' way through
 * the loader: native-port cluster-wide or per node (0 turns it off), passed
 * to zarisd as --native-port; refused, naming file and line, when it is the
 * node's own port, another node's port or native-port on the same address,
 * out of range, a port shared through overlapping binds, or an etcd port;
 * native-rf1 refused on a replica, on a primary with replicas and with
 * appendonly. */
#include "config/zconf.h"
#include "tests/tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/zconf-native-XXXXXX";

static const char *write_conf(const char *text)
{
	static char path[256];

	snprintf(path, sizeof(path), "%s/n.conf", tmpdir);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	return path;
}

/* The argv of node NAME in CONF, joined by spaces, into BUF. */
static const char *argv_text(const struct zconf *conf, const char *name, char *buf, size_t size)
{
	char **argv = zconf_node_argv(conf, zconf_find_node(conf, name), "zarisd");
	size_t len = 0;

	buf[0] = '\0';
	for (char **p = argv; p && *p && len < size; p++)
		len += (size_t)snprintf(buf + len, size - len, "%s ", *p);
	zconf_argv_free(argv);
	return buf;
}

/* Loads TEXT (nodes LOCAL local, NULL = by address) and expects a refusal
 * at LINE whose message holds WANT. */
static void refused(const char *text, const char *local, int line, const char *want, const char *what)
{
	struct zconf *conf = NULL;
	struct zconf_error err;
	char msg[900];
	const char *path = write_conf(text);
	int rc = zconf_load_local(path, local, &conf, &err);

	zconf_error_format(&err, msg, sizeof(msg));
	ok(rc == -EINVAL && !conf && err.line == line && strstr(err.message, want) &&
		   !strncmp(msg, path, strlen(path)),
	   "%s: %s", what, msg);
	if (rc == 0)
		zconf_free(conf);
}

static void test_port_good(void)
{
	struct zconf *conf = NULL;
	struct zconf_error err;
	char args[1024];
	const char *text = "cluster = {\n"
			   "  name = \"n\";\n"
			   "  native-port = 7100;\n"
			   "};\n"
			   "nodes = (\n"
			   "  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; },\n"
			   "  { name = \"b\"; address = \"127.0.0.2\"; port = 7000; },\n"
			   "  { name = \"c\"; address = \"127.0.0.1\"; port = 7001; native-port = 7101; },\n"
			   "  { name = \"d\"; address = \"127.0.0.1\"; port = 7002; native-port = 0; }\n"
			   ");\n";

	ok(zconf_load_local(write_conf(text), "a", &conf, &err) == 0,
	   "a cluster-wide native-port, two overrides, the same port on another address (%s)", err.message);
	if (!conf)
		return;
	is_int(zconf_node_native_port(conf, zconf_find_node(conf, "a")), 7100, "a inherits 7100");
	is_int(zconf_node_native_port(conf, zconf_find_node(conf, "b")), 7100, "b, on 127.0.0.2, too");
	is_int(zconf_node_native_port(conf, zconf_find_node(conf, "c")), 7101, "c's own 7101");
	is_int(zconf_node_native_port(conf, zconf_find_node(conf, "d")), 0, "d's 0: no native port");
	is_int(zconf_node_value_line(conf, zconf_find_node(conf, "a"), ZCONF_K_NATIVE_PORT), 3,
	       "a's value comes from line 3");
	is_int(zconf_node_value_line(conf, zconf_find_node(conf, "c"), ZCONF_K_NATIVE_PORT), 8,
	       "c's from line 8");
	ok(strstr(argv_text(conf, "a", args, sizeof(args)), " --native-port 7100 ") != NULL,
	   "zarisd for a gets --native-port 7100: %s", args);
	ok(strstr(argv_text(conf, "c", args, sizeof(args)), " --native-port 7101 ") != NULL,
	   "zarisd for c gets --native-port 7101: %s", args);
	zconf_free(conf);

	ok(zconf_load_local(
		   write_conf("nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 7000; } );\n"), "a",
		   &conf, &err) == 0,
	   "a file without native-port (%s)", err.message);
	if (conf) {
		is_int(zconf_node_native_port(conf, &conf->nodes[0]), 0, "no native port");
		ok(!strstr(argv_text(conf, "a", args, sizeof(args)), "native"), "and no native flag: %s",
		   args);
		zconf_free(conf);
	}
}

static void test_port_bad(void)
{
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-port = 7000; }\n"
		");\n",
		"a", 3, "node 'a' (line 2): native-port 7000 is also its port", "native-port = its own port");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; },\n"
		"  { name = \"b\"; address = \"127.0.0.1\"; port = 7001;\n"
		"    native-port = 7000; }\n"
		");\n",
		"a", 4, "node 'b' (line 3): native-port 7000 on 127.0.0.1 is node 'a''s port (line 2)",
		"native-port = an earlier node's port");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-port = 7001; },\n"
		"  { name = \"b\"; address = \"127.0.0.1\"; port = 7001; }\n"
		");\n",
		"a", 4, "node 'b': port 7001 on 127.0.0.1 is node 'a''s native-port (line 3)",
		"a port = an earlier node's native-port");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; native-port = 7100; },\n"
		"  { name = \"b\"; address = \"127.0.0.1\"; port = 7001;\n"
		"    native-port = 7100; }\n"
		");\n",
		"a", 4,
		"node 'b' (line 3): native-port 7100 on 127.0.0.1 is also node 'a''s native-port (line 2)",
		"two native-ports alike on one address");
	refused("cluster = {\n"
		"  native-port = 7100;\n"
		"};\n"
		"nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; },\n"
		"  { name = \"b\"; address = \"127.0.0.1\"; port = 7001; }\n"
		");\n",
		"a", 2,
		"node 'b' (line 6): native-port (the cluster's) 7100 on 127.0.0.1 is also node 'a''s "
		"native-port (line 2)",
		"a cluster-wide native-port for two nodes of one address");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-port = 65536; }\n"
		");\n",
		"a", 3, "'native-port' must be between 0 and 65535, not 65536", "native-port past 65535");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-port = -1; }\n"
		");\n",
		"a", 3, "'native-port' must be between 0 and 65535, not -1", "a negative native-port");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-port = \"7100\"; }\n"
		");\n",
		"a", 3, "'native-port' must be a number", "native-port as a string");
	/* two addresses, one shared bind: only the local check sees it */
	refused("cluster = { bind = \"0.0.0.0\"; };\n"
		"nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; },\n"
		"  { name = \"b\"; address = \"127.0.0.2\"; port = 7001;\n"
		"    native-port = 7000; }\n"
		");\n",
		"a,b", 5,
		"node 'b': duplicate port: its native-port 7000 is the port of local node 'a' (line 3), on a "
		"shared bind address",
		"a native-port = a local node's port through bind 0.0.0.0");
	refused("cluster = { name = \"c\"; enabled = true; };\n"
		"coordination = {\n"
		"  etcd = \"run\";\n"
		"  machines = (\n"
		"    { name = \"m1\"; address = \"127.0.0.1\"; },\n"
		"    { name = \"m2\"; address = \"127.0.0.2\"; },\n"
		"    { name = \"m3\"; address = \"127.0.0.3\"; }\n"
		"  );\n"
		"};\n"
		"nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7001; native-port = 2380; }\n"
		");\n",
		"a", 11, "node 'a': native-port 2380 on 127.0.0.1 is machine 'm1''s etcd port (line 5)",
		"a native-port = an etcd port");
}

static void test_rf1(void)
{
	struct zconf *conf = NULL;
	struct zconf_error err;
	char args[1024];

	ok(zconf_load_local(
		   write_conf(
			   "cluster = { appendonly = true; };\n"
			   "nodes = (\n"
			   "  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; native-port = 7100;\n"
			   "    native-rf1 = true; appendonly = false; },\n"
			   "  { name = \"b\"; address = \"127.0.0.1\"; port = 7001; },\n"
			   "  { name = \"r\"; address = \"127.0.0.1\"; port = 7002; replica-of = \"b\"; }\n"
			   ");\n"),
		   "a", &conf, &err) == 0,
	   "native-rf1 on a primary without replicas that turns appendonly off (%s)", err.message);
	if (conf) {
		ok(strstr(argv_text(conf, "a", args, sizeof(args)), " --native-rf1 yes ") != NULL,
		   "zarisd for a gets --native-rf1 yes: %s", args);
		ok(!strstr(argv_text(conf, "b", args, sizeof(args)), "native-rf1"), "b gets none: %s", args);
		zconf_free(conf);
	}
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-rf1 = true; },\n"
		"  { name = \"r\"; address = \"127.0.0.1\"; port = 7001; replica-of = \"a\"; }\n"
		");\n",
		"a", 3, "node 'a' (line 2): native-rf1 keeps one copy, but node 'r' (line 4) is its replica",
		"native-rf1 on a primary with a replica");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; },\n"
		"  { name = \"r\"; address = \"127.0.0.1\"; port = 7001; replica-of = \"a\";\n"
		"    native-rf1 = \"yes\"; }\n"
		");\n",
		"a", 4, "node 'r' (line 3): native-rf1 keeps one copy, but the node is a replica of 'a'",
		"native-rf1 on a replica");
	refused("cluster = {\n"
		"  appendonly = true;\n"
		"};\n"
		"nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-rf1 = true; }\n"
		");\n",
		"a", 6,
		"node 'a' (line 5): native-rf1 keeps no append-only log, but appendonly is yes (line 2)",
		"native-rf1 with the cluster's appendonly");
	refused("cluster = {\n"
		"  native-rf1 = true;\n"
		"};\n"
		"nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000; },\n"
		"  { name = \"r\"; address = \"127.0.0.1\"; port = 7001; replica-of = \"a\"; }\n"
		");\n",
		"a", 2,
		"node 'a' (line 5): native-rf1 (the cluster's) keeps one copy, but node 'r' (line 6) is its "
		"replica",
		"a cluster-wide native-rf1 with a replica");
	refused("nodes = (\n"
		"  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		"    native-rf1 = 1; }\n"
		");\n",
		"a", 3, "'native-rf1' must be a boolean", "native-rf1 as a number");
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		skip_all("mkdtemp failed");
	test_port_good();
	test_port_bad();
	test_rf1();
	unlink(write_conf(""));
	rmdir(tmpdir);
	return done_testing();
}
