/* cmd_client — CLIENT ID SETNAME GETNAME LIST INFO KILL PAUSE UNPAUSE REPLY
 * NO-EVICT HELP.
 *
 * A handler runs on the worker that owns c; other workers' clients are seen
 * only through registry_foreach() (under their worker's lock) and their
 * shared fields, and are killed by marking them (registry_mark_kill) so that
 * their own worker closes them. The CLIENT LIST line format is Redis 7.0's,
 * field for field; figures zarisd does not keep (sub, psub, rbs ...) read 0.
 */
#include <stdio.h>
#include <string.h>

#include "zarisd/commands/blocking.h"
#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/commands/table.h"
#include "zarisd/server/textbuf.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

/* Client types of CLIENT LIST/KILL TYPE; every zarisd connection is
 * "normal" until replication and pub/sub exist. */
enum client_type {
	CT_NORMAL,
	CT_MASTER,
	CT_REPLICA,
	CT_PUBSUB,
	CT_INVALID = -1
};

static enum client_type client_type_parse(const struct client *c, int i)
{
	if (cmd_arg_is(c, i, "normal"))
		return CT_NORMAL;
	if (cmd_arg_is(c, i, "master"))
		return CT_MASTER;
	if (cmd_arg_is(c, i, "replica") || cmd_arg_is(c, i, "slave"))
		return CT_REPLICA;
	if (cmd_arg_is(c, i, "pubsub"))
		return CT_PUBSUB;
	return CT_INVALID;
}

static void reply_unknown_type(struct client *c, int i)
{
	reply_errorf(&c->out, "ERR Unknown client type '%.*s'",
		     (int)(c->argv[i].len > 128 ? 128 : c->argv[i].len), c->argv[i].ptr);
}

static enum client_type client_type_of(const struct client *cl)
{
	/* pub/sub: a client with subscriptions is of the pubsub type */
	unsigned subs[PUBSUB_KINDS];
	pubsub_client_counts(cl, subs);
	return subs[PUBSUB_CHANNEL] + subs[PUBSUB_PATTERN] + subs[PUBSUB_SHARD] ? CT_PUBSUB : CT_NORMAL;
}

/* --- the CLIENT LIST line -------------------------------------------------- */

/* Appends CL's line (no newline) to T. SELF is the client running the
 * command: its own fields are read directly, others' through their shared
 * copies (we hold their worker's registry lock, which guards the name). */
