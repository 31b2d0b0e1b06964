/* repl/sock — see sock.h. */
#include "zarisd/repl/sock.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/core/mem.h"

static int wait_fd(int fd, short events, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = events };
	for (;;) {
		int r = poll(&pfd, 1, timeout_ms);
		if (r > 0)
			return 0;
		if (r == 0)
			return -ETIMEDOUT;
		if (errno != EINTR)
			return -errno;
	}
}

int sock_connect(const char *host, int port, int timeout_ms)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res;
	char portstr[16];
	snprintf(portstr, sizeof(portstr), "%d", port);
	int gr = getaddrinfo(host, portstr, &hints, &res);
	if (gr != 0)
		return gr == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	int err = -ECONNREFUSED;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			freeaddrinfo(res);
			return fd;
		}
		if (errno == EINPROGRESS) {
			int w = wait_fd(fd, POLLOUT, timeout_ms);
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			if (w == 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0) {
				freeaddrinfo(res);
				return fd;
			}
			err = w < 0 ? w : -soerr;
		} else {
			err = -errno;
		}
		close(fd);
	}
	freeaddrinfo(res);
	return err;
}

int sock_send_all(int fd, const void *p, size_t n, int timeout_ms)
{
	return sock_send_all_or(fd, p, n, timeout_ms, NULL, NULL);
}

#define GIVE_UP_EVERY_MS 100

int sock_send_all_or(int fd, const void *p, size_t n, int timeout_ms, bool (*give_up)(void *ctx), void *ctx)
{
	const char *c = p;
	int waited = 0; /* ms without progress */
	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
		if (w > 0) {
			c += w;
			n -= (size_t)w;
			waited = 0;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return -errno;
		if (give_up && give_up(ctx))
			return -ECANCELED;
		int slice = give_up && timeout_ms - waited > GIVE_UP_EVERY_MS ? GIVE_UP_EVERY_MS
									      : timeout_ms - waited;
		int r = wait_fd(fd, POLLOUT, slice > 0 ? slice : 0);
		if (r == -ETIMEDOUT && give_up && (waited += slice) < timeout_ms)
			continue;
		if (r < 0)
			return r;
	}
	return 0;
}

ssize_t sock_recv(int fd, void *p, size_t n, int timeout_ms)
{
	for (;;) {
		ssize_t r = recv(fd, p, n, 0);
		if (r > 0)
			return r;
		if (r == 0)
			return -ECONNRESET;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN)
			return -errno;
		if (timeout_ms == 0)
			return -EAGAIN;
		int w = wait_fd(fd, POLLIN, timeout_ms);
		if (w < 0)
			return w;
	}
}

int sock_command(int fd, int timeout_ms, int argc, const char *const *argv)
{
	char buf[1024];
	int n = snprintf(buf, sizeof(buf), "*%d\r\n", argc);
	for (int i = 0; i < argc && n < (int)sizeof(buf); i++)
		n += snprintf(buf + n, sizeof(buf) - (size_t)n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
	if (n >= (int)sizeof(buf))
		return -E2BIG;
	return sock_send_all(fd, buf, (size_t)n, timeout_ms);
}

void sockbuf_free(struct sockbuf *b)
{
	zr_free(b->p);
	*b = (struct sockbuf){ 0 };
}

void sockbuf_consume(struct sockbuf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

ssize_t sockbuf_fill(struct sockbuf *b, int fd, size_t want, int timeout_ms)
{
	if (b->len + want > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		while (cap < b->len + want)
			cap *= 2;
		b->p = zr_realloc(b->p, cap);
		b->cap = cap;
	}
	ssize_t r = sock_recv(fd, b->p + b->len, want, timeout_ms);
	if (r > 0)
		b->len += (size_t)r;
	return r;
}

int sockbuf_line(struct sockbuf *b, int fd, int timeout_ms, char *line, size_t cap)
{
	for (;;) {
		char *nl = b->len ? memchr(b->p, '\n', b->len) : NULL;
		if (nl) {
			size_t n = (size_t)(nl - b->p);
			size_t keep = n && b->p[n - 1] == '\r' ? n - 1 : n;
			if (keep >= cap)
				keep = cap - 1;
			memcpy(line, b->p, keep);
			line[keep] = 0;
			sockbuf_consume(b, n + 1);
			return 0;
		}
		if (b->len > 65536)
			return -EPROTO;
		ssize_t r = sockbuf_fill(b, fd, 4096, timeout_ms);
		if (r < 0)
			return (int)r;
	}
}
