/* instance — see instance.h. The table at the bottom is the whole state
 * machine; each action above it ends in exactly one state.
 */
#include "supervisor/instance.h"
#include "supervisor/dirs.h"

#include "supervisor/log.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* How soon to re-check an instance that has not answered yet: READY=1 and
 * rolling restarts wait on the first PONG, so do not make them wait a full
 * health-interval. */
#define SV_STARTING_CHECK_MS 50

typedef void (*sv_action_fn)(struct sv_instance *i, const struct sv_params *p, int64_t now);

const char *sv_state_name(enum sv_state s)
{
	static const char *const names[SV__NSTATES] = {
		[SV_DOWN] = "down",
		[SV_STARTING] = "starting",
		[SV_UP] = "up",
		[SV_UNHEALTHY] = "unhealthy",
		[SV_STOPPING] = "stopping",
		[SV_BACKOFF] = "backoff",
		[SV_CRASHLOOP] = "crash-loop",
	};
	return names[s];
}

int64_t sv_backoff_ms(const struct zconf_supervisor *t, int crashes)
{
	int64_t d = t->backoff_min_ms;

	for (int n = 1; n < crashes && d < t->backoff_max_ms; n++)
		d *= 2;
	return d < t->backoff_max_ms ? d : t->backoff_max_ms;
}

struct sv_instance *sv_instance_new(const char *name)
{
	struct sv_instance *i = calloc(1, sizeof(*i));

	if (!i || !(i->name = strdup(name)))
		abort();
	i->state = SV_DOWN;
	sv_health_init(&i->check);
	sv_info_clear(&i->info);
	i->topo.epoch = -1;
	i->lease_until_ms = -1;
	i->lease_sent_ms = -1;
	i->lease_applied_ms = -1;
	return i;
}

static void clear_pending(struct sv_instance *i)
{
	for (int k = 0; k < SV_SET__COUNT; k++) {
		free(i->pending_set[k]);
		i->pending_set[k] = NULL;
		free(i->sent_set[k]);
		i->sent_set[k] = NULL;
	}
}

const char *sv_set_name(int k)
{
	if (k == SV_SET_MASTERAUTH)
		return "masterauth";
	if (k == SV_SET_REPLICAOF)
		return "replicaof";
	return zconf_key_name((enum zconf_key)k);
}

void sv_instance_queue_set(struct sv_instance *i, int k, const char *value)
{
	free(i->pending_set[k]);
	i->pending_set[k] = strdup(value);
	if (!i->pending_set[k])
		abort();
	i->next_check_ms = 0; /* apply it now, not at the next interval */
}

/* A check that failed before its CONFIG SETs were answered: they go with
 * the next check, unless a later reload queued a newer value meanwhile. */
static void requeue_sent(struct sv_instance *i)
{
	for (int k = 0; k < SV_SET__COUNT; k++) {
		if (!i->sent_set[k])
			continue;
		if (i->pending_set[k])
			free(i->sent_set[k]);
		else
			i->pending_set[k] = i->sent_set[k];
		i->sent_set[k] = NULL;
	}
}

void sv_instance_free(struct sv_instance *i)
{
	if (!i)
		return;
	sv_health_reset(&i->check);
	clear_pending(i);
	free(i->password);
	free(i->name);
	free(i);
}

bool sv_instance_is_running(const struct sv_instance *i)
{
	return i->pid > 0;
}

