/* conn — see conn.h. */
#include "zarisd/net/conn.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/net/worker.h"
#include "zarisd/store/store.h"

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

struct conn *conn_create(struct worker *w, int fd)
{
	struct conn *c = zr_calloc(1, sizeof(*c));
	c->w = w;
	c->fd = fd;
	dispatch_client_init(&c->client, w->srv, w->index, w->stats);
	c->client.conn = c;
	c->client.fd = fd;
	resp_parser_init(&c->parser);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	bool loop = false, dummy;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, c->client.addr, sizeof(c->client.addr), &loop);
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, c->client.laddr, sizeof(c->client.laddr), &dummy);
	if (loop)
		c->client.flags |= CLIENT_LOOPBACK;
	registry_add(w->srv->clients, &c->client);
	STAT_INC(w->stats, connected_clients);
	return c;
}

void conn_destroy(struct conn *c)
{
	struct worker *w = c->w;
	dispatch_client_free(&c->client);
	registry_remove(w->srv->clients, &c->client);
	STAT_ADD(w->stats, connected_clients, (uint64_t)-1);
	obuf_free(&c->client.out);
	resp_parser_free(&c->parser);
	zr_free(c->client.name);
	zr_free(c->qbuf);
	if (c->fd >= 0)
		close(c->fd);
	zr_free(c);
}

/* Backpressure thresholds (conn.h). 4 MiB is what Linux lets a TCP socket
 * buffer grow to for sending (tcp_wmem's default maximum): the kernel
 * already holds that much ahead of a fast reader, so holding as much again
 * keeps its socket full while the next requests run, and a conn's replies
 * cost at most this plus its largest reply. Resuming at half of it makes a
 * hold and its end take whole replies, not one send's worth at a time. A
 * fixed value and not a setting: it changes no reply, and a client never
 * sees it but as TCP flow control. */
#define CONN_BP_HIGH (4u << 20)
#define CONN_BP_LOW (CONN_BP_HIGH / 2)
/* How long a hold may see no output progress, with requests waiting in
 * the socket, before it is taken for a client that reads nothing until it
 * has written everything (conn_check_stall). A client that reads at all
 * takes something within this; one hold per such batch costs this once. */
#define CONN_BP_STALL_MS 500

static void conn_limits(const struct conn *c, struct resp_limits *lim)
{
	struct settings *cfg = c->w->srv->cfg;
	lim->max_bulk_len = (uint64_t)atomic_load_explicit(&cfg->proto_max_bulk_len, memory_order_relaxed);
	/* Redis allows 1024*1024 arguments before AUTH and INT_MAX after */
	lim->max_multibulk = (c->client.flags & CLIENT_AUTHENTICATED) ? 0x7fffffff : 1024 * 1024;
	lim->max_inline = 64 * 1024;
}

static bool qbuf_append(struct conn *c, const char *data, size_t len)
{
	if (c->qlen + len > c->qcap) {
		size_t cap = c->qcap ? c->qcap : 4096;
		while (cap < c->qlen + len)
			cap *= 2;
		char *nb = zr_try_realloc(c->qbuf, cap);
		if (!nb)
			return false;
		c->qbuf = nb;
		c->qcap = cap;
	}
	memcpy(c->qbuf + c->qlen, data, len);
	c->qlen += len;
	return true;
}

