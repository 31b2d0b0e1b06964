/* cmdutil — see cmdutil.h. */
#include "zarisd/commands/cmdutil.h"

#include <errno.h>
#include <ctype.h>
#include <limits.h>
#include <math.h>
#include <string.h>

#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

bool cmd_arg_is(const struct client *c, int i, const char *lit)
{
	return zr_eq_nocase(c->argv[i].ptr, c->argv[i].len, lit);
}

bool cmd_arg_ll(struct client *c, int i, long long *out, const char *msg)
{
	if (zr_str_to_ll(c->argv[i].ptr, c->argv[i].len, out))
		return true;
	reply_error(&c->out, msg ? msg : ERR_NOT_INTEGER);
	return false;
}

bool cmd_arg_ll_range(struct client *c, int i, long long min, long long max, long long *out, const char *msg)
{
	long long v;
	if (!zr_str_to_ll(c->argv[i].ptr, c->argv[i].len, &v) || v < min || v > max) {
		reply_error(&c->out, msg ? msg : ERR_NOT_INTEGER);
		return false;
	}
	*out = v;
	return true;
}

bool cmd_arg_double(struct client *c, int i, double *out, const char *msg)
{
	if (zr_str_to_d(c->argv[i].ptr, c->argv[i].len, out))
		return true;
	reply_error(&c->out, msg ? msg : ERR_NOT_FLOAT);
	return false;
}

bool cmd_arg_ld(struct client *c, int i, long double *out)
{
	if (zr_str_to_ld(c->argv[i].ptr, c->argv[i].len, out))
		return true;
	reply_error(&c->out, ERR_NOT_FLOAT);
	return false;
}

bool cmd_arg_db(struct client *c, int i, unsigned *db)
{
	/* Redis's getIntFromObjectOrReply, then selectDb's check */
	long long v;
	if (!cmd_arg_ll(c, i, &v, NULL))
		return false;
	if (v < INT_MIN || v > INT_MAX) {
		reply_errorf(&c->out, "ERR value is out of range, value must between %d and %d", INT_MIN,
			     INT_MAX);
		return false;
	}
	if (v < 0 || v >= c->srv->cfg->databases) {
		reply_error(&c->out, ERR_DB_INDEX);
		return false;
	}
	*db = (unsigned)v;
	return true;
}

bool cmd_incr_ld_or_reply(struct client *c, long double value, long double incr, char *buf, size_t *len)
{
	value += incr;
	if (isnan(value) || isinf(value)) {
		reply_error(&c->out, ERR_FLOAT_NAN_INF);
		return false;
	}
	/* Redis's buffer is MAX_LONG_DOUBLE_CHARS too; a value that does not
	 * fit (cannot happen for finite long doubles) is stored empty, as there. */
	*len = zr_ld_to_str(buf, ZR_MAX_LONG_DOUBLE_CHARS, value);
	return true;
}

bool cmd_arg_mpop(struct client *c, int numkeys_i, const char *where0, const char *where1, long long *numkeys,
		  int *where, long long *count)
{
	if (!cmd_arg_ll_range(c, numkeys_i, 1, LONG_MAX, numkeys, "ERR numkeys should be greater than 0"))
		return false;
	/* the WHERE word must follow the keys (checked before adding: a huge
	 * numkeys would overflow the index) */
	if (*numkeys > c->argc - numkeys_i - 2) {
		reply_error(&c->out, ERR_SYNTAX);
		return false;
	}
	int where_i = numkeys_i + (int)*numkeys + 1;
	if (cmd_opt_is(c, where_i, where0)) {
		*where = 0;
	} else if (cmd_opt_is(c, where_i, where1)) {
		*where = 1;
	} else {
		reply_error(&c->out, ERR_SYNTAX);
		return false;
	}
	*count = -1;
	for (int j = where_i + 1; j < c->argc; j++) {
		if (*count == -1 && cmd_opt_is(c, j, "count") && j + 1 < c->argc) {
			if (!cmd_arg_ll_range(c, ++j, 1, LONG_MAX, count,
					      "ERR count should be greater than 0"))
				return false;
		} else {
			reply_error(&c->out, ERR_SYNTAX);
			return false;
		}
	}
	if (*count == -1)
		*count = 1;
	return true;
}

/* "config|get" for a subcommand row, "get" otherwise. */
static size_t cmd_full_name(const struct command *cmd, char *buf, size_t size)
{
	if (cmd->parent)
		return (size_t)snprintf(buf, size, "%s|%s", cmd->parent->name, cmd->name);
	return (size_t)snprintf(buf, size, "%s", cmd->name);
}

void cmd_reply_arity(struct client *c)
{
	char name[96];
	if (c->cmd)
		cmd_full_name(c->cmd, name, sizeof(name));
	else
		snprintf(name, sizeof(name), "%.*s", (int)(c->argv[0].len > 64 ? 64 : c->argv[0].len),
			 c->argv[0].ptr);
	reply_errorf(&c->out, "ERR wrong number of arguments for '%s' command", name);
}

void cmd_reply_unknown_subcommand(struct client *c)
{
	char container[64];
	size_t n = c->argv[0].len < sizeof(container) - 1 ? c->argv[0].len : sizeof(container) - 1;
	for (size_t i = 0; i < n; i++)
		container[i] = (char)toupper((unsigned char)c->argv[0].ptr[i]);
	container[n] = '\0';
	int sublen = c->argc > 1 ? (int)(c->argv[1].len > 128 ? 128 : c->argv[1].len) : 0;
	reply_errorf(&c->out, "ERR unknown subcommand '%.*s'. Try %s HELP.", sublen,
		     c->argc > 1 ? c->argv[1].ptr : "", container);
}

void cmd_reply_help(struct client *c, const char *const *lines)
{
	char container[64];
	size_t n = c->argv[0].len < sizeof(container) - 1 ? c->argv[0].len : sizeof(container) - 1;
	for (size_t i = 0; i < n; i++)
		container[i] = (char)toupper((unsigned char)c->argv[0].ptr[i]);
	container[n] = '\0';
	long count = 0;
	while (lines[count])
		count++;
	reply_array(&c->out, count + 3);
	char head[128];
	snprintf(head, sizeof(head),
		 "%s <subcommand> [<arg> [value] [opt] ...]. Subcommands are:", container);
	reply_simple(&c->out, head);
	for (long i = 0; i < count; i++)
		reply_simple(&c->out, lines[i]);
	reply_simple(&c->out, "HELP");
	reply_simple(&c->out, "    Prints this help.");
}

bool client_name_is_valid(const char *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] < '!' || p[i] > '~')
			return false;
	return true;
}

void cmd_reply_script_kill(struct client *c, int r, bool function)
{
	if (r == -ENOENT)
		reply_error(&c->out, "NOTBUSY No scripts in execution right now.");
	else if (r == -EBUSY) /* the busy one is the other kind: Redis names its KILL */
		reply_error(&c->out, function ? ERR_BUSY_SCRIPT : ERR_BUSY_FUNCTION);
	else if (r == -EPERM)
		reply_error(
			&c->out,
			"UNKILLABLE Sorry the script already executed write commands against the dataset. "
			"You can either wait the script termination or kill the server in a hard way using "
			"the SHUTDOWN NOSAVE command.");
	else
		reply_ok(&c->out);
}
