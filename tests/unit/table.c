/* The command table: every row (and subcommand) has a handler, names are
 * unique and lower case, arity and key specs are sane (a count spec has a
 * getkeys for COMMAND GETKEYS), the start-up fields follow from the row,
 * lookup finds every row case-insensitively, and no flag's meaning is a
 * name: the rows Redis flags allow_busy, the subscribed-context rows, the
 * rows MULTI runs at once are those flagged. */
#include <ctype.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/commands/keyiter.h"
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
	/* every key spec is one keyiter reads: a begin inside argv, a step,
	 * a range's limit only with lastkey -1, flags saying what happens */
	if (!ok(cmd->key_specs_num >= 0 && cmd->key_specs_num <= KEYITER_MAX_SPECS &&
			(cmd->key_specs_num == 0) == (cmd->key_specs == NULL),
		"%s has %d key specs", full, cmd->key_specs_num))
		bad++;
	for (int j = 0; j < cmd->key_specs_num; j++) {
		const struct key_spec *s = &cmd->key_specs[j];
		uint32_t what = s->flags & (KS_RO | KS_RW | KS_OW | KS_RM);
		bool sane = (s->begin.keyword ? s->begin.pos != 0 : s->begin.pos > 0) &&
			    (what == KS_RO || what == KS_RW || what == KS_OW || what == KS_RM ||
			     (s->flags & KS_NOT_KEY));
		if (s->find == KS_FIND_RANGE)
			sane = sane && s->fk.range.keystep > 0 && s->fk.range.limit >= 0 &&
			       (!s->fk.range.limit || s->fk.range.lastkey == -1);
		else
			sane = sane && s->find == KS_FIND_KEYNUM && s->fk.keynum.keynumidx >= 0 &&
			       s->fk.keynum.firstkey > s->fk.keynum.keynumidx && s->fk.keynum.keystep > 0 &&
			       cmd->getkeys != NULL;
		if (!ok(sane, "%s key spec %d is sane", full, j))
			bad++;
	}
	/* the shortcut is what the spec says */
	if (cmd->single_key && !ok(cmd->key_specs_num == 1 && cmd->key_specs[0].fk.range.lastkey == 0 &&
					   cmd->single_key == cmd->key_specs[0].begin.pos,
				   "%s: one key at %d", full, cmd->single_key))
		bad++;
	/* what init adds: a category always, @slow unless @fast */
	if (!ok(!!(cmd->acl_categories & ACL_CAT_FAST) != !!(cmd->acl_categories & ACL_CAT_SLOW),
		"%s is either @fast or @slow", full))
		bad++;
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
	/* the flags that replaced lists of names: the rows carrying them */
	static const struct {
		uint32_t flag;
		const char *rows;
	} flagged[] = {
		{ CMD_ALLOW_BUSY,
		  " auth discard hello multi quit reset shutdown unwatch watch replconf script|kill function|kill "
		  "function|stats " },
		{ CMD_SUBSCRIBED,
		  " ping subscribe ssubscribe unsubscribe sunsubscribe psubscribe punsubscribe quit reset " },
		{ CMD_MULTI_NOW, " exec discard multi watch quit reset " },
	};
	for (size_t f = 0; f < sizeof(flagged) / sizeof(flagged[0]); f++) {
		int want = 0, got = 0;
		for (const char *p = flagged[f].rows; *p; p++)
			want += *p == ' ';
		want--;
		bool wrong = false;
		for (unsigned id = 0; id < command_table_size(); id++) {
			const struct command *cmd = command_by_id(id);
			char name[96], padded[100];
			command_full_name(cmd, name, sizeof(name));
			snprintf(padded, sizeof(padded), " %s ", name);
			bool listed = strstr(flagged[f].rows, padded) != NULL;
			got += (cmd->flags & flagged[f].flag) != 0;
			if (listed != !!(cmd->flags & flagged[f].flag)) {
				diag("%s: flag %#x %s", name, flagged[f].flag,
				     listed ? "missing" : "unexpected");
				wrong = true;
			}
		}
		ok(!wrong && got == want, "flag %#x on exactly%s", flagged[f].flag, flagged[f].rows);
	}
	ok(command_table_size() > n, "subcommands are counted in the table size");
	return done_testing();
}
