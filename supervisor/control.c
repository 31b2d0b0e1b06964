/* control — see control.h. Connections are non-blocking and served from
 * the supervisor's poll loop; a client that stalls is closed at its
 * deadline so it cannot pin a slot. */
#include "supervisor/control.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* A request must arrive within this; jobs that stream get much longer. */
#define SV_CONTROL_IDLE_MS 5000
#define SV_CONTROL_JOB_MS (24LL * 3600 * 1000)

static gid_t zaris_gid(void)
{
	struct group *g = getgrnam("zaris");

	return g ? g->gr_gid : (gid_t)-1;
}

static int mkdir_parent(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int sv_control_listen(struct sv_control *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	gid_t gid = zaris_gid();
	int fd, rc;

	memset(c, 0, sizeof(*c));
	c->listen_fd = -1;
	for (int k = 0; k < SV_CONTROL_MAX_CONNS; k++)
		c->conns[k].fd = -1;
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	rc = mkdir_parent(path);
	if (rc < 0)
		return rc;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A socket file left by a killed supervisor: nobody can be listening
	 * on it while systemd runs only us, so replace it. */
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto out_errno;
	if (chmod(path, 0660) < 0)
		goto out_errno;
	if (gid != (gid_t)-1 && geteuid() == 0 && chown(path, 0, gid) < 0)
		goto out_errno;
	if (listen(fd, 16) < 0)
		goto out_errno;
	c->listen_fd = fd;
	c->path = strdup(path);
	c->next_id = 1;
	return 0;
out_errno:
	rc = -errno;
	close(fd);
	return rc;
}

static void conn_close(struct sv_conn *conn)
{
	if (conn->fd >= 0)
		close(conn->fd);
	free(conn->out);
	memset(conn, 0, sizeof(*conn));
	conn->fd = -1;
}

void sv_control_close(struct sv_control *c)
{
	for (int k = 0; k < SV_CONTROL_MAX_CONNS; k++)
		if (c->conns[k].fd >= 0)
			conn_close(&c->conns[k]);
	if (c->listen_fd >= 0) {
		close(c->listen_fd);
		unlink(c->path);
	}
	c->listen_fd = -1;
	free(c->path);
	c->path = NULL;
}

size_t sv_control_pollfds(struct sv_control *c, struct pollfd *fds)
{
	size_t n = 0;

	fds[n++] = (struct pollfd){ .fd = c->listen_fd, .events = POLLIN };
	for (int k = 0; k < SV_CONTROL_MAX_CONNS; k++) {
		struct sv_conn *conn = &c->conns[k];

		fds[n++] = (struct pollfd){ .fd = conn->fd,
					    .events = (short)(conn->out_len ? POLLOUT : POLLIN) };
	}
	return n;
}

static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t gid = zaris_gid();

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid() || (gid != (gid_t)-1 && cred.gid == gid);
}

