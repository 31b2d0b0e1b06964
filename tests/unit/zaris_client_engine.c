/* libzaris's engine against fake nodes: the test holds the server end of
 * each node's socket (a socketpair, or a listener served by a thread for
 * reconnects), reads the REQUEST frames the library writes, checks their
 * bytes against PROTOCOL.md 4 written out here independently, and answers
 * with RESPONSE frames of its choosing: results out of order and across
 * frames, pipelined batches, a request left unanswered (timeout), GOODBYE,
 * a connection lost with a read and a write in flight, and in cluster mode
 * split MGET/MSET, INVALIDATE on every primary, MOVED, ASK and the redirect
 * bound. Every wait on a socket is bounded (poll, 5 s). */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/client/zc_int.h"
#include "zarisd/client/zc_resp3.h"
#include "zarisd/proto/native_wire.h"

#define WAIT_MS 5000

/* --- the fake server's side ------------------------------------------------------ */

static int read_full(int fd, unsigned char *p, size_t n)
{
	while (n) {
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		if (poll(&pf, 1, WAIT_MS) <= 0)
			return -1;
		ssize_t r = read(fd, p, n);
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

/* One frame from FD into BUF: its total length, or -1. */
static long read_frame(int fd, unsigned char *buf, size_t cap)
{
	if (read_full(fd, buf, 4))
		return -1;
	uint32_t len = nw_get32(buf);
	if (len + 4 > cap || read_full(fd, buf + 4, len))
		return -1;
	return (long)len + 4;
}

struct frame {
	unsigned char b[1 << 16];
	size_t n;
	uint16_t count;
};

static void fr_start(struct frame *f, uint8_t kind, uint8_t flags, uint32_t id)
{
	f->n = NW_HEADER;
	f->count = 0;
	f->b[4] = kind;
	f->b[5] = flags;
	nw_put32(f->b + 8, id);
}

static void fr_result(struct frame *f, uint16_t index, uint8_t status, const char *resp3)
{
	nw_put16(f->b + f->n, index);
	f->b[f->n + 2] = status;
	size_t l = strlen(resp3);
	memcpy(f->b + f->n + 3, resp3, l);
	f->n += 3 + l;
	f->count++;
}

static void fr_send(int fd, struct frame *f)
{
	nw_put32(f->b, (uint32_t)(f->n - 4));
	nw_put16(f->b + 6, f->count);
	if (write(fd, f->b, f->n) != (ssize_t)f->n)
		diag("short write of a test frame");
}

/* The expected bytes of operations, written from PROTOCOL.md 4. */
struct ops {
	unsigned char b[4096];
	size_t n;
};
static void o8(struct ops *o, uint8_t v)
{
	o->b[o->n++] = v;
}
static void o16(struct ops *o, uint16_t v)
{
	o->b[o->n++] = (unsigned char)v;
	o->b[o->n++] = (unsigned char)(v >> 8);
}
static void o32(struct ops *o, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		o->b[o->n++] = (unsigned char)(v >> (8 * i));
}
static void o64(struct ops *o, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		o->b[o->n++] = (unsigned char)(v >> (8 * i));
}
static void ostr(struct ops *o, const char *s)
{
	o32(o, (uint32_t)strlen(s));
	memcpy(o->b + o->n, s, strlen(s));
	o->n += strlen(s);
}
static void ohead(struct ops *o, uint8_t op, uint8_t flags, uint16_t db)
{
	o8(o, op);
	o8(o, flags);
	o16(o, db);
}

/* --- the client's side ---------------------------------------------------------- */

/* A client whose node NODE talks to the test over a socketpair; *SRV gets
 * the test's end. */
static void attach(struct zaris *z, int node, int *srv)
{
	int sv[2];
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
	z->nodes[node]->fd = sv[0];
	z->nodes[node]->max_frame = 1 << 20;
	*srv = sv[1];
}

static struct zaris *client(uint16_t port)
{
	struct zaris_options o;
	zaris_options_init(&o);
	o.port = port;
	o.request_timeout_ms = -1;
	o.max_redirects = 2;
	o.topology_interval_ms = 1 << 30; /* no topology read of its own */
	struct zaris *z = zc_client_new(&o);
	z->topo_last_ms = zc_now_ms();
	memset(z->slot_node, 0, sizeof(z->slot_node));
	return z;
}

static const struct zaris_value *val(struct zaris_batch *b, size_t i, int want_status)
{
	const struct zaris_result *r = zaris_batch_result(b, i);
	if (!r || r->status != want_status) {
		diag("op %zu: status %d, expected %d", i, r ? r->status : -999, want_status);
		return NULL;
	}
	return r->value;
}

static bool bulk_is(const struct zaris_value *v, const char *s)
{
	return v && v->type == ZARIS_T_BULK && v->len == strlen(s) && !memcmp(v->str, s, v->len);
}

static unsigned char rbuf[1 << 16];

static void encoding_and_results(void)
{
	struct zaris *z = client(1);
	int srv;
	attach(z, 0, &srv);
	struct zaris_batch *b = zaris_batch_new();
	const char *labels[] = { "a", "bb" };
	struct zaris_meta meta = { .labels = labels,
				   .nlabels = 2,
				   .entity = "e",
				   .entity_len = 1,
				   .content_type = "text/plain",
				   .content_type_len = SIZE_MAX };
	struct zaris_set_opts so = { .ttl_ms = 1500, .flags = ZARIS_SET_NX, .meta = &meta };
	const void *keys[] = { "k1", "k2" };
	size_t klens[] = { 2, 2 };
	const void *vals[] = { "v1", "v22" };
	size_t vlens[] = { 2, 3 };
	const char *argv[] = { "PING" };
	is_int(zaris_add_get(b, "k", 1), 0, "add GET: index 0");
	zaris_add_set(b, "k", 1, "v", 1, &so);
	zaris_batch_db(b, 3);
	zaris_add_del(b, "k", 1);
	zaris_batch_db(b, -1);
	zaris_add_exists(b, "k", 1);
	zaris_add_incrby(b, "n", 1, -3);
	zaris_add_getset(b, "k", 1, "w", 1);
	zaris_add_getdel(b, "k", 1);
	zaris_add_mget(b, 2, keys, klens);
	zaris_add_mset(b, 2, keys, klens, vals, vlens);
	zaris_add_pttl(b, "k", 1);
	zaris_add_pexpire(b, "k", 1, 100);
	zaris_add_persist(b, "k", 1);
	zaris_add_metaget(b, "k", 1);
	zaris_add_metaset(b, "k", 1, NULL);
	zaris_add_invalidate(b, "lbl", 3, NULL, 0);
	zaris_add_topology(b);
	is_int(zaris_add_command(b, 1, argv, NULL), 16, "add COMMAND: index 16");
	is_int(zaris_batch_count(b), 17, "17 operations");
	ok(zaris_add_mget(b, 0, keys, klens) == ZARIS_E_INVAL &&
		   zaris_add_command(b, 0, argv, NULL) == ZARIS_E_INVAL,
	   "MGET of 0 keys and COMMAND of argc 0 refused");

	struct ops w = { .n = 0 };
	ohead(&w, 1, 0, 0), ostr(&w, "k");
	ohead(&w, 2, 0x11, 0), ostr(&w, "k"), ostr(&w, "v"), o64(&w, 1500), o16(&w, 2), ostr(&w, "a"),
		ostr(&w, "bb"), ostr(&w, "e"), ostr(&w, "text/plain");
	ohead(&w, 3, 0, 3), ostr(&w, "k");
	ohead(&w, 4, 0, 0), ostr(&w, "k");
	ohead(&w, 5, 0, 0), ostr(&w, "n"), o64(&w, (uint64_t)-3);
	ohead(&w, 6, 0, 0), ostr(&w, "k"), ostr(&w, "w");
	ohead(&w, 7, 0, 0), ostr(&w, "k");
	ohead(&w, 8, 0, 0), o16(&w, 2), ostr(&w, "k1"), ostr(&w, "k2");
	ohead(&w, 9, 0, 0), o16(&w, 2), ostr(&w, "k1"), ostr(&w, "v1"), ostr(&w, "k2"), ostr(&w, "v22");
	ohead(&w, 10, 0, 0), ostr(&w, "k");
	ohead(&w, 11, 0, 0), ostr(&w, "k"), o64(&w, 100);
	ohead(&w, 12, 0, 0), ostr(&w, "k");
	ohead(&w, 13, 0, 0), ostr(&w, "k");
	ohead(&w, 14, 0, 0), ostr(&w, "k"), o16(&w, 0), ostr(&w, ""), ostr(&w, "");
	ohead(&w, 15, 0, 0), ostr(&w, "lbl"), ostr(&w, "");
	ohead(&w, 16, 0, 0);
	ohead(&w, 17, 0, 0), o16(&w, 1), ostr(&w, "PING");

	is_int(zaris_send(z, b), 0, "send");
	is_int(zaris_send(z, b), ZARIS_E_BUSY, "a batch in flight cannot be sent again");
	is_int(zaris_batch_reset(b), ZARIS_E_BUSY, "nor reset");
	long n = read_frame(srv, rbuf, sizeof(rbuf));
	ok(n == (long)(NW_HEADER + w.n), "one REQUEST frame of the expected length (%ld)", n);
	ok(n > 0 && rbuf[4] == NW_REQUEST && rbuf[5] == 0 && nw_get16(rbuf + 6) == 17,
	   "header: REQUEST, count 17");
	is_mem(rbuf + NW_HEADER, n - NW_HEADER, w.b, w.n, "the operations' bytes are PROTOCOL.md 4's");
	uint32_t id = nw_get32(rbuf + 8);

	/* answers out of order, over two frames, the LAST one second */
	struct frame *f = malloc(sizeof(*f));
	fr_start(f, NW_RESPONSE, 0, id);
	fr_result(f, 16, 0, "+PONG\r\n");
	fr_result(f, 7, 0, "*2\r\n$2\r\nx1\r\n_\r\n");
	fr_result(f, 1, 0, "_\r\n");
	fr_result(f, 4, 2, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
	fr_send(srv, f);
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, id);
	for (uint16_t i = 0; i < 17; i++)
		if (i != 16 && i != 7 && i != 1 && i != 4)
			fr_result(f, i, 0,
				  i == 0    ? "$3\r\nold\r\n"
				  : i == 15 ? "%1\r\n+epoch\r\n:0\r\n"
					    : ":1\r\n");
	fr_send(srv, f);
	is_int(zaris_wait(z, b), 0, "wait: every operation answered");
	ok(bulk_is(val(b, 0, 0), "old"), "GET's bulk");
	const struct zaris_value *v = val(b, 1, 0);
	ok(v && v->type == ZARIS_T_NULL, "SET NX not applied: null");
	v = val(b, 4, ZARIS_S_WRONGTYPE);
	ok(v && v->type == ZARIS_T_ERROR && !strncmp(v->str, "WRONGTYPE", 9),
	   "INCRBY's WRONGTYPE: status and text");
	v = val(b, 7, 0);
	ok(v && v->type == ZARIS_T_ARRAY && v->n == 2 && bulk_is(&v->elements[0], "x1"), "MGET's array");
	v = val(b, 16, 0);
	ok(v && v->type == ZARIS_T_SIMPLE && !strcmp(v->str, "PONG"), "COMMAND PING: +PONG");
	ok(zaris_batch_result(b, 17) == NULL, "no result past the last operation");
	is_int(zaris_in_flight(z), 0, "nothing in flight");
	is_int(zaris_batch_reset(b), 0, "a returned batch resets");
	zaris_batch_free(b);
	free(f);
	close(srv);
	zc_client_free(z);
}

static void pipelining(void)
{
	struct zaris *z = client(1);
	int srv;
	attach(z, 0, &srv);
	struct zaris_batch *b[3];
	uint32_t ids[3];
	for (int i = 0; i < 3; i++) {
		b[i] = zaris_batch_new();
		char k[2] = { (char)('a' + i), 0 };
		zaris_add_get(b[i], k, 1);
		zaris_send(z, b[i]);
	}
	is_int(zaris_in_flight(z), 3, "three batches in flight");
	int good = 1;
	for (int i = 0; i < 3; i++) {
		long n = read_frame(srv, rbuf, sizeof(rbuf));
		good &= n > 0 && rbuf[NW_HEADER + 8] == 'a' + i;
		ids[i] = nw_get32(rbuf + 8);
	}
	ok(good && ids[0] != ids[1] && ids[1] != ids[2], "three frames, in send order, distinct ids");
	struct frame *f = malloc(sizeof(*f));
	for (int i = 0; i < 3; i++) {
		char resp[16];
		snprintf(resp, sizeof(resp), "$1\r\n%c\r\n", 'A' + i);
		fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, ids[i]);
		fr_result(f, 0, 0, resp);
		fr_send(srv, f);
	}
	good = 1;
	for (int i = 0; i < 3; i++) {
		struct zaris_batch *d;
		int rc = -1;
		int got = zaris_wait_any(z, -1, &d, &rc);
		char want[2] = { (char)('A' + i), 0 };
		good &= got == 1 && d == b[i] && rc == 0 && bulk_is(val(d, 0, 0), want);
	}
	ok(good, "wait_any returns each batch with its own answer");
	struct zaris_batch *d;
	ok(zaris_wait_any(z, 0, &d, NULL) == 0 && !d, "wait_any with nothing in flight: 0");
	/* a response whose id is not the oldest request's breaks the stream */
	zaris_send(z, b[0]);
	read_frame(srv, rbuf, sizeof(rbuf));
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8) + 7);
	fr_result(f, 0, 0, "_\r\n");
	fr_send(srv, f);
	is_int(zaris_wait(z, b[0]), ZARIS_E_PROTO, "a response to no request in flight: ZARIS_E_PROTO");
	ok(z->nodes[0]->fd < 0, "and the connection is closed");
	for (int i = 0; i < 3; i++)
		zaris_batch_free(b[i]);
	free(f);
	close(srv);
	zc_client_free(z);
}

