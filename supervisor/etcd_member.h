/* etcd_member — the argv of one etcd member the supervisor runs (pure: no
 * process management, no I/O). Any thread.
 */
#ifndef SV_ETCD_MEMBER_H
#define SV_ETCD_MEMBER_H

#include <stdbool.h>

struct etcd_member {
	const char *bin;	     /* etcd's path, argv[0] */
	const char *name;	     /* --name */
	const char *data_dir;	     /* --data-dir */
	const char *client_url;	     /* listened on and advertised */
	const char *peer_url;	     /* listened on and advertised */
	const char *initial_cluster; /* "n1=http://a:p,n2=..." of every member */
	const char *token;	     /* --initial-cluster-token */
	bool has_data;		     /* DATA_DIR already holds a member */
};

/* The NULL-terminated argv for M, malloc'd (strings and array: free with
 * etcd_member_argv_free), or NULL when out of memory. The cluster flags are
 * always given with --initial-cluster-state new: when the data dir already
 * holds a member (has_data) etcd restarts from its WAL and ignores every
 * --initial-* flag, so "existing" is never needed. */
char **etcd_member_argv(const struct etcd_member *m);

/* Frees what etcd_member_argv() returned; NULL is ignored. */
void etcd_member_argv_free(char **argv);

#endif
