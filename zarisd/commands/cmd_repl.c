/* cmd_repl — REPLICAOF / SLAVEOF, ROLE, PSYNC / SYNC, REPLCONF, WAIT: the
 * commands of replication (repl/repl.h does the work). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/core/log.h"
#include "zarisd/proto/reply.h"
#include "zarisd/repl/repl.h"
#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"

static bool have_repl(struct client *c)
{
	if (c->srv->repl)
		return true;
	reply_error(&c->out, "ERR replication is not available in this process");
	return false;
}

void cmd_replicaof(struct client *c)
{
	if (!have_repl(c))
		return;
	char err[256];
	if (cmd_arg_is(c, 1, "no") && cmd_arg_is(c, 2, "one")) {
		repl_replicaof(c->srv->repl, NULL, 0, err, sizeof(err));
		reply_ok(&c->out);
		return;
	}
	if (c->srv->cfg->native_rf1) {
		reply_error(
			&c->out,
			"ERR native-rf1 is on: this node keeps the only copy and cannot become a replica");
		return;
	}
	long long port;
	if (!cmd_arg_ll(c, 2, &port, "ERR Invalid master port"))
		return;
	if (port < 0 || port > 65535) {
		reply_error(&c->out, "ERR Invalid master port");
		return;
	}
	size_t hlen;
	const char *h = cmd_arg(c, 1, &hlen);
	char host[256];
	snprintf(host, sizeof(host), "%.*s", (int)(hlen < 255 ? hlen : 255), h);
	int r = repl_replicaof(c->srv->repl, host, (int)port, err, sizeof(err));
	if (r < 0)
		reply_error(&c->out, err);
	else if (r == 1)
		reply_simple(&c->out, "OK Already connected to specified master");
	else
		reply_ok(&c->out);
}

void cmd_role(struct client *c)
{
	if (have_repl(c))
		repl_role(c->srv->repl, &c->out);
}

/* The peer's address without its port ("ip:port" in c->addr). */
static void peer_ip(const struct client *c, char *out, size_t cap)
{
	snprintf(out, cap, "%s", c->addr);
	char *colon = strrchr(out, ':');
	if (colon)
		*colon = 0;
}

static void attach(struct client *c, const char *replid, long long offset)
{
	if (!have_repl(c))
		return;
	if (c->srv->cfg->native_rf1) {
		reply_error(&c->out, "ERR native-rf1 is on: this node keeps one copy and feeds no replicas");
		return;
	}
	if (atomic_load_explicit(&c->srv->repl_replica, memory_order_relaxed) &&
	    !atomic_load_explicit(&c->srv->repl_link_up, memory_order_relaxed)) {
		/* Redis: a replica serves its own replicas only once in sync */
		reply_error(&c->out, "NOMASTERLINK Can't SYNC while not connected with my master");
		return;
	}
	if (c->srv->write_lease && !atomic_load_explicit(&c->srv->repl_replica, memory_order_relaxed) &&
	    !atomic_load_explicit(&c->srv->write_lease_ever, memory_order_relaxed)) {
		/* write-lease: a primary its supervisor has never confirmed (a
		 * restarted one, empty or behind, waiting for the election) must
		 * not feed replicas: a full sync from it would replace the data
		 * of the replica about to be elected. The replica retries. */
		reply_error(&c->out, "NOMASTERLINK this primary's leadership is not confirmed yet (no write "
				     "lease held since it started)");
		return;
	}
	int fd = dup(c->fd);
	if (fd < 0) {
		reply_errorf(&c->out, "ERR cannot take the connection for replication: %s", strerror(errno));
		return;
	}
	char ip[64];
	peer_ip(c, ip, sizeof(ip));
	/* from here the socket is the link's: this connection closes without
	 * a word, and without shutting the socket down */
	c->flags |= CLIENT_HANDED_OFF | CLIENT_CLOSE_AFTER_REPLY;
	int r = repl_attach(c->srv->repl, fd, ip, c->repl_listen_port, replid, offset);
	if (r < 0)
		zr_log(ZR_LOG_WARNING, "Replica %s: the link could not start: %s", c->addr, strerror(-r));
}

void cmd_psync(struct client *c)
{
	size_t idlen;
	const char *id = cmd_arg(c, 1, &idlen);
	long long offset;
	if (!cmd_arg_ll(c, 2, &offset, "ERR value is not an integer or out of range"))
		return;
	char replid[41];
	snprintf(replid, sizeof(replid), "%.*s", (int)(idlen < 40 ? idlen : 40), id);
	attach(c, replid, offset);
}

void cmd_sync(struct client *c)
{
	attach(c, "?", -1);
}

/* REPLCONF <option> <value> ...: listening-port is kept for INFO; the
 * others (ip-address, capa, ack, getack) are taken and answered +OK as
 * Redis answers them on a connection that is not a replica's link. */
void cmd_replconf(struct client *c)
{
	if (c->argc % 2 == 0) {
		reply_error(&c->out, "ERR syntax error");
		return;
	}
	for (int i = 1; i + 1 < c->argc; i += 2) {
		if (cmd_arg_is(c, i, "listening-port")) {
			long long port;
			if (!cmd_arg_ll(c, i + 1, &port, "ERR value is not an integer or out of range"))
				return;
			c->repl_listen_port = (int)port;
		} else if (cmd_arg_is(c, i, "ack") || cmd_arg_is(c, i, "getack")) {
			return; /* Redis answers nothing to these */
		} else if (!cmd_arg_is(c, i, "ip-address") && !cmd_arg_is(c, i, "capa") &&
			   !cmd_arg_is(c, i, "rdb-only") && !cmd_arg_is(c, i, "rdb-filter-only")) {
			size_t n;
			const char *opt = cmd_arg(c, i, &n);
			reply_errorf(&c->out, "ERR Unrecognized REPLCONF option: %.*s", (int)n, opt);
			return;
		}
	}
	reply_ok(&c->out);
}

void cmd_wait(struct client *c)
{
	if (!have_repl(c))
		return;
	if (c->srv->cfg->native_rf1) {
		reply_error(&c->out, "ERR native-rf1 is on: this node keeps one copy and feeds no replicas");
		return;
	}
	if (atomic_load_explicit(&c->srv->repl_replica, memory_order_relaxed)) {
		reply_error(&c->out,
			    "ERR WAIT cannot be used with replica instances. Please also note that since "
			    "Redis 4.0 if a replica is configured to be writable (which is not the default) "
			    "writes to replicas are just local and are not propagated.");
		return;
	}
	long long n, timeout;
	if (!cmd_arg_ll(c, 1, &n, "ERR value is not an integer or out of range") ||
	    !cmd_arg_ll(c, 2, &timeout, "ERR timeout is not an integer or out of range"))
		return;
	if (timeout < 0) {
		reply_error(&c->out, "ERR timeout is negative");
		return;
	}
	if (c->flags & CLIENT_IN_EXEC) { /* a transaction does not block: the count now */
		repl_wait(c->srv->repl, c, 0, 0);
		return;
	}
	repl_wait(c->srv->repl, c, n, timeout);
}
