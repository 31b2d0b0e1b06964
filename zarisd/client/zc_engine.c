/* zc_engine — libzaris's engine, its sending half (zc_recv.c is the
 * receiving half and the I/O loop): operations become parts (one per target
 * node; a split MGET/MSET one per slot), parts wait in the client's send
 * queue, are framed per node into REQUEST frames and written; answers come
 * back in order per connection (PROTOCOL.md 2), each result naming its part
 * by index. MOVED/ASK put a part back into the send queue for its new node;
 * a lost connection puts back the read-only parts once and answers the rest
 * with ZARIS_E_IO. Single-threaded: everything runs inside the caller's
 * zaris_* call, driven by zc_pump's poll() loop.
 *
 * Every part ends: it is answered by its node, or its connection fails or
 * times out (request_timeout_ms from when it was queued to the node), or it
 * cannot be sent (no route, node in backoff, connect failed). A part parked
 * for a TOPOLOGY read goes back to the queue when that read ends, however
 * it ends. So a batch in flight always completes while zc_pump runs. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/client/zc_int.h"
#include "zarisd/client/zc_resp3.h"
#include "zarisd/client/zc_keyslot.h"
#include "zarisd/proto/native_wire.h"

static int push_part(struct zc_part **q, size_t *n, size_t *cap, const struct zc_part *pt)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct zc_part *p = realloc(*q, c * sizeof(*p));
		if (!p)
			return ZARIS_E_NOMEM;
		*q = p;
		*cap = c;
	}
	(*q)[(*n)++] = *pt;
	return 0;
}

/* Ends part PT with a client error or a server result (zc_int.h). */
void zc_part_answer(struct zaris *z, struct zc_part *pt, int status, const struct zaris_value *v)
{
	if (pt->b)
		zc_op_answer(z, pt->b, pt, status, v);
	free(pt->pos);
	pt->pos = NULL;
}

void zc_outq_push(struct zaris *z, struct zc_part *pt)
{
	if (push_part(&z->outq, &z->noutq, &z->outq_cap, pt)) {
		zc_set_err(z, "out of memory queueing an operation");
		zc_part_answer(z, pt, ZARIS_E_NOMEM, NULL);
	}
}

void zc_park(struct zaris *z, struct zc_part *pt)
{
	if (push_part(&z->parked, &z->nparked, &z->parked_cap, pt)) {
		zc_set_err(z, "out of memory parking an operation");
		zc_part_answer(z, pt, ZARIS_E_NOMEM, NULL);
	}
}

/* --- routing --------------------------------------------------------------------- */

static bool node_in_backoff(const struct zc_node *n, uint64_t now)
{
	return n->fd < 0 && now < n->next_connect_ms;
}

/* A node for what has no key: the seed when usable, else a connected
 * primary, else any node not in backoff. */
static int pick_any_node(struct zaris *z)
{
	uint64_t now = zc_now_ms();
	if (z->nodes[0]->fd >= 0)
		return 0;
	for (size_t i = 0; i < z->nnodes; i++)
		if (z->nodes[i]->fd >= 0 && z->nodes[i]->primary)
			return (int)i;
	for (size_t i = 0; i < z->nnodes; i++)
		if (!node_in_backoff(z->nodes[i], now) && (z->nodes[i]->primary || i == 0))
			return (int)i;
	return 0;
}

static const unsigned char *key_at(const struct zaris_batch *b, uint32_t koff, uint32_t *klen)
{
	*klen = nw_get32(b->args + koff);
	return b->args + koff + 4;
}

/* The slot a part routes by, or -1 when it has no key. */
static int part_slot(const struct zaris_batch *b, const struct zc_part *pt)
{
	const struct zc_op *o = &b->ops[pt->op];
	if (pt->pos) {
		uint32_t klen;
		const unsigned char *k = key_at(b, b->koff[o->koffs + pt->pos[0]], &klen);
		return (int)zr_key_slot((const char *)k, klen);
	}
	if (!o->has_key)
		return -1;
	return (int)zr_key_slot((const char *)b->args + o->key_off, o->key_len);
}

/* The node part PT goes to (its own choice, else its slot's primary), or
 * -1 when no known node owns that slot. */