static void timeout_and_goodbye(void)
{
	struct zaris *z = client(1);
	z->opts.request_timeout_ms = 50;
	int srv;
	attach(z, 0, &srv);
	struct zaris_batch *b = zaris_batch_new();
	zaris_add_get(b, "k", 1);
	zaris_add_set(b, "k", 1, "v", 1, NULL);
	zaris_send(z, b);
	is_int(zaris_wait(z, b), ZARIS_E_TIMEOUT, "an unanswered request times out");
	ok(zaris_batch_result(b, 0)->status == ZARIS_E_TIMEOUT &&
		   zaris_batch_result(b, 1)->status == ZARIS_E_TIMEOUT && !zaris_batch_result(b, 0)->value,
	   "both operations: ZARIS_E_TIMEOUT, no value");
	ok(z->nodes[0]->fd < 0, "the connection is closed");
	close(srv);

	z->opts.request_timeout_ms = -1;
	attach(z, 0, &srv);
	zaris_send(z, b);
	read_frame(srv, rbuf, sizeof(rbuf));
	struct frame *f = malloc(sizeof(*f));
	fr_start(f, NW_GOODBYE, 0, 0);
	const char *why = "opflags bits not defined for the op";
	nw_put32(f->b + f->n, (uint32_t)strlen(why));
	memcpy(f->b + f->n + 4, why, strlen(why));
	f->n += 4 + strlen(why);
	fr_send(srv, f);
	is_int(zaris_wait(z, b), ZARIS_E_PROTO, "GOODBYE: ZARIS_E_PROTO");
	ok(strstr(zaris_errstr(z), why) != NULL, "its reason in zaris_errstr (%s)", zaris_errstr(z));
	free(f);
	zaris_batch_free(b);
	close(srv);
	zc_client_free(z);
}

