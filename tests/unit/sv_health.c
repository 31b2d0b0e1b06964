/* The health check's reply reading for cluster mode (supervisor/health):
 * an error reply to CLUSTER SETTOPOLOGY or CLUSTER TOPOLOGY is kept and
 * does not fail the check, the document read back (or nil) is kept, and an
 * error to any other command still fails it. Replies come over a socket
 * pair standing in for zarisd.
 */
#include "supervisor/health.h"
#include "tests/tap.h"

#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Runs a pipeline of SETTOPOLOGY, TOPOLOGY, PING, INFO answered with
 * REPLIES; H is done afterwards. */
static void exchange(struct sv_health *h, const char *replies)
{
	static const char *const set[] = { "CLUSTER", "SETTOPOLOGY", "epoch 1\n" };
	static const char *const get[] = { "CLUSTER", "TOPOLOGY" };
	static const char *const ping[] = { "PING" }, *const info[] = { "INFO" };
	int sv[2];

	sv_health_init(h);
	sv_health_add_topology(h, 0, 3, set);
	sv_health_add_topology(h, 1, 2, get);
	sv_health_add(h, 1, ping);
	sv_health_add(h, 1, info);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) < 0)
		skip_all("socketpair failed");
	h->fd = sv[0];
	h->connected = true;
	if (write(sv[1], replies, strlen(replies)) != (ssize_t)strlen(replies))
		skip_all("write failed");
	for (int k = 0; k < 10 && !h->done; k++)
		sv_health_io(h, POLLIN);
	close(sv[1]);
}

int main(void)
{
	struct sv_health h;

	exchange(&h, "-ERR topology epoch 1 is older than the current epoch 4\r\n"
		     "$8\r\nepoch 4\n\r\n+PONG\r\n$15\r\nprocess_id:77\r\n\r\n");
	ok(h.done && h.ok, "a refused push does not fail the check (%s)", h.error);
	is_str(h.push_error, "ERR topology epoch 1 is older than the current epoch 4", "the refusal is kept");
	ok(h.topo && strcmp(h.topo, "epoch 4\n") == 0, "the document read back is kept");
	is_int(h.info.process_id, 77, "INFO still parsed");
	sv_health_reset(&h);

	exchange(&h, "+OK\r\n$-1\r\n+PONG\r\n$15\r\nprocess_id:77\r\n\r\n");
	ok(h.done && h.ok && !h.push_error[0] && h.topo_nil && !h.topo, "+OK and nil: no topology yet");
	sv_health_reset(&h);

	exchange(&h, "+OK\r\n-ERR unknown subcommand 'TOPOLOGY'\r\n+PONG\r\n$15\r\nprocess_id:77\r\n\r\n");
	ok(h.done && h.ok && strstr(h.topo_error, "unknown subcommand"), "an error to TOPOLOGY is kept: %s",
	   h.topo_error);
	sv_health_reset(&h);

	exchange(&h, "+OK\r\n$-1\r\n-ERR boom\r\n$15\r\nprocess_id:77\r\n\r\n");
	ok(h.done && !h.ok && strstr(h.error, "boom"), "an error to PING still fails it: %s", h.error);
	sv_health_reset(&h);
	return done_testing();
}
