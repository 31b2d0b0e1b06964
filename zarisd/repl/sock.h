/* repl/sock — the blocking I/O of replication links on sockets that stay
 * non-blocking (a primary's link socket is a duplicate of the worker's
 * descriptor, which shares its flags): every call waits with poll() up to
 * a timeout. Any thread; no state but the caller's.
 */
#ifndef ZR_REPL_SOCK_H
#define ZR_REPL_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A connected, non-blocking TCP socket to HOST:PORT (TCP_NODELAY), or
 * -errno (-ETIMEDOUT after TIMEOUT_MS). */
int sock_connect(const char *host, int port, int timeout_ms);
/* Sends all N bytes; 0, or -ETIMEDOUT (no progress for TIMEOUT_MS) or
 * -errno. */
int sock_send_all(int fd, const void *p, size_t n, int timeout_ms);
/* sock_send_all that, while the peer does not read, asks GIVE_UP(CTX)
 * every 100 ms and returns -ECANCELED once it says true. */
int sock_send_all_or(int fd, const void *p, size_t n, int timeout_ms, bool (*give_up)(void *ctx), void *ctx);
/* Receives what is there (up to N bytes), waiting up to TIMEOUT_MS for
 * something: the byte count, -ETIMEDOUT, -ECONNRESET at the peer's end,
 * or -errno. TIMEOUT_MS 0: does not wait (-EAGAIN when nothing is there). */
ssize_t sock_recv(int fd, void *p, size_t n, int timeout_ms);
/* Sends the command ARGV[0..ARGC) as a RESP array of bulk strings. */
int sock_command(int fd, int timeout_ms, int argc, const char *const *argv);

/* Bytes received and not yet used (the handshake reads lines, the rest
 * is the stream's). */
struct sockbuf {
	char *p;
	size_t len, cap;
};
void sockbuf_free(struct sockbuf *b);
/* Drops the first N bytes. */
void sockbuf_consume(struct sockbuf *b, size_t n);
/* Receives into B (up to WANT more bytes): as sock_recv. */
ssize_t sockbuf_fill(struct sockbuf *b, int fd, size_t want, int timeout_ms);
/* Reads one CRLF-ended line into LINE (NUL-terminated, CRLF dropped,
 * truncated to CAP - 1), consumed from B. 0, -EPROTO (a line over 64 KiB)
 * or sock_recv's error. */
int sockbuf_line(struct sockbuf *b, int fd, int timeout_ms, char *line, size_t cap);

#endif