/* zaris_pollfds: the descriptor while a request is in flight, the nearest
 * request timeout, 0 when a batch completed before the caller took it, and
 * nothing with nothing in flight; a caller's poll() on it wakes when the
 * answer comes and zaris_wait_any(0) then takes it. */
static void poll_set(void)
{
	struct zaris *z = client(1);
	int srv;
	attach(z, 0, &srv);
	struct pollfd fds[2];
	int t = -1;
	is_int(zaris_pollfds(z, fds, 2, &t), 0, "pollfds: nothing in flight, no descriptor");
	is_int(t, -1, "and no timeout set");

	struct zaris_batch *b[2];
	for (int i = 0; i < 2; i++) {
		b[i] = zaris_batch_new();
		zaris_add_get(b[i], "k", 1);
		zaris_send(z, b[i]);
	}
	t = -1;
	memset(fds, 0x55, sizeof(fds));
	int n = zaris_pollfds(z, fds, 2, &t);
	ok(n == 1 && fds[0].fd == z->nodes[0]->fd && (fds[0].events & POLLIN) && fds[0].revents == 0,
	   "two batches in flight on one node: its descriptor, POLLIN, revents cleared");
	is_int(t, -1, "no request timeout configured: the timeout is left as it was");
	z->opts.request_timeout_ms = 10000;
	t = 20000;
	zaris_pollfds(z, fds, 2, &t);
	ok(t >= 0 && t <= 10000, "a request timeout lowers it to the time left (%d ms)", t);
	z->opts.request_timeout_ms = -1;
	t = 7;
	is_int(zaris_pollfds(z, fds, 0, &t), 1, "MAX 0: the count it needs, nothing written");
	is_int(poll(fds, 1, 0), 0, "no answer yet: the descriptor is not ready");

	uint32_t ids[2];
	for (int i = 0; i < 2; i++) {
		read_frame(srv, rbuf, sizeof(rbuf));
		ids[i] = nw_get32(rbuf + 8);
	}
	struct frame *f = malloc(sizeof(*f));
	for (int i = 0; i < 2; i++) {
		fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, ids[i]);
		fr_result(f, 0, 0, "$1\r\nv\r\n");
		fr_send(srv, f);
	}
	ok(poll(fds, 1, WAIT_MS) == 1 && (fds[0].revents & POLLIN), "both answered: the poll wakes");
	struct zaris_batch *d;
	int rc = -1;
	ok(zaris_wait_any(z, 0, &d, &rc) == 1 && d == b[0] && rc == 0,
	   "wait_any(0) after the poll takes the first batch");
	t = -1;
	n = zaris_pollfds(z, fds, 2, &t);
	ok(n == 0 && t == 0,
	   "the second, read in the same pass, is complete: no descriptor, timeout 0 (n %d t %d)", n, t);
	ok(zaris_wait_any(z, 0, &d, &rc) == 1 && d == b[1] && rc == 0, "and wait_any(0) takes it");
	t = 40;
	ok(zaris_pollfds(z, fds, 2, &t) == 0 && t == 40, "then nothing in flight again");
	free(f);
	for (int i = 0; i < 2; i++)
		zaris_batch_free(b[i]);
	close(srv);
	zc_client_free(z);
}

