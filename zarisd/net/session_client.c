/* session_client — see session_client.h. */
#include "zarisd/net/session_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/net/conn.h"
#include "zarisd/net/worker.h"
#include "zarisd/server/client.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/stats.h"

#define PROTECTED_MODE_ERROR                                                                                       \
	"DENIED Redis is running in protected mode because protected mode is enabled and no password is set for "  \
	"the default user. In this mode connections are only accepted from the loopback interface. If you want "   \
	"to connect from external computers to Redis you may adopt one of the following solutions: 1) Just "       \
	"disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface "   \
	"by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not "         \
	"publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) "    \
	"Alternatively you can just disable the protected mode by editing the Redis configuration file, and "      \
	"setting the protected mode option to 'no', and then restarting the server. 3) If you started the server " \
	"manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an "              \
	"authentication password for the default user. NOTE: You only need to do one of the above things in "      \
	"order for the server to start accepting connections from the outside."

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

const char *session_client_refusal(struct worker *w, int fd)
{
	struct settings *cfg = w->srv->cfg;
	if (registry_count(w->srv->clients) >=
	    (uint64_t)atomic_load_explicit(&cfg->maxclients, memory_order_relaxed)) {
		STAT_INC(w->stats, rejected_connections);
		return "ERR max number of clients reached";
	}
	if (atomic_load_explicit(&cfg->protected_mode, memory_order_relaxed) &&
	    !settings_requirepass_set(cfg) && !peer_is_loopback(fd))
		return PROTECTED_MODE_ERROR;
	return NULL;
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

void session_client_open(struct conn *c, struct client *cl)
{
	struct worker *w = c->w;
	int fd = c->fd;
	dispatch_client_init(cl, w->srv, w->index, w->stats);
	cl->conn = c;
	cl->fd = fd;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	bool loop = false, dummy;
	if (getpeername(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, cl->addr, sizeof(cl->addr), &loop);
	sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
		format_addr(&ss, cl->laddr, sizeof(cl->laddr), &dummy);
	if (loop)
		cl->flags |= CLIENT_LOOPBACK;
	else if (same_ip(cl->addr, cl->laddr))
		cl->flags |= CLIENT_SAME_HOST;
	c->out = &cl->out;
	c->last_interaction_ms = &cl->last_interaction_ms;
	c->durable_seq = &cl->journal_seq;
	c->repl_seq = &cl->repl_seq;
	c->log_id = cl->id;
	c->log_addr = cl->addr;
	registry_add(w->srv->clients, cl);
	STAT_INC(w->stats, connected_clients);
}

void session_client_close(struct conn *c, struct client *cl)
{
	struct worker *w = c->w;
	dispatch_client_free(cl);
	registry_remove(w->srv->clients, cl);
	STAT_ADD(w->stats, connected_clients, (uint64_t)-1);
	obuf_free(&cl->out);
	zr_free(cl->name);
}

bool session_client_output_ok(struct conn *c, struct client *cl, int64_t now_ms)
{
	struct settings *cfg = c->w->srv->cfg;
	unsigned long long hard = atomic_load_explicit(&cfg->obuf_hard_limit, memory_order_relaxed);
	unsigned long long soft = atomic_load_explicit(&cfg->obuf_soft_limit, memory_order_relaxed);
	long long secs = atomic_load_explicit(&cfg->obuf_soft_seconds, memory_order_relaxed);
	if (pubsub_client_is_subscribed(cl)) {
		/* pub/sub: a subscribed client is of Redis's "pubsub" class */
		hard = atomic_load_explicit(&cfg->obuf_pubsub_hard_limit, memory_order_relaxed);
		soft = atomic_load_explicit(&cfg->obuf_pubsub_soft_limit, memory_order_relaxed);
		secs = atomic_load_explicit(&cfg->obuf_pubsub_soft_seconds, memory_order_relaxed);
	}
	return conn_check_output_limits(c, now_ms, hard, soft, secs);
}

static void session_client_publish(struct conn *c, struct client *cl)
{
	atomic_store_explicit(&cl->shared_qbuf, c->qlen, memory_order_relaxed);
	atomic_store_explicit(&cl->shared_omem, cl->out.alloc, memory_order_relaxed);
	atomic_store_explicit(&cl->shared_db, cl->db, memory_order_relaxed);
	atomic_store_explicit(&cl->shared_flags, (int)cl->flags, memory_order_relaxed);
}

static bool session_client_idle_expired(struct conn *c, struct client *cl)
{
	struct worker *w = c->w;
	int timeout = atomic_load_explicit(&w->srv->cfg->timeout, memory_order_relaxed);
	int64_t last = atomic_load_explicit(&cl->last_interaction_ms, memory_order_relaxed);
	/* like Redis, subscribers and blocked clients are never closed for
	 * being idle; nor one whose replies wait for the socket, unless its
	 * requests are held (backpressure): then nothing was sent for the
	 * whole time either */
	return timeout > 0 && w->now_ms - last > (int64_t)timeout * 1000 &&
	       (cl->out.bytes == 0 || (c->bp_hold && !c->durable_waiting)) && !(cl->flags & CLIENT_BLOCKED) &&
	       !pubsub_client_is_subscribed(cl);
}

static bool session_client_tick_paused(struct conn *c, struct client *cl, bool *held, unsigned *paused)
{
	struct worker *w = c->w;
	int mode = atomic_load_explicit(&w->srv->pause_mode, memory_order_acquire);
	bool pause_over = mode == PAUSE_NONE ||
			  w->now_ms >= atomic_load_explicit(&w->srv->pause_end_ms, memory_order_relaxed);
	if (pause_over || mode == PAUSE_WRITE) {
		/* a WRITE pause may be holding a read: retry, it re-pauses if needed */
		*held = false;
		if (!conn_retry(c))
			return false;
		if (cl->out.bytes || c->close_after_send)
			worker_queue_send(w, c);
	}
	if (*held)
		(*paused)++;
	return true;
}

bool session_client_tick(struct conn *c, struct client *cl, bool timer, bool *held, unsigned *paused)
{
	struct worker *w = c->w;
	if (atomic_load_explicit(&cl->kill_requested, memory_order_acquire))
		return false;
	if (*held)
		return session_client_tick_paused(c, cl, held, paused);
	if (!timer)
		return true;
	/* a client that sends while it reads nothing: conn.h */
	if (conn_check_stall(c, w->now_ms))
		worker_queue_send(w, c);
	if (session_client_idle_expired(c, cl)) {
		zr_log(ZR_LOG_VERBOSE, "Closing idle client id=%llu", (unsigned long long)cl->id);
		return false;
	}
	session_client_publish(c, cl);
	return true;
}
