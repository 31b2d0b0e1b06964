/* session_client — what every protocol session that serves commands (RESP,
 * native) does with its struct client: the admission rules (maxclients,
 * protected mode), creating it for an accepted conn (addresses, loopback,
 * registry, the conn's pointers into it), freeing it, its output limits
 * (Redis's normal and pubsub classes), and the fields other workers read
 * (CLIENT LIST). Worker thread only.
 */
#ifndef ZR_SESSION_CLIENT_H
#define ZR_SESSION_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

struct conn;
struct client;
struct worker;

/* Why the socket FD accepted by W must be refused, as Redis's error text
 * without the '-' and CRLF, or NULL when it may be served; counts
 * rejected_connections for maxclients. */
const char *session_client_refusal(struct worker *w, int fd);

/* Sets up CL (inside C's session) for C's accepted socket and registers
 * it; C's out, activity, durable and replication pointers then point
 * into CL. */
void session_client_open(struct conn *c, struct client *cl);
/* Unregisters CL and frees what it holds (commands-layer state, output,
 * name). */
void session_client_close(struct conn *c, struct client *cl);

/* proto_ops.output_ok for a session whose client is CL. */
bool session_client_output_ok(struct conn *c, struct client *cl, int64_t now_ms);

/* proto_ops.tick for a session whose client is CL and whose requests a
 * pause may hold (*HELD): a CLIENT KILL closes it, a pause's end resumes
 * it (session_client_tick_paused); on the timer (TIMER) a stalled
 * backpressure hold is given up (conn_check_stall), an idle client is
 * closed (`timeout`), and the shared fields are published. False closes
 * C. */
bool session_client_tick(struct conn *c, struct client *cl, bool timer, bool *held, unsigned *paused);

#endif