static void client_line(struct textbuf *t, const struct client *cl, const struct client *self, int64_t now_ms)
{
	bool own = cl == self;
	int flags = own ? (int)cl->flags : atomic_load_explicit(&cl->shared_flags, memory_order_relaxed);
	const struct command *last =
		own && cl->cmd ? cl->cmd : atomic_load_explicit(&cl->last_cmd, memory_order_relaxed);
	unsigned db = own ? cl->db : atomic_load_explicit(&cl->shared_db, memory_order_relaxed);
	int64_t last_ms = atomic_load_explicit(&cl->last_interaction_ms, memory_order_relaxed);
	uint64_t qbuf = atomic_load_explicit(&cl->shared_qbuf, memory_order_relaxed);
	uint64_t omem = atomic_load_explicit(&cl->shared_omem, memory_order_relaxed);
	bool killed = atomic_load_explicit(&cl->kill_requested, memory_order_relaxed);
	/* resp changes only on the owner (HELLO); a byte cannot tear */
	unsigned resp =
		own ? cl->resp : (unsigned)atomic_load_explicit(&cl->shared_resp, memory_order_relaxed);

	unsigned subs[PUBSUB_KINDS]; /* pub/sub: sub= psub= ssub= and flag P */
	pubsub_client_counts(cl, subs);
	char fl[16];
	int n = 0;
	if (subs[PUBSUB_CHANNEL] + subs[PUBSUB_PATTERN] + subs[PUBSUB_SHARD])
		fl[n++] = 'P';
	if (flags & CLIENT_IN_MULTI)
		fl[n++] = 'x';
	if (flags & CLIENT_CLOSE_AFTER_REPLY)
		fl[n++] = 'c';
	if (killed)
		fl[n++] = 'A';
	if (flags & CLIENT_NO_EVICT)
		fl[n++] = 'e';
	if (!n)
		fl[n++] = 'N';
	fl[n] = '\0';

	size_t argv_mem = 0;
	if (own)
		for (int i = 0; i < cl->argc; i++)
			argv_mem += cl->argv[i].len;
	char cmdname[96] = "NULL";
	if (last)
		command_full_name(last, cmdname, sizeof(cmdname));
	int64_t age = (now_ms - cl->ctime_ms) / 1000;
	int64_t idle = last_ms ? (now_ms - last_ms) / 1000 : age;
	textbuf_printf(
		t,
		"id=%llu addr=%s laddr=%s fd=%d name=%s age=%lld idle=%lld flags=%s db=%u sub=%u psub=%u ssub=%u "
		"multi=%d qbuf=%llu qbuf-free=0 argv-mem=%zu multi-mem=0 rbs=0 rbp=0 obl=0 oll=0 omem=%llu "
		"tot-mem=%llu events=%s cmd=%s user=default redir=-1 resp=%u",
		(unsigned long long)cl->id, cl->addr, cl->laddr, cl->fd, cl->name ? cl->name : "",
		(long long)(age < 0 ? 0 : age), (long long)(idle < 0 ? 0 : idle), fl, db,
		subs[PUBSUB_CHANNEL], subs[PUBSUB_PATTERN], subs[PUBSUB_SHARD],
		(flags & CLIENT_IN_MULTI) ? 0 : -1, (unsigned long long)qbuf, argv_mem,
		(unsigned long long)omem,
		(unsigned long long)(sizeof(struct client) + qbuf + omem + argv_mem), omem ? "rw" : "r",
		cmdname, resp);
}

/* --- CLIENT LIST ------------------------------------------------------------ */

struct list_ctx {
	struct textbuf t;
	const struct client *self;
	int64_t now_ms;
	enum client_type type; /* CT_INVALID = any */
	const unsigned long long *ids;
	int nids;
};

static void list_visit(struct client *cl, void *arg)
{
	struct list_ctx *ctx = arg;
	if (ctx->type != CT_INVALID && client_type_of(cl) != ctx->type)
		return;
	if (ctx->nids) {
		bool hit = false;
		for (int i = 0; i < ctx->nids && !hit; i++)
			hit = ctx->ids[i] == cl->id;
		if (!hit)
			return;
	}
	client_line(&ctx->t, cl, ctx->self, ctx->now_ms);
	textbuf_append(&ctx->t, "\n", 1);
}

void cmd_client_list(struct client *c)
{
	struct list_ctx ctx = { .t = TEXTBUF_INIT, .self = c, .now_ms = zr_time_ms(), .type = CT_INVALID };
	unsigned long long *ids = NULL;
	if (c->argc == 4 && cmd_arg_is(c, 2, "type")) {
		ctx.type = client_type_parse(c, 3);
		if (ctx.type == CT_INVALID) {
			reply_unknown_type(c, 3);
			return;
		}
	} else if (c->argc > 3 && cmd_arg_is(c, 2, "id")) {
		ids = zr_calloc((size_t)(c->argc - 3), sizeof(*ids));
		for (int i = 3; i < c->argc; i++) {
			long long v;
			if (!zr_str_to_ll(c->argv[i].ptr, c->argv[i].len, &v)) {
				reply_error(&c->out, "ERR Invalid client ID");
				zr_free(ids);
				return;
			}
			ids[ctx.nids++] = (unsigned long long)v;
		}
		ctx.ids = ids;
	} else if (c->argc != 2) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	registry_foreach(c->srv->clients, list_visit, &ctx);
	reply_verbatim(&c->out, ctx.t.p ? ctx.t.p : "", ctx.t.len, "txt");
	textbuf_free(&ctx.t);
	zr_free(ids);
}

