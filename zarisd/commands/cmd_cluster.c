/* cmd_cluster — CLUSTER and its subcommands, ASKING, READONLY, READWRITE:
 * Redis 7.0's replies for the topology the supervisor pushed
 * (cluster/cluster.h), plus zarisd's own CLUSTER SETTOPOLOGY and CLUSTER
 * TOPOLOGY. There is no cluster bus: the subcommands that drive one
 * (MEET, ADDSLOTS, SETSLOT, FAILOVER ...) answer an error naming the push.
 * CLUSTER LEASE (the write lease, server.h) works with cluster mode off too.
 * Every handler reads the topology inside one read section and builds its
 * reply there (no lock, no blocking: cluster.h). */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/core/keyslot.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"
#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/store/store.h"

#define ERR_DISABLED "ERR This instance has cluster support disabled"

/* The topology in force after checking cluster mode (*ON false: replied
 * the error). Pair with end(). */
static const struct topology *begin(struct client *c, bool *on)
{
	*on = c->srv->cluster != NULL;
	if (!*on) {
		reply_error(&c->out, ERR_DISABLED);
		return NULL;
	}
	return cluster_read_begin(c->srv->cluster, c->worker);
}

static void end(struct client *c)
{
	cluster_read_end(c->srv->cluster, c->worker);
}

static bool enabled(struct client *c)
{
	if (c->srv->cluster)
		return true;
	reply_error(&c->out, ERR_DISABLED);
	return false;
}

/* The primary node I serves slots for: itself, or its primary. */
static unsigned shard_primary(const struct topology *t, unsigned i)
{
	return t->nodes[i].primary >= 0 ? (unsigned)t->nodes[i].primary : i;
}

void cmd_cluster_help(struct client *c)
{
	static const char *const help[] = {
		"COUNTKEYSINSLOT <slot>",
		"    Return the number of keys in <slot>.",
		"GETKEYSINSLOT <slot> <count>",
		"    Return key names stored by current node in a slot.",
		"INFO",
		"    Return information about the cluster.",
		"KEYSLOT <key>",
		"    Return the hash slot for <key>.",
		"LEASE [<until-ms>]",
		"    Set the write lease's end, an absolute CLOCK_MONOTONIC time in ms (0 = fence now;",
		"    zarisd with write-lease yes, from a local connection), or return the ms left.",
		"LINKS",
		"    Return information about all network links between this node and its peers (none: no bus).",
		"MYID",
		"    Return the node id.",
		"MYSHARDID",
		"    Return the node's shard id (its primary's node id).",
		"NODES",
		"    Return cluster configuration seen by node. Output format:",
		"    <id> <ip:port@cport> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
		"REPLICAS <node-id>",
		"    Return <node-id> replicas.",
		"SAVECONFIG",
		"    Force saving cluster configuration on disk.",
		"SETTOPOLOGY <document>",
		"    Apply a topology document (zarisd; from a local connection, as the supervisor does).",
		"SHARDS",
		"    Return information about slot range mappings and the nodes associated with them.",
		"SLOTS",
		"    Return information about slots range mappings. Each range is made of:",
		"    start, end, master and replicas IP addresses, ports and ids",
		"TOPOLOGY",
		"    Return the topology document in force (zarisd), or nil.",
		NULL,
	};
	if (enabled(c))
		cmd_reply_help(c, help);
}

void cmd_cluster_info(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	unsigned assigned = t ? t->assigned : 0, size = 0;
	for (unsigned i = 0; t && i < t->nnodes; i++)
		size += t->nodes[i].primary < 0 && t->nodes[i].nslots > 0;
	struct textbuf b = TEXTBUF_INIT;
	textbuf_printf(&b,
		       "cluster_state:%s\r\ncluster_slots_assigned:%u\r\ncluster_slots_ok:%u\r\n"
		       "cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:%u\r\n"
		       "cluster_size:%u\r\ncluster_current_epoch:%llu\r\ncluster_my_epoch:%llu\r\n"
		       "cluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n"
		       "total_cluster_links_buffer_limit_exceeded:0\r\n",
		       t && assigned == ZR_KEY_SLOTS ? "ok" : "fail", assigned, assigned, t ? t->nnodes : 1,
		       size, t ? (unsigned long long)t->epoch : 0ull,
		       t ? (unsigned long long)t->epoch : 0ull);
	end(c);
	reply_verbatim(&c->out, b.p, b.len, "txt");
	textbuf_free(&b);
}

