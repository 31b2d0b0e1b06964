/* serve_standin — the stand-in floor: one epoll loop per thread, each with
 * its own SO_REUSEPORT listener on the same port (the kernel spreads
 * connections), answering every complete request with serve_reply().
 * A connection lives and dies on the thread that accepted it; threads
 * share nothing but the read-only options and canned GET reply.
 */
#include "bench/serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/proto/resp_reader.h"

#define SC_BUF_MIN (64 * 1024)
#define SC_OUT_MAX (64u * 1024 * 1024) /* a client that never reads is dropped */

struct sc_conn {
	int fd;
	bool out_armed;
	char *in; /* unparsed request bytes in [0, ilen) */
	size_t icap, ilen;
	char *out; /* unsent replies in [ooff, olen) */
	size_t ocap, olen, ooff;
};

struct sc_loop {
	pthread_t tid;
	int epfd, lfd;
	char *get_reply;
	size_t get_len, reply_max;
};

static void sc_close(struct sc_loop *l, struct sc_conn *c)
{
	epoll_ctl(l->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c);
}

static int sc_set_out(struct sc_loop *l, struct sc_conn *c, bool on)
{
	struct epoll_event ev = { .events = EPOLLIN | (on ? EPOLLOUT : 0), .data.ptr = c };

	c->out_armed = on;
	return epoll_ctl(l->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Writes pending replies; returns -1 when the connection must close. */
static int sc_flush(struct sc_loop *l, struct sc_conn *c)
{
	while (c->ooff < c->olen) {
		ssize_t n = write(c->fd, c->out + c->ooff, c->olen - c->ooff);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return c->out_armed ? 0 : sc_set_out(l, c, true);
			return -1;
		}
		c->ooff += (size_t)n;
	}
	c->olen = c->ooff = 0;
	return c->out_armed ? sc_set_out(l, c, false) : 0;
}

/* Makes room for one more reply; returns -1 past SC_OUT_MAX or OOM. */
static int sc_out_room(struct sc_loop *l, struct sc_conn *c)
{
	char *nb;

	if (c->olen + l->reply_max <= c->ocap)
		return 0;
	if (c->ooff > 0) {
		memmove(c->out, c->out + c->ooff, c->olen - c->ooff);
		c->olen -= c->ooff;
		c->ooff = 0;
		if (c->olen + l->reply_max <= c->ocap)
			return 0;
	}
	if (c->ocap * 2 > SC_OUT_MAX)
		return -1;
	nb = realloc(c->out, c->ocap * 2);
	if (!nb)
		return -1;
	c->out = nb;
	c->ocap *= 2;
	return 0;
}

/* Answers every complete request in C's input; -1 closes. */
static int sc_process(struct sc_loop *l, struct sc_conn *c)
{
	size_t pos = 0;

	while (pos < c->ilen) {
		const char *p = c->in + pos;
		size_t avail = c->ilen - pos;
		long len;

		if (*p == '*') {
			/* a request is an array of bulk strings: a reply's shape */
			len = resp_reader_next(p, avail, NULL);
			if (len < 0)
				return -1;
		} else {
			const char *nl = memchr(p, '\n', avail);

			len = nl ? (long)(nl - p + 1) : 0;
			if (len == 1 || (len == 2 && *p == '\r')) {
				pos += (size_t)len; /* empty inline line: no reply */
				continue;
			}
		}
		if (len == 0)
			break;
		if (sc_out_room(l, c) < 0)
			return -1;
		c->olen += serve_reply(p, (size_t)len, l->get_reply, l->get_len, c->out + c->olen);
		pos += (size_t)len;
	}
	if (pos > 0 && pos < c->ilen)
		memmove(c->in, c->in + pos, c->ilen - pos);
	c->ilen -= pos;
	return 0;
}

static int sc_readable(struct sc_loop *l, struct sc_conn *c)
{
	ssize_t n;

	if (c->ilen == c->icap) {
		char *nb = realloc(c->in, c->icap * 2);

		if (!nb)
			return -1;
		c->in = nb;
		c->icap *= 2;
	}
	n = read(c->fd, c->in + c->ilen, c->icap - c->ilen);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -1;
	if (n == 0)
		return -1;
	c->ilen += (size_t)n;
	if (sc_process(l, c) < 0)
		return -1;
	return c->out_armed ? 0 : sc_flush(l, c);
}

static void sc_accept(struct sc_loop *l)
{
	for (;;) {
		int fd = accept4(l->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC), one = 1;
		struct epoll_event ev = { .events = EPOLLIN };
		struct sc_conn *c;

		if (fd < 0)
			return; /* EAGAIN, or a transient error: the next event retries */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = calloc(1, sizeof(*c));
		if (!c)
			goto out_close;
		c->fd = fd;
		c->icap = c->ocap = SC_BUF_MIN;
		c->in = malloc(c->icap);
		c->out = malloc(c->ocap);
		ev.data.ptr = c;
		if (!c->in || !c->out || epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			free(c->in);
			free(c->out);
			free(c);
			goto out_close;
		}
		continue;
out_close:
		close(fd);
	}
}

static void *sc_main(void *arg)
{
	struct sc_loop *l = arg;
	struct epoll_event ev[256];

	for (;;) {
		int n = epoll_wait(l->epfd, ev, 256, -1), i;

		for (i = 0; i < n; i++) {
			struct sc_conn *c = ev[i].data.ptr;
			int rc = 0;

			if (!c) {
				sc_accept(l);
				continue;
			}
			if (ev[i].events & EPOLLOUT)
				rc = sc_flush(l, c);
			if (rc == 0 && (ev[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
				rc = sc_readable(l, c);
			if (rc < 0)
				sc_close(l, c);
		}
	}
	return NULL;
}

static int sc_listen(const struct serve_opts *o)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)o->port) };
	int fd, one = 1, rc;

	if (inet_pton(AF_INET, o->bind, &sa.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 511) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int serve_standin_run(const struct serve_opts *o)
{
	struct sc_loop *loops;
	char *get_reply;
	size_t get_len, hdr;
	unsigned i;
	int rc;

	hdr = (size_t)snprintf(NULL, 0, "$%zu\r\n", o->value_size);
	get_len = hdr + o->value_size + 2;
	get_reply = malloc(get_len + 1);
	loops = calloc(o->threads, sizeof(*loops));
	if (!get_reply || !loops)
		return -ENOMEM;
	sprintf(get_reply, "$%zu\r\n", o->value_size);
	memset(get_reply + hdr, 'x', o->value_size);
	memcpy(get_reply + hdr + o->value_size, "\r\n", 2);
	/* Every listener binds before any thread runs, so a client that
	 * connects after the banner always finds the port open. */
	for (i = 0; i < o->threads; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
		struct sc_loop *l = &loops[i];

		l->get_reply = get_reply;
		l->get_len = get_len;
		l->reply_max = get_len > 7 ? get_len : 7;
		l->lfd = sc_listen(o);
		if (l->lfd < 0)
			return l->lfd;
		l->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (l->epfd < 0 || epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->lfd, &ev) < 0)
			return -errno;
	}
	printf("serve: backend=standin port=%d threads=%u\n", o->port, o->threads);
	fflush(stdout);
	for (i = 1; i < o->threads; i++) {
		rc = -pthread_create(&loops[i].tid, NULL, sc_main, &loops[i]);
		if (rc < 0)
			return rc;
	}
	sc_main(&loops[0]);
	return 0;
}