void cmd_client_info(struct client *c)
{
	struct textbuf t = TEXTBUF_INIT;
	client_line(&t, c, c, zr_time_ms());
	textbuf_append(&t, "\n", 1);
	reply_verbatim(&c->out, t.p, t.len, "txt");
	textbuf_free(&t);
}

/* --- CLIENT KILL ------------------------------------------------------------- */

struct kill_ctx {
	struct client *self;
	struct registry *reg;
	uint64_t id;		  /* 0 = any */
	enum client_type type;	  /* CT_INVALID = any */
	const char *addr, *laddr; /* NULL = any */
	size_t addr_len, laddr_len;
	bool skipme;
	long long killed;
};

static void kill_visit(struct client *cl, void *arg)
{
	struct kill_ctx *k = arg;
	if (k->id && cl->id != k->id)
		return;
	if (k->type != CT_INVALID && client_type_of(cl) != k->type)
		return;
	if (k->addr && !(strlen(cl->addr) == k->addr_len && !memcmp(cl->addr, k->addr, k->addr_len)))
		return;
	if (k->laddr && !(strlen(cl->laddr) == k->laddr_len && !memcmp(cl->laddr, k->laddr, k->laddr_len)))
		return;
	if (cl == k->self) {
		if (k->skipme)
			return;
		/* Redis answers first, then closes its own connection */
		k->self->flags |= CLIENT_CLOSE_AFTER_REPLY;
		k->killed++;
		return;
	}
	if (atomic_load_explicit(&cl->kill_requested, memory_order_relaxed))
		return; /* already on its way out */
	registry_mark_kill(k->reg, cl);
	pubsub_client_kill(cl); /* no PUBLISH counts it once KILL answered */
	k->killed++;
}

/* Parses the new form's filters (argv[2..]); false after replying an error. */
static bool kill_parse_filters(struct client *c, struct kill_ctx *k)
{
	for (int i = 2; i < c->argc; i += 2) {
		if (i + 1 >= c->argc) {
			reply_error(&c->out, ERR_SYNTAX);
			return false;
		}
		if (cmd_arg_is(c, i, "id")) {
			long long v;
			if (!zr_str_to_ll(c->argv[i + 1].ptr, c->argv[i + 1].len, &v) || v <= 0) {
				reply_error(&c->out, "ERR client-id should be greater than 0");
				return false;
			}
			k->id = (uint64_t)v;
		} else if (cmd_arg_is(c, i, "type")) {
			k->type = client_type_parse(c, i + 1);
			if (k->type == CT_INVALID) {
				reply_unknown_type(c, i + 1);
				return false;
			}
		} else if (cmd_arg_is(c, i, "addr")) {
			k->addr = c->argv[i + 1].ptr;
			k->addr_len = c->argv[i + 1].len;
		} else if (cmd_arg_is(c, i, "laddr")) {
			k->laddr = c->argv[i + 1].ptr;
			k->laddr_len = c->argv[i + 1].len;
		} else if (cmd_arg_is(c, i, "user")) {
			/* one user, "default", until ACLs exist: it owns every connection */
			if (!cmd_arg_is(c, i + 1, "default")) {
				reply_errorf(&c->out, "ERR No such user '%.*s'",
					     (int)(c->argv[i + 1].len > 128 ? 128 : c->argv[i + 1].len),
					     c->argv[i + 1].ptr);
				return false;
			}
		} else if (cmd_arg_is(c, i, "skipme")) {
			if (cmd_arg_is(c, i + 1, "yes")) {
				k->skipme = true;
			} else if (cmd_arg_is(c, i + 1, "no")) {
				k->skipme = false;
			} else {
				reply_error(&c->out, ERR_SYNTAX);
				return false;
			}
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return false;
		}
	}
	return true;
}