static void set_error(struct sv_instance *i, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_error(struct sv_instance *i, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(i->last_error, sizeof(i->last_error), fmt, ap);
	va_end(ap);
}

/* fork + exec zarisd for I's node. The child reports a failed exec through
 * a close-on-exec pipe, so "no such binary" is an error here, not a crash
 * to back off from. Returns 0 or -errno (last_error set). */
static int spawn_process(struct sv_instance *i, const struct sv_params *p)
{
	const struct zconf_node *node = zconf_find_node(p->conf, i->name);
	const char *pw;
	char **argv;
	int pfd[2], child_errno = 0;
	pid_t parent = getpid(), pid;
	ssize_t n;

	if (!node) {
		set_error(i, "node is not in the configuration");
		return -ENOENT;
	}
	/* each instance keeps its persistence files in its own directory,
	 * created here so a new node starts without manual steps */
	char dir[4096];
	if (zconf_node_dir(p->conf, node, dir, sizeof(dir)) < 0 || sv_mkdir_parents(dir) < 0) {
		set_error(i, "data directory %s: %s", dir, strerror(errno ? errno : ENAMETOOLONG));
		return -EIO;
	}
	argv = zconf_node_argv(p->conf, node, p->zarisd);
	if (!argv)
		return -ENOMEM;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		set_error(i, "pipe: %s", strerror(errno));
		zconf_argv_free(argv);
		return -errno;
	}
	pid = fork();
	if (pid == 0) {
		sigset_t none;
		int devnull = open("/dev/null", O_RDONLY);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		/* An instance must not outlive its supervisor: a new supervisor
		 * could not bind its port. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		/* Own process group: a ^C meant for the supervisor does not reach
		 * instances behind its back; it stops them itself. */
		setpgid(0, 0);
		if (CPU_COUNT(&node->cores) > 0 &&
		    sched_setaffinity(0, sizeof(node->cores), &node->cores) < 0)
			child_errno = errno;
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			close(devnull);
		}
		if (!child_errno)
			execv(argv[0], argv);
		child_errno = child_errno ? child_errno : errno;
		if (write(pfd[1], &child_errno, sizeof(child_errno)) < 0)
			_exit(126);
		_exit(127);
	}
	close(pfd[1]);
	if (pid < 0) {
		set_error(i, "fork: %s", strerror(errno));
		close(pfd[0]);
		zconf_argv_free(argv);
		return -EAGAIN;
	}
	do
		n = read(pfd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == (ssize_t)sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		set_error(i, "cannot start %s: %s", p->zarisd, strerror(child_errno));
		zconf_argv_free(argv);
		return -child_errno;
	}
	i->pid = pid;
	free(i->password);
	pw = zconf_node_value(p->conf, node, ZCONF_K_REQUIREPASS);
	i->password = pw && *pw ? strdup(pw) : NULL;
	clear_pending(i); /* it starts with the current configuration */
	if (node->role == ZCONF_ROLE_REPLICA) {
		char target[128];

		zconf_replicaof(p->conf, node, target, sizeof(target));
		sv_log(LOG_NOTICE, "%s: starts as a replica of %s (%s)", i->name, node->replica_of, target);
	}
	zconf_argv_free(argv);
	return 0;
}

static void stop_checking(struct sv_instance *i)
{
	sv_health_reset(&i->check);
	i->loading = false;
	i->up_since_ms = 0;
	i->health_fails = 0;
}

/* ---- actions: each sets the next state ---- */

static void to_backoff(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	const struct zconf_supervisor *t = &p->conf->sv;
	int64_t delay;

	stop_checking(i);
	i->crashes++;
	delay = sv_backoff_ms(t, i->crashes);
	i->want_up = true;
	i->timer_ms = now + delay;
	i->state = i->crashes >= t->crash_loop_restarts ? SV_CRASHLOOP : SV_BACKOFF;
	sv_log(i->state == SV_CRASHLOOP ? LOG_ERR : LOG_WARNING,
	       "%s: %s (%d in a row); restarting in %lld ms", i->name,
	       i->state == SV_CRASHLOOP ? "crash loop" : "failed", i->crashes, (long long)delay);
}

