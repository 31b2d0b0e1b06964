/* zc_recv — the engine's receiving half (zc_engine.c sends): the I/O loop
 * (zc_pump: one poll() over the nodes with requests in flight or bytes to
 * write; zaris_pollfds: the same set, for the caller's own poll), RESPONSE
 * frames matched to the oldest request of their connection, each result delivered to its part, MOVED/ASK followed,
 * GOODBYE and broken streams failing the connection, request timeouts,
 * and the engine's teardown. Single-threaded, inside the caller's call. */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/client/zc_int.h"
#include "zarisd/client/zc_resp3.h"
#include "zarisd/proto/native_wire.h"

/* Responses may carry large values: a frame past this is a broken stream. */
#define ZC_MAX_RESPONSE_FRAME (1u << 30)

/* --- receiving --------------------------------------------------------------------- */

/* "MOVED 3999 127.0.0.1:7001" / "ASK ...": the slot and the node's RESP
 * address; false when the text is not that. */
static bool parse_redirect(const struct zaris_value *v, unsigned *slot, const char **host, size_t *hlen,
			   uint16_t *port)
{
	if (!v || v->type != ZARIS_T_ERROR)
		return false;
	const char *s = v->str, *end = v->str + v->len;
	const char *sp = memchr(s, ' ', v->len);
	if (!sp)
		return false;
	unsigned long sl = 0;
	const char *p = sp + 1;
	for (; p < end && *p >= '0' && *p <= '9'; p++)
		sl = sl * 10 + (unsigned long)(*p - '0');
	if (p == sp + 1 || p >= end || *p != ' ' || sl > 16383)
		return false;
	const char *addr = p + 1;
	const char *colon = NULL;
	for (const char *c = addr; c < end; c++)
		if (*c == ':')
			colon = c; /* the last one: an IPv6 address has more */
	if (!colon || colon == addr || colon + 1 >= end)
		return false;
	unsigned long pt = 0;
	for (p = colon + 1; p < end && *p >= '0' && *p <= '9'; p++)
		pt = pt * 10 + (unsigned long)(*p - '0');
	if (p != end || pt == 0 || pt > 65535)
		return false;
	*slot = (unsigned)sl;
	*host = addr;
	*hlen = (size_t)(colon - addr);
	*port = (uint16_t)pt;
	return true;
}

/* A result for part PT: its answer, or (MOVED/ASK within the redirect
 * bound) the part queued again for the node named. */
static void deliver(struct zaris *z, struct zc_part *pt, int status, const struct zaris_value *v)
{
	if (!pt->b)
		return; /* ASKING's +OK */
	unsigned slot;
	const char *host;
	size_t hlen;
	uint16_t port;
	if ((status == ZARIS_S_MOVED || status == ZARIS_S_ASK) && pt->redirects < z->opts.max_redirects &&
	    z->cluster && parse_redirect(v, &slot, &host, &hlen, &port)) {
		int target = zc_node_by_resp(z, host, hlen, port);
		if (target < 0 && z->opts.native_port_offset) {
			int np = port + z->opts.native_port_offset;
			if (np > 0 && np <= 65535)
				target = zc_node_find(z, host, hlen, (uint16_t)np);
			if (target >= 0)
				z->nodes[target]->resp_port = port;
		}
		struct zc_part again = *pt;
		again.redirects++;
		again.answered = 0;
		again.asking = status == ZARIS_S_ASK;
		pt->pos = NULL;
		if (status == ZARIS_S_MOVED) {
			z->stats.moved++;
			z->topo_stale = true;
			if (target >= 0) {
				z->slot_node[slot] = (int16_t)target;
				again.node = target;
				zc_outq_push(z, &again);
			} else { /* a node we cannot reach yet: wait for the topology */
				again.node = -1;
				zc_park(z, &again);
				zc_topo_start(z);
			}
			return;
		}
		if (target >= 0) {
			z->stats.ask++;
			again.node = target;
			zc_outq_push(z, &again);
			return;
		}
		pt->pos = again.pos; /* ASK to an unknown node: the caller gets the ASK */
	}
	zc_part_answer(z, pt, status, v);
}

/* One RESPONSE frame (header H, payload P of LEN bytes) on node IDX:
 * 0, or -1 after failing the connection. */
