/* zc_conn — one node's socket: a non-blocking connect bounded by poll(),
 * the HELLO handshake (PROTOCOL.md 3), and buffered non-blocking reads and
 * writes. The engine (zaris.c) decides when; this file only moves bytes. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "zarisd/client/zc_int.h"
#include "zarisd/proto/native_wire.h"

#define ZC_READ_CHUNK 65536

uint64_t zc_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void zc_node_close_fd(struct zc_node *n)
{
	if (n->fd >= 0)
		close(n->fd);
	n->fd = -1;
	n->rlen = n->wlen = n->woff = 0;
}

/* Milliseconds left until DEADLINE (0 = none: -1), at least 0. */
static int left_ms(uint64_t deadline)
{
	if (!deadline)
		return -1;
	uint64_t now = zc_now_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = events };
	for (;;) {
		int r = poll(&p, 1, left_ms(deadline));
		if (r > 0)
			return 0;
		if (r == 0)
			return ZARIS_E_TIMEOUT;
		if (errno != EINTR)
			return ZARIS_E_IO;
	}
}

static int connect_addr(struct zaris *z, struct zc_node *n, uint64_t deadline)
{
	char port[8];
	snprintf(port, sizeof(port), "%u", n->port);
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai, *a;
	int gai = getaddrinfo(n->host, port, &hints, &ai);
	if (gai) {
		zc_set_err(z, "%s:%u: %s", n->host, n->port, gai_strerror(gai));
		return ZARIS_E_IO;
	}
	int rc = ZARIS_E_IO;
	for (a = ai; a; a = a->ai_next) {
		int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0) {
			zc_set_err(z, "%s:%u: socket: %s", n->host, n->port, strerror(errno));
			continue;
		}
		if (connect(fd, a->ai_addr, a->ai_addrlen) && errno != EINPROGRESS) {
			zc_set_err(z, "%s:%u: connect: %s", n->host, n->port, strerror(errno));
			close(fd);
			continue;
		}
		rc = wait_fd(fd, POLLOUT, deadline);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (!rc && (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr)) {
			zc_set_err(z, "%s:%u: connect: %s", n->host, n->port,
				   strerror(soerr ? soerr : errno));
			rc = ZARIS_E_IO;
		} else if (rc) {
			zc_set_err(z, "%s:%u: connect: %s", n->host, n->port,
				   rc == ZARIS_E_TIMEOUT ? "timed out" : strerror(errno));
		}
		if (rc) {
			close(fd);
			if (rc == ZARIS_E_TIMEOUT)
				break;
			continue;
		}
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		n->fd = fd;
		break;
	}
	freeaddrinfo(ai);
	return n->fd >= 0 ? 0 : rc;
}

int zc_node_queue(struct zc_node *n, const void *p, size_t len)
{
	if (n->woff && n->woff == n->wlen)
		n->woff = n->wlen = 0;
	if (n->wlen + len > n->wcap) {
		/* reclaim what was written before growing */
		if (n->woff) {
			memmove(n->wbuf, n->wbuf + n->woff, n->wlen - n->woff);
			n->wlen -= n->woff;
			n->woff = 0;
		}
		if (n->wlen + len > n->wcap) {
			size_t cap = n->wcap ? n->wcap : 4096;
			while (cap < n->wlen + len)
				cap *= 2;
			unsigned char *q = realloc(n->wbuf, cap);
			if (!q)
				return ZARIS_E_NOMEM;
			n->wbuf = q;
			n->wcap = cap;
		}
	}
	memcpy(n->wbuf + n->wlen, p, len);
	n->wlen += len;
	return 0;
}

