/* cmd_persist — SAVE, BGSAVE and BGREWRITEAOF (LASTSAVE is in
 * cmd_server.c). The work is persist/'s; these only map its results to
 * Redis 7's replies. */
#include <errno.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/server/server.h"
#include "zarisd/persist/persist.h"
#include "zarisd/proto/reply.h"

void cmd_save(struct client *c)
{
	if (!c->srv->persist) {
		reply_error(&c->out, "ERR persistence is not available");
		return;
	}
	int r = persist_save(c->srv->persist);
	if (r == -EBUSY)
		reply_error(&c->out, "ERR Background save already in progress");
	else if (r < 0)
		reply_error(&c->out, "ERR");
	else
		reply_ok(&c->out);
}

void cmd_bgsave(struct client *c)
{
	bool schedule = false;
	if (c->argc > 1) {
		if (c->argc == 2 && cmd_arg_is(c, 1, "schedule")) {
			schedule = true;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	if (!c->srv->persist) {
		reply_error(&c->out, "ERR persistence is not available");
		return;
	}
	bool rewrite;
	if (persist_bg_running(c->srv->persist, &rewrite)) {
		if (!rewrite)
			reply_error(&c->out, "ERR Background save already in progress");
		else if (schedule && persist_bgsave(c->srv->persist, false, true) == 1)
			reply_simple(&c->out, "Background saving scheduled");
		else
			reply_error(&c->out,
				    "ERR Another child process is active (AOF?): can't BGSAVE right now. "
				    "Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.");
		return;
	}
	int r = persist_bgsave(c->srv->persist, false, false);
	if (r == 0)
		reply_simple(&c->out, "Background saving started");
	else if (r == -EBUSY)
		reply_error(&c->out, "ERR Background save already in progress");
	else
		reply_error(&c->out, "ERR Can't start a background save");
}

void cmd_bgrewriteaof(struct client *c)
{
	if (!c->srv->persist) {
		reply_error(&c->out, "ERR persistence is not available");
		return;
	}
	bool rewrite;
	if (persist_bg_running(c->srv->persist, &rewrite)) {
		if (rewrite) {
			reply_error(&c->out, "ERR Background append only file rewriting already in progress");
		} else {
			persist_bgsave(c->srv->persist, true, true);
			reply_simple(&c->out, "Background append only file rewriting scheduled");
		}
		return;
	}
	int r = persist_bgsave(c->srv->persist, true, true);
	if (r < 0)
		reply_error(&c->out, "ERR Can't start a background append only file rewrite");
	else if (r == 1)
		reply_simple(&c->out, "Background append only file rewriting scheduled");
	else
		reply_simple(&c->out, "Background append only file rewriting started");
}