static int resolve_node(struct zaris *z, const struct zc_part *pt)
{
	if (pt->node >= 0)
		return pt->node;
	if (!z->cluster)
		return 0;
	int slot = part_slot(pt->b, pt);
	return slot < 0 ? pick_any_node(z) : z->slot_node[slot];
}

struct slot_pos {
	uint16_t slot;
	uint32_t pos;
};

static int by_slot(const void *a, const void *b)
{
	const struct slot_pos *x = a, *y = b;
	return x->slot != y->slot ? (x->slot < y->slot ? -1 : 1) : (x->pos < y->pos ? -1 : 1);
}

/* MGET/MSET in cluster mode: one part per slot its keys hash to. */
static void route_multi(struct zaris *z, struct zaris_batch *b, uint32_t i, struct zc_part *base)
{
	struct zc_op *o = &b->ops[i];
	struct slot_pos *sp = malloc(o->nkeys * sizeof(*sp));
	if (!sp) {
		o->parts = o->pending = 1;
		zc_part_answer(z, base, ZARIS_E_NOMEM, NULL);
		return;
	}
	for (uint32_t k = 0; k < o->nkeys; k++) {
		uint32_t klen;
		const unsigned char *key = key_at(b, b->koff[o->koffs + k], &klen);
		sp[k].slot = (uint16_t)zr_key_slot((const char *)key, klen);
		sp[k].pos = k;
	}
	qsort(sp, o->nkeys, sizeof(*sp), by_slot);
	uint32_t runs = 1;
	for (uint32_t k = 1; k < o->nkeys; k++)
		runs += sp[k].slot != sp[k - 1].slot;
	o->parts = o->pending = runs;
	if (runs == 1) {
		free(sp);
		zc_outq_push(z, base);
		return;
	}
	for (uint32_t k = 0; k < o->nkeys;) {
		uint32_t e = k;
		while (e < o->nkeys && sp[e].slot == sp[k].slot)
			e++;
		struct zc_part pt = *base;
		pt.npos = e - k;
		pt.pos = malloc(pt.npos * sizeof(*pt.pos));
		if (!pt.pos) {
			zc_part_answer(z, &pt, ZARIS_E_NOMEM, NULL);
		} else {
			for (uint32_t j = k; j < e; j++)
				pt.pos[j - k] = sp[j].pos;
			zc_outq_push(z, &pt);
		}
		k = e;
	}
	free(sp);
}

/* INVALIDATE in cluster mode: one part per primary that owns a slot. */
static void route_broadcast(struct zaris *z, struct zaris_batch *b, uint32_t i, struct zc_part *base)
{
	struct zc_op *o = &b->ops[i];
	bool *owns = calloc(z->nnodes ? z->nnodes : 1, sizeof(*owns));
	uint32_t n = 0;
	if (owns) {
		for (unsigned s = 0; s < 16384; s++)
			if (z->slot_node[s] >= 0 && !owns[z->slot_node[s]]) {
				owns[z->slot_node[s]] = true;
				n++;
			}
	}
	o->parts = o->pending = n ? n : 1;
	if (!n) {
		zc_set_err(z, "no node owns a slot");
		zc_part_answer(z, base, owns ? ZARIS_E_NOROUTE : ZARIS_E_NOMEM, NULL);
		free(owns);
		return;
	}
	for (size_t k = 0; k < z->nnodes; k++)
		if (owns[k]) {
			struct zc_part pt = *base;
			pt.node = (int)k;
			zc_outq_push(z, &pt);
		}
	free(owns);
}

void zc_submit(struct zaris *z, struct zaris_batch *b)
{
	for (uint32_t i = 0; i < b->nops; i++) {
		struct zc_op *o = &b->ops[i];
		struct zc_part pt = { .b = b, .op = i, .node = -1 };
		if (z->cluster && o->code == NW_OP_INVALIDATE) {
			route_broadcast(z, b, i, &pt);
			continue;
		}
		if (z->cluster && (o->code == NW_OP_MGET || o->code == NW_OP_MSET)) {
			route_multi(z, b, i, &pt);
			continue;
		}
		if (o->code == NW_OP_TOPOLOGY && z->cluster)
			pt.node = pick_any_node(z);
		o->parts = o->pending = 1;
		zc_outq_push(z, &pt);
	}
}

/* --- topology reads -------------------------------------------------------------- */

