/* etcd_member — see etcd_member.h. */
#include "supervisor/etcd_member.h"

#include <stdlib.h>
#include <string.h>

char **etcd_member_argv(const struct etcd_member *m)
{
	const char *v[] = {
		m->bin,
		"--name",
		m->name,
		"--data-dir",
		m->data_dir,
		"--listen-client-urls",
		m->client_url,
		"--advertise-client-urls",
		m->client_url,
		"--listen-peer-urls",
		m->peer_url,
		"--initial-advertise-peer-urls",
		m->peer_url,
		"--initial-cluster",
		m->initial_cluster,
		"--initial-cluster-token",
		m->token,
		"--initial-cluster-state",
		"new",
		"--heartbeat-interval",
		"100",
		"--election-timeout",
		"1000",
		"--log-level",
		"warn", /* its info lines would flood the supervisor's journal */
		"--logger",
		"zap",
		"--log-outputs",
		"stderr",
	};
	size_t n = sizeof(v) / sizeof(v[0]);
	char **argv = calloc(n + 1, sizeof(*argv));
	if (!argv)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (!(argv[i] = strdup(v[i] ? v[i] : ""))) {
			etcd_member_argv_free(argv);
			return NULL;
		}
	}
	return argv;
}

void etcd_member_argv_free(char **argv)
{
	if (!argv)
		return;
	for (char **p = argv; *p; p++)
		free(*p);
	free(argv);
}
