/* Unit tests of the supervisor's instance state table, backoff and INFO
 * parsing, driving events by hand (the only processes are /bin/true and a
 * forked child of this test). */
#include "config/zconf.h"
#include "supervisor/health.h"
#include "supervisor/instance.h"
#include "tests/tap.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[] = "/tmp/sv-unit-XXXXXX";
static char path[256];

static struct zconf *load_conf(void)
{
	struct zconf *conf;
	struct zconf_error err;
	FILE *f;

	snprintf(path, sizeof(path), "%s/z.conf", tmpdir);
	f = fopen(path, "w");
	/* the cluster's dir under tmpdir: starting node a creates <dir>/a,
	 * which must not land in the directory the test runs from */
	fprintf(f,
		"cluster = { dir = \"%s\"; };\n"
		"supervisor = { health-failures = 2; backoff-min = \"100ms\"; backoff-max = \"1s\";\n"
		"  crash-loop-restarts = 3; stop-timeout = \"200ms\"; start-timeout = \"5s\"; };\n"
		"nodes = ( { name = \"a\"; address = \"127.0.0.1\"; port = 1; } );\n",
		tmpdir);
	fclose(f);
	if (zconf_load(path, &conf, &err) < 0) {
		diag("%s:%d: %s", err.file, err.line, err.message);
		return NULL;
	}
	return conf;
}

