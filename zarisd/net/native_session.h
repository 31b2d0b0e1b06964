/* native_session — the native binary protocol (zarisd/proto/PROTOCOL.md)
 * as a protocol session (conn.h's struct proto_ops) on `native-port`.
 *
 * A session is a struct client like RESP's (session_client.h: the same
 * admission rules, registry entry, output limits, CLIENT LIST/KILL), so
 * every operation runs through the dispatcher as its Redis equivalent
 * (native_req.h turns it into that command's argv): statistics, OOM,
 * cluster routing, the journal and replication, pauses all apply as on
 * RESP. The replies are RESP3, inside result headers and RESPONSE frames
 * this session writes around them.
 *
 * With native-rf1 (RF1: one copy, no log, no replicas) a request's
 * single-key operations run grouped by shard, one lock per shard per
 * request (dispatch_batch), and make no journal record.
 *
 * A frame that breaks the protocol gets GOODBYE with the reason and the
 * connection closes after what was queued before it (logged at verbose,
 * counted in INFO's total_native_protocol_errors). A request's frame is
 * checked whole before its first operation runs. Worker thread only.
 */
#ifndef ZR_NATIVE_SESSION_H
#define ZR_NATIVE_SESSION_H

#include "zarisd/net/conn.h"

/* The native listener protocol (the listener table, worker.c). */
extern const struct proto_ops native_session_ops;

#endif
