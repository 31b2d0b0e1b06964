/* The key iterator (commands/keyiter.h) and its users' view of it:
 *  - for every row of the table and a seeded sweep of argument vectors, the
 *    iterator yields exactly what the two expansions it replaced yielded
 *    (the dispatcher's lock set, COMMAND GETKEYS's key-spec path), written
 *    out here as the oracle;
 *  - rows with counted keys (LMPOP, ZMPOP, ZUNIONSTORE ...) yield them after
 *    the fixed ones, and `fits` is false exactly when a spec does not fit;
 *  - KEYLESS and WHOLEDB rows lock nothing;
 *  - a multi-key command whose keys share a slot ({tag}s) takes exactly one
 *    shard lock, for every shard-bits (a slot's keys share a shard).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/keyiter.h"
#include "zarisd/commands/table.h"
#include "zarisd/server/client.h"
#include "zarisd/server/command.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"

#define MAXARGS 24

static struct resp_arg args[MAXARGS];
static char bytes[MAXARGS][32];

static void set_args(int argc, const char *const *words)
{
	for (int i = 0; i < argc; i++) {
		snprintf(bytes[i], sizeof(bytes[i]), "%s", words[i]);
		args[i].ptr = bytes[i];
		args[i].len = strlen(bytes[i]);
	}
}

/* The dispatcher's expansion before the iterator (dispatch.c collect_shards). */
static int old_lock_keys(const struct command *cmd, int argc, int *pos)
{
	int n = 0;
	int first = cmd->first_key, last = -1;
	if (first > 0) {
		last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;
		if (last >= argc)
			last = argc - 1;
	}
	int step = cmd->key_step > 0 ? cmd->key_step : 1;
	int kfirst = 0, klast = -1;
	if (cmd->keynum_index > 0)
		command_keynum_range(cmd, args, argc, &kfirst, &klast);
	int kstep = cmd->keynum_step > 0 ? cmd->keynum_step : 1;
	for (int i = first; i <= last; i += step)
		pos[n++] = i;
	for (int i = kfirst; i <= klast; i += kstep)
		pos[n++] = i;
	return n;
}

/* COMMAND GETKEYS's key-spec path before the iterator: -1 when a spec
 * does not fit. */
static int old_getkeys(const struct command *cmd, int argc, int *pos)
{
	int n = 0;
	if (cmd->first_key > 0) {
		int last = cmd->last_key < 0 ? argc + cmd->last_key : cmd->last_key;
		int step = cmd->key_step > 0 ? cmd->key_step : 1;
		if (last >= argc)
			last = argc - 1;
		if (cmd->first_key > last)
			return -1;
		for (int i = cmd->first_key; i <= last; i += step)
			pos[n++] = i;
	}
	if (cmd->keynum_index > 0) {
		int first, last;
		if (!command_keynum_range(cmd, args, argc, &first, &last))
			return -1;
		for (int i = first; i <= last; i += cmd->keynum_step > 0 ? cmd->keynum_step : 1)
			pos[n++] = i;
	}
	return n;
}

static int iter_keys(const struct command *cmd, int argc, int *pos, bool *fits)
{
	struct keyiter it;
	keyiter_init(&it, cmd, args, argc);
	*fits = it.fits;
	int want = keyiter_count(&it), n = 0;
	for (int i; (i = keyiter_next(&it)) >= 0;)
		pos[n++] = i;
	return n == want ? n : -99;
}

static const char *const words[] = { "k", "1", "2", "0", "-1", "3", "x", "LEFT", "COUNT", "20" };

static unsigned seed = 12345;
static unsigned rnd(unsigned n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 8) % n;
}