void cmd_client_kill(struct client *c)
{
	struct kill_ctx k = { .self = c, .reg = c->srv->clients, .type = CT_INVALID, .skipme = true };
	bool old_form = c->argc == 3;
	if (old_form) {
		/* CLIENT KILL addr:port — may kill the caller itself */
		k.addr = c->argv[2].ptr;
		k.addr_len = c->argv[2].len;
		k.skipme = false;
	} else if (!kill_parse_filters(c, &k)) {
		return;
	}
	registry_foreach(c->srv->clients, kill_visit, &k);
	registry_flush_kills(c->srv->clients, c->srv);
	if (c->flags & CLIENT_CLOSE_AFTER_REPLY)
		pubsub_client_free(c); /* killed itself: as QUIT (cmd_quit) */
	if (!old_form)
		reply_long(&c->out, k.killed);
	else if (k.killed)
		reply_ok(&c->out);
	else
		reply_error(&c->out, "ERR No such client");
}

/* --- the small ones ----------------------------------------------------------- */

void cmd_client_id(struct client *c)
{
	reply_long(&c->out, (long long)c->id);
}

void cmd_client_setname(struct client *c)
{
	size_t len;
	const char *name = cmd_arg(c, 2, &len);
	/* Redis's rule: printable ASCII without spaces, so CLIENT LIST stays parseable */
	for (size_t i = 0; i < len; i++)
		if (name[i] < '!' || name[i] > '~') {
			reply_error(
				&c->out,
				"ERR Client names cannot contain spaces, newlines or special characters.");
			return;
		}
	registry_set_name(c->srv->clients, c, len ? zr_strndup(name, len) : NULL);
	reply_ok(&c->out);
}

void cmd_client_getname(struct client *c)
{
	/* only this worker writes c->name, so reading it here needs no lock */
	if (c->name)
		reply_bulk_cstr(&c->out, c->name);
	else
		reply_null(&c->out);
}

/* Raises the pause to at least MODE until at least END_MS (Redis keeps the
 * stricter mode and the later end when pauses overlap). */
static void pause_raise(struct server *srv, int mode, int64_t end_ms)
{
	int64_t cur_end = atomic_load_explicit(&srv->pause_end_ms, memory_order_relaxed);
	while (cur_end < end_ms &&
	       !atomic_compare_exchange_weak_explicit(&srv->pause_end_ms, &cur_end, end_ms,
						      memory_order_relaxed, memory_order_relaxed))
		;
	int cur_mode = atomic_load_explicit(&srv->pause_mode, memory_order_relaxed);
	/* release: a worker that sees the mode also sees the end time stored above */
	while (cur_mode < mode &&
	       !atomic_compare_exchange_weak_explicit(&srv->pause_mode, &cur_mode, mode, memory_order_release,
						      memory_order_relaxed))
		;
}

void cmd_client_pause(struct client *c)
{
	long long timeout;
	if (!zr_str_to_ll(c->argv[2].ptr, c->argv[2].len, &timeout)) {
		reply_error(&c->out, "ERR timeout is not an integer or out of range");
		return;
	}
	if (timeout < 0) {
		reply_error(&c->out, "ERR timeout is negative");
		return;
	}
	int mode = PAUSE_ALL;
	if (c->argc == 4) {
		if (cmd_arg_is(c, 3, "write")) {
			mode = PAUSE_WRITE;
		} else if (!cmd_arg_is(c, 3, "all")) {
			reply_error(&c->out, "ERR CLIENT PAUSE mode must be WRITE or ALL");
			return;
		}
	} else if (c->argc > 4) {
		reply_errorf(
			&c->out,
			"ERR unknown subcommand or wrong number of arguments for '%.*s'. Try CLIENT HELP.",
			(int)c->argv[1].len, c->argv[1].ptr);
		return;
	}
	int64_t now = zr_time_ms();
	if (timeout > INT64_MAX - now) {
		reply_error(&c->out, "ERR timeout is out of range");
		return;
	}
	pause_raise(c->srv, mode, now + timeout);
	reply_ok(&c->out);
}

