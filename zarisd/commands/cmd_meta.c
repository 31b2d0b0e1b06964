/* cmd_meta — per-key metadata (labels, entity, content-type): METASET,
 * METAGET, METASCAN, METAINVALIDATE, and the option parsing METAPUT
 * (cmd_string.c) shares (cmd_meta.h). zarisd's own commands: no Redis
 * command has these names.
 *
 * METASET and METAGET run under their key's shard lock like any one-key
 * command. METASCAN walks the store's label / entity index shard by shard
 * (as SCAN walks the keyspace). METAINVALIDATE is a whole-keyspace write:
 * the dispatcher holds every shard lock (as for FLUSHDB), so it is atomic
 * on this node and its journal record, its argv, replays to the same
 * deletions. Cost: one look at each shard's index plus O(keys carrying
 * the label). In cluster mode it covers the slots of this node only.
 */
#include "zarisd/commands/cmd_meta.h"

#include <stdatomic.h>
#include <string.h>

#include "zarisd/cluster/cluster.h"
#include "zarisd/commands/cmdutil.h"
#include "zarisd/commands/dispatch.h"
#include "zarisd/commands/handlers.h"
#include "zarisd/commands/notify.h"
#include "zarisd/commands/scanutil.h"
#include "zarisd/core/mem.h"
#include "zarisd/proto/reply.h"
#include "zarisd/server/client.h"
#include "zarisd/server/server.h"
#include "zarisd/server/settings.h"
#include "zarisd/store/store.h"

static int max_labels(const struct client *c)
{
	return atomic_load_explicit(&c->srv->cfg->meta_max_labels, memory_order_relaxed);
}

static size_t max_len(const struct client *c)
{
	return (size_t)atomic_load_explicit(&c->srv->cfg->meta_max_label_length, memory_order_relaxed);
}

/* Checks argv[I], a label (LABEL true), entity or content-type. */
static bool field_ok_or_reply(struct client *c, int i, const char *what, bool label)
{
	size_t len;
	const char *p = cmd_arg(c, i, &len);
	if (label && !len) {
		reply_error(&c->out, "ERR metadata label must not be empty");
		return false;
	}
	if (len > max_len(c)) {
		reply_errorf(&c->out, "ERR metadata %s is longer than meta-max-label-length (%zu)", what,
			     max_len(c));
		return false;
	}
	if (!strcmp(what, "content-type"))
		for (size_t k = 0; k < len; k++)
			if ((unsigned char)p[k] < 0x20 || p[k] == 0x7f) {
				reply_error(&c->out,
					    "ERR metadata content-type must not contain control characters");
				return false;
			}
	return true;
}

/* NAME n l1 .. ln at argv[*J]: sets *AT and *N. */
static int label_list(struct client *c, int *j, int *at, int *n)
{
	long long v;
	if (*j + 1 >= c->argc) {
		reply_error(&c->out, ERR_SYNTAX);
		return -1;
	}
	if (!cmd_arg_ll(c, *j + 1, &v, NULL))
		return -1;
	if (v < 0 || v > c->argc - *j - 2) {
		reply_error(&c->out, v < 0 ? "ERR numlabels can't be negative" : ERR_SYNTAX);
		return -1;
	}
	if (v > max_labels(c)) {
		reply_errorf(&c->out, "ERR too many metadata labels (meta-max-labels is %d)", max_labels(c));
		return -1;
	}
	for (int k = 0; k < v; k++)
		if (!field_ok_or_reply(c, *j + 2 + k, "label", true))
			return -1;
	*at = *j + 2;
	*n = (int)v;
	*j += 1 + (int)v;
	return 1;
}

int meta_opt_parse(struct client *c, int *j, struct meta_args *ma)
{
	int r = 0;
	if (cmd_opt_is(c, *j, "labels")) {
		r = label_list(c, j, &ma->labels_at, &ma->nlabels);
	} else if (ma->allow_edit && cmd_opt_is(c, *j, "addlabels")) {
		r = label_list(c, j, &ma->add_at, &ma->nadd);
	} else if (ma->allow_edit && cmd_opt_is(c, *j, "remlabels")) {
		r = label_list(c, j, &ma->rem_at, &ma->nrem);
	} else if (ma->allow_edit && cmd_opt_is(c, *j, "clear")) {
		ma->clear = true;
		r = 1;
	} else if (cmd_opt_is(c, *j, "entity") || cmd_opt_is(c, *j, "contenttype")) {
		bool entity = cmd_opt_is(c, *j, "entity");
		if (*j + 1 >= c->argc) {
			reply_error(&c->out, ERR_SYNTAX);
			return -1;
		}
		if (!field_ok_or_reply(c, *j + 1, entity ? "entity" : "content-type", false))
			return -1;
		*(entity ? &ma->entity_at : &ma->ctype_at) = ++*j;
		r = 1;
	}
	if (r > 0)
		ma->any = true;
	return r;
}

