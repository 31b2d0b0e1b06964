/* cluster/topology: the document parser. Good documents (comments, blank
 * lines, any line order after the epoch, single slots and ranges, IPv6,
 * replicas before their primary) give the slot table and the nodes; every
 * bad one is refused with the line at fault named; one layout written two
 * ways compares equal, a changed one does not; the optional native port
 * (with and without it, bad values by line). cluster/cluster: a push
 * sequence (older epoch, same epoch other layout, idempotent re-push,
 * reload from the file) and the reclamation of retired tables while a
 * reader holds one. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/cluster/cluster.h"
#include "zarisd/cluster/topology.h"
#include "zarisd/core/thread.h"

#define A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define C "cccccccccccccccccccccccccccccccccccccccc"

static struct topology *parse(const char *doc, char *err)
{
	return topology_parse(doc, strlen(doc), err, 256);
}

static const char *good = "# a comment line\n"
			  "epoch 7\n"
			  "\n"
			  "node " C " c ::1 7002 replica " A "   # before its primary\n"
			  "cluster local\n"
			  "node " A " a 127.0.0.1 7000 primary 0-99,5000,101-200\n"
			  "myself " C "\n"
			  "node " B " b 127.0.0.2 7001 primary 201-4999,5001-16383,100\n";

static void test_good(void)
{
	char err[256] = "";
	struct topology *t = parse(good, err);
	ok(t != NULL, "a good document parses (%s)", err);
	if (!t)
		return;
	is_int((long long)t->epoch, 7, "epoch");
	is_str(t->cluster, "local", "cluster name");
	is_int(t->nnodes, 3, "three nodes");
	is_str(t->nodes[t->myself].id, C, "myself");
	is_int(t->nodes[t->myself].primary, topology_find(t, A, 40), "the replica's primary is resolved");
	is_int(t->assigned, 16384, "every slot assigned");
	int a = topology_find(t, A, 40), b = topology_find(t, B, 40);
	ok(t->owner[0] == a && t->owner[99] == a && t->owner[5000] == a && t->owner[200] == a,
	   "a's ranges and single slot");
	ok(t->owner[100] == b && t->owner[16383] == b && t->owner[201] == b, "b's");
	is_int(t->nodes[a].nslots, 201, "a owns 201 slots");
	is_str(t->nodes[topology_find(t, C, 40)].ip, "::1", "IPv6 address");
	is_int(t->nodes[topology_find(t, C, 40)].line, 4, "a node keeps its line");

	const char *same = "epoch 9\ncluster local\nmyself " C "\n"
			   "node " B " b 127.0.0.2 7001 primary 100,201-4999,5001-16383\n"
			   "node " A " a 127.0.0.1 7000 primary 0-99,101-200,5000\n"
			   "node " C " c ::1 7002 replica " A "\n";
	struct topology *u = parse(same, err);
	ok(u && topology_same_layout(t, u), "the same layout written otherwise compares equal (%s)", err);
	topology_free(u);
	const char *moved = "epoch 7\ncluster local\nmyself " C "\n"
			    "node " B " b 127.0.0.2 7009 primary 100,201-4999,5001-16383\n"
			    "node " A " a 127.0.0.1 7000 primary 0-99,101-200,5000\n"
			    "node " C " c ::1 7002 replica " A "\n";
	u = parse(moved, err);
	ok(u && !topology_same_layout(t, u), "a changed port is a different layout");
	topology_free(u);
	topology_free(t);

	t = parse("epoch 1\ncluster x\nmyself " A "\nnode " A " a 127.0.0.1 1 primary 0\n", err);
	ok(t && t->assigned == 1 && t->owner[1] == TOPO_NO_OWNER, "a partial layout leaves slots unowned");
	topology_free(t);
	t = parse("epoch 1\ncluster x\nmyself " A "\nnode " A " a 127.0.0.1 1 primary\n", err);
	ok(t && t->assigned == 0, "a primary without ranges owns nothing");
	topology_free(t);
}

static void bad(const char *doc, const char *want, const char *what)
{
	char err[256] = "";
	struct topology *t = parse(doc, err);
	ok(!t && !strcmp(err, want), "%s: '%s' (want '%s')", what, err, want);
	topology_free(t);
}

#define HEAD "epoch 1\ncluster x\nmyself " A "\n"
#define NA "node " A " a 127.0.0.1 7000 primary 0-16383\n"

static void test_bad(void)
{
	bad("", "line 1: the document must start with 'epoch <n>'", "empty");
	bad("cluster x\nepoch 1\n", "line 1: the document must start with 'epoch <n>'", "epoch not first");
	bad("epoch x\n", "line 1: an epoch is one number 0..9223372036854775807", "epoch not a number");
	bad("epoch 1\nepoch 2\n", "line 2: a second epoch line", "two epochs");
	bad("epoch 1\ncluster x\n" NA, "line 3: no 'myself <id>' line", "no myself");
	bad("epoch 1\nmyself " A "\n" NA, "line 3: no 'cluster <name>' line", "no cluster");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383\nnode " B " b 127.0.0.1 7001 primary 5\n",
	    "line 5: slot 5 is also owned by line 4", "overlap");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16384\n",
	    "line 4: '0-16384' is not a slot or range of slots in 0..16383", "slot out of range");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 9-3\n", "line 4: range 9-3 runs backwards",
	    "backwards");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 1,,2\n",
	    "line 4: '' is not a slot or range of slots in 0..16383", "empty range");
	bad(HEAD "node " A " a 127.0.0.1 0 primary 1\n", "line 4: port '0' is not in 1..65535", "port 0");
	bad(HEAD "node " A " a 127.0.0.1 65536 primary 1\n", "line 4: port '65536' is not in 1..65535",
	    "port big");
	bad(HEAD "node " A " a localhost 7000 primary 1\n", "line 4: 'localhost' is not an IP address",
	    "host name");
	bad(HEAD "node AAAA a 127.0.0.1 7000 primary 1\n",
	    "line 4: node id 'AAAA' is not 40 lowercase hex digits", "bad id");
	bad(HEAD NA "node " A " b 127.0.0.1 7001 replica " A "\n", "line 5: node id " A " is named twice",
	    "id twice");
	bad(HEAD NA "node " B " a 127.0.0.1 7001 replica " A "\n", "line 5: node name 'a' is used twice",
	    "name twice");
	bad(HEAD NA "node " B " b 127.0.0.1 7000 replica " A "\n",
	    "line 5: address 127.0.0.1:7000 is also line 4's", "address twice");
	bad(HEAD NA "node " B " b 127.0.0.1 7001 replica " C "\n", "line 5: primary " C " names no node line",
	    "unknown primary");
	bad(HEAD NA "node " B " b 127.0.0.1 7001 replica " A "\nnode " C " c 127.0.0.1 7002 replica " B "\n",
	    "line 6: " B " is a replica (line 5), not a primary", "replica of a replica");
	bad(HEAD NA "node " B " b 127.0.0.1 7001 leader 1\n",
	    "line 5: role 'leader' is neither primary nor replica", "bad role");
	bad("epoch 1\ncluster x\nmyself " B "\n" NA, "line 3: myself " B " names no node line",
	    "myself unknown");
	bad(HEAD NA "shard 1\n", "line 5: unknown item 'shard' (epoch, cluster, myself or node)",
	    "unknown item");
	bad(HEAD "node " A " a 127.0.0.1 7000\n",
	    "line 4: a node line is: node <id> <name> <ip> <port> primary <ranges> | replica <primary-id>",
	    "short node line");
	bad(HEAD "myself " A "\n" NA, "line 4: a second myself line (the first is line 3)", "two myself");
}

/* The optional `native <port>` at the end of a node line. */
static void test_native(void)
{
	char err[256] = "";
	const char *doc = HEAD "node " A " a 127.0.0.1 7000 primary 0-8191 native 7100\n"
			       "node " B " b 127.0.0.1 7001 primary native 7101\n"
			       "node " C " c 127.0.0.1 7002 replica " A " native 7102   # a comment\n";
	struct topology *t = parse(doc, err);
	ok(t != NULL, "native ports on a primary, a primary without ranges and a replica (%s)", err);
	if (t) {
		int a = topology_find(t, A, 40), b = topology_find(t, B, 40), c = topology_find(t, C, 40);
		ok(t->nodes[a].native_port == 7100 && t->nodes[b].native_port == 7101 &&
			   t->nodes[c].native_port == 7102,
		   "each node's native_port");
		ok(t->nodes[a].nslots == 8192 && t->nodes[b].nslots == 0 && t->nodes[c].primary == a,
		   "ranges and replicas read as without the token");
		ok(strstr(t->layout, " native 7100\n") && strstr(t->layout, " native 7102\n"),
		   "the layout carries the native ports");
	}
	struct topology *old = parse(HEAD NA, err);
	ok(old && old->nodes[0].native_port == 0, "a document without the token: native_port 0 (%s)", err);
	struct topology *with = parse(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 7100\n", err);
	ok(old && with && !topology_same_layout(old, with), "adding a native port changes the layout");
	struct topology *moved = parse(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 7200\n", err);
	ok(with && moved && !topology_same_layout(with, moved), "moving a native port changes the layout");
	struct topology *again = parse("epoch 3\ncluster x\n"
				       "node " A " a 127.0.0.1 7000   primary 0-16383   native 7200  # c\n"
				       "myself " A "\n",
				       err);
	ok(moved && again && topology_same_layout(moved, again),
	   "the same native port written otherwise compares equal (%s)", err);
	topology_free(t);
	topology_free(old);
	topology_free(with);
	topology_free(moved);
	topology_free(again);

	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 0\n",
	    "line 4: native port '0' is not in 1..65535", "native port 0");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 65536\n",
	    "line 4: native port '65536' is not in 1..65535", "native port too big");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native x1\n",
	    "line 4: native port 'x1' is not in 1..65535", "native port not a number");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native\n",
	    "line 4: 'native' ends a node line, followed by its native port", "native without a port");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary native 7100 0-16383\n",
	    "line 4: 'native' ends a node line, followed by its native port", "native before the ranges");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 7000\n",
	    "line 4: native port 7000 is also the node's port", "native port = its port");
	bad(HEAD NA "node " B " b 127.0.0.1 7001 replica " A " native 7000\n",
	    "line 5: native port 127.0.0.1:7000 is also line 4's port", "native port = another's port");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 7100\n"
		 "node " B " b 127.0.0.1 7001 replica " A " native 7100\n",
	    "line 5: native port 127.0.0.1:7100 is also line 4's native port", "two native ports alike");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 7100\n"
		 "node " B " b 127.0.0.1 7100 replica " A "\n",
	    "line 5: address 127.0.0.1:7100 is line 4's native port", "a port = another's native port");
	bad(HEAD "node " A " a 127.0.0.1 7000 primary native 7100 native 7101\n",
	    "line 4: 'native' ends a node line, followed by its native port", "native twice");
	bad(HEAD "node " A " a 127.0.0.1 7000 replica " B " native 7100 x\n",
	    "line 4: 'native' ends a node line, followed by its native port", "a word after the native port");
	char err2[256] = "";
	struct topology *other_ip = parse(HEAD "node " A " a 127.0.0.1 7000 primary 0-16383 native 7100\n"
					       "node " B " b 127.0.0.2 7100 replica " A " native 7000\n",
					  err2);
	ok(other_ip != NULL, "the same numbers on another ip are fine (%s)", err2);
	topology_free(other_ip);
}

