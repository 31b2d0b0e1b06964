/* net — see net.h. */
#include "zarisd/net/net.h"

#include <errno.h>
#include <liburing.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "zarisd/server/server.h"
#include "zarisd/server/info.h"
#include "zarisd/server/stats.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/thread.h"
#include "zarisd/core/util.h"
#include "zarisd/net/conn.h"
#include "zarisd/net/worker.h"
#include "zarisd/server/client.h"

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

/* server.h's serve_others: C's worker serves its other clients once. */
static void serve_others(struct client *c)
{
	struct conn *conn = c->conn;
	if (conn)
		worker_serve_others(conn->w, conn);
}

static void free_workers(struct worker *workers, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (workers[i].stats) {
			zr_free(workers[i].stats->cmd);
			info_errtable_free(workers[i].stats->errors);
			zr_free(workers[i].stats);
		}
	}
	zr_free(workers);
}

/* The request worker W is busy with, as text for the log: the first 16
 * bytes of its name, unprintable ones as '?'; "" between requests. */
static void busy_with(const struct worker *w, char out[17])
{
	uint64_t name[2] = { atomic_load_explicit(&w->stats->running[0], memory_order_relaxed),
			     atomic_load_explicit(&w->stats->running[1], memory_order_relaxed) };
	memcpy(out, name, 16);
	out[16] = '\0';
	if (!name[0])
		out[0] = '\0';
	for (int i = 0; out[i]; i++)
		if (out[i] < 0x20 || out[i] > 0x7e)
			out[i] = '?';
}

static void log_busy(const struct worker *workers, const bool *joined, unsigned n, bool giving_up)
{
	for (unsigned i = 0; i < n; i++) {
		if (joined[i])
			continue;
		char cmd[17];
		busy_with(&workers[i], cmd);
		if (giving_up)
			zr_log(ZR_LOG_WARNING,
			       "Worker %u is still running %s%s%s after %d s: stopping without it", i,
			       cmd[0] ? "the command '" : "(between commands)", cmd, cmd[0] ? "'" : "",
			       NET_STOP_WAIT_MS / 1000);
		else
			zr_log(ZR_LOG_WARNING, "Waiting for worker %u to stop: it is running %s%s%s", i,
			       cmd[0] ? "the command '" : "(between commands)", cmd, cmd[0] ? "'" : "");
	}
}

/* Joins workers[0..N) within NET_STOP_WAIT_MS, naming in the log after a
 * second those still busy and what with. Returns how many did not stop. */
static unsigned join_workers(struct worker *workers, unsigned n)
{
	bool *joined = zr_calloc(n ? n : 1, sizeof(bool));
	int64_t start = zr_mono_us(), deadline = start + (int64_t)NET_STOP_WAIT_MS * 1000;
	bool told = false;
	unsigned left = n;
	while (left) {
		for (unsigned i = 0; i < n; i++)
			if (!joined[i] && worker_try_join(&workers[i])) {
				joined[i] = true;
				left--;
			}
		int64_t now = zr_mono_us();
		if (left && !told && now - start >= 1000000) {
			log_busy(workers, joined, n, false);
			told = true;
		}
		if (left && now >= deadline) {
			log_busy(workers, joined, n, true);
			break;
		}
		if (left) {
			struct timespec ts = { .tv_sec = 0, .tv_nsec = 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	zr_free(joined);
	return left;
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
	/* main set it before persistence and replication started threads
	 * that read it (server_wake_all); the bench floor did not */
	if (srv->nworkers != nworkers)
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
		w->stats->errors = info_errtable_new();
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
	srv->serve_others = serve_others;

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
	 * stops, any may still wake another through its event fd. One busy
	 * in a long command (DEBUG SLEEP, EXEC of one) is not waited for
	 * beyond the bound: it still runs, so nothing it may touch is freed
	 * (workers, their stats, the wake-up path) and the caller exits. */
	if (join_workers(workers, started))
		return -EBUSY;
	/* the workers' things are this thread's now (core/thread.h) */
	zr_thread_set_worker(ZR_THREAD_ALL_WORKERS);
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
