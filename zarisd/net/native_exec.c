/* native_exec — see native_exec.h. */
#include "zarisd/net/native_exec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/net/conn.h"
#include "zarisd/proto/native_req.h"
#include "zarisd/proto/native_wire.h"
#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"

/* A response frame is closed and the next begun once it holds this much:
 * a frame's length must fit its u32 whatever a request asks for (65,535
 * MGETs of big values), and a client can start on results early. */
#define NATIVE_FRAME_SPLIT (1u << 20)

/* --- TOPOLOGY ---------------------------------------------------------------------- */

static void node_map(struct obuf *o, const char *id, const char *ip, int port, int native_port, bool primary,
		     const char *primary_id)
{
	reply_map(o, 7);
	reply_bulk_cstr(o, "id");
	reply_bulk_cstr(o, id);
	reply_bulk_cstr(o, "ip");
	reply_bulk_cstr(o, ip);
	reply_bulk_cstr(o, "port");
	reply_long(o, port);
	reply_bulk_cstr(o, "native-port");
	reply_long(o, native_port);
	reply_bulk_cstr(o, "role");
	reply_bulk_cstr(o, primary ? "primary" : "replica");
	reply_bulk_cstr(o, "primary");
	reply_bulk_cstr(o, primary_id);
	reply_bulk_cstr(o, "slots");
}

/* The slot ranges node N owns in T. */
static void node_slots(struct obuf *o, const struct topology *t, unsigned n)
{
	struct reply_deferred d;
	reply_deferred(o, &d);
	long ranges = 0;
	for (unsigned slot = 0; slot < ZR_KEY_SLOTS;) {
		if (t->owner[slot] != n) {
			slot++;
			continue;
		}
		unsigned end = slot;
		while (end + 1 < ZR_KEY_SLOTS && t->owner[end + 1] == n)
			end++;
		reply_array(o, 2);
		reply_long(o, slot);
		reply_long(o, end);
		ranges++;
		slot = end + 1;
	}
	reply_set_deferred(o, &d, REPLY_AGG_ARRAY, ranges);
}

/* TOPOLOGY's result (PROTOCOL.md §7). */
static void topology_reply(struct client *c)
{
	struct obuf *o = &c->out;
	struct server *srv = c->srv;
	reply_map(o, 3);
	reply_bulk_cstr(o, "epoch");
	if (!srv->cluster) {
		reply_long(o, 0);
		reply_bulk_cstr(o, "cluster");
		reply_bool(o, false);
		reply_bulk_cstr(o, "nodes");
		reply_array(o, 1);
		/* the address this client reached: its socket's own */
		char ip[64];
		snprintf(ip, sizeof(ip), "%s", c->laddr);
		char *colon = strrchr(ip, ':');
		if (colon)
			*colon = '\0';
		node_map(o, "", ip, srv->cfg->port, srv->cfg->native_port, true, "");
		reply_array(o, 1);
		reply_array(o, 2);
		reply_long(o, 0);
		reply_long(o, ZR_KEY_SLOTS - 1);
		return;
	}
	const struct topology *t = cluster_read_begin(srv->cluster, c->worker);
	reply_long(o, t ? (long long)t->epoch : 0);
	reply_bulk_cstr(o, "cluster");
	reply_bool(o, true);
	reply_bulk_cstr(o, "nodes");
	reply_array(o, t ? t->nnodes : 0);
	for (unsigned i = 0; t && i < t->nnodes; i++) {
		const struct topo_node *n = &t->nodes[i];
		bool primary = n->primary < 0;
		node_map(o, n->id, n->ip, n->port, n->native_port, primary,
			 primary ? "" : t->nodes[n->primary].id);
		if (primary)
			node_slots(o, t, i);
		else
			reply_array(o, 0);
	}
	cluster_read_end(srv->cluster, c->worker);
}

/* COMMAND's refusals (PROTOCOL.md §4.1): commands that change a
 * connection's protocol state, which a native connection does not have. */
