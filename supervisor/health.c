/* health — a small non-blocking RESP2 client for health checks and live
 * CONFIG SETs. See health.h. Replies are read with zarisd's RESP reply
 * reader (proto/resp_reader) and taken only as far as the checks need: a
 * status, an error, an integer, or a bulk string (INFO). An error reply, a
 * PING not answered with PONG, an unexpected reply type, EOF or the deadline
 * all end the exchange as failed with a one-line reason.
 */
#include "supervisor/health.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "zarisd/proto/resp_reader.h"

#define SV_HEALTH_MAX_REPLY (1 << 20)

void sv_info_clear(struct sv_info *info)
{
	memset(info, 0, sizeof(*info));
	info->process_id = info->uptime_in_seconds = info->used_memory = info->maxmemory = -1;
	info->connected_slaves = info->master_repl_offset = info->slave_repl_offset = -1;
	info->master_last_io_seconds_ago = info->master_sync_in_progress = info->master_port = -1;
	info->master_link_down_since_seconds = -1;
}

void sv_health_init(struct sv_health *h)
{
	memset(h, 0, sizeof(*h));
	h->fd = -1;
	sv_info_clear(&h->info);
	h->push_reply = h->topo_reply = -1;
}

void sv_health_reset(struct sv_health *h)
{
	if (h->fd >= 0)
		close(h->fd);
	free(h->in);
	free(h->topo);
	sv_health_init(h);
}

int sv_health_add_topology(struct sv_health *h, int kind, int argc, const char *const *argv)
{
	int idx = h->n_cmds, rc = sv_health_add(h, argc, argv);

	if (rc == 0 && kind == 0)
		h->push_reply = idx;
	else if (rc == 0)
		h->topo_reply = idx;
	return rc;
}

int sv_health_add(struct sv_health *h, int argc, const char *const *argv)
{
	size_t len = h->out_len;
	int n;

	if (h->n_cmds >= SV_HEALTH_MAX_CMDS)
		return -ENOSPC;
	n = snprintf(h->out + len, sizeof(h->out) - len, "*%d\r\n", argc);
	if (n < 0 || (size_t)n >= sizeof(h->out) - len)
		return -ENOSPC;
	len += (size_t)n;
	for (int i = 0; i < argc; i++) {
		size_t alen = strlen(argv[i]);

		n = snprintf(h->out + len, sizeof(h->out) - len, "$%zu\r\n", alen);
		if (n < 0 || (size_t)n + alen + 2 >= sizeof(h->out) - len)
			return -ENOSPC;
		len += (size_t)n;
		memcpy(h->out + len, argv[i], alen);
		len += alen;
		memcpy(h->out + len, "\r\n", 2);
		len += 2;
	}
	h->out_len = len;
	h->n_cmds++;
	return 0;
}

static void finish(struct sv_health *h, bool ok, const char *fmt, const char *arg)
{
	h->done = true;
	h->ok = ok;
	if (!ok)
		snprintf(h->error, sizeof(h->error), fmt, arg);
	if (h->fd >= 0) {
		close(h->fd);
		h->fd = -1;
	}
}

