/* procstat — see procstat.h. */
#include "bench/procstat.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int procstat_cpu_us(pid_t pid, uint64_t *out)
{
	char path[64], buf[1024], *p, *save = NULL;
	unsigned long long utime = 0, stime = 0;
	long hz = sysconf(_SC_CLK_TCK);
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	/* The command name (field 2) may hold blanks and parentheses; the
	 * last ')' ends it, and field 3 follows. */
	p = strrchr(buf, ')');
	if (!p)
		return -EIO;
	field = 3;
	for (p = strtok_r(p + 1, " ", &save); p; p = strtok_r(NULL, " ", &save), field++) {
		if (field == 14)
			utime = strtoull(p, NULL, 10);
		if (field == 15) {
			stime = strtoull(p, NULL, 10);
			break;
		}
	}
	if (field != 15 || hz <= 0)
		return -EIO;
	*out = (utime + stime) * 1000000ULL / (unsigned long long)hz;
	return 0;
}

uint64_t procstat_self_cpu_us(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000ULL +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}
