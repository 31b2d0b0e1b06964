/* zarisctl — the operator's CLI for zaris-supervisor.
 *
 *   zarisctl [--control-socket PATH] [--json] COMMAND
 *     status                 table of the local instances
 *     check-config [FILE]    validate a cluster file (default /etc/zaris.conf),
 *                            without the supervisor; prints file:line on error
 *     reload                 apply /etc/zaris.conf (same as systemctl reload)
 *     restart|stop|start NAME
 *     rolling-restart        restart every instance, one at a time (replicas
 *                            first), each healthy (a replica: caught up with its
 *                            primary) before the next; a progress line per step
 *     failover SHARD [TO NODE] [--force]
 *                            coordination: planned switchover of SHARD (named
 *                            by its declared primary) to NODE (default: another
 *                            member); writes pause until NODE has every record
 *                            (--force: at once, even from a replica behind)
 *
 * Exit status: 0 success, 1 the command failed (message on stderr), 2 usage,
 * 3 the supervisor cannot be reached.
 *
 * --json (before or after the command): every stdout line is one JSON
 * object. status: {"type":"supervisor",...} then one {"type":"instance",
 * "name","pid","role","declared_role","replica_of","as_declared",
 * "replicating_from","link","sync_in_progress","connected_replicas",
 * "offset","lag_bytes","last_io_seconds","address","cores","used_memory",
 * "maxmemory","uptime_ms","restarts","crashes","state","health",
 * "health_fails","last_error"} per instance ("role" as INFO says, null
 * while unknown; supervisor/README.md, Replicas). Other commands: progress
 * objects ({"step","of","instance","event","message"}; a replica's step has
 * events "catching-up" and "caught-up" after "up") then a final
 * {"ok":true|false,"message":...}. check-config: {"ok":true,"file",
 * "nodes","local":[...]} or {"ok":false,"file","line","message"}.
 */
#include "config/zconf.h"
#include "supervisor/control.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: zarisctl [--control-socket PATH] [--json] COMMAND\n"
		   "  status | check-config [FILE] | reload | restart NAME | stop NAME |\n"
		   "  start NAME | rolling-restart | failover SHARD [TO NODE] [--force]\n");
}

static void json_escape(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Prints the offending line of FILE so a terse "syntax error" has context. */
static void show_line(const char *file, int line)
{
	FILE *f = fopen(file, "r");
	char buf[1024];

	if (!f || line <= 0) {
		if (f)
			fclose(f);
		return;
	}
	for (int l = 1; fgets(buf, sizeof(buf), f); l++) {
		if (l == line) {
			buf[strcspn(buf, "\n")] = '\0';
			fprintf(stderr, "  %5d | %s\n", l, buf);
			break;
		}
	}
	fclose(f);
}

static int check_config(const char *path, bool json)
{
	struct zconf *conf;
	struct zconf_error err;
	char msg[900];

	if (zconf_load(path, &conf, &err) < 0) {
		zconf_error_format(&err, msg, sizeof(msg));
		if (json) {
			printf("{\"ok\":false,\"file\":");
			json_escape(stdout, err.file);
			printf(",\"line\":%d,\"message\":", err.line);
			json_escape(stdout, err.message);
			printf("}\n");
		}
		fprintf(stderr, "%s\n", msg);
		show_line(err.file, err.line);
		return 1;
	}
	if (json) {
		printf("{\"ok\":true,\"file\":");
		json_escape(stdout, path);
		printf(",\"nodes\":%zu,\"local\":[", conf->n_nodes);
		for (size_t k = 0, first = 1; k < conf->n_nodes; k++) {
			if (!conf->nodes[k].is_local)
				continue;
			printf("%s", first ? "" : ",");
			json_escape(stdout, conf->nodes[k].name);
			first = 0;
		}
		printf("]}\n");
	} else {
		printf("%s: ok (%zu node%s, local:", path, conf->n_nodes, conf->n_nodes == 1 ? "" : "s");
		for (size_t k = 0; k < conf->n_nodes; k++)
			if (conf->nodes[k].is_local)
				printf(" %s", conf->nodes[k].name);
		printf("%s)\n", conf->n_local ? "" : " none");
		/* the split "auto" chose is worth seeing before starting */
		for (size_t k = 0; conf->cluster_enabled && k < conf->n_nodes; k++)
			if (conf->nodes[k].role == ZCONF_ROLE_PRIMARY)
				printf("  %s slots %s\n", conf->nodes[k].name,
				       *conf->nodes[k].slots ? conf->nodes[k].slots : "none");
	}
	zconf_free(conf);
	return 0;
}

static void print_line(const char *line, void *ctx)
{
	printf("%s\n", line);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "control-socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sock = SV_CONTROL_DEFAULT_PATH, *cmd;
	char request[300], final[1024];
	bool json = false;
	int c, rc;

	while ((c = getopt_long(argc, argv, "+s:jh", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			sock = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	/* --json may also follow the command (zarisctl status --json). */
	for (int k = optind; k < argc; k++) {
		if (strcmp(argv[k], "--json") == 0) {
			json = true;
			memmove(&argv[k], &argv[k + 1], (size_t)(argc - k) * sizeof(argv[0]));
			argc--;
			k--;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (strcmp(cmd, "check-config") == 0)
		return check_config(optind + 1 < argc ? argv[optind + 1] : ZCONF_DEFAULT_PATH, json);
	if (strcmp(cmd, "restart") == 0 || strcmp(cmd, "stop") == 0 || strcmp(cmd, "start") == 0) {
		if (optind + 2 != argc) {
			fprintf(stderr, "zarisctl %s: needs exactly one instance NAME\n", cmd);
			return 2;
		}
		snprintf(request, sizeof(request), "%s%s %s", json ? "json " : "", cmd, argv[optind + 1]);
	} else if (strcmp(cmd, "failover") == 0) {
		/* failover SHARD [TO NODE] [--force] */
		int n = argc - optind - 1;
		bool force = n >= 1 && strcmp(argv[argc - 1], "--force") == 0;
		if (force)
			n--;
		if (!(n == 1 || (n == 3 && strcmp(argv[optind + 2], "TO") == 0) ||
		      (n == 3 && strcmp(argv[optind + 2], "to") == 0))) {
			fprintf(stderr, "zarisctl failover: SHARD [TO NODE] [--force]\n");
			return 2;
		}
		snprintf(request, sizeof(request), "%sfailover %s %s%s", json ? "json " : "",
			 argv[optind + 1], n == 3 ? argv[optind + 3] : "-", force ? " force" : "");
	} else if (strcmp(cmd, "status") == 0 || strcmp(cmd, "reload") == 0 ||
		   strcmp(cmd, "rolling-restart") == 0) {
		if (optind + 1 != argc) {
			usage(stderr);
			return 2;
		}
		snprintf(request, sizeof(request), "%s%s", json ? "json " : "", cmd);
	} else {
		fprintf(stderr, "zarisctl: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	rc = sv_control_request(sock, request, print_line, NULL, final, sizeof(final));
	if (rc < 0) {
		fprintf(stderr, "zarisctl: cannot talk to zaris-supervisor at %s: %s\n", sock, strerror(-rc));
		return 3;
	}
	if (json && (rc != 0 || strcmp(cmd, "status") != 0)) {
		printf("{\"ok\":%s,\"message\":", rc == 0 ? "true" : "false");
		json_escape(stdout, final);
		printf("}\n");
	} else if (rc == 0 && final[0]) {
		printf("%s\n", final);
	}
	if (rc != 0)
		fprintf(stderr, "zarisctl: %s\n", final);
	return rc == 0 ? 0 : 1;
}