static bool command_refused(const struct native_op *op)
{
	static const char *const names[] = {
		"subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe",
		"multi",     "exec",	    "discard",	  "watch",	  "unwatch",	"select",
		"hello",     "reset",	    "quit",	  "auth",	  "monitor",	"sync",
		"psync",     "replconf",    "blpop",	  "brpop",	  "blmove",	"blmpop",
		"bzpopmin",  "bzpopmax",    "bzmpop",	  "brpoplpush",	  "wait",	NULL,
	};
	const struct resp_arg *a = &op->argv[0];
	for (int i = 0; names[i]; i++)
		if (strlen(names[i]) == a->len && !strncasecmp(names[i], a->ptr, a->len))
			return true;
	return op->argc >= 2 && a->len == 6 && !strncasecmp(a->ptr, "client", 6) && op->argv[1].len == 5 &&
	       !strncasecmp(op->argv[1].ptr, "reply", 5);
}

/* A response frame being written: its reserved header and results. */
struct frame {
	struct reply_fixed hdr;
	unsigned count;
	uint32_t id;
};

static void frame_begin(struct obuf *o, struct frame *f, uint32_t id)
{
	reply_fixed_reserve(o, NW_HEADER, &f->hdr);
	f->count = 0;
	f->id = id;
}

static void frame_end(struct obuf *o, struct frame *f, bool last)
{
	unsigned char h[NW_HEADER];
	size_t span = reply_fixed_span(o, &f->hdr);
	nw_put_header(h, (uint32_t)(span - NW_HEADER), NW_RESPONSE, last ? NW_RESPONSE_LAST : 0,
		      (uint16_t)f->count, f->id);
	reply_fixed_fill(&f->hdr, h);
}

/* --- running -------------------------------------------------------------------- */

/* Group prefetching, as resp_session does for a pipeline (see there): the
 * keys of the next NATIVE_AHEAD operations are hashed and their shard,
 * bucket and entry requested step by step across the group, so their
 * cache misses overlap; the hash goes to the dispatcher with the op. */
#define NATIVE_AHEAD 16

struct native_exec_slot {
	uint64_t hash; /* store_hash(argv[1]) when hashed */
	bool hashed;
	/* RF1, admitted ops: what dispatch_admit gave, and the op's shard */
	const struct command *cmd;
	int64_t t0;
	unsigned shard;
	unsigned index;
};

void native_exec_init(struct native_exec *x)
{
	x->slot = NULL;
	x->order = NULL;
	x->cap = 0;
}

void native_exec_free(struct native_exec *x)
{
	zr_free(x->slot);
	zr_free(x->order);
	native_exec_init(x);
}

/* Whether OP names one key, at argv[1], and nothing else: the ops worth
 * prefetching for, and those RF1 may group by shard. */
static bool op_single_key(const struct native_op *op)
{
	return nw_op_single_key(op->op) && op->argc >= 2;
}

/* Hashes and prefetches the keys of ops [FROM, FROM + NATIVE_AHEAD). */
static void prefetch(struct native_exec *x, struct client *c, const struct native_req *req, unsigned from)
{
	struct store *store = c->srv->store;
	struct conn_prefetch_key keys[NATIVE_AHEAD];
	unsigned nk = 0;
	for (unsigned i = from; i < from + NATIVE_AHEAD && i < req->nops; i++) {
		const struct native_op *op = &req->ops[i];
		struct native_exec_slot *sl = &x->slot[i];
		sl->hashed = store && op_single_key(op) &&
			     store_prefetch(store, op->db, op->argv[1].ptr, op->argv[1].len, &sl->hash);
		if (sl->hashed)
			keys[nk++] = (struct conn_prefetch_key){ .hash = sl->hash,
								 .key = op->argv[1].ptr,
								 .klen = op->argv[1].len,
								 .db = op->db };
	}
	if (nk > 1)
		conn_prefetch_keys(store, keys, nk);
}

/* Makes op I of REQ c's current command. */
static void set_op(struct native_exec *x, struct client *c, const struct native_req *req, unsigned i)
{
	const struct native_op *op = &req->ops[i];
	c->db = op->db;
	c->argv = op->argv;
	c->argc = op->argc;
	if (x->slot[i].hashed) {
		/* dispatch (cmd_key_hash) takes it instead of hashing */
		c->key_hash = x->slot[i].hash;
		c->key_hash_argv = op->argv;
		c->key_hash_argi = 1;
	}
}

