/* control — the supervisor's unix control socket and its line protocol,
 * both sides: the server half lives in the supervisor's poll loop, the
 * client half is what zarisctl uses.
 *
 * Protocol (one request per connection, text lines ending in "\n"):
 *   request:   [json ]COMMAND [ARG]\n
 *              COMMAND: status | reload | restart NAME | stop NAME |
 *                       start NAME | rolling-restart
 *              "json " asks for JSON data lines instead of text.
 *   reply:     any number of data lines "|<text>\n" (text or one JSON
 *              object per line), then exactly one final line:
 *              "+<message>\n" (success) or "-<message>\n" (failure);
 *              the server closes the connection after it. Long jobs
 *              (rolling-restart, a reload that restarts instances) stream a
 *              data line per step before the final line.
 *
 * Access: the socket is created mode 0660, owned by root and the `zaris`
 * group when that group exists; peers whose uid is neither 0 nor ours and
 * whose gid is not that group are also refused via SO_PEERCRED.
 */
#ifndef SV_CONTROL_H
#define SV_CONTROL_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SV_CONTROL_DEFAULT_PATH "/run/zaris/supervisor.sock"
#define SV_CONTROL_MAX_CONNS 16

struct sv_conn {
	int fd;	     /* -1: free slot */
	uint64_t id; /* unique per connection, so late job output never
				* reaches a reused slot */
	char in[512];
	size_t in_len;
	char *out;
	size_t out_len, out_cap;
	bool json;	     /* the request asked for JSON */
	bool finished;	     /* final line queued: close once flushed */
	bool dispatched;     /* the request line was handed to the handler */
	int64_t deadline_ms; /* idle connections are closed after this */
};

struct sv_control {
	int listen_fd;
	char *path;
	uint64_t next_id;
	struct sv_conn conns[SV_CONTROL_MAX_CONNS];
};

/* Called once per request with the command line (without "json ").
 * The handler answers through sv_control_data/sv_control_end now, or later
 * (keeping the conn id) for long jobs. */
typedef void (*sv_control_fn)(struct sv_conn *conn, const char *line, void *ctx);

/* Creates the socket at PATH (replacing a stale one, creating the parent
 * directory mode 0755). Returns 0 or -errno. */
int sv_control_listen(struct sv_control *c, const char *path);
void sv_control_close(struct sv_control *c);

/* Appends this module's fds to FDS (at most SV_CONTROL_MAX_CONNS + 1);
 * returns how many. */
size_t sv_control_pollfds(struct sv_control *c, struct pollfd *fds);
/* Handles whatever poll reported on those fds (same order as returned by
 * sv_control_pollfds), calling FN for complete requests. */
void sv_control_handle(struct sv_control *c, const struct pollfd *fds, size_t n, int64_t now,
		       sv_control_fn fn, void *ctx);

/* The live connection with ID, or NULL when it has gone. */
struct sv_conn *sv_control_find(struct sv_control *c, uint64_t id);
/* Queues a data line. */
void sv_control_data(struct sv_conn *conn, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Queues the final line (+ when OK, - otherwise); the connection closes
 * when it is flushed. */
void sv_control_end(struct sv_conn *conn, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Client side: sends REQUEST (one line, no newline) to the socket at PATH and
 * calls ON_DATA for each data line (without "|") as it arrives; returns 0
 * when the final line was "+", 1 when "-" (its text in FINAL), -errno when
 * the supervisor cannot be reached or the stream broke. */
int sv_control_request(const char *path, const char *request, void (*on_data)(const char *line, void *ctx),
		       void *ctx, char *final, size_t final_size);

#endif