int sv_health_start(struct sv_health *h, const char *addr, int port, int64_t deadline_ms)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *a4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&ss;
	socklen_t slen;
	int one = 1;

	h->deadline_ms = deadline_ms;
	if (inet_pton(AF_INET, addr, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		slen = sizeof(*a4);
	} else if (inet_pton(AF_INET6, addr, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		slen = sizeof(*a6);
	} else {
		finish(h, false, "bad address %s", addr);
		return 0;
	}
	h->fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (h->fd < 0) {
		finish(h, false, "socket: %s", strerror(errno));
		return 0;
	}
	setsockopt(h->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(h->fd, (struct sockaddr *)&ss, slen) == 0)
		h->connected = true;
	else if (errno != EINPROGRESS)
		finish(h, false, "connect: %s", strerror(errno));
	return 0;
}

int sv_health_fd(const struct sv_health *h)
{
	return h->done ? -1 : h->fd;
}

short sv_health_events(const struct sv_health *h)
{
	return !h->connected || h->out_off < h->out_len ? POLLOUT : POLLIN;
}

static void parse_info_line(const char *line, size_t len, struct sv_info *info)
{
	/* size 0: a number; else a string field of that size */
	static const struct {
		const char *key;
		size_t off, size;
	} keys[] = {
		{ "process_id:", offsetof(struct sv_info, process_id), 0 },
		{ "uptime_in_seconds:", offsetof(struct sv_info, uptime_in_seconds), 0 },
		{ "used_memory:", offsetof(struct sv_info, used_memory), 0 },
		{ "maxmemory:", offsetof(struct sv_info, maxmemory), 0 },
		{ "connected_slaves:", offsetof(struct sv_info, connected_slaves), 0 },
		{ "master_repl_offset:", offsetof(struct sv_info, master_repl_offset), 0 },
		{ "slave_repl_offset:", offsetof(struct sv_info, slave_repl_offset), 0 },
		{ "master_last_io_seconds_ago:", offsetof(struct sv_info, master_last_io_seconds_ago), 0 },
		{ "master_sync_in_progress:", offsetof(struct sv_info, master_sync_in_progress), 0 },
		{ "master_port:", offsetof(struct sv_info, master_port), 0 },
		{ "master_link_down_since_seconds:", offsetof(struct sv_info, master_link_down_since_seconds),
		  0 },
		{ "role:", offsetof(struct sv_info, role), sizeof(info->role) },
		{ "master_link_status:", offsetof(struct sv_info, master_link_status),
		  sizeof(info->master_link_status) },
		{ "master_host:", offsetof(struct sv_info, master_host), sizeof(info->master_host) },
	};
	char val[64];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		size_t klen = strlen(keys[i].key);
		char *field = (char *)info + keys[i].off;

		if (len <= klen || memcmp(line, keys[i].key, klen) != 0)
			continue;
		if (keys[i].size) {
			snprintf(field, keys[i].size, "%.*s", (int)(len - klen), line + klen);
		} else {
			snprintf(val, sizeof(val), "%.*s", (int)(len - klen), line + klen);
			*(long long *)field = strtoll(val, NULL, 10);
		}
		return;
	}
}

void sv_health_parse_info(const char *text, size_t len, struct sv_info *info)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = (size_t)((nl ? nl : end) - p);

		if (l && p[l - 1] == '\r')
			l--;
		parse_info_line(p, l, info);
		p = nl ? nl + 1 : end;
	}
}

/* The first line of the reply at P (at most N bytes), for a message. */
static const char *first_line(const char *p, size_t n, char *buf, size_t size)
{
	const char *cr = memchr(p, '\r', n);
	size_t len = cr ? (size_t)(cr - p) : n;

	snprintf(buf, size, "%.*s", (int)(len < size ? len : size - 1), p);
	return buf;
}

/* Parses complete replies at the front of the buffer. Returns false when
 * the exchange has ended (done set). */
