/* cmd_command — COMMAND, COMMAND COUNT / INFO / DOCS / LIST / GETKEYS / HELP,
 * all derived from the command table (table.h): flags, ACL categories and
 * the key specification come from each row's flags, group and
 * first/last/step key positions, in Redis 7.0's reply shapes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/commands/table.h"
#include "zarisd/core/mem.h"
#include "zarisd/core/util.h"
#include "zarisd/proto/reply.h"

/* --- flags and ACL categories ------------------------------------------------ */

/* Flags COMMAND INFO shows that no row carries: a script row's
 * (EVAL, FCALL ...: Redis's skip_monitor; zarisd has no MONITOR, so true) */
#define SHOWN_SKIP_MONITOR (1ull << 32)

static const struct {
	uint64_t flag;
	const char *name;
} flag_names[] = {
	/* Redis 7.0's order of COMMAND INFO flags */
	{ CMD_WRITE, "write" },
	{ CMD_READONLY, "readonly" },
	{ CMD_DENYOOM, "denyoom" },
	{ CMD_ADMIN, "admin" },
	{ CMD_PUBSUB, "pubsub" },
	{ CMD_NOSCRIPT, "noscript" },
	{ CMD_BLOCKING, "blocking" },
	{ CMD_LOADING, "loading" },
	{ CMD_STALE, "stale" },
	{ SHOWN_SKIP_MONITOR, "skip_monitor" },
	{ CMD_FAST, "fast" },
	{ CMD_NOAUTH, "no_auth" },
	{ CMD_NO_MANDATORY_KEYS, "no_mandatory_keys" },
	{ CMD_NOMULTI, "no_multi" },
};

#define FLAG_NAME_COUNT (sizeof(flag_names) / sizeof(flag_names[0]))

/* A container without a handler of its own only routes to its subcommands:
 * Redis shows it with no flags and @slow. */
static bool is_pure_container(const struct command *cmd)
{
	return (cmd->flags & CMD_CONTAINER) && !cmd->handler;
}

static const char *top_name(const struct command *cmd)
{
	return cmd->parent ? cmd->parent->name : cmd->name;
}

/* ACL categories in Redis's category order. */
enum acl_cat {
	ACL_KEYSPACE,
	ACL_READ,
	ACL_WRITE,
	ACL_SET,
	ACL_SORTEDSET,
	ACL_LIST,
	ACL_HASH,
	ACL_STRING,
	ACL_BITMAP,
	ACL_HYPERLOGLOG,
	ACL_PUBSUB,
	ACL_ADMIN,
	ACL_FAST,
	ACL_SLOW,
	ACL_BLOCKING,
	ACL_DANGEROUS,
	ACL_CONNECTION,
	ACL_TRANSACTION,
	ACL_SCRIPTING,
	ACL_COUNT
};

static const char *const acl_cat_names[ACL_COUNT] = {
	[ACL_KEYSPACE] = "keyspace",
	[ACL_READ] = "read",
	[ACL_WRITE] = "write",
	[ACL_SET] = "set",
	[ACL_SORTEDSET] = "sortedset",
	[ACL_LIST] = "list",
	[ACL_HASH] = "hash",
	[ACL_STRING] = "string",
	[ACL_BITMAP] = "bitmap",
	[ACL_HYPERLOGLOG] = "hyperloglog",
	[ACL_PUBSUB] = "pubsub",
	[ACL_ADMIN] = "admin",
	[ACL_FAST] = "fast",
	[ACL_SLOW] = "slow",
	[ACL_BLOCKING] = "blocking",
	[ACL_DANGEROUS] = "dangerous",
	[ACL_CONNECTION] = "connection",
	[ACL_TRANSACTION] = "transaction",
	[ACL_SCRIPTING] = "scripting",
};

/* Which categories CMD belongs to: Redis's implicit ones from the flags
 * (write, read, admin+dangerous, pubsub, fast/slow, blocking) plus those
 * its group implies. Three commands carry categories no flag explains
 * (Redis lists them explicitly): KEYS and INFO are @dangerous, LASTSAVE
 * @admin @dangerous; the COMMAND family is @connection. */
