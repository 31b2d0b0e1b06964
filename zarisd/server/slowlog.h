/* slowlog — the slow log (SLOWLOG GET/LEN/RESET) and the feed of the
 * latency monitor's command events.
 *
 * One struct slowlog per server (srv->slowlog), shared by every worker: a
 * bounded list of the newest entries under its own mutex. The dispatcher
 * calls slowlog_record() after every command with the command's duration;
 * the threshold checks are two relaxed loads, so the common case (fast
 * command) takes no lock. Any thread may call any function here.
 */
#ifndef ZR_SLOWLOG_H
#define ZR_SLOWLOG_H

#include <stdint.h>

struct client;
struct obuf;
struct server;
struct slowlog;

/* Redis's limits on what one entry keeps of a command. */
#define SLOWLOG_ENTRY_MAX_ARGC 32
#define SLOWLOG_ENTRY_MAX_STRING 128

/* An empty slow log. Never NULL (aborts on OOM like every internal allocation). */
struct slowlog *slowlog_create(void);
/* Frees SL and its entries; no thread may use it any more. NULL is fine. */
void slowlog_destroy(struct slowlog *sl);

/* Records C's current command (c->argv, c->cmd) when DURATION_US reaches
 * slowlog-log-slower-than (negative = disabled) and trims the log to
 * slowlog-max-len; copies what it keeps (argv is only borrowed). Also feeds
 * the latency monitor's "command" / "fast-command" events (latency.h).
 * Passwords of AUTH, HELLO ... AUTH and CONFIG SET requirepass are stored
 * as "(redacted)". Called by the owning worker of C, which may hold the
 * command's shard locks: the slow log's lock is a leaf (core/lock_order.h). */
void slowlog_record(struct slowlog *sl, struct server *srv, const struct client *c, int64_t duration_us);

/* Replies SLOWLOG GET's array with the newest COUNT entries (negative = all):
 * each [id, unix time, microseconds, [args...], "ip:port", name]. */
void slowlog_reply(struct slowlog *sl, struct obuf *o, long count);
/* Entries currently held. */
unsigned long slowlog_len(struct slowlog *sl);
/* Drops every entry (ids keep increasing, as in Redis). */
void slowlog_reset(struct slowlog *sl);

#endif
