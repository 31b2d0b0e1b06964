/* health — one non-blocking RESP exchange with a zarisd instance: connect,
 * send a few pipelined commands (AUTH, CONFIG SET ..., PING, INFO), read
 * one reply per command, all before a deadline. The supervisor's poll loop
 * owns it: it polls sv_health_fd() for sv_health_events() and calls
 * sv_health_io() when the fd is ready and sv_health_expire() when the
 * deadline passes. Single-threaded; no allocation except the reply buffer.
 */
#ifndef SV_HEALTH_H
#define SV_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What INFO told us (fields Redis names so; -1 or "" when absent). The
 * replication fields are what `zarisctl status` and the rolling restart's
 * catch-up wait need: master_repl_offset is an instance's own position in
 * its replication stream (on a primary: how much it has produced),
 * slave_repl_offset how far a replica has applied its primary's. */
struct sv_info {
	long long process_id;
	long long uptime_in_seconds;
	long long used_memory;
	long long maxmemory;
	long long connected_slaves;
	long long master_repl_offset;
	long long slave_repl_offset;
	long long master_last_io_seconds_ago;
	long long master_sync_in_progress;
	long long master_port;
	/* seconds since a replica's link was last in sync; -1 when never (or
	 * up, or absent) */
	long long master_link_down_since_seconds;
	char role[16];		    /* "master" or "slave", as Redis says */
	char master_link_status[8]; /* "up" or "down" on a replica */
	char master_host[64];
};

/* INFO with every field absent. */
void sv_info_clear(struct sv_info *info);

#define SV_HEALTH_MAX_CMDS 32 /* AUTH, every live change, the two topology commands, PING, INFO */

struct sv_health {
	int fd; /* -1 when idle */
	int64_t deadline_ms;
	char out[32768]; /* the encoded pipeline (a topology push is a line per node) */
	size_t out_len, out_off;
	char *in; /* replies received so far */
	size_t in_len, in_cap;
	int n_cmds;    /* commands in the pipeline */
	int n_replies; /* complete replies parsed */
	bool connected;
	bool done;	     /* finished: see ok/error */
	bool ok;	     /* every reply as expected */
	char error[200];     /* why not ok */
	struct sv_info info; /* from the INFO reply, if any */
	/* cluster mode: the replies of CLUSTER SETTOPOLOGY (push_reply) and
	 * CLUSTER TOPOLOGY (topo_reply), -1 when not sent. An error reply to
	 * either does not fail the check (the instance is alive; the push is
	 * retried): it is kept in push_error / topo_error. */
	int push_reply, topo_reply;
	char push_error[200];
	char topo_error[200];
	char *topo;    /* the CLUSTER TOPOLOGY document, malloc'd; NULL for nil or not asked */
	bool topo_nil; /* it answered nil: no topology yet */
};

/* Resets H to idle. */
void sv_health_init(struct sv_health *h);
/* Appends a command (ARGC strings) to the pipeline of an idle H. Returns 0,
 * or -ENOSPC when the pipeline buffer is full. */
int sv_health_add(struct sv_health *h, int argc, const char *const *argv);
/* Appends a command like sv_health_add whose reply is the push (KIND 0:
 * CLUSTER SETTOPOLOGY) or the document read back (KIND 1: CLUSTER
 * TOPOLOGY): see push_reply and topo_reply. */
int sv_health_add_topology(struct sv_health *h, int kind, int argc, const char *const *argv);

/* Starts connecting to ADDR:PORT (numeric) with the pipeline built so far;
 * the exchange must end by DEADLINE_MS (monotonic). Returns 0 (in progress,
 * or already done with an error when the connect failed at once). */
int sv_health_start(struct sv_health *h, const char *addr, int port, int64_t deadline_ms);
/* The fd to poll, or -1 when idle or done. */
int sv_health_fd(const struct sv_health *h);
/* POLLOUT while connecting or sending, else POLLIN. */
short sv_health_events(const struct sv_health *h);
/* Advances the exchange after poll reported REVENTS. Sets done. */
void sv_health_io(struct sv_health *h, short revents);
/* Ends an exchange whose deadline passed at NOW (no-op otherwise). */
void sv_health_expire(struct sv_health *h, int64_t now_ms);
/* Closes the socket and frees buffers; H is idle afterwards. */
void sv_health_reset(struct sv_health *h);

/* Parses INFO text (lines "key:value") into INFO. */
void sv_health_parse_info(const char *text, size_t len, struct sv_info *info);

#endif
