/* zconf_internal — what the files of config/ share among themselves and
 * nobody else includes: the schema table and error helpers.
 */
#ifndef ZCONF_INTERNAL_H
#define ZCONF_INTERNAL_H

#include "config/zconf.h"

#include <libconfig.h>

enum zconf_vtype {
	ZCONF_VT_STRING,
	ZCONF_VT_INT,
	ZCONF_VT_SIZE,
	ZCONF_VT_BOOL,
	ZCONF_VT_ENUM,
	ZCONF_VT_CORES,
	ZCONF_VT_ADDRS,
};

struct zconf_keydef {
	const char *name; /* zarisd flag / Redis config name */
	enum zconf_vtype type;
	long long min, max;	    /* ZCONF_VT_INT range */
	const char *const *choices; /* ZCONF_VT_ENUM, NULL-terminated */
	bool live;		    /* CONFIG SET can change it */
};

extern const struct zconf_keydef zconf_keydefs[ZCONF_K__COUNT];

/* Fills ERR and returns -EINVAL. */
int zconf_fail(struct zconf_error *err, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* strdup that aborts on OOM (config strings are tiny). */
char *zconf_strdup(const char *s);
/* Index of the zarisd key NAME, or -1. */
int zconf_keydef_find(const char *name);
bool zconf_is_ip(const char *s);

/* zconf_local.c: marks conf->nodes[i].is_local (LOCAL_NODES as in
 * zconf_load_local), computes each node's effective maxmemory and cores,
 * then checks the local nodes against each other and this machine. */
int zconf_select_local(struct zconf *conf, const char *local_nodes, struct zconf_error *err);
int zconf_check_local(struct zconf *conf, struct zconf_error *err);

#endif