static void topo_done(struct zaris *z, struct zaris_batch *b)
{
	const struct zaris_result *r = &b->ops[0].res;
	z->topo_busy = false;
	b->state = ZC_RETURNED;
	if (r->status == ZARIS_S_OK) {
		z->topo_rc = zc_topo_apply(z, r->value);
	} else if (r->status > 0) {
		zc_set_err(z, "TOPOLOGY: %.*s", r->value ? (int)r->value->len : 0,
			   r->value ? r->value->str : "");
		z->topo_rc = ZARIS_E_SERVER;
	} else {
		z->topo_rc = r->status;
	}
	/* the parts that waited for it go back, routed by what we now know */
	for (size_t i = 0; i < z->nparked; i++)
		zc_outq_push(z, &z->parked[i]);
	z->nparked = 0;
}

void zc_topo_start(struct zaris *z)
{
	if (z->topo_busy)
		return;
	struct zaris_batch *b = z->topo;
	b->state = ZC_RETURNED;
	zaris_batch_reset(b);
	if (zaris_add_topology(b) < 0) {
		z->topo_rc = ZARIS_E_NOMEM;
		return;
	}
	zc_batch_prepare(b);
	b->state = ZC_INFLIGHT;
	b->owner = z;
	b->on_done = topo_done;
	b->seq = 0; /* before every user batch in the queue */
	b->ops[0].parts = b->ops[0].pending = 1;
	z->topo_busy = true;
	z->topo_stale = false;
	z->topo_last_ms = zc_now_ms();
	z->stats.topology_reads++;
	struct zc_part pt = { .b = b, .op = 0, .node = pick_any_node(z) };
	zc_outq_push(z, &pt);
}

static void maybe_refresh(struct zaris *z)
{
	if (!z->cluster || !z->topo_stale || z->topo_busy)
		return;
	uint64_t now = zc_now_ms();
	if (now - z->topo_last_ms >= (uint64_t)z->opts.topology_interval_ms)
		zc_topo_start(z);
}

/* --- connection failures ------------------------------------------------------- */

void zc_req_free(struct zc_req *r)
{
	for (uint32_t i = 0; i < r->nparts; i++)
		free(r->parts[i].pos);
	free(r->parts);
	free(r);
}

/* Closes node IDX's connection after ERR (WHY for the error text): its
 * read-only parts go back to the queue once, the others are answered ERR. */
void zc_conn_fail(struct zaris *z, int idx, int err, const char *why)
{
	struct zc_node *n = z->nodes[idx];
	zc_set_err(z, "%s:%u: %s", n->host, n->port, why);
	zc_node_close_fd(n);
	n->next_connect_ms = zc_now_ms(); /* the first reconnect may come at once */
	if (z->cluster)
		z->topo_stale = true;
	struct zc_req *r = n->head;
	n->head = n->tail = NULL;
	while (r) {
		struct zc_req *next = r->next;
		for (uint32_t i = 0; i < r->nparts; i++) {
			struct zc_part *pt = &r->parts[i];
			if (pt->answered || !pt->b)
				continue;
			pt->answered = 1;
			if (err == ZARIS_E_IO && !pt->io_retried && zc_op_is_read(pt->b->ops[pt->op].code)) {
				struct zc_part again = *pt;
				again.io_retried = 1;
				again.answered = 0;
				again.asking = 0;
				if (again.b->ops[again.op].code != NW_OP_TOPOLOGY)
					again.node = -1;
				pt->pos = NULL;
				z->stats.retries++;
				zc_outq_push(z, &again);
			} else {
				zc_part_answer(z, pt, err, NULL);
			}
		}
		zc_req_free(r);
		r = next;
	}
}

/* --- framing and sending -------------------------------------------------------- */

static const char asking_arg[] = "ASKING";

static size_t part_size(const struct zc_part *pt)
{
	const struct zc_op *o = &pt->b->ops[pt->op];
	size_t n = NW_OP_HEADER;
	if (pt->asking)
		n += NW_OP_HEADER + 2 + 4 + sizeof(asking_arg) - 1;
	if (!pt->pos)
		return n + o->len;
	n += 2;
	for (uint32_t i = 0; i < pt->npos; i++) {
		uint32_t koff = pt->b->koff[o->koffs + pt->pos[i]], klen;
		key_at(pt->b, koff, &klen);
		n += 4 + klen;
		if (o->code == NW_OP_MSET)
			n += 4 + nw_get32(pt->b->args + koff + 4 + klen);
	}
	return n;
}