static void a_spawn(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	bool first = i->started_ms == 0;

	i->want_up = true;
	i->timer_ms = 0;
	if (spawn_process(i, p) < 0) {
		sv_log(LOG_ERR, "%s: %s", i->name, i->last_error);
		to_backoff(i, p, now);
		return;
	}
	if (!first)
		i->restarts++;
	i->started_ms = now;
	i->lease_applied_ms = -1; /* a new process holds no lease */
	i->state = SV_STARTING;
	i->timer_ms = now + p->conf->sv.start_timeout_ms;
	i->next_check_ms = now + SV_STARTING_CHECK_MS;
	sv_info_clear(&i->info);
	/* a new process: what it holds is known from its first check */
	i->topo.synced = false;
	i->topo.epoch = -1;
	i->topo.ahead = 0;
	sv_log(LOG_NOTICE, "%s: started zarisd pid %d%s", i->name, (int)i->pid, first ? "" : " (restart)");
}

static void send_term(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	stop_checking(i);
	if (i->pid > 0) {
		kill(i->pid, SIGTERM);
		/* A SIGSTOPped process keeps SIGTERM pending; let it act on it. */
		kill(i->pid, SIGCONT);
	}
	i->state = SV_STOPPING;
	i->timer_ms = now + p->conf->sv.stop_timeout_ms;
	sv_log(LOG_NOTICE, "%s: stopping pid %d (SIGTERM)", i->name, (int)i->pid);
}

static void a_stop(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->want_up = false;
	i->stop_is_failure = false;
	send_term(i, p, now);
}

static void a_restart(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->want_up = true;
	i->stop_is_failure = false;
	send_term(i, p, now);
}

static void restart_failed(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	sv_log(LOG_ERR, "%s: %s; restarting", i->name, i->last_error);
	i->want_up = true;
	i->stop_is_failure = true;
	send_term(i, p, now);
}

static void describe_exit(struct sv_instance *i)
{
	int st = i->exit_status;

	if (WIFSIGNALED(st))
		set_error(i, "pid %d killed by signal %d (%s)", (int)i->pid, WTERMSIG(st),
			  strsignal(WTERMSIG(st)));
	else
		set_error(i, "pid %d exited with status %d", (int)i->pid, WEXITSTATUS(st));
}

static void a_crashed(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	describe_exit(i);
	sv_log(LOG_ERR, "%s: %s", i->name, i->last_error);
	i->pid = 0;
	to_backoff(i, p, now);
}

static void a_stopped(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	sv_log(LOG_NOTICE, "%s: pid %d stopped", i->name, (int)i->pid);
	i->pid = 0;
	i->timer_ms = 0;
	if (!i->want_up) {
		i->state = SV_DOWN;
		return;
	}
	if (i->stop_is_failure)
		to_backoff(i, p, now);
	else
		a_spawn(i, p, now);
}

static void a_kill(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	sv_log(LOG_WARNING, "%s: pid %d did not stop within %d ms; SIGKILL", i->name, (int)i->pid,
	       p->conf->sv.stop_timeout_ms);
	if (i->pid > 0)
		kill(i->pid, SIGKILL);
	i->timer_ms = now + p->conf->sv.stop_timeout_ms;
}

static void a_want_up(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->want_up = true;
}

static void a_want_down(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->want_up = false;
}

static void a_down(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->want_up = false;
	i->timer_ms = 0;
	i->state = SV_DOWN;
	sv_log(LOG_NOTICE, "%s: stopped", i->name);
}

static void a_became_up(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->state = SV_UP;
	i->timer_ms = 0;
	i->up_since_ms = now;
	i->health_fails = 0;
	sv_log(LOG_NOTICE, "%s: up (pid %d answers on port %d)", i->name, (int)i->pid,
	       zconf_find_node(p->conf, i->name) ? zconf_find_node(p->conf, i->name)->port : 0);
}

static void a_healthy(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	if (i->state == SV_UNHEALTHY)
		sv_log(LOG_NOTICE, "%s: healthy again", i->name);
	i->state = SV_UP;
	i->health_fails = 0;
	if (i->crashes && now - i->up_since_ms >= p->conf->sv.stable_ms)
		i->crashes = 0; /* stable long enough: the next crash starts over */
}