/* A request's response being written. */
struct response {
	struct obuf *o;
	struct frame f;
	struct reply_fixed res; /* the result being written */
	uint64_t errors;	/* o->errors when it began */
};

static void result_begin(struct response *r)
{
	if (reply_fixed_span(r->o, &r->f.hdr) > NATIVE_FRAME_SPLIT) {
		frame_end(r->o, &r->f, false);
		frame_begin(r->o, &r->f, r->f.id);
	}
	reply_fixed_reserve(r->o, NW_RESULT_HEADER, &r->res);
	r->errors = r->o->errors;
}

/* The result of op INDEX is written: its header gets the status of the
 * value when it is an error (an error nested in an array is not). */
static void result_end(struct response *r, unsigned index)
{
	unsigned char rh[NW_RESULT_HEADER];
	nw_put16(rh, (uint16_t)index);
	rh[2] = NW_OK;
	if (r->o->errors != r->errors && reply_fixed_next_byte(r->o, &r->res) == '-')
		rh[2] = nw_status_of(r->o->last_error, strlen(r->o->last_error));
	reply_fixed_fill(&r->res, rh);
	r->f.count++;
}

/* A pause holds op I and what follows (its result header taken back):
 * the results so far go out in a frame without LAST (none: no frame). */
static enum native_exec_result hold(struct response *r, unsigned i, unsigned *resume)
{
	if (r->f.count)
		frame_end(r->o, &r->f, false);
	else
		reply_fixed_cancel(r->o, &r->f.hdr);
	*resume = i;
	return NATIVE_EXEC_HELD;
}

/* Runs op I unless it is answered here; false when a pause holds it. */
static bool run_op(struct client *c, const struct native_op *op, bool chained)
{
	if (op->op == NW_OP_TOPOLOGY) {
		topology_reply(c);
		return true;
	}
	if (op->op == NW_OP_COMMAND && command_refused(op)) {
		reply_error(&c->out, "ERR command not allowed over the native protocol");
		return true;
	}
	if (op->db && c->srv->cluster) {
		reply_error(&c->out, "ERR SELECT is not allowed in cluster mode");
		return true;
	}
	c->clock_chained = chained;
	int r = c->srv->execute(c);
	c->argv = NULL;
	c->argc = 0;
	c->key_hash_argv = NULL;
	return r != DISPATCH_PAUSED;
}

static enum native_exec_result run_in_order(struct native_exec *x, struct client *c,
					    const struct native_req *req, struct response *r,
					    unsigned *resume)
{
	int64_t clock_before = c->clock_end_us;
	for (unsigned i = *resume; i < req->nops; i++) {
		if ((i - *resume) % NATIVE_AHEAD == 0)
			prefetch(x, c, req, i);
		set_op(x, c, req, i);
		result_begin(r);
		if (!run_op(c, &req->ops[i], c->clock_end_us != clock_before)) {
			reply_fixed_cancel(r->o, &r->res);
			return hold(r, i, resume);
		}
		result_end(r, i);
	}
	return NATIVE_EXEC_DONE;
}

static int by_shard(const void *a, const void *b)
{
	const struct native_exec_slot *x = *(const struct native_exec_slot *const *)a;
	const struct native_exec_slot *y = *(const struct native_exec_slot *const *)b;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index; /* request order within a shard */
}

/* RF1 (see the header): admit every op, then run the admitted ones shard
 * by shard. */