static void do_accept(struct sv_control *c, int64_t now)
{
	for (;;) {
		int fd = accept4(c->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct sv_conn *slot = NULL;

		if (fd < 0)
			return;
		for (int k = 0; k < SV_CONTROL_MAX_CONNS && !slot; k++)
			if (c->conns[k].fd < 0)
				slot = &c->conns[k];
		if (!slot || !peer_allowed(fd)) {
			static const char busy[] = "-too many control connections\n";
			static const char denied[] = "-permission denied\n";

			if (send(fd, slot ? denied : busy, slot ? sizeof(denied) - 1 : sizeof(busy) - 1,
				 MSG_NOSIGNAL) < 0) {
				/* nothing more to tell a client we refuse */
			}
			close(fd);
			continue;
		}
		slot->fd = fd;
		slot->id = c->next_id++;
		slot->deadline_ms = now + SV_CONTROL_IDLE_MS;
	}
}

static void do_read(struct sv_conn *conn, int64_t now, sv_control_fn fn, void *ctx)
{
	ssize_t n = read(conn->fd, conn->in + conn->in_len, sizeof(conn->in) - 1 - conn->in_len);
	char *nl;

	if (n <= 0) {
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			conn_close(conn);
		return;
	}
	if (conn->dispatched)
		return; /* one request per connection: ignore the rest */
	conn->in_len += (size_t)n;
	conn->in[conn->in_len] = '\0';
	nl = strchr(conn->in, '\n');
	if (!nl) {
		if (conn->in_len == sizeof(conn->in) - 1)
			sv_control_end(conn, false, "request too long");
		return;
	}
	*nl = '\0';
	if (nl > conn->in && nl[-1] == '\r')
		nl[-1] = '\0';
	const char *line = conn->in;
	if (strncmp(line, "json ", 5) == 0) {
		conn->json = true;
		line += 5;
	}
	conn->dispatched = true;
	conn->deadline_ms = now + SV_CONTROL_JOB_MS;
	fn(conn, line, ctx);
}

static void do_write(struct sv_conn *conn)
{
	while (conn->out_len) {
		ssize_t n = send(conn->fd, conn->out, conn->out_len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				conn_close(conn);
			return;
		}
		memmove(conn->out, conn->out + n, conn->out_len - (size_t)n);
		conn->out_len -= (size_t)n;
	}
	if (conn->finished)
		conn_close(conn);
}

void sv_control_handle(struct sv_control *c, const struct pollfd *fds, size_t n, int64_t now,
		       sv_control_fn fn, void *ctx)
{
	if (n > 0 && (fds[0].revents & POLLIN))
		do_accept(c, now);
	for (size_t k = 1; k < n && k <= SV_CONTROL_MAX_CONNS; k++) {
		struct sv_conn *conn = &c->conns[k - 1];

		if (conn->fd < 0 || conn->fd != fds[k].fd)
			continue; /* slot changed since the poll (accepted just now) */
		if (fds[k].revents & (POLLIN | POLLHUP | POLLERR))
			do_read(conn, now, fn, ctx);
		if (conn->fd >= 0 && conn->out_len)
			do_write(conn);
	}
	for (int k = 0; k < SV_CONTROL_MAX_CONNS; k++) {
		struct sv_conn *conn = &c->conns[k];

		if (conn->fd < 0)
			continue;
		if (conn->out_len)
			do_write(conn); /* flush what handlers queued in this round */
		if (conn->fd >= 0 && now >= conn->deadline_ms)
			conn_close(conn);
	}
}

struct sv_conn *sv_control_find(struct sv_control *c, uint64_t id)
{
	for (int k = 0; k < SV_CONTROL_MAX_CONNS; k++)
		if (c->conns[k].fd >= 0 && c->conns[k].id == id)
			return &c->conns[k];
	return NULL;
}

static void append(struct sv_conn *conn, char tag, const char *fmt, va_list ap)
{
	va_list ap2;
	int len;

	if (conn->finished)
		return;
	va_copy(ap2, ap);
	len = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (len < 0)
		return;
	if (conn->out_len + (size_t)len + 3 > conn->out_cap) {
		size_t cap = (conn->out_len + (size_t)len + 3) * 2;
		char *out = realloc(conn->out, cap);

		if (!out)
			return;
		conn->out = out;
		conn->out_cap = cap;
	}
	conn->out[conn->out_len++] = tag;
	vsnprintf(conn->out + conn->out_len, (size_t)len + 1, fmt, ap);
	/* One line per message: a newline inside would break the framing. */
	for (int k = 0; k < len; k++)
		if (conn->out[conn->out_len + (size_t)k] == '\n')
			conn->out[conn->out_len + (size_t)k] = ' ';
	conn->out_len += (size_t)len;
	conn->out[conn->out_len++] = '\n';
}

void sv_control_data(struct sv_conn *conn, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	append(conn, '|', fmt, ap);
	va_end(ap);
}

void sv_control_end(struct sv_conn *conn, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	append(conn, ok ? '+' : '-', fmt, ap);
	va_end(ap);
	conn->finished = true;
}

int sv_control_request(const char *path, const char *request, void (*on_data)(const char *line, void *ctx),
		       void *ctx, char *final, size_t final_size)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[8192];
	size_t len = 0;
	int fd, rc = -EPIPE;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || dprintf(fd, "%s\n", request) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	final[0] = '\0';
	for (;;) {
		ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
		char *line, *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		line = buf;
		while ((nl = strchr(line, '\n'))) {
			*nl = '\0';
			if (line[0] == '|') {
				on_data(line + 1, ctx);
			} else if (line[0] == '+' || line[0] == '-') {
				snprintf(final, final_size, "%s", line + 1);
				rc = line[0] == '+' ? 0 : 1;
				close(fd);
				return rc;
			}
			line = nl + 1;
		}
		len -= (size_t)(line - buf);
		memmove(buf, line, len);
		if (len == sizeof(buf) - 1)
			len = 0; /* a line longer than the buffer: drop it */
	}
	close(fd);
	return rc;
}
