/* resp_session — see resp_session.h. */
#include "zarisd/net/resp_session.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/net/worker.h"
#include "zarisd/proto/resp.h"
#include "zarisd/server/client.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/store/store.h"

#define PROTECTED_MODE_ERROR                                                                                       \
	"-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for " \
	"the default user. In this mode connections are only accepted from the loopback interface. If you want "   \
	"to connect from external computers to Redis you may adopt one of the following solutions: 1) Just "       \
	"disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface "   \
	"by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not "         \
	"publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "    \
	"Alternatively you can just disable the protected mode by editing the Redis configuration file, and "      \
	"setting the protected mode option to 'no', and then restarting the server. 3) If you started the server " \
	"manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an "              \
	"authentication password for the default user. NOTE: You only need to do one of the above things in "      \
	"order for the server to start accepting connections from the outside.\r\n"

struct resp_session {
	struct client client; /* client.conn points to the transport */
	struct resp_parser parser;
	bool paused; /* CLIENT PAUSE holds the request at the start of the receive buffer */
};

static inline struct resp_session *sess(struct conn *c)
{
	return conn_session(c);
}

static bool peer_is_loopback(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((struct sockaddr_in6 *)&ss)->sin6_addr);
	return ss.ss_family == AF_UNIX;
}

/* Writes a short error straight to a socket about to be closed; the
 * socket buffer of a new connection always has room for it. */
static void refuse(int fd, const char *msg)
{
	ssize_t n = write(fd, msg, strlen(msg));
	(void)n;
}

static bool resp_admit(struct worker *w, int fd)
{
	struct settings *cfg = w->srv->cfg;
	if (registry_count(w->srv->clients) >=
	    (uint64_t)atomic_load_explicit(&cfg->maxclients, memory_order_relaxed)) {
		STAT_INC(w->stats, rejected_connections);
		refuse(fd, "-ERR max number of clients reached\r\n");
		return false;
	}
	if (atomic_load_explicit(&cfg->protected_mode, memory_order_relaxed) &&
	    !settings_requirepass_set(cfg) && !peer_is_loopback(fd)) {
		refuse(fd, PROTECTED_MODE_ERROR);
		return false;
	}
	return true;
}

static void format_addr(const struct sockaddr_storage *ss, char *buf, size_t size, bool *loopback)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;
	*loopback = false;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
		inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
		port = ntohs(in->sin_port);
		*loopback = (ntohl(in->sin_addr.s_addr) >> 24) == 127;
		snprintf(buf, size, "%s:%d", ip, port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
		inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
		port = ntohs(in6->sin6_port);
		*loopback = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
		snprintf(buf, size, "%s:%d", ip, port);
	} else {
		*loopback = true; /* unix socket */
		snprintf(buf, size, "/unix:0");
	}
}

/* Whether two "ip:port" texts name the same ip: a connection from this
 * machine to one of its own addresses. */
static bool same_ip(const char *a, const char *b)
{
	const char *ca = strrchr(a, ':'), *cb = strrchr(b, ':');
	return ca && cb && ca - a == cb - b && ca > a && !memcmp(a, b, (size_t)(ca - a));
}

static void resp_open(struct conn *c, void *arg)
{
	(void)arg;
	struct worker *w = c->w;
	struct resp_session *s = sess(c);
	int fd = c->fd;
	dispatch_client_init(&s->client, w->srv, w->index, w->stats);
	s->client.conn = c;
	s->client.fd = fd;
	resp_parser_init(&s->parser);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	bool loop = false, dummy;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, s->client.addr, sizeof(s->client.addr), &loop);
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, s->client.laddr, sizeof(s->client.laddr), &dummy);
	if (loop)
		s->client.flags |= CLIENT_LOOPBACK;
	else if (same_ip(s->client.addr, s->client.laddr))
		s->client.flags |= CLIENT_SAME_HOST;
	c->out = &s->client.out;
	c->last_interaction_ms = &s->client.last_interaction_ms;
	c->durable_seq = &s->client.journal_seq;
	c->repl_seq = &s->client.repl_seq;
	c->log_id = s->client.id;
	c->log_addr = s->client.addr;
	registry_add(w->srv->clients, &s->client);
	STAT_INC(w->stats, connected_clients);
}