static void test_push(void)
{
	char dir[] = "/tmp/zaris-topo-XXXXXX";
	ok(mkdtemp(dir) != NULL, "temp dir");
	char err[512] = "";
	struct cluster *cl = cluster_create(dir, 2, err, sizeof(err));
	ok(cl != NULL, "cluster_create (%s)", err);
	if (!cl)
		return;
	char id[41];
	cluster_my_id(cl, 0, id);
	ok(topology_valid_id(id, strlen(id)), "a generated node id");
	ok(cluster_read_begin(cl, 0) == NULL, "no topology yet");
	cluster_read_end(cl, 0);

	const char *d5 = "epoch 5\ncluster x\nmyself " A "\n" NA;
	const char *d5b = "epoch 5\ncluster x\nmyself " A "\nnode " A " a 127.0.0.1 7001 primary 0-16383\n";
	const char *d4 = "epoch 4\ncluster x\nmyself " A "\n" NA;
	const char *d6 = "epoch 6\ncluster x\nmyself " A "\nnode " A " a 127.0.0.1 7002 primary 0-16383\n";
	is_int(cluster_push(cl, d5, strlen(d5), err, sizeof(err)), 0, "push epoch 5");
	cluster_my_id(cl, 0, id);
	is_str(id, A, "myself is now the id");
	/* reader 1 holds epoch 5's table across two pushes */
	const struct topology *held = cluster_read_begin(cl, 1);
	is_int(cluster_push(cl, d5, strlen(d5), err, sizeof(err)), 0, "the same document again: OK");
	ok(cluster_push(cl, d5b, strlen(d5b), err, sizeof(err)) < 0 &&
		   !strcmp(err, "topology epoch 5 is the current epoch with a different layout"),
	   "same epoch, other layout: %s", err);
	ok(cluster_push(cl, d4, strlen(d4), err, sizeof(err)) < 0 &&
		   !strcmp(err, "topology epoch 4 is older than the current epoch 5"),
	   "older epoch: %s", err);
	ok(cluster_push(cl, "epoch 9\nnode x\n", 15, err, sizeof(err)) < 0 &&
		   !strncmp(err, "topology line 2:", 16),
	   "a bad document: %s", err);
	struct cluster *cl2 = cluster_create(dir, 1, err, sizeof(err)); /* what the file holds now */
	const struct topology *f5 = cl2 ? cluster_read_begin(cl2, 0) : NULL;
	ok(f5 && f5->epoch == 5 && f5->nodes[0].port == 7000, "the refused pushes left the file at epoch 5");
	if (cl2)
		cluster_read_end(cl2, 0);
	cluster_free(cl2);
	is_int(cluster_push(cl, d6, strlen(d6), err, sizeof(err)), 0, "push epoch 6 while a reader holds 5");
	is_int((long long)held->epoch, 5, "the held table is still readable");
	is_int(held->nodes[0].port, 7000, "and intact");
	cluster_read_end(cl, 1);
	const struct topology *t = cluster_read_begin(cl, 1);
	is_int((long long)t->epoch, 6, "a new read section sees epoch 6");
	cluster_read_end(cl, 1);
	cluster_free(cl);

	cl = cluster_create(dir, 2, err, sizeof(err));
	ok(cl != NULL, "reopen (%s)", err);
	t = cl ? cluster_read_begin(cl, 0) : NULL;
	ok(t && t->epoch == 6 && t->nodes[0].port == 7002, "the file keeps epoch 6");
	if (cl)
		cluster_read_end(cl, 0);
	cluster_free(cl);

	char path[256];
	snprintf(path, sizeof(path), "%s/cluster-topology", dir);
	FILE *f = fopen(path, "w");
	fputs("epoch 1\ncluster x\nbogus\n", f);
	fclose(f);
	cl = cluster_create(dir, 2, err, sizeof(err));
	char want[512];
	snprintf(want, sizeof(want),
		 "%s/cluster-topology:3: unknown item 'bogus' (epoch, cluster, myself or node)", dir);
	ok(!cl && !strcmp(err, want), "a bad file names file:line: %s", err);
	cluster_free(cl);
	unlink(path);
	snprintf(path, sizeof(path), "%s/cluster-node-id", dir);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	/* this thread stands for every reader (worker) of the cluster state */
	zr_thread_set_worker(ZR_THREAD_ALL_WORKERS);
	test_good();
	test_bad();
	test_native();
	test_push();
	return done_testing();
}
