/* info — the state behind INFO that no other module keeps: the sampler of
 * instantaneous rates (ops/sec, kbps, total and per worker), the baselines
 * that CONFIG RESETSTAT sets (the per-worker counters have one writer each
 * and are never written by another thread, so "reset" means "subtract what
 * they held at the reset"), and the per-error-code counters of the
 * Errorstats section. The INFO handler itself is cmd_info() (handlers.h).
 */
#ifndef ZR_INFO_H
#define ZR_INFO_H

#include <stddef.h>

struct server;

/* Takes one sample of the counters for the instantaneous_* figures; does
 * nothing when called again within 100 ms, so any timer at hz >= 10 may call
 * it. Call from ONE thread only (worker 0's timer); INFO on any worker reads
 * the results. */
void server_cron_sample(struct server *srv);

/* CONFIG RESETSTAT: from now on INFO's cumulative counters (stats,
 * commandstats, errorstats, threads) count from zero; also resets the
 * store's keyspace counters. Any thread. */
void info_reset_stats(struct server *srv);

/* Counts one error reply whose text is MSG (LEN bytes, e.g. "WRONGTYPE
 * Operation ..."): the code is the text up to the first space, as Redis's
 * errorstat_<CODE>. At most 128 distinct codes are kept (Redis's limit);
 * later new codes are dropped. Any thread; takes a mutex (error replies are
 * the rare path). */
void info_count_error(const char *msg, size_t len);

#endif
