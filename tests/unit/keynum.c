/* Key extraction for rows whose keys are counted by an argument (command.h
 * keynum_*: ZUNION ... numkeys, ZUNIONSTORE dst numkeys, LMPOP, BLMPOP,
 * ZMPOP, BZMPOP, SINTERCARD, ZINTERCARD): their count spec (command.h
 * KS_FIND_KEYNUM, read by keyiter.h) finds exactly the counted keys, and
 * the dispatcher's shard set
 * (dispatch_key_shards) is exactly the shards of the row's fixed keys plus
 * the counted ones — never an option word, a count or a score — and only
 * the fixed keys when the count is not a valid number (the handler then
 * replies the error without touching a key).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/commands/table.h"
#include "zarisd/store/store.h"

static struct settings cfg;
static struct server srv;
static struct client cl;
static struct resp_arg args[32];
static char bytes[32][64];

/* Sets cl's argv from the space-separated LINE. */
static void set_argv(const char *line)
{
	static char buf[1024];
	snprintf(buf, sizeof(buf), "%s", line);
	int argc = 0;
	for (char *save = NULL, *w = strtok_r(buf, " ", &save); w && argc < 32;
	     w = strtok_r(NULL, " ", &save)) {
		snprintf(bytes[argc], sizeof(bytes[argc]), "%s", w);
		args[argc].ptr = bytes[argc];
		args[argc].len = strlen(w);
		argc++;
	}
	cl.argv = args;
	cl.argc = argc;
	cl.key_hash_argv = NULL;
}

/* Whether LINE's counted keys are argv[WANT_FIRST..WANT_LAST] (WANT_FIRST
 * 0: none): the iterator's keys of a row holding the count spec alone. */
