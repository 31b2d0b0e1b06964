/* latency — the latency monitor (LATENCY LATEST/HISTORY/RESET/DOCTOR), as
 * Redis's latency.c: per event a ring of the last LATENCY_SAMPLES one-per-
 * second samples (the worst latency seen in that second) and the all-time
 * maximum. Samples are taken only when latency-monitor-threshold (ms) is
 * non-zero and reached.
 *
 * One monitor per process (like the log), guarded by its own mutex; the
 * threshold check before it is a relaxed load, so a command under the
 * threshold costs no lock. Any thread may call anything here.
 */
#ifndef ZR_LATENCY_H
#define ZR_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct command;
struct obuf;
struct server;

#define LATENCY_SAMPLES 160
#define LATENCY_MAX_EVENTS 32

/* Adds a sample of LATENCY_MS to EVENT (a static string, e.g. "expire-cycle")
 * when the threshold is set and reached. */
void latency_add_sample_if_needed(struct server *srv, const char *event, int64_t latency_ms);
/* Feeds the "command" or "fast-command" event (by CMD's FAST flag) with a
 * command's duration; called from slowlog_record(). */
void latency_record_command(struct server *srv, const struct command *cmd, int64_t duration_us);

/* LATENCY LATEST: [[event, unix time, latest ms, max ms], ...]. */
void latency_reply_latest(struct obuf *o);
/* LATENCY HISTORY event: [[unix time, ms], ...], oldest first. */
void latency_reply_history(struct obuf *o, const char *event, size_t len);
/* Forgets EVENT (NULL = every event); returns how many events were reset. */
int latency_reset(const char *event, size_t len);
/* LATENCY DOCTOR's human-readable report (verbatim text). */
void latency_reply_doctor(struct server *srv, struct obuf *o);

#endif
