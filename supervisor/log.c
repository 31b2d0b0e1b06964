/* log — see log.h. */
#include "supervisor/log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <unistd.h>

static bool log_tty;

void sv_log_init(void)
{
	log_tty = isatty(STDERR_FILENO);
}

void sv_log(int prio, const char *fmt, ...)
{
	static const char *const words[] = { "emerg",	"alert",  "crit", "error",
					     "warning", "notice", "info", "debug" };
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	prio &= 7;
	/* One write per line so lines from zarisd children (sharing stderr)
	 * never interleave inside ours. */
	if (log_tty)
		dprintf(STDERR_FILENO, "zaris-supervisor: %s: %s\n", words[prio], line);
	else
		dprintf(STDERR_FILENO, "<%d>zaris-supervisor: %s\n", prio, line);
}
