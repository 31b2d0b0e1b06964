/* native_session — see native_session.h. */
#include "zarisd/net/native_session.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/core/log.h"
#include "zarisd/net/native_exec.h"
#include "zarisd/net/session_client.h"
#include "zarisd/net/worker.h"
#include "zarisd/proto/native_req.h"
#include "zarisd/proto/native_wire.h"
#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/store/store.h"

struct native_session {
	struct client client; /* client.conn points to the transport */
	struct native_req req;
	struct native_exec exec;
	bool hello_done;
	/* CLIENT PAUSE holds the request at the start of the receive buffer;
	 * its operations before resume_op have run and been answered */
	bool paused;
	unsigned resume_op;
	bool held; /* the request at the buffer's start was held: counted in INFO already */
	char errbuf[160];
};

static inline struct native_session *sess(struct conn *c)
{
	return conn_session(c);
}

/* The largest frame accepted (PROTOCOL.md §1). */
static uint32_t max_frame(const struct native_session *s)
{
	struct settings *cfg = s->client.srv->cfg;
	uint64_t bulk = (uint64_t)atomic_load_explicit(&cfg->proto_max_bulk_len, memory_order_relaxed);
	uint64_t qbuf = (uint64_t)atomic_load_explicit(&cfg->client_query_buffer_limit, memory_order_relaxed);
	uint64_t m = bulk + NW_FRAME_SLACK;
	if (qbuf && qbuf < m)
		m = qbuf;
	return m > UINT32_MAX - NW_HEADER_REST ? UINT32_MAX - NW_HEADER_REST : (uint32_t)m;
}

/* GOODBYE with WHY, then the connection closes once what is queued is
 * sent. Returns what consume() returns for it: everything. */
static size_t goodbye(struct conn *c, struct native_session *s, const char *why, size_t len)
{
	size_t n = strlen(why);
	unsigned char h[NW_HEADER + 4];
	nw_put_header(h, (uint32_t)(4 + n), NW_GOODBYE, 0, 0, 0);
	nw_put32(h + NW_HEADER, (uint32_t)n);
	reply_raw(&s->client.out, h, sizeof(h));
	reply_raw(&s->client.out, why, n);
	c->close_after_send = true;
	STAT_INC(c->w->stats, native_protocol_errors);
	zr_log(ZR_LOG_VERBOSE, "Native protocol error (%s) from client: id=%llu addr=%s", why,
	       (unsigned long long)s->client.id, s->client.addr);
	return len;
}

/* proto_ops.final_error: GOODBYE with ERROR, after nothing else (a
 * replica-ack timeout, a lapsed write lease: the requests still waiting
 * for their replies get none, their outcome unknown, as on RESP). */
static void native_final_error(struct conn *c, const char *error)
{
	struct native_session *s = sess(c);
	obuf_consume(&s->client.out, s->client.out.bytes);
	size_t n = strlen(error);
	unsigned char h[NW_HEADER + 4];
	nw_put_header(h, (uint32_t)(4 + n), NW_GOODBYE, 0, 0, 0);
	nw_put32(h + NW_HEADER, (uint32_t)n);
	reply_raw(&s->client.out, h, sizeof(h));
	reply_raw(&s->client.out, error, n);
}

/* --- admission, open, close ------------------------------------------------------ */

static bool native_admit(struct worker *w, int fd)
{
	const char *why = session_client_refusal(w, fd);
	if (!why)
		return true;
	size_t n = strlen(why);
	unsigned char h[NW_HEADER + 4];
	nw_put_header(h, (uint32_t)(4 + n), NW_GOODBYE, 0, 0, 0);
	nw_put32(h + NW_HEADER, (uint32_t)n);
	/* a new socket's buffer has room for it; it is closed right after */
	struct iovec iov[2] = { { h, sizeof(h) }, { (void *)why, n } };
	ssize_t r = writev(fd, iov, 2);
	(void)r;
	return false;
}

static void native_open(struct conn *c, void *arg)
{
	(void)arg;
	struct native_session *s = sess(c);
	session_client_open(c, &s->client);
	/* the values inside results are RESP3 (PROTOCOL.md §6) */
	s->client.resp = 3;
	s->client.out.resp = 3;
	atomic_store_explicit(&s->client.shared_resp, 3, memory_order_relaxed);
	native_req_init(&s->req);
	native_exec_init(&s->exec);
	if (c->w->srv->cfg->native_rf1)
		s->client.flags |= CLIENT_NO_JOURNAL;
	STAT_INC(c->w->stats, native_connections);
}

static void native_close(struct conn *c, int error)
{
	(void)error;
	struct native_session *s = sess(c);
	session_client_close(c, &s->client);
	native_req_free(&s->req);
	native_exec_free(&s->exec);
}

/* --- HELLO ----------------------------------------------------------------------- */

/* The client's HELLO (PROTOCOL.md §3): NULL when it is taken (the reply is
 * queued), else the reason for GOODBYE. */
