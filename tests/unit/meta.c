/* Unit tests of per-key metadata (store/meta.c, entry_layout.h) and its
 * journal field (journal/format.c jr_meta_put / jr_meta_get): the entry
 * layout costs nothing without metadata, the block's fields and their
 * de-duplication, the label / entity index through every store path that
 * links or unlinks an entry (delete, expiry, overwrite, resize, TTL
 * change, RENAME, MOVE, COPY, FLUSHDB, SWAPDB), invalidation, the scan
 * cursor, a snapshot's pre-image, and the tail's encoding. */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/tap.h"
#include "zarisd/core/mem.h"
#include "zarisd/journal/format.h"
#include "zarisd/store/meta.h"
#include "zarisd/store/store.h"
#include "zarisd/store/store_int.h"
#include "zarisd/store/write.h"

#define NOW 1000000000000LL

static struct store *new_store(unsigned dbs, unsigned bits)
{
	struct store *s = store_create(dbs, bits);
	for (int t = 1; t < STORE_TYPE_COUNT; t++)
		store_register_type(s, (enum store_type)t, store_builtin_types[t]);
	return s;
}

static struct entry *find(struct store *s, unsigned db, const char *k)
{
	return store_find_locked(s, db, k, strlen(k), NOW, STORE_LOOKUP_NOTOUCH | STORE_LOOKUP_NOSTATS);
}

static void set_str(struct store *s, unsigned db, const char *k, const char *v, int64_t ttl)
{
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	store_set_string_locked(s, db, k, strlen(k), v, strlen(v), ttl, 0, NULL);
	store_unlock(s, sh);
}

/* Gives K the labels L (comma-separated, "" none), entity E, content-type C. */
static int set_meta(struct store *s, unsigned db, const char *k, const char *l, const char *e, const char *c)
{
	const char *labels[16];
	size_t lens[16];
	char buf[256];
	unsigned n = 0;
	snprintf(buf, sizeof(buf), "%s", l);
	for (char *p = strtok(buf, ","); p; p = strtok(NULL, ",")) {
		labels[n] = p;
		lens[n++] = strlen(p);
	}
	struct store_meta_fields f = { n, labels, lens, e, e ? strlen(e) : 0, c, c ? strlen(c) : 0 };
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	struct entry *en = find(s, db, k);
	int r = en ? store_meta_set_locked(s, db, &en, &f) : -ENOENT;
	store_unlock(s, sh);
	return r;
}

/* K's metadata as "labels|entity|ctype" ("-" for none) into OUT; false
 * when K is absent. */
static bool meta_str(struct store *s, unsigned db, const char *k, char *out, size_t cap)
{
	unsigned sh = store_shard_of(s, k, strlen(k));
	store_lock(s, sh);
	struct entry *e = find(s, db, k);
	if (e) {
		size_t used = 0, len;
		out[0] = 0;
		for (unsigned i = 0; i < entry_meta_nlabels(e); i++) {
			const char *p = entry_meta_label(e, i, &len);
			used += (size_t)snprintf(out + used, cap - used, "%s%.*s", i ? "," : "", (int)len, p);
		}
		const char *en = entry_meta_entity(e, &len);
		used += (size_t)snprintf(out + used, cap - used, "|%.*s", en ? (int)len : 1, en ? en : "-");
		const char *ct = entry_meta_ctype(e, &len);
		snprintf(out + used, cap - used, "|%.*s", ct ? (int)len : 1, ct ? ct : "-");
	}
	store_unlock(s, sh);
	return e != NULL;
}

struct collect {
	char keys[64][32];
	int n;
};