/* A node that accepts one connection, answers HELLO, then answers one
 * request's GET operations with "$2\r\nok" and anything else with :0. */
struct hello_node {
	int lfd;
	int ops_seen;
};

static void *serve_once(void *arg)
{
	struct hello_node *h = arg;
	struct pollfd pf = { .fd = h->lfd, .events = POLLIN };
	if (poll(&pf, 1, WAIT_MS) <= 0)
		return NULL;
	int fd = accept(h->lfd, NULL, NULL);
	unsigned char *buf = malloc(1 << 16);
	struct frame *f = malloc(sizeof(*f));
	if (read_frame(fd, buf, 1 << 16) > 0 && buf[4] == NW_HELLO) {
		fr_start(f, NW_HELLO, 0, 0);
		nw_put32(f->b + f->n, NW_MAGIC);
		nw_put16(f->b + f->n + 4, 1);
		nw_put16(f->b + f->n + 6, 0);
		nw_put64(f->b + f->n + 8, 42);
		nw_put32(f->b + f->n + 16, 1 << 20);
		nw_put32(f->b + f->n + 20, 0);
		f->n += 24;
		fr_send(fd, f);
		long n = read_frame(fd, buf, 1 << 16);
		if (n > 0) {
			uint16_t count = nw_get16(buf + 6);
			fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(buf + 8));
			/* this test's requests are GETs of one-byte keys */
			for (uint16_t i = 0; i < count; i++)
				fr_result(f, i, 0,
					  buf[NW_HEADER + i * 9] == NW_OP_GET ? "$2\r\nok\r\n" : ":0\r\n");
			h->ops_seen = count;
			fr_send(fd, f);
		}
	}
	/* wait for the client to close */
	read_frame(fd, buf, 1 << 16);
	close(fd);
	free(buf);
	free(f);
	return NULL;
}