void cmd_cluster_keyslot(struct client *c)
{
	if (enabled(c))
		reply_long(&c->out, zr_key_slot(c->argv[2].ptr, c->argv[2].len));
}

static bool slot_arg(struct client *c, int i, long long *slot)
{
	if (!cmd_arg_ll(c, i, slot, NULL))
		return false;
	return true;
}

void cmd_cluster_countkeysinslot(struct client *c)
{
	long long slot;
	if (!enabled(c) || !slot_arg(c, 2, &slot))
		return;
	if (slot < 0 || slot >= ZR_KEY_SLOTS) {
		reply_error(&c->out, "ERR Invalid slot");
		return;
	}
	reply_long(&c->out, (long long)store_slot_count(c->srv->store, c->db, (unsigned)slot));
}

struct slot_keys {
	struct obuf *out;
	long long left;
	long n;
};

static void add_slot_key(const struct entry *e, void *arg)
{
	struct slot_keys *sk = arg;
	if (sk->left <= 0)
		return;
	size_t klen;
	const char *k = entry_key(e, &klen);
	reply_bulk(sk->out, k, klen);
	sk->left--;
	sk->n++;
}

void cmd_cluster_getkeysinslot(struct client *c)
{
	long long slot, count;
	if (!enabled(c) || !slot_arg(c, 2, &slot) || !cmd_arg_ll(c, 3, &count, NULL))
		return;
	if (slot < 0 || slot >= ZR_KEY_SLOTS || count < 0) {
		reply_error(&c->out, "ERR Invalid slot or number of keys");
		return;
	}
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	struct slot_keys sk = { &c->out, count, 0 };
	if (store_foreach_slot(c->srv->store, c->db, (unsigned)slot, c->now_ms, add_slot_key, &sk) < 0) {
		reply_deferred_cancel(&c->out, &d); /* a busy script holds the slot's shard */
		dispatch_refuse_busy_here(c);
		return;
	}
	reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, sk.n);
}

void cmd_cluster_myid(struct client *c)
{
	char id[TOPO_ID_LEN + 1];
	if (!enabled(c))
		return;
	cluster_my_id(c->srv->cluster, c->worker, id);
	reply_bulk(&c->out, id, TOPO_ID_LEN);
}

void cmd_cluster_myshardid(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	if (t)
		reply_bulk(&c->out, t->nodes[shard_primary(t, t->myself)].id, TOPO_ID_LEN);
	end(c);
	if (!t)
		cmd_cluster_myid(c); /* a lone primary is its own shard */
}

/* One CLUSTER NODES line of node I (Redis's clusterGenNodeDescription). */
static void node_line(struct textbuf *b, const struct topology *t, unsigned i)
{
	const struct topo_node *n = &t->nodes[i];
	int cport = n->port + 10000 <= 65535 ? n->port + 10000 : 0; /* no bus: Redis's default offset */
	textbuf_printf(b, "%s %s:%d@%d %s%s %s 0 0 %llu connected", n->id, n->ip, n->port, cport,
		       i == t->myself ? "myself," : "", n->primary >= 0 ? "slave" : "master",
		       n->primary >= 0 ? t->nodes[n->primary].id : "-", (unsigned long long)t->epoch);
	for (unsigned k = 0; n->primary < 0 && k < ZR_KEY_SLOTS; k++) {
		if (t->owner[k] != i || (k > 0 && t->owner[k - 1] == i))
			continue;
		unsigned e = k;
		while (e + 1 < ZR_KEY_SLOTS && t->owner[e + 1] == i)
			e++;
		if (e == k)
			textbuf_printf(b, " %u", k);
		else
			textbuf_printf(b, " %u-%u", k, e);
	}
	textbuf_append(b, "\n", 1);
}

void cmd_cluster_nodes(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	struct textbuf b = TEXTBUF_INIT;
	if (t) {
		for (unsigned i = 0; i < t->nnodes; i++)
			node_line(&b, t, i);
	} else {
		textbuf_printf(&b, "%s :%d@%d myself,master - 0 0 0 connected\n",
			       cluster_generated_id(c->srv->cluster), c->srv->cfg->port,
			       c->srv->cfg->port + 10000 <= 65535 ? c->srv->cfg->port + 10000 : 0);
	}
	end(c);
	reply_verbatim(&c->out, b.p ? b.p : "", b.len, "txt");
	textbuf_free(&b);
}

