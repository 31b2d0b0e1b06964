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

#endif
