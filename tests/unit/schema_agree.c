/* The cluster file's schema (config/zconf.c) and zarisd's settings table
 * (commands/settings.c) must take and refuse the same values: the
 * supervisor checks a node's keys with the first, then starts zarisd with
 * them as flags, which the second parses. A value that only the first
 * accepts passes `zarisctl check-config` and makes zarisd refuse to start,
 * so the supervisor crash-loops it (threads 257..1024 did, until this
 * test). For every key of the file: its name is a setting, integer bounds
 * agree on both sides of each end, every enum choice and bool word is
 * taken, and a word neither knows is refused by both. */
#include <stdio.h>
#include <string.h>

#include "config/zconf_internal.h"
#include "tests/tap.h"
#include "zarisd/server/settings.h"

static bool settings_take(const char *name, const char *value)
{
	struct settings s;
	char err[256];
	settings_init(&s);
	int rc = settings_set(&s, name, value, true, err, sizeof(err));
	settings_free(&s);
	return rc == 0;
}

static void check_int(const struct zconf_keydef *k)
{
	const long long probes[] = { k->min - 1, k->min, k->max, k->max + 1 };
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		char v[32];
		snprintf(v, sizeof(v), "%lld", probes[i]);
		bool file_takes = probes[i] >= k->min && probes[i] <= k->max;
		ok(settings_take(k->name, v) == file_takes, "%s %s: %s by the cluster file and by zarisd",
		   k->name, v, file_takes ? "taken" : "refused");
	}
}

static void check_words(const struct zconf_keydef *k, const char *const *words)
{
	for (int i = 0; words[i]; i++)
		ok(settings_take(k->name, words[i]), "%s %s: taken by the cluster file and by zarisd",
		   k->name, words[i]);
	ok(!settings_take(k->name, "no-such-choice"), "%s no-such-choice: refused by both", k->name);
}

int main(void)
{
	static const char *const bools[] = { "yes", "no", NULL };
	static const char *const sizes[] = { "0", "1048576", "100mb", "1gb", NULL };
	for (int i = 0; i < ZCONF_K__COUNT; i++) {
		const struct zconf_keydef *k = &zconf_keydefs[i];
		ok(settings_exists(k->name), "cluster file key %s is a zarisd setting", k->name);
		switch (k->type) {
		case ZCONF_VT_INT:
			check_int(k);
			break;
		case ZCONF_VT_ENUM:
			check_words(k, k->choices);
			break;
		case ZCONF_VT_BOOL:
			check_words(k, bools);
			break;
		case ZCONF_VT_SIZE:
			for (int j = 0; sizes[j]; j++)
				ok(settings_take(k->name, sizes[j]), "%s %s: taken by both", k->name,
				   sizes[j]);
			break;
		case ZCONF_VT_STRING:
		case ZCONF_VT_CORES:
		case ZCONF_VT_ADDRS:
			break; /* free text, or parsed by one shared function (zconf_parse_cores) */
		}
	}
	return done_testing();
}
