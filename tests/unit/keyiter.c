/* The key iterator (commands/keyiter.h) and its users' view of it:
 *  - for every row of the table and a seeded sweep of argument vectors, the
 *    iterator yields exactly what a plain reading of Redis 7.0's key spec
 *    rules (written out here as the oracle, spec by spec) yields, and
 *    `fits` is false exactly when a spec does not fit;
 *  - rows with counted keys (LMPOP, ZMPOP, ZUNIONSTORE ...) yield them after
 *    the fixed ones; keyword specs (this test's own rows, modelled on SORT
 *    ... STORE, GEORADIUS ... STORE / STOREDIST, XREAD ... STREAMS, MIGRATE
 *    ... KEYS) find their keys forward or backward, in any case;
 *  - KEYLESS and WHOLEDB rows lock nothing; keyiter_single is the
 *    iterator's one key for one-key rows;
 *  - a multi-key command whose keys share a slot ({tag}s) takes exactly one
 *    shard lock, for every shard-bits (a slot's keys share a shard).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* The oracle: Redis 7.0's getKeysUsingKeySpecs read plainly, with
 * RETURN_PARTIAL (the keys of the specs that fit). Returns the keys into
 * POS and whether every spec fit. */
static int oracle_keys(const struct command *cmd, int argc, int *pos, bool *fits)
{
	int n = 0;
	*fits = true;
	for (int j = 0; j < cmd->key_specs_num; j++) {
		const struct key_spec *s = &cmd->key_specs[j];
		int first = 0;
		if (!s->begin.keyword) {
			first = s->begin.pos;
		} else if (s->begin.pos > 0) {
			for (int i = s->begin.pos; i <= argc - 2 && !first; i++)
				if (!strcasecmp(bytes[i], s->begin.keyword))
					first = i + 1;
		} else {
			for (int i = argc + s->begin.pos; i >= 2 && !first; i--)
				if (i < argc && !strcasecmp(bytes[i], s->begin.keyword))
					first = i + 1;
		}
		if (!first)
			continue; /* no keyword: no key, and no misfit */
		int last, step;
		if (s->find == KS_FIND_RANGE) {
			step = s->fk.range.keystep;
			if (s->fk.range.lastkey >= 0)
				last = first + s->fk.range.lastkey;
			else if (!s->fk.range.limit)
				last = argc + s->fk.range.lastkey;
			else
				last = first + (argc - first) / s->fk.range.limit + s->fk.range.lastkey;
		} else {
			step = s->fk.keynum.keystep;
			int at = first + s->fk.keynum.keynumidx;
			char *end;
			long long num = at < argc ? strtoll(bytes[at], &end, 10) : -1;
			/* string2ll: digits only, no sign but '-', no leading zero */
			if (at >= argc || *end || !bytes[at][0] || num < 0 ||
			    (bytes[at][0] == '0' && bytes[at][1]) || bytes[at][0] == '+' ||
			    bytes[at][0] == ' ') {
				*fits = false;
				continue;
			}
			first += s->fk.keynum.firstkey;
			last = first + (int)num - 1;
		}
		if (last >= argc || last < first || first >= argc) {
			*fits = false;
			continue;
		}
		for (int i = first; i <= last; i += step)
			pos[n++] = i;
		if (s->flags & KS_INCOMPLETE)
			*fits = false;
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

static const char *const words[] = { "k",    "1",     "2",  "0",  "-1",	   "3",	      "x",
				     "LEFT", "COUNT", "20", "01", "STORE", "streams", "KEYS" };

static unsigned seed = 12345;
static unsigned rnd(unsigned n)
{
	seed = seed * 1103515245u + 12345u;
	return (seed >> 8) % n;
}

static void check_row(const struct command *cmd, int *bad_iter, int *bad_lock, int *cases)
{
	for (int round = 0; round < 200; round++) {
		int argc = 1 + (int)rnd(MAXARGS - 1);
		const char *w[MAXARGS];
		w[0] = cmd->name;
		for (int i = 1; i < argc; i++)
			w[i] = words[rnd(sizeof(words) / sizeof(words[0]))];
		set_args(argc, w);
		int a[MAXARGS * 4], b[MAXARGS * 4];
		bool fits, want_fits;
		int n = iter_keys(cmd, argc, a, &fits);
		int nw = oracle_keys(cmd, argc, b, &want_fits);
		(*cases)++;
		if (n != nw || fits != want_fits || memcmp(a, b, sizeof(int) * (size_t)(n > 0 ? n : 0))) {
			if (!*bad_iter)
				diag("%s argc %d: iterator %d keys (fits %d), the oracle %d (fits %d)",
				     cmd->name, argc, n, fits, nw, want_fits);
			(*bad_iter)++;
		}
		struct keyiter it;
		keyiter_init_locked_keys(&it, cmd, args, argc);
		int nl = keyiter_count(&it);
		if (nl != (keyiter_locks(cmd) ? n : 0)) {
			if (!*bad_lock)
				diag("%s argc %d: %d locked keys, %d keys", cmd->name, argc, nl, n);
			(*bad_lock)++;
		}
		int one = keyiter_single(cmd, argc);
		if (one && (n != 1 || a[0] != one)) {
			if (!*bad_lock)
				diag("%s argc %d: keyiter_single %d, the iterator %d keys", cmd->name, argc,
				     one, n);
			(*bad_lock)++;
		}
	}
}

static void test_rows_against_oracle(void)
{
	int bad_iter = 0, bad_lock = 0, cases = 0, rows = 0;
	for (unsigned i = 0; i < command_count(); i++) {
		const struct command *cmd = command_at(i);
		if (cmd->key_specs_num) {
			check_row(cmd, &bad_iter, &bad_lock, &cases);
			rows++;
		}
		for (const struct command *s = cmd->subcommands; s && s->name; s++)
			if (s->key_specs_num) {
				check_row(s, &bad_iter, &bad_lock, &cases);
				rows++;
			}
	}
	ok(rows > 100 && !bad_iter,
	   "%d rows with key specs, %d argument vectors: the keys Redis's rules give", rows, cases);
	ok(!bad_lock, "... the dispatcher locks them (none for KEYLESS, WHOLEDB), keyiter_single agrees");
}

/* The rows of this test: keyword specs, modelled on commands zarisd does
 * not have yet (Redis 7.0 marks SORT's STORE "unknown"; here it is a
 * keyword, as GEORADIUS's). Looked up before the table by keys_of. */
static const struct key_spec sort_specs[] = {
	{ .flags = KS_RO | KS_ACCESS, .begin = { .pos = 1 }, .find = KS_FIND_RANGE, .fk.range = { 0, 1, 0 } },
	{ .flags = KS_OW | KS_UPDATE,
	  .begin = { .keyword = "STORE", .pos = 2 },
	  .find = KS_FIND_RANGE,
	  .fk.range = { 0, 1, 0 } },
};
static const struct key_spec georadius_specs[] = {
	{ .flags = KS_RO | KS_ACCESS, .begin = { .pos = 1 }, .find = KS_FIND_RANGE, .fk.range = { 0, 1, 0 } },
	{ .flags = KS_OW | KS_UPDATE,
	  .begin = { .keyword = "STORE", .pos = 6 },
	  .find = KS_FIND_RANGE,
	  .fk.range = { 0, 1, 0 } },
	{ .flags = KS_OW | KS_UPDATE,
	  .begin = { .keyword = "STOREDIST", .pos = 6 },
	  .find = KS_FIND_RANGE,
	  .fk.range = { 0, 1, 0 } },
};
static const struct key_spec xread_specs[] = {
	{ .flags = KS_RO | KS_ACCESS,
	  .begin = { .keyword = "STREAMS", .pos = 1 },
	  .find = KS_FIND_RANGE,
	  .fk.range = { -1, 1, 2 } },
};
static const struct key_spec migrate_specs[] = {
	{ .flags = KS_RW | KS_ACCESS | KS_DELETE,
	  .begin = { .pos = 3 },
	  .find = KS_FIND_RANGE,
	  .fk.range = { 0, 1, 0 } },
	{ .flags = KS_RW | KS_ACCESS | KS_DELETE | KS_INCOMPLETE,
	  .begin = { .keyword = "KEYS", .pos = -2 },
	  .find = KS_FIND_RANGE,
	  .fk.range = { -1, 1, 0 } },
};
static const struct command test_rows_table[] = {
	{ .name = "sort", .arity = -2, .key_specs = sort_specs, .key_specs_num = 2 },
	{ .name = "georadius", .arity = -6, .key_specs = georadius_specs, .key_specs_num = 3 },
	{ .name = "xread", .arity = -4, .key_specs = xread_specs, .key_specs_num = 1 },
	{ .name = "migrate", .arity = -6, .key_specs = migrate_specs, .key_specs_num = 2 },
};
#define TEST_ROWS (sizeof(test_rows_table) / sizeof(test_rows_table[0]))

/* The keys of LINE (space separated), as "1,3,4" ("" for none), and fits:
 * its row is one of this test's, or the table's. */
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
	const struct command *cmd = NULL;
	for (size_t i = 0; i < TEST_ROWS && !cmd; i++)
		if (!strcmp(test_rows_table[i].name, bytes[0]))
			cmd = &test_rows_table[i];
	if (!cmd)
		cmd = command_lookup(args[0].ptr, args[0].len);
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
	expect("sinterstore dst a b", "1,2,3", true);
	expect("pfmerge dst", "1", false);
	expect("smove a b m", "1,2", true);
	expect("eval s 0", "", false);
	expect("eval s 2 a b x", "3,4", true);
}

/* Keyword specs: the test's own rows (SORT, GEORADIUS, XREAD, MIGRATE). */
static void test_keyword_specs(void)
{
	/* forward from startfrom, any case; a keyword that ends ARGV has no key */
	expect("sort k", "1", true);
	expect("sort k LIMIT 0 10 STORE dst", "1,6", true);
	expect("sort k store dst", "1,3", true);
	expect("sort k BY w STORE", "1", true);
	expect("sort STORE STORE d", "1,3", true);
	/* two keyword specs, searched from argv[6] */
	expect("georadius k 15 37 200 km", "1", true);
	expect("georadius k 15 37 200 km STORE dst", "1,7", true);
	expect("georadius k 15 37 200 km STOREDIST dd", "1,7", true);
	expect("georadius k 15 37 200 km STORE a STOREDIST b", "1,7,9", true);
	expect("georadius STORE 15 37 200 STORE km", "1", true);
	expect("georadius k 15 37 200 km WITHDIST storedist x", "1,8", true);
	/* limit 2: half of what follows STREAMS */
	expect("xread STREAMS k1 k2 0 0", "2,3", true);
	expect("xread COUNT 2 BLOCK 0 streams a 0", "6", true);
	expect("xread STREAMS a b c", "2", true);
	expect("xread STREAMS", "", true);
	expect("xread COUNT 1 STREAMS a", "", false);
	/* backward from the last but one; the KEYS spec is INCOMPLETE */
	expect("migrate h 6379 k 0 5000", "3", true);
	expect("migrate h 6379 \"\" 0 5000 KEYS k1 k2", "3,7,8", false);
	expect("migrate h 6379 \"\" 0 5000 COPY keys k1", "3,8", false);
	expect("migrate h 6379 k 0 5000 REPLACE", "3", true);
	expect("migrate h 6379 KEYS 0 5000 REPLACE", "3,4,5,6", false);

	/* GETKEYS's view: flags of the spec each key comes from */
	const char *w[] = { "georadius", "k", "1", "2", "3", "km", "STOREDIST", "d" };
	set_args(8, w);
	struct keyiter it;
	keyiter_init(&it, &test_rows_table[1], args, 8);
	int first = keyiter_next(&it);
	uint32_t f1 = keyiter_flags(&it);
	int second = keyiter_next(&it);
	uint32_t f2 = keyiter_flags(&it);
	ok(first == 1 && f1 == (KS_RO | KS_ACCESS) && second == 7 && f2 == (KS_OW | KS_UPDATE) &&
		   keyiter_next(&it) == -1,
	   "keyiter_flags: the source RO access, the STOREDIST destination OW update");
	const struct command *cp = command_lookup("copy", 4);
	ok(cp->db_arg.keyword && !strcmp(cp->db_arg.keyword, "db") &&
		   command_lookup("move", 4)->db_arg.pos == 2,
	   "MOVE's and COPY's other database are row data");
}

/* What the dispatcher locks. */
static void test_locks(void)
{
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
	test_rows_against_oracle();
	test_rows();
	test_keyword_specs();
	test_locks();
	test_same_slot_one_lock();
	return done_testing();
}
