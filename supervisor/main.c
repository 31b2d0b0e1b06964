/* zaris-supervisor — what systemd starts (Type=notify). Reads the cluster
 * file, runs the local zarisd instances and keeps them healthy; see
 * supervisor.h for the model and control.h for zarisctl's protocol.
 *
 *   zaris-supervisor [--config FILE] [--node NAME[,NAME...] | --machine NAME]
 *                    [--control-socket PATH] [--zarisd PATH]
 *
 * One thread, one poll loop: signals arrive through a signalfd (SIGCHLD,
 * SIGTERM, SIGINT, SIGHUP), health checks and control clients are
 * non-blocking sockets, and every deadline (health interval, backoff, stop
 * grace, watchdog) bounds the poll timeout. WATCHDOG=1 is sent from the
 * loop itself, so a wedged loop stops it and systemd restarts us.
 */
#include "config/zconf.h"
#include "supervisor/control.h"
#include "supervisor/etcd.h"
#include "supervisor/failover.h"
#include "supervisor/log.h"
#include "supervisor/supervisor.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SV_DEFAULT_ZARISD "/usr/sbin/zarisd"
/* Upper bound of one poll wait, so a missed deadline costs at most this. */
#define SV_MAX_WAIT_MS 1000
/* How often the loop looks at the coordinator's view when there is one. */
#define SV_COORD_POLL_MS 50

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: zaris-supervisor [--config FILE] [--node NAME[,NAME...] | --machine NAME]\n"
		"                        [--control-socket PATH] [--zarisd PATH]\n"
		"  --config FILE          cluster file (default %s)\n"
		"  --node NAMES           run these nodes (default: the nodes of this machine)\n"
		"  --machine NAME         be coordination machine NAME: run its nodes (and etcd member)\n"
		"  --control-socket PATH  zarisctl socket (default %s)\n"
		"  --zarisd PATH          zarisd binary (default $ZARISD, else %s)\n",
		ZCONF_DEFAULT_PATH, SV_CONTROL_DEFAULT_PATH, SV_DEFAULT_ZARISD);
}

static void cmd_instance(struct sv *s, struct sv_conn *conn, const char *verb, const char *name, int64_t now)
{
	struct sv_instance *i = name && *name ? sv_find(s, name) : NULL;

	if (!i) {
		sv_control_end(conn, false, "%s: no local instance called '%s'", verb, name ? name : "");
		return;
	}
	if (strcmp(verb, "restart") == 0) {
		sv_log(LOG_NOTICE, "%s: restart requested by zarisctl", i->name);
		sv_event(s, i, SV_EV_RESTART, now);
	} else if (strcmp(verb, "stop") == 0) {
		sv_log(LOG_NOTICE, "%s: stop requested by zarisctl", i->name);
		sv_event(s, i, SV_EV_STOP, now);
	} else {
		sv_log(LOG_NOTICE, "%s: start requested by zarisctl", i->name);
		i->crashes = 0; /* the operator fixed something: start over */
		sv_event(s, i, SV_EV_START, now);
	}
	sv_control_end(conn, true, "%s: %s (%s)", i->name, verb, sv_state_name(i->state));
}

struct dispatch_ctx {
	struct sv *s;
	int64_t now;
};

static void on_request(struct sv_conn *conn, const char *line, void *ctx_)
{
	struct dispatch_ctx *ctx = ctx_;
	struct sv *s = ctx->s;
	char verb[32] = "", arg[200] = "";

	if (sscanf(line, "%31s %199s", verb, arg) < 1) {
		sv_control_end(conn, false, "empty request");
		return;
	}
	if (strcmp(verb, "status") == 0) {
		sv_status_write(s, conn, ctx->now);
		sv_control_end(conn, true, "%s", "");
	} else if (strcmp(verb, "reload") == 0) {
		int rc = sv_reload(s, ctx->now, conn->id, conn->json);

		if (rc < 0)
			sv_control_end(conn, false, "reload refused, nothing changed: %s", s->config_error);
		else if (rc == 0 || s->job.conn_id != conn->id)
			sv_control_end(conn, true, "reloaded %s", s->config_path);
		/* else the restart job ends the reply when it is done */
	} else if (strcmp(verb, "rolling-restart") == 0) {
		if (sv_job_queue(s, NULL, 0, conn->id, conn->json, ctx->now) < 0)
			sv_control_end(conn, false, "a restart job is already running");
		else
			sv_job_step(s, ctx->now);
	} else if (strcmp(verb, "restart") == 0 || strcmp(verb, "stop") == 0 || strcmp(verb, "start") == 0) {
		cmd_instance(s, conn, verb, arg, ctx->now);
	} else if (strcmp(verb, "failover") == 0) {
		char shard[64] = "", target[64] = "", force[16] = "";
		char why[300];
		sscanf(line, "%*s %63s %63s %15s", shard, target, force);
		if (sv_failover_request(s, shard, strcmp(target, "-") == 0 ? "" : target,
					strcmp(force, "force") == 0, conn->id, ctx->now, why,
					sizeof(why)) < 0)
			sv_control_end(conn, false, "%s", why);
	} else {
		sv_control_end(conn, false,
			       "unknown command '%s' (status, reload, restart NAME, stop NAME, "
			       "start NAME, rolling-restart, failover SHARD [NODE] [force])",
			       verb);
	}
}