static int handle_response(struct zaris *z, int idx, const unsigned char *h, const unsigned char *p,
			   size_t len)
{
	struct zc_node *n = z->nodes[idx];
	struct zc_req *r = n->head;
	uint16_t count = nw_get16(h + 6);
	uint32_t id = nw_get32(h + 8);
	if (!r || r->id != id) {
		zc_conn_fail(z, idx, ZARIS_E_PROTO, "a response to no request in flight");
		return -1;
	}
	struct nw_reader rd;
	nw_reader_init(&rd, p, len);
	for (uint16_t i = 0; i < count; i++) {
		uint16_t index = nw_take16(&rd);
		uint8_t status = nw_take8(&rd);
		if (!rd.ok || index >= r->nparts || r->parts[index].answered) {
			zc_conn_fail(z, idx, ZARIS_E_PROTO, "a result for no operation of its request");
			return -1;
		}
		struct zc_part *pt = &r->parts[index];
		struct zc_arena *a = pt->b ? &pt->b->arena : &z->scratch;
		struct zaris_value v;
		const char *why = "";
		ssize_t used = zc_resp3_parse(rd.p, (size_t)(rd.end - rd.p), a, &v, &why);
		if (used <= 0) {
			zc_conn_fail(z, idx, ZARIS_E_PROTO, used ? why : "a result value cut short");
			return -1;
		}
		rd.p += used;
		struct zaris_value *kept = zc_arena_alloc(a, sizeof(*kept));
		if (!kept) {
			zc_conn_fail(z, idx, ZARIS_E_NOMEM, "out of memory for a result");
			return -1;
		}
		*kept = v;
		pt->answered = 1;
		r->answered++;
		deliver(z, pt, status, kept);
	}
	if (rd.p != rd.end) {
		zc_conn_fail(z, idx, ZARIS_E_PROTO, "bytes after a response's last result");
		return -1;
	}
	if (!(h[5] & NW_RESPONSE_LAST))
		return 0;
	if (r->answered != r->nparts) {
		zc_conn_fail(z, idx, ZARIS_E_PROTO, "a request's last response left operations unanswered");
		return -1;
	}
	n->head = r->next;
	if (!n->head)
		n->tail = NULL;
	zc_req_free(r);
	zc_arena_reset(&z->scratch);
	return 0;
}

/* Every whole frame in node IDX's read buffer. */
static void handle_input(struct zaris *z, int idx)
{
	struct zc_node *n = z->nodes[idx];
	size_t off = 0;
	while (n->rlen - off >= 4) {
		const unsigned char *h = n->rbuf + off;
		uint32_t len = nw_get32(h);
		if (len < NW_HEADER_REST || len > ZC_MAX_RESPONSE_FRAME) {
			zc_conn_fail(z, idx, ZARIS_E_PROTO, "a frame length out of range");
			return;
		}
		if (n->rlen - off < 4 + (size_t)len)
			break;
		if (h[4] == NW_GOODBYE) {
			struct nw_reader rd;
			nw_reader_init(&rd, h + NW_HEADER, len - NW_HEADER_REST);
			size_t wl;
			const unsigned char *why = nw_take_str(&rd, len, &wl);
			char text[200];
			snprintf(text, sizeof(text), "GOODBYE: %.*s", why ? (int)wl : 0,
				 why ? (const char *)why : "");
			zc_conn_fail(z, idx, ZARIS_E_PROTO, text);
			return;
		}
		if (h[4] != NW_RESPONSE) {
			zc_conn_fail(z, idx, ZARIS_E_PROTO, "a frame of a kind a server does not send");
			return;
		}
		if (handle_response(z, idx, h, h + NW_HEADER, len - NW_HEADER_REST) < 0)
			return; /* the buffer was dropped with the connection */
		off += 4 + (size_t)len;
	}
	if (off) {
		memmove(n->rbuf, n->rbuf + off, n->rlen - off);
		n->rlen -= off;
	}
}

static void check_timeouts(struct zaris *z)
{
	if (z->opts.request_timeout_ms < 0)
		return;
	uint64_t now = zc_now_ms();
	for (size_t i = 0; i < z->nnodes; i++) {
		struct zc_node *n = z->nodes[i];
		if (n->head && now >= n->head->sent_ms + (uint64_t)z->opts.request_timeout_ms)
			zc_conn_fail(z, (int)i, ZARIS_E_TIMEOUT, "request timed out");
	}
}

/* The events node N waits for: 0 when it has no connection or nothing in
 * flight and nothing to write. */
static short node_events(const struct zc_node *n)
{
	if (n->fd < 0 || (!n->head && n->woff == n->wlen))
		return 0;
	return (short)(POLLIN | (n->woff < n->wlen ? POLLOUT : 0));
}

/* Lowers *WAIT (< 0: no limit) to the time left until node N's oldest
 * request times out. */
static void node_deadline(const struct zaris *z, const struct zc_node *n, uint64_t now, int *wait)
{
	if (!n->head || z->opts.request_timeout_ms < 0)
		return;
	uint64_t dl = n->head->sent_ms + (uint64_t)z->opts.request_timeout_ms;
	int left = dl > now ? (int)(dl - now) : 0;
	if (*wait < 0 || left < *wait)
		*wait = left;
}

