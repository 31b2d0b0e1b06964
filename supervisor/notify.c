/* notify — see notify.h. The watchdog is pinged at half its period, as
 * sd_watchdog_enabled(3) recommends. */
#include "supervisor/notify.h"

#include <stdio.h>
#include <string.h>
#include <systemd/sd-daemon.h>
#include <time.h>

void sv_notify_init(struct sv_notify *n, int64_t now_ms)
{
	uint64_t usec = 0;

	memset(n, 0, sizeof(*n));
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0)
		n->watchdog_ms = (int64_t)(usec / 1000 / 2) ? (int64_t)(usec / 1000 / 2) : 1;
	n->next_watchdog_ms = now_ms;
}

void sv_notify_status(struct sv_notify *n, const char *text)
{
	if (strcmp(n->status, text) == 0)
		return;
	snprintf(n->status, sizeof(n->status), "%s", text);
	sd_notifyf(0, "STATUS=%s", n->status);
}

void sv_notify_ready(struct sv_notify *n)
{
	sd_notifyf(0, "READY=1\nSTATUS=%s", n->status);
}

void sv_notify_reloading(struct sv_notify *n)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
		   (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000);
}

void sv_notify_stopping(struct sv_notify *n)
{
	sd_notify(0, "STOPPING=1");
}

void sv_notify_tick(struct sv_notify *n, int64_t now_ms)
{
	if (!n->watchdog_ms || now_ms < n->next_watchdog_ms)
		return;
	sd_notify(0, "WATCHDOG=1");
	n->next_watchdog_ms = now_ms + n->watchdog_ms;
}

int64_t sv_notify_next(const struct sv_notify *n)
{
	return n->watchdog_ms ? n->next_watchdog_ms : INT64_MAX;
}
