/* serve — backend choice and the canned replies; see serve.h. */
#include "bench/serve.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

int serve_parse_backend(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return SERVE_AUTO;
	if (strcmp(name, "zarisd") == 0)
		return SERVE_ZARISD;
	if (strcmp(name, "standin") == 0)
		return SERVE_STANDIN;
	return -EINVAL;
}

int serve_run(const struct serve_opts *o, char *err, size_t errlen)
{
	int rc;

	err[0] = '\0';
	if (o->backend == SERVE_STANDIN)
		return serve_standin_run(o);
	rc = serve_zarisd_run(o, err, errlen);
	if (rc == -ENOSYS && o->backend == SERVE_AUTO && !o->cores) {
		fprintf(stderr, "zaris-bench: serve: zarisd loop not wired yet, using the stand-in\n");
		return serve_standin_run(o);
	}
	return rc;
}

/* The command name of a RESP array request, or of an inline line. */
static void command_name(const char *req, size_t len, const char **name, size_t *nlen)
{
	const char *end = req + len, *p, *q;

	*name = NULL;
	*nlen = 0;
	if (len > 0 && req[0] == '*') {
		/* "*N\r\n$L\r\nNAME\r\n...": the name follows the second '\n'. */
		p = memchr(req, '\n', len);
		if (!p || p + 1 >= end || p[1] != '$')
			return;
		p = memchr(p + 1, '\n', (size_t)(end - p - 1));
		if (!p)
			return;
		p++;
		q = memchr(p, '\r', (size_t)(end - p));
		if (!q)
			return;
		*name = p;
		*nlen = (size_t)(q - p);
		return;
	}
	p = req;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	q = p;
	while (q < end && *q != ' ' && *q != '\t' && *q != '\r' && *q != '\n')
		q++;
	*name = p;
	*nlen = (size_t)(q - p);
}

size_t serve_reply(const char *req, size_t len, const char *get_reply, size_t get_len, char *out)
{
	const char *name;
	size_t nlen;

	command_name(req, len, &name, &nlen);
	if (nlen == 3 && strncasecmp(name, "GET", 3) == 0) {
		memcpy(out, get_reply, get_len);
		return get_len;
	}
	if (nlen == 4 && strncasecmp(name, "PING", 4) == 0) {
		memcpy(out, "+PONG\r\n", 7);
		return 7;
	}
	memcpy(out, "+OK\r\n", 5);
	return 5;
}