static bool in_list(const struct client *c, int at, int n, const char *p, size_t len)
{
	for (int k = 0; k < n; k++)
		if (c->argv[at + k].len == len && !memcmp(c->argv[at + k].ptr, p, len))
			return true;
	return false;
}

bool meta_fields_merge(struct client *c, const struct entry *e, bool base_none, const struct meta_args *ma,
		       struct store_meta_fields *f)
{
	memset(f, 0, sizeof(*f));
	bool base = e && !base_none && !ma->clear;
	unsigned cap = (base ? entry_meta_nlabels(e) : 0) + (unsigned)ma->nlabels + (unsigned)ma->nadd;
	const char **labels = zr_malloc((cap ? cap : 1) * sizeof(*labels));
	size_t *lens = zr_malloc((cap ? cap : 1) * sizeof(*lens));
	unsigned n = 0;
	if (ma->labels_at) {
		for (int k = 0; k < ma->nlabels; k++) {
			labels[n] = c->argv[ma->labels_at + k].ptr;
			lens[n++] = c->argv[ma->labels_at + k].len;
		}
	} else if (base) {
		for (unsigned k = 0; k < entry_meta_nlabels(e); k++) {
			labels[n] = entry_meta_label(e, k, &lens[n]);
			n++;
		}
	}
	for (int k = 0; k < ma->nadd; k++) {
		labels[n] = c->argv[ma->add_at + k].ptr;
		lens[n++] = c->argv[ma->add_at + k].len;
	}
	/* drop removed ones and duplicates, keeping the first occurrence */
	unsigned m = 0;
	for (unsigned k = 0; k < n; k++) {
		if (ma->rem_at && in_list(c, ma->rem_at, ma->nrem, labels[k], lens[k]))
			continue;
		bool dup = false;
		for (unsigned q = 0; q < m && !dup; q++)
			dup = lens[q] == lens[k] && !memcmp(labels[q], labels[k], lens[k]);
		if (dup)
			continue;
		labels[m] = labels[k];
		lens[m++] = lens[k];
	}
	f->nlabels = m;
	f->labels = labels;
	f->label_lens = lens;
	if (m > (unsigned)max_labels(c)) {
		reply_errorf(&c->out, "ERR too many metadata labels (meta-max-labels is %d)", max_labels(c));
		meta_fields_free(f);
		return false;
	}
	if (ma->entity_at) {
		if (c->argv[ma->entity_at].len) {
			f->entity = c->argv[ma->entity_at].ptr;
			f->entity_len = c->argv[ma->entity_at].len;
		}
	} else if (base) {
		f->entity = entry_meta_entity(e, &f->entity_len);
	}
	if (ma->ctype_at) {
		if (c->argv[ma->ctype_at].len) {
			f->ctype = c->argv[ma->ctype_at].ptr;
			f->ctype_len = c->argv[ma->ctype_at].len;
		}
	} else if (base) {
		f->ctype = entry_meta_ctype(e, &f->ctype_len);
	}
	return true;
}

void meta_fields_free(struct store_meta_fields *f)
{
	zr_free((void *)f->labels);
	zr_free((void *)f->label_lens);
	f->labels = NULL;
	f->label_lens = NULL;
}

/* METASET key [CLEAR] [LABELS n l ...] [ADDLABELS n l ...] [REMLABELS n l ...]
 *   [ENTITY e] [CONTENTTYPE t]: 1 when the key exists (its metadata is
 * then what the options say: CLEAR first, then LABELS replaces the labels,
 * ADDLABELS adds, REMLABELS removes; ENTITY / CONTENTTYPE "" remove the
 * field), 0 when it does not. Any type of key. */
void cmd_metaset(struct client *c)
{
	struct meta_args ma = { .allow_edit = true };
	for (int j = 2; j < c->argc; j++) {
		int r = meta_opt_parse(c, &j, &ma);
		if (r < 0)
			return;
		if (r == 0) {
			reply_error(&c->out, ERR_SYNTAX);
			return;
		}
	}
	struct entry *e = cmd_lookup_write(c, 1);
	if (!e) {
		reply_long(&c->out, 0);
		return;
	}
	struct store_meta_fields f;
	if (!meta_fields_merge(c, e, false, &ma, &f))
		return;
	int rc = store_meta_set_locked(c->srv->store, c->db, &e, &f);
	meta_fields_free(&f);
	if (rc < 0) {
		reply_error(&c->out, ERR_OOM);
		return;
	}
	notify_arg(c, NOTIFY_GENERIC, "metaset", 1);
	reply_long(&c->out, 1);
}

