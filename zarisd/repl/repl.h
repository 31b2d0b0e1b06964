/* repl — built-in replication: this server as a primary (each replica's
 * link: a full sync from a fork-less snapshot streamed over the socket,
 * or a partial resync from the change stream's ring, then the stream),
 * as a replica (REPLICAOF: one link thread that syncs, applies its
 * primary's records and acknowledges them), WAIT, replica-ack and
 * min-replicas-to-write, INFO replication and ROLE. Redis's surface over
 * zarisd's own stream (journal/stream.h, journal/format.h).
 *
 * The wire, after Redis's handshake (PING, AUTH masterauth, REPLCONF
 * listening-port, REPLCONF capa, PSYNC <replid> <offset+1>):
 *   "+FULLRESYNC <replid> <offset>\r\n", a snapshot (journal/format.h's
 *   snapshot file, header to JR_SNAP_END), then the stream; or
 *   "+CONTINUE <replid>\r\n", then the stream from the asked offset.
 *   The stream is the change stream's frames as they are (JR_CMD,
 *   JR_COMMIT: seq, version, transaction id), byte for byte, so a replica's
 *   offsets and seqs are its primary's; an 8-byte frame header of length
 *   0 is a heartbeat (every repl-ping-replica-period), in no offset.
 *   The replica answers "REPLCONF ACK <offset> SEQ <seq>" after each batch it
 *   applied and every second: the offset and seq of the last record it
 *   applied (all before it applied too).
 *
 * Offsets are the change stream's (bytes appended since the stream was
 * made; Redis's master_repl_offset); the ring is the backlog. A replica
 * takes its primary's replication id; REPLICAOF NO ONE keeps it as the
 * second id, with the offset, so its former siblings continue with a
 * partial resync (PSYNC2).
 *
 * Replica-ack (replica-ack N): propagate raises a writing client's
 * repl_seq; its replies are held (net/worker.c) until srv->repl_acked,
 * the Nth highest seq acknowledged, reaches it, or fail after
 * replica-ack-timeout. WAIT blocks its client until enough replicas
 * acknowledged the client's last write, or its timeout.
 *
 * Threads: the functions below from any worker; each link runs on
 * threads of its own; a timer thread (every 100 ms) does WAIT's timeouts
 * and min-replicas' count. One mutex guards the state; under it only the
 * change stream's and server_post/server_wake's leaf mutexes are taken
 * (core/lock_order.h).
 */
#ifndef ZR_REPL_H
#define ZR_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct server;
struct client;
struct obuf;
struct textbuf;
struct load_apply;

struct repl;

/* main, after the data loaded and before the workers start: the state
 * for SRV (borrowed, outlives it); APPLY runs a replica's records
 * (commands/replay_apply.h through persist/load.h's table; copied);
 * a full sync loads with LOAD_THREADS threads. Starts no link: main
 * stores it in srv->repl, then calls repl_start. */
struct repl *repl_create(struct server *srv, const struct load_apply *apply, unsigned load_threads);
/* Starts the timer and, when `replicaof` is set, the link (their threads
 * read srv->repl). */
void repl_start(struct repl *r);
/* main, after the workers stopped: ends every link and thread; frees R. */
void repl_destroy(struct repl *r);

/* REPLICAOF HOST PORT (HOST NULL: NO ONE). Returns 0 (+OK), 1 (already
 * its replica: +OK Already connected to specified master) or -EINVAL with
 * the error in ERR (REPLICAOF to itself). */
int repl_replicaof(struct repl *r, const char *host, int port, char *err, size_t errlen);

/* PSYNC REPLID OFFSET (SYNC: "?" -1) from client C, whose socket FD
 * (a duplicate, now owned here) becomes a replica's link: the reply and
 * all that follows is sent from the link's threads. LISTEN_PORT: its
 * REPLCONF listening-port (0 = none). Returns 0, or -errno (FD closed). */
int repl_attach(struct repl *r, int fd, const char *peer_ip, int listen_port, const char *replid,
		long long offset);

/* WAIT NUMREPLICAS TIMEOUT_MS for client C: replies now when enough
 * replicas acknowledged C's last write (or none needed), else blocks C
 * (CLIENT_BLOCKED) until they do or the timeout passes (0 = never) and
 * replies then, on C's worker. */
void repl_wait(struct repl *r, struct client *c, long long numreplicas, long long timeout_ms);
/* C is going away: forgets its WAIT. */
void repl_client_gone(struct repl *r, struct client *c);

/* ROLE's reply. */
void repl_role(struct repl *r, struct obuf *out);
/* INFO's replication section (its body), and INFO stats' sync_full,
 * sync_partial_ok, sync_partial_err (R NULL: zeros). */
void repl_info(struct repl *r, struct textbuf *t);
void repl_sync_counts(struct repl *r, uint64_t out[3]);
/* The replication ids: master_replid (41 bytes with the NUL). */
void repl_replid(struct repl *r, char out[41]);

#endif
