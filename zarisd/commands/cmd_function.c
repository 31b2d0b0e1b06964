/* cmd_function — FUNCTION LOAD / DELETE / FLUSH / LIST / STATS / KILL /
 * DUMP / RESTORE / HELP (Redis 7.0's functions.c, reply for reply); the
 * libraries are script/'s registry (script.h), FCALL is cmd_script.c's.
 *
 * LOAD, DELETE, FLUSH and RESTORE change server state outside the
 * keyspace: their rows are whole-keyspace writes (the dispatcher holds
 * every shard lock, so no snapshot's instant falls between the change
 * and its record), and each says so to propagate (propagate_mark_change):
 * the command itself is the record, which a replay, the log and a replica
 * run again through this handler. A replayed LOAD has no time limit, as
 * Redis's for a client it must obey.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/propagate.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/script/script.h"
#include "zarisd/server/client.h"

static void syntax_error(struct client *c)
{
	reply_errorf(&c->out,
		     "ERR unknown subcommand or wrong number of arguments for '%.*s'. Try FUNCTION HELP.",
		     (int)c->argv[1].len, c->argv[1].ptr);
}

void cmd_function_load(struct client *c)
{
	bool replace = false;
	int pos = 2;
	while (pos < c->argc - 1) {
		if (cmd_arg_is(c, pos, "replace")) {
			replace = true;
			pos++;
			continue;
		}
		reply_errorf(&c->out, "ERR Unknown option given: %.*s", (int)c->argv[pos].len,
			     c->argv[pos].ptr);
		return;
	}
	if (pos >= c->argc) {
		reply_error(&c->out, "ERR Function code is missing");
		return;
	}
	char name[256], err[1024];
	int r = function_load(c->argv[pos].ptr, c->argv[pos].len, replace, !(c->flags & CLIENT_REPLAY), name,
			      sizeof(name), err, sizeof(err));
	if (r < 0) {
		reply_error(&c->out, err);
		return;
	}
	propagate_mark_change();
	reply_bulk_cstr(&c->out, name);
}

void cmd_function_delete(struct client *c)
{
	if (function_delete(c->argv[2].ptr, c->argv[2].len) < 0) {
		reply_error(&c->out, "ERR Library not found");
		return;
	}
	propagate_mark_change();
	reply_ok(&c->out);
}

void cmd_function_flush(struct client *c)
{
	if (c->argc > 3) {
		syntax_error(c);
		return;
	}
	if (c->argc == 3 && !cmd_arg_is(c, 2, "sync") && !cmd_arg_is(c, 2, "async")) {
		reply_error(&c->out, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option");
		return;
	}
	/* ASYNC and SYNC alike: the libraries are small, freed here */
	function_flush();
	propagate_mark_change();
	reply_ok(&c->out);
}

void cmd_function_kill(struct client *c)
{
	cmd_reply_script_kill(c, script_kill(true), true);
}

void cmd_function_list(struct client *c)
{
	bool withcode = false;
	const char *pattern = NULL;
	size_t plen = 0;
	for (int i = 2; i < c->argc; i++) {
		if (!withcode && cmd_arg_is(c, i, "withcode")) {
			withcode = true;
			continue;
		}
		if (!pattern && cmd_arg_is(c, i, "libraryname")) {
			if (i >= c->argc - 1) {
				reply_error(&c->out, "ERR library name argument was not given");
				return;
			}
			i++;
			pattern = c->argv[i].ptr;
			plen = c->argv[i].len;
			continue;
		}
		reply_errorf(&c->out, "ERR Unknown argument %.*s", (int)c->argv[i].len, c->argv[i].ptr);
		return;
	}
	function_reply_list(&c->out, pattern, plen, withcode);
}

void cmd_function_stats(struct client *c)
{
	if (script_any_busy() && !script_busy_is_function()) {
		reply_error(&c->out, ERR_BUSY_SCRIPT);
		return;
	}
	reply_map(&c->out, 2);
	reply_bulk_cstr(&c->out, "running_script");
	if (!script_reply_busy_function(&c->out))
		reply_null(&c->out);
	uint64_t libs, fns;
	function_counts(&libs, &fns);
	reply_bulk_cstr(&c->out, "engines");
	reply_map(&c->out, 1);
	reply_bulk_cstr(&c->out, "LUA");
	reply_map(&c->out, 2);
	reply_bulk_cstr(&c->out, "libraries_count");
	reply_long(&c->out, (long long)libs);
	reply_bulk_cstr(&c->out, "functions_count");
	reply_long(&c->out, (long long)fns);
}

void cmd_function_dump(struct client *c)
{
	size_t len;
	char *p = function_dump(&len);
	reply_bulk(&c->out, p, len);
	zr_free(p);
}

void cmd_function_restore(struct client *c)
{
	if (c->argc > 4) {
		syntax_error(c);
		return;
	}
	enum function_restore_policy policy = FUNCTION_RESTORE_APPEND;
	if (c->argc == 4) {
		if (cmd_arg_is(c, 3, "append"))
			policy = FUNCTION_RESTORE_APPEND;
		else if (cmd_arg_is(c, 3, "replace"))
			policy = FUNCTION_RESTORE_REPLACE;
		else if (cmd_arg_is(c, 3, "flush"))
			policy = FUNCTION_RESTORE_FLUSH;
		else {
			reply_error(
				&c->out,
				"ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.");
			return;
		}
	}
	char err[1024];
	if (function_restore(c->argv[2].ptr, c->argv[2].len, policy, err, sizeof(err)) < 0) {
		reply_error(&c->out, err);
		return;
	}
	propagate_mark_change();
	reply_ok(&c->out);
}

void cmd_function_help(struct client *c)
{
	static const char *const lines[] = {
		"LOAD [REPLACE] <FUNCTION CODE>",
		"    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>",
		"    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]",
		"    Return general information on all the libraries:",
		"    * Library name",
		"    * The engine used to run the Library",
		"    * Library description",
		"    * Functions list",
		"    * Library code (if WITHCODE is given)",
		"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
		"STATS",
		"    Return information about the current function running:",
		"    * Function name",
		"    * Command used to run the function",
		"    * Duration in MS that the function is running",
		"    If no function is running, return nil",
		"    In addition, returns a list of available engines.",
		"KILL",
		"    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]",
		"    Delete all the libraries.",
		"    When called without the optional mode argument, the behavior is determined by the",
		"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
		"    * ASYNC: Asynchronously flush the libraries.",
		"    * SYNC: Synchronously flush the libraries.",
		"DUMP",
		"    Return a serialized payload representing the current libraries, can be restored using "
		"FUNCTION RESTORE command",
		"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
		"    Restore the libraries represented by the given payload, it is possible to give a restore "
		"policy to",
		"    control how to handle existing libraries (default APPEND):",
		"    * FLUSH: delete all existing libraries.",
		"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
		"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace "
		"the old",
		"      libraries with the new libraries (notice that even on this option there is a chance of "
		"failure",
		"      in case of functions name collision with another library).",
		NULL,
	};
	cmd_reply_help(c, lines);
}