static void protocol_error(struct conn *c)
{
	reply_errorf(&c->client.out, "ERR %s", c->parser.error);
	STAT_INC(c->w->stats, protocol_errors);
	zr_log(ZR_LOG_VERBOSE, "Protocol error (%s) from client: id=%llu addr=%s", c->parser.error,
	       (unsigned long long)c->client.id, c->client.addr);
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
#define CONN_AHEAD 16
#define CONN_AHEAD_ARGS 5

struct ahead_req {
	struct resp_arg argv[CONN_AHEAD_ARGS];
	size_t len;    /* bytes of the request */
	uint64_t hash; /* store_hash(argv[1]) when hashed */
	int argc;
	bool hashed;
};

/* Invariant: req[head] starts at the caller's pos, and the n requests
 * req[head..head+n) follow one another in the buffer. */
struct ahead {
	struct ahead_req req[CONN_AHEAD];
	unsigned head, n;
	struct resp_limits lim; /* the limits they were parsed under */
};

/* The store's prefetch steps after the first (store.h: bucket, entry, next
 * entry) for N keys, each step over all keys before the next, so that the
 * misses of one step overlap. (Software-pipelining the steps a few keys
 * apart measured the same: the misses are bounded by how many the core
 * keeps in flight, not by their order.) */
static void prefetch_keys(struct store *s, const struct conn_prefetch_key *k, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		store_prefetch_bucket(s, k[i].db, k[i].hash);
	for (unsigned i = 0; i < n; i++)
		store_prefetch_entry(s, k[i].db, k[i].hash);
	for (unsigned i = 0; i < n; i++)
		store_prefetch_next(s, k[i].db, k[i].hash, k[i].key, k[i].klen);
}

/* Parses up to CONN_AHEAD requests from BUF+POS and prefetches for them. */
static void ahead_fill(struct conn *c, struct ahead *a, char *buf, size_t pos, size_t len)
{
	struct store *store = c->w->srv->store;
	unsigned db = c->client.db;
	a->head = a->n = 0;
	while (a->n < CONN_AHEAD && pos < len) {
		struct ahead_req *r = &a->req[a->n];
		size_t n =
			resp_parse_whole(buf + pos, len - pos, &a->lim, r->argv, CONN_AHEAD_ARGS, &r->argc);
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
	struct conn_prefetch_key keys[CONN_AHEAD];
	unsigned nk = 0;
	for (unsigned k = 0; k < a->n; k++)
		if (a->req[k].hashed)
			keys[nk++] = (struct conn_prefetch_key){ .hash = a->req[k].hash,
								 .key = a->req[k].argv[1].ptr,
								 .klen = a->req[k].argv[1].len,
								 .db = db };
	prefetch_keys(store, keys, nk);
}

void conn_group_add(struct conn_group *g, const struct conn *c, char *data, size_t len)
{
	/* only where conn_feed will parse these very bytes first: no partial
	 * request waiting in qbuf, nothing held or blocked */
	if (g->n == CONN_GROUP_MAX || c->state != CONN_OPEN || c->close_after_send || c->paused || c->qlen ||
	    c->bp_hold || !resp_at_start(&c->parser) || (c->client.flags & CLIENT_BLOCKED))
		return;
	struct store *store = c->w->srv->store;
	if (!store)
		return;
	struct resp_limits lim;
	conn_limits(c, &lim);
	unsigned db = c->client.db;
	size_t pos = 0;
	/* a pipeline's requests are taken too, up to the group's room: a
	 * receive often holds only the few a client sent as replies came */
	while (g->n < CONN_GROUP_MAX && pos < len) {
		struct resp_arg argv[CONN_AHEAD_ARGS];
		int argc;
		size_t n = resp_parse_whole(data + pos, len - pos, &lim, argv, CONN_AHEAD_ARGS, &argc);
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

void conn_group_prefetch(const struct conn_group *g)
{
	/* a lone key: conn_feed's own store_prefetch is all there is to do */
	if (g->n < 2)
		return;
	prefetch_keys(g->store, g->key, g->n);
}

/* Whether C's pending output calls for a backpressure hold. Subscribers
 * are left out: their output is mostly messages, which holding their
 * requests (UNSUBSCRIBE) would not slow down; the pubsub class's limits
 * bound them, as in Redis. */
static bool over_backpressure(const struct conn *c)
{
	return c->client.out.bytes > CONN_BP_HIGH && !c->bp_lifted &&
	       !pubsub_client_is_subscribed(&c->client);
}

static bool limits_equal(const struct resp_limits *x, const struct resp_limits *y)
{
	return x->max_bulk_len == y->max_bulk_len && x->max_multibulk == y->max_multibulk &&
	       x->max_inline == y->max_inline;
}

/* Parses and runs requests in BUF[0..LEN). Returns the bytes consumed
 * (complete requests); sets *stop when processing must stop (pause,
 * protocol error, close requested). */
static size_t run_requests(struct conn *c, char *buf, size_t len, bool *stop)
{
	struct resp_limits lim;
	struct ahead ahead;
	ahead.head = ahead.n = 0;
	size_t pos = 0;
	int64_t clock_before = c->client.clock_end_us;
	*stop = false;
	/* CLIENT_BLOCKED (commands/blocking.h): a blocked client runs no
	 * further request until its reply arrives (worker.c resumes it); a
	 * held one none until its output drains (conn_sent) */
	while (pos < len && !c->close_after_send && !(c->client.flags & CLIENT_BLOCKED) && !c->bp_hold) {
		size_t used = 0;
		conn_limits(c, &lim);
		/* the last command changed the limits (AUTH, CONFIG SET): what
		 * was parsed ahead under the old ones is parsed again */
		if (ahead.n && !limits_equal(&lim, &ahead.lim))
			ahead.n = 0;
		if (!ahead.n && resp_at_start(&c->parser)) {
			ahead.lim = lim;
			ahead_fill(c, &ahead, buf, pos, len);
		}
		struct ahead_req *r = NULL;
		if (ahead.n) {
			r = &ahead.req[ahead.head];
			used = r->len;
			c->client.argv = r->argv;
			c->client.argc = r->argc;
			if (r->hashed) {
				/* dispatch (cmd_key_hash) takes it instead of hashing */
				c->client.key_hash = r->hash;
				c->client.key_hash_argv = r->argv;
				c->client.key_hash_argi = 1;
			}
		} else {
			enum resp_result res = resp_parse(&c->parser, buf + pos, len - pos, &lim, &used);
			if (res == RESP_INCOMPLETE)
				break;
			if (res == RESP_ERROR) {
				protocol_error(c);
				*stop = true;
				return len;
			}
			if (res == RESP_EMPTY) {
				pos += used;
				continue;
			}
			c->client.argv = c->parser.argv;
			c->client.argc = c->parser.argc;
		}
		/* from the second command on, the previous one's end is this
		 * one's start: one clock read per command (client.h) */
		c->client.clock_chained = c->client.clock_end_us != clock_before;
		if (c->w->srv->execute(&c->client) == DISPATCH_PAUSED) {
			/* the request stays unconsumed; it is parsed again on resume */
			c->client.key_hash_argv = NULL;
			resp_parser_free(&c->parser);
			resp_parser_init(&c->parser);
			c->paused = true;
			worker_track_paused(c->w, c);
			*stop = true;
			break;
		}
		c->client.argv = NULL;
		c->client.argc = 0;
		c->client.key_hash_argv = NULL;
		pos += used;
		if (r) {
			ahead.head++;
			ahead.n--;
		}
		if (c->client.flags & CLIENT_CLOSE_AFTER_REPLY)
			c->close_after_send = true;
		/* Like Redis, stop at the first reply over the hard limit: the
		 * rest of a pipeline must not pile up more output first. */
		if (c->client.out.bytes > c->w->obuf_hard_cached) {
			if (!conn_check_output_limits(c, c->w->now_ms)) {
				c->obuf_overflow = true;
				*stop = true;
				return len;
			}
		}
		/* the rest waits, unparsed, for the output to drain; the
		 * backend stops reading (conn_reading) */
		if (over_backpressure(c)) {
			c->bp_hold = true;
			c->bp_progress_ms = c->w->now_ms;
		}
	}
	return pos;
}

static bool check_qbuf_limit(struct conn *c)
{
	long long limit =
		atomic_load_explicit(&c->w->srv->cfg->client_query_buffer_limit, memory_order_relaxed);
	if ((long long)c->qlen > limit) {
		zr_log(ZR_LOG_WARNING,
		       "Closing client that reached max query buffer length: id=%llu addr=%s qbuf=%zu",
		       (unsigned long long)c->client.id, c->client.addr, c->qlen);
		STAT_INC(c->w->stats, client_query_buffer_limit_disconnections);
		return false;
	}
	return true;
}

/* The normal class's hard output limit, read once per batch of requests
 * into the worker (0, no limit, as SIZE_MAX). */
static void cache_obuf_hard_limit(struct conn *c)
{
	unsigned long long hard =
		atomic_load_explicit(&c->w->srv->cfg->obuf_hard_limit, memory_order_relaxed);
	c->w->obuf_hard_cached = hard ? (size_t)hard : SIZE_MAX;
}

/* Runs the requests in c->qbuf and drops what they consumed; false when
 * the conn must close (over the output limit). */
static bool run_qbuf(struct conn *c)
{
	bool stop;
	size_t used = run_requests(c, c->qbuf, c->qlen, &stop);
	if (c->obuf_overflow)
		return false;
	if (used) {
		memmove(c->qbuf, c->qbuf + used, c->qlen - used);
		c->qlen -= used;
	}
	if (c->qlen == 0 && c->qcap > 64 * 1024) {
		ZR_FREE(c->qbuf);
		c->qcap = 0;
	}
	return true;
}

bool conn_feed(struct conn *c, const char *data, size_t len)
{
	cache_obuf_hard_limit(c);
	STAT_ADD(c->w->stats, net_input_bytes, len);
	atomic_store_explicit(&c->client.last_interaction_ms, c->w->now_ms, memory_order_relaxed);
	if (c->close_after_send)
		return true; /* input after QUIT or an error is dropped */
	bool stop;
	if (c->qlen == 0 && !c->paused && !c->bp_hold) {
		/* Zero-copy path: parse straight from the received bytes; the
		 * parser writes only inside an inline request (unescaping), so
		 * the cast is safe for the kernel-filled buffer we own. */
		size_t used = run_requests(c, (char *)data, len, &stop);
		if (c->obuf_overflow)
			return false;
		if (used < len && !c->close_after_send) {
			if (!qbuf_append(c, data + used, len - used))
				return false;
			return check_qbuf_limit(c);
		}
		return true;
	}
	/* held (pause, backpressure): bytes a receive already took are kept */
	if (!qbuf_append(c, data, len))
		return false;
	if (c->paused || c->bp_hold)
		return check_qbuf_limit(c);
	if (!run_qbuf(c))
		return false;
	return check_qbuf_limit(c);
}

bool conn_resume(struct conn *c)
{
	c->paused = false;
	if (c->qlen == 0)
		return true;
	cache_obuf_hard_limit(c);
	return run_qbuf(c);
}

bool conn_release(struct conn *c)
{
	c->bp_release = false;
	if (c->qlen == 0 || c->paused || c->bp_hold || c->close_after_send ||
	    (c->client.flags & CLIENT_BLOCKED))
		return true;
	cache_obuf_hard_limit(c);
	return run_qbuf(c);
}

bool conn_check_stall(struct conn *c, int64_t now_ms)
{
	/* replies held for fsync wait for the disk, not for the client */
	if (!c->bp_hold || c->durable_waiting || now_ms - c->bp_progress_ms < CONN_BP_STALL_MS)
		return false;
	int waiting = 0;
	if (ioctl(c->fd, FIONREAD, &waiting) < 0 || waiting <= 0)
		return false; /* all it sent is read: holding cannot block it */
	zr_log(ZR_LOG_VERBOSE,
	       "Client id=%llu addr=%s reads no replies while it sends requests: backpressure given up (omem=%zu)",
	       (unsigned long long)c->client.id, c->client.addr, c->client.out.bytes);
	c->bp_hold = false;
	c->bp_lifted = true;
	c->bp_release = true;
	return true;
}

bool conn_check_output_limits(struct conn *c, int64_t now_ms)
{
	struct settings *cfg = c->w->srv->cfg;
	unsigned long long hard = atomic_load_explicit(&cfg->obuf_hard_limit, memory_order_relaxed);
	unsigned long long soft = atomic_load_explicit(&cfg->obuf_soft_limit, memory_order_relaxed);
	long long secs = atomic_load_explicit(&cfg->obuf_soft_seconds, memory_order_relaxed);
	if (pubsub_client_is_subscribed(&c->client)) {
		/* pub/sub: a subscribed client is of Redis's "pubsub" class */
		hard = atomic_load_explicit(&cfg->obuf_pubsub_hard_limit, memory_order_relaxed);
		soft = atomic_load_explicit(&cfg->obuf_pubsub_soft_limit, memory_order_relaxed);
		secs = atomic_load_explicit(&cfg->obuf_pubsub_soft_seconds, memory_order_relaxed);
	}
	size_t used = c->client.out.bytes;
	bool over = hard && used > hard;
	if (!over && soft && used > soft) {
		if (!c->obuf_soft_since_ms)
			c->obuf_soft_since_ms = now_ms;
		else if (now_ms / 1000 - c->obuf_soft_since_ms / 1000 > secs)
			over = true; /* in whole seconds, as Redis (server.unixtime) */
	} else if (!over) {
		c->obuf_soft_since_ms = 0;
	}
	if (over) {
		zr_log(ZR_LOG_WARNING,
		       "Client id=%llu addr=%s scheduled to be closed ASAP for overcoming of output buffer limits (omem=%zu).",
		       (unsigned long long)c->client.id, c->client.addr, used);
		STAT_INC(c->w->stats, client_output_buffer_limit_disconnections);
		return false;
	}
	return true;
}

void conn_sent(struct conn *c, size_t n)
{
	obuf_consume(&c->client.out, n);
	STAT_ADD(c->w->stats, net_output_bytes, n);
	atomic_store_explicit(&c->client.last_interaction_ms, c->w->now_ms, memory_order_relaxed);
	if (!c->bp_hold && !c->bp_lifted)
		return;
	c->bp_progress_ms = c->w->now_ms;
	if (c->client.out.bytes <= CONN_BP_LOW) {
		c->bp_release = c->bp_hold;
		c->bp_hold = c->bp_lifted = false;
	}
}

void conn_publish(struct conn *c)
{
	atomic_store_explicit(&c->client.shared_qbuf, c->qlen, memory_order_relaxed);
	atomic_store_explicit(&c->client.shared_omem, c->client.out.alloc, memory_order_relaxed);
	atomic_store_explicit(&c->client.shared_db, c->client.db, memory_order_relaxed);
	atomic_store_explicit(&c->client.shared_flags, (int)c->client.flags, memory_order_relaxed);
}