static const char *hello(struct native_session *s, const unsigned char *p, size_t len, uint16_t count,
			 uint32_t id, uint8_t flags)
{
	struct nw_reader r;
	nw_reader_init(&r, p, len);
	uint32_t magic = nw_take32(&r);
	uint16_t version = nw_take16(&r), hflags = nw_take16(&r);
	size_t ulen, plen;
	const unsigned char *user = nw_take_str(&r, 256, &ulen);
	const unsigned char *pass = nw_take_str(&r, 65536, &plen);
	if (!r.ok)
		return "a malformed HELLO";
	if (magic != NW_MAGIC)
		return "a bad magic in HELLO";
	if (version != NW_VERSION)
		return "protocol version not supported (this server speaks 1)";
	if (hflags || count || id || flags)
		return "HELLO fields that must be 0 are not";
	if (r.p != r.end)
		return "bytes left after HELLO";
	(void)user;
	struct server *srv = s->client.srv;
	if (ulen && !(ulen == 7 && !memcmp(user, "default", 7)))
		return "WRONGPASS invalid username-password pair or user is disabled.";
	if (settings_requirepass_set(srv->cfg)) {
		if (!plen)
			return "NOAUTH Authentication required.";
		if (!settings_requirepass_check(srv->cfg, (const char *)pass, plen))
			return "WRONGPASS invalid username-password pair or user is disabled.";
		s->client.flags |= CLIENT_AUTHENTICATED;
	}
	char node_id[TOPO_ID_LEN + 1] = "";
	if (srv->cluster)
		cluster_my_id(srv->cluster, s->client.worker, node_id);
	size_t idlen = strlen(node_id);
	unsigned char b[NW_HEADER + 4 + 2 + 2 + 8 + 4 + 4 + TOPO_ID_LEN];
	size_t payload = 4 + 2 + 2 + 8 + 4 + 4 + idlen;
	nw_put_header(b, (uint32_t)payload, NW_HELLO, 0, 0, 0);
	unsigned char *q = b + NW_HEADER;
	nw_put32(q, NW_MAGIC);
	nw_put16(q + 4, NW_VERSION);
	nw_put16(q + 6, (uint16_t)((srv->cfg->native_rf1 ? NW_HELLO_RF1 : 0) |
				   (srv->cluster ? NW_HELLO_CLUSTER : 0)));
	nw_put64(q + 8, s->client.id);
	nw_put32(q + 16, max_frame(s));
	nw_put32(q + 20, (uint32_t)idlen);
	memcpy(q + 24, node_id, idlen);
	reply_raw(&s->client.out, b, NW_HEADER + payload);
	s->hello_done = true;
	return NULL;
}

/* --- requests ---------------------------------------------------------------------- */

enum request_result {
	REQ_DONE,
	REQ_HELD, /* paused: the frame stays in the receive buffer */
	REQ_CLOSE /* GOODBYE queued */
};

/* One REQUEST frame: checked whole, then run (native_exec.h) from
 * resume_op, which a pause that held it left. */
static enum request_result request(struct conn *c, struct native_session *s, unsigned char *payload,
				   size_t len, uint16_t count, uint32_t id, uint8_t flags)
{
	struct client *cl = &s->client;
	if (!count) {
		goodbye(c, s, "a REQUEST with no operations", 0);
		return REQ_CLOSE;
	}
	if (flags) {
		goodbye(c, s, "REQUEST flags that must be 0 are not", 0);
		return REQ_CLOSE;
	}
	struct native_limits lim = {
		.max_bulk_len = (uint64_t)atomic_load_explicit(&cl->srv->cfg->proto_max_bulk_len,
							       memory_order_relaxed),
		.databases = (unsigned)cl->srv->cfg->databases,
	};
	const char *why = native_req_decode(&s->req, count, payload, len, &lim, s->errbuf, sizeof(s->errbuf));
	if (why) {
		goodbye(c, s, why, 0);
		return REQ_CLOSE;
	}
	if (!s->held) {
		STAT_INC(c->w->stats, native_requests);
		STAT_ADD(c->w->stats, native_ops, count);
	}
	bool rf1 = cl->srv->cfg->native_rf1 != 0;
	s->held = native_exec_run(&s->exec, cl, &s->req, id, &s->resume_op, rf1) == NATIVE_EXEC_HELD;
	if (s->held)
		return REQ_HELD;
	if (cl->flags & CLIENT_CLOSE_AFTER_REPLY)
		c->close_after_send = true;
	return REQ_DONE;
}

/* --- the session ----------------------------------------------------------------- */

/* Parses and runs frames in BUF[0..LEN). Returns the bytes consumed
 * (whole frames); stops at a partial frame, a pause, a backpressure hold,
 * a protocol violation or a close requested. */
