/* notify — what the supervisor tells systemd through sd_notify: READY=1
 * once every local instance answers, STATUS= a one-line summary (sent only
 * when it changes), WATCHDOG=1 from the poll loop itself (so it stops when
 * the loop stops turning), RELOADING=1 / READY=1 around reloads and
 * STOPPING=1. Without NOTIFY_SOCKET every call is a no-op. Single-threaded.
 */
#ifndef SV_NOTIFY_H
#define SV_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>

struct sv_notify {
	int64_t watchdog_ms;	  /* WATCHDOG_USEC / 1000, 0 = no watchdog */
	int64_t next_watchdog_ms; /* when the loop owes the next WATCHDOG=1 */
	char status[256];	  /* last STATUS= sent */
};

/* Reads WATCHDOG_USEC (for this pid) and prepares N. */
void sv_notify_init(struct sv_notify *n, int64_t now_ms);
/* STATUS=TEXT, only if it differs from the last one sent. */
void sv_notify_status(struct sv_notify *n, const char *text);
void sv_notify_ready(struct sv_notify *n);
/* RELOADING=1 with MONOTONIC_USEC (systemd >= 253 wants it). */
void sv_notify_reloading(struct sv_notify *n);
void sv_notify_stopping(struct sv_notify *n);
/* Sends WATCHDOG=1 if due at NOW; call once per loop iteration. */
void sv_notify_tick(struct sv_notify *n, int64_t now_ms);
/* Milliseconds until the next WATCHDOG=1 is due (INT64_MAX without one). */
int64_t sv_notify_next(const struct sv_notify *n);

#endif