static void collect_key(const struct entry *e, void *arg)
{
	struct collect *c = arg;
	size_t klen;
	const char *k = entry_key(e, &klen);
	if (c->n < 64)
		snprintf(c->keys[c->n++], 32, "%.*s", (int)klen, k);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The keys of DB carrying NAME, sorted and comma-joined into OUT. */
static const char *scan_all(struct store *s, unsigned db, enum store_meta_kind kind, const char *name,
			    char *out, size_t cap)
{
	struct collect c = { .n = 0 };
	uint64_t cur = 0;
	int steps = 0;
	do
		assert(store_meta_scan(s, db, kind, name, strlen(name), &cur, NOW, collect_key, &c) == 0);
	while (cur && ++steps < 100000);
	qsort(c.keys, (size_t)c.n, sizeof(c.keys[0]), cmp_str);
	size_t used = 0;
	out[0] = 0;
	for (int i = 0; i < c.n; i++)
		used += (size_t)snprintf(out + used, cap - used, "%s%s", i ? "," : "", c.keys[i]);
	return out;
}

static void test_layout(void)
{
	struct entry_shape a = entry_shape_of(STORE_TYPE_STRING, false, 10, 100);
	struct entry_shape b = entry_shape_of_md(STORE_TYPE_STRING, false, false, 10, 100, false);
	is_int(a.size, 132, "no metadata: a 10-byte key and 100-byte value is still 132 bytes");
	is_int(b.size, a.size, "the md-aware shape without metadata is the same size");
	struct entry_shape m = entry_shape_of_md(STORE_TYPE_STRING, false, true, 10, 100, false);
	is_int(m.size - a.size, 8, "metadata costs its 8-byte pointer only when present");
	struct entry_shape mt = entry_shape_of_md(STORE_TYPE_STRING, true, true, 10, 100, false);
	is_int(mt.size - a.size, 20, "TTL and metadata: 12 + 8 bytes");
	ok((ENTRY_META_BIT & (ENTRY_LRU_MASK | ENTRY_TYPE_MASK | ENTRY_TTL_BIT)) == 0 && ENTRY_META_BIT,
	   "the metadata bit is a bit of its own");

	struct store *s = new_store(1, 4);
	set_str(s, 0, "plain", "v", -1);
	set_str(s, 0, "tagged", "v", NOW + 100000);
	ok(set_meta(s, 0, "tagged", "a", NULL, NULL) == 0, "metadata set");
	unsigned sh = store_shard_of(s, "tagged", 6);
	store_lock(s, sh);
	struct entry *e = find(s, 0, "tagged");
	ok(entry_has_meta(e) && entry_expire(e) == NOW + 100000, "md bit on, TTL kept");
	/* the LRU / LFU field is written by every access: it must never touch the bit */
	entry_set_lru_raw(e, 0xffffffffu);
	ok(entry_has_meta(e) && entry_lru_raw(e) == ENTRY_LRU_MASK, "a full LRU write leaves the md bit");
	store_set_evict_policy(s, STORE_EVICT_ALLKEYS_LFU);
	store_tick(s, (int64_t)0x7fff * 60000 + 59999); /* the last LFU minute before the wrap */
	store_touch(s, e);
	ok(entry_has_meta(e), "an LFU touch at the top minute leaves the md bit");
	store_unlock(s, sh);
	unsigned ps = store_shard_of(s, "plain", 5);
	store_lock(s, ps);
	ok(!entry_has_meta(find(s, 0, "plain")), "an entry never given metadata has no md bit");
	store_unlock(s, ps);
	store_destroy(s);
}

static void test_fields(void)
{
	struct store *s = new_store(1, 4);
	char buf[256];
	set_str(s, 0, "k", "v", -1);
	ok(set_meta(s, 0, "k", "a,b,a,c,b", "user:1", "text/plain") == 0, "set with duplicate labels");
	ok(meta_str(s, 0, "k", buf, sizeof(buf)) && !strcmp(buf, "a,b,c|user:1|text/plain"),
	   "labels de-duplicated in first-seen order, entity, content-type: %s", buf);
	unsigned sh = store_shard_of(s, "k", 1);
	store_lock(s, sh);
	struct entry *e = find(s, 0, "k");
	ok(entry_meta_has_label(e, "b", 1) && !entry_meta_has_label(e, "d", 1), "entry_meta_has_label");
	size_t with = entry_memory(s, e);
	store_unlock(s, sh);
	ok(set_meta(s, 0, "k", "", "user:2", NULL) == 0 && meta_str(s, 0, "k", buf, sizeof(buf)) &&
		   !strcmp(buf, "|user:2|-"),
	   "replaced: entity only (%s)", buf);
	ok(set_meta(s, 0, "k", "", NULL, NULL) == 0, "removing all fields");
	store_lock(s, sh);
	e = find(s, 0, "k");
	ok(!entry_has_meta(e), "an entry emptied of metadata loses the md bit (zero bytes again)");
	ok(entry_memory(s, e) < with, "and its memory shrinks");
	store_unlock(s, sh);
	store_destroy(s);
}

static void test_index_paths(void)
{
	struct store *s = new_store(2, 4);
	char buf[512];
	for (int i = 0; i < 6; i++) {
		char k[16];
		snprintf(k, sizeof(k), "k%d", i);
		set_str(s, 0, k, "v", -1);
		set_meta(s, 0, k, i % 2 ? "odd,all" : "even,all", i < 3 ? "low" : "high", NULL);
	}
	is_str(scan_all(s, 0, STORE_META_LABEL, "all", buf, sizeof(buf)), "k0,k1,k2,k3,k4,k5", "label all");
	is_str(scan_all(s, 0, STORE_META_LABEL, "odd", buf, sizeof(buf)), "k1,k3,k5", "label odd");
	is_str(scan_all(s, 0, STORE_META_ENTITY, "low", buf, sizeof(buf)), "k0,k1,k2", "entity low");
	is_str(scan_all(s, 0, STORE_META_LABEL, "none", buf, sizeof(buf)), "", "an unknown label: nothing");

	/* delete */
	unsigned sh = store_shard_of(s, "k0", 2);
	store_lock(s, sh);
	store_delete_locked(s, 0, "k0", 2, NOW);
	store_unlock(s, sh);
	is_str(scan_all(s, 0, STORE_META_LABEL, "even", buf, sizeof(buf)), "k2,k4", "DEL leaves the index");

	/* overwrite (SET keeps the metadata), in place and into a bigger block */
	set_str(s, 0, "k2", "w", -1);
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	set_str(s, 0, "k4", big, NOW + 5000);
	ok(meta_str(s, 0, "k2", buf, sizeof(buf)) && !strcmp(buf, "even,all|low|-"), "SET in place keeps it");
	ok(meta_str(s, 0, "k4", buf, sizeof(buf)) && !strcmp(buf, "even,all|high|-"),
	   "SET into a new block with a TTL keeps it");
	is_str(scan_all(s, 0, STORE_META_LABEL, "even", buf, sizeof(buf)), "k2,k4", "and the index");

	/* resize (APPEND) and TTL changes move the entry */
	sh = store_shard_of(s, "k2", 2);
	store_lock(s, sh);
	struct entry *e = find(s, 0, "k2");
	char *p = store_string_resize_locked(s, 0, &e, 2000);
	ok(p && entry_has_meta(e), "a resize to a wider length class keeps the metadata");
	ok(store_set_expire_locked(s, 0, &e, NOW + 1000) == 0 && entry_has_meta(e), "a new TTL keeps it");
	ok(store_set_expire_locked(s, 0, &e, -1) == 0 && entry_has_meta(e), "PERSIST keeps it");
	store_unlock(s, sh);
	ok(meta_str(s, 0, "k2", buf, sizeof(buf)) && !strcmp(buf, "even,all|low|-"), "fields intact: %s",
	   buf);

	/* expiry: k4's TTL passes, a lookup expires it */
	unsigned s4 = store_shard_of(s, "k4", 2);
	store_lock(s, s4);
	ok(!store_find_locked(s, 0, "k4", 2, NOW + 6000, 0), "k4 expires");
	store_unlock(s, s4);
	is_str(scan_all(s, 0, STORE_META_LABEL, "even", buf, sizeof(buf)), "k2", "expiry leaves the index");

	/* RENAME, MOVE, COPY */
	unsigned sa = store_shard_of(s, "k1", 2), sb = store_shard_of(s, "r1", 2);
	unsigned set[2] = { sa, sb };
	int n = store_shards_normalize(set, 2);
	store_lock_set(s, set, n);
	ok(store_rename_locked(s, 0, find(s, 0, "k1"), 0, "r1", 2) == 0, "RENAME k1 r1");
	store_unlock_set(s, set, n);
	is_str(scan_all(s, 0, STORE_META_LABEL, "odd", buf, sizeof(buf)), "k3,k5,r1",
	       "the index follows RENAME");
	sa = store_shard_of(s, "k3", 2);
	store_lock(s, sa);
	ok(store_rename_locked(s, 0, find(s, 0, "k3"), 1, "k3", 2) == 0, "MOVE k3 1");
	store_unlock(s, sa);
	is_str(scan_all(s, 0, STORE_META_LABEL, "odd", buf, sizeof(buf)), "k5,r1", "db 0 after MOVE");
	is_str(scan_all(s, 1, STORE_META_LABEL, "odd", buf, sizeof(buf)), "k3", "db 1 after MOVE");
	sa = store_shard_of(s, "k5", 2);
	sb = store_shard_of(s, "c5", 2);
	set[0] = sa;
	set[1] = sb;
	n = store_shards_normalize(set, 2);
	store_lock_set(s, set, n);
	ok(store_copy_locked(s, 0, find(s, 0, "k5"), 0, "c5", 2) == 0, "COPY k5 c5");
	store_unlock_set(s, set, n);
	ok(set_meta(s, 0, "c5", "copied", NULL, NULL) == 0, "the copy's metadata changed");
	ok(meta_str(s, 0, "k5", buf, sizeof(buf)) && !strcmp(buf, "odd,all|high|-"),
	   "the source's is its own");
	is_str(scan_all(s, 0, STORE_META_LABEL, "odd", buf, sizeof(buf)), "k5,r1", "label odd after COPY");
	is_str(scan_all(s, 0, STORE_META_LABEL, "copied", buf, sizeof(buf)), "c5", "label copied");

	/* SWAPDB: the index goes with the keys */
	store_swapdb(s, 0, 1);
	is_str(scan_all(s, 0, STORE_META_LABEL, "odd", buf, sizeof(buf)), "k3", "db 0 after SWAPDB");
	is_str(scan_all(s, 1, STORE_META_LABEL, "all", buf, sizeof(buf)), "k2,k5,r1", "db 1 after SWAPDB");
	store_flushdb(s, 1);
	is_str(scan_all(s, 1, STORE_META_LABEL, "all", buf, sizeof(buf)), "", "FLUSHDB empties the index");
	store_destroy(s); /* what leaks here, ASan's leak check finds */
}

struct dels {
	int n;
	char last[32];
};

static void on_del(unsigned db, const char *key, size_t klen, void *arg)
{
	struct dels *d = arg;
	d->n++;
	snprintf(d->last, sizeof(d->last), "%.*s", (int)klen, key);
}

static void test_invalidate(void)
{
	struct store *s = new_store(1, 3);
	char k[32], buf[64];
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "key:%d", i);
		set_str(s, 0, k, "v", i == 7 ? NOW - 1 : -1);
		if (i % 10 == 0 || i == 7)
			set_meta(s, 0, k, i % 20 == 0 ? "p17,x" : "p17", i % 40 == 0 ? "user:1" : "user:2",
				 NULL);
	}
	store_lock_all(s);
	struct dels d = { 0 };
	uint64_t n = 0;
	for (unsigned sh = 0; sh < store_shard_count(s); sh++)
		n += store_meta_invalidate_locked(s, 0, sh, "p17", 3, "user:1", 6, NOW, on_del, &d);
	ok(n == 25 && d.n == 25, "label p17 with entity user:1: 25 keys (%llu)", (unsigned long long)n);
	n = 0;
	for (unsigned sh = 0; sh < store_shard_count(s); sh++)
		n += store_meta_invalidate_locked(s, 0, sh, "p17", 3, NULL, 0, NOW, on_del, &d);
	/* key:7 had passed its TTL: expired as a lookup would, not counted */
	ok(n == 75 && d.n == 100, "then label p17: the other 75 live ones (%llu)", (unsigned long long)n);
	store_unlock_all(s);
	ok(store_dbsize(s, 0) == 899, "899 keys left, none carrying p17 (%llu)",
	   (unsigned long long)store_dbsize(s, 0));
	is_str(scan_all(s, 0, STORE_META_LABEL, "x", buf, sizeof(buf)), "", "their other labels went too");
	ok(!meta_str(s, 0, "key:7", buf, sizeof(buf)) && meta_str(s, 0, "key:1", buf, sizeof(buf)),
	   "the expired one gone, unlabelled keys kept");
	store_destroy(s);
}

