/* net — see net.h. */
#include "zarisd/net/net.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "zarisd/commands/server.h"
#include "zarisd/commands/stats.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/net/worker.h"

/* Whether this kernel (and sandbox) lets us set up an io_uring with the
 * operations the backend needs; logs why not. */
static bool uring_usable(void)
{
	struct io_uring ring;
	int rc = io_uring_queue_init(8, &ring, 0);
	if (rc < 0) {
		zr_log(ZR_LOG_WARNING, "io_uring unavailable (%s): using the epoll backend", strerror(-rc));
		return false;
	}
	struct io_uring_probe *probe = io_uring_get_probe_ring(&ring);
	bool ok = probe && io_uring_opcode_supported(probe, IORING_OP_RECV) &&
		  io_uring_opcode_supported(probe, IORING_OP_ACCEPT) &&
		  io_uring_opcode_supported(probe, IORING_OP_SEND) &&
		  io_uring_opcode_supported(probe, IORING_OP_PROVIDE_BUFFERS);
	if (probe)
		io_uring_free_probe(probe);
	io_uring_queue_exit(&ring);
	if (!ok)
		zr_log(ZR_LOG_WARNING,
		       "io_uring lacks accept/recv/send/provided buffers: using the epoll backend");
	return ok;
}

const struct net_backend *net_choose_backend(int io_backend)
{
	if (io_backend == 1 || (io_backend == 0 && uring_usable()))
		return &net_backend_uring;
	return &net_backend_epoll;
}

static void wake_worker(void *ctx, unsigned index)
{
	struct worker *workers = ctx;
	worker_wake(&workers[index]);
}

static void free_workers(struct worker *workers, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (workers[i].stats) {
			zr_free(workers[i].stats->cmd);
			zr_free(workers[i].stats);
		}
	}
	zr_free(workers);
}

void net_block_stop_signals(sigset_t *sigs)
{
	sigemptyset(sigs);
	sigaddset(sigs, SIGTERM);
	sigaddset(sigs, SIGINT);
	sigaddset(sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, sigs, NULL);
}

int net_serve(struct server *srv, const struct net_backend *backend, unsigned nworkers, const int *cores,
	      int ncores, void (*on_ready)(void *arg), void *arg)
{
	struct worker *workers = zr_calloc(nworkers, sizeof(struct worker));
	srv->wstats = zr_calloc(nworkers, sizeof(struct worker_stats *));
	srv->nworkers = nworkers;
	srv->io_backend = backend->name;
	int rc = 0;
	unsigned started = 0;
	for (unsigned i = 0; i < nworkers; i++) {
		struct worker *w = &workers[i];
		w->index = i;
		w->srv = srv;
		w->backend = backend;
		w->event_fd = -1;
		w->cpu = ncores > 0 ? cores[i % (unsigned)ncores] : -1;
		w->stats = zr_calloc(1, sizeof(struct worker_stats));
		w->stats->cmd =
			zr_calloc(command_table_size() ? command_table_size() : 1, sizeof(struct cmd_stat));
		w->stats->worker = i;
		srv->wstats[i] = w->stats;
		rc = worker_listen(w);
		if (rc < 0)
			goto out_close;
	}
	/* set before any worker runs (every event fd exists by now): commands
	 * and the log writer may wake workers from the start */
	pthread_rwlock_wrlock(&srv->wake_lock);
	srv->wake_ctx = workers;
	srv->wake = wake_worker;
	pthread_rwlock_unlock(&srv->wake_lock);

	/* Signals are taken by this thread alone, synchronously; workers
	 * inherit the blocked mask (zarisd's main blocked them already,
	 * before its first thread; the floor's has none before this). */
	sigset_t sigs;
	net_block_stop_signals(&sigs);
	signal(SIGPIPE, SIG_IGN);

	for (; started < nworkers; started++) {
		rc = worker_start(&workers[started]);
		if (rc < 0) {
			zr_log(ZR_LOG_WARNING, "cannot start worker %u: %s", started, strerror(-rc));
			server_request_shutdown(srv);
			break;
		}
	}
	if (rc == 0 && on_ready)
		on_ready(arg);
	while (!atomic_load_explicit(&srv->shutdown, memory_order_acquire)) {
		struct timespec ts = { .tv_sec = 0, .tv_nsec = 100 * 1000 * 1000 };
		int sig = sigtimedwait(&sigs, NULL, &ts);
		if (sig == SIGTERM || sig == SIGINT) {
			zr_log(ZR_LOG_WARNING, "Received %s scheduling shutdown...",
			       sig == SIGTERM ? "SIGTERM" : "SIGINT");
			server_request_shutdown(srv);
		} else if (sig == SIGHUP) {
			zr_log(ZR_LOG_NOTICE,
			       "Received SIGHUP: zarisd has nothing to reload (the supervisor reloads)");
		}
	}
	server_wake_all(srv);
	/* Join every worker before closing anything: until the last one
	 * stops, any may still wake another through its event fd. */
	for (unsigned i = 0; i < started; i++)
		worker_join(&workers[i]);
	for (unsigned i = 0; i < started; i++)
		worker_drop_conns(&workers[i]);
	/* after this no thread (the log writer included) can reach an event
	 * fd: server_wake holds the read side while it calls wake */
	pthread_rwlock_wrlock(&srv->wake_lock);
	srv->wake = NULL;
	srv->wake_ctx = NULL;
	pthread_rwlock_unlock(&srv->wake_lock);
	for (unsigned i = 0; i < started; i++)
		worker_destroy(&workers[i]);
out_close:
	for (unsigned i = started; i < nworkers; i++)
		worker_close_listeners(&workers[i]);
	free_workers(workers, nworkers);
	ZR_FREE(srv->wstats);
	return rc;
}
