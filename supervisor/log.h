/* log — the supervisor's log lines. They go to stderr, which systemd
 * connects to the journal; each line starts with "<N>" (sd-daemon's
 * priority prefix) so journald files it at the right priority
 * (journalctl -u zaris -p warning works). On a terminal the prefix is
 * replaced by a readable level word. Single-threaded.
 */
#ifndef SV_LOG_H
#define SV_LOG_H

#include <syslog.h>

/* Decides the prefix style once (terminal or not). */
void sv_log_init(void);
/* Logs one line at PRIO (LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG). */
void sv_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
