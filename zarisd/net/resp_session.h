/* resp_session — RESP as a protocol session (conn.h's struct proto_ops):
 * the request parser and the commands layer's struct client of one
 * accepted connection. consume() parses every complete request of a
 * received batch (straight out of the kernel's bytes when nothing is
 * buffered), prefetches their keys, runs each through srv->execute and
 * leaves the replies in client.out, which is the transport's output.
 * Requests it holds stay unconsumed in the transport's receive buffer:
 * those after a CLIENT PAUSE, a blocked pop, or a backpressure hold.
 *
 * The session also carries RESP's client rules: maxclients and protected
 * mode refuse a socket before its conn exists (admit), the normal and
 * pubsub classes' output limits, idle timeouts, CLIENT KILL, and the
 * fields CLIENT LIST reads from other workers. Worker thread only.
 */
#ifndef ZR_RESP_SESSION_H
#define ZR_RESP_SESSION_H

#include "zarisd/net/conn.h"

/* The RESP listener protocol (the listener table, worker.c). */
extern const struct proto_ops resp_session_ops;

#endif
