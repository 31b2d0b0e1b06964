/* info — the state behind INFO that no other module keeps: the sampler of
 * instantaneous rates (ops/sec, kbps, total and per worker), the baselines
 * that CONFIG RESETSTAT sets (the per-worker counters have one writer each
 * and are never written by another thread, so "reset" means "subtract what
 * they held at the reset"), and the per-error-code counters of the
 * Errorstats section (below). The INFO handler that formats them is cmd_info()
 * (commands/cmd_info.c).
 */
#ifndef ZR_INFO_H
#define ZR_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "zarisd/server/stats.h"

struct server;
struct textbuf;

/* The per-worker counters of struct worker_stats, by index. */
enum info_stat {
#define INFO_STAT_ENUM(name) INFO_STAT_##name,
	WORKER_STATS_FIELDS(INFO_STAT_ENUM)
#undef INFO_STAT_ENUM
	INFO_STAT_COUNT
};
/* Each counter's field name, as the Threads section shows it. */
extern const char *const info_stat_name[INFO_STAT_COUNT];

/* One command's counters, summed over the workers. */
struct info_cmd_counts {
	uint64_t calls, usec, rejected_calls, failed_calls;
};

/* The instantaneous rates the sampler keeps. */
enum info_rate {
	INFO_RATE_OPS,
	INFO_RATE_NET_IN,
	INFO_RATE_NET_OUT,
	INFO_RATE_COUNT
};

/* Takes one sample of the counters for the instantaneous_* figures; does
 * nothing when called again within 100 ms, so any timer at hz >= 10 may call
 * it. Call from ONE thread only (worker 0's timer, through srv->cron_sample);
 * INFO on any worker reads the results. */
void info_sample(struct server *srv);
/* The average per second of METRIC over the last samples; 0 before the
 * first two samples. Any thread. */
uint64_t info_rate_total(enum info_rate metric);
/* Worker W's commands per second, as info_rate_total. Any thread. */
uint64_t info_rate_worker(unsigned w);

/* Worker W's counters since the last CONFIG RESETSTAT (connected_clients,
 * a gauge, as it is) into OUT. Any thread. */
void info_worker_counters(struct server *srv, unsigned w, uint64_t out[INFO_STAT_COUNT]);
/* The sum of info_worker_counters over every worker, and the replayed
 * commands' errors (info_count_replayed_error). Any thread. */
void info_total_counters(struct server *srv, uint64_t out[INFO_STAT_COUNT]);
/* Command ID's counters since the last CONFIG RESETSTAT into OUT. Any
 * thread. */
void info_cmd_counters(struct server *srv, unsigned id, struct info_cmd_counts *out);

/* CONFIG RESETSTAT: from now on INFO's cumulative counters (stats,
 * commandstats of the NCMDS commands of the table, errorstats, threads)
 * count from zero; also resets the store's keyspace counters. Any thread. */
void info_reset_stats(struct server *srv, unsigned ncmds);

/* --- Errorstats ---------------------------------------------------------
 *
 * Each worker counts its error replies by code in a table of its own
 * (struct worker_stats.errors), under a mutex of its own that only INFO
 * and CONFIG RESETSTAT contend for. A server-wide registry (its own mutex;
 * taken before a table's) holds the distinct codes seen since the last
 * RESETSTAT, every code of every table among them: a worker takes it only
 * for a code its table lacks. As Redis (7.4, which added the limit to stop
 * redis.error_reply with ever new codes from growing the table), a 129th
 * distinct code disables the section until CONFIG RESETSTAT: the codes
 * are logged, the counts dropped and the section shows
 * errorstat_ERRORSTATS_DISABLED:count=1. (Redis 7.0 has no limit.) */

/* A worker's table, empty; freed by info_errtable_free. */
struct info_errtable *info_errtable_new(void);
void info_errtable_free(struct info_errtable *t);

/* Counts one error reply of code CODE (LEN bytes, as reply_error_code
 * gives it) in WS's table; nothing when WS has none. Only WS's worker
 * calls it. */
void info_count_error(struct worker_stats *ws, const char *code, size_t len);

/* Counts one error reply of a command replayed from the primary's
 * stream or this server's log (Redis's errors sent to the master or the
 * AOF client): total_error_replies, errorstats and
 * unexpected_error_replies. Any thread. */
void info_count_replayed_error(const char *code, size_t len);

/* Appends the Errorstats section's lines ("errorstat_<CODE>:count=N",
 * summed over the workers) to T, the codes in Redis's order (byte-wise,
 * its radix tree's) and with its substitutions ('#', ':', CR, LF as '_').
 * Any thread. */
void info_errorstats_write(struct server *srv, struct textbuf *t);

#endif
