/* zconf_units — parsers for the units a cluster file uses: sizes ("12gb",
 * "75%"), durations ("500ms") and core lists ("0-3,6"). Pure functions,
 * callable from any thread. API in zconf.h.
 */
#include "config/zconf.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* Reads a non-negative decimal prefix of S into *V; returns the rest, or
 * NULL when there is no digit or it overflows. */
static const char *parse_digits(const char *s, unsigned long long *v)
{
	unsigned long long n = 0;
	const char *p = s;

	while (isdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(*p - '0');

		if (n > (ULLONG_MAX - d) / 10)
			return NULL;
		n = n * 10 + d;
		p++;
	}
	if (p == s)
		return NULL;
	*v = n;
	return p;
}

int zconf_parse_size(const char *s, unsigned long long total, unsigned long long *out)
{
	static const struct {
		const char *suffix;
		unsigned long long mul;
	} units[] = {
		{ "", 1ULL },
		{ "b", 1ULL },
		{ "k", 1000ULL },
		{ "kb", 1ULL << 10 },
		{ "m", 1000ULL * 1000 },
		{ "mb", 1ULL << 20 },
		{ "g", 1000ULL * 1000 * 1000 },
		{ "gb", 1ULL << 30 },
		{ "t", 1000ULL * 1000 * 1000 * 1000 },
		{ "tb", 1ULL << 40 },
	};
	unsigned long long n;
	const char *rest = parse_digits(s, &n);

	if (!rest)
		return -EINVAL;
	if (strcmp(rest, "%") == 0) {
		if (total == 0 || n > 100)
			return -EINVAL;
		/* Divide first: total * n could overflow for large machines. */
		*out = total / 100 * n + total % 100 * n / 100;
		return 0;
	}
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(rest, units[i].suffix) != 0)
			continue;
		if (n > ULLONG_MAX / units[i].mul)
			return -EINVAL;
		*out = n * units[i].mul;
		return 0;
	}
	return -EINVAL;
}

int zconf_parse_duration_ms(const char *s, long long *out)
{
	static const struct {
		const char *suffix;
		long long mul;
	} units[] = {
		{ "", 1 }, { "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 }, { "h", 3600 * 1000 },
	};
	unsigned long long n;
	const char *rest = parse_digits(s, &n);

	if (!rest || n > (unsigned long long)LLONG_MAX / 3600000)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcasecmp(rest, units[i].suffix) == 0) {
			*out = (long long)n * units[i].mul;
			return 0;
		}
	}
	return -EINVAL;
}

void zconf_format_cores(const cpu_set_t *set, char *buf, size_t size)
{
	size_t len = 0;

	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int end = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		int n = end == c ? snprintf(buf + len, size - len, "%s%d", len ? "," : "", c)
				 : snprintf(buf + len, size - len, "%s%d-%d", len ? "," : "", c, end);
		if (n < 0 || (size_t)n >= size - len)
			return; /* truncated: callers size BUF for realistic lists */
		len += (size_t)n;
		c = end;
	}
}

int zconf_parse_cores(const char *s, cpu_set_t *set, char *norm, size_t normsize)
{
	const char *p = s;

	CPU_ZERO(set);
	for (;;) {
		unsigned long long a, b;

		p = parse_digits(p, &a);
		if (!p || a >= CPU_SETSIZE)
			return -EINVAL;
		b = a;
		if (*p == '-') {
			p = parse_digits(p + 1, &b);
			if (!p || b >= CPU_SETSIZE || b < a)
				return -EINVAL;
		}
		for (unsigned long long c = a; c <= b; c++)
			CPU_SET((int)c, set);
		if (*p == '\0')
			break;
		if (*p != ',')
			return -EINVAL;
		p++;
	}
	zconf_format_cores(set, norm, normsize);
	return 0;
}

unsigned long long zconf_mem_total(void)
{
	long pages = sysconf(_SC_PHYS_PAGES);
	long psize = sysconf(_SC_PAGESIZE);

	if (pages <= 0 || psize <= 0)
		return 0;
	return (unsigned long long)pages * (unsigned long long)psize;
}