void cmd_client_unpause(struct client *c)
{
	atomic_store_explicit(&c->srv->pause_mode, PAUSE_NONE, memory_order_release);
	atomic_store_explicit(&c->srv->pause_end_ms, 0, memory_order_relaxed);
	server_wake_all(c->srv); /* paused commands run now, not at their worker's next timer */
	reply_ok(&c->out);
}

void cmd_client_reply(struct client *c)
{
	if (cmd_arg_is(c, 2, "on")) {
		c->flags &= ~(CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP | CLIENT_REPLY_SKIP_NEXT);
		c->out.muted = false;
		reply_ok(&c->out);
	} else if (cmd_arg_is(c, 2, "off")) {
		/* no reply, this one included (Redis) */
		c->flags |= CLIENT_REPLY_OFF;
		c->out.muted = true;
	} else if (cmd_arg_is(c, 2, "skip")) {
		/* no reply to this one; the next command is muted by the dispatcher */
		if (!(c->flags & CLIENT_REPLY_OFF))
			c->flags |= CLIENT_REPLY_SKIP_NEXT;
	} else {
		reply_error(&c->out, ERR_SYNTAX);
	}
}

void cmd_client_no_evict(struct client *c)
{
	if (cmd_arg_is(c, 2, "on")) {
		c->flags |= CLIENT_NO_EVICT;
	} else if (cmd_arg_is(c, 2, "off")) {
		c->flags &= ~CLIENT_NO_EVICT;
	} else {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	reply_ok(&c->out);
}

/* CLIENT UNBLOCK id [TIMEOUT|ERROR] (commands/blocking.h) */
void cmd_client_unblock(struct client *c)
{
	if (c->argc > 4) {
		reply_errorf(
			&c->out,
			"ERR unknown subcommand or wrong number of arguments for '%.*s'. Try CLIENT HELP.",
			(int)c->argv[1].len, c->argv[1].ptr);
		return;
	}
	/* the reason first, then the id: Redis's order of refusals */
	bool error = false;
	if (c->argc == 4) {
		if (cmd_arg_is(c, 3, "error")) {
			error = true;
		} else if (!cmd_arg_is(c, 3, "timeout")) {
			reply_error(&c->out, "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR");
			return;
		}
	}
	long long id;
	if (!cmd_arg_ll(c, 2, &id, NULL))
		return;
	bool done = blocking_unblock(c->srv, (uint64_t)id, error);
	/* Redis counts the target's error while CLIENT UNBLOCK runs: it
	 * fails too (its prev_err_count moved) */
	if (done && error)
		dispatch_count_failed_here(c);
	reply_long(&c->out, done ? 1 : 0);
}

void cmd_client_help(struct client *c)
{
	static const char *const help[] = {
		"GETNAME",
		"    Return the name of the current connection.",
		"ID",
		"    Return the ID of the current connection.",
		"INFO",
		"    Return information about the current client connection.",
		"KILL <ip:port>",
		"    Kill connection made from <ip:port>.",
		"KILL <option> <value> [<option> <value> [...]]",
		"    Kill connections. Options are:",
		"    * ADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made from the specified address",
		"    * LADDR (<ip:port>|<unixsocket>:0)",
		"      Kill connections made to specified local address",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Kill connections by type.",
		"    * USER <username>",
		"      Kill connections authenticated by <username>.",
		"    * SKIPME (YES|NO)",
		"      Skip killing current connection (default: yes).",
		"LIST [options ...]",
		"    Return information about client connections. Options:",
		"    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
		"      Return clients of specified type.",
		"UNPAUSE",
		"    Stop the current client pause, resuming traffic.",
		"PAUSE <timeout> [WRITE|ALL]",
		"    Suspend all, or just write, clients for <timeout> milliseconds.",
		"REPLY (ON|OFF|SKIP)",
		"    Control the replies sent to the current connection.",
		"SETNAME <name>",
		"    Assign the name <name> to the current connection.",
		"NO-EVICT (ON|OFF)",
		"    Protect current client connection from eviction.",
		NULL,
	};
	cmd_reply_help(c, help);
}