struct snap_seen {
	char meta[128];
};

static void snap_visit(unsigned db, const struct entry *e, void *arg)
{
	struct snap_seen *ss = arg;
	size_t len;
	const char *p = entry_meta_nlabels(e) ? entry_meta_label(e, 0, &len) : NULL;
	snprintf(ss->meta, sizeof(ss->meta), "%.*s", p ? (int)len : 1, p ? p : "-");
}

static void noop(void *ctx)
{
}

static void test_snapshot_preimage(void)
{
	struct store *s = new_store(1, 0);
	set_str(s, 0, "k", "v", -1);
	set_meta(s, 0, "k", "before", NULL, NULL);
	ok(store_snap_begin(s, noop, NULL) == 0, "snapshot begins");
	set_meta(s, 0, "k", "after", NULL, NULL);
	set_str(s, 0, "k", "w", -1);
	struct snap_seen ss = { "" };
	store_snap_dump(s, 0, snap_visit, &ss);
	store_snap_end(s);
	is_str(ss.meta, "before", "the image has the metadata of the instant");
	char buf[64];
	ok(meta_str(s, 0, "k", buf, sizeof(buf)) && !strcmp(buf, "after|-|-"), "the live key the new one");
	/* a key deleted during the snapshot keeps its block in the pre-image */
	ok(store_snap_begin(s, noop, NULL) == 0, "second snapshot");
	unsigned sh = store_shard_of(s, "k", 1);
	store_lock(s, sh);
	store_delete_locked(s, 0, "k", 1, NOW);
	store_unlock(s, sh);
	memset(&ss, 0, sizeof(ss));
	store_snap_dump(s, 0, snap_visit, &ss);
	store_snap_end(s);
	is_str(ss.meta, "after", "a deleted key's image keeps its metadata");
	store_destroy(s);
}