static void lost_connection(void)
{
	struct hello_node h = { .lfd = socket(AF_INET, SOCK_STREAM, 0) };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	bind(h.lfd, (struct sockaddr *)&sa, sizeof(sa));
	listen(h.lfd, 4);
	getsockname(h.lfd, (struct sockaddr *)&sa, &sl);
	struct zaris *z = client(ntohs(sa.sin_port));
	int srv;
	attach(z, 0, &srv);
	struct zaris_batch *b = zaris_batch_new();
	zaris_add_get(b, "k", 1);
	zaris_add_incrby(b, "n", 1, 1);
	zaris_send(z, b);
	read_frame(srv, rbuf, sizeof(rbuf));
	pthread_t t;
	pthread_create(&t, NULL, serve_once, &h);
	close(srv); /* the connection drops with both operations unanswered */
	int rc = zaris_wait(z, b);
	is_int(rc, ZARIS_E_IO, "wait reports the lost connection");
	ok(bulk_is(val(b, 0, 0), "ok"), "the read (GET) was sent again on a new connection and answered");
	ok(zaris_batch_result(b, 1)->status == ZARIS_E_IO,
	   "the write (INCRBY) got ZARIS_E_IO, not a second run");
	struct zaris_stats st;
	zaris_get_stats(z, &st);
	ok(st.retries == 1 && st.connects == 1 && h.ops_seen == 1,
	   "one retry, one reconnect, one operation resent");
	zc_client_free(z);
	pthread_join(t, NULL);
	/* a node that refuses: the first connect fails, then backoff */
	uint16_t port = ntohs(sa.sin_port);
	close(h.lfd);
	z = client(port);
	z->opts.reconnect_min_ms = z->opts.reconnect_max_ms = 3600 * 1000; /* no second try in this test */
	zaris_batch_reset(b);
	zaris_add_get(b, "k", 1);
	is_int(zaris_exec(z, b), ZARIS_E_IO, "connect refused: ZARIS_E_IO");
	is_int(zaris_exec(z, b), ZARIS_E_IO, "right after it: ZARIS_E_IO");
	ok(strstr(zaris_errstr(z), "backoff") != NULL, "without trying (in backoff: %s)", zaris_errstr(z));
	zaris_batch_free(b);
	zc_client_free(z);
}

/* --- cluster -------------------------------------------------------------------- */

static const char topo_text[] =
	"%3\r\n+epoch\r\n:4\r\n+cluster\r\n#t\r\n+nodes\r\n*2\r\n"
	"%7\r\n+id\r\n$1\r\na\r\n+ip\r\n$9\r\n127.0.0.1\r\n+port\r\n:6001\r\n+native-port\r\n:7001\r\n"
	"+role\r\n$7\r\nprimary\r\n+primary\r\n$0\r\n\r\n+slots\r\n*1\r\n*2\r\n:0\r\n:8191\r\n"
	"%7\r\n+id\r\n$1\r\nb\r\n+ip\r\n$9\r\n127.0.0.1\r\n+port\r\n:6002\r\n+native-port\r\n:7002\r\n"
	"+role\r\n$7\r\nprimary\r\n+primary\r\n$0\r\n\r\n+slots\r\n*1\r\n*2\r\n:8192\r\n:16383\r\n";