static void a_unhealthy(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	i->health_fails++;
	if (i->health_fails >= p->conf->sv.health_failures) {
		set_error(i, "health check failed %d times: %.180s", i->health_fails, i->check.error);
		restart_failed(i, p, now);
		return;
	}
	sv_log(LOG_WARNING, "%s: health check failed (%d/%d): %s", i->name, i->health_fails,
	       p->conf->sv.health_failures, i->check.error);
	i->state = SV_UNHEALTHY;
}

static void a_start_timeout(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	set_error(i, "did not answer PING within start-timeout (%d ms): %.150s", p->conf->sv.start_timeout_ms,
		  i->check.error[0] ? i->check.error : "no answer");
	restart_failed(i, p, now);
}

/* What each event does in each state; NULL: nothing (the event is stale or
 * irrelevant there, e.g. a health result after the instance was stopped). */
/* clang-format off */
static const sv_action_fn sv_table[SV__NSTATES][SV__NEVENTS] = {
	/*                 START      STOP         RESTART    EXIT        HEALTH_OK    HEALTH_FAIL  TIMER */
	[SV_DOWN] =      { a_spawn,   NULL,        a_spawn,   NULL,       NULL,        NULL,        NULL },
	[SV_STARTING] =  { NULL,      a_stop,      a_restart, a_crashed,  a_became_up, NULL,        a_start_timeout },
	[SV_UP] =        { NULL,      a_stop,      a_restart, a_crashed,  a_healthy,   a_unhealthy, NULL },
	[SV_UNHEALTHY] = { NULL,      a_stop,      a_restart, a_crashed,  a_healthy,   a_unhealthy, NULL },
	[SV_STOPPING] =  { a_want_up, a_want_down, a_want_up, a_stopped,  NULL,        NULL,        a_kill },
	[SV_BACKOFF] =   { a_spawn,   a_down,      a_spawn,   NULL,       NULL,        NULL,        a_spawn },
	[SV_CRASHLOOP] = { a_spawn,   a_down,      a_spawn,   NULL,       NULL,        NULL,        a_spawn },
};
/* clang-format on */

void sv_instance_event(struct sv_instance *i, enum sv_event event, const struct sv_params *p, int64_t now)
{
	sv_action_fn fn = sv_table[i->state][event];

	if (fn)
		fn(i, p, now);
}

bool sv_instance_check_start(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	const char *argv[4];
	char target[128];

	if (i->state != SV_STARTING && i->state != SV_UP && i->state != SV_UNHEALTHY)
		return false;
	if (i->check.fd >= 0 || i->check.done || now < i->next_check_ms)
		return false;
	const struct zconf_node *node = zconf_find_node(p->conf, i->name);
	if (!node)
		return false;
	sv_health_reset(&i->check);
	if (i->password) {
		argv[0] = "AUTH";
		argv[1] = i->password;
		sv_health_add(&i->check, 2, argv);
	}
	/* The pending changes move to this check: a reload while it is in
	 * flight queues new ones, which this check must not count as sent
	 * (a reload racing a check used to be marked applied unsent). */
	for (int k = 0; k < SV_SET__COUNT; k++) {
		if (!i->pending_set[k])
			continue;
		free(i->sent_set[k]);
		i->sent_set[k] = i->pending_set[k];
		i->pending_set[k] = NULL;
		if (k == SV_SET_REPLICAOF) {
			/* "HOST PORT" or "NO ONE": two arguments either way */
			snprintf(target, sizeof(target), "%s", i->sent_set[k]);
			char *sp = strchr(target, ' ');
			if (!sp)
				continue;
			*sp = '\0';
			argv[0] = "REPLICAOF";
			argv[1] = target;
			argv[2] = sp + 1;
			sv_health_add(&i->check, 3, argv);
			continue;
		}
		argv[0] = "CONFIG";
		argv[1] = "SET";
		argv[2] = sv_set_name(k);
		argv[3] = i->sent_set[k];
		sv_health_add(&i->check, 4, argv);
	}
	/* Cluster mode: the push until the instance shows the document, then
	 * on every check the read-back that notices a restart with an older
	 * file (or a lost one). Before PING, which stays last but one. */
	if (p->topo && p->topo->enabled) {
		char *doc = i->topo.synced ? NULL : sv_topology_document(p->topo, p->conf, node);

		argv[0] = "CLUSTER";
		if (doc) {
			argv[1] = "SETTOPOLOGY";
			argv[2] = doc;
			if (sv_health_add_topology(&i->check, 0, 3, argv) < 0)
				set_error(i, "topology document too long for one push");
			free(doc);
		}
		argv[1] = "TOPOLOGY";
		sv_health_add_topology(&i->check, 1, 2, argv);
	}
	i->lease_sent_ms = i->lease_until_ms;
	if (i->lease_until_ms >= 0) {
		char until[32];
		snprintf(until, sizeof(until), "%lld", (long long)i->lease_until_ms);
		argv[0] = "CLUSTER";
		argv[1] = "LEASE";
		argv[2] = until;
		sv_health_add(&i->check, 3, argv);
	}
	argv[0] = "PING";
	sv_health_add(&i->check, 1, argv);
	argv[0] = "INFO";
	sv_health_add(&i->check, 1, argv);
	sv_health_start(&i->check, node->address, node->port, now + p->conf->sv.health_timeout_ms);
	return true;
}

