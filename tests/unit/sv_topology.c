/* The supervisor's topology (supervisor/topology): documents compare equal
 * whatever their line order, comments and blanks; the epoch line is found;
 * the state file keeps the epoch across a restart with the same layout and
 * raises it for a changed one, an update and a pass; a reload that moves
 * slots or switches cluster mode is refused with the slots named; a
 * failover (zconf_promote) moves the shard's slots and replicas to the
 * promoted node and adopting etcd's epoch takes that epoch exactly.
 */
#include "supervisor/topology.h"
#include "tests/tap.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sv-topo-unit-XXXXXX";

static struct zconf *load(const char *text)
{
	char path[300];
	struct zconf *conf = NULL;
	struct zconf_error err;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.conf", tmpdir);
	f = fopen(path, "w");
	fprintf(f, "cluster = { name = \"t\"; enabled = true; dir = \"%s\"; };\nnodes = (%s);\n", tmpdir,
		text);
	fclose(f);
	if (zconf_load_local(path, "a", &conf, &err) < 0)
		diag("load: %s", err.message);
	return conf;
}

#define AB                                                          \
	"{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; }, " \
	"{ name = \"b\"; address = \"127.0.0.1\"; port = 7002; }"

int main(void)
{
	struct sv_topology t;
	struct zconf *c1, *c2, *c3;
	char buf[300], *doc;

	if (!mkdtemp(tmpdir))
		skip_all("mkdtemp failed");
	ok(sv_topology_doc_equal("epoch 2\nnode x  1\n# c\n\nmyself x\n",
				 "  epoch 2 # e\nmyself x\nnode x 1\n"),
	   "order, comments, blanks and spacing do not matter");
	ok(!sv_topology_doc_equal("epoch 2\nnode x 1\n", "epoch 2\nnode x 2\n"), "a different line does");
	ok(!sv_topology_doc_equal("epoch 2\nnode x 1\n", "epoch 2\nnode x 1\nnode y 1\n"),
	   "an extra line does");
	is_int(sv_topology_doc_epoch("# hi\nepoch 42\nnode\n"), 42, "the epoch line");
	is_int(sv_topology_doc_epoch("node\n"), -1, "no epoch line");

	c1 = load(AB);
	c2 = load("{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; }, "
		  "{ name = \"b\"; address = \"127.0.0.2\"; port = 7002; }");
	c3 = load("{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; slots = \"0-8000\"; }, "
		  "{ name = \"b\"; address = \"127.0.0.1\"; port = 7002; slots = \"8001-16383\"; }");
	if (!c1 || !c2 || !c3)
		return done_testing();
	sv_topology_init(&t, c1);
	ok(t.enabled && t.epoch == 1, "no state file: epoch 1");
	doc = sv_topology_document(&t, c1, &c1->nodes[1]);
	ok(strncmp(doc, "epoch 1\ncluster t\nnode ", 23) == 0 &&
		   strstr(doc, " b 127.0.0.1 7002 primary 8192-16383\n"),
	   "document: epoch, cluster, nodes with slots");
	free(doc);
	sv_topology_fini(&t);
	sv_topology_init(&t, c1);
	is_int(t.epoch, 1, "same layout after a restart: same epoch");
	ok(!sv_topology_update(&t, c1) && t.epoch == 1, "an update without change keeps it");
	ok(sv_topology_update(&t, c2) && t.epoch == 2, "b's new address: epoch 2");
	sv_topology_pass(&t, 5);
	is_int(t.epoch, 6, "an instance at epoch 5 is passed: 6");
	sv_topology_pass(&t, 3);
	is_int(t.epoch, 6, "a lower one changes nothing");
	sv_topology_fini(&t);
	sv_topology_init(&t, c1);
	is_int(t.epoch, 7, "restart with the earlier layout: the kept epoch + 1");
	sv_topology_fini(&t);

	ok(!sv_topology_refuse(c1, c2, buf, sizeof(buf)), "an address change is not refused");
	ok(sv_topology_refuse(c1, c3, buf, sizeof(buf)) && strstr(buf, "slots 8001-8191 from a to b") &&
		   strstr(buf, "slot moves come later"),
	   "a slot move is: %s", buf);
	/* a failover: b (replica of a) with c, another replica of a */
	struct zconf *f = load("{ name = \"a\"; address = \"127.0.0.1\"; port = 7001; }, "
			       "{ name = \"b\"; address = \"127.0.0.1\"; port = 7002; replica-of = \"a\"; }, "
			       "{ name = \"c\"; address = \"127.0.0.1\"; port = 7003; replica-of = \"a\"; }");
	if (f) {
		sv_topology_init(&t, f);
		long long e0 = t.epoch;
		is_int(zconf_promote(f, "b"), 0, "promote b");
		const struct zconf_node *a = zconf_find_node(f, "a"), *b = zconf_find_node(f, "b"),
					*c = zconf_find_node(f, "c");
		ok(b->role == ZCONF_ROLE_PRIMARY && !b->replica_of && strcmp(b->slots, "0-16383") == 0,
		   "b is the primary with every slot (%s)", b->slots);
		ok(a->role == ZCONF_ROLE_REPLICA && strcmp(a->replica_of, "b") == 0 && a->slots[0] == '\0',
		   "a is b's replica, without slots");
		ok(strcmp(c->replica_of, "b") == 0, "c follows b");
		ok(f->slot_owner[0] == 1 && f->slot_owner[16383] == 1, "the slot table names b");
		is_int(zconf_promote(f, "b"), 0, "promoting the primary again changes nothing");
		is_int(zconf_promote(f, "zz"), -ENOENT, "an unknown node: -ENOENT");
		ok(sv_topology_adopt(&t, f, e0 + 5) && t.epoch == e0 + 5,
		   "adopting etcd's epoch takes it exactly");
		doc = sv_topology_document(&t, f, b);
		ok(strstr(doc, " b 127.0.0.1 7002 primary 0-16383\n") &&
			   strstr(doc, " a 127.0.0.1 7001 replica "),
		   "the document has b as primary, a as its replica");
		free(doc);
		ok(!sv_topology_adopt(&t, f, e0 + 5), "the same again: no change");
		sv_topology_fini(&t);
		zconf_free(f);
	}
	zconf_free(c1);
	zconf_free(c2);
	zconf_free(c3);
	snprintf(buf, sizeof(buf), "%s/c.conf", tmpdir);
	unlink(buf);
	snprintf(buf, sizeof(buf), "%s/supervisor-topology", tmpdir);
	unlink(buf);
	rmdir(tmpdir);
	return done_testing();
}