static void acl_categories(const struct command *cmd, bool out[ACL_COUNT])
{
	memset(out, 0, sizeof(bool) * ACL_COUNT);
	if (is_pure_container(cmd)) {
		out[ACL_SLOW] = true;
		return;
	}
	uint32_t f = cmd->flags;
	const char *group = cmd->group ? cmd->group : "";
	const char *top = top_name(cmd);
	/* FUNCTION LOAD's whole-keyspace row is zarisd's lock, not Redis's category */
	if (!strcmp(group, "scripting"))
		f &= ~CMD_WHOLEDB;
	/* EVAL_RO, FCALL_RO: read-only for the dispatcher, not in @read for Redis */
	if (f & CMD_SCRIPT)
		f &= ~CMD_READONLY;
	out[ACL_KEYSPACE] = !strcmp(group, "generic") || (f & CMD_WHOLEDB);
	out[ACL_READ] = f & CMD_READONLY;
	out[ACL_WRITE] = f & CMD_WRITE;
	/* a data type's group is its category */
	out[ACL_SET] = !strcmp(group, "set");
	out[ACL_SORTEDSET] = !strcmp(group, "sorted-set");
	out[ACL_LIST] = !strcmp(group, "list");
	out[ACL_HASH] = !strcmp(group, "hash");
	out[ACL_STRING] = !strcmp(group, "string");
	out[ACL_BITMAP] = !strcmp(group, "bitmap");
	out[ACL_HYPERLOGLOG] = !strcmp(group, "hyperloglog");
	out[ACL_PUBSUB] = (f & CMD_PUBSUB) || !strcmp(group, "pubsub");
	out[ACL_ADMIN] = (f & CMD_ADMIN) || !strcmp(top, "lastsave");
	out[ACL_FAST] = f & CMD_FAST;
	out[ACL_SLOW] = !(f & CMD_FAST);
	out[ACL_BLOCKING] = f & CMD_BLOCKING;
	out[ACL_DANGEROUS] = (f & CMD_ADMIN) || ((f & CMD_WRITE) && (f & CMD_WHOLEDB)) ||
			     !strcmp(top, "keys") || !strcmp(top, "info") || !strcmp(top, "lastsave");
	out[ACL_CONNECTION] = !strcmp(group, "connection") || !strcmp(top, "command");
	out[ACL_TRANSACTION] = !strcmp(group, "transactions");
	out[ACL_SCRIPTING] = !strcmp(group, "scripting");
}

static bool has_keys(const struct command *cmd)
{
	return cmd->first_key > 0 || cmd->keynum_index > 0;
}

/* --- COMMAND INFO --------------------------------------------------------------- */

static void reply_spec_flags(struct obuf *o, const char *const *flags)
{
	long n = 0;
	while (flags[n])
		n++;
	reply_bulk_cstr(o, "flags");
	reply_set(o, n);
	for (long i = 0; i < n; i++)
		reply_simple(o, flags[i]);
}

static void reply_begin_search(struct obuf *o, int index)
{
	reply_bulk_cstr(o, "begin_search");
	reply_map(o, 2);
	reply_bulk_cstr(o, "type");
	reply_bulk_cstr(o, "index");
	reply_bulk_cstr(o, "spec");
	reply_map(o, 1);
	reply_bulk_cstr(o, "index");
	reply_long(o, index);
}

/* Key spec flags are derived from the row: read-only rows read their keys;
 * a row with fixed keys before counted ones is a STORE form (ZUNIONSTORE:
 * the destination is overwritten, the counted keys are read); counted
 * keys of a write row are popped from (LMPOP, ZMPOP: Redis's "RW access
 * delete"), except a script's, which may do anything ("RW access update",
 * with the row's note). */
static void reply_key_specs(struct obuf *o, const struct command *cmd)
{
	static const char *const ro[] = { "RO", "access", NULL };
	static const char *const rw[] = { "RW", "update", NULL };
	static const char *const ow[] = { "OW", "update", NULL };
	static const char *const pop[] = { "RW", "access", "delete", NULL };
	static const char *const script_rw[] = { "RW", "access", "update", NULL };
	bool readonly = cmd->flags & CMD_READONLY;
	bool keynum = cmd->keynum_index > 0;
	reply_set(o, (cmd->first_key > 0) + keynum);
	if (cmd->first_key > 0) {
		reply_map(o, 3);
		reply_spec_flags(o, readonly ? ro : keynum ? ow : rw);
		reply_begin_search(o, cmd->first_key);
		reply_bulk_cstr(o, "find_keys");
		reply_map(o, 2);
		reply_bulk_cstr(o, "type");
		reply_bulk_cstr(o, "range");
		reply_bulk_cstr(o, "spec");
		reply_map(o, 3);
		/* the range's last key is relative to the first (negative: from the end) */
		reply_bulk_cstr(o, "lastkey");
		reply_long(o, cmd->last_key < 0 ? cmd->last_key : cmd->last_key - cmd->first_key);
		reply_bulk_cstr(o, "keystep");
		reply_long(o, cmd->key_step);
		reply_bulk_cstr(o, "limit");
		reply_long(o, 0);
	}
	if (keynum) {
		reply_map(o, 3 + (cmd->key_notes != NULL));
		if (cmd->key_notes) {
			reply_bulk_cstr(o, "notes");
			reply_bulk_cstr(o, cmd->key_notes);
		}
		reply_spec_flags(o, readonly || cmd->first_key > 0 ? ro
				    : (cmd->flags & CMD_SCRIPT)	   ? script_rw
								   : pop);
		reply_begin_search(o, cmd->keynum_index);
		reply_bulk_cstr(o, "find_keys");
		reply_map(o, 2);
		reply_bulk_cstr(o, "type");
		reply_bulk_cstr(o, "keynum");
		reply_bulk_cstr(o, "spec");
		reply_map(o, 3);
		/* positions relative to begin_search: the count is right there */
		reply_bulk_cstr(o, "keynumidx");
		reply_long(o, 0);
		reply_bulk_cstr(o, "firstkey");
		reply_long(o, cmd->keynum_first);
		reply_bulk_cstr(o, "keystep");
		reply_long(o, cmd->keynum_step);
	}
}

