/* The native port from the cluster file to zarisd's topology, both halves
 * of the contract in one binary: the supervisor's document
 * (supervisor/topology) carries `native <port>` for exactly the nodes that
 * declare one (a primary with slots, a replica, a primary without slots),
 * zarisd's parser (zarisd/cluster/topology) reads each back into
 * native_port, and a document of a file without native ports has no
 * token at all (what an older zarisd parses); declaring a native port is
 * a new layout, so the supervisor raises the epoch for it.
 */
#include "supervisor/topology.h"
#include "tests/tap.h"
#include "zarisd/cluster/topology.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/topo-native-unit-XXXXXX";

static struct zconf *load(const char *cluster, const char *nodes)
{
	char path[300];
	struct zconf *conf = NULL;
	struct zconf_error err;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.conf", tmpdir);
	f = fopen(path, "w");
	fprintf(f, "cluster = { name = \"t\"; enabled = true; dir = \"%s\"; %s };\nnodes = (%s);\n", tmpdir,
		cluster, nodes);
	fclose(f);
	if (zconf_load_local(path, "a", &conf, &err) < 0)
		diag("load: %s:%d: %s", err.file, err.line, err.message);
	return conf;
}

/* The document node NAME of CONF is pushed at T's epoch, parsed as zarisd
 * parses it; NULL (with a diag) when zarisd refuses it. */
static struct topology *pushed(const struct sv_topology *t, const struct zconf *conf, const char *name,
			       char **doc)
{
	char err[256] = "";
	*doc = sv_topology_document(t, conf, zconf_find_node(conf, name));
	struct topology *z = topology_parse(*doc, strlen(*doc), err, sizeof(err));
	if (!z)
		diag("zarisd refuses %s's document: %s\n%s", name, err, *doc);
	return z;
}

static int native_of(const struct topology *z, const struct zconf *conf, const char *name)
{
	char id[41];
	zconf_node_id(conf, zconf_find_node(conf, name), id);
	int i = topology_find(z, id, 40);
	return i < 0 ? -1 : z->nodes[i].native_port;
}

int main(void)
{
	struct sv_topology t;
	char *doc;

	if (!mkdtemp(tmpdir))
		skip_all("mkdtemp failed");
	const char *plain = "{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; slots = \"0-16383\"; },"
			    "{ name = \"b\"; address = \"127.0.0.1\"; port = 7002; },"
			    "{ name = \"r\"; address = \"127.0.0.1\"; port = 7003; replica-of = \"a\"; }";
	const char *native = "{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; slots = \"0-16383\";"
			     "  native-port = 7101; },"
			     "{ name = \"b\"; address = \"127.0.0.1\"; port = 7002; native-port = 7102; },"
			     "{ name = \"r\"; address = \"127.0.0.1\"; port = 7003; replica-of = \"a\";"
			     "  native-port = 7103; }";
	struct zconf *c0 = load("", plain), *c1 = load("", native);
	struct zconf *c2 = load("native-port = 7200;",
				"{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; },"
				"{ name = \"b\"; address = \"127.0.0.2\"; port = 7002; },"
				"{ name = \"r\"; address = \"127.0.0.3\"; port = 7003; replica-of = \"a\";"
				"  native-port = 0; }");
	ok(c0 && c1 && c2, "three cluster files load");
	if (!c0 || !c1 || !c2)
		return done_testing();

	sv_topology_init(&t, c0);
	struct topology *z = pushed(&t, c0, "a", &doc);
	ok(z && !strstr(doc, "native"), "without native ports the document has no native token");
	ok(z && native_of(z, c0, "a") == 0 && native_of(z, c0, "r") == 0, "and zarisd reads native_port 0");
	topology_free(z);
	free(doc);
	long long e0 = t.epoch;

	ok(sv_topology_update(&t, c1) && t.epoch == e0 + 1, "declaring native ports raises the epoch");
	z = pushed(&t, c1, "r", &doc);
	ok(z != NULL, "zarisd takes the document with native ports");
	if (z) {
		is_int(native_of(z, c1, "a"), 7101, "a primary with slots: native 7101");
		is_int(native_of(z, c1, "b"), 7102, "a primary without slots: native 7102");
		is_int(native_of(z, c1, "r"), 7103, "a replica: native 7103");
		ok(strstr(doc, " primary 0-16383 native 7101\n") && strstr(doc, " primary native 7102\n"),
		   "the token ends the node lines");
	}
	topology_free(z);
	free(doc);

	sv_topology_fini(&t);
	sv_topology_init(&t, c2);
	z = pushed(&t, c2, "b", &doc);
	ok(z && native_of(z, c2, "a") == 7200 && native_of(z, c2, "b") == 7200 && native_of(z, c2, "r") == 0,
	   "the cluster's native-port for a and b, r's 0 leaves r without a token");
	topology_free(z);
	free(doc);
	sv_topology_fini(&t);

	zconf_free(c0);
	zconf_free(c1);
	zconf_free(c2);
	char path[300];
	snprintf(path, sizeof(path), "%s/c.conf", tmpdir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/supervisor-topology", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return done_testing();
}
