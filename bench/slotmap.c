/* slotmap — see slotmap.h. */
#include "bench/slotmap.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "zarisd/proto/resp_reader.h"

#define SM_REPLY_MAX (16u << 20) /* a map of every slot in its own range is ~1 MB */

static int dial(const char *host, int port, char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	struct timeval tv = { .tv_sec = 5 };
	char ports[16];
	int fd, rc;

	snprintf(ports, sizeof(ports), "%d", port);
	if ((rc = getaddrinfo(host, ports, &hints, &ai)) != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
	if (fd >= 0 && (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
			connect(fd, ai->ai_addr, ai->ai_addrlen) < 0)) {
		rc = -errno;
		close(fd);
		fd = rc;
	} else if (fd < 0) {
		fd = -errno;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		snprintf(err, errlen, "connect to %s:%d: %s", host, port, strerror(-fd));
	return fd;
}

/* Sends CLUSTER SLOTS on FD and reads the whole reply into a malloc'd
 * buffer (*OUT, *N bytes). */
static int query(int fd, char **out, size_t *n, char *err, size_t errlen)
{
	static const char req[] = "*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n";
	size_t cap = 64 * 1024, len = 0;
	char *buf = malloc(cap);
	long size = 0;

	if (!buf)
		return -ENOMEM;
	if (write(fd, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1)) {
		snprintf(err, errlen, "sending CLUSTER SLOTS: %s", strerror(errno));
		free(buf);
		return -EIO;
	}
	while ((size = resp_reader_next(buf, len, NULL)) == 0) {
		ssize_t r;

		if (len == cap) {
			char *nb = cap < SM_REPLY_MAX ? realloc(buf, cap * 2) : NULL;

			if (!nb) {
				snprintf(err, errlen, "CLUSTER SLOTS reply too large");
				free(buf);
				return -EMSGSIZE;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len);
		if (r <= 0) {
			snprintf(err, errlen, "reading CLUSTER SLOTS: %s",
				 r == 0 ? "connection closed" : strerror(errno));
			free(buf);
			return -EIO;
		}
		len += (size_t)r;
	}
	if (size < 0) {
		snprintf(err, errlen, "CLUSTER SLOTS: protocol error in the reply");
		free(buf);
		return -EPROTO;
	}
	*out = buf;
	*n = (size_t)size;
	return 0;
}

/* Adds (or finds) the node HOST:PORT; returns its index or -1 when full. */
static int node_index(struct slotmap *m, const char *host, size_t hlen, int port)
{
	int i = slotmap_find(m, host, hlen, port);

	if (i >= 0 || m->nnodes == SM_MAX_NODES || hlen >= sizeof(m->node[0].host))
		return i;
	memcpy(m->node[m->nnodes].host, host, hlen);
	m->node[m->nnodes].host[hlen] = '\0';
	m->node[m->nnodes].port = port;
	return (int)m->nnodes++;
}

/* One [start, end, [ip, port, ...], replicas...] entry at P (N bytes). */
static int parse_range(struct slotmap *m, const char *seed, const char *p, size_t n)
{
	struct resp_reply e, lo, hi, nodev, ip, port;
	const char *q, *end = p + n, *host;
	size_t hlen;
	long sz;
	int idx;
	long long s;

	if (resp_reader_next(p, n, &e) <= 0 || e.type != RESP_REPLY_ARRAY || e.count < 3)
		return -EPROTO;
	q = e.elems;
	if ((sz = resp_reader_next(q, (size_t)(end - q), &lo)) <= 0 || lo.type != RESP_REPLY_INT)
		return -EPROTO;
	q += sz;
	if ((sz = resp_reader_next(q, (size_t)(end - q), &hi)) <= 0 || hi.type != RESP_REPLY_INT)
		return -EPROTO;
	q += sz;
	if (resp_reader_next(q, (size_t)(end - q), &nodev) <= 0 || nodev.type != RESP_REPLY_ARRAY ||
	    nodev.count < 2)
		return -EPROTO;
	q = nodev.elems;
	if ((sz = resp_reader_next(q, (size_t)(end - q), &ip)) <= 0 ||
	    (ip.type != RESP_REPLY_BULK && ip.type != RESP_REPLY_NULL))
		return -EPROTO;
	q += sz;
	if (resp_reader_next(q, (size_t)(end - q), &port) <= 0 || port.type != RESP_REPLY_INT ||
	    port.integer < 1 || port.integer > 65535)
		return -EPROTO;
	if (lo.integer < 0 || hi.integer < lo.integer || hi.integer >= ZR_KEY_SLOTS)
		return -EPROTO;
	/* Redis names a node whose address it does not know with "" (or,
	 * with hostnames, "?"): that is the node we asked. */
	host = ip.type == RESP_REPLY_BULK && ip.len > 0 && !(ip.len == 1 && ip.str[0] == '?') ? ip.str : seed;
	hlen = host == seed ? strlen(seed) : ip.len;
	idx = node_index(m, host, hlen, (int)port.integer);
	if (idx < 0)
		return -E2BIG;
	for (s = lo.integer; s <= hi.integer; s++)
		m->owner[s] = (uint8_t)idx;
	return 0;
}

int slotmap_fetch(const char *host, int port, struct slotmap *m, char *err, size_t errlen)
{
	struct resp_reply top;
	const char *p;
	char *buf = NULL;
	size_t n = 0;
	long long i;
	unsigned s, served = 0;
	int fd, rc;

	memset(m, 0, sizeof(*m));
	memset(m->owner, SM_NONE, sizeof(m->owner));
	fd = dial(host, port, err, errlen);
	if (fd < 0)
		return fd;
	rc = query(fd, &buf, &n, err, errlen);
	close(fd);
	if (rc < 0)
		return rc;
	resp_reader_next(buf, n, &top);
	if (top.type == RESP_REPLY_ERROR) {
		snprintf(err, errlen, "CLUSTER SLOTS on %s:%d: %.*s", host, port, (int)top.len, top.str);
		rc = -ENOTSUP;
		goto out;
	}
	if (top.type != RESP_REPLY_ARRAY) {
		snprintf(err, errlen, "CLUSTER SLOTS on %s:%d: not an array", host, port);
		rc = -EPROTO;
		goto out;
	}
	p = top.elems;
	for (i = 0; i < top.count; i++) {
		long sz = resp_reader_next(p, (size_t)(buf + n - p), NULL);

		rc = sz > 0 ? parse_range(m, host, p, (size_t)sz) : -EPROTO;
		if (rc < 0) {
			snprintf(err, errlen, "CLUSTER SLOTS on %s:%d: %s in entry %lld", host, port,
				 rc == -E2BIG ? "more than 64 primaries" : "unexpected layout", i + 1);
			goto out;
		}
		p += sz;
	}
	for (s = 0; s < ZR_KEY_SLOTS; s++)
		served += m->owner[s] != SM_NONE;
	if (served == 0) {
		snprintf(err, errlen, "CLUSTER SLOTS on %s:%d: no slot is served", host, port);
		rc = -ENOENT;
	}
out:
	free(buf);
	return rc;
}

int slotmap_find(const struct slotmap *m, const char *host, size_t hlen, int port)
{
	unsigned i;

	for (i = 0; i < m->nnodes; i++)
		if (m->node[i].port == port && strlen(m->node[i].host) == hlen &&
		    memcmp(m->node[i].host, host, hlen) == 0)
			return (int)i;
	return -1;
}

/* Parses the decimal in [P, END) into *OUT (at most MAX). */
static bool parse_num(const char *p, const char *end, long long max, long long *out)
{
	return resp_reader_int(p, end, out) && *out >= 0 && *out <= max;
}

bool slotmap_parse_redirect(const char *s, size_t len, struct sm_redirect *r)
{
	const char *end = s + len, *sp, *colon;
	long long slot, port;

	if (len > 6 && memcmp(s, "MOVED ", 6) == 0) {
		r->ask = false;
		s += 6;
	} else if (len > 4 && memcmp(s, "ASK ", 4) == 0) {
		r->ask = true;
		s += 4;
	} else {
		return false;
	}
	sp = memchr(s, ' ', (size_t)(end - s));
	if (!sp || !parse_num(s, sp, ZR_KEY_SLOTS - 1, &slot))
		return false;
	/* the last ':' splits host and port (an IPv6 host has colons) */
	for (colon = end - 1; colon > sp && *colon != ':'; colon--)
		;
	if (colon == sp || !parse_num(colon + 1, end, 65535, &port) || port == 0)
		return false;
	r->slot = (unsigned)slot;
	r->host = sp + 1;
	r->hlen = (size_t)(colon - sp - 1);
	r->port = (int)port;
	return true;
}