static void check_range(const char *line, int want_first, int want_last)
{
	set_argv(line);
	const struct command *cmd = command_lookup(args[0].ptr, args[0].len);
	struct command counted = { .name = "counted" };
	for (int j = 0; cmd && j < cmd->key_specs_num; j++)
		if (cmd->key_specs[j].find == KS_FIND_KEYNUM) {
			counted.key_specs = &cmd->key_specs[j];
			counted.key_specs_num = 1;
		}
	int first = -7, last = -7, n = 0;
	struct keyiter it;
	keyiter_init(&it, &counted, cl.argv, cl.argc);
	for (int i; (i = keyiter_next(&it)) >= 0;) {
		if (!n++)
			first = i;
		last = i;
	}
	bool found = n > 0;
	if (want_first)
		ok(found && first == want_first && last == want_last && n == last - first + 1,
		   "%s: counted keys are argv[%d..%d] (got %d..%d)", line, want_first, want_last,
		   found ? first : 0, found ? last : 0);
	else
		ok(cmd && !found, "%s: no counted keys", line);
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

/* Whether the dispatcher's shard set for LINE is exactly the shards of the
 * arguments listed in KEYS (argv indexes, terminated by 0). */
static void check_shards(const char *line, ...)
{
	set_argv(line);
	const struct command *cmd = command_lookup(args[0].ptr, args[0].len);
	unsigned want[32];
	int nwant = 0;
	va_list ap;
	va_start(ap, line);
	for (int i; (i = va_arg(ap, int)) != 0;)
		want[nwant++] = store_shard_of(srv.store, args[i].ptr, args[i].len);
	va_end(ap);
	qsort(want, (size_t)nwant, sizeof(unsigned), cmp_unsigned);
	nwant = store_shards_normalize(want, nwant);
	unsigned stack[DISPATCH_STACK_SHARDS], *got;
	int ngot = dispatch_key_shards(&cl, cmd, stack, &got);
	bool same = ngot == nwant && (ngot == 0 || !memcmp(got, want, sizeof(unsigned) * (size_t)ngot));
	if (!ok(same, "%s: locks exactly its keys' %d shard(s)", line, nwant))
		diag("got %d shard(s)", ngot);
	if (got && got != stack)
		free(got);
}

int main(void)
{
	command_table_init();
	/* many shards, so that an argument locked by mistake shows up */
	srv.store = store_create(16, 12);
	srv.cfg = &cfg;
	cl.srv = &srv;

	check_range("zunion 2 a b", 2, 3);
	check_range("zunion 2 a b WITHSCORES", 2, 3);
	check_range("zunion 3 a b", 0, 0);
	check_range("zunion 0 a", 0, 0);
	check_range("zunion -1 a", 0, 0);
	check_range("zunion 2abc a b", 0, 0);
	check_range("zunion 99999999999999999999 a", 0, 0);
	check_range("zunionstore dst 2 a b WEIGHTS 1 2", 3, 4);
	check_range("zinterstore dst 1 a", 3, 3);
	check_range("zdiffstore dst 3 a b", 0, 0);
	check_range("zintercard 2 a b LIMIT 5", 2, 3);
	check_range("sintercard 1 a", 2, 2);
	check_range("zmpop 2 a b MIN COUNT 3", 2, 3);
	check_range("bzmpop 0 1 a MAX", 3, 3);
	check_range("lmpop 1 a LEFT", 2, 2);
	check_range("blmpop 5 2 a b RIGHT COUNT 2", 3, 4);
	check_range("blmpop 5 x a RIGHT", 0, 0);
	check_range("get a", 0, 0);

	check_shards("zunionstore dst 2 a b WEIGHTS 1 2 AGGREGATE MAX", 1, 3, 4, 0);
	check_shards("zunionstore dst 2abc a b", 1, 0);
	check_shards("zunionstore dst 5 a b", 1, 0);
	check_shards("zunion 3 k1 k2 k3 WITHSCORES", 2, 3, 4, 0);
	check_shards("zunion x k1 k2", 0);
	check_shards("zintercard 2 k1 k2 LIMIT 10", 2, 3, 0);
	check_shards("sintercard 2 s1 s2 LIMIT 1", 2, 3, 0);
	check_shards("zmpop 2 z1 z2 MIN COUNT 10", 2, 3, 0);
	check_shards("bzmpop 0.5 2 z1 z2 MAX", 3, 4, 0);
	check_shards("lmpop 1 l1 LEFT COUNT 2", 2, 0);
	check_shards("blmpop 0 3 l1 l2 l3 RIGHT", 3, 4, 5, 0);
	check_shards("blmpop 0 0 l1 RIGHT", 0);
	/* the fixed-range rows are unchanged */
	check_shards("mset a 1 b 2 c 3", 1, 3, 5, 0);
	check_shards("get a", 1, 0);

	/* COMMAND's view of the same rows */
	const struct command *zu = command_lookup("zunionstore", 11);
	ok(zu && zu->key_specs_num == 2 && zu->key_specs[0].begin.pos == 1 &&
		   zu->key_specs[0].find == KS_FIND_RANGE && zu->key_specs[0].fk.range.lastkey == 0 &&
		   zu->key_specs[1].begin.pos == 2 && zu->key_specs[1].find == KS_FIND_KEYNUM &&
		   zu->key_specs[1].fk.keynum.firstkey == 1 && zu->key_specs[1].fk.keynum.keystep == 1 &&
		   zu->first_key == 1 && zu->last_key == 1 && zu->key_step == 1 &&
		   (zu->flags & CMD_MOVABLE_KEYS),
	   "zunionstore: destination at 1, count at 2; legacy range 1,1,1 and movablekeys");
	const struct command *bl = command_lookup("blmpop", 6);
	ok(bl && bl->key_specs_num == 1 && bl->key_specs[0].begin.pos == 2 && bl->first_key == 0 &&
		   (bl->flags & CMD_MOVABLE_KEYS),
	   "blmpop: no fixed keys, count at 2");

	store_destroy(srv.store);
	return done_testing();
}
