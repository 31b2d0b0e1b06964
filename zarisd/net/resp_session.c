/* resp_session — see resp_session.h. */
#include "zarisd/net/resp_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/net/session_client.h"
#include "zarisd/net/worker.h"
#include "zarisd/proto/resp.h"
#include "zarisd/server/client.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/store/store.h"

struct resp_session {
	struct client client; /* client.conn points to the transport */
	struct resp_parser parser;
	bool paused; /* CLIENT PAUSE holds the request at the start of the receive buffer */
};

static inline struct resp_session *sess(struct conn *c)
{
	return conn_session(c);
}

/* Writes "-WHY\r\n" straight to a socket about to be closed; the socket
 * buffer of a new connection always has room for it. */
static bool resp_admit(struct worker *w, int fd)
{
	const char *why = session_client_refusal(w, fd);
	if (!why)
		return true;
	struct iovec iov[3] = { { "-", 1 }, { (void *)why, strlen(why) }, { "\r\n", 2 } };
	ssize_t n = writev(fd, iov, 3);
	(void)n;
	return false;
}

static void resp_open(struct conn *c, void *arg)
{
	(void)arg;
	struct resp_session *s = sess(c);
	session_client_open(c, &s->client);
	resp_parser_init(&s->parser);
}
static void resp_close(struct conn *c, int error)
{
	(void)error;
	struct resp_session *s = sess(c);
	session_client_close(c, &s->client);
	resp_parser_free(&s->parser);
}
static void resp_limits(const struct resp_session *s, struct resp_limits *lim)
{
	struct settings *cfg = s->client.srv->cfg;
	lim->max_bulk_len = (uint64_t)atomic_load_explicit(&cfg->proto_max_bulk_len, memory_order_relaxed);
	/* Redis allows 1024*1024 arguments before AUTH and INT_MAX after */
	lim->max_multibulk = (s->client.flags & CLIENT_AUTHENTICATED) ? 0x7fffffff : 1024 * 1024;
	lim->max_inline = 64 * 1024;
}

static void protocol_error(struct conn *c, struct resp_session *s)
{
	reply_errorf(&s->client.out, "ERR %s", s->parser.error);
	STAT_INC(c->w->stats, protocol_errors);
	zr_log(ZR_LOG_VERBOSE, "Protocol error (%s) from client: id=%llu addr=%s", s->parser.error,
	       (unsigned long long)s->client.id, s->client.addr);
	c->close_after_send = true;
}

/* Requests parsed ahead of running them (a pipelined batch). A random key
 * in a big keyspace misses the cache (and the TLB) at each of its shard,
 * bucket and entry, one after the other, and those waits were most of a
 * GET's or SET's time. So the requests already in the buffer are parsed
 * as a group and the store's three prefetch steps are taken for all of
 * them, step by step across the group (group prefetching): the misses of
 * one step overlap instead of adding up, and by the time a command runs
 * its lines have arrived. The key's hash is handed to the dispatcher, so
 * it is computed once. Only whole, canonical requests of a few arguments
 * are taken ahead (resp_parse_whole, which is exactly resp_parse's fast
 * case); anything else is parsed by the parser when it reaches the head.
 * Requests parsed ahead but not run (pause, block, close, changed limits)
 * are dropped and parsed again later: parsing ahead only reads the buffer. */
#define RESP_AHEAD 16
#define RESP_AHEAD_ARGS 5

struct ahead_req {
	struct resp_arg argv[RESP_AHEAD_ARGS];
	size_t len;    /* bytes of the request */
	uint64_t hash; /* store_hash(argv[1]) when hashed */
	int argc;
	bool hashed;
};

/* Invariant: req[head] starts at the caller's pos, and the n requests
 * req[head..head+n) follow one another in the buffer. */
struct ahead {
	struct ahead_req req[RESP_AHEAD];
	unsigned head, n;
	struct resp_limits lim; /* the limits they were parsed under */
};

