/* net: an outbound connection owned by a worker, for real, on both
 * backends (io_uring where the kernel has it, and epoll). The test starts
 * a redis-server of its own (on a free port; skipped when none is
 * installed) and a one-worker zarisd loop (net_serve, a canned responder
 * on its own listener), then from another thread posts worker messages
 * (msgq_post_worker) that make the worker open links whose protocol
 * session is the test's own: it sends requests once connected and reads
 * the replies with proto/resp_reader. Cases: PING and a SET answered
 * (+PONG, +OK), a second link's GET sees the SET; a connect refused
 * (-ECONNREFUSED reported to the owner, never connected); the peer
 * closing (QUIT: +OK, then an orderly close reported); a link closed by
 * a worker message from the test thread. Every wait is bounded.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/tap.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/net/conn.h"
#include "zarisd/net/msgq.h"
#include "zarisd/net/net.h"
#include "zarisd/net/worker.h"
#include "zarisd/proto/reply.h"
#include "zarisd/proto/resp_reader.h"
#include "zarisd/server/client.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"

#define MAX_REPLIES 8

/* One link's story, shared by the test thread (waits) and the worker
 * (writes), under lock. */
struct probe {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int port;
	const char *send; /* requests sent once connected */
	int want;	  /* replies after which the session closes; 0 = never */
	bool connected, done, subscribed;
	int error; /* what close reported */
	int nreplies;
	char replies[MAX_REPLIES][64];
	struct conn *conn; /* worker thread only */
};

struct probe_session {
	struct obuf out;
	struct probe *p;
};

static void probe_open(struct conn *c, void *arg)
{
	struct probe_session *s = conn_session(c);
	obuf_init(&s->out);
	s->p = arg;
	s->p->conn = c;
	c->out = &s->out;
}

static void probe_connected(struct conn *c)
{
	struct probe_session *s = conn_session(c);
	pthread_mutex_lock(&s->p->lock);
	s->p->connected = true;
	pthread_mutex_unlock(&s->p->lock);
	reply_raw(&s->out, s->p->send, strlen(s->p->send));
}

static size_t probe_consume(struct conn *c, char *buf, size_t len)
{
	struct probe_session *s = conn_session(c);
	struct probe *p = s->p;
	size_t pos = 0;
	for (;;) {
		struct resp_reply r;
		long n = resp_reader_next(buf + pos, len - pos, &r);
		if (n < 0) {
			c->close_after_send = true;
			return len;
		}
		if (n == 0)
			return pos;
		pos += (size_t)n;
		pthread_mutex_lock(&p->lock);
		if (p->nreplies < MAX_REPLIES) {
			char *t = p->replies[p->nreplies++];
			if (r.type == RESP_REPLY_STATUS || r.type == RESP_REPLY_ERROR ||
			    r.type == RESP_REPLY_BULK)
				snprintf(t, 64, "%c%.*s",
					 r.type == RESP_REPLY_STATUS  ? '+'
					 : r.type == RESP_REPLY_ERROR ? '-'
								      : '$',
					 (int)(r.len < 60 ? r.len : 60), r.str);
			else if (r.type == RESP_REPLY_ARRAY || r.type == RESP_REPLY_PUSH)
				snprintf(t, 64, "*%lld", r.count);
			else
				snprintf(t, 64, "?%d", (int)r.type);
		}
		if (p->nreplies == 1 && p->want == 0)
			p->subscribed = true; /* the test thread may now post the close */
		bool enough = p->want && p->nreplies >= p->want;
		pthread_cond_broadcast(&p->cond);
		pthread_mutex_unlock(&p->lock);
		if (enough)
			c->close_after_send = true; /* we end it: an orderly close */
	}
}

static bool probe_output_ok(struct conn *c, int64_t now_ms)
{
	(void)c;
	(void)now_ms;
	return true;
}

static bool probe_tick(struct conn *c, bool timer, unsigned *paused)
{
	(void)c;
	(void)timer;
	(void)paused;
	return true;
}

