/* cmd_command — COMMAND, COMMAND COUNT / INFO / DOCS / LIST / GETKEYS /
 * GETKEYSANDFLAGS / HELP, read from the command table (table.h): each
 * row's flags, ACL categories, tips and key specs, in Redis 7.0's reply
 * shapes.
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

struct flag_name {
	uint32_t flag;
	const char *name;
};

/* The flags COMMAND INFO shows, in Redis 7.0's order; zarisd's own flags
 * (command.h) are not among them. */
static const struct flag_name command_flag_names[] = {
	{ CMD_WRITE, "write" },
	{ CMD_READONLY, "readonly" },
	{ CMD_DENYOOM, "denyoom" },
	{ CMD_ADMIN, "admin" },
	{ CMD_PUBSUB, "pubsub" },
	{ CMD_NOSCRIPT, "noscript" },
	{ CMD_BLOCKING, "blocking" },
	{ CMD_LOADING, "loading" },
	{ CMD_STALE, "stale" },
	{ CMD_SKIP_MONITOR, "skip_monitor" },
	{ CMD_SKIP_SLOWLOG, "skip_slowlog" },
	{ CMD_FAST, "fast" },
	{ CMD_NOAUTH, "no_auth" },
	{ CMD_NO_MANDATORY_KEYS, "no_mandatory_keys" },
	{ CMD_NO_ASYNC_LOADING, "no_async_loading" },
	{ CMD_NOMULTI, "no_multi" },
	{ CMD_MOVABLE_KEYS, "movablekeys" },
	{ CMD_ALLOW_BUSY, "allow_busy" },
	{ 0, NULL },
};

/* Key spec flags, in Redis 7.0's order. */
static const struct flag_name key_flag_names[] = {
	{ KS_RO, "RO" },
	{ KS_RW, "RW" },
	{ KS_OW, "OW" },
	{ KS_RM, "RM" },
	{ KS_ACCESS, "access" },
	{ KS_UPDATE, "update" },
	{ KS_INSERT, "insert" },
	{ KS_DELETE, "delete" },
	{ KS_NOT_KEY, "not_key" },
	{ KS_INCOMPLETE, "incomplete" },
	{ KS_VARIABLE_FLAGS, "variable_flags" },
	{ 0, NULL },
};

/* FLAGS as a set of status replies, NAMES' order. */
static void reply_flag_set(struct obuf *o, uint32_t flags, const struct flag_name *names)
{
	long n = 0;
	for (const struct flag_name *f = names; f->name; f++)
		n += (flags & f->flag) != 0;
	reply_set(o, n);
	for (const struct flag_name *f = names; f->name; f++)
		if (flags & f->flag)
			reply_simple(o, f->name);
}

/* --- COMMAND INFO --------------------------------------------------------------- */

static void reply_begin_search(struct obuf *o, const struct cmd_arg_ref *b)
{
	reply_bulk_cstr(o, "begin_search");
	reply_map(o, 2);
	reply_bulk_cstr(o, "type");
	reply_bulk_cstr(o, b->keyword ? "keyword" : "index");
	reply_bulk_cstr(o, "spec");
	if (b->keyword) {
		reply_map(o, 2);
		reply_bulk_cstr(o, "keyword");
		reply_bulk_cstr(o, b->keyword);
		reply_bulk_cstr(o, "startfrom");
		reply_long(o, b->pos);
	} else {
		reply_map(o, 1);
		reply_bulk_cstr(o, "index");
		reply_long(o, b->pos);
	}
}

static void reply_find_keys(struct obuf *o, const struct key_spec *s)
{
	bool range = s->find == KS_FIND_RANGE;
	reply_bulk_cstr(o, "find_keys");
	reply_map(o, 2);
	reply_bulk_cstr(o, "type");
	reply_bulk_cstr(o, range ? "range" : "keynum");
	reply_bulk_cstr(o, "spec");
	reply_map(o, 3);
	reply_bulk_cstr(o, range ? "lastkey" : "keynumidx");
	reply_long(o, range ? s->fk.range.lastkey : s->fk.keynum.keynumidx);
	reply_bulk_cstr(o, range ? "keystep" : "firstkey");
	reply_long(o, range ? s->fk.range.keystep : s->fk.keynum.firstkey);
	reply_bulk_cstr(o, range ? "limit" : "keystep");
	reply_long(o, range ? s->fk.range.limit : s->fk.keynum.keystep);
}

