/* log — see log.h. */
#include "zarisd/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = ZR_LOG_NOTICE;
static _Atomic int log_fd = STDERR_FILENO;

void zr_log_set_level(enum zr_log_level level)
{
	atomic_store_explicit(&log_level, level, memory_order_relaxed);
}

int zr_log_parse_level(const char *name)
{
	static const char *names[] = { "debug", "verbose", "notice", "warning" };
	for (int i = 0; i < 4; i++)
		if (!strcasecmp(name, names[i]))
			return i;
	return -EINVAL;
}

int zr_log_open(const char *path)
{
	int fd = STDERR_FILENO;
	if (path && *path) {
		fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (fd < 0)
			return -errno;
	}
	int old = atomic_exchange_explicit(&log_fd, fd, memory_order_acq_rel);
	if (old != STDERR_FILENO)
		close(old);
	return 0;
}

void zr_log(enum zr_log_level level, const char *fmt, ...)
{
	if ((int)level < atomic_load_explicit(&log_level, memory_order_relaxed))
		return;
	char line[1024];
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	localtime_r(&tv.tv_sec, &tm);
	int n = snprintf(line, sizeof(line), "%d:M ", (int)getpid());
	n += (int)strftime(line + n, sizeof(line) - (size_t)n, "%d %b %Y %H:%M:%S", &tm);
	n += snprintf(line + n, sizeof(line) - (size_t)n, ".%03d %c ", (int)(tv.tv_usec / 1000),
		      ".-*#"[level]);
	va_list ap;
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (m < 0) ? n : (n + m > (int)sizeof(line) - 2 ? (int)sizeof(line) - 2 : n + m);
	line[n++] = '\n';
	ssize_t w = write(atomic_load_explicit(&log_fd, memory_order_relaxed), line, (size_t)n);
	(void)w; /* nowhere left to report a failed log write */
}