static void probe_close(struct conn *c, int error)
{
	struct probe_session *s = conn_session(c);
	obuf_free(&s->out);
	pthread_mutex_lock(&s->p->lock);
	s->p->error = error;
	s->p->done = true;
	s->p->conn = NULL;
	pthread_cond_broadcast(&s->p->cond);
	pthread_mutex_unlock(&s->p->lock);
}

static const struct proto_ops probe_ops = {
	.name = "probe",
	.session_size = sizeof(struct probe_session),
	.open = probe_open,
	.connected = probe_connected,
	.consume = probe_consume,
	.output_ok = probe_output_ok,
	.tick = probe_tick,
	.close = probe_close,
};

/* --- worker messages ---------------------------------------------------- */
static void open_link(void *ctx, void *arg)
{
	struct probe *p = arg;
	int err = 0;
	if (ctx && worker_connect(ctx, "127.0.0.1", p->port, &probe_ops, p, &err))
		return;
	pthread_mutex_lock(&p->lock);
	p->error = ctx ? err : -ECANCELED;
	p->done = true;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
}

static void close_link(void *ctx, void *arg)
{
	struct probe *p = arg;
	if (ctx && p->conn)
		worker_close(ctx, p->conn);
}

/* Waits (bounded: 10 s) until WHAT holds for P. */
#define WAIT_FOR(p, what)                                                                    \
	do {                                                                                 \
		struct timespec dl_;                                                         \
		clock_gettime(CLOCK_REALTIME, &dl_);                                         \
		dl_.tv_sec += 10;                                                            \
		pthread_mutex_lock(&(p)->lock);                                              \
		while (!(what) && pthread_cond_timedwait(&(p)->cond, &(p)->lock, &dl_) == 0) \
			;                                                                    \
		pthread_mutex_unlock(&(p)->lock);                                            \
	} while (0)

static void probe_init(struct probe *p, int port, const char *send, int want)
{
	memset(p, 0, sizeof(*p));
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->port = port;
	p->send = send;
	p->want = want;
}

/* --- the cases, run by a thread beside net_serve ------------------------ */
struct run {
	struct server *srv;
	const char *backend;
	int redis_port, closed_port;
	pthread_t thread;
};

static void *run_cases(void *arg)
{
	struct run *r = arg;
	struct probe p;
	const char *b = r->backend;

	probe_init(&p, r->redis_port, "*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$4\r\nlink\r\n$5\r\nvalue\r\n",
		   2);
	msgq_post_worker(r->srv, 0, open_link, &p);
	WAIT_FOR(&p, p.done);
	ok(p.done && p.connected, "%s: the link to redis-server connected", b);
	is_int(p.nreplies, 2, "%s: two replies", b);
	is_str(p.replies[0], "+PONG", "%s: PING answered +PONG", b);
	is_str(p.replies[1], "+OK", "%s: SET answered +OK", b);
	is_int(p.error, 0, "%s: closed by us, orderly", b);

	probe_init(&p, r->redis_port, "*2\r\n$3\r\nGET\r\n$4\r\nlink\r\n", 1);
	msgq_post_worker(r->srv, 0, open_link, &p);
	WAIT_FOR(&p, p.done);
	is_str(p.replies[0], "$value", "%s: a second link's GET sees the SET", b);

	probe_init(&p, r->closed_port, "*1\r\n$4\r\nPING\r\n", 1);
	msgq_post_worker(r->srv, 0, open_link, &p);
	WAIT_FOR(&p, p.done);
	ok(p.done && !p.connected && p.nreplies == 0, "%s: a refused connect never connects", b);
	is_int(p.error, -ECONNREFUSED, "%s: the owner learns -ECONNREFUSED", b);

	probe_init(&p, r->redis_port, "*1\r\n$4\r\nQUIT\r\n", 0);
	p.want = 99; /* we never close: the peer does */
	msgq_post_worker(r->srv, 0, open_link, &p);
	WAIT_FOR(&p, p.done);
	ok(p.done && p.nreplies == 1 && !strcmp(p.replies[0], "+OK"), "%s: QUIT answered +OK", b);
	is_int(p.error, 0, "%s: the peer's close reported as orderly", b);

	probe_init(&p, r->redis_port, "*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n", 0);
	msgq_post_worker(r->srv, 0, open_link, &p);
	WAIT_FOR(&p, p.subscribed || p.done);
	ok(p.subscribed && !p.done, "%s: a subscribed link stays open", b);
	msgq_post_worker(r->srv, 0, close_link, &p);
	WAIT_FOR(&p, p.done);
	ok(p.done && p.error == 0, "%s: closed by a worker message from another thread", b);

	server_request_shutdown(r->srv);
	return NULL;
}