/* Parses up to RESP_AHEAD requests from BUF+POS and prefetches for them. */
static void ahead_fill(struct resp_session *s, struct ahead *a, char *buf, size_t pos, size_t len)
{
	struct store *store = s->client.srv->store;
	unsigned db = s->client.db;
	a->head = a->n = 0;
	while (a->n < RESP_AHEAD && pos < len) {
		struct ahead_req *r = &a->req[a->n];
		size_t n =
			resp_parse_whole(buf + pos, len - pos, &a->lim, r->argv, RESP_AHEAD_ARGS, &r->argc);
		if (!n)
			break;
		r->len = n;
		/* argv[1] is the key of nearly every command worth prefetching
		 * for; for others it costs one useless prefetch */
		r->hashed = r->argc >= 2 && store &&
			    store_prefetch(store, db, r->argv[1].ptr, r->argv[1].len, &r->hash);
		pos += n;
		a->n++;
	}
	/* a lone request (no pipeline) would only wait for its own lines
	 * here instead of in its lookup: nothing to overlap */
	if (a->n < 2)
		return;
	struct conn_prefetch_key keys[RESP_AHEAD];
	unsigned nk = 0;
	for (unsigned k = 0; k < a->n; k++)
		if (a->req[k].hashed)
			keys[nk++] = (struct conn_prefetch_key){ .hash = a->req[k].hash,
								 .key = a->req[k].argv[1].ptr,
								 .klen = a->req[k].argv[1].len,
								 .db = db };
	conn_prefetch_keys(store, keys, nk);
}

static void resp_group_add(struct conn_group *g, const struct conn *c, char *data, size_t len)
{
	const struct resp_session *s = conn_session_const(c);
	/* only where consume will parse these very bytes first: nothing
	 * paused or blocked, the parser between requests */
	if (s->paused || !resp_at_start(&s->parser) || (s->client.flags & CLIENT_BLOCKED))
		return;
	struct store *store = s->client.srv->store;
	if (!store)
		return;
	struct resp_limits lim;
	resp_limits(s, &lim);
	unsigned db = s->client.db;
	size_t pos = 0;
	/* a pipeline's requests are taken too, up to the group's room: a
	 * receive often holds only the few a client sent as replies came */
	while (g->n < CONN_GROUP_MAX && pos < len) {
		struct resp_arg argv[RESP_AHEAD_ARGS];
		int argc;
		size_t n = resp_parse_whole(data + pos, len - pos, &lim, argv, RESP_AHEAD_ARGS, &argc);
		if (!n)
			return;
		pos += n;
		if (argc >= 2 && store_prefetch(store, db, argv[1].ptr, argv[1].len, &g->key[g->n].hash)) {
			g->store = store;
			g->key[g->n].db = db;
			g->key[g->n].key = argv[1].ptr;
			g->key[g->n].klen = argv[1].len;
			g->n++;
		}
	}
}

/* Whether C's pending output calls for a backpressure hold. Subscribers
 * are left out: their output is mostly messages, which holding their
 * requests (UNSUBSCRIBE) would not slow down; the pubsub class's limits
 * bound them, as in Redis. */
static bool over_backpressure(const struct conn *c, const struct resp_session *s)
{
	return conn_over_backpressure(c) && !pubsub_client_is_subscribed(&s->client);
}

static bool limits_equal(const struct resp_limits *x, const struct resp_limits *y)
{
	return x->max_bulk_len == y->max_bulk_len && x->max_multibulk == y->max_multibulk &&
	       x->max_inline == y->max_inline;
}

static bool resp_output_ok(struct conn *c, int64_t now_ms)
{
	return session_client_output_ok(c, &sess(c)->client, now_ms);
}
/* Parses and runs requests in BUF[0..LEN). Returns the bytes consumed
 * (complete requests); stops early at a pause, a block, a backpressure
 * hold, a protocol error or a close requested. */