/* Cluster mode, after a check the instance answered: what its topology is
 * now. A document other than ours is pushed with the next check (at once
 * when this one did not push; after a health-interval when it did and the
 * instance still differs, so that a refusal does not spin). */
static void topo_after_check(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	struct sv_health *h = &i->check;
	const struct zconf_node *node = zconf_find_node(p->conf, i->name);
	bool pushed = h->push_reply >= 0;
	char *want;

	if (!node || h->topo_reply < 0)
		return;
	want = sv_topology_document(p->topo, p->conf, node);
	if (pushed && !h->push_error[0]) {
		i->topo.pushes++;
		i->topo.push_error[0] = '\0';
	} else if (pushed && strcmp(h->push_error, i->topo.push_error) != 0) {
		sv_log(LOG_WARNING, "%s: topology epoch %lld refused: %s", i->name, p->topo->epoch,
		       h->push_error);
		snprintf(i->topo.push_error, sizeof(i->topo.push_error), "%s", h->push_error);
		set_error(i, "topology push refused: %.200s", h->push_error);
	}
	if (h->topo_error[0]) {
		set_error(i, "CLUSTER TOPOLOGY: %.200s", h->topo_error);
		i->topo.synced = false;
		i->topo.epoch = -1;
	} else {
		bool was = i->topo.synced;

		i->topo.epoch = h->topo ? sv_topology_doc_epoch(h->topo) : -1;
		i->topo.synced = h->topo && sv_topology_doc_equal(h->topo, want);
		if (i->topo.synced && !was && pushed)
			sv_log(LOG_NOTICE, "%s: topology epoch %lld pushed", i->name, p->topo->epoch);
		else if (!i->topo.synced && was)
			sv_log(LOG_NOTICE, "%s: shows topology epoch %lld, not epoch %lld: pushing again",
			       i->name, i->topo.epoch, p->topo->epoch);
		/* Newer than ours (our state was lost), or ours in number with
		 * another layout (zarisd said so): only a higher epoch is taken. */
		if (!i->topo.synced &&
		    (i->topo.epoch > p->topo->epoch ||
		     (pushed && strstr(h->push_error, "is the current epoch with a different layout"))))
			i->topo.ahead = i->topo.epoch > p->topo->epoch ? i->topo.epoch : p->topo->epoch;
	}
	if (!i->topo.synced && !pushed)
		i->next_check_ms = now;
	free(want);
}

/* Live changes went through with this check: remember what the process now
 * runs with (the password the next check must AUTH with). */