/* [ip, port, id, {}] (Redis's addNodeToNodeReply, endpoint type ip) */
static void node_entry(struct obuf *o, const struct topo_node *n)
{
	reply_array(o, 4);
	reply_bulk_cstr(o, n->ip);
	reply_long(o, n->port);
	reply_bulk(o, n->id, TOPO_ID_LEN);
	reply_map(o, 0);
}

static unsigned replicas_of(const struct topology *t, unsigned p)
{
	unsigned n = 0;
	for (unsigned i = 0; i < t->nnodes; i++)
		n += t->nodes[i].primary == (int)p;
	return n;
}

void cmd_cluster_slots(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	long ranges = 0;
	for (unsigned k = 0; t && k < ZR_KEY_SLOTS; k++) {
		unsigned o = t->owner[k];
		if (o == TOPO_NO_OWNER)
			continue;
		unsigned e = k;
		while (e + 1 < ZR_KEY_SLOTS && t->owner[e + 1] == o)
			e++;
		reply_array(&c->out, 3 + (long)replicas_of(t, o));
		reply_long(&c->out, k);
		reply_long(&c->out, e);
		node_entry(&c->out, &t->nodes[o]);
		for (unsigned i = 0; i < t->nnodes; i++)
			if (t->nodes[i].primary == (int)o)
				node_entry(&c->out, &t->nodes[i]);
		ranges++;
		k = e;
	}
	end(c);
	reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, ranges);
}

/* One node of CLUSTER SHARDS (Redis's addNodeDetailsToShardReply). */
static void shard_node(struct obuf *o, const struct topo_node *n)
{
	reply_map(o, 7);
	reply_bulk_cstr(o, "id");
	reply_bulk(o, n->id, TOPO_ID_LEN);
	reply_bulk_cstr(o, "port");
	reply_long(o, n->port);
	reply_bulk_cstr(o, "ip");
	reply_bulk_cstr(o, n->ip);
	reply_bulk_cstr(o, "endpoint");
	reply_bulk_cstr(o, n->ip);
	reply_bulk_cstr(o, "role");
	reply_bulk_cstr(o, n->primary >= 0 ? "replica" : "master");
	/* no bus carries the others' offsets: 0, and health as the
	 * supervisor's push declares the node, online */
	reply_bulk_cstr(o, "replication-offset");
	reply_long(o, 0);
	reply_bulk_cstr(o, "health");
	reply_bulk_cstr(o, "online");
}

void cmd_cluster_shards(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	unsigned shards = 0;
	for (unsigned i = 0; t && i < t->nnodes; i++)
		shards += t->nodes[i].primary < 0;
	reply_array(&c->out, shards);
	for (unsigned p = 0; t && p < t->nnodes; p++) {
		if (t->nodes[p].primary >= 0)
			continue;
		reply_map(&c->out, 2);
		reply_bulk_cstr(&c->out, "slots");
		struct reply_deferred d;
		reply_deferred(&c->out, &d);
		long n = 0;
		for (unsigned k = 0; k < ZR_KEY_SLOTS; k++) {
			if (t->owner[k] != p)
				continue;
			unsigned e = k;
			while (e + 1 < ZR_KEY_SLOTS && t->owner[e + 1] == p)
				e++;
			reply_long(&c->out, k);
			reply_long(&c->out, e);
			n += 2;
			k = e;
		}
		reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, n);
		reply_bulk_cstr(&c->out, "nodes");
		reply_array(&c->out, 1 + (long)replicas_of(t, p));
		shard_node(&c->out, &t->nodes[p]);
		for (unsigned i = 0; i < t->nnodes; i++)
			if (t->nodes[i].primary == (int)p)
				shard_node(&c->out, &t->nodes[i]);
	}
	end(c);
}

void cmd_cluster_links(struct client *c)
{
	if (enabled(c))
		reply_array(&c->out, 0); /* no cluster bus, so no links */
}

