/* serve — `zaris-bench --serve`: the floor of the comparison, a RESP
 * responder with no keyspace that answers every command with a canned
 * reply (GET: a bulk string of value_size bytes; PING: +PONG; anything
 * else: +OK). Whatever a server costs above this floor is its keyspace and
 * command work; the floor itself is the cost of the network loop.
 *
 * Two backends:
 *   zarisd  — the floor proper: zarisd's own network loop (zarisd/net/:
 *             same workers, listeners, io backend, parser, output buffers
 *             and send path) with the command execution replaced by the
 *             canned responder (serve_zarisd.c).
 *   standin — a minimal epoll responder in this folder (one loop per
 *             thread, SO_REUSEPORT): a reference for what zarisd's loop
 *             adds over the least a RESP server can do.
 *   auto    — zarisd (the stand-in if the zarisd backend reports -ENOSYS).
 * serve_run() prints one line "serve: backend=NAME port=N threads=T ..."
 * on stdout once it listens, then serves until killed (SIGTERM/SIGINT).
 */
#ifndef ZB_SERVE_H
#define ZB_SERVE_H

#include <stddef.h>

enum serve_backend {
	SERVE_AUTO,
	SERVE_ZARISD,
	SERVE_STANDIN,
};

struct serve_opts {
	const char *bind; /* listen address, e.g. "127.0.0.1" */
	int port;
	unsigned threads;  /* event loops, >= 1 */
	size_t value_size; /* bytes in the canned GET reply */
	enum serve_backend backend;
	const char *cores; /* CPU list loop i is pinned to (zarisd backend), NULL: none */
};

/* Parses "auto", "zarisd", "standin"; -EINVAL otherwise. */
int serve_parse_backend(const char *name);

/* Serves until the process is stopped. Returns -EINTR when a signal ended
 * the serving, else -errno of a failure (-EINVAL: a bad option value),
 * which ERR (ERRLEN bytes) describes when there is more to say than the
 * errno's text; else ERR is "". Prints nothing about it. */
int serve_run(const struct serve_opts *o, char *err, size_t errlen);

/* The zarisd-loop backend (serve_zarisd.c); ERR as serve_run. */
int serve_zarisd_run(const struct serve_opts *o, char *err, size_t errlen);
/* The stand-in backend (serve_standin.c). */
int serve_standin_run(const struct serve_opts *o);

/* The stand-in's canned reply to the request REQ (LEN bytes, one complete
 * RESP array or inline line), written at OUT, which must hold
 * max(GET_LEN, 7) bytes; returns the bytes written. GET_REPLY/GET_LEN is
 * the prebuilt "$N\r\nxxx...\r\n". The zarisd backend answers the same
 * through zarisd's reply API. */
size_t serve_reply(const char *req, size_t len, const char *get_reply, size_t get_len, char *out);

#endif