/* METAGET key: a map (RESP2: a flat array) of labels, entity,
 * content-type, expire-at-ms (-1: none) and version; null when the key
 * does not exist. */
void cmd_metaget(struct client *c)
{
	struct entry *e = cmd_lookup_read(c, 1);
	if (!e) {
		reply_null(&c->out);
		return;
	}
	size_t len;
	const char *p;
	reply_map(&c->out, 5);
	reply_bulk_cstr(&c->out, "labels");
	reply_array(&c->out, entry_meta_nlabels(e));
	for (unsigned k = 0; k < entry_meta_nlabels(e); k++) {
		p = entry_meta_label(e, k, &len);
		reply_bulk(&c->out, p, len);
	}
	reply_bulk_cstr(&c->out, "entity");
	if ((p = entry_meta_entity(e, &len)))
		reply_bulk(&c->out, p, len);
	else
		reply_null(&c->out);
	reply_bulk_cstr(&c->out, "content-type");
	if ((p = entry_meta_ctype(e, &len)))
		reply_bulk(&c->out, p, len);
	else
		reply_null(&c->out);
	reply_bulk_cstr(&c->out, "expire-at-ms");
	reply_long(&c->out, entry_expire(e));
	reply_bulk_cstr(&c->out, "version");
	reply_long(&c->out, (long long)entry_version(e));
}

static void metascan_visit(const struct entry *e, void *arg)
{
	struct scan_out *so = arg;
	size_t klen;
	const char *key = entry_key(e, &klen);
	scan_offer(so, key, klen);
}

/* METASCAN cursor LABEL label|ENTITY entity [COUNT n] [MATCH pattern]:
 * [next cursor, [keys]], SCAN's guarantees, over the keys carrying that
 * label (or entity) only. */
void cmd_metascan(struct client *c)
{
	uint64_t cursor;
	if (!scan_arg_cursor(c, 1, &cursor))
		return;
	enum store_meta_kind kind;
	if (cmd_opt_is(c, 2, "label")) {
		kind = STORE_META_LABEL;
	} else if (cmd_opt_is(c, 2, "entity")) {
		kind = STORE_META_ENTITY;
	} else {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	struct scan_out so;
	if (!scan_arg_opts(c, 4, false, &so))
		return;
	size_t nlen;
	const char *name = cmd_arg(c, 3, &nlen);
	do {
		if (store_meta_scan(c->srv->store, c->db, kind, name, nlen, &cursor, c->now_ms,
				    metascan_visit, &so) < 0) {
			scan_discard(&so); /* a busy script holds a shard */
			dispatch_refuse_busy_here(c);
			return;
		}
	} while (scan_more(&so, cursor));
	scan_reply(c, cursor, &so);
}

static void invalidated(unsigned db, const char *key, size_t klen, void *arg)
{
	struct client *c = arg;
	notify_keyspace_event(c->srv, NOTIFY_GENERIC, "del", key, klen, db);
	notify_keyspace_event(c->srv, NOTIFY_GENERIC, "invalidated", key, klen, db);
}

/* METAINVALIDATE label [ENTITY entity]: deletes every key of the database
 * carrying LABEL (and that entity), replies how many. Every shard lock is
 * held (the row is a whole-keyspace write). In cluster mode this node holds
 * only its own slots' keys, and the reply says so: a map of "deleted" (the
 * count) and "node" (this node's id), for a client that sends it to every
 * primary and adds the counts up. */
void cmd_metainvalidate(struct client *c)
{
	const char *entity = NULL;
	size_t elen = 0;
	if (c->argc == 4 && cmd_opt_is(c, 2, "entity")) {
		entity = cmd_arg(c, 3, &elen);
	} else if (c->argc != 2) {
		reply_error(&c->out, ERR_SYNTAX);
		return;
	}
	size_t llen;
	const char *label = cmd_arg(c, 1, &llen);
	struct store *s = c->srv->store;
	uint64_t n = 0;
	for (unsigned sh = 0; sh < store_shard_count(s); sh++)
		n += store_meta_invalidate_locked(s, c->db, sh, label, llen, entity, elen, c->now_ms,
						  invalidated, c);
	if (!c->srv->cluster) {
		reply_long(&c->out, (long long)n);
		return;
	}
	char id[TOPO_ID_LEN + 1];
	cluster_my_id(c->srv->cluster, c->worker, id);
	reply_map(&c->out, 2);
	reply_bulk_cstr(&c->out, "deleted");
	reply_long(&c->out, (long long)n);
	reply_bulk_cstr(&c->out, "node");
	reply_bulk_cstr(&c->out, id);
}