static void check_row(const struct command *cmd, int *bad_lock, int *bad_getkeys, int *cases)
{
	for (int round = 0; round < 200; round++) {
		int argc = 1 + (int)rnd(MAXARGS - 1);
		const char *w[MAXARGS];
		w[0] = cmd->name;
		for (int i = 1; i < argc; i++)
			w[i] = words[rnd(sizeof(words) / sizeof(words[0]))];
		set_args(argc, w);
		int a[MAXARGS * 2], b[MAXARGS * 2], c[MAXARGS * 2];
		bool fits;
		int n = iter_keys(cmd, argc, a, &fits);
		int no = old_lock_keys(cmd, argc, b);
		int ng = old_getkeys(cmd, argc, c);
		(*cases)++;
		if (n != no || memcmp(a, b, sizeof(int) * (size_t)(n > 0 ? n : 0))) {
			if (!*bad_lock)
				diag("%s argc %d: iterator %d keys, the old lock set %d", cmd->name, argc, n,
				     no);
			(*bad_lock)++;
		}
		if ((ng < 0) != !fits || (ng >= 0 && (ng != n || memcmp(a, c, sizeof(int) * (size_t)n)))) {
			if (!*bad_getkeys)
				diag("%s argc %d: iterator %d keys (fits %d), the old GETKEYS %d", cmd->name,
				     argc, n, fits, ng);
			(*bad_getkeys)++;
		}
	}
}

static void test_same_as_before(void)
{
	int bad_lock = 0, bad_getkeys = 0, cases = 0, rows = 0;
	for (unsigned i = 0; i < command_count(); i++) {
		const struct command *cmd = command_at(i);
		if (cmd->first_key > 0 || cmd->keynum_index > 0) {
			check_row(cmd, &bad_lock, &bad_getkeys, &cases);
			rows++;
		}
		for (const struct command *s = cmd->subcommands; s && s->name; s++)
			if (s->first_key > 0 || s->keynum_index > 0) {
				check_row(s, &bad_lock, &bad_getkeys, &cases);
				rows++;
			}
	}
	ok(rows > 100 && !bad_lock,
	   "%d rows with keys, %d argument vectors: the keys the dispatcher locked before", rows, cases);
	ok(!bad_getkeys, "... and COMMAND GETKEYS's keys, and a spec that does not fit where it did not");
}

/* The keys of LINE (space separated), as "1,3,4" ("" for none), and fits. */
static const char *keys_of(const char *line, bool *fits)
{
	static char out[128];
	char buf[256];
	const char *w[MAXARGS];
	int argc = 0;
	snprintf(buf, sizeof(buf), "%s", line);
	for (char *save = NULL, *t = strtok_r(buf, " ", &save); t && argc < MAXARGS;
	     t = strtok_r(NULL, " ", &save))
		w[argc++] = t;
	set_args(argc, w);
	const struct command *cmd = command_lookup(args[0].ptr, args[0].len);
	if (cmd && (cmd->flags & CMD_CONTAINER) && argc > 1)
		cmd = command_lookup_sub(cmd, args[1].ptr, args[1].len);
	struct keyiter it;
	keyiter_init(&it, cmd, args, argc);
	*fits = it.fits;
	size_t used = 0;
	out[0] = '\0';
	for (int i; (i = keyiter_next(&it)) >= 0;)
		used += (size_t)snprintf(out + used, sizeof(out) - used, "%s%d", used ? "," : "", i);
	return out;
}

static void expect(const char *line, const char *want, bool want_fits)
{
	bool fits;
	const char *got = keys_of(line, &fits);
	ok(!strcmp(got, want) && fits == want_fits, "%s: keys [%s]%s", line, want,
	   want_fits ? "" : ", does not fit");
	if (strcmp(got, want) || fits != want_fits)
		diag("got [%s], fits %d", got, fits);
}