static size_t native_consume(struct conn *c, char *buf, size_t len)
{
	struct native_session *s = sess(c);
	size_t pos = 0;
	if (s->paused)
		return 0; /* the pause's end gives the bytes again (tick) */
	while (pos < len && !c->close_after_send && !c->bp_hold) {
		if (len - pos < 4)
			break;
		unsigned char *h = (unsigned char *)buf + pos;
		uint32_t flen = nw_get32(h);
		/* the limit is on the payload (PROTOCOL.md §1) */
		if (flen < NW_HEADER_REST || flen - NW_HEADER_REST > max_frame(s)) {
			snprintf(s->errbuf, sizeof(s->errbuf), "frame length %u out of range (8..%u)", flen,
				 max_frame(s) + NW_HEADER_REST);
			return goodbye(c, s, s->errbuf, len);
		}
		if (len - pos < 4 + (size_t)flen)
			break;
		uint8_t kind = h[4], flags = h[5];
		uint16_t count = nw_get16(h + 6);
		uint32_t id = nw_get32(h + 8);
		unsigned char *payload = h + NW_HEADER;
		size_t plen = flen - NW_HEADER_REST;
		if (!s->hello_done) {
			const char *why = kind == NW_HELLO ? hello(s, payload, plen, count, id, flags)
							   : "the first frame is not HELLO";
			if (why)
				return goodbye(c, s, why, len);
		} else if (kind == NW_HELLO) {
			return goodbye(c, s, "a second HELLO", len);
		} else if (kind != NW_REQUEST) {
			snprintf(s->errbuf, sizeof(s->errbuf), "frame kind %u may not be sent by a client",
				 kind);
			return goodbye(c, s, s->errbuf, len);
		} else {
			enum request_result r = request(c, s, payload, plen, count, id, flags);
			if (r == REQ_CLOSE)
				return len;
			if (r == REQ_HELD) {
				s->paused = true;
				worker_track_paused(c->w, c);
				break;
			}
		}
		pos += 4 + (size_t)flen;
		/* Like Redis, stop at the first reply over the hard limit */
		if (s->client.out.bytes > c->w->obuf_hard_cached &&
		    !session_client_output_ok(c, &s->client, c->w->now_ms)) {
			c->obuf_overflow = true;
			return len;
		}
		if (conn_over_backpressure(c)) {
			c->bp_hold = true;
			c->bp_progress_ms = c->w->now_ms;
		}
	}
	return pos;
}

/* proto_ops.group_add (conn.h): the key of the first operation of each
 * whole REQUEST at the start of DATA joins the loop turn's prefetch group.
 * Without it a connection sending one operation per request (batch 1)
 * waited for each key's cache misses alone, while RESP's requests of many
 * connections had theirs overlapped; a request of many ops prefetches
 * its own (native_exec.c). Only reads the bytes, bounds-checked. */
static void native_group_add(struct conn_group *g, const struct conn *c, char *data, size_t len)
{
	const struct native_session *s = conn_session_const(c);
	struct store *store = s->client.srv->store;
	if (!s->hello_done || s->paused || !store)
		return;
	const unsigned char *p = (const unsigned char *)data;
	size_t pos = 0;
	while (g->n < CONN_GROUP_MAX && len - pos >= NW_HEADER) {
		uint32_t flen = nw_get32(p + pos);
		if (flen < NW_HEADER_REST || len - pos - 4 < flen)
			return;
		const unsigned char *frame = p + pos, *op = frame + NW_HEADER;
		size_t plen = flen - NW_HEADER_REST;
		pos += 4 + (size_t)flen;
		if (frame[4] != NW_REQUEST || plen < NW_OP_HEADER + 4)
			continue;
		uint8_t code = op[0];
		uint16_t db = nw_get16(op + 2);
		uint32_t klen = nw_get32(op + NW_OP_HEADER);
		if (!nw_op_single_key(code) || db >= (unsigned)s->client.srv->cfg->databases ||
		    klen > plen - NW_OP_HEADER - 4)
			continue;
		const char *key = (const char *)op + NW_OP_HEADER + 4;
		if (store_prefetch(store, db, key, klen, &g->key[g->n].hash)) {
			g->store = store;
			g->key[g->n].db = db;
			g->key[g->n].key = key;
			g->key[g->n].klen = klen;
			g->n++;
		}
	}
}

static bool native_output_ok(struct conn *c, int64_t now_ms)
{
	return session_client_output_ok(c, &sess(c)->client, now_ms);
}

static bool native_tick(struct conn *c, bool timer, unsigned *paused)
{
	struct native_session *s = sess(c);
	return session_client_tick(c, &s->client, timer, &s->paused, paused);
}

const struct proto_ops native_session_ops = {
	.name = "native",
	.session_size = sizeof(struct native_session),
	.admit = native_admit,
	.open = native_open,
	.consume = native_consume,
	.group_add = native_group_add,
	.output_ok = native_output_ok,
	.tick = native_tick,
	.final_error = native_final_error,
	.close = native_close,
};