static void reply_command_info(struct obuf *o, const struct command *cmd)
{
	char name[96];
	command_full_name(cmd, name, sizeof(name));
	reply_array(o, 10);
	reply_bulk_cstr(o, name);
	reply_long(o, cmd->arity);
	long nflags = 0;
	bool pure = is_pure_container(cmd);
	/* keys found by a count argument move around: Redis adds "movablekeys" last */
	bool movable = cmd->keynum_index > 0;
	uint64_t shown = cmd->flags;
	if (cmd->flags & CMD_SCRIPT)
		shown |= SHOWN_SKIP_MONITOR;
	for (size_t i = 0; !pure && i < FLAG_NAME_COUNT; i++)
		nflags += (shown & flag_names[i].flag) != 0;
	/* served while a script is busy (the dispatcher's busy_allowed): the
	 * kill and stats rows of SCRIPT and FUNCTION show Redis's allow_busy */
	bool busy = cmd->parent && (!strcmp(cmd->name, "kill") || !strcmp(cmd->name, "stats")) &&
		    (!strcmp(cmd->parent->name, "script") || !strcmp(cmd->parent->name, "function"));
	reply_set(o, nflags + movable + busy);
	for (size_t i = 0; !pure && i < FLAG_NAME_COUNT; i++)
		if (shown & flag_names[i].flag)
			reply_simple(o, flag_names[i].name);
	if (movable)
		reply_simple(o, "movablekeys");
	if (busy)
		reply_simple(o, "allow_busy");
	reply_long(o, cmd->first_key);
	reply_long(o, cmd->last_key);
	reply_long(o, cmd->key_step);
	bool cats[ACL_COUNT];
	acl_categories(cmd, cats);
	long ncats = 0;
	for (int i = 0; i < ACL_COUNT; i++)
		ncats += cats[i];
	reply_set(o, ncats);
	for (int i = 0; i < ACL_COUNT; i++)
		if (cats[i]) {
			char cat[32];
			snprintf(cat, sizeof(cat), "@%s", acl_cat_names[i]);
			reply_simple(o, cat);
		}
	long ntips = 0;
	while (cmd->tips && cmd->tips[ntips])
		ntips++;
	reply_set(o, ntips);
	for (long i = 0; i < ntips; i++)
		reply_bulk_cstr(o, cmd->tips[i]);
	reply_key_specs(o, cmd);
	long nsub = 0;
	for (const struct command *s = cmd->subcommands; s && s->name; s++)
		nsub++;
	/* Redis 7.0 answers an empty set for no subcommands, else an array */
	if (nsub)
		reply_array(o, nsub);
	else
		reply_set(o, 0);
	for (const struct command *s = cmd->subcommands; s && s->name; s++)
		reply_command_info(o, s);
}

/* The row named by "name" or "container|sub", or NULL. */
static const struct command *lookup_full_name(const char *name, size_t len)
{
	const char *bar = memchr(name, '|', len);
	if (!bar)
		return command_lookup(name, len);
	const struct command *top = command_lookup(name, (size_t)(bar - name));
	if (!top || !top->subcommands)
		return NULL;
	return command_lookup_sub(top, bar + 1, len - (size_t)(bar - name) - 1);
}

static void reply_all_infos(struct client *c)
{
	unsigned n = command_count();
	reply_array(&c->out, n);
	for (unsigned i = 0; i < n; i++)
		reply_command_info(&c->out, command_at(i));
}

