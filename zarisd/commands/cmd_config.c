/* cmd_config — CONFIG GET / SET / RESETSTAT / REWRITE / HELP over the
 * settings table (settings.h), with Redis 7's multi-pattern GET and
 * multi-pair, all-or-nothing SET.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "zarisd/server/client.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/table.h"
#include "zarisd/server/info.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/core/log.h"
#include "zarisd/core/mem.h"
#include "zarisd/persist/persist.h"
#include "zarisd/proto/reply.h"
#include "zarisd/store/store.h"

/* --- CONFIG GET ----------------------------------------------------------------- */

struct get_ctx {
	char **pairs; /* shown name, value, shown name, value ... (owned) */
	char **names; /* the settings' own names, to reply each once (owned) */
	long n;
	long cap;
	const char *exact; /* the pattern when it has no glob characters */
};

static void get_visit(const char *name, const char *value, void *arg)
{
	struct get_ctx *g = arg;
	for (long i = 0; i < g->n; i++)
		if (!strcmp(g->names[i], name))
			return; /* matched by an earlier pattern: Redis replies each setting once */
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 16;
		g->pairs = zr_realloc(g->pairs, sizeof(char *) * 2 * (size_t)g->cap);
		g->names = zr_realloc(g->names, sizeof(char *) * (size_t)g->cap);
	}
	/* Redis 7.0 echoes a plain name as the client typed it (CONFIG GET HZ -> "HZ") */
	g->pairs[2 * g->n] = zr_strdup(g->exact ? g->exact : name);
	g->pairs[2 * g->n + 1] = zr_strdup(value);
	g->names[g->n] = zr_strdup(name);
	g->n++;
}

void cmd_config_get(struct client *c)
{
	struct get_ctx g = { 0 };
	for (int i = 2; i < c->argc; i++) {
		char *pattern = zr_strndup(c->argv[i].ptr, c->argv[i].len);
		g.exact = strpbrk(pattern, "*?[") ? NULL : pattern;
		settings_get(c->srv->cfg, pattern, get_visit, &g);
		zr_free(pattern);
	}
	reply_map(&c->out, g.n);
	for (long i = 0; i < 2 * g.n; i++) {
		reply_bulk_cstr(&c->out, g.pairs[i]);
		zr_free(g.pairs[i]);
	}
	for (long i = 0; i < g.n; i++)
		zr_free(g.names[i]);
	zr_free(g.pairs);
	zr_free(g.names);
}

/* --- CONFIG SET ------------------------------------------------------------------ */

static void capture_value(const char *name, const char *value, void *arg)
{
	char **out = arg;
	if (!*out)
		*out = zr_strdup(value);
}

/* Side effects a new value needs beyond the settings table. */
static void config_apply(struct server *srv, const char *name)
{
	(void)name;
	server_settings_changed(srv);
	persist_settings_changed(srv->persist); /* appendonly / appendfsync take effect now */
}

void cmd_config_set(struct client *c)
{
	if ((c->argc - 2) % 2) {
		reply_error(&c->out, ERR_SYNTAX); /* Redis 7.0: a name without a value */
		return;
	}
	int npairs = (c->argc - 2) / 2;
	char **names = zr_calloc((size_t)npairs, sizeof(char *));
	char **values = zr_calloc((size_t)npairs, sizeof(char *));
	char **old = zr_calloc((size_t)npairs, sizeof(char *));
	char err[512];
	int applied = 0;
	for (int i = 0; i < npairs; i++) {
		names[i] = zr_strndup(c->argv[2 + 2 * i].ptr, c->argv[2 + 2 * i].len);
		values[i] = zr_strndup(c->argv[3 + 2 * i].ptr, c->argv[3 + 2 * i].len);
	}
	/* Redis checks every name before changing anything */
	for (int i = 0; i < npairs; i++) {
		if (!settings_exists(names[i])) {
			reply_errorf(&c->out,
				     "ERR Unknown option or number of arguments for CONFIG SET - '%s'",
				     names[i]);
			goto out;
		}
		/* as Redis, before any value is looked at */
		if (settings_is_immutable(names[i])) {
			reply_errorf(
				&c->out,
				"ERR CONFIG SET failed (possibly related to argument '%s') - can't set immutable config",
				names[i]);
			goto out;
		}
		for (int j = 0; j < i; j++)
			if (!strcasecmp(names[i], names[j])) {
				reply_errorf(
					&c->out,
					"ERR CONFIG SET failed (possibly related to argument '%s') - duplicate parameter",
					names[i]);
				goto out;
			}
		settings_get(c->srv->cfg, names[i], capture_value, &old[i]);
		/* native-rf1 (start-up only) keeps one copy: no log beside it */
		if (c->srv->cfg->native_rf1 && !strcasecmp(names[i], "appendonly") &&
		    !strcasecmp(values[i], "yes")) {
			reply_errorf(
				&c->out,
				"ERR CONFIG SET failed (possibly related to argument 'appendonly') - native-rf1 "
				"is on: this node keeps one copy and writes no append-only log");
			goto out;
		}
	}
	for (; applied < npairs; applied++) {
		if (settings_set(c->srv->cfg, names[applied], values[applied], false, err, sizeof(err)) < 0) {
			/* all or nothing: put back what this command already changed */
			char ignored[256];
			for (int j = applied - 1; j >= 0; j--) {
				if (old[j] && settings_set(c->srv->cfg, names[j], old[j], false, ignored,
							   sizeof(ignored)) == 0)
					config_apply(c->srv, names[j]);
			}
			reply_errorf(&c->out, "ERR %s", err);
			goto out;
		}
		config_apply(c->srv, names[applied]);
	}
	reply_ok(&c->out);
out:
	for (int i = 0; i < npairs; i++) {
		zr_free(names[i]);
		zr_free(values[i]);
		zr_free(old[i]);
	}
	zr_free(names);
	zr_free(values);
	zr_free(old);
}

/* --- the rest -------------------------------------------------------------------- */

void cmd_config_resetstat(struct client *c)
{
	info_reset_stats(c->srv, command_table_size());
	reply_ok(&c->out);
}

void cmd_config_rewrite(struct client *c)
{
	if (!c->srv->config_file) {
		reply_error(&c->out, "ERR The server is running without a config file");
		return;
	}
	/* The cluster file is declarative and shared by every node and the
	 * supervisor: a node must not rewrite it. Changes go into the file and
	 * reach the nodes through the supervisor's reload. */
	zr_log(ZR_LOG_WARNING, "CONFIG REWRITE refused: %s is the cluster file, edit it and reload",
	       c->srv->config_file);
	reply_error(&c->out,
		    "ERR Rewriting config file: CONFIG REWRITE is not supported for the cluster file; "
		    "edit it and reload through zarisctl");
}

void cmd_config_help(struct client *c)
{
	static const char *const help[] = {
		"GET <pattern>",
		"    Return parameters matching the glob-like <pattern> and their values.",
		"SET <directive> <value>",
		"    Set the configuration <directive> to <value>.",
		"RESETSTAT",
		"    Reset statistics reported by the INFO command.",
		"REWRITE",
		"    Rewrite the configuration file.",
		NULL,
	};
	cmd_reply_help(c, help);
}