static void on_ready(void *arg)
{
	struct run *r = arg;
	pthread_create(&r->thread, NULL, run_cases, r);
}

static int floor_execute(struct client *c)
{
	reply_ok(&c->out);
	return DISPATCH_DONE;
}

/* A port nothing listens on (bound, then closed). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	close(fd);
	return ntohs(a.sin_port);
}

static bool port_accepts(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	bool okc = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
	if (fd >= 0)
		close(fd);
	return okc;
}

static pid_t start_redis(int port)
{
	char portbuf[16];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	pid_t pid = fork();
	if (pid == 0) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		execlp("redis-server", "redis-server", "--port", portbuf, "--bind", "127.0.0.1", "--save", "",
		       "--appendonly", "no", "--daemonize", "no", (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 400 && pid > 0; i++) {
		if (port_accepts(port))
			return pid;
		int st;
		if (waitpid(pid, &st, WNOHANG) == pid)
			return -1;
		usleep(25000);
	}
	return -1;
}

static bool uring_available(void)
{
	struct io_uring ring;
	if (io_uring_queue_init(4, &ring, 0) < 0)
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

static void run_backend(const struct net_backend *backend, int redis_port)
{
	struct settings cfg;
	settings_init(&cfg);
	char err[256], port[16];
	snprintf(port, sizeof(port), "%d", free_port());
	settings_set(&cfg, "port", port, true, err, sizeof(err));
	settings_set(&cfg, "bind", "127.0.0.1", true, err, sizeof(err));
	struct server srv = { 0 };
	srv.cfg = &cfg;
	pthread_rwlock_init(&srv.wake_lock, NULL);
	srv.execute = floor_execute;
	srv.store = store_create(1, 0);
	srv.clients = registry_create(1);
	srv.msgq = msgq_create(1);
	srv.post = msgq_post;
	srv.start_ms = zr_time_ms();
	srv.start_mono_us = zr_mono_us();
	struct run r = { .srv = &srv, .backend = backend->name, .redis_port = redis_port };
	r.closed_port = free_port();
	int rc = net_serve(&srv, backend, 1, NULL, 0, on_ready, &r);
	ok(rc == 0, "%s: the loop stopped cleanly", backend->name);
	if (rc == 0 || r.thread)
		pthread_join(r.thread, NULL);
	msgq_destroy(srv.msgq);
	registry_destroy(srv.clients);
	store_destroy(srv.store);
	settings_free(&cfg);
}

int main(void)
{
	if (system("command -v redis-server >/dev/null 2>&1") != 0)
		skip_all("no redis-server");
	zr_mem_thread_slot(0);
	zr_hash_init();
	command_table_init();
	int redis_port = free_port();
	pid_t redis = start_redis(redis_port);
	if (redis < 0)
		skip_all("redis-server did not start");
	if (uring_available())
		run_backend(&net_backend_uring, redis_port);
	else
		diag("io_uring unavailable here: only epoll runs");
	run_backend(&net_backend_epoll, redis_port);
	kill(redis, SIGTERM);
	waitpid(redis, NULL, 0);
	return done_testing();
}
