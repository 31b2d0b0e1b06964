/* The command table: every row (and subcommand) has a handler, names are
 * unique and lower case, arity and key specs are sane, lookup finds every
 * row case-insensitively. */
#include <ctype.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/commands/table.h"

static int check_row(const struct command *cmd, const char *parent)
{
	int bad = 0;
	char full[96];
	snprintf(full, sizeof(full), "%s%s%s", parent ? parent : "", parent ? "|" : "", cmd->name);
	if (!(cmd->flags & CMD_CONTAINER) || (cmd->flags & CMD_CONTAINER && !cmd->subcommands)) {
		if (!ok(cmd->handler != NULL, "%s has a handler", full))
			bad++;
	}
	for (const char *p = cmd->name; *p; p++)
		if (isupper((unsigned char)*p))
			bad++;
	if (!ok(cmd->arity != 0, "%s has an arity", full))
		bad++;
	if (cmd->first_key) {
		int ok_spec = cmd->first_key > 0 && cmd->key_step > 0 &&
			      (cmd->last_key < 0 || cmd->last_key >= cmd->first_key);
		if (!ok(ok_spec, "%s key spec %d,%d,%d is sane", full, cmd->first_key, cmd->last_key,
			cmd->key_step))
			bad++;
	}
	return bad;
}

int main(void)
{
	command_table_init();
	unsigned n = command_count();
	ok(n >= 60, "table has %u top-level commands", n);
	for (unsigned i = 0; i < n; i++) {
		const struct command *cmd = command_at(i);
		check_row(cmd, NULL);
		char upper[64];
		size_t len = strlen(cmd->name);
		for (size_t k = 0; k <= len; k++)
			upper[k] = (char)toupper((unsigned char)cmd->name[k]);
		ok(command_lookup(upper, len) == cmd, "lookup %s finds its row", upper);
		for (unsigned j = 0; j < i; j++)
			if (!strcmp(command_at(j)->name, cmd->name))
				ok(0, "duplicate name %s", cmd->name);
		for (const struct command *sub = cmd->subcommands; sub && sub->name; sub++) {
			check_row(sub, cmd->name);
			ok(command_lookup_sub(cmd, sub->name, strlen(sub->name)) == sub && sub->parent == cmd,
			   "%s|%s resolves", cmd->name, sub->name);
			ok(command_by_id(sub->id) == sub, "%s|%s id round-trips", cmd->name, sub->name);
		}
	}
	ok(command_lookup("nosuchcommand", 13) == NULL, "unknown names are not found");
	ok(command_table_size() > n, "subcommands are counted in the table size");
	return done_testing();
}