/* The ops of a REQUEST frame in BUF: codes, and each op's first key. */
static int frame_ops(const unsigned char *buf, long n, uint8_t *codes, char keys[][16], int max)
{
	struct nw_reader r;
	nw_reader_init(&r, buf + NW_HEADER, (size_t)n - NW_HEADER);
	int count = nw_get16(buf + 6), i;
	for (i = 0; i < count && i < max; i++) {
		codes[i] = nw_take8(&r);
		nw_take8(&r);
		nw_take16(&r);
		size_t l = 0;
		const unsigned char *k = NULL;
		if (codes[i] == NW_OP_MGET || codes[i] == NW_OP_MSET || codes[i] == NW_OP_COMMAND) {
			uint16_t nk = nw_take16(&r);
			for (uint16_t j = 0; j < nk; j++) {
				size_t kl;
				const unsigned char *kk = nw_take_str(&r, 1 << 20, &kl);
				if (!j)
					k = kk, l = kl;
				if (codes[i] == NW_OP_MSET)
					nw_take_str(&r, 1 << 20, &kl);
			}
		} else if (codes[i] == NW_OP_INVALIDATE) {
			k = nw_take_str(&r, 1 << 20, &l);
			nw_take_str(&r, 1 << 20, &l);
			l = 0;
		} else {
			k = nw_take_str(&r, 1 << 20, &l); /* GET: the only field */
		}
		snprintf(keys[i], 16, "%.*s", (int)l, k ? (const char *)k : "");
	}
	return r.ok && r.p == r.end ? count : -1;
}

