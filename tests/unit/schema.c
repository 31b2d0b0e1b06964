/* The one settings schema (config/schema.h) and its two readers. The
 * cluster file's loader (config/zconf.c) checks a node's keys; the
 * supervisor then starts zarisd with them as flags, which zarisd's setter
 * (zarisd/server/settings.c) parses. A value only the first takes passes
 * `zarisctl check-config` and makes zarisd refuse to start, so the
 * supervisor crash-loops it. Both read one table, so names, types, ranges
 * and choices cannot drift apart; this test holds what the table alone
 * cannot:
 *  - the table's own invariants (unique names, aliases like their primary,
 *    every default taken by its own setting and shown back as given, every
 *    zarisd setting bound to a field, every cluster key one entry);
 *  - for every entry the cluster file can set, boundary values (each end of
 *    a range and one past it, every choice and one that is none, syntax
 *    just right and just wrong) through the loader and through the setter:
 *    the same verdict. Where the file is stricter by design (a boolean as
 *    true/false, case, numeric addresses only) a value the file takes must
 *    still be one zarisd takes.
 * It includes settings.c to see the bindings (the linker then takes the
 * rest of zarisd from the library). */
#include "zarisd/server/settings.c"

#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config/schema.h"
#include "config/zconf.h"
#include "tests/tap.h"

static char tmpdir[] = "/tmp/schema-unit-XXXXXX";

/* --- the table ------------------------------------------------------------------- */

static void test_table(void)
{
	bool unique = true, aliases = true, redis_after = true, bound = true;
	for (size_t i = 0; i < schema_count; i++) {
		const struct schema_entry *e = &schema_table[i];
		for (size_t j = 0; j < i; j++)
			if (!strcasecmp(schema_table[j].name, e->name)) {
				diag("%s twice", e->name);
				unique = false;
			}
		if (e->alias_of) {
			const struct schema_entry *p = schema_find(e->alias_of);
			if (!p || p->alias_of || !p->def || e->def || p->type != e->type ||
			    p->min != e->min || p->max != e->max || p->names != e->names ||
			    p->flags != e->flags) {
				diag("alias %s is not like %s", e->name, e->alias_of);
				aliases = false;
			}
		} else if (!e->def) {
			diag("%s has no default", e->name);
			aliases = false;
		}
		if ((i >= SCHEMA_ID_REDIS_FIRST) != !!(e->flags & SCHEMA_F_REDIS)) {
			diag("%s is on the wrong side of SCHEMA_ID_REDIS_FIRST", e->name);
			redis_after = false;
		}
		if (i < SCHEMA_ID_REDIS_FIRST) {
			const struct setting_binding *b = binding_of(e);
			if (b->store == ST_NONE || (b->store == ST_SPECIAL && (!b->parse || !b->show))) {
				diag("%s has no field in struct settings", e->name);
				bound = false;
			}
			if (e->alias_of && binding_of(schema_find(e->alias_of))->offset != b->offset) {
				diag("alias %s keeps its value apart from %s", e->name, e->alias_of);
				bound = false;
			}
		}
		if (e->type == SCHEMA_ENUM && !e->names) {
			diag("enum %s has no choices", e->name);
			bound = false;
		}
	}
	ok(schema_count > SCHEMA_ID_REDIS_FIRST, "the table holds %zu settings, %d of them zarisd's own",
	   schema_count, (int)SCHEMA_ID_REDIS_FIRST);
	ok(unique, "every name once, in any case");
	ok(aliases, "an alias has its primary's type, range, choices and flags and no default of its own");
	ok(redis_after, "zarisd's settings by enum schema_id, Redis's other settings after them");
	ok(bound, "every zarisd setting is bound to a field (an alias to its primary's)");

	/* each default is taken by its own setting and (zarisd's) shown back as
	 * written, so the schema's text is what CONFIG GET shows at start */
	struct settings s;
	settings_init(&s);
	bool taken = true, shown = true;
	for (size_t i = 0; i < schema_count; i++) {
		const struct schema_entry *e = &schema_table[i];
		char err[512], buf[1024];
		if (!e->def)
			continue;
		/* replicaof shows "" but, as in Redis, takes "<host> <port>" or "no one" */
		if (strcmp(e->name, "replicaof") &&
		    settings_set(&s, e->name, e->def, true, err, sizeof(err)) < 0) {
			diag("default of %s refused: %s", e->name, err);
			taken = false;
		}
		setting_show(&s, e, buf, sizeof(buf));
		if (!(e->flags & SCHEMA_F_CHDIR) && strcmp(buf, e->def)) {
			diag("%s: default '%s', shown '%s'", e->name, e->def, buf);
			shown = false;
		}
	}
	settings_free(&s);
	ok(taken, "every default passes its own setting's checks");
	ok(shown, "every default reads back as written");

	bool keys = true;
	for (int k = 0; k < ZCONF_K__COUNT; k++) {
		int n = 0;
		for (size_t i = 0; i < schema_count; i++)
			n += schema_file_key(&schema_table[i]) == k;
		const struct schema_entry *e = schema_file_entry(k);
		if (n != 1 || !e || (e->flags & SCHEMA_F_REDIS) ||
		    zconf_key_name((enum zconf_key)k) != e->name) {
			diag("cluster key %d: %d entries", k, n);
			keys = false;
		}
	}
	ok(keys, "every cluster-file key is exactly one of zarisd's settings, under its name");
	ok(!schema_file_entry(ZCONF_K__COUNT) && !schema_file_entry(-1), "no entry past the cluster keys");
	ok(zconf_key_is_live(ZCONF_K_MAXMEMORY) && !zconf_key_is_live(ZCONF_K_THREADS) &&
		   !zconf_key_is_live(ZCONF_K_DIR) && schema_is_live(schema_find("dir")) == false,
	   "live: CONFIG SET-able and not restart-only (dir restarts the instance)");
}

