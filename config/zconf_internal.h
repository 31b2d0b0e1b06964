/* zconf_internal — what the files of config/ share among themselves and
 * nobody else includes: error helpers and the key lookup (the keys
 * themselves are entries of config/schema.h).
 */
#ifndef ZCONF_INTERNAL_H
#define ZCONF_INTERNAL_H

#include "config/zconf.h"

#include <libconfig.h>

/* Fills ERR and returns -EINVAL. */
int zconf_fail(struct zconf_error *err, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* strdup that aborts on OOM (config strings are tiny). */
char *zconf_strdup(const char *s);
/* The enum zconf_key of the zarisd setting NAME (exact case), or -1 when
 * the cluster file cannot set it. */
int zconf_keydef_find(const char *name);
bool zconf_is_ip(const char *s);
/* 1-64 letters, digits, '-', '_' or '.' (node and machine names). */
bool zconf_valid_name(const char *s);

/* zconf_local.c: marks conf->nodes[i].is_local (LOCAL_NODES as in
 * zconf_load_local), computes each node's effective maxmemory and cores,
 * then checks the local nodes against each other and this machine. */
int zconf_select_local(struct zconf *conf, const char *local_nodes, struct zconf_error *err);
int zconf_check_local(struct zconf *conf, struct zconf_error *err);

/* zconf_slots.c: in cluster mode gives every primary its slots (its own
 * `slots`, or the automatic split) and checks the layout: each slot served
 * once, slots only on primaries, replicas of primaries that own slots.
 * Outside cluster mode refuses any `slots`. */
int zconf_check_slots(struct zconf *conf, struct zconf_error *err);

/* zconf_native.c: native-port distinct from every port on the node's
 * address (all nodes), native-rf1 only on a primary without replicas and
 * without appendonly. After check_cluster (replica-of targets exist). */
int zconf_check_native(const struct zconf *conf, struct zconf_error *err);

/* zconf_coord.c: the `coordination` group G (keys, types, machines; sets
 * coord.enabled), then after the nodes the cross checks (cluster mode, each
 * node's machine). zconf_select_machine makes exactly machine NAME's nodes
 * local (--machine); zconf_local_machine derives coord.local_machine from
 * the local nodes otherwise (EXPLICIT_NODES: they came from --node, and
 * must share one machine). */
int zconf_parse_coord(struct zconf *conf, const config_setting_t *g, struct zconf_error *err);
int zconf_check_coord(struct zconf *conf, struct zconf_error *err);
int zconf_select_machine(struct zconf *conf, const char *name, struct zconf_error *err);
int zconf_local_machine(struct zconf *conf, bool explicit_nodes, struct zconf_error *err);
void zconf_coord_free(struct zconf_coord *c);

#endif