static unsigned char *put_op_header(unsigned char *p, uint8_t code, uint8_t flags, uint16_t db)
{
	p[0] = code;
	p[1] = flags;
	nw_put16(p + 2, db);
	return p + NW_OP_HEADER;
}

/* Writes PT's operation(s) at P (part_size bytes): the end. */
static unsigned char *part_encode(const struct zaris *z, unsigned char *p, const struct zc_part *pt)
{
	const struct zaris_batch *b = pt->b;
	const struct zc_op *o = &b->ops[pt->op];
	uint16_t db = (uint16_t)(o->db >= 0 ? o->db : z->opts.db);
	if (pt->asking) {
		p = put_op_header(p, NW_OP_COMMAND, 0, db);
		nw_put16(p, 1);
		nw_put32(p + 2, sizeof(asking_arg) - 1);
		memcpy(p + 6, asking_arg, sizeof(asking_arg) - 1);
		p += 6 + sizeof(asking_arg) - 1;
	}
	p = put_op_header(p, o->code, o->flags, db);
	if (!pt->pos) {
		if (o->len) /* TOPOLOGY has no fields (and its batch maybe no args buffer) */
			memcpy(p, b->args + o->off, o->len);
		return p + o->len;
	}
	nw_put16(p, (uint16_t)pt->npos);
	p += 2;
	for (uint32_t i = 0; i < pt->npos; i++) {
		uint32_t koff = b->koff[o->koffs + pt->pos[i]], klen;
		key_at(b, koff, &klen);
		size_t n = 4 + klen;
		if (o->code == NW_OP_MSET)
			n += 4 + nw_get32(b->args + koff + n);
		memcpy(p, b->args + koff, n);
		p += n;
	}
	return p;
}

static int fbuf_reserve(struct zaris *z, size_t need)
{
	if (need <= z->fcap)
		return 0;
	size_t cap = z->fcap ? z->fcap : 65536;
	while (cap < need)
		cap *= 2;
	unsigned char *q = realloc(z->fbuf, cap);
	if (!q)
		return ZARIS_E_NOMEM;
	z->fbuf = q;
	z->fcap = cap;
	return 0;
}

/* Makes sure node IDX is connected: 0, or the error its parts get. */
static int node_ready(struct zaris *z, int idx)
{
	struct zc_node *n = z->nodes[idx];
	if (n->fd >= 0)
		return 0;
	uint64_t now = zc_now_ms();
	if (now < n->next_connect_ms) {
		zc_set_err(z, "%s:%u: not reconnecting before its backoff ends", n->host, n->port);
		return ZARIS_E_IO;
	}
	unsigned flags;
	int rc = zc_node_connect(z, n, &flags);
	if (rc) {
		int b = n->backoff_ms ? n->backoff_ms * 2 : z->opts.reconnect_min_ms;
		n->backoff_ms = b > z->opts.reconnect_max_ms ? z->opts.reconnect_max_ms : b;
		n->next_connect_ms = zc_now_ms() + (uint64_t)n->backoff_ms;
		if (z->cluster)
			z->topo_stale = true;
		return rc;
	}
	n->backoff_ms = 0;
	return 0;
}