static size_t resp_consume(struct conn *c, char *buf, size_t len)
{
	struct resp_session *s = sess(c);
	struct resp_limits lim;
	struct ahead ahead;
	ahead.head = ahead.n = 0;
	size_t pos = 0;
	int64_t clock_before = s->client.clock_end_us;
	if (s->paused)
		return 0; /* the pause's end gives the bytes again (tick) */
	/* CLIENT_BLOCKED (commands/blocking.h): a blocked client runs no
	 * further request until its reply arrives (worker.c resumes it); a
	 * held one none until its output drains (conn_sent) */
	while (pos < len && !c->close_after_send && !(s->client.flags & CLIENT_BLOCKED) && !c->bp_hold) {
		size_t used = 0;
		resp_limits(s, &lim);
		/* the last command changed the limits (AUTH, CONFIG SET): what
		 * was parsed ahead under the old ones is parsed again */
		if (ahead.n && !limits_equal(&lim, &ahead.lim))
			ahead.n = 0;
		if (!ahead.n && resp_at_start(&s->parser)) {
			ahead.lim = lim;
			ahead_fill(s, &ahead, buf, pos, len);
		}
		struct ahead_req *r = NULL;
		if (ahead.n) {
			r = &ahead.req[ahead.head];
			used = r->len;
			s->client.argv = r->argv;
			s->client.argc = r->argc;
			if (r->hashed) {
				/* dispatch (cmd_key_hash) takes it instead of hashing */
				s->client.key_hash = r->hash;
				s->client.key_hash_argv = r->argv;
				s->client.key_hash_argi = 1;
			}
		} else {
			enum resp_result res = resp_parse(&s->parser, buf + pos, len - pos, &lim, &used);
			if (res == RESP_INCOMPLETE)
				break;
			if (res == RESP_ERROR) {
				protocol_error(c, s);
				return len;
			}
			if (res == RESP_EMPTY) {
				pos += used;
				continue;
			}
			s->client.argv = s->parser.argv;
			s->client.argc = s->parser.argc;
		}
		/* from the second command on, the previous one's end is this
		 * one's start: one clock read per command (client.h) */
		s->client.clock_chained = s->client.clock_end_us != clock_before;
		if (c->w->srv->execute(&s->client) == DISPATCH_PAUSED) {
			/* the request stays unconsumed; it is parsed again on resume */
			s->client.key_hash_argv = NULL;
			resp_parser_free(&s->parser);
			resp_parser_init(&s->parser);
			s->paused = true;
			worker_track_paused(c->w, c);
			break;
		}
		s->client.argv = NULL;
		s->client.argc = 0;
		s->client.key_hash_argv = NULL;
		pos += used;
		if (r) {
			ahead.head++;
			ahead.n--;
		}
		if (s->client.flags & CLIENT_HANDED_OFF)
			c->handed_off = true;
		if (s->client.flags & CLIENT_CLOSE_AFTER_REPLY)
			c->close_after_send = true;
		/* Like Redis, stop at the first reply over the hard limit: the
		 * rest of a pipeline must not pile up more output first. */
		if (s->client.out.bytes > c->w->obuf_hard_cached) {
			if (!resp_output_ok(c, c->w->now_ms)) {
				c->obuf_overflow = true;
				return len;
			}
		}
		/* the rest waits, unparsed, for the output to drain; the
		 * backend stops reading (conn_reading) */
		if (over_backpressure(c, s)) {
			c->bp_hold = true;
			c->bp_progress_ms = c->w->now_ms;
		}
	}
	return pos;
}

static bool resp_tick(struct conn *c, bool timer, unsigned *paused)
{
	struct resp_session *s = sess(c);
	return session_client_tick(c, &s->client, timer, &s->paused, paused);
}

const struct proto_ops resp_session_ops = {
	.name = "resp",
	.session_size = sizeof(struct resp_session),
	.admit = resp_admit,
	.open = resp_open,
	.consume = resp_consume,
	.group_add = resp_group_add,
	.output_ok = resp_output_ok,
	.tick = resp_tick,
	.close = resp_close,
};