static void reap_children(struct sv *s, int64_t now)
{
	for (;;) {
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid <= 0)
			return;
		if (sv_etcd_run_exited(&s->etcd, pid, status, now))
			continue;
		for (size_t k = 0; k < s->n_inst; k++) {
			struct sv_instance *i = s->inst[k];

			if (i->pid != pid)
				continue;
			i->exit_status = status;
			sv_event(s, i, SV_EV_EXIT, now);
			if (i->pid == pid)
				i->pid = 0; /* gone, whatever the state made of it */
			break;
		}
	}
}

static void begin_shutdown(struct sv *s, int64_t now, int sig)
{
	if (s->stopping)
		return;
	s->stopping = true;
	sv_log(LOG_NOTICE, "signal %d: stopping %zu instance(s)", sig, s->n_inst);
	sv_notify_stopping(&s->notify);
	for (size_t k = 0; k < s->n_inst; k++)
		sv_event(s, s->inst[k], SV_EV_STOP, now);
}

static void handle_signals(struct sv *s, int sfd, int64_t now)
{
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap_children(s, now);
			break;
		case SIGHUP:
			if (!s->stopping)
				sv_reload(s, now, 0, false);
			break;
		default:
			begin_shutdown(s, now, (int)si.ssi_signo);
		}
	}
	/* SIGCHLDs coalesce: reap whatever exited even without a fresh one. */
	reap_children(s, now);
}

static int64_t next_deadline(const struct sv *s, int64_t now)
{
	int64_t t = now + SV_MAX_WAIT_MS;

	for (size_t k = 0; k < s->n_inst; k++) {
		const struct sv_instance *i = s->inst[k];

		if (i->timer_ms && i->timer_ms < t)
			t = i->timer_ms;
		if (i->check.fd >= 0 && i->check.deadline_ms < t)
			t = i->check.deadline_ms;
		if ((i->state == SV_STARTING || i->state == SV_UP || i->state == SV_UNHEALTHY) &&
		    i->check.fd < 0 && i->next_check_ms < t)
			t = i->next_check_ms;
	}
	if (s->job.n && s->job.deadline_ms < t)
		t = s->job.deadline_ms;
	if (sv_notify_next(&s->notify) < t)
		t = sv_notify_next(&s->notify);
	/* the coordinator's view changes on its own thread: look often */
	if (s->coord && now + SV_COORD_POLL_MS < t)
		t = now + SV_COORD_POLL_MS;
	if (sv_etcd_run_next(&s->etcd) < t)
		t = sv_etcd_run_next(&s->etcd);
	return t;
}

/* Timers and health checks that are due at NOW. */
static void run_due(struct sv *s, int64_t now)
{
	struct sv_params p = sv_params(s);

	for (size_t k = 0; k < s->n_inst; k++) {
		struct sv_instance *i = s->inst[k];

		if (i->timer_ms && now >= i->timer_ms) {
			i->timer_ms = 0;
			sv_instance_event(i, SV_EV_TIMER, &p, now);
		}
		sv_health_expire(&i->check, now);
		sv_instance_check_done(i, &p, now);
		if (!s->stopping && sv_instance_check_start(i, &p, now))
			sv_instance_check_done(i, &p, now); /* a connect that failed at once */
	}
}