/* --- the two readers -------------------------------------------------------------- */

/* Writes a cluster file in which node "a" (not local, so that only the
 * key's own checks run) sets KEY = LITERAL (libconfig syntax) and loads it.
 * Returns whether the loader took it; *VALUE (caller frees) is the text it
 * passes to zarisd. */
static bool file_takes(const char *key, const char *literal, char **value, char *why, size_t whylen)
{
	char path[256], text[1024];
	snprintf(path, sizeof(path), "%s/probe.conf", tmpdir);
	snprintf(text, sizeof(text),
		 "nodes = (\n"
		 "  { name = \"a\"; address = \"127.0.0.1\"; port = 7000;\n"
		 "    %s = %s; },\n"
		 "  { name = \"b\"; address = \"127.0.0.1\"; port = 7001; }\n"
		 ");\n",
		 key, literal);
	FILE *f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
	struct zconf *conf = NULL;
	struct zconf_error err;
	*value = NULL;
	why[0] = '\0';
	if (zconf_load_local(path, "b", &conf, &err) < 0) {
		zconf_error_format(&err, why, whylen);
		return false;
	}
	const struct zconf_node *a = zconf_find_node(conf, "a");
	int k = schema_file_key(schema_find(key));
	const char *v = a && k >= 0 ? zconf_node_value(conf, a, (enum zconf_key)k) : NULL;
	*value = strdup(v ? v : "");
	zconf_free(conf);
	return true;
}

static bool zarisd_takes(const char *key, const char *value, char *why, size_t whylen)
{
	struct settings s;
	settings_init(&s);
	int rc = settings_set(&s, key, value, true, why, whylen);
	settings_free(&s);
	return rc == 0;
}

enum verdict {
	SAME,	   /* both take it or both refuse it */
	FILE_SAFE, /* the file may be stricter: if it takes the value, zarisd must */
};

/* One probe: LITERAL in the file; TEXT is what a flag would carry (the
 * value zarisd is asked to take when the file refuses it). */
static void probe(const struct schema_entry *e, const char *literal, const char *text, enum verdict want)
{
	char *passed, fwhy[700], zwhy[512];
	bool file = file_takes(e->name, literal, &passed, fwhy, sizeof(fwhy));
	bool zarisd = zarisd_takes(e->name, file ? passed : text, zwhy, sizeof(zwhy));
	bool good = want == SAME ? file == zarisd : (!file || zarisd);
	ok(good, "%s = %s: file %s, zarisd %s%s", e->name, literal, file ? "takes" : "refuses",
	   zarisd ? "takes" : "refuses", want == SAME ? "" : " (the file may be stricter)");
	if (!good)
		diag("file: %s / zarisd: %s", file ? passed : fwhy, zarisd ? "-" : zwhy);
	free(passed);
}