static enum native_exec_result run_grouped(struct native_exec *x, struct client *c,
					   const struct native_req *req, struct response *r, unsigned *resume)
{
	struct native_exec_slot **admitted = x->order;
	unsigned n = 0, held_at = req->nops;
	int64_t clock_before = c->clock_end_us, last_t0 = 0;
	for (unsigned i = *resume; i < req->nops; i++) {
		if ((i - *resume) % NATIVE_AHEAD == 0)
			prefetch(x, c, req, i);
		const struct native_op *op = &req->ops[i];
		struct native_exec_slot *sl = &x->slot[i];
		set_op(x, c, req, i);
		result_begin(r);
		if (op->db && c->srv->cluster) {
			reply_error(&c->out, "ERR SELECT is not allowed in cluster mode");
			result_end(r, i);
			continue;
		}
		/* one clock read for the admissions: they are one instant */
		c->clock_chained = last_t0 || c->clock_end_us != clock_before;
		if (last_t0)
			c->clock_end_us = last_t0;
		bool paused;
		sl->cmd = dispatch_admit(c, &sl->t0, &paused);
		if (sl->cmd)
			last_t0 = sl->t0;
		if (paused) {
			held_at = i;
			reply_fixed_cancel(r->o, &r->res);
			break;
		}
		if (!sl->cmd) {
			result_end(r, i); /* refused: its error is written */
			continue;
		}
		/* admitted: nothing written yet; it runs in the second phase */
		reply_fixed_cancel(r->o, &r->res);
		unsigned stack[DISPATCH_STACK_SHARDS], *shards;
		int k = dispatch_key_shards(c, sl->cmd, stack, &shards);
		sl->shard = k > 0 ? shards[0] : 0;
		if (shards && shards != stack)
			zr_free(shards);
		sl->index = i;
		admitted[n++] = sl;
	}
	c->key_hash_argv = NULL;
	if (n <= 32) {
		/* the common batch: an insertion sort, stable, without calls */
		for (unsigned i = 1; i < n; i++) {
			struct native_exec_slot *v = admitted[i];
			unsigned j = i;
			for (; j > 0 && admitted[j - 1]->shard > v->shard; j--)
				admitted[j] = admitted[j - 1];
			admitted[j] = v;
		}
	} else {
		qsort(admitted, n, sizeof(*admitted), by_shard);
	}
	struct store *store = c->srv->store;
	/* serving the clients blocked on what the batch pushed may wait for a
	 * busy script's shard: with the worker's other clients served, as in
	 * dispatch_command */
	struct store_wait_hook prev = dispatch_wait_begin(c);
	for (unsigned k = 0; k < n;) {
		unsigned shard = admitted[k]->shard;
		/* a busy script holds it: the group's ops are refused -BUSY,
		 * as dispatch_command refuses a command whose lock it holds */
		bool locked = dispatch_lock_shards(c, &shard, 1, false);
		for (; k < n && admitted[k]->shard == shard; k++) {
			struct native_exec_slot *sl = admitted[k];
			set_op(x, c, req, sl->index);
			c->now_ms = zr_wall_ms_at(sl->t0);
			result_begin(r);
			if (locked)
				dispatch_run_locked(c, sl->cmd, sl->t0);
			else
				dispatch_refuse_busy(c, sl->cmd);
			result_end(r, sl->index);
		}
		if (locked)
			store_unlock(store, shard);
	}
	c->argv = NULL;
	c->argc = 0;
	dispatch_batch_end(c);
	dispatch_wait_end(prev);
	if (held_at < req->nops)
		return hold(r, held_at, resume); /* the ops before it ran: their results go out now */
	return NATIVE_EXEC_DONE;
}

enum native_exec_result native_exec_run(struct native_exec *x, struct client *c, const struct native_req *req,
					uint32_t id, unsigned *resume, bool rf1)
{
	if (req->nops > x->cap) {
		x->slot = zr_realloc(x->slot, sizeof(*x->slot) * req->nops);
		x->order = zr_realloc(x->order, sizeof(*x->order) * req->nops);
		x->cap = req->nops;
	}
	bool grouped = rf1;
	for (unsigned i = *resume; grouped && i < req->nops; i++)
		grouped = op_single_key(&req->ops[i]);
	struct response r = { .o = &c->out };
	frame_begin(r.o, &r.f, id);
	enum native_exec_result res =
		grouped ? run_grouped(x, c, req, &r, resume) : run_in_order(x, c, req, &r, resume);
	if (res == NATIVE_EXEC_DONE) {
		frame_end(r.o, &r.f, true);
		*resume = 0;
	}
	return res;
}