void cmd_cluster_replicas(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	int p = t ? topology_find(t, c->argv[2].ptr, c->argv[2].len) : -1;
	if (p < 0) {
		reply_errorf(&c->out, "ERR Unknown node %.*s", (int)c->argv[2].len, c->argv[2].ptr);
	} else if (t->nodes[p].primary >= 0) {
		reply_error(&c->out, "ERR The specified node is not a master");
	} else {
		reply_array(&c->out, replicas_of(t, (unsigned)p));
		for (unsigned i = 0; i < t->nnodes; i++) {
			if (t->nodes[i].primary != p)
				continue;
			struct textbuf b = TEXTBUF_INIT;
			node_line(&b, t, i);
			reply_bulk(&c->out, b.p, b.len - 1); /* without the newline, as Redis */
			textbuf_free(&b);
		}
	}
	end(c);
}

void cmd_cluster_saveconfig(struct client *c)
{
	/* every push is on disk (fsynced) before it is applied */
	if (enabled(c))
		reply_ok(&c->out);
}

void cmd_cluster_unsupported(struct client *c)
{
	if (!enabled(c))
		return;
	reply_errorf(&c->out,
		     "ERR CLUSTER %.*s is not supported: zarisd has no cluster bus, its topology is pushed "
		     "(CLUSTER SETTOPOLOGY)",
		     (int)c->argv[1].len, c->argv[1].ptr);
}

void cmd_cluster_settopology(struct client *c)
{
	if (!enabled(c))
		return;
	/* local: loopback, a unix socket, or this machine's own address (a
	 * supervisor reaching a node bound only to 10.0.0.5 connects from
	 * 10.0.0.5) */
	if (!(c->flags & (CLIENT_LOOPBACK | CLIENT_SAME_HOST))) {
		reply_error(&c->out, "ERR CLUSTER SETTOPOLOGY is accepted only from a local connection");
		return;
	}
	char err[512];
	if (cluster_push(c->srv->cluster, c->argv[2].ptr, c->argv[2].len, err, sizeof(err)) < 0)
		reply_errorf(&c->out, "ERR %s", err);
	else
		reply_ok(&c->out);
}

/* CLUSTER LEASE [<until-ms>]: not gated by cluster-enabled (a lone
 * primary under a supervisor may be fenced too). Setting it is local only,
 * as SETTOPOLOGY: the deadline is this machine's monotonic clock, which
 * only a process on the same machine shares. */
void cmd_cluster_lease(struct client *c)
{
	struct server *srv = c->srv;
	if (c->argc == 2) {
		reply_long(&c->out, server_write_lease_remaining(srv));
		return;
	}
	if (c->argc != 3) {
		cmd_reply_arity(c);
		return;
	}
	if (!(c->flags & (CLIENT_LOOPBACK | CLIENT_SAME_HOST))) {
		reply_error(&c->out, "ERR CLUSTER LEASE is accepted only from a local connection");
		return;
	}
	if (!srv->write_lease) {
		reply_error(&c->out, "ERR write-lease is off");
		return;
	}
	long long until;
	if (!cmd_arg_ll_range(c, 2, 0, LLONG_MAX, &until,
			      "ERR lease end must be a non-negative integer (CLOCK_MONOTONIC ms)"))
		return;
	/* relaxed (server.h): the next command of any worker compares it
	 * with its own clock; a shorter lease may fence at once */
	atomic_store_explicit(&srv->write_lease_until_ms, (int64_t)until, memory_order_relaxed);
	if (server_write_lease_remaining(srv) > 0)
		atomic_store_explicit(&srv->write_lease_ever, true, memory_order_relaxed);
	reply_ok(&c->out);
}

void cmd_cluster_topology(struct client *c)
{
	bool on;
	const struct topology *t = begin(c, &on);
	if (!on)
		return;
	if (t)
		reply_bulk(&c->out, t->text, t->text_len);
	else
		reply_null(&c->out);
	end(c);
}

void cmd_asking(struct client *c)
{
	if (!enabled(c))
		return;
	c->flags |= CLIENT_ASKING;
	reply_ok(&c->out);
}

void cmd_readonly(struct client *c)
{
	if (!enabled(c))
		return;
	c->flags |= CLIENT_CLUSTER_READONLY;
	reply_ok(&c->out);
}

void cmd_readwrite(struct client *c)
{
	if (!enabled(c))
		return;
	c->flags &= ~CLIENT_CLUSTER_READONLY;
	reply_ok(&c->out);
}