static void cluster(void)
{
	struct zaris *z = client(7001);
	z->cluster = true;
	for (unsigned s = 0; s < 16384; s++)
		z->slot_node[s] = -1;
	zc_node_find(z, "127.0.0.1", 9, 7002);
	struct zaris_value tv;
	struct zc_arena a = { 0 };
	const char *why;
	zc_resp3_parse(topo_text, sizeof(topo_text) - 1, &a, &tv, &why);
	is_int(zc_topo_apply(z, &tv), 0, "a TOPOLOGY map applies");
	zc_arena_free(&a);
	ok(zaris_key_slot("foo", 3) == 12182 && zaris_key_slot("bar", 3) == 5061 &&
		   zaris_key_slot("{foo}z", 6) == 12182 && zaris_key_slot("hello", 5) == 866,
	   "key slots as CLUSTER KEYSLOT (foo 12182, bar 5061, {foo}z 12182, hello 866)");
	ok(zaris_key_node(z, "foo", 3) == 1 && zaris_key_node(z, "bar", 3) == 0 &&
		   zaris_key_node(z, "{bar}x", 6) == 0,
	   "keys route to their slot's primary");
	ok(z->epoch == 4 && z->nodes[1]->resp_port == 6002 && !strcmp(z->nodes[1]->id, "b"),
	   "epoch, RESP port, id");
	int sa, sb;
	attach(z, 0, &sa);
	attach(z, 1, &sb);

	struct zaris_batch *b = zaris_batch_new();
	const void *keys[] = { "foo", "bar", "hello", "{foo}z" };
	size_t klens[] = { 3, 3, 5, 6 };
	zaris_add_mget(b, 4, keys, klens);
	zaris_add_mset(b, 4, keys, klens, keys, klens);
	zaris_add_invalidate(b, "l", 1, "", 0);
	zaris_send(z, b);
	uint8_t codes[8];
	char k[8][16];
	long n = read_frame(sa, rbuf, sizeof(rbuf));
	int cnt = frame_ops(rbuf, n, codes, k, 8);
	uint32_t ida = nw_get32(rbuf + 8);
	ok(cnt == 5 && codes[0] == NW_OP_MGET && codes[2] == NW_OP_MSET && codes[4] == NW_OP_INVALIDATE &&
		   !strcmp(k[0], "hello") && !strcmp(k[1], "bar"),
	   "node A: MGET/MSET split per slot (hello, bar: one op each) and INVALIDATE");
	n = read_frame(sb, rbuf, sizeof(rbuf));
	int cntb = frame_ops(rbuf, n, codes, k, 8);
	uint32_t idb = nw_get32(rbuf + 8);
	ok(cntb == 3 && codes[0] == NW_OP_MGET && nw_get16(rbuf + NW_HEADER + 4) == 2 &&
		   !strcmp(k[0], "foo") && codes[2] == NW_OP_INVALIDATE,
	   "node B: one MGET of foo, {foo}z (one slot), MSET, INVALIDATE");
	struct frame *f = malloc(sizeof(*f));
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, ida);
	fr_result(f, 0, 0, "*1\r\n$2\r\nvh\r\n");
	fr_result(f, 1, 0, "*1\r\n$2\r\nvb\r\n");
	fr_result(f, 2, 0, "+OK\r\n");
	fr_result(f, 3, 0, "+OK\r\n");
	fr_result(f, 4, 0, ":2\r\n");
	fr_send(sa, f);
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, idb);
	fr_result(f, 2, 0, ":3\r\n");
	fr_result(f, 0, 0, "*2\r\n$2\r\nvf\r\n_\r\n");
	fr_result(f, 1, 0, "+OK\r\n");
	fr_send(sb, f);
	is_int(zaris_wait(z, b), 0, "the split batch completes");
	const struct zaris_value *v = val(b, 0, 0);
	ok(v && v->n == 4 && bulk_is(&v->elements[0], "vf") && bulk_is(&v->elements[1], "vb") &&
		   bulk_is(&v->elements[2], "vh") && v->elements[3].type == ZARIS_T_NULL,
	   "MGET reassembled in the caller's key order");
	v = val(b, 1, 0);
	ok(v && v->type == ZARIS_T_SIMPLE && !strcmp(v->str, "OK"), "MSET: +OK from its parts");
	v = val(b, 2, 0);
	ok(v && v->type == ZARIS_T_INTEGER && v->integer == 5, "INVALIDATE summed over both primaries");

	/* MOVED: foo's slot moved to A */
	zaris_batch_reset(b);
	zaris_add_get(b, "foo", 3);
	zaris_send(z, b);
	read_frame(sb, rbuf, sizeof(rbuf));
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8));
	fr_result(f, 0, NW_MOVED, "-MOVED 12182 127.0.0.1:6001\r\n");
	fr_send(sb, f);
	zc_pump(z, 0);
	n = read_frame(sa, rbuf, sizeof(rbuf));
	cnt = frame_ops(rbuf, n, codes, k, 8);
	ok(cnt == 1 && codes[0] == NW_OP_GET && !strcmp(k[0], "foo"),
	   "after MOVED the GET goes to the node named");
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8));
	fr_result(f, 0, 0, "$1\r\nx\r\n");
	fr_send(sa, f);
	is_int(zaris_wait(z, b), 0, "and is answered there");
	ok(bulk_is(val(b, 0, 0), "x") && zaris_key_node(z, "foo", 3) == 0,
	   "its value; the slot now routes to A");

	/* ASK: bar is being imported by B */
	zaris_batch_reset(b);
	zaris_add_get(b, "bar", 3);
	zaris_send(z, b);
	read_frame(sa, rbuf, sizeof(rbuf));
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8));
	fr_result(f, 0, NW_ASK, "-ASK 5061 127.0.0.1:6002\r\n");
	fr_send(sa, f);
	zc_pump(z, 0);
	n = read_frame(sb, rbuf, sizeof(rbuf));
	cnt = frame_ops(rbuf, n, codes, k, 8);
	ok(cnt == 2 && codes[0] == NW_OP_COMMAND && !strcmp(k[0], "ASKING") && codes[1] == NW_OP_GET &&
		   !strcmp(k[1], "bar"),
	   "after ASK: COMMAND ASKING then the GET, in one request to the node named");
	fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8));
	fr_result(f, 0, 0, "+OK\r\n");
	fr_result(f, 1, 0, "$1\r\ny\r\n");
	fr_send(sb, f);
	is_int(zaris_wait(z, b), 0, "answered");
	ok(bulk_is(val(b, 0, 0), "y") && zaris_key_node(z, "bar", 3) == 0,
	   "the ASK's value; the slot map unchanged");

	/* MOVED back and forth: past max_redirects (2) the caller gets it */
	zaris_batch_reset(b);
	zaris_add_get(b, "foo", 3);
	zaris_send(z, b);
	int hops = 0;
	for (int i = 0; i < 3; i++) {
		int fd = i % 2 ? sb : sa;
		if (read_frame(fd, rbuf, sizeof(rbuf)) < 0)
			break;
		hops++;
		fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8));
		fr_result(f, 0, NW_MOVED,
			  i % 2 ? "-MOVED 12182 127.0.0.1:6001\r\n" : "-MOVED 12182 127.0.0.1:6002\r\n");
		fr_send(fd, f);
		zc_pump(z, 0);
	}
	is_int(zaris_wait(z, b), 0, "the batch completes");
	v = val(b, 0, ZARIS_S_MOVED);
	ok(hops == 3 && v && v->type == ZARIS_T_ERROR && !strncmp(v->str, "MOVED", 5),
	   "three answers (the first and two follow-ups), then MOVED is the result");
	struct zaris_stats st;
	zaris_get_stats(z, &st);
	ok(st.moved == 3 && st.ask == 1, "stats: 3 MOVED followed, 1 ASK");
	free(f);
	zaris_batch_free(b);
	close(sa);
	close(sb);
	zc_client_free(z);
}

