/* cmd_conn — connection commands: PING ECHO QUIT RESET SELECT AUTH HELLO. */
#include <stdio.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/multi.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/registry.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"

#define ERR_WRONGPASS "WRONGPASS invalid username-password pair or user is disabled."

void cmd_ping(struct client *c)
{
	if (c->argc > 2) {
		cmd_reply_arity(c);
		return;
	}
	if (c->resp == 2 && pubsub_client_is_subscribed(c)) {
		/* pub/sub: a subscribed RESP2 client gets ["pong", arg or ""] */
		reply_array(&c->out, 2);
		reply_bulk(&c->out, "pong", 4);
		reply_bulk(&c->out, c->argc == 2 ? c->argv[1].ptr : "", c->argc == 2 ? c->argv[1].len : 0);
		return;
	}
	if (c->argc == 2)
		reply_bulk(&c->out, c->argv[1].ptr, c->argv[1].len);
	else
		reply_simple(&c->out, "PONG");
}

void cmd_echo(struct client *c)
{
	reply_bulk(&c->out, c->argv[1].ptr, c->argv[1].len);
}

void cmd_quit(struct client *c)
{
	/* pub/sub: gone before +OK can reach the client, as in Redis, where no
	 * other command runs between the reply and the free; here the close
	 * comes after the send, while other workers publish */
	pubsub_client_free(c);
	reply_ok(&c->out);
	c->flags |= CLIENT_CLOSE_AFTER_REPLY;
}

static void set_resp(struct client *c, int resp)
{
	c->resp = (uint8_t)resp;
	c->out.resp = (uint8_t)resp;
	atomic_store_explicit(&c->shared_resp, resp, memory_order_relaxed);
}

/* Redis's clearClientConnectionState: the client as if newly connected.
 * As in Redis, CLIENT NO-EVICT stays, and a RESET right after CLIENT REPLY
 * SKIP is the muted command (only OFF and a pending SKIP are cleared). */
void cmd_reset(struct client *c)
{
	multi_client_free(c);  /* the transaction and every WATCHed key (discardTransaction) */
	pubsub_client_free(c); /* pub/sub: RESET leaves every subscription silently */
	c->db = 0;
	set_resp(c, 2);
	c->flags &= ~(CLIENT_REPLY_OFF | CLIENT_REPLY_SKIP_NEXT);
	c->out.muted = (c->flags & CLIENT_REPLY_SKIP) != 0;
	if (settings_requirepass_set(c->srv->cfg))
		c->flags &= ~CLIENT_AUTHENTICATED;
	registry_set_name(c->srv->clients, c, NULL);
	reply_simple(&c->out, "RESET");
}

void cmd_select(struct client *c)
{
	unsigned db;
	long long id;
	/* Redis Cluster has database 0 only (selectCommand) */
	if (c->srv->cluster && zr_str_to_ll(c->argv[1].ptr, c->argv[1].len, &id) && id != 0) {
		reply_error(&c->out, "ERR SELECT is not allowed in cluster mode");
		return;
	}
	if (!cmd_arg_db(c, 1, &db))
		return;
	c->db = db;
	reply_ok(&c->out);
}

/* Checks USER/PASS as the default user; true when they authenticate. */
static bool auth_check(struct client *c, const struct resp_arg *user, const struct resp_arg *pass)
{
	if (user && !(user->len == 7 && !memcmp(user->ptr, "default", 7)))
		return false;
	return settings_requirepass_check(c->srv->cfg, pass->ptr, pass->len);
}

void cmd_auth(struct client *c)
{
	if (c->argc > 3) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	if (c->argc == 2 && !settings_requirepass_set(c->srv->cfg)) {
		reply_error(
			&c->out,
			"ERR AUTH <password> called without any password configured for the default user. "
			"Are you sure your configuration is correct?");
		return;
	}
	const struct resp_arg *user = c->argc == 3 ? &c->argv[1] : NULL;
	const struct resp_arg *pass = &c->argv[c->argc - 1];
	/* with no password configured, the default user takes any password */
	bool ok = !settings_requirepass_set(c->srv->cfg)
			  ? (!user || (user->len == 7 && !memcmp(user->ptr, "default", 7)))
			  : auth_check(c, user, pass);
	if (!ok) {
		reply_error(&c->out, ERR_WRONGPASS);
		return;
	}
	c->flags |= CLIENT_AUTHENTICATED;
	reply_ok(&c->out);
}

void cmd_hello(struct client *c)
{
	long long ver = 0;
	int next = 1;
	if (c->argc >= 2) {
		if (!cmd_arg_ll(c, 1, &ver, "ERR Protocol version is not an integer or out of range"))
			return;
		next = 2;
		if (ver < 2 || ver > 3) {
			reply_error(&c->out, "NOPROTO unsupported protocol version");
			return;
		}
	}
	const struct resp_arg *user = NULL, *pass = NULL, *name = NULL;
	for (int j = next; j < c->argc; j++) {
		int more = c->argc - j - 1;
		if (cmd_arg_is(c, j, "AUTH") && more >= 2) {
			user = &c->argv[j + 1];
			pass = &c->argv[j + 2];
			j += 2;
		} else if (cmd_arg_is(c, j, "SETNAME") && more >= 1) {
			name = &c->argv[j + 1];
			j += 1;
		} else {
			reply_errorf(&c->out, "ERR Syntax error in HELLO option '%.*s'", (int)c->argv[j].len,
				     c->argv[j].ptr);
			return;
		}
	}
	if (pass) {
		bool ok = settings_requirepass_set(c->srv->cfg)
				  ? auth_check(c, user, pass)
				  : (user->len == 7 && !memcmp(user->ptr, "default", 7));
		if (!ok) {
			reply_error(&c->out, ERR_WRONGPASS);
			return;
		}
		c->flags |= CLIENT_AUTHENTICATED;
	}
	if (!(c->flags & CLIENT_AUTHENTICATED)) {
		reply_error(
			&c->out,
			"NOAUTH HELLO must be called with the client already authenticated, otherwise the "
			"HELLO AUTH <user> <pass> option can be used to authenticate the client and "
			"select the RESP protocol version at the same time");
		return;
	}
	if (name) {
		if (!client_name_is_valid(name->ptr, name->len)) {
			reply_error(
				&c->out,
				"ERR Client names cannot contain spaces, newlines or special characters.");
			return;
		}
		registry_set_name(c->srv->clients, c, name->len ? zr_strndup(name->ptr, name->len) : NULL);
	}
	if (ver)
		set_resp(c, (int)ver);
	reply_map(&c->out, 7);
	reply_bulk_cstr(&c->out, "server");
	reply_bulk_cstr(&c->out, "redis");
	reply_bulk_cstr(&c->out, "version");
	reply_bulk_cstr(&c->out, "7.0.15");
	reply_bulk_cstr(&c->out, "proto");
	reply_long(&c->out, c->resp);
	reply_bulk_cstr(&c->out, "id");
	reply_long(&c->out, (long long)c->id);
	reply_bulk_cstr(&c->out, "mode");
	reply_bulk_cstr(&c->out, "standalone");
	reply_bulk_cstr(&c->out, "role");
	reply_bulk_cstr(&c->out, "master");
	reply_bulk_cstr(&c->out, "modules");
	reply_array(&c->out, 0);
}
