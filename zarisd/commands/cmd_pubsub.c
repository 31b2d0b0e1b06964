/* cmd_pubsub — SUBSCRIBE UNSUBSCRIBE PSUBSCRIBE PUNSUBSCRIBE PUBLISH
 * SSUBSCRIBE SUNSUBSCRIBE SPUBLISH and PUBSUB CHANNELS / NUMSUB / NUMPAT /
 * SHARDCHANNELS / SHARDNUMSUB / HELP, Redis 7.0 standalone semantics (the
 * shard commands are a namespace of their own there, without patterns).
 *
 * Confirmations are pushes: "*3" in RESP2, ">3" in RESP3, written even
 * under CLIENT REPLY OFF/SKIP (pubsub_reply_confirm). Each (un)subscription
 * is in the registry, seen by every worker's PUBLISH, before its
 * confirmation is written. The
 * registry and delivery are pubsub.c's; these handlers only parse and
 * reply. They run on the client's worker without shard locks (the rows are
 * keyless; the shard commands' channel "keys" are never locked).
 */
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/commands/pubsub.h"
#include "zarisd/server/server.h"
#include "zarisd/proto/reply.h"

/* The registry exists from the first subscription on; so does the store's
 * event hook, since before that no keyspace event could have a receiver. */
static void ensure_started(struct client *c)
{
	pubsub_init(c->srv);
	notify_init(c->srv);
}

static void subscribe_generic(struct client *c, enum pubsub_kind k)
{
	ensure_started(c);
	for (int j = 1; j < c->argc; j++) {
		pubsub_subscribe(c, k, c->argv[j].ptr, c->argv[j].len);
		pubsub_reply_confirm(c, k, true, c->argv[j].ptr, c->argv[j].len);
	}
}

static void removed_reply(struct client *c, enum pubsub_kind k, const char *name, size_t len, void *ctx)
{
	(void)ctx;
	pubsub_reply_confirm(c, k, false, name, len);
}

static void unsubscribe_generic(struct client *c, enum pubsub_kind k)
{
	if (c->argc == 1) {
		if (pubsub_unsubscribe_all(c, k, removed_reply, NULL) == 0)
			pubsub_reply_confirm(c, k, false, NULL, 0);
		return;
	}
	for (int j = 1; j < c->argc; j++) {
		pubsub_unsubscribe(c, k, c->argv[j].ptr, c->argv[j].len);
		pubsub_reply_confirm(c, k, false, c->argv[j].ptr, c->argv[j].len);
	}
}

void cmd_subscribe(struct client *c)
{
	subscribe_generic(c, PUBSUB_CHANNEL);
}

void cmd_psubscribe(struct client *c)
{
	subscribe_generic(c, PUBSUB_PATTERN);
}

void cmd_ssubscribe(struct client *c)
{
	subscribe_generic(c, PUBSUB_SHARD);
}

void cmd_unsubscribe(struct client *c)
{
	unsubscribe_generic(c, PUBSUB_CHANNEL);
}

void cmd_punsubscribe(struct client *c)
{
	unsubscribe_generic(c, PUBSUB_PATTERN);
}

void cmd_sunsubscribe(struct client *c)
{
	unsubscribe_generic(c, PUBSUB_SHARD);
}

void cmd_publish(struct client *c)
{
	reply_long(&c->out, pubsub_publish(c->srv, false, c->argv[1].ptr, c->argv[1].len, c->argv[2].ptr,
					   c->argv[2].len));
}

void cmd_spublish(struct client *c)
{
	reply_long(&c->out, pubsub_publish(c->srv, true, c->argv[1].ptr, c->argv[1].len, c->argv[2].ptr,
					   c->argv[2].len));
}

/* --- PUBSUB ------------------------------------------------------------------ */

/* Redis's addReplySubcommandSyntaxError, for a subcommand given too many
 * arguments by its own check. */
static void reply_subcommand_syntax(struct client *c)
{
	reply_errorf(&c->out,
		     "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try PUBSUB HELP.",
		     (int)(c->argv[1].len > 128 ? 128 : c->argv[1].len), c->argv[1].ptr);
}

struct names_ctx {
	struct client *c;
	long n;
};

static void name_visit(const char *name, size_t len, void *arg)
{
	struct names_ctx *ctx = arg;
	reply_bulk(&ctx->c->out, name, len);
	ctx->n++;
}

static void channels_generic(struct client *c, enum pubsub_kind k)
{
	if (c->argc > 3) {
		reply_subcommand_syntax(c);
		return;
	}
	struct names_ctx ctx = { c, 0 };
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	pubsub_channels(c->srv, k, c->argc == 3 ? c->argv[2].ptr : NULL, c->argc == 3 ? c->argv[2].len : 0,
			name_visit, &ctx);
	reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, ctx.n);
}

static void numsub_generic(struct client *c, enum pubsub_kind k)
{
	/* Redis answers a flat array of name, count pairs even in RESP3 */
	reply_array(&c->out, (long)(c->argc - 2) * 2);
	for (int j = 2; j < c->argc; j++) {
		reply_bulk(&c->out, c->argv[j].ptr, c->argv[j].len);
		reply_long(&c->out, (long long)pubsub_numsub(c->srv, k, c->argv[j].ptr, c->argv[j].len));
	}
}

void cmd_pubsub_channels(struct client *c)
{
	channels_generic(c, PUBSUB_CHANNEL);
}

void cmd_pubsub_shardchannels(struct client *c)
{
	channels_generic(c, PUBSUB_SHARD);
}

void cmd_pubsub_numsub(struct client *c)
{
	numsub_generic(c, PUBSUB_CHANNEL);
}

void cmd_pubsub_shardnumsub(struct client *c)
{
	numsub_generic(c, PUBSUB_SHARD);
}

void cmd_pubsub_numpat(struct client *c)
{
	reply_long(&c->out, (long long)pubsub_names(c->srv, PUBSUB_PATTERN));
}

void cmd_pubsub_help(struct client *c)
{
	static const char *const help[] = {
		"CHANNELS [<pattern>]",
		"    Return the currently active channels matching a <pattern> (default: '*').",
		"NUMPAT",
		"    Return number of subscriptions to patterns.",
		"NUMSUB [<channel> ...]",
		"    Return the number of subscribers for the specified channels, excluding",
		"    pattern subscriptions(default: no channels).",
		"SHARDCHANNELS [<pattern>]",
		"    Return the currently active shard level channels matching a <pattern> (default: '*').",
		"SHARDNUMSUB [<shardchannel> ...]",
		"    Return the number of subscribers for the specified shard level channel(s)",
		NULL,
	};
	cmd_reply_help(c, help);
}