static void reply_key_specs(struct obuf *o, const struct command *cmd)
{
	reply_set(o, cmd->key_specs_num);
	for (int i = 0; i < cmd->key_specs_num; i++) {
		const struct key_spec *s = &cmd->key_specs[i];
		reply_map(o, 3 + (s->notes != NULL));
		if (s->notes) {
			reply_bulk_cstr(o, "notes");
			reply_bulk_cstr(o, s->notes);
		}
		reply_bulk_cstr(o, "flags");
		reply_flag_set(o, s->flags, key_flag_names);
		reply_begin_search(o, &s->begin);
		reply_find_keys(o, s);
	}
}

static void reply_command_info(struct obuf *o, const struct command *cmd)
{
	char name[96];
	command_full_name(cmd, name, sizeof(name));
	reply_array(o, 10);
	reply_bulk_cstr(o, name);
	reply_long(o, cmd->arity);
	reply_flag_set(o, cmd->flags, command_flag_names);
	reply_long(o, cmd->first_key);
	reply_long(o, cmd->last_key);
	reply_long(o, cmd->key_step);
	reply_set(o, __builtin_popcount(cmd->acl_categories));
	for (unsigned i = 0; i < ACL_CATEGORY_COUNT; i++)
		if (cmd->acl_categories & (1u << i)) {
			char cat[32];
			snprintf(cat, sizeof(cat), "@%s", command_acl_category_name(i));
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
	case LIST_ACLCAT:
		for (unsigned i = 0; i < ACL_CATEGORY_COUNT; i++)
			if ((cmd->acl_categories & (1u << i)) &&
			    zr_eq_nocase(arg, len, command_acl_category_name(i)))
				return true;
		return false;
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

/* --- COMMAND GETKEYS / GETKEYSANDFLAGS ---------------------------------------------- */

/* Whether CMD has a key spec that names keys (not shard channels), and
 * whether one of them has flags that vary with the arguments. */
static void spec_kinds(const struct command *cmd, bool *keys, bool *variable)
{
	*keys = *variable = false;
	for (int i = 0; i < cmd->key_specs_num; i++) {
		*keys |= !(cmd->key_specs[i].flags & KS_NOT_KEY);
		*variable |= (cmd->key_specs[i].flags & KS_VARIABLE_FLAGS) != 0;
	}
}

/* Redis 7.0's getKeysFromCommandWithSpecs: the keys the specs name (not
 * shard channels) when every spec fits and their flags are fixed, else
 * the row's getkeys. Into OUT (argc + 1 entries); returns how many. */
static int command_keys(const struct command *cmd, const struct resp_arg *argv, int argc, struct cmd_key *out)
{
	bool keys, variable;
	spec_kinds(cmd, &keys, &variable);
	if (keys && !variable) {
		struct keyiter it;
		keyiter_init_skip(&it, cmd, argv, argc, KS_NOT_KEY);
		if (it.fits) {
			int n = 0;
			for (int i; (i = keyiter_next(&it)) >= 0;)
				out[n++] = (struct cmd_key){ .pos = i, .flags = keyiter_flags(&it) };
			return n;
		}
	}
	return cmd->getkeys ? cmd->getkeys(cmd, argv, argc, out) : 0;
}

static void getkeys(struct client *c, bool with_flags)
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
	bool keys, variable;
	spec_kinds(cmd, &keys, &variable);
	if (!keys && !cmd->getkeys) {
		reply_error(&c->out, "ERR The command has no key arguments");
		return;
	}
	if ((cmd->arity > 0 && cmd->arity != argc) || argc < -cmd->arity) {
		reply_error(&c->out, "ERR Invalid number of arguments specified for command");
		return;
	}
	struct cmd_key *found = zr_malloc(sizeof(*found) * ((size_t)argc + 1));
	int n = command_keys(cmd, argv, argc, found);
	if (n <= 0 && (cmd->flags & CMD_NO_MANDATORY_KEYS)) {
		reply_array(&c->out, 0);
	} else if (n <= 0) {
		reply_error(&c->out, "ERR Invalid arguments specified for command");
	} else {
		reply_array(&c->out, n);
		for (int i = 0; i < n; i++) {
			if (with_flags)
				reply_array(&c->out, 2);
			reply_bulk(&c->out, argv[found[i].pos].ptr, argv[found[i].pos].len);
			if (with_flags)
				reply_flag_set(&c->out, found[i].flags, key_flag_names);
		}
	}
	zr_free(found);
}

void cmd_command_getkeys(struct client *c)
{
	getkeys(c, false);
}

void cmd_command_getkeysandflags(struct client *c)
{
	getkeys(c, true);
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
		"GETKEYSANDFLAGS <full-command>",
		"    Return the keys and the access flags from a full Redis command.",
		NULL,
	};
	cmd_reply_help(c, help);
}