void cmd_command(struct client *c)
{
	reply_all_infos(c);
}

void cmd_command_info(struct client *c)
{
	if (c->argc == 2) {
		reply_all_infos(c);
		return;
	}
	reply_array(&c->out, c->argc - 2);
	for (int i = 2; i < c->argc; i++) {
		const struct command *cmd = lookup_full_name(c->argv[i].ptr, c->argv[i].len);
		if (cmd)
			reply_command_info(&c->out, cmd);
		else
			reply_null(&c->out); /* Redis: a null bulk in RESP2 */
	}
}

void cmd_command_count(struct client *c)
{
	reply_long(&c->out, command_count());
}

/* --- COMMAND DOCS ----------------------------------------------------------------- */

static void reply_command_docs(struct obuf *o, const struct command *cmd)
{
	long nsub = 0;
	for (const struct command *s = cmd->subcommands; s && s->name; s++)
		nsub++;
	long fields = 3 + (cmd->complexity != NULL) + (nsub > 0);
	reply_map(o, fields);
	reply_bulk_cstr(o, "summary");
	reply_bulk_cstr(o, cmd->summary ? cmd->summary : "");
	reply_bulk_cstr(o, "since");
	reply_bulk_cstr(o, cmd->since ? cmd->since : "");
	reply_bulk_cstr(o, "group");
	reply_bulk_cstr(o, cmd->group ? cmd->group : "");
	if (cmd->complexity) {
		reply_bulk_cstr(o, "complexity");
		reply_bulk_cstr(o, cmd->complexity);
	}
	if (nsub) {
		reply_bulk_cstr(o, "subcommands");
		reply_map(o, nsub);
		for (const struct command *s = cmd->subcommands; s && s->name; s++) {
			char name[96];
			command_full_name(s, name, sizeof(name));
			reply_bulk_cstr(o, name);
			reply_command_docs(o, s);
		}
	}
}

void cmd_command_docs(struct client *c)
{
	if (c->argc == 2) {
		unsigned n = command_count();
		reply_map(&c->out, n);
		for (unsigned i = 0; i < n; i++) {
			reply_bulk_cstr(&c->out, command_at(i)->name);
			reply_command_docs(&c->out, command_at(i));
		}
		return;
	}
	/* unknown names are left out, so the size is known only at the end */
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	long found = 0;
	for (int i = 2; i < c->argc; i++) {
		const struct command *cmd = lookup_full_name(c->argv[i].ptr, c->argv[i].len);
		if (!cmd)
			continue;
		char name[96];
		command_full_name(cmd, name, sizeof(name));
		reply_bulk_cstr(&c->out, name);
		reply_command_docs(&c->out, cmd);
		found++;
	}
	reply_set_deferred(&c->out, &d, REPLY_AGG_MAP, found);
}

/* --- COMMAND LIST ------------------------------------------------------------------ */

enum list_filter {
	LIST_ALL,
	LIST_MODULE,
	LIST_ACLCAT,
	LIST_PATTERN
};

static bool list_match(const struct command *cmd, enum list_filter f, const char *arg, size_t len)
{
	switch (f) {
	case LIST_ALL:
		return true;
	case LIST_MODULE:
		return false; /* no modules */
	case LIST_ACLCAT: {
		bool cats[ACL_COUNT];
		acl_categories(cmd, cats);
		for (int i = 0; i < ACL_COUNT; i++)
			if (cats[i] && zr_eq_nocase(arg, len, acl_cat_names[i]))
				return true;
		return false;
	}
	case LIST_PATTERN: {
		char name[96];
		size_t n = command_full_name(cmd, name, sizeof(name));
		return zr_glob_match(arg, len, name, n, true);
	}
	}
	return false;
}

static long list_add(struct obuf *o, const struct command *cmd, enum list_filter f, const char *arg,
		     size_t len)
{
	long n = 0;
	if (list_match(cmd, f, arg, len)) {
		char name[96];
		size_t nl = command_full_name(cmd, name, sizeof(name));
		reply_bulk(o, name, nl);
		n++;
	}
	for (const struct command *s = cmd->subcommands; s && s->name; s++)
		n += list_add(o, s, f, arg, len);
	return n;
}

