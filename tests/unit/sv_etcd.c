/* sv_etcd — the etcd client against a real 3-member etcd on 127.0.0.1 (skips
 * without /usr/bin/etcd), and etcd_member's argv. */
#include "supervisor/etcd.h"
#include "supervisor/etcd_member.h"
#include "tests/tap.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t pids[3];
static char dir[64] = "/dev/shm/sv_etcd.XXXXXX";

static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(a);
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &l);
	close(fd);
	return ntohs(a.sin_port);
}

static void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void stop(int i)
{
	if (pids[i] <= 0)
		return;
	kill(pids[i], SIGTERM);
	for (int k = 0; k < 50; k++) {
		if (waitpid(pids[i], NULL, WNOHANG) == pids[i]) {
			pids[i] = 0;
			return;
		}
		msleep(100);
	}
	kill(pids[i], SIGKILL);
	waitpid(pids[i], NULL, 0);
	pids[i] = 0;
}

static void kill9(int i)
{
	kill(pids[i], SIGKILL);
	waitpid(pids[i], NULL, 0);
	pids[i] = 0;
}

int main(void)
{
	/* etcd_member's argv, pure */
	struct etcd_member m = {
		"/usr/bin/etcd",	 "n1",	"/d/n1", "http://127.0.0.1:1", "http://127.0.0.1:2",
		"n1=http://127.0.0.1:2", "tok", false
	};
	char **av = etcd_member_argv(&m);
	int n = 0;
	while (av[n])
		n++;
	if (access("/usr/bin/etcd", X_OK) != 0) {
		etcd_member_argv_free(av);
		skip_all("no /usr/bin/etcd");
	}
	is_int(n, 29, "member argv: 29 words");
	is_str(av[0], "/usr/bin/etcd", "argv[0] is the binary");
	is_str(av[2], "n1", "--name");
	is_str(av[14], "n1=http://127.0.0.1:2", "--initial-cluster");
	is_str(av[24], "warn", "warnings and worse only");
	is_str(av[28], "stderr", "logs to stderr");
	etcd_member_argv_free(av);

	ok(etcd_global_init() == 0, "global init");
	if (!mkdtemp(dir))
		skip_all("mkdtemp");
	int cport[3], pport[3];
	char curl_[3][64], purl[3][64], cl[256] = "", eps[256] = "", ddir[3][128], name[3][8];
	for (int i = 0; i < 3; i++) {
		cport[i] = free_port();
		pport[i] = free_port();
		snprintf(curl_[i], 64, "http://127.0.0.1:%d", cport[i]);
		snprintf(purl[i], 64, "http://127.0.0.1:%d", pport[i]);
		snprintf(name[i], 8, "n%d", i + 1);
		snprintf(ddir[i], 128, "%s/%s", dir, name[i]);
		snprintf(cl + strlen(cl), sizeof(cl) - strlen(cl), "%s%s=%s", i ? "," : "", name[i], purl[i]);
		snprintf(eps + strlen(eps), sizeof(eps) - strlen(eps), "%s%s", i ? "," : "", curl_[i]);
	}
	for (int i = 0; i < 3; i++) {
		struct etcd_member mm = { "/usr/bin/etcd", name[i], ddir[i],	    curl_[i],
					  purl[i],	   cl,	    "sv-etcd-test", false };
		char **a = etcd_member_argv(&mm), log[160];
		snprintf(log, sizeof(log), "%s/%s.log", dir, name[i]);
		pid_t p = fork();
		if (p == 0) {
			int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			dup2(fd, 1);
			dup2(fd, 2);
			execv(a[0], a);
			_exit(127);
		}
		pids[i] = p;
		etcd_member_argv_free(a);
	}
	char err[256];
	struct etcd *e = etcd_new(eps, 2000, err, sizeof(err));
	ok(e != NULL, "client: %s", e ? "made" : err);
	ok(etcd_new("127.0.0.1:1", 100, err, sizeof(err)) == NULL, "bad endpoint refused: %s", err);
	int rc = -1;
	for (int k = 0; k < 100 && rc != 0; k++) {
		rc = etcd_put(e, "/t/ready", "1", 0);
		if (rc)
			msleep(100);
	}
	if (!ok(rc == 0, "cluster healthy (a put succeeds)"))
		goto out;

	struct etcd_kvs kvs;
	is_int(etcd_put(e, "/t/a", "one", 0), 0, "put /t/a");
	is_int(etcd_put(e, "/t/b", "two words\nand UTF-8 \xc3\xa9", 0), 0, "put /t/b");
	is_int(etcd_put(e, "/u", "x", 0), 0, "put /u");
	is_int(etcd_get(e, "/t/a", false, &kvs), 0, "get /t/a");
	ok(kvs.n == 1 && strcmp(kvs.kv[0].value, "one") == 0 && kvs.kv[0].version == 1 && kvs.revision > 0,
	   "get /t/a: one, version 1");
	etcd_kvs_free(&kvs);
	is_int(etcd_get(e, "/t/", true, &kvs), 0, "prefix get /t/");
	ok(kvs.n == 3 && strcmp(kvs.kv[1].key, "/t/b") == 0 &&
		   strcmp(kvs.kv[1].value, "two words\nand UTF-8 \xc3\xa9") == 0 && kvs.kv[1].value_len == 22,
	   "prefix get: 3 keys, the value with spaces/newline/UTF-8 intact");
	etcd_kvs_free(&kvs);
	is_int(etcd_delete(e, "/t/a", false), 0, "delete /t/a");
	etcd_get(e, "/t/a", false, &kvs);
	is_int(kvs.n, 0, "/t/a gone");
	etcd_kvs_free(&kvs);

	/* leases */
	int64_t id = 0;
	int ttl = 0;
	is_int(etcd_lease_grant(e, 2, &id, &ttl), 0, "lease grant");
	ok(id != 0 && ttl == 2, "lease id and TTL 2");
	is_int(etcd_put(e, "/t/leased", "me", id), 0, "put with lease");
	is_int(etcd_lease_keepalive(e, id, &ttl), 0, "keepalive");
	etcd_get(e, "/t/leased", false, &kvs);
	ok(kvs.n == 1 && kvs.kv[0].lease == id, "leased key carries the lease");
	etcd_kvs_free(&kvs);
	size_t left = 1;
	for (int k = 0; k < 100 && left; k++) {
		msleep(100);
		etcd_get(e, "/t/leased", false, &kvs);
		left = kvs.n;
		etcd_kvs_free(&kvs);
	}
	is_int(left, 0, "leased key gone after expiry");
	is_int(etcd_lease_keepalive(e, id, &ttl), -ENOENT, "keepalive of an expired lease: -ENOENT");
	is_int(etcd_lease_grant(e, 30, &id, NULL), 0, "second lease");
	etcd_put(e, "/t/leased2", "x", id);
	is_int(etcd_lease_revoke(e, id), 0, "revoke");
	etcd_get(e, "/t/leased2", false, &kvs);
	is_int(kvs.n, 0, "revoked lease's key gone");
	etcd_kvs_free(&kvs);
	is_int(etcd_lease_revoke(e, id), -ENOENT, "revoke again: -ENOENT");

	/* txn: create-if-absent, twice */
	bool won = false;
	for (int c = 0; c < 2; c++) {
		struct etcd_txn *t = etcd_txn_new();
		etcd_txn_cmp_create_rev(t, "/t/leader", ETCD_EQUAL, 0);
		etcd_txn_put(t, true, "/t/leader", c ? "node-b" : "node-a", 0);
		etcd_txn_get(t, false, "/t/leader", false);
		is_int(etcd_txn_commit(e, t, &won, &kvs), 0, "txn %d commits", c);
		if (c == 0)
			ok(won && kvs.n == 0, "first contender wins");
		else
			ok(!won && kvs.n == 1 && strcmp(kvs.kv[0].value, "node-a") == 0,
			   "second loses and sees node-a");
		if (c == 1) {
			int64_t mod = kvs.kv[0].mod_rev;
			etcd_kvs_free(&kvs);
			etcd_txn_free(t);
			t = etcd_txn_new();
			etcd_txn_cmp_value(t, "/t/leader", ETCD_EQUAL, "node-a");
			etcd_txn_cmp_mod_rev(t, "/t/leader", ETCD_EQUAL, mod);
			etcd_txn_put(t, true, "/t/leader", "node-a2", 0);
			etcd_txn_commit(e, t, &won, NULL);
			ok(won, "value+mod_rev compare holds");
			etcd_txn_commit(e, t, &won, NULL);
			ok(!won, "same compare again fails (value and mod_rev changed)");
		}
		etcd_kvs_free(&kvs);
		etcd_txn_free(t);
	}

	/* failover: kill the member last used */
	const char *last = etcd_last_endpoint(e);
	int victim = -1;
	for (int i = 0; i < 3; i++)
		if (last && strcmp(last, curl_[i]) == 0)
			victim = i;
	ok(victim >= 0, "last endpoint known: %s", last ? last : "-");
	if (victim >= 0)
		kill9(victim);
	rc = -1;
	for (int k = 0; k < 10 && rc != 0; k++)
		rc = etcd_put(e, "/t/after", "ok", 0);
	is_int(rc, 0, "put after kill -9 of the member used");
	ok(etcd_last_endpoint(e) && strcmp(etcd_last_endpoint(e), curl_[victim]) != 0, "via another member");
	for (int i = 0; i < 3; i++)
		if (pids[i] > 0) {
			kill9(i);
			break;
		}
	rc = etcd_put(e, "/t/noquorum", "x", 0);
	is_int(rc, -ETIMEDOUT, "2 of 3 dead: put -ETIMEDOUT (%s)", etcd_last_error(e));

	char down[128];
	snprintf(down, sizeof(down), "http://127.0.0.1:%d,http://127.0.0.1:%d", cport[0], cport[victim]);
	struct etcd *d = etcd_new(down, 300, err, sizeof(err));
	rc = etcd_put(d, "/x", "y", 0);
	ok(rc == -ECONNREFUSED || rc == -ETIMEDOUT, "unreachable endpoints: %d (%s)", rc, etcd_last_error(d));
	etcd_free(d);
out:
	etcd_free(e);
	for (int i = 0; i < 3; i++)
		stop(i);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		diag("could not remove %s", dir);
	return done_testing();
}