int zaris_pollfds(const struct zaris *z, struct pollfd *fds, int max, int *timeout_ms)
{
	uint64_t now = zc_now_ms();
	int need = 0;
	for (size_t i = 0; i < z->nnodes; i++) {
		const struct zc_node *n = z->nodes[i];
		short ev = node_events(n);
		if (!ev)
			continue;
		if (need < max)
			fds[need] = (struct pollfd){ .fd = n->fd, .events = ev, .revents = 0 };
		need++;
		node_deadline(z, n, now, timeout_ms);
	}
	/* work no descriptor announces: a batch already complete, parts
	 * queued to send, or a topology read due */
	if (z->done_head || z->noutq)
		*timeout_ms = 0;
	else if (z->cluster && z->topo_stale && !z->topo_busy) {
		uint64_t due = z->topo_last_ms + (uint64_t)z->opts.topology_interval_ms;
		int left = due > now ? (int)(due - now) : 0;
		if (*timeout_ms < 0 || left < *timeout_ms)
			*timeout_ms = left;
	}
	return need;
}

int zc_pump(struct zaris *z, int timeout_ms)
{
	zc_flush(z);
	struct pollfd stack[16], *pfd = stack;
	int *which, stack_which[16];
	which = stack_which;
	if (z->nnodes > 16) {
		pfd = malloc(z->nnodes * sizeof(*pfd));
		which = malloc(z->nnodes * sizeof(*which));
		if (!pfd || !which) {
			free(pfd);
			free(which);
			return 0;
		}
	}
	nfds_t nfd = 0;
	uint64_t now = zc_now_ms();
	int wait = timeout_ms;
	for (size_t i = 0; i < z->nnodes; i++) {
		struct zc_node *n = z->nodes[i];
		short ev = node_events(n);
		if (!ev)
			continue;
		pfd[nfd] = (struct pollfd){ .fd = n->fd, .events = ev, .revents = 0 };
		which[nfd++] = (int)i;
		node_deadline(z, n, now, &wait);
	}
	int waited = nfd > 0;
	if (nfd) {
		int r = poll(pfd, nfd, wait);
		for (nfds_t k = 0; r > 0 && k < nfd; k++) {
			int idx = which[k];
			struct zc_node *n = z->nodes[idx];
			if (n->fd != pfd[k].fd)
				continue;
			if ((pfd[k].revents & POLLOUT) && zc_node_write(n)) {
				zc_conn_fail(z, idx, ZARIS_E_IO, "write failed");
				continue;
			}
			if (!(pfd[k].revents & (POLLIN | POLLERR | POLLHUP)))
				continue;
			size_t got;
			int rr = zc_node_read(n, &got);
			if (rr < 0 || rr == 0) {
				/* what came before the close is still answered */
				handle_input(z, idx);
				if (n->fd >= 0)
					zc_conn_fail(z, idx, rr == ZARIS_E_NOMEM ? ZARIS_E_NOMEM : ZARIS_E_IO,
						     rr == 0 ? "connection closed by the server"
							     : "read failed");
				continue;
			}
			handle_input(z, idx);
		}
	}
	if (pfd != stack) {
		free(pfd);
		free(which);
	}
	check_timeouts(z);
	zc_flush(z);
	return waited;
}

/* --- teardown ---------------------------------------------------------------------- */

static void orphan(struct zaris *z, struct zc_part *pt)
{
	struct zaris_batch *b = pt->b;
	free(pt->pos);
	pt->pos = NULL;
	if (!b || b == z->topo || b->state != ZC_INFLIGHT)
		return;
	b->state = ZC_RETURNED;
	b->rc = ZARIS_E_IO;
	b->owner = NULL;
}

void zc_engine_free(struct zaris *z)
{
	for (size_t i = 0; i < z->nnodes; i++) {
		struct zc_node *n = z->nodes[i];
		for (struct zc_req *r = n->head, *next; r; r = next) {
			next = r->next;
			for (uint32_t k = 0; k < r->nparts; k++)
				orphan(z, &r->parts[k]);
			zc_req_free(r);
		}
		zc_node_close_fd(n);
		free(n->rbuf);
		free(n->wbuf);
		free(n->host);
		free(n);
	}
	for (size_t i = 0; i < z->noutq; i++)
		orphan(z, &z->outq[i]);
	for (size_t i = 0; i < z->nparked; i++)
		orphan(z, &z->parked[i]);
	for (struct zaris_batch *b = z->done_head; b; b = b->next_done) {
		b->state = ZC_RETURNED;
		b->owner = NULL;
	}
	free(z->nodes);
	free(z->outq);
	free(z->parked);
	free(z->fbuf);
	zc_arena_free(&z->scratch);
	z->nodes = NULL;
	z->nnodes = z->noutq = z->nparked = 0;
}
