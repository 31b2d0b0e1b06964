/* net — runs a server's worker threads: picks the I/O backend, opens each
 * worker's listeners, starts the workers, waits for a reason to stop
 * (SIGTERM, SIGINT, SHUTDOWN) in the calling thread, then joins them.
 * Used by zarisd's main and by zaris-bench --serve (the floor), which runs
 * the same loop with a canned-reply srv->execute.
 */
#ifndef ZR_NET_H
#define ZR_NET_H

#include <signal.h>
#include <stdbool.h>

struct server;
struct net_backend;

/* How long net_serve waits for its workers to stop after a stop request
 * (SIGTERM, SIGINT, SHUTDOWN) before it gives up on those still busy in a
 * command (zarisd/README.md, "Stopping"). */
#define NET_STOP_WAIT_MS 10000

/* IO_BACKEND: 0 auto (io_uring if it can be set up, else epoll, logging
 * why), 1 io_uring, 2 epoll. */
const struct net_backend *net_choose_backend(int io_backend);

/* Blocks the signals net_serve takes (SIGTERM, SIGINT, SIGHUP) in the
 * calling thread and stores their set in *SIGS. Call it before starting
 * any thread: threads inherit the mask, and one that does not block them
 * may take a SIGTERM and die by its default action. */
void net_block_stop_signals(sigset_t *sigs);

/* Runs NWORKERS workers on BACKEND until srv->shutdown; worker i is pinned
 * to CORES[i % NCORES] when NCORES > 0. Fills srv->nworkers, srv->wstats,
 * srv->wake and srv->io_backend. ON_READY is called once every worker
 * listens (may be NULL). Blocks SIGTERM/SIGINT/SIGHUP in every thread and
 * takes them in the caller. Returns 0 after a clean stop, -errno when the
 * listeners or workers could not start (logged), -EBUSY when some worker
 * was still running a command NET_STOP_WAIT_MS after the stop request
 * (logged: which, and the command): it runs on, nothing was freed, and the
 * caller must end the process without freeing what workers use (the
 * server, its store, settings, registry, message queues). */
int net_serve(struct server *srv, const struct net_backend *backend, unsigned nworkers, const int *cores,
	      int ncores, void (*on_ready)(void *arg), void *arg);

#endif