int main(void)
{
	struct zconf *conf;
	struct sv_instance *i;
	struct sv_params p;
	struct sv_info info;
	pid_t child;

	bool cwd_had_a = access("a", F_OK) == 0;
	if (!mkdtemp(tmpdir))
		skip_all("mkdtemp failed");
	conf = load_conf();
	ok(conf != NULL, "test config loads");
	if (!conf)
		return done_testing();
	p = (struct sv_params){ .conf = conf, .zarisd = "/nonexistent/zarisd" };

	/* backoff */
	is_int(sv_backoff_ms(&conf->sv, 1), 100, "first backoff = backoff-min");
	is_int(sv_backoff_ms(&conf->sv, 2), 200, "doubles");
	is_int(sv_backoff_ms(&conf->sv, 4), 800, "doubles again");
	is_int(sv_backoff_ms(&conf->sv, 5), 1000, "capped at backoff-max");
	is_int(sv_backoff_ms(&conf->sv, 500), 1000, "stays capped (no overflow)");

	/* stale events are ignored */
	i = sv_instance_new("a");
	sv_instance_event(i, SV_EV_STOP, &p, 1000);
	sv_instance_event(i, SV_EV_HEALTH_OK, &p, 1000);
	sv_instance_event(i, SV_EV_EXIT, &p, 1000);
	is_str(sv_state_name(i->state), "down", "down ignores stop, health and exit");

	/* a binary that cannot be exec'd: error, then backoff (not a hang) */
	sv_instance_event(i, SV_EV_START, &p, 1000);
	is_str(sv_state_name(i->state), "backoff", "exec failure -> backoff");
	ok(strstr(i->last_error, "cannot start /nonexistent/zarisd") != NULL, "last_error: %s",
	   i->last_error);
	is_int(i->timer_ms, 1100, "backoff timer = now + backoff-min");
	sv_instance_event(i, SV_EV_TIMER, &p, 1100);
	sv_instance_event(i, SV_EV_TIMER, &p, 1300);
	is_str(sv_state_name(i->state), "crash-loop", "third failure in a row -> crash-loop");
	is_int(i->crashes, 3, "crash count 3");
	sv_instance_event(i, SV_EV_STOP, &p, 1400);
	is_str(sv_state_name(i->state), "down", "stop in crash-loop -> down, no timer");
	is_int(i->timer_ms, 0, "timer cleared");

	/* a real exec: /bin/true starts, then exits = crash */
	p.zarisd = "/bin/true";
	i->crashes = 0;
	sv_instance_event(i, SV_EV_START, &p, 2000);
	is_str(sv_state_name(i->state), "starting", "spawned -> starting");
	ok(i->pid > 0, "has a pid");
	waitpid(i->pid, &i->exit_status, 0);
	sv_instance_event(i, SV_EV_EXIT, &p, 2010);
	is_str(sv_state_name(i->state), "backoff", "exit while starting -> backoff");
	ok(strstr(i->last_error, "exited with status 0") != NULL, "last_error: %s", i->last_error);
	is_int(i->pid, 0, "pid cleared");
	is_int(i->restarts, 0, "the first start is not a restart");
	sv_instance_event(i, SV_EV_TIMER, &p, 2200);
	is_int(i->restarts, 1, "the respawn counts as a restart");
	waitpid(i->pid, &i->exit_status, 0);
	sv_instance_event(i, SV_EV_EXIT, &p, 2210);

	/* health: up, one failure = unhealthy, recovery, N failures = restart */
	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	sv_instance_free(i);
	i = sv_instance_new("a");
	i->pid = child;
	i->state = SV_STARTING; /* as if spawned: the table takes over from here */
	sv_instance_event(i, SV_EV_HEALTH_FAIL, &p, 3000);
	is_str(sv_state_name(i->state), "starting", "a failed check while starting is not counted");
	sv_instance_event(i, SV_EV_HEALTH_OK, &p, 3000);
	is_str(sv_state_name(i->state), "up", "first PONG -> up");
	sv_instance_event(i, SV_EV_HEALTH_FAIL, &p, 3100);
	is_str(sv_state_name(i->state), "unhealthy", "one failure -> unhealthy");
	sv_instance_event(i, SV_EV_HEALTH_OK, &p, 3200);
	is_str(sv_state_name(i->state), "up", "recovers");
	/* -LOADING (a replica loading a full sync) is alive, not a failure;
	 * a REPLICAOF it carried waits for the next check */
	i->sent_set[SV_SET_REPLICAOF] = strdup("127.0.0.1 7001");
	for (int n = 0; n < 4; n++) {
		i->check.done = true;
		i->check.ok = false;
		snprintf(i->check.error, sizeof(i->check.error),
			 "error reply: LOADING Redis is loading the dataset in memory");
		sv_instance_check_done(i, &p, 3210 + n);
	}
	ok(i->state == SV_UP && i->loading && i->health_fails == 0,
	   "4 checks answered LOADING (health-failures 2): still up, loading");
	ok(i->pending_set[SV_SET_REPLICAOF] && !i->sent_set[SV_SET_REPLICAOF] &&
		   strcmp(i->pending_set[SV_SET_REPLICAOF], "127.0.0.1 7001") == 0,
	   "the REPLICAOF it carried is queued again");
	i->check.done = true;
	i->check.ok = true;
	i->check.info.process_id = child;
	sv_instance_check_done(i, &p, 3220);
	ok(i->state == SV_UP && !i->loading, "a check answered: done loading");
	/* any other error to a live change: refused, dropped, still healthy */
	free(i->sent_set[SV_SET_REPLICAOF]);
	i->sent_set[SV_SET_REPLICAOF] = i->pending_set[SV_SET_REPLICAOF];
	i->pending_set[SV_SET_REPLICAOF] = NULL;
	i->check.done = true;
	i->check.ok = false;
	snprintf(i->check.error, sizeof(i->check.error), "error reply: ERR a replica of itself");
	sv_instance_check_done(i, &p, 3230);
	ok(i->state == SV_UP && !i->sent_set[SV_SET_REPLICAOF] && !i->pending_set[SV_SET_REPLICAOF] &&
		   strstr(i->last_error, "live config change refused") != NULL,
	   "a refused REPLICAOF is dropped and shown: %s", i->last_error);
	sv_instance_event(i, SV_EV_HEALTH_FAIL, &p, 3300);
	sv_instance_event(i, SV_EV_HEALTH_FAIL, &p, 3400);
	is_str(sv_state_name(i->state), "stopping", "health-failures reached -> stopping");
	ok(i->want_up && i->stop_is_failure, "to be restarted, counted as a failure");
	is_int(i->timer_ms, 3600, "SIGKILL deadline = now + stop-timeout");
	ok(waitpid(child, &i->exit_status, 0) == child && WIFSIGNALED(i->exit_status) &&
		   WTERMSIG(i->exit_status) == SIGTERM,
	   "the child got SIGTERM");
	p.zarisd = "/nonexistent/zarisd";
	sv_instance_event(i, SV_EV_EXIT, &p, 3500);
	is_str(sv_state_name(i->state), "backoff", "exit after a failed-health stop -> backoff");
	sv_instance_free(i);

	/* a process that ignores SIGTERM gets SIGKILL when the grace is over */
	child = fork();
	if (child == 0) {
		signal(SIGTERM, SIG_IGN);
		for (;;)
			pause();
	}
	usleep(50000); /* let it install SIG_IGN before we send SIGTERM */
	i = sv_instance_new("a");
	i->pid = child;
	i->state = SV_UP;
	sv_instance_event(i, SV_EV_STOP, &p, 4000);
	is_str(sv_state_name(i->state), "stopping", "stop -> stopping");
	ok(!i->want_up, "not to be restarted");
	usleep(100000);
	ok(waitpid(child, &i->exit_status, WNOHANG) == 0, "SIGTERM ignored: still running");
	sv_instance_event(i, SV_EV_TIMER, &p, 4200);
	ok(waitpid(child, &i->exit_status, 0) == child && WIFSIGNALED(i->exit_status) &&
		   WTERMSIG(i->exit_status) == SIGKILL,
	   "grace over: SIGKILL");
	sv_instance_event(i, SV_EV_EXIT, &p, 4210);
	is_str(sv_state_name(i->state), "down", "exit after a requested stop -> down");
	sv_instance_free(i);

	/* INFO parsing */
	memset(&info, 0, sizeof(info));
	sv_health_parse_info("# Server\r\nprocess_id:123\r\nuptime_in_seconds:9\r\n# Memory\r\n"
			     "used_memory:4096\r\nmaxmemory:0\r\nrole:master\r\n",
			     strlen("# Server\r\nprocess_id:123\r\nuptime_in_seconds:9\r\n# Memory\r\n"
				    "used_memory:4096\r\nmaxmemory:0\r\nrole:master\r\n"),
			     &info);
	ok(info.process_id == 123 && info.uptime_in_seconds == 9 && info.used_memory == 4096 &&
		   info.maxmemory == 0 && strcmp(info.role, "master") == 0,
	   "INFO fields parsed");
	{
		/* a replica's replication section, as Redis writes it */
		static const char repl[] = "# Replication\r\nrole:slave\r\nmaster_host:127.0.0.1\r\n"
					   "master_port:7001\r\nmaster_link_status:up\r\n"
					   "master_last_io_seconds_ago:3\r\nmaster_sync_in_progress:0\r\n"
					   "slave_read_repl_offset:4711\r\nslave_repl_offset:4700\r\n"
					   "connected_slaves:1\r\n"
					   "slave0:ip=127.0.0.1,port=7003,state=online,offset=4700,lag=0\r\n"
					   "master_replid:8f1c\r\nmaster_repl_offset:4700\r\n";
		static const char prim[] = "role:master\r\nconnected_slaves:2\r\nmaster_repl_offset:99\r\n";
		char longhost[300];

		sv_info_clear(&info);
		ok(info.connected_slaves == -1 && info.slave_repl_offset == -1 && info.master_port == -1 &&
			   info.master_link_status[0] == '\0' && info.role[0] == '\0',
		   "cleared INFO: every field absent");
		sv_health_parse_info(repl, strlen(repl), &info);
		ok(strcmp(info.role, "slave") == 0 && strcmp(info.master_host, "127.0.0.1") == 0 &&
			   info.master_port == 7001 && strcmp(info.master_link_status, "up") == 0 &&
			   info.master_last_io_seconds_ago == 3 && info.master_sync_in_progress == 0,
		   "a replica's role, primary and link");
		ok(info.slave_repl_offset == 4700 && info.master_repl_offset == 4700 &&
			   info.connected_slaves == 1,
		   "its offsets (slave_read_repl_offset is not slave_repl_offset) and its own replicas");
		sv_info_clear(&info);
		sv_health_parse_info(prim, strlen(prim), &info);
		ok(strcmp(info.role, "master") == 0 && info.connected_slaves == 2 &&
			   info.master_repl_offset == 99 && info.slave_repl_offset == -1 &&
			   info.master_link_status[0] == '\0',
		   "a primary's: replicas and offset, no link");
		ok(info.master_link_down_since_seconds == -1, "a link never down: down-since absent");
		{
			static const char down[] = "role:slave\r\nmaster_link_status:down\r\n"
						   "master_link_down_since_seconds:7\r\n";
			sv_info_clear(&info);
			sv_health_parse_info(down, strlen(down), &info);
			ok(info.master_link_down_since_seconds == 7 &&
				   strcmp(info.master_link_status, "down") == 0,
			   "a link down: seconds since it was last in sync");
		}
		memset(longhost, 'h', sizeof(longhost));
		memcpy(longhost, "master_host:", 12);
		memcpy(longhost + sizeof(longhost) - 2, "\r\n", 2);
		sv_health_parse_info(longhost, sizeof(longhost), &info);
		ok(strlen(info.master_host) == sizeof(info.master_host) - 1,
		   "an overlong value is cut, not overrun");
	}

	zconf_free(conf);
	unlink(path);
	char node_dir[300];
	snprintf(node_dir, sizeof(node_dir), "%s/a", tmpdir);
	ok(rmdir(node_dir) == 0, "node a's data directory was made under the cluster's dir");
	ok(cwd_had_a || access("a", F_OK) != 0, "and none in the directory the test runs from");
	rmdir(tmpdir);
	return done_testing();
}
