/* etcd_run — see etcd_run.h. */
#include "supervisor/etcd_run.h"

#include "supervisor/dirs.h"
#include "supervisor/etcd_member.h"
#include "supervisor/log.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ETCD_BACKOFF_MIN_MS 1000
#define ETCD_BACKOFF_MAX_MS 16000

static int spawn(struct sv_etcd_run *r, const struct zconf *conf, int64_t now)
{
	const struct zconf_machine *m = &conf->coord.machines[conf->coord.local_machine];
	char dir[4096], cluster[4096], client[128], peer[128], token[512];

	if (zconf_etcd_member_dir(conf, m, dir, sizeof(dir)) < 0 || sv_mkdir_parents(dir) < 0) {
		sv_log(LOG_ERR, "etcd member %s: data directory %s: %s", m->name, dir, strerror(errno));
		return -EIO;
	}
	zconf_etcd_initial_cluster(conf, cluster, sizeof(cluster));
	snprintf(client, sizeof(client), "http://%s:%d", m->address, m->etcd_client_port);
	snprintf(peer, sizeof(peer), "http://%s:%d", m->address, m->etcd_peer_port);
	snprintf(token, sizeof(token), "zaris-%s", conf->cluster_name ? conf->cluster_name : "cluster");
	char wal[4200];
	struct stat st;
	snprintf(wal, sizeof(wal), "%s/member", dir); /* what etcd keeps once it has run */
	struct etcd_member em = { .bin = r->path,
				  .name = m->name,
				  .data_dir = dir,
				  .client_url = client,
				  .peer_url = peer,
				  .initial_cluster = cluster,
				  .token = token,
				  .has_data = stat(wal, &st) == 0 };
	char **argv = etcd_member_argv(&em);
	if (!argv)
		return -ENOMEM;
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		prctl(PR_SET_PDEATHSIG, SIGTERM); /* as the instances: never outlive the supervisor */
		if (getppid() != parent)
			_exit(127);
		setpgid(0, 0);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	etcd_member_argv_free(argv);
	if (pid < 0) {
		sv_log(LOG_ERR, "etcd member %s: fork: %s", m->name, strerror(errno));
		return -EAGAIN;
	}
	r->pid = pid;
	r->started_ms = now;
	r->restart_ms = 0;
	sv_log(LOG_NOTICE, "etcd member %s started (pid %d): client %s, peer %s, data %s", m->name, (int)pid,
	       client, peer, dir);
	return 0;
}

int sv_etcd_run_start(struct sv_etcd_run *r, const struct zconf *conf, int64_t now)
{
	memset(r, 0, sizeof(*r));
	if (!conf->coord.enabled || !conf->coord.run_etcd)
		return 0;
	if (conf->coord.local_machine < 0) {
		sv_log(LOG_ERR, "etcd = \"run\": which machine this is is not known; start the supervisor "
				"with --machine NAME");
		return -EINVAL;
	}
	r->enabled = true;
	snprintf(r->path, sizeof(r->path), "%s", getenv("ZARIS_ETCD") ? getenv("ZARIS_ETCD") : "etcd");
	return spawn(r, conf, now);
}

bool sv_etcd_run_exited(struct sv_etcd_run *r, pid_t pid, int status, int64_t now)
{
	if (!r->enabled || pid != r->pid)
		return false;
	r->pid = 0;
	if (now - r->started_ms > 60000)
		r->crashes = 0;
	int64_t delay = ETCD_BACKOFF_MIN_MS << (r->crashes < 4 ? r->crashes : 4);
	if (delay > ETCD_BACKOFF_MAX_MS)
		delay = ETCD_BACKOFF_MAX_MS;
	r->crashes++;
	r->restart_ms = now + delay;
	sv_log(LOG_WARNING, "etcd member (pid %d) exited (%s %d); restarting in %lld ms", (int)pid,
	       WIFSIGNALED(status) ? "signal" : "status",
	       WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), (long long)delay);
	return true;
}

void sv_etcd_run_tick(struct sv_etcd_run *r, const struct zconf *conf, int64_t now)
{
	if (r->enabled && !r->pid && r->restart_ms && now >= r->restart_ms && spawn(r, conf, now) < 0)
		r->restart_ms = now + ETCD_BACKOFF_MAX_MS;
}

int64_t sv_etcd_run_next(const struct sv_etcd_run *r)
{
	return r->enabled && !r->pid && r->restart_ms ? r->restart_ms : INT64_MAX;
}

void sv_etcd_run_stop(struct sv_etcd_run *r, int grace_ms)
{
	if (!r->enabled || !r->pid)
		return;
	kill(r->pid, SIGTERM);
	/* a member that lost quorum can ignore SIGTERM for seconds (OPS-TESTING §5) */
	for (int waited = 0; waited < grace_ms; waited += 50) {
		if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
			r->pid = 0;
			return;
		}
		struct timespec ts = { 0, 50 * 1000000L };
		nanosleep(&ts, NULL);
	}
	kill(r->pid, SIGKILL);
	waitpid(r->pid, NULL, 0);
	r->pid = 0;
}
