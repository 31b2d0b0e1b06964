/* cmd_meta — the metadata options that METAPUT (cmd_string.c) shares
 * with METASET (cmd_meta.c): LABELS, ADDLABELS, REMLABELS, ENTITY,
 * CONTENTTYPE, CLEAR, parsed from a client's argv with their limits
 * (meta-max-labels, meta-max-label-length) and Redis-style errors, then
 * merged with a key's current metadata into store_meta_fields. Runs on
 * the client's worker, under the key's shard lock for the merge.
 */
#ifndef ZR_CMD_META_H
#define ZR_CMD_META_H

#include <stdbool.h>

#include "zarisd/store/store.h"

struct client;
struct entry;

/* What a command's metadata options said, as argv indexes (0: not given). */
struct meta_args {
	bool any;		 /* some metadata option was given */
	bool clear;		 /* CLEAR (METASET): start from no metadata */
	int labels_at, nlabels;	 /* LABELS n l1..ln: replace the labels */
	int add_at, nadd;	 /* ADDLABELS n ...: add */
	int rem_at, nrem;	 /* REMLABELS n ...: remove */
	int entity_at, ctype_at; /* ENTITY e, CONTENTTYPE t ("" removes) */
	bool allow_edit;	 /* ADDLABELS, REMLABELS and CLEAR accepted (METASET) */
};

/* Tries argv[*J] as a metadata option: 1 and *J at the option's last
 * argument when it is one (checked: counts, empty or too long labels,
 * content-type bytes), 0 when argv[*J] is no metadata option (nothing
 * replied), -1 after replying an error. */
int meta_opt_parse(struct client *c, int *j, struct meta_args *ma);

/* The metadata key E (NULL: a new key) gets from MA: E's own (unless
 * CLEAR, or BASE_NONE: METAPUT starts from nothing) edited by MA. Fills
 * F, whose label arrays are allocated (meta_fields_free). false after
 * replying an error (too many labels). */
bool meta_fields_merge(struct client *c, const struct entry *e, bool base_none, const struct meta_args *ma,
		       struct store_meta_fields *f);
void meta_fields_free(struct store_meta_fields *f);

#endif