static void test_tail(void)
{
	const char *labels[] = { "a", "bb" };
	size_t lens[] = { 1, 2 };
	struct store_meta_fields f = { 2, labels, lens, "ent", 3, NULL, 0 };
	struct jbuf b;
	jbuf_init(&b);
	jr_tail_put(&b, 7, "zz", 2); /* an unknown field first: skipped */
	jr_meta_put(&b, &f);
	const char *gl[JR_META_MAX_LABELS];
	size_t gn[JR_META_MAX_LABELS];
	struct store_meta_fields g;
	struct jreader r = { b.p, b.p + b.len };
	ok(jr_meta_get(r, &g, gl, gn) == 1, "the field is found after an unknown one");
	ok(g.nlabels == 2 && gn[1] == 2 && !memcmp(gl[1], "bb", 2) && g.entity_len == 3 &&
		   !memcmp(g.entity, "ent", 3) && !g.ctype,
	   "and decodes to what was put");
	struct jreader none = { b.p, b.p + 4 }; /* only the unknown field */
	ok(jr_meta_get(none, &g, gl, gn) == 0, "no field: 0");
	struct jbuf bad;
	jbuf_init(&bad);
	jr_tail_put(&bad, JR_TAIL_META, "\x05", 1); /* 5 labels announced, none there */
	struct jreader rb = { bad.p, bad.p + bad.len };
	ok(jr_meta_get(rb, &g, gl, gn) == -EINVAL, "a truncated field is malformed");
	jbuf_free(&bad);
	jbuf_free(&b);
}

int main(void)
{
	/* the program writes as one command would (store/write.h) */
	struct store_write unit_bracket;
	store_write_begin(&unit_bracket, STORE_WRITE_CLIENT, "a unit test", true, 0);
	test_layout();
	test_fields();
	test_index_paths();
	test_invalidate();
	test_snapshot_preimage();
	test_tail();
	return done_testing();
}