int zc_node_write(struct zc_node *n)
{
	while (n->woff < n->wlen) {
		ssize_t w = send(n->fd, n->wbuf + n->woff, n->wlen - n->woff, MSG_NOSIGNAL);
		if (w > 0) {
			n->woff += (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return ZARIS_E_IO;
	}
	n->woff = n->wlen = 0;
	return 0;
}

int zc_node_read(struct zc_node *n, size_t *got)
{
	*got = 0;
	if (n->rcap - n->rlen < ZC_READ_CHUNK) {
		size_t cap = n->rcap ? n->rcap : ZC_READ_CHUNK * 2;
		while (cap - n->rlen < ZC_READ_CHUNK)
			cap *= 2;
		unsigned char *q = realloc(n->rbuf, cap);
		if (!q)
			return ZARIS_E_NOMEM;
		n->rbuf = q;
		n->rcap = cap;
	}
	for (;;) {
		ssize_t r = recv(n->fd, n->rbuf + n->rlen, n->rcap - n->rlen, 0);
		if (r > 0) {
			n->rlen += (size_t)r;
			*got = (size_t)r;
			return 1;
		}
		if (r == 0)
			return 0;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 1;
		return ZARIS_E_IO;
	}
}

/* --- HELLO --------------------------------------------------------------- */

static int send_hello(struct zaris *z, struct zc_node *n)
{
	const char *user = z->opts.username ? z->opts.username : "";
	const char *pass = z->opts.password ? z->opts.password : "";
	size_t ul = strlen(user), pl = strlen(pass);
	size_t len = NW_HEADER + 4 + 2 + 2 + 4 + ul + 4 + pl;
	unsigned char *f = malloc(len), *p = f;
	if (!f)
		return ZARIS_E_NOMEM;
	nw_put32(p, (uint32_t)(len - 4));
	p[4] = NW_HELLO;
	p[5] = 0;
	nw_put16(p + 6, 0);
	nw_put32(p + 8, 0);
	p += NW_HEADER;
	nw_put32(p, NW_MAGIC);
	nw_put16(p + 4, NW_VERSION);
	nw_put16(p + 6, 0);
	p += 8;
	nw_put32(p, (uint32_t)ul);
	memcpy(p + 4, user, ul);
	p += 4 + ul;
	nw_put32(p, (uint32_t)pl);
	memcpy(p + 4, pass, pl);
	int rc = zc_node_queue(n, f, len);
	free(f);
	return rc;
}

/* Reads the server's first frame whole, within DEADLINE: its total length
 * (header included) in *FLEN, bytes at n->rbuf. */
static int read_first_frame(struct zaris *z, struct zc_node *n, uint64_t deadline, size_t *flen)
{
	for (;;) {
		if (n->rlen >= 4) {
			uint32_t len = nw_get32(n->rbuf);
			if (len < NW_HEADER_REST || len > (1u << 20)) {
				zc_set_err(z, "%s:%u: a first frame of %u bytes", n->host, n->port, len);
				return ZARIS_E_PROTO;
			}
			if (n->rlen >= 4 + (size_t)len) {
				*flen = 4 + (size_t)len;
				return 0;
			}
		}
		int rc = wait_fd(n->fd, POLLIN, deadline);
		if (rc) {
			zc_set_err(z, "%s:%u: HELLO: %s", n->host, n->port,
				   rc == ZARIS_E_TIMEOUT ? "timed out" : strerror(errno));
			return rc;
		}
		size_t got;
		rc = zc_node_read(n, &got);
		if (rc <= 0) {
			zc_set_err(z, "%s:%u: HELLO: %s", n->host, n->port,
				   rc == 0 ? "connection closed" : strerror(errno));
			return rc == 0 ? ZARIS_E_IO : rc;
		}
	}
}

static int parse_hello(struct zaris *z, struct zc_node *n, size_t flen, unsigned *hello_flags)
{
	const unsigned char *f = n->rbuf;
	struct nw_reader r;
	nw_reader_init(&r, f + NW_HEADER, flen - NW_HEADER);
	if (f[4] == NW_GOODBYE) {
		size_t rl;
		const unsigned char *why = nw_take_str(&r, flen, &rl);
		if (!why)
			why = (const unsigned char *)"", rl = 0;
		zc_set_err(z, "%s:%u: refused: %.*s", n->host, n->port, (int)rl, (const char *)why);
		bool auth =
			(rl >= 9 && !memcmp(why, "WRONGPASS", 9)) || (rl >= 6 && !memcmp(why, "NOAUTH", 6));
		return auth ? ZARIS_E_AUTH : ZARIS_E_PROTO;
	}
	if (f[4] != NW_HELLO) {
		zc_set_err(z, "%s:%u: a first frame of kind %u, not HELLO", n->host, n->port, f[4]);
		return ZARIS_E_PROTO;
	}
	uint32_t magic = nw_take32(&r);
	uint16_t version = nw_take16(&r);
	uint16_t flags = nw_take16(&r);
	uint64_t client_id = nw_take64(&r);
	uint32_t max_frame = nw_take32(&r);
	size_t idlen;
	const unsigned char *id = nw_take_str(&r, 40, &idlen);
	if (!r.ok || !id || magic != NW_MAGIC || version != NW_VERSION) {
		zc_set_err(z, "%s:%u: a bad HELLO reply", n->host, n->port);
		return ZARIS_E_PROTO;
	}
	memcpy(n->id, id, idlen);
	n->id[idlen] = '\0';
	n->max_frame = max_frame;
	*hello_flags = flags;
	if (!z->client_id)
		z->client_id = client_id;
	memmove(n->rbuf, n->rbuf + flen, n->rlen - flen);
	n->rlen -= flen;
	return 0;
}

int zc_node_connect(struct zaris *z, struct zc_node *n, unsigned *hello_flags)
{
	int tmo = z->opts.connect_timeout_ms;
	uint64_t deadline = tmo < 0 ? 0 : zc_now_ms() + (uint64_t)tmo;
	n->rlen = n->wlen = n->woff = 0;
	int rc = connect_addr(z, n, deadline);
	if (rc)
		return rc;
	size_t flen;
	if ((rc = send_hello(z, n)))
		goto out_close;
	while (n->woff < n->wlen) {
		if ((rc = zc_node_write(n))) {
			zc_set_err(z, "%s:%u: HELLO: %s", n->host, n->port, strerror(errno));
			goto out_close;
		}
		if (n->woff < n->wlen && (rc = wait_fd(n->fd, POLLOUT, deadline))) {
			zc_set_err(z, "%s:%u: HELLO: timed out", n->host, n->port);
			goto out_close;
		}
	}
	if ((rc = read_first_frame(z, n, deadline, &flen)) || (rc = parse_hello(z, n, flen, hello_flags)))
		goto out_close;
	z->stats.connects++;
	return 0;
out_close:
	zc_node_close_fd(n);
	return rc;
}
