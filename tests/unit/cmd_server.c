/* Unit tests of the slow log and the latency monitor (slowlog.c,
 * latency.c): thresholds, argument truncation and redaction, trimming to
 * slowlog-max-len, concurrent recording, latency events. Replies are read
 * back as raw RESP from the client's obuf. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>

#include "tests/tap.h"
#include "zarisd/server/client.h"
#include "zarisd/server/latency.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/server/slowlog.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"

static struct settings cfg;
static struct server srv;

/* The unsent bytes of O as a NUL-terminated string (caller frees); empties O. */
static char *drain(struct obuf *o)
{
	struct iovec iov[64];
	int n = obuf_iov(o, iov, 64);
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	char *s = zr_malloc(len + 1), *p = s;
	for (int i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	*p = '\0';
	obuf_consume(o, len);
	return s;
}

static struct resp_arg args[64];
static char argbuf[64][512];

static void set_cmd(struct client *c, const char *name, int argc, const char *const *argv)
{
	for (int i = 0; i < argc; i++) {
		snprintf(argbuf[i], sizeof(argbuf[i]), "%s", argv[i]);
		args[i].ptr = argbuf[i];
		args[i].len = strlen(argbuf[i]);
	}
	c->argv = args;
	c->argc = argc;
	c->cmd = command_lookup(name, strlen(name));
}

struct thread_arg {
	struct slowlog *sl;
	int n;
};

static void *record_many(void *p)
{
	struct thread_arg *a = p;
	struct client c;
	memset(&c, 0, sizeof(c));
	snprintf(c.addr, sizeof(c.addr), "127.0.0.1:1");
	struct resp_arg av[2] = { { "PING", 4 }, { "x", 1 } };
	c.argv = av;
	c.argc = 2;
	c.cmd = command_lookup("ping", 4);
	for (int i = 0; i < a->n; i++)
		slowlog_record(a->sl, &srv, &c, 5);
	return NULL;
}

int main(void)
{
	command_table_init();
	settings_init(&cfg);
	srv.cfg = &cfg;
	struct slowlog *sl = slowlog_create();
	srv.slowlog = sl;
	struct client c;
	memset(&c, 0, sizeof(c));
	obuf_init(&c.out);
	c.out.resp = 2;
	snprintf(c.addr, sizeof(c.addr), "127.0.0.1:5555");
	char *s;

	/* thresholds */
	static const char *const set_argv[] = { "SET", "k", "v" };
	set_cmd(&c, "set", 3, set_argv);
	atomic_store(&cfg.slowlog_log_slower_than, -1);
	slowlog_record(sl, &srv, &c, 1000000);
	is_int(slowlog_len(sl), 0, "slowlog-log-slower-than -1 records nothing");
	atomic_store(&cfg.slowlog_log_slower_than, 100);
	slowlog_record(sl, &srv, &c, 99);
	is_int(slowlog_len(sl), 0, "a command under the threshold is not recorded");
	slowlog_record(sl, &srv, &c, 100);
	is_int(slowlog_len(sl), 1, "a command at the threshold is recorded");
	slowlog_reply(sl, &c.out, 10);
	s = drain(&c.out);
	ok(!strncmp(s, "*1\r\n*6\r\n:0\r\n:", 13), "SLOWLOG GET: one entry of 6 fields, id 0");
	ok(strstr(s,
		  "\r\n:100\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$14\r\n127.0.0.1:5555\r\n$0\r\n\r\n") !=
		   NULL,
	   "duration, arguments, address and empty name follow");
	zr_free(s);

	/* truncation */
	atomic_store(&cfg.slowlog_log_slower_than, 0);
	const char *many[40];
	many[0] = "MSET";
	for (int i = 1; i < 40; i++)
		many[i] = "a";
	set_cmd(&c, "mset", 40, many);
	slowlog_record(sl, &srv, &c, 1);
	slowlog_reply(sl, &c.out, 1);
	s = drain(&c.out);
	ok(strstr(s, "*32\r\n") && strstr(s, "$22\r\n... (9 more arguments)\r\n"),
	   "40 arguments keep 31 and say 9 more");
	zr_free(s);
	char longarg[301];
	memset(longarg, 'x', 300);
	longarg[300] = '\0';
	const char *long_argv[] = { "SET", longarg, "v" };
	set_cmd(&c, "set", 3, long_argv);
	slowlog_record(sl, &srv, &c, 1);
	slowlog_reply(sl, &c.out, 1);
	s = drain(&c.out);
	char want[200];
	snprintf(want, sizeof(want), "$148\r\n%.128s... (172 more bytes)\r\n", longarg);
	ok(strstr(s, want) != NULL, "a 300-byte argument keeps 128 bytes and says 172 more");
	zr_free(s);

	/* redaction */
	static const char *const auth_argv[] = { "AUTH", "user", "secret" };
	set_cmd(&c, "auth", 3, auth_argv);
	slowlog_record(sl, &srv, &c, 1);
	static const char *const hello_argv[] = { "HELLO", "3", "AUTH", "user", "secret", "SETNAME", "n" };
	set_cmd(&c, "hello", 7, hello_argv);
	slowlog_record(sl, &srv, &c, 1);
	static const char *const cfg_argv[] = { "CONFIG", "SET", "requirepass", "secret", "hz", "10" };
	set_cmd(&c, "config", 6, cfg_argv);
	c.cmd = command_lookup_sub(c.cmd, "set", 3);
	slowlog_record(sl, &srv, &c, 1);
	slowlog_reply(sl, &c.out, 3);
	s = drain(&c.out);
	ok(!strstr(s, "secret"), "no password reaches the slow log");
	ok(strstr(s, "$4\r\nAUTH\r\n$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n") != NULL,
	   "AUTH arguments are redacted");
	ok(strstr(s,
		  "$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$10\r\n(redacted)\r\n$10\r\n(redacted)\r\n$7\r\nSETNAME\r\n$1\r\nn\r\n"),
	   "HELLO keeps all but AUTH's username and password");
	ok(strstr(s, "$11\r\nrequirepass\r\n$10\r\n(redacted)\r\n$2\r\nhz\r\n$2\r\n10\r\n") != NULL,
	   "CONFIG SET redacts requirepass's value only");
	zr_free(s);

	/* trimming and order */
	slowlog_reset(sl);
	is_int(slowlog_len(sl), 0, "SLOWLOG RESET empties the log");
	atomic_store(&cfg.slowlog_max_len, 3);
	set_cmd(&c, "set", 3, set_argv);
	for (int i = 0; i < 10; i++)
		slowlog_record(sl, &srv, &c, i);
	is_int(slowlog_len(sl), 3, "the log is trimmed to slowlog-max-len");
	slowlog_reply(sl, &c.out, -1);
	s = drain(&c.out);
	ok(!strncmp(s, "*3\r\n*6\r\n:15\r\n", 13), "newest first, ids keep counting after a reset");
	zr_free(s);
	slowlog_reply(sl, &c.out, 0);
	s = drain(&c.out);
	is_str(s, "*0\r\n", "SLOWLOG GET 0 is empty");
	zr_free(s);

	/* concurrent writers */
	atomic_store(&cfg.slowlog_max_len, 100);
	pthread_t th[4];
	struct thread_arg ta = { sl, 2000 };
	for (int i = 0; i < 4; i++)
		pthread_create(&th[i], NULL, record_many, &ta);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	is_int(slowlog_len(sl), 100, "4 threads x 2000 records leave slowlog-max-len entries");

	/* latency monitor */
	latency_reset(NULL, 0);
	atomic_store(&cfg.latency_monitor_threshold, 0);
	latency_record_command(&srv, command_lookup("set", 3), 500000);
	latency_reply_latest(&c.out);
	s = drain(&c.out);
	is_str(s, "*0\r\n", "latency-monitor-threshold 0 records nothing");
	zr_free(s);
	atomic_store(&cfg.latency_monitor_threshold, 5);
	latency_record_command(&srv, command_lookup("set", 3), 4999);
	latency_record_command(&srv, command_lookup("set", 3), 7000);
	latency_record_command(&srv, command_lookup("set", 3), 9000);
	latency_record_command(&srv, command_lookup("get", 3), 20000);
	latency_reply_latest(&c.out);
	s = drain(&c.out);
	ok(strstr(s, "$7\r\ncommand\r\n") && strstr(s, "\r\n:9\r\n:9\r\n"),
	   "'command': the second's worst sample, max 9 ms");
	ok(strstr(s, "$12\r\nfast-command\r\n") && strstr(s, "\r\n:20\r\n:20\r\n"),
	   "GET (fast) goes to 'fast-command'");
	zr_free(s);
	latency_reply_history(&c.out, "command", 7);
	s = drain(&c.out);
	ok(!strncmp(s, "*1\r\n*2\r\n:", 9) && strstr(s, "\r\n:9\r\n"),
	   "one sample per second in the history");
	zr_free(s);
	is_int(latency_reset("command", 7), 1, "resetting one event");
	is_int(latency_reset(NULL, 0), 1, "resetting the rest");

	obuf_free(&c.out);
	slowlog_destroy(sl);
	settings_free(&cfg);
	return done_testing();
}