static void resp_close(struct conn *c, int error)
{
	(void)error;
	struct worker *w = c->w;
	struct resp_session *s = sess(c);
	dispatch_client_free(&s->client);
	registry_remove(w->srv->clients, &s->client);
	STAT_ADD(w->stats, connected_clients, (uint64_t)-1);
	obuf_free(&s->client.out);
	resp_parser_free(&s->parser);
	zr_free(s->client.name);
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
	struct resp_session *s = sess(c);
	struct settings *cfg = c->w->srv->cfg;
	unsigned long long hard = atomic_load_explicit(&cfg->obuf_hard_limit, memory_order_relaxed);
	unsigned long long soft = atomic_load_explicit(&cfg->obuf_soft_limit, memory_order_relaxed);
	long long secs = atomic_load_explicit(&cfg->obuf_soft_seconds, memory_order_relaxed);
	if (pubsub_client_is_subscribed(&s->client)) {
		/* pub/sub: a subscribed client is of Redis's "pubsub" class */
		hard = atomic_load_explicit(&cfg->obuf_pubsub_hard_limit, memory_order_relaxed);
		soft = atomic_load_explicit(&cfg->obuf_pubsub_soft_limit, memory_order_relaxed);
		secs = atomic_load_explicit(&cfg->obuf_pubsub_soft_seconds, memory_order_relaxed);
	}
	return conn_check_output_limits(c, now_ms, hard, soft, secs);
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

/* Publishes the shared fields other workers read (CLIENT LIST). */
static void publish(struct conn *c, struct resp_session *s)
{
	atomic_store_explicit(&s->client.shared_qbuf, c->qlen, memory_order_relaxed);
	atomic_store_explicit(&s->client.shared_omem, s->client.out.alloc, memory_order_relaxed);
	atomic_store_explicit(&s->client.shared_db, s->client.db, memory_order_relaxed);
	atomic_store_explicit(&s->client.shared_flags, (int)s->client.flags, memory_order_relaxed);
}

static bool resp_tick(struct conn *c, bool timer, unsigned *paused)
{
	struct resp_session *s = sess(c);
	struct worker *w = c->w;
	if (atomic_load_explicit(&s->client.kill_requested, memory_order_acquire))
		return false;
	if (s->paused) {
		int mode = atomic_load_explicit(&w->srv->pause_mode, memory_order_acquire);
		bool pause_over =
			mode == PAUSE_NONE ||
			w->now_ms >= atomic_load_explicit(&w->srv->pause_end_ms, memory_order_relaxed);
		if (pause_over || mode == PAUSE_WRITE) {
			/* a WRITE pause may be holding a read: retry, it re-pauses if needed */
			s->paused = false;
			if (!conn_retry(c))
				return false;
			if (s->client.out.bytes || c->close_after_send)
				worker_queue_send(w, c);
		}
		if (s->paused)
			(*paused)++;
		return true;
	}
	if (!timer)
		return true;
	/* a client that sends while it reads nothing: conn.h */
	if (conn_check_stall(c, w->now_ms))
		worker_queue_send(w, c);
	int timeout = atomic_load_explicit(&w->srv->cfg->timeout, memory_order_relaxed);
	int64_t last = atomic_load_explicit(&s->client.last_interaction_ms, memory_order_relaxed);
	/* like Redis, subscribers and blocked clients are never closed for
	 * being idle; nor one whose replies wait for the socket, unless its
	 * requests are held (backpressure): then nothing was sent for the
	 * whole time either */
	if (timeout > 0 && w->now_ms - last > (int64_t)timeout * 1000 &&
	    (s->client.out.bytes == 0 || (c->bp_hold && !c->durable_waiting)) &&
	    !(s->client.flags & CLIENT_BLOCKED) && !pubsub_client_is_subscribed(&s->client)) {
		zr_log(ZR_LOG_VERBOSE, "Closing idle client id=%llu", (unsigned long long)s->client.id);
		return false;
	}
	publish(c, s);
	return true;
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