/* LITERAL for a string value TEXT. */
static void probe_str(const struct schema_entry *e, const char *text, enum verdict want)
{
	char lit[600];
	snprintf(lit, sizeof(lit), "\"%s\"", text);
	probe(e, lit, text, want);
}

static void probe_ll(const struct schema_entry *e, long long v)
{
	char lit[48], text[32];
	snprintf(lit, sizeof(lit), "%lldL", v);
	snprintf(text, sizeof(text), "%lld", v);
	probe(e, lit, text, SAME);
}

static void test_agree(void)
{
	for (int k = 0; k < ZCONF_K__COUNT; k++) {
		const struct schema_entry *e = schema_file_entry(k);
		char up[64];
		if (e->file_syntax == SCHEMA_FILE_ADDRS) {
			probe_str(e, "127.0.0.1", SAME);
			probe_str(e, "127.0.0.1 ::1", SAME);
			probe_str(e, "localhost", FILE_SAFE);
			continue;
		}
		if (e->file_syntax == SCHEMA_FILE_CORES) {
			char v[32];
			probe_str(e, "0", SAME);
			probe_str(e, "0-3,6", SAME);
			snprintf(v, sizeof(v), "%lld", e->max);
			probe_str(e, v, SAME);
			snprintf(v, sizeof(v), "%lld", e->max + 1);
			probe_str(e, v, SAME);
			snprintf(v, sizeof(v), "0-%lld", e->max + 1);
			probe_str(e, v, SAME);
			probe_str(e, "x", SAME);
			probe(e, "[1, 3]", "1,3", SAME);
			continue;
		}
		switch (e->type) {
		case SCHEMA_INT:
			probe_ll(e, e->min - 1);
			probe_ll(e, e->min);
			probe_ll(e, e->max);
			probe_ll(e, e->max + 1);
			break;
		case SCHEMA_MEMORY: {
			char v[32];
			if (e->min > 0) {
				snprintf(v, sizeof(v), "%lld", e->min - 1);
				probe_str(e, v, SAME);
			}
			snprintf(v, sizeof(v), "%lld", e->min);
			probe_str(e, v, SAME);
			snprintf(v, sizeof(v), "%lld", e->max);
			probe_str(e, v, SAME);
			snprintf(v, sizeof(v), "%llu", (unsigned long long)e->max + 1);
			probe_str(e, v, SAME);
			probe_str(e, "64mb", SAME);
			probe_str(e, "1k", SAME);
			probe_str(e, "-1", SAME);
			probe_str(e, "12zb", SAME);
			break;
		}
		case SCHEMA_BOOL:
			probe_str(e, "yes", SAME);
			probe_str(e, "no", SAME);
			probe_str(e, "maybe", SAME);
			probe(e, "true", "yes", FILE_SAFE);
			probe(e, "false", "no", FILE_SAFE);
			probe_str(e, "YES", FILE_SAFE);
			break;
		case SCHEMA_ENUM:
			for (int i = 0; e->names[i]; i++)
				probe_str(e, e->names[i], SAME);
			probe_str(e, "no-such-choice", SAME);
			snprintf(up, sizeof(up), "%s", e->names[0]);
			for (char *p = up; *p; p++)
				*p = (char)toupper((unsigned char)*p);
			probe_str(e, up, FILE_SAFE);
			break;
		case SCHEMA_LIST: /* save: the rules' syntax, both sides of it */
			probe_str(e, "", SAME);
			probe_str(e, "3600 1", SAME);
			probe_str(e, "3600 1 300 100", SAME);
			probe_str(e, "3600", SAME);
			probe_str(e, "x 1", SAME);
			probe_str(e, "-1 1", SAME);
			probe_str(e, "3600 1x", SAME);
			break;
		case SCHEMA_STRING:
			probe_str(e, "", SAME);
			probe_str(e, "some text", SAME);
			break;
		case SCHEMA_UMEMORY:
		case SCHEMA_SPECIAL:
			ok(0, "%s: the cluster file has no syntax for its type", e->name);
			break;
		}
		/* a number where the file wants text, or text where it wants a number */
		if (e->type == SCHEMA_INT)
			probe_str(e, "12", FILE_SAFE);
	}
}

int main(void)
{
	if (!mkdtemp(tmpdir))
		skip_all("no temporary directory");
	test_table();
	test_agree();
	char path[300];
	snprintf(path, sizeof(path), "%s/probe.conf", tmpdir);
	unlink(path);
	rmdir(tmpdir);
	return done_testing();
}