/* Frames PARTS (all for node IDX) into requests and writes them. */
static void send_to_node(struct zaris *z, int idx, struct zc_part *parts, size_t n)
{
	struct zc_node *node = z->nodes[idx];
	int rc = node_ready(z, idx);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			zc_part_answer(z, &parts[i], rc, NULL);
		return;
	}
	size_t limit = node->max_frame ? node->max_frame : (1u << 20);
	size_t i = 0;
	while (i < n) {
		/* one request: as many parts as fit its frame */
		size_t len = NW_HEADER, count = 0, j = i, ops = 0;
		for (; j < n; j++) {
			size_t s = part_size(&parts[j]);
			size_t nops = parts[j].asking ? 2 : 1;
			if (count && (len + s > limit || ops + nops > NW_MAX_OPS))
				break;
			len += s;
			ops += nops;
			count++;
		}
		if (len > limit) { /* one part alone is over the server's limit */
			zc_set_err(z, "%s:%u: an operation of %zu bytes, over the server's frame limit %zu",
				   node->host, node->port, len, limit);
			zc_part_answer(z, &parts[i], ZARIS_E_INVAL, NULL);
			i++;
			continue;
		}
		struct zc_req *r = calloc(1, sizeof(*r));
		struct zc_part *rp = r ? malloc(ops * sizeof(*rp)) : NULL;
		if (!rp || fbuf_reserve(z, len)) {
			free(rp);
			free(r);
			zc_set_err(z, "out of memory framing a request");
			for (; i < j; i++)
				zc_part_answer(z, &parts[i], ZARIS_E_NOMEM, NULL);
			continue;
		}
		unsigned char *p = z->fbuf + NW_HEADER;
		uint32_t k = 0;
		for (size_t m = i; m < j; m++) {
			p = part_encode(z, p, &parts[m]);
			if (parts[m].asking)
				rp[k++] = (struct zc_part){ .b = NULL, .node = idx };
			rp[k] = parts[m];
			rp[k].node = idx;
			rp[k].answered = 0;
			k++;
		}
		assert((size_t)(p - z->fbuf) == len && k == ops);
		r->id = ++z->next_id;
		nw_put32(z->fbuf, (uint32_t)(len - 4));
		z->fbuf[4] = NW_REQUEST;
		z->fbuf[5] = 0;
		nw_put16(z->fbuf + 6, (uint16_t)ops);
		nw_put32(z->fbuf + 8, r->id);
		r->parts = rp;
		r->nparts = k;
		r->sent_ms = zc_now_ms();
		if (zc_node_queue(node, z->fbuf, len)) {
			for (uint32_t m = 0; m < k; m++)
				if (rp[m].b)
					zc_op_answer(z, rp[m].b, &rp[m], ZARIS_E_NOMEM, NULL);
			zc_req_free(r);
			i = j;
			continue;
		}
		if (node->tail)
			node->tail->next = r;
		else
			node->head = r;
		node->tail = r;
		z->stats.requests++;
		z->stats.ops += ops;
		i = j;
	}
	if (node->fd >= 0 && zc_node_write(node))
		zc_conn_fail(z, idx, ZARIS_E_IO, "write failed");
}

static int by_send_order(const void *a, const void *b)
{
	const struct zc_part *x = a, *y = b;
	if (x->b->seq != y->b->seq)
		return x->b->seq < y->b->seq ? -1 : 1;
	return x->op < y->op ? -1 : x->op > y->op;
}

void zc_flush(struct zaris *z)
{
	maybe_refresh(z);
	while (z->noutq) {
		/* take the queue: what sending adds (retries) waits for the next round */
		struct zc_part *q = z->outq;
		size_t n = z->noutq;
		z->outq = NULL;
		z->noutq = z->outq_cap = 0;
		bool sorted = true;
		for (size_t i = 1; i < n && sorted; i++)
			sorted = by_send_order(&q[i - 1], &q[i]) <= 0;
		if (!sorted) /* retried parts after later ones: keep each batch's op order */
			qsort(q, n, sizeof(*q), by_send_order);
		for (size_t i = 0; i < n; i++) {
			q[i].node = resolve_node(z, &q[i]);
			if (q[i].node < 0) {
				zc_set_err(z, "no known node owns slot %d", part_slot(q[i].b, &q[i]));
				zc_part_answer(z, &q[i], ZARIS_E_NOROUTE, NULL);
			}
		}
		/* one pass per node, in the order nodes first appear */
		struct zc_part *mine = malloc(n * sizeof(*mine));
		for (size_t i = 0; i < n; i++) {
			if (q[i].node < 0)
				continue;
			int idx = q[i].node;
			if (!mine) {
				zc_set_err(z, "out of memory sending a batch");
				zc_part_answer(z, &q[i], ZARIS_E_NOMEM, NULL);
				continue;
			}
			size_t m = 0;
			for (size_t j = i; j < n; j++)
				if (q[j].node == idx) {
					mine[m++] = q[j];
					q[j].node = -1;
				}
			send_to_node(z, idx, mine, m);
		}
		free(mine);
		free(q);
		maybe_refresh(z);
	}
}