static void test_rows(void)
{
	expect("get k", "1", true);
	expect("mset a 1 b 2 c 3", "1,3,5", true);
	expect("bzpopmin a b c 0", "1,2,3", true);
	expect("zunionstore dst 2 a b WEIGHTS 1 2", "1,3,4", true);
	expect("zunionstore dst 5 a b", "1", false);
	expect("lmpop 2 a b LEFT COUNT 3", "2,3", true);
	expect("lmpop x a LEFT", "", false);
	expect("zmpop 1 z MIN", "2", true);
	expect("blmpop 0 2 a b RIGHT", "3,4", true);
	expect("bzmpop 1.5 1 z MAX", "3", true);
	expect("sintercard 2 a b LIMIT 3", "2,3", true);
	expect("object encoding k", "2", true);
	expect("ssubscribe a b", "1,2", true);

	const struct command *ss = command_lookup("ssubscribe", 10), *keys = command_lookup("keys", 4),
			     *lm = command_lookup("lmpop", 5);
	ok(!keyiter_locks(ss) && !keyiter_locks(keys) && keyiter_locks(lm),
	   "KEYLESS (SSUBSCRIBE) and WHOLEDB (KEYS) rows lock nothing, LMPOP locks");
	struct keyiter it;
	const char *w[] = { "ssubscribe", "a", "b" };
	set_args(3, w);
	keyiter_init_locked_keys(&it, ss, args, 3);
	ok(keyiter_next(&it) == -1 && keyiter_count(&it) == 0, "the locked keys of SSUBSCRIBE: none");
	ok(keyiter_single(command_lookup("get", 3), 2) == 1 &&
		   keyiter_single(command_lookup("get", 3), 1) == 0 &&
		   keyiter_single(command_lookup("mset", 4), 5) == 0,
	   "keyiter_single: GET's key, not past argc, not MSET's");
}

/* Same-slot multi-key commands: one shard lock, whatever the shard count. */
static void test_same_slot_one_lock(void)
{
	static const char *const lines[] = {
		"mset {u}a 1 {u}b 2 {u}c 3 {u}d 4",	"mget {u}a {u}b {u}c",
		"del {order:7}x {order:7}y {order:7}z", "rename {r}src {r}dst",
		"zunionstore {z}dst 3 {z}a {z}b {z}c",	"lmpop 3 {l}1 {l}2 {l}3 LEFT",
		"blmpop 0 2 {l}1 {l}2 RIGHT",		"sunionstore {s}d {s}a {s}b",
		"lmove {l}a {l}b LEFT RIGHT",
	};
	struct settings cfg;
	struct server srv;
	struct client cl;
	memset(&cfg, 0, sizeof(cfg));
	memset(&srv, 0, sizeof(srv));
	memset(&cl, 0, sizeof(cl));
	srv.cfg = &cfg;
	cl.srv = &srv;
	int bad = 0, spread = 0;
	for (unsigned bits = 0; bits <= 14; bits += 2) {
		srv.store = store_create(1, bits);
		for (size_t l = 0; l < sizeof(lines) / sizeof(lines[0]); l++) {
			bool fits;
			keys_of(lines[l], &fits);
			int argc = 1; /* keys_of set args[] from the line's words */
			for (const char *p = lines[l]; *p; p++)
				argc += *p == ' ';
			cl.argv = args;
			cl.argc = argc;
			cl.key_hash_argv = NULL;
			const struct command *cmd = command_lookup(args[0].ptr, args[0].len);
			unsigned stack[DISPATCH_STACK_SHARDS], *got;
			int n = dispatch_key_shards(&cl, cmd, stack, &got);
			if (n != 1) {
				diag("shard bits %u: %s locks %d shards", bits, lines[l], n);
				bad++;
			}
			if (got && got != stack)
				free(got);
		}
		/* and keys of different slots still spread (the check can fail) */
		const char *w[] = { "mset", "a", "1", "b", "2", "c", "3", "d", "4", "e", "5" };
		set_args(11, w);
		cl.argc = 11;
		cl.key_hash_argv = NULL;
		unsigned stack[DISPATCH_STACK_SHARDS], *got;
		if (bits >= 10 && dispatch_key_shards(&cl, command_lookup("mset", 4), stack, &got) > 1)
			spread++;
		store_destroy(srv.store);
	}
	ok(!bad, "9 same-slot multi-key commands take exactly one shard lock, shard bits 0..14");
	is_int(spread, 3, "MSET of five untagged keys takes several (shard bits 10, 12, 14)");
}

int main(void)
{
	command_table_init();
	test_same_as_before();
	test_rows();
	test_same_slot_one_lock();
	return done_testing();
}
