/* runner — what zaris-bench's two load engines (loadgen: RESP over epoll,
 * native_load: the native protocol through libzaris) share around their
 * event loops: the worker threads and their start barrier, each worker's
 * slice of the key space and of the request budget, the counters a worker
 * publishes, the control thread (a progress line each second, the stop at
 * the deadline), the CPU accounting of the client and the servers, and the
 * sum of the workers' results.
 *
 * An engine's worker struct begins with a struct run_worker, so that
 * run_load() can walk the engine's array of them by its element size. The
 * engine fills its workers (run_worker_init() for the shared part), then
 * run_load() starts one thread per worker on the engine's WORKER_MAIN, which
 * connects, calls run_worker_ready() (the start barrier: every worker
 * connected or failed before the clock starts), runs its loop until
 * run_should_stop() and its drain, frees its connections and ends with
 * run_worker_done().
 *
 * Threads: run_load()'s caller is the control thread. It reads only the
 * published counters (relaxed atomics: a progress line orders nothing) and
 * `finished`, and sets the stop flag; everything else of a worker is the
 * worker's alone until pthread_join(), which orders the final reads.
 */
#ifndef ZB_RUNNER_H
#define ZB_RUNNER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench/keygen.h"
#include "bench/loadgen.h"

struct run_shared; /* run_load()'s: the start barrier and the stop flag */

struct run_worker {
	pthread_t tid;
	const struct lg_config *cfg; /* borrowed for the run */
	struct run_shared *sh;	     /* set by run_load() */
	unsigned idx;		     /* 0 .. cfg->threads - 1 */
	struct keygen kg;	     /* this worker's slice of the key space */
	uint64_t budget;	     /* requests this worker may send */
	struct lg_result r;	     /* this worker's totals (hist included) */
	bool have_error;	     /* r.first_error is set */
	int start_err;		     /* -errno when connecting failed */
	/* published for the progress line, relaxed: */
	_Atomic uint64_t pub_ops;
	_Atomic uint64_t pub_errors;
	_Atomic uint64_t pub_lat_ns;
	_Atomic bool finished;
};

/* Worker IDX of CFG: its key stream (the slice [IDX*K/T, (IDX+1)*K/T) of
 * the key space K, seeded from cfg->seed and IDX, so a given --seed draws
 * the same keys; all of it when the slice is empty), its share of
 * cfg->requests (unbounded for a timed run) and an empty result. Returns
 * 0 or keygen_init()'s -errno. */
int run_worker_init(struct run_worker *w, const struct lg_config *cfg, unsigned idx);

/* How many of N things (connections) worker IDX of T gets: N / T, one
 * more for the first N % T workers. */
unsigned run_share(unsigned n, unsigned idx, unsigned t);

/* Slice I of T over [0, N): its first element, I * N / T without
 * overflow. */
uint64_t run_slice_lo(uint64_t n, unsigned i, unsigned t);

/* Starts cfg->threads threads on WORKER_MAIN, each given the address of
 * its worker; WORKERS is the engine's array, STRIDE its element size (each
 * element begins with a struct run_worker). Waits at the start barrier,
 * runs the control thread until every worker finished, joins them and
 * sums their results into RES (reset first; server_cpu_us -1 when the
 * servers' CPU could not be read at both ends). Returns 0 when the run
 * took place (a worker that could not connect counts one conn_error), or
 * the last worker's start_err when none connected. */
int run_load(const struct lg_config *cfg, void *workers, size_t stride, void *(*worker_main)(void *),
	     struct lg_result *res);

/* In a worker's thread: the start barrier; START_ERR (0 or -errno) is
 * what connecting gave. */
void run_worker_ready(struct run_worker *w, int start_err);

/* In a worker's thread, last: the control thread may stop waiting for it. */
void run_worker_done(struct run_worker *w);

/* Whether the control thread asked the workers to stop (the deadline). */
bool run_should_stop(const struct run_worker *w);

/* Publishes W's ops, errors (connection errors included) and latency sum
 * for the progress line. */
void run_publish(struct run_worker *w);

/* Keeps the first error of W's run: FMT holds one "%.*s", given WHAT's
 * LEN bytes. Later errors are only counted by the engine. */
void run_note_error(struct run_worker *w, const char *fmt, const char *what, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t run_now_ns(void);

#endif