void cmd_command_list(struct client *c)
{
	enum list_filter f = LIST_ALL;
	const char *arg = NULL;
	size_t len = 0;
	if (c->argc == 5 && cmd_arg_is(c, 2, "filterby")) {
		if (cmd_arg_is(c, 3, "module"))
			f = LIST_MODULE;
		else if (cmd_arg_is(c, 3, "aclcat"))
			f = LIST_ACLCAT;
		else if (cmd_arg_is(c, 3, "pattern"))
			f = LIST_PATTERN;
		else {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
		arg = cmd_arg(c, 4, &len);
	} else if (c->argc != 2) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	struct reply_deferred d;
	reply_deferred(&c->out, &d);
	long n = 0;
	for (unsigned i = 0; i < command_count(); i++)
		n += list_add(&c->out, command_at(i), f, arg, len);
	reply_set_deferred(&c->out, &d, REPLY_AGG_ARRAY, n);
}

/* --- COMMAND GETKEYS ----------------------------------------------------------------- */

/* Redis 7.0's getKeysUsingKeySpecs: the fixed keys, then the counted
 * ones (keyiter.h), into POS (argc entries). Returns their number, or -1
 * when a spec does not fit ARGV. */
static int keys_by_specs(const struct command *cmd, const struct resp_arg *argv, int argc, int *pos)
{
	struct keyiter it;
	keyiter_init(&it, cmd, argv, argc);
	if (!it.fits)
		return -1;
	int n = 0;
	for (int i; (i = keyiter_next(&it)) >= 0;)
		pos[n++] = i;
	return n;
}

/* What Redis 7.0 falls back to when a key spec does not fit: the
 * command's getkeys procedure (genericGetKeys), which reads the count with
 * atoi — so "2abc" and " 2" count 2 there — and lists the counted keys
 * before the destination. POS has argc + 1 entries. Returns the number of
 * keys (0 when the count is below 1 or too large). */
static int keys_by_getkeys_proc(const struct command *cmd, const struct resp_arg *argv, int argc, int *pos)
{
	const struct resp_arg *a = &argv[cmd->keynum_index];
	char *tmp = zr_malloc(a->len + 1);
	memcpy(tmp, a->ptr, a->len);
	tmp[a->len] = '\0';
	int num = (int)strtol(tmp, NULL, 10); /* glibc's atoi */
	zr_free(tmp);
	int first = cmd->keynum_index + cmd->keynum_first;
	int step = cmd->keynum_step > 0 ? cmd->keynum_step : 1;
	if (num < 1 || num > (argc - first) / step)
		return 0;
	int n = 0;
	for (int i = 0; i < num; i++)
		pos[n++] = first + i * step;
	if (cmd->first_key > 0)
		pos[n++] = cmd->first_key;
	return n;
}

void cmd_command_getkeys(struct client *c)
{
	const struct resp_arg *argv = c->argv + 2;
	int argc = c->argc - 2;
	const struct command *cmd = command_lookup(argv[0].ptr, argv[0].len);
	if (cmd && (cmd->flags & CMD_CONTAINER) && cmd->subcommands && argc >= 2) {
		cmd = command_lookup_sub(cmd, argv[1].ptr, argv[1].len);
	}
	if (!cmd) {
		reply_error(&c->out, "ERR Invalid command specified");
		return;
	}
	if (!has_keys(cmd)) {
		reply_error(&c->out, "ERR The command has no key arguments");
		return;
	}
	if ((cmd->arity > 0 && cmd->arity != argc) || argc < -cmd->arity) {
		reply_error(&c->out, "ERR Invalid number of arguments specified for command");
		return;
	}
	int *pos = zr_malloc(sizeof(int) * ((size_t)argc + 1));
	int n = keys_by_specs(cmd, argv, argc, pos);
	if (n < 0 && cmd->keynum_index > 0)
		n = keys_by_getkeys_proc(cmd, argv, argc, pos);
	if (n <= 0 && (cmd->flags & CMD_NO_MANDATORY_KEYS)) {
		reply_array(&c->out, 0);
	} else if (n <= 0) {
		reply_error(&c->out, "ERR Invalid arguments specified for command");
	} else {
		reply_array(&c->out, n);
		for (int i = 0; i < n; i++)
			reply_bulk(&c->out, argv[pos[i]].ptr, argv[pos[i]].len);
	}
	zr_free(pos);
}

void cmd_command_help(struct client *c)
{
	static const char *const help[] = {
		"(no subcommand)",
		"    Return details about all Redis commands.",
		"COUNT",
		"    Return the total number of commands in this Redis server.",
		"LIST",
		"    Return a list of all commands in this Redis server.",
		"INFO [<command-name> ...]",
		"    Return details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"DOCS [<command-name> ...]",
		"    Return documentation details about multiple Redis commands.",
		"    If no command names are given, documentation details for all",
		"    commands are returned.",
		"GETKEYS <full-command>",
		"    Return the keys from a full Redis command.",
		NULL,
	};
	cmd_reply_help(c, help);
}
