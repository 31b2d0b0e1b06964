/* Unit tests of the supervisor's restart job with replicas: the order a
 * rolling restart takes (replicas first, deepest first, then primaries,
 * file order otherwise) and the catch-up wait of a restarted replica,
 * driven with hand-made INFO (the only process is a paused child of this
 * test standing in for the instances, never signalled by the job). */
#include "config/zconf.h"
#include "supervisor/supervisor.h"
#include "tests/tap.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sv-job-XXXXXX";
static char path[256];
static char logpath[300];
static int saved_stderr = -1;

static void write_conf(const char *nodes)
{
	FILE *f;

	snprintf(path, sizeof(path), "%s/z.conf", tmpdir);
	f = fopen(path, "w");
	fprintf(f,
		"cluster = { dir = \"%s\"; };\n"
		"supervisor = { catch-up-lag = 100; catch-up-timeout = \"2s\"; };\n"
		"nodes = (\n%s);\n",
		tmpdir, nodes);
	fclose(f);
}

/* The supervisor's log lines go to a file while FN-like steps run. */
static void capture_log(void)
{
	int fd;

	snprintf(logpath, sizeof(logpath), "%s/log", tmpdir);
	fd = open(logpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	fflush(stderr);
	saved_stderr = dup(STDERR_FILENO);
	dup2(fd, STDERR_FILENO);
	close(fd);
}

static const char *captured(void)
{
	static char buf[8192];
	FILE *f;
	size_t n;

	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	f = fopen(logpath, "r");
	n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	buf[n] = '\0';
	if (f)
		fclose(f);
	unlink(logpath);
	return buf;
}

static void queue_order(struct sv *s, const char *const *names, size_t n, char *out, size_t size)
{
	size_t len = 0;

	out[0] = '\0';
	sv_job_queue(s, names, n, 0, false, 0);
	for (size_t k = 0; k < s->job.n && len < size; k++)
		len += (size_t)snprintf(out + len, size - len, "%s%s", k ? " " : "", s->job.names[k]);
	/* empty the queue again (nothing was started) */
	while (s->job.n)
		free(s->job.names[--s->job.n]);
	s->job.total = s->job.done = 0;
}

static void test_order(void)
{
	struct sv s;
	struct zconf_error err;
	char order[256];
	const char *some[] = { "p1", "r3", "r1" };

	write_conf("  { name = \"p1\"; address = \"127.0.0.1\"; port = 7101; },\n"
		   "  { name = \"r1\"; address = \"127.0.0.1\"; port = 7102; replica-of = \"p1\"; },\n"
		   "  { name = \"p2\"; address = \"127.0.0.1\"; port = 7103; },\n"
		   "  { name = \"r2\"; address = \"127.0.0.1\"; port = 7104; replica-of = \"r1\"; },\n"
		   "  { name = \"r3\"; address = \"127.0.0.1\"; port = 7105; replica-of = \"p2\"; }\n");
	ok(sv_init(&s, path, NULL, "/nonexistent/zarisd", 0, &err) == 0, "supervisor state loads (%s)",
	   err.message);
	queue_order(&s, NULL, 0, order, sizeof(order));
	is_str(order, "r2 r1 r3 p1 p2", "rolling restart: deepest replica first, replicas, then primaries");
	queue_order(&s, some, 3, order, sizeof(order));
	is_str(order, "r1 r3 p1", "a reload's batch is ordered the same way");
	sv_fini(&s);
}

static void set_info(struct sv_instance *i, pid_t pid, const char *text)
{
	i->pid = pid;
	sv_info_clear(&i->info);
	sv_health_parse_info(text, strlen(text), &i->info);
}

static void test_catch_up(void)
{
	struct sv s;
	struct zconf_error err;
	struct sv_instance *p, *r;
	pid_t child;
	const char *log;
	char text[512];

	write_conf("  { name = \"p\"; address = \"127.0.0.1\"; port = 7201; },\n"
		   "  { name = \"r\"; address = \"127.0.0.1\"; port = 7202; replica-of = \"p\"; }\n");
	if (sv_init(&s, path, NULL, "/nonexistent/zarisd", 0, &err) < 0) {
		ok(0, "supervisor state loads (%s)", err.message);
		return;
	}
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	p = sv_find(&s, "p");
	r = sv_find(&s, "r");
	/* both up; r's restart step has just seen it answer with a new pid */
	p->state = r->state = SV_UP;
	set_info(p, child, "role:master\r\nconnected_slaves:1\r\nmaster_repl_offset:5000\r\n");
	set_info(r, child,
		 "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7201\r\n"
		 "master_link_status:down\r\nmaster_sync_in_progress:1\r\nslave_repl_offset:-1\r\n");
	sv_job_queue(&s, (const char *const[]){ "r" }, 1, 0, false, 1000);
	s.job.step_started = true;
	s.job.old_pid = child + 1;

	capture_log();
	sv_job_step(&s, 1000);
	ok(s.job.n == 1 && s.job.catching_up, "a replica up again waits to catch up");
	ok(s.job.deadline_ms == 3000, "for catch-up-timeout");
	ok(r->next_check_ms <= 1100 && p->next_check_ms <= 1100, "both are checked within 100 ms meanwhile");
	sv_job_step(&s, 1200);
	ok(s.job.n == 1, "link down, syncing: still waiting");
	set_info(r, child,
		 "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7201\r\n"
		 "master_link_status:up\r\nmaster_sync_in_progress:0\r\nslave_repl_offset:4800\r\n");
	sv_job_step(&s, 1300);
	ok(s.job.n == 1, "link up but 200 bytes behind (bound 100): still waiting");
	set_info(r, child,
		 "role:slave\r\nmaster_host:127.0.0.2\r\nmaster_port:7201\r\n"
		 "master_link_status:up\r\nmaster_sync_in_progress:0\r\nslave_repl_offset:5000\r\n");
	sv_job_step(&s, 1400);
	ok(s.job.n == 1, "caught up with another primary than the file's: still waiting");
	set_info(r, child,
		 "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7201\r\n"
		 "master_link_status:up\r\nmaster_sync_in_progress:0\r\nslave_repl_offset:4950\r\n");
	sv_job_step(&s, 1500);
	ok(s.job.n == 0, "within the bound: the step is over and the job done");
	log = captured();
	ok(strstr(log, "r is up again") &&
		   strstr(log, "waiting for r to catch up with p (link up, at most 100 "
			       "bytes behind)"),
	   "the wait is announced");
	ok(strstr(log, "r caught up with p (link up, 50 bytes behind)") != NULL, "and its end");
	ok(strstr(log, "restart job done: 1 instance(s) restarted") != NULL, "job done");

	/* the timeout: the link never comes up */
	set_info(r, child,
		 "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7201\r\n"
		 "master_link_status:down\r\nmaster_sync_in_progress:0\r\nslave_repl_offset:10\r\n");
	sv_job_queue(&s, (const char *const[]){ "r" }, 1, 0, false, 10000);
	s.job.step_started = true;
	s.job.old_pid = child + 1;
	capture_log();
	sv_job_step(&s, 10000);
	sv_job_step(&s, 11999);
	ok(s.job.n == 1, "still waiting before catch-up-timeout");
	sv_job_step(&s, 12000);
	ok(s.job.n == 0, "the job stops at catch-up-timeout");
	log = captured();
	snprintf(text, sizeof(text), "%s", log);
	ok(strstr(text, "<3>zaris-supervisor: restart job: r did not catch up with p within catch-up-timeout "
			"(2000 ms): link down; stopped before the next instance") != NULL,
	   "saying why, at priority err");

	/* a primary stopped on purpose: nothing to wait for */
	p->state = SV_DOWN;
	p->want_up = false;
	sv_job_queue(&s, (const char *const[]){ "r" }, 1, 0, false, 20000);
	s.job.step_started = true;
	s.job.old_pid = child + 1;
	capture_log();
	sv_job_step(&s, 20000);
	ok(s.job.n == 0, "its primary stopped on purpose: the step ends when it is up");
	log = captured();
	ok(strstr(log, "its primary p is stopped; not waiting for it to catch up") != NULL, "and says so");

	/* a reload that makes it a primary while it catches up ends the wait */
	p->state = SV_UP;
	p->want_up = true;
	set_info(r, child,
		 "role:slave\r\nmaster_host:127.0.0.1\r\nmaster_port:7201\r\n"
		 "master_link_status:down\r\n");
	sv_job_queue(&s, (const char *const[]){ "r" }, 1, 0, false, 30000);
	s.job.step_started = true;
	s.job.old_pid = child + 1;
	capture_log();
	sv_job_step(&s, 30000);
	ok(s.job.n == 1 && s.job.catching_up, "catching up again");
	write_conf("  { name = \"p\"; address = \"127.0.0.1\"; port = 7201; },\n"
		   "  { name = \"r\"; address = \"127.0.0.1\"; port = 7202; }\n");
	ok(sv_reload(&s, 30100, 0, false) == 0, "reload: r is a primary now");
	ok(r->pending_set[SV_SET_REPLICAOF] && strcmp(r->pending_set[SV_SET_REPLICAOF], "NO ONE") == 0,
	   "r is to get REPLICAOF NO ONE with its next check");
	sv_job_step(&s, 30200);
	ok(s.job.n == 0, "and its step is over");
	log = captured();
	ok(strstr(log, "r: becomes a primary live (REPLICAOF NO ONE)") != NULL &&
		   strstr(log, "r is no longer a replica; not waiting") != NULL,
	   "both said in the log");

	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	p->pid = r->pid = 0;
	p->state = r->state = SV_DOWN;
	sv_fini(&s);
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		skip_all("mkdtemp failed");
	test_order();
	test_catch_up();
	unlink(path);
	rmdir(tmpdir);
	return done_testing();
}