static void pending_applied(struct sv_instance *i)
{
	for (int k = 0; k < SV_SET__COUNT; k++) {
		if (!i->sent_set[k])
			continue;
		if (k == SV_SET_REPLICAOF)
			sv_log(LOG_NOTICE, "%s: REPLICAOF %s applied without restart", i->name,
			       i->sent_set[k]);
		else
			sv_log(LOG_NOTICE, "%s: CONFIG SET %s applied without restart", i->name,
			       sv_set_name(k));
		if (k == ZCONF_K_REQUIREPASS) {
			free(i->password);
			i->password = i->sent_set[k][0] ? strdup(i->sent_set[k]) : NULL;
		}
		free(i->sent_set[k]);
		i->sent_set[k] = NULL;
	}
}

void sv_instance_check_done(struct sv_instance *i, const struct sv_params *p, int64_t now)
{
	struct sv_health *h = &i->check;
	bool had_pending = false;

	if (!h->done)
		return;
	for (int k = 0; k < SV_SET__COUNT; k++)
		had_pending |= i->sent_set[k] != NULL;
	i->next_check_ms =
		now + (i->state == SV_STARTING ? SV_STARTING_CHECK_MS : p->conf->sv.health_interval_ms);
	if (h->ok && h->info.process_id > 0 && h->info.process_id != i->pid) {
		h->ok = false;
		snprintf(h->error, sizeof(h->error), "port answered by another process (pid %lld)",
			 h->info.process_id);
	}
	if (h->ok) {
		if (had_pending)
			pending_applied(i);
		i->info = h->info;
		i->last_ok_ms = now;
		i->lease_applied_ms = i->lease_sent_ms;
		if (strcmp(i->info.master_link_status, "up") == 0) {
			i->link_up_ms = now;
		} else if (i->info.master_link_down_since_seconds >= 0) {
			/* in sync since the last check, if only between two: the
			 * replica says when it last was (whole seconds, so counted
			 * a second earlier), or a replica whose primary died
			 * within a health interval of its first sync would never
			 * be a candidate */
			int64_t up_ms = now - (i->info.master_link_down_since_seconds + 1) * 1000;
			if (up_ms > i->link_up_ms)
				i->link_up_ms = up_ms;
		}
		if (i->loading)
			sv_log(LOG_NOTICE, "%s: done loading", i->name);
		i->loading = false;
		if (p->topo && p->topo->enabled)
			topo_after_check(i, p, now);
		sv_instance_event(i, SV_EV_HEALTH_OK, p, now);
	} else if (strncmp(h->error, "error reply: LOADING", 20) == 0 &&
		   (i->state == SV_UP || i->state == SV_UNHEALTHY)) {
		/* A replica loading a full sync (or any instance loading) answers,
		 * only not yet with data: alive, not a failed check, or a long
		 * sync would be cut short by a restart. Its live changes wait. A
		 * start that loads stays bounded by start-timeout (STARTING). */
		requeue_sent(i);
		if (!i->loading)
			sv_log(LOG_NOTICE, "%s: loading its data (%s); not counted as a failed check",
			       i->name, h->error + 13);
		i->loading = true;
	} else {
		if (had_pending && strncmp(h->error, "error reply", 11) == 0) {
			/* zarisd refused a live change: keep it healthy and say so;
			 * `zarisctl restart` applies the file. */
			sv_log(LOG_WARNING, "%s: live config change refused (%s); restart it to apply",
			       i->name, h->error);
			set_error(i, "live config change refused: %.200s", h->error);
			for (int k = 0; k < SV_SET__COUNT; k++) {
				free(i->sent_set[k]);
				i->sent_set[k] = NULL;
			}
			i->next_check_ms = now;
		} else {
			requeue_sent(i);
			if (i->state != SV_STARTING)
				set_error(i, "health check: %.200s", h->error);
			sv_instance_event(i, SV_EV_HEALTH_FAIL, p, now);
		}
	}
	if (i->check.done)
		sv_health_reset(&i->check);
}