static bool parse_replies(struct sv_health *h)
{
	size_t off = 0;
	char line[160];

	while (off < h->in_len) {
		const char *p = h->in + off;
		size_t avail = h->in_len - off;
		struct resp_reply r;
		long n = resp_reader_next(p, avail, &r);
		long long blen;

		if (n == 0) {
			/* a bulk's length is known before its bytes: refuse at once
			 * what the checks would never take */
			const char *cr = p[0] == '$' ? memchr(p, '\r', avail) : NULL;

			if (cr &&
			    (!resp_reader_int(p + 1, cr, &blen) || blen < 0 || blen > SV_HEALTH_MAX_REPLY)) {
				finish(h, false, "unexpected bulk reply %s",
				       first_line(p, avail, line, sizeof(line)));
				return false;
			}
			break;
		}
		if (n < 0 && p[0] != '$' && p[0] != '-' && p[0] != '+' && p[0] != ':') {
			finish(h, false, "unexpected reply %s", first_line(p, avail, line, 101));
			return false;
		}
		if (n < 0) {
			finish(h, false, "malformed reply %s", first_line(p, avail, line, 101));
			return false;
		}
		if (h->n_replies == h->push_reply || h->n_replies == h->topo_reply) {
			bool push = h->n_replies == h->push_reply;
			char *err_out = push ? h->push_error : h->topo_error;

			if (r.type == RESP_REPLY_ERROR)
				snprintf(err_out, sizeof(h->push_error), "%.*s",
					 (int)(r.len < 190 ? r.len : 190), r.str);
			else if (!push && r.type == RESP_REPLY_NULL)
				h->topo_nil = true;
			else if (!push && r.type == RESP_REPLY_BULK) {
				free(h->topo);
				h->topo = malloc(r.len + 1);
				if (!h->topo) {
					finish(h, false, "out of memory%s", "");
					return false;
				}
				memcpy(h->topo, r.str, r.len);
				h->topo[r.len] = '\0';
			} else if (!(push && r.type == RESP_REPLY_STATUS))
				snprintf(err_out, sizeof(h->push_error), "unexpected reply %s",
					 first_line(p, avail, line, 101));
		} else if (r.type == RESP_REPLY_ERROR && p[0] == '-') {
			snprintf(line, sizeof(line), "%.*s", (int)(r.len < 150 ? r.len : 150), r.str);
			finish(h, false, "error reply: %s", line);
			return false;
		} else if (r.type == RESP_REPLY_STATUS) {
			/* The last command but one is PING when INFO follows it; any
			 * status that is not PONG there means something else answers. */
			if (h->n_replies == h->n_cmds - 2 && !(r.len == 4 && memcmp(r.str, "PONG", 4) == 0)) {
				snprintf(line, sizeof(line), "%.*s", (int)(r.len < 150 ? r.len : 150), r.str);
				finish(h, false, "PING answered %s", line);
				return false;
			}
		} else if (r.type == RESP_REPLY_BULK) {
			if (r.len > SV_HEALTH_MAX_REPLY) {
				finish(h, false, "unexpected bulk reply %s",
				       first_line(p, avail, line, sizeof(line)));
				return false;
			}
			sv_health_parse_info(r.str, r.len, &h->info);
		} else if (p[0] == '$') {
			finish(h, false, "unexpected bulk reply %s",
			       first_line(p, avail, line, sizeof(line)));
			return false;
		} else if (r.type != RESP_REPLY_INT) {
			finish(h, false, "unexpected reply %s", first_line(p, avail, line, 101));
			return false;
		}
		off += (size_t)n;
		h->n_replies++;
		if (h->n_replies == h->n_cmds) {
			finish(h, true, "", "");
			return false;
		}
	}
	memmove(h->in, h->in + off, h->in_len - off);
	h->in_len -= off;
	return true;
}

static void do_read(struct sv_health *h)
{
	for (;;) {
		ssize_t n;

		if (h->in_cap - h->in_len < 4096) {
			size_t cap = h->in_cap ? h->in_cap * 2 : 8192;
			char *in;

			if (cap > SV_HEALTH_MAX_REPLY * 2) {
				finish(h, false, "reply too long%s", "");
				return;
			}
			in = realloc(h->in, cap);
			if (!in) {
				finish(h, false, "out of memory%s", "");
				return;
			}
			h->in = in;
			h->in_cap = cap;
		}
		n = read(h->fd, h->in + h->in_len, h->in_cap - h->in_len - 1);
		if (n > 0) {
			h->in_len += (size_t)n;
			if (!parse_replies(h))
				return;
			continue;
		}
		if (n == 0)
			finish(h, false, "connection closed by the instance%s", "");
		else if (errno != EAGAIN && errno != EINTR)
			finish(h, false, "read: %s", strerror(errno));
		return;
	}
}

void sv_health_io(struct sv_health *h, short revents)
{
	if (h->done || h->fd < 0)
		return;
	if (!h->connected) {
		int err = 0;
		socklen_t elen = sizeof(err);

		getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &elen);
		if (err) {
			finish(h, false, "connect: %s", strerror(err));
			return;
		}
		h->connected = true;
	}
	while (h->out_off < h->out_len) {
		ssize_t n = send(h->fd, h->out + h->out_off, h->out_len - h->out_off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EAGAIN)
				return;
			finish(h, false, "send: %s", strerror(errno));
			return;
		}
		h->out_off += (size_t)n;
	}
	if (revents & (POLLIN | POLLHUP | POLLERR))
		do_read(h);
}

void sv_health_expire(struct sv_health *h, int64_t now_ms)
{
	if (h->done || h->fd < 0 || now_ms < h->deadline_ms)
		return;
	finish(h, false, "%s", !h->connected ? "connect timed out" : "no answer within the health timeout");
}