static int run(struct sv *s, int sfd)
{
	struct pollfd fds[1 + SV_CONTROL_MAX_CONNS + 1 + SV_MAX_INSTANCES];
	struct sv_instance *polled[SV_MAX_INSTANCES];

	for (;;) {
		int64_t now = now_ms();
		size_t n = 0, nctl, ninst = 0;
		int64_t wait;

		if (s->stopping && sv_all_down(s))
			return 0;
		wait = next_deadline(s, now) - now;
		fds[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		nctl = sv_control_pollfds(&s->control, fds + n);
		n += nctl;
		for (size_t k = 0; k < s->n_inst; k++) {
			int fd = sv_health_fd(&s->inst[k]->check);

			if (fd < 0)
				continue;
			polled[ninst++] = s->inst[k];
			fds[n++] =
				(struct pollfd){ .fd = fd, .events = sv_health_events(&s->inst[k]->check) };
		}
		if (poll(fds, n, wait < 0 ? 0 : (int)wait) < 0 && errno != EINTR) {
			sv_log(LOG_CRIT, "poll: %s", strerror(errno));
			return 1;
		}
		now = now_ms();
		if (fds[0].revents & POLLIN)
			handle_signals(s, sfd, now);
		for (size_t k = 0; k < ninst; k++) {
			struct pollfd *pf = &fds[1 + nctl + k];

			/* The instance may have been stopped (check reset) meanwhile. */
			if (pf->revents && polled[k]->check.fd == pf->fd)
				sv_health_io(&polled[k]->check, pf->revents);
		}
		struct dispatch_ctx ctx = { .s = s, .now = now };
		sv_control_handle(&s->control, fds + 1, nctl, now, on_request, &ctx);
		sv_etcd_run_tick(&s->etcd, s->conf, now);
		sv_failover_step(s, now);
		run_due(s, now);
		sv_job_step(s, now);
		sv_housekeeping(s, now);
		sv_notify_tick(&s->notify, now);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "node", required_argument, NULL, 'n' },
		{ "machine", required_argument, NULL, 'm' },
		{ "control-socket", required_argument, NULL, 's' },
		{ "zarisd", required_argument, NULL, 'z' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config = ZCONF_DEFAULT_PATH, *node = NULL, *sock = SV_CONTROL_DEFAULT_PATH;
	const char *zarisd = getenv("ZARISD") ? getenv("ZARISD") : SV_DEFAULT_ZARISD;
	char machine[160];
	struct zconf_error err;
	struct sv s;
	sigset_t mask;
	int c, sfd, rc;

	while ((c = getopt_long(argc, argv, "c:n:m:s:z:hV", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config = optarg;
			break;
		case 'n':
		case 'm':
			if (node) {
				fprintf(stderr, "zaris-supervisor: give --node or --machine once\n");
				return 2;
			}
			/* zconf takes a machine as the local list "machine:NAME" */
			snprintf(machine, sizeof(machine), "%s%s", c == 'm' ? ZCONF_LOCAL_MACHINE : "",
				 optarg);
			node = c == 'm' ? machine : optarg;
			break;
		case 's':
			sock = optarg;
			break;
		case 'z':
			zarisd = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("zaris-supervisor %s\n", ZARIS_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	sv_log_init();
	if (sv_init(&s, config, node, zarisd, now_ms(), &err) < 0) {
		char msg[900];

		zconf_error_format(&err, msg, sizeof(msg));
		sv_log(LOG_ERR, "cannot start: %s", msg);
		return 1;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sfd < 0) {
		sv_log(LOG_ERR, "signalfd: %s", strerror(errno));
		return 1;
	}
	rc = sv_control_listen(&s.control, sock);
	if (rc < 0) {
		sv_log(LOG_ERR, "control socket %s: %s", sock, strerror(-rc));
		return 1;
	}
	sv_notify_init(&s.notify, now_ms());
	/* after the signal mask: the coordinator's thread inherits it */
	if (s.conf->coord.enabled && etcd_global_init() < 0) {
		sv_log(LOG_ERR, "libcurl cannot start");
		return 1;
	}
	if (sv_etcd_run_start(&s.etcd, s.conf, now_ms()) < 0)
		return 1;
	if (sv_failover_start(&s) < 0)
		return 1;
	if (s.coord) {
		/* start in the roles etcd recorded when it answers soon */
		struct sv_coord_view v = { 0 };
		for (int tries = 0; tries < 30 && !v.etcd_ok; tries++) {
			usleep(100 * 1000);
			sv_coord_view(s.coord, &v);
		}
		if (v.etcd_ok) {
			s.coord_view = v;
			sv_failover_apply_conf(&s, s.conf);
			sv_topology_adopt(&s.topo, s.conf, v.epoch);
		} else {
			sv_log(LOG_WARNING,
			       "coordination: etcd not reachable at start (%s); instances start "
			       "as the file says, fenced until a lease is confirmed",
			       v.etcd_error[0] ? v.etcd_error : "no answer");
		}
	}
	sv_log(LOG_NOTICE, "zaris-supervisor %s: %s, %zu local instance(s), zarisd %s, control %s",
	       ZARIS_VERSION, config, s.n_inst, zarisd, sock);
	for (size_t k = 0; k < s.n_inst; k++)
		sv_event(&s, s.inst[k], SV_EV_START, now_ms());
	rc = run(&s, sfd);
	sv_failover_stop(&s, true);
	sv_etcd_run_stop(&s.etcd, s.conf->sv.stop_timeout_ms > 5000 ? s.conf->sv.stop_timeout_ms : 5000);
	sv_log(LOG_NOTICE, "all instances stopped; exiting");
	sv_control_close(&s.control);
	close(sfd);
	sv_fini(&s);
	return rc;
}