/* A batch past the server's max frame goes as several requests; one
 * operation alone past it is refused without being sent. */
static void frame_limit(void)
{
	struct zaris *z = client(1);
	int srv;
	attach(z, 0, &srv);
	z->nodes[0]->max_frame = 100; /* header 12 + 4 GETs of 18-byte ops = 84 */
	struct zaris_batch *b = zaris_batch_new();
	for (int i = 0; i < 10; i++) {
		char k[11];
		snprintf(k, sizeof(k), "key-%06u", (unsigned)i % 1000000u);
		zaris_add_get(b, k, 10);
	}
	char big[200] = { 0 };
	zaris_add_set(b, "k", 1, big, sizeof(big), NULL);
	zaris_send(z, b);
	struct frame *f = malloc(sizeof(*f));
	int frames = 0, ops = 0, small = 1;
	long n;
	while (ops < 10 && (n = read_frame(srv, rbuf, sizeof(rbuf))) > 0) {
		uint16_t count = nw_get16(rbuf + 6);
		small &= n <= 100;
		fr_start(f, NW_RESPONSE, NW_RESPONSE_LAST, nw_get32(rbuf + 8));
		for (uint16_t i = 0; i < count; i++) {
			char resp[32];
			snprintf(resp, sizeof(resp), "$10\r\n%.10s\r\n",
				 (const char *)rbuf + NW_HEADER + i * 18 + 8);
			fr_result(f, i, 0, resp);
		}
		fr_send(srv, f);
		frames++;
		ops += count;
	}
	is_int(zaris_wait(z, b), ZARIS_E_INVAL, "wait: the oversized SET is the batch's error");
	ok(frames == 3 && ops == 10 && small, "10 GETs in 3 requests, each within the limit (%d frames)",
	   frames);
	int good = 1;
	for (int i = 0; i < 10; i++) {
		char k[11];
		snprintf(k, sizeof(k), "key-%06u", (unsigned)i % 1000000u);
		good &= bulk_is(val(b, (size_t)i, 0), k);
	}
	ok(good, "each GET answered with its own key (results map back across requests)");
	ok(zaris_batch_result(b, 10)->status == ZARIS_E_INVAL && strstr(zaris_errstr(z), "frame limit"),
	   "the SET over the limit: ZARIS_E_INVAL, not sent (%s)", zaris_errstr(z));
	free(f);
	zaris_batch_free(b);
	close(srv);
	zc_client_free(z);
}

/* A topology without native ports: routable only with native_port_offset. */
static void port_offset(void)
{
	static const char text[] = "%2\r\n+epoch\r\n:1\r\n+nodes\r\n*1\r\n"
				   "%5\r\n+id\r\n$1\r\nc\r\n+ip\r\n$9\r\n127.0.0.1\r\n+port\r\n:6010\r\n"
				   "+role\r\n$7\r\nprimary\r\n+slots\r\n*1\r\n*2\r\n:0\r\n:16383\r\n";
	for (int offset = 0; offset <= 1000; offset += 1000) {
		struct zaris *z = client(7001);
		z->cluster = true;
		z->opts.native_port_offset = offset;
		struct zaris_value tv;
		struct zc_arena a = { 0 };
		const char *why;
		zc_resp3_parse(text, sizeof(text) - 1, &a, &tv, &why);
		int rc = zc_topo_apply(z, &tv);
		zc_arena_free(&a);
		int node = zaris_key_node(z, "foo", 3);
		if (offset)
			ok(rc == 0 && node == 1 && z->nodes[1]->port == 7010 &&
				   z->nodes[1]->resp_port == 6010,
			   "no native-port, offset 1000: the node at RESP port + 1000");
		else
			ok(rc == 0 && node == ZARIS_E_NOROUTE && z->nnodes == 1,
			   "no native-port, no offset: its slots are not routable (ZARIS_E_NOROUTE)");
		if (!offset) {
			struct zaris_batch *b = zaris_batch_new();
			zaris_add_get(b, "foo", 3);
			is_int(zaris_exec(z, b), ZARIS_E_NOROUTE,
			       "and an operation on them fails with ZARIS_E_NOROUTE");
			zaris_batch_free(b);
		}
		zc_client_free(z);
	}
}

int main(void)
{
	encoding_and_results();
	pipelining();
	timeout_and_goodbye();
	poll_set();
	lost_connection();
	cluster();
	port_offset();
	frame_limit();
	return done_testing();
}
