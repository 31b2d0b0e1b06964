/* log — zarisd's log lines, in redis-server's format:
 *   PID:ROLE DD Mon YYYY HH:MM:SS.mmm LEVEL message
 * where LEVEL is one of '.', '-', '*', '#' (debug, verbose, notice, warning).
 * Lines go to stderr, or to the file set with zr_log_open(). Thread-safe:
 * one write(2) per line, so lines from workers never interleave.
 */
#ifndef ZR_LOG_H
#define ZR_LOG_H

enum zr_log_level {
	ZR_LOG_DEBUG,
	ZR_LOG_VERBOSE,
	ZR_LOG_NOTICE,
	ZR_LOG_WARNING,
};

/* Sets the minimum level written. */
void zr_log_set_level(enum zr_log_level level);
/* Parses "debug|verbose|notice|warning"; returns the level or -EINVAL. */
int zr_log_parse_level(const char *name);
/* Sends lines to PATH (appending) instead of stderr; "" = stderr.
 * Returns 0 or -errno. */
int zr_log_open(const char *path);

void zr_log(enum zr_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
